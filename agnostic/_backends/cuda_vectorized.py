"""Large same-shape CUDA elementwise ops by vectorized kernels, as ``cpu_kernels`` computes large CPU ones on several
cores: each function returns its result, or None where it doesn't apply (the caller then runs CuPy's ufunc, with the
same values). Ops declare them as ``large_cuda`` (``agnostic.ops.elementwise``); the plans call them from
``MIN_SIZE`` elements.
"""

import numpy

from . import cuda_kernels
from .cupy_loader import require_cupy

# Elements from which ops take these kernels (the plans' threshold). Below it the GPU finishes an op sooner than the
# host launches the next, and CuPy's ufunc call costs the host less (H100: 1M float32 a + b took 10.1 us through CuPy,
# 13.4 us through a vectorized kernel; 16M: 82.8 us against 69.3 us, a device copy's bandwidth).
MIN_SIZE = 1 << 22
_DTYPES = frozenset(numpy.dtype(name) for name in ("float32", "float64"))
_THREADS = 256


def binary(name, x, y):
    """``x + y``, ``x - y``, ``x * y`` or ``x / y`` (``name``: add, sub, mul, div) of two non-empty C-contiguous
    float32/float64 arrays of one shape and dtype, 16-byte aligned, in a new array by one vectorized kernel
    (``cuda_kernels``' ``agnostic_contiguous_binary``: CuPy's ufunc's values, at a device copy's bandwidth), or None
    where it doesn't apply (the caller then runs CuPy's ufunc)."""
    dtype = x.dtype
    if y.dtype != dtype or dtype not in _DTYPES or y.shape != x.shape or not x.size \
            or not (x.flags.c_contiguous and y.flags.c_contiguous) or (x.data.ptr | y.data.ptr) % 16:
        return None
    out = require_cupy().empty(x.shape, dtype)
    _launch(f"agnostic_contiguous_{name}", x, (x, y, out))
    return out


def relu(x):
    """``relu(x)`` (``cupy.maximum(x, 0)``'s values) of a non-empty C-contiguous float32/float64 array, 16-byte
    aligned, in a new array by one vectorized kernel, or None where it doesn't apply."""
    if x.dtype not in _DTYPES or not x.size or not x.flags.c_contiguous or x.data.ptr % 16:
        return None
    out = require_cupy().empty(x.shape, x.dtype)
    _launch("agnostic_contiguous_relu", x, (x, out))
    return out


def _launch(name, x, arguments):
    vectors = -(-x.size * x.itemsize // 16)
    cuda_kernels.kernel(name, x.dtype)(((vectors + _THREADS - 1) // _THREADS,),
                                       (_THREADS,), arguments + (numpy.int64(x.size),))
