"""Column sums of a 2-D gradient (a bias gradient), made once per layer per training step. On CUDA, one small kernel:
CuPy's generic reduction costs several times more host time per call; each column is summed in a fixed order. On the
CPU, ``ones @ rows``: BLAS's matrix-vector product runs on its threads, where NumPy's sum takes one core."""

import numpy

from ... import _backend, _host_blas
from ..._backends import cuda_kernels

_FLOATS = frozenset((numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)))


def supports(array):
    """A 2-D, C-contiguous float32/float64 array (NumPy or CuPy)."""
    return array.ndim == 2 and array.dtype in _FLOATS and array.flags.c_contiguous


def column_sums(array):
    """``array.sum(0)`` for an array that ``supports``, with its device current."""
    if type(array) is numpy.ndarray:
        return numpy.matmul(_host_blas.ones(array.shape[0], array.dtype), array)
    cupy = _backend.require_cupy()
    n_rows, n_cols = array.shape
    out = cupy.empty(n_cols, array.dtype)
    if n_cols:
        cuda_kernels.kernel("agnostic_column_sums", array.dtype)(
            ((n_cols + 31) // 32,), (32, 32), (array, out, numpy.int64(n_rows), numpy.int64(n_cols)))
    return out
