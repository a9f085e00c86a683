"""Splitting a batch (tensors nested in tuples, lists and dicts, and keyword arguments) over devices, and joining
the replicas' outputs back on one device, as ``torch.nn.parallel.scatter_gather``."""

from ..._tensor import TensorBase
from ._functions import Gather, Scatter
from ._devices import as_devices, as_device


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """Slice the tensors in ``inputs`` into one chunk per device of ``target_gpus`` along ``dim`` and copy each chunk
    to its device; tuples, lists, dicts and namedtuples are taken apart and rebuilt per device, other objects are
    shared by reference. Returns a list with one entry per chunk (fewer than devices when the batch is shorter).

        >>> from agnostic.nn.parallel import scatter
        >>> scatter(agnostic.arange(4), ["cpu"])
        (tensor([0, 1, 2, 3]),)
    """
    devices = as_devices(target_gpus)

    def scatter_map(obj):
        if isinstance(obj, TensorBase):
            return Scatter.apply(devices, None, dim, obj)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(item) for item in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(item) for item in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    try:
        return scatter_map(inputs)
    finally:
        scatter_map = None  # the closure refers to itself: break the cycle


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """``scatter`` of the positional and the keyword arguments, padded to the same number of chunks; returns
    ``(inputs_per_device, kwargs_per_device)``, tuples of tuples and of dicts.

        >>> from agnostic.nn.parallel import scatter_kwargs
        >>> scatter_kwargs((agnostic.ones(2),), {"scale": 3}, ["cpu"])
        (((tensor([1., 1.]),),), ({'scale': 3},))
    """
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(scattered_inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """Concatenate the tensors of the replicas' ``outputs`` (one entry per replica, with the same nesting) along
    ``dim`` on ``target_device``; None stays None, dicts must have the same keys.

        >>> from agnostic.nn.parallel import gather
        >>> gather([agnostic.ones(1), agnostic.zeros(2)], "cpu")
        tensor([1., 0., 0.])
    """
    target = as_device(target_device)

    def gather_map(outputs):
        out = outputs[0]
        if isinstance(out, TensorBase):
            return Gather.apply(target, dim, *outputs)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))

    try:
        return gather_map(outputs)
    finally:
        gather_map = None
