"""The gradient of relu, ``grad where input > 0 else 0``, without recording: one pass, by each backend's own
``relu_gradient`` (a kernel on CUDA; bit masking or the threaded C kernel on the CPU)."""

import numpy

from .._tensor import wrap

_FLOATS = frozenset(numpy.dtype(name) for name in ("float16", "float32", "float64"))


def supports(grad, input):
    """Whether the one-pass form applies: same shape, dtype (a float one) and device."""
    a, b = grad._data, input._data
    return grad._device is input._device and a.dtype is b.dtype and a.dtype in _FLOATS and a.shape == b.shape


def relu_gradient(grad, input):
    """``where(input > 0, grad, 0)`` for tensors that ``supports``."""
    device = grad._device
    backend = device.backend
    with backend.activate():
        return wrap(backend.ops.relu_gradient(grad._data, input._data), device)
