"""Device-level helpers over the backends: each Device carries its backend (``device.backend``, from
``agnostic._backends``: the CPU's NumPy, a GPU's CuPy), which code asks for its array module (``xp``), to make the
device current (``activate()``) and the rest; these are what no one backend answers alone (resolving ``cuda``,
which device an array is on, copies between two devices). Device-specific code lives in the backends, not here.
"""

import numpy

from ._backends.cupy_loader import (  # noqa: F401  (the CUDA state, re-exported for the runtime modules)
    cuda_device_count, cuda_unavailable_reason, current_cuda_index, is_cupy_array, on_cuda_init, require_cupy,
)
from ._device import CPU, Device


def resolve(device):
    """The concrete device a tensor lives on: ``cuda`` becomes ``cuda:<current>``; CUDA indices are checked."""
    if device.backend.host:
        return device
    require_cupy()
    count = cuda_device_count()
    if device.index is None:
        return Device(device.type, current_cuda_index())
    if device.index >= count:
        raise RuntimeError(
            f"CUDA device {device} is out of range: only {count} CUDA device(s) are visible "
            f"(valid indices 0..{count - 1}; see agnostic.cuda.device_count() and CUDA_VISIBLE_DEVICES)"
        )
    return device


def device_of_array(array):
    """The Device an array lives on (NumPy arrays on the CPU, CuPy arrays on their GPU)."""
    if isinstance(array, numpy.ndarray):
        return CPU
    return Device("cuda", array.device.id)


def is_backend_array(obj):
    """True for a numpy.ndarray, or a cupy.ndarray when CuPy has been imported."""
    return isinstance(obj, numpy.ndarray) or is_cupy_array(obj)


def data_pointer(array):
    """Address of an array's first element (for telling views from copies)."""
    if isinstance(array, numpy.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


def move(array, source, target, non_blocking=False):
    """``array`` (on ``source``) as an array on ``target``: itself when they are the same device, else a copy
    (synchronous to the host; from pinned memory asynchronous to a device when ``non_blocking``)."""
    if source is target:
        return array
    return target.backend.receive(array, source.backend, non_blocking)
