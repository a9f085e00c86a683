"""Column sums of a 2-D gradient (a bias gradient), made once per layer per training step, by each backend's own
``column_sums`` (one small kernel on CUDA, a BLAS matrix-vector product on the CPU)."""

import numpy

_FLOATS = frozenset((numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)))


def supports(array):
    """A 2-D, C-contiguous float32/float64 array (NumPy or CuPy)."""
    return array.ndim == 2 and array.dtype in _FLOATS and array.flags.c_contiguous


def column_sums(array, device):
    """``array.sum(0)`` for an array of ``device`` that ``supports``, with its device current."""
    return device.backend.ops.column_sums(array)
