"""The gradient of relu, ``grad where input > 0 else 0``, without recording: one CuPy kernel on CUDA; on the CPU,
bit masking into a reused buffer (``numpy.where`` is several times slower on a mask as unpredictable as a ReLU's)."""

import numpy

from .. import _backend, _host_cache
from .._device import CPU
from .._tensor import wrap

_FLOATS = frozenset(numpy.dtype(name) for name in ("float16", "float32", "float64"))
_kernel = []


def supports(grad, input):
    """Whether the one-pass form applies: same shape, dtype (a float one) and device."""
    a, b = grad._data, input._data
    return grad._device is input._device and a.dtype is b.dtype and a.dtype in _FLOATS and a.shape == b.shape


def relu_gradient(grad, input):
    """``where(input > 0, grad, 0)`` for tensors that ``supports``."""
    device = grad._device
    if device is CPU:
        return wrap(_host(grad._data, input._data), CPU)
    with _backend.on(device):
        return wrap(_device_kernel()(input._data, grad._data), device)


def _host(grad, input):
    integers = numpy.dtype(f"i{grad.dtype.itemsize}")
    out = _host_cache.empty(grad.shape, grad.dtype)
    bits = out.view(integers)
    # -1 (all bits set) where the input is positive, 0 elsewhere; then those bits of the gradient.
    numpy.subtract(0, numpy.greater(input, 0), out=bits, dtype=integers)
    numpy.bitwise_and(bits, grad.view(integers), out=bits)
    return out


def _device_kernel():
    if not _kernel:
        _kernel.append(_backend.require_cupy().ElementwiseKernel(
            "T x, T g", "T y", "y = x > (T)0 ? g : (T)0", "agnostic_relu_gradient"))
    return _kernel[0]
