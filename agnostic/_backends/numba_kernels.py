"""The CPU kernels that numba compiles: one pass over memory on all cores for what NumPy's ufuncs do on one.

Imported by ``cpu_kernels`` on the first large CPU op, only where numba is installed (the ``fast-cpu`` extra). The
kernels compile on first use for each dtype; ReLU, its gradient and the bias add are cached on disk (numba's
``cache=True``: beside this file, or in the user's cache folder where the package is read-only), the others, made
from a function, compile once per process. They take flat, C-contiguous arrays and write ``out`` (or in place).

Every element takes the same IEEE operations, in the same order, as NumPy's ufunc would: no ``fastmath`` (no
reassociation, no fused multiply-add), and NumPy's error model (division by zero gives inf or nan, never raises).
"""

import operator

import numba
import numpy
from numba import prange

_kernel = numba.njit(parallel=True, error_model="numpy", cache=True)


@_kernel
def relu(x, out):
    """``max(x, 0)`` as ``numpy.maximum``: NaN kept, -0.0 and negatives give +0.0."""
    for i in prange(x.size):
        value = x[i]
        out[i] = 0 if value <= 0 else value


@_kernel
def relu_gradient(grad, x, out):
    """``grad`` where ``x > 0``, else +0.0 (a NaN input passes no gradient)."""
    for i in prange(x.size):
        out[i] = grad[i] if x[i] > 0 else 0


@_kernel
def add_row(matrix, row):
    """``matrix += row`` for a 2-D ``matrix`` (the bias add of a linear layer), one row per task."""
    for r in prange(matrix.shape[0]):
        for c in range(matrix.shape[1]):
            matrix[r, c] += row[c]


def _binary(operation):
    # A closure is not cached on disk: each binary kernel compiles once per process and dtype (about 0.3 s).
    @numba.njit(parallel=True, error_model="numpy")
    def kernel(x, y, out):
        for i in prange(out.size):
            out[i] = operation(x[i], y[i])
    return kernel


BINARY = {"add": _binary(operator.add), "sub": _binary(operator.sub), "mul": _binary(operator.mul),
          "div": _binary(operator.truediv)}


def update_loop(element, array_count):
    """A parallel loop applying an optimizer's per-element function ``element(i, *arrays, scalars, flags)`` to every
    index of its ``array_count`` (3 or 5) arrays. The function is inlined into the loop (numba's ``inline="always"``):
    called instead, it costs each element a call and keeps the loop from being vectorized (14x slower)."""
    element = numba.njit(error_model="numpy", inline="always")(element)

    def three(a, b, c, scalars, flags):
        for i in prange(a.size):
            element(i, a, b, c, scalars, flags)

    def five(a, b, c, d, e, scalars, flags):
        for i in prange(a.size):
            element(i, a, b, c, d, e, scalars, flags)
    return numba.njit(parallel=True, error_model="numpy")(three if array_count == 3 else five)


def warm_up():
    """Run one parallel kernel now, so that numba loads its thread pool (an error here: no threading layer)."""
    relu(numpy.zeros(1, numpy.float32), numpy.empty(1, numpy.float32))
