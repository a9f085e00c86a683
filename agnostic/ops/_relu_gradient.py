"""The gradient of relu, ``grad where input > 0 else 0``, without recording: one CuPy kernel on CUDA; on the CPU,
the threaded C kernel (``_host_kernels``) for large arrays, else bit masking into a reused buffer, a cache-sized
block at a time (``numpy.where`` is several times slower on a mask as unpredictable as a ReLU's)."""

import numpy

from .. import _backend, _host_cache, _host_kernels
from .._device import CPU
from .._tensor import wrap
from .._backends import cuda_kernels

_FLOATS = frozenset(numpy.dtype(name) for name in ("float16", "float32", "float64"))
_BLOCK = 1 << 16  # elements per CPU block


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
        return wrap(cuda_kernels.kernel("agnostic_relu_gradient")(input._data, grad._data), device)


def _host(grad, input):
    out = _host_cache.empty(grad.shape, grad.dtype)
    if _host_kernels.relu_gradient(grad, input, out):
        return out
    integers = numpy.dtype(f"i{grad.dtype.itemsize}")
    if input.size <= _BLOCK:
        _masked_bits(input, grad.view(integers), out.view(integers))
        return out
    # A block at a time, so that the mask is still in cache when it is applied.
    positive, grad_bits, out_bits = input.reshape(-1), grad.reshape(-1).view(integers), out.reshape(-1).view(integers)
    for start in range(0, positive.size, _BLOCK):
        stop = start + _BLOCK
        _masked_bits(positive[start:stop], grad_bits[start:stop], out_bits[start:stop])
    return out


def _masked_bits(positive, grad_bits, out_bits):
    """``out_bits = grad_bits where positive > 0 else 0``: -1 (all bits set) where the input is positive, 0
    elsewhere, then those bits of the gradient."""
    numpy.subtract(0, numpy.greater(positive, 0), out=out_bits, dtype=out_bits.dtype)
    numpy.bitwise_and(out_bits, grad_bits, out=out_bits)
