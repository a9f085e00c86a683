"""Making a module without initializing its parameters (skip_init), as torch.nn.utils.init."""

import inspect

import agnostic
from ...autograd import no_grad
from ..module import Module, _set_data

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` on ``device`` (a keyword, default cpu) with its parameters and buffers left
    uninitialized (``empty``), for code that fills them itself, as PyTorch's. PyTorch builds the module on its meta
    device, so no initializer runs; agnostic has no meta device, so the module's own initialization runs and its
    values are then replaced by uninitialized memory of the same shapes, dtypes and device: the result is the same
    kind of module, only the time saved differs. ``module_cls`` must accept a ``device`` argument.

        >>> layer = agnostic.nn.utils.skip_init(agnostic.nn.Linear, 5, 1)
        >>> layer.weight.shape, layer.weight.requires_grad
        (agnostic.Size([1, 5]), True)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    module = module_cls(*args, **kwargs)
    with no_grad():
        for submodule in module.modules():
            for param in submodule._parameters.values():
                if param is not None:
                    _set_data(param, agnostic.empty_like(param))
            for name, buffer in submodule._buffers.items():
                if buffer is not None:
                    submodule._buffers[name] = agnostic.empty_like(buffer)
    return module
