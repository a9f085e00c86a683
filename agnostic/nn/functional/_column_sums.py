"""Column sums of a 2-D gradient (a bias gradient), made once per layer per training step. On CUDA, one small kernel:
CuPy's generic reduction costs several times more host time per call; each column is summed in a fixed order. On the
CPU, ``ones @ rows``: BLAS's matrix-vector product runs on its threads, where NumPy's sum takes one core."""

import numpy

from ... import _backend, _host_blas

_SOURCE = r"""
template <typename T>
__global__ void agnostic_column_sums(const T* rows, T* out, long long n_rows, long long n_cols) {
    __shared__ T partial[32][33];
    long long col = (long long)blockIdx.x * 32 + threadIdx.x;
    T total = 0;
    if (col < n_cols) {
        for (long long row = threadIdx.y; row < n_rows; row += 32) total += rows[row * n_cols + col];
    }
    partial[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    if (threadIdx.y == 0 && col < n_cols) {
        T sum = 0;
        for (int i = 0; i < 32; ++i) sum += partial[i][threadIdx.x];
        out[col] = sum;
    }
}
"""
_TYPES = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double"}
_kernels = {}


def supports(array):
    """A 2-D, C-contiguous float32/float64 array (NumPy or CuPy)."""
    return array.ndim == 2 and array.dtype in _TYPES and array.flags.c_contiguous


def column_sums(array):
    """``array.sum(0)`` for an array that ``supports``, with its device current."""
    if type(array) is numpy.ndarray:
        return numpy.matmul(_host_blas.ones(array.shape[0], array.dtype), array)
    cupy = _backend.require_cupy()
    n_rows, n_cols = array.shape
    out = cupy.empty(n_cols, array.dtype)
    if n_cols:
        _kernel(cupy, array.dtype)(((n_cols + 31) // 32,), (32, 32),
                                   (array, out, numpy.int64(n_rows), numpy.int64(n_cols)))
    return out


def _kernel(cupy, dtype):
    name = f"agnostic_column_sums<{_TYPES[dtype]}>"
    if name not in _kernels:
        module = cupy.RawModule(code=_SOURCE, options=("-std=c++14",), name_expressions=[name])
        _kernels[name] = module.get_function(name)
    return _kernels[name]
