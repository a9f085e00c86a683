"""Copies of a module on several devices whose parameters stay differentiable copies of the originals, as
``torch.nn.parallel.replicate``."""

from ...autograd import grad_mode
from ._devices import as_devices
from ._functions import Broadcast


def _broadcast(tensors, devices, differentiable):
    """Copies of ``tensors`` per device: ``result[device_number][tensor_number]``."""
    if not tensors:
        return [[] for _ in devices]
    if differentiable:
        flat = Broadcast.apply(devices, *tensors)
    else:
        with grad_mode.no_grad():
            flat = Broadcast.apply(devices, *[tensor.detach() for tensor in tensors])
    count = len(tensors)
    return [list(flat[i:i + count]) for i in range(0, len(flat), count)]


def _replica_shell(module):
    """A shallow copy of ``module`` whose parameter, buffer and submodule tables are its own (filled later)."""
    replica = module.__new__(type(module))
    object.__setattr__(replica, "__dict__", module.__dict__.copy())
    for table in ("_parameters", "_buffers", "_modules"):
        object.__setattr__(replica, table, dict(module.__dict__[table]))
    object.__setattr__(replica, "_is_replica", True)
    return replica


def replicate(network, devices, detach=False):
    """One copy of ``network`` per device of ``devices``. Each replica's parameters are recorded copies of the
    originals (backward through a replica adds into the original's ``.grad``; with ``detach=True`` they are plain
    copies); buffers are copied; submodules shared in the original are shared in each replica.

        >>> from agnostic.nn.parallel import replicate
        >>> model = agnostic.nn.Linear(2, 1)
        >>> (replica,) = replicate(model, ["cpu"])
        >>> replica.weight is model.weight, bool((replica.weight == model.weight).all())
        (False, True)
    """
    devices = as_devices(devices)
    modules = list(network.modules())
    module_index = {id(module): i for i, module in enumerate(modules)}
    params = list(network.parameters())
    param_index = {id(param): i for i, param in enumerate(params)}
    buffers = list(network.buffers())
    grad_buffers = [b for b in buffers if b.requires_grad]
    plain_buffers = [b for b in buffers if not b.requires_grad]
    buffer_index = {id(b): ("grad", i) for i, b in enumerate(grad_buffers)}
    buffer_index.update({id(b): ("plain", i) for i, b in enumerate(plain_buffers)})

    param_copies = _broadcast(params, devices, differentiable=not detach and grad_mode.is_grad_enabled())
    grad_buffer_copies = _broadcast(grad_buffers, devices, differentiable=not detach and grad_mode.is_grad_enabled())
    plain_buffer_copies = _broadcast(plain_buffers, devices, differentiable=False)

    replicas = []
    for number in range(len(devices)):
        shells = [_replica_shell(module) for module in modules]
        for module, shell in zip(modules, shells):
            for name, child in module._modules.items():
                shell._modules[name] = None if child is None else shells[module_index[id(child)]]
            for name, param in module._parameters.items():
                shell._parameters[name] = None if param is None else param_copies[number][param_index[id(param)]]
            for name, buffer in module._buffers.items():
                if buffer is None:
                    shell._buffers[name] = None
                    continue
                kind, i = buffer_index[id(buffer)]
                copies = grad_buffer_copies if kind == "grad" else plain_buffer_copies
                shell._buffers[name] = copies[number][i]
        replicas.append(shells[0])
    return replicas
