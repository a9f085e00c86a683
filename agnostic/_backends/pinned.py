"""Page-locked (pinned) host memory from CuPy's pinned memory pool: what asynchronous copies between the host and a
GPU go through."""

import numpy

from .cupy_loader import require_cupy


def pinned_empty(shape, numpy_dtype):
    """An uninitialized NumPy array in page-locked memory from CuPy's pinned memory pool."""
    cupy = require_cupy()
    count = int(numpy.prod(shape, dtype=numpy.int64))
    memory = cupy.cuda.alloc_pinned_memory(max(count, 1) * numpy_dtype.itemsize)
    return numpy.frombuffer(memory, numpy_dtype, count).reshape(shape)


def pinned_copy(array):
    """A copy of a NumPy array in pinned memory."""
    pinned = pinned_empty(array.shape, array.dtype)
    numpy.copyto(pinned, array)
    return pinned
