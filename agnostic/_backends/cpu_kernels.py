"""Multi-core CPU kernels where numba is installed (``pip install "agnostic-tensor[fast-cpu]"``), NumPy's ufuncs where not.

NumPy's ufuncs run on one core. For large float32/float64 arrays, the functions here run numba-compiled kernels
(``numba_kernels``) on all cores, in one pass over memory: ReLU and its gradient, ``+ - * /`` of two arrays, a
linear layer's bias add, and the optimizers' updates. Each returns its result (True for work done in place), or None
when it doesn't apply (numba missing, an array too small to gain from threads, not C-contiguous, another dtype): the
caller then computes the same values with NumPy. Results are identical either way (``numba_kernels`` says why).

numba loads on the first large op, not at ``import agnostic``. Where it is missing, agnostic warns once, naming the
extra that brings it. A child forked after the kernels ran keeps to NumPy: numba's thread pools don't survive a fork
(its GNU OpenMP one can't run in the child at all).

>>> import numpy
>>> from agnostic._backends import cpu_kernels
>>> cpu_kernels.relu(numpy.ones(4, numpy.float32)) is None  # too small to gain from threads: NumPy's turn
True
"""

import os
import threading
import warnings
from contextlib import nullcontext

import numpy

# Below these sizes, waking the threads (about 0.1 ms on 2 cores, 0.2 ms on 16) costs more than they save: one pass
# over memory (ReLU, a + b) gains from 4 MiB, an optimizer's update (a dozen passes in NumPy) from 256 KiB.
MIN_BYTES = 1 << 22
MIN_UPDATE_BYTES = 1 << 18
FAST_CPU_EXTRA = 'pip install "agnostic-tensor[fast-cpu]"'
_FLOATS = frozenset((numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)))

_kernels = None  # the numba_kernels module once loaded; False where it can't be (or in a forked child)
_loops: dict = {}  # an optimizer's per-element function -> its compiled parallel loop
_one_at_a_time = nullcontext()  # a lock instead, under numba's workqueue layer (not safe for concurrent calls)
_requested_threads = None  # set_num_threads's count, applied when numba loads
_lock = threading.Lock()


def relu(x):
    """``numpy.maximum(x, 0)`` in a new array, or None."""
    kernels = _usable(x)
    if kernels is None:
        return None
    out = numpy.empty(x.shape, x.dtype)
    with _one_at_a_time:
        kernels.relu(x.reshape(-1), out.reshape(-1))
    return out


def relu_gradient(grad, x):
    """``grad`` where ``x > 0``, else 0, in a new array (two arrays of one dtype and shape), or None."""
    kernels = _usable(x)
    if kernels is None or not _matches(grad, x):
        return None
    out = numpy.empty(x.shape, x.dtype)
    with _one_at_a_time:
        kernels.relu_gradient(grad.reshape(-1), x.reshape(-1), out.reshape(-1))
    return out


def binary(name, x, y):
    """``x + y``, ``x - y``, ``x * y`` or ``x / y`` (``name``: add, sub, mul, div) of two arrays of one dtype and
    shape, in a new array, or None."""
    kernels = _usable(x)
    if kernels is None or not _matches(y, x):
        return None
    out = numpy.empty(x.shape, x.dtype)
    with _one_at_a_time:
        kernels.BINARY[name](x.reshape(-1), y.reshape(-1), out.reshape(-1))
    return out


def add_row(matrix, row):
    """``matrix += row`` for a 2-D C-contiguous ``matrix`` and a row of its dtype; False when not done."""
    kernels = _usable(matrix)
    if kernels is None or matrix.ndim != 2 or type(row) is not numpy.ndarray or row.dtype != matrix.dtype \
            or row.shape != matrix.shape[1:] or not matrix.flags.writeable or numpy.may_share_memory(row, matrix):
        return False
    with _one_at_a_time:
        kernels.add_row(matrix, row)
    return True


def update(element, arrays, scalars, flags):
    """Run an optimizer's per-element function on every element: ``element(i, *arrays, scalars, flags)``, where
    ``arrays`` (None for those the configuration leaves unused) have ``arrays[0]``'s dtype and size. False when not
    done."""
    param = arrays[0]
    kernels = _usable(param, MIN_UPDATE_BYTES)
    if kernels is None or not all(a is None or _matches(a, param) for a in arrays):
        return False
    loop = _loops.get(element)
    if loop is None:
        loop = _loops[element] = kernels.update_loop(element, len(arrays))
    grad = arrays[1].reshape(-1)
    # The element function never reads an unused array: the gradient stands in for it (numba needs an array).
    flat = tuple(grad if a is None else a.reshape(-1) for a in arrays)
    with _one_at_a_time:
        loop(*flat, scalars, flags)
    return True


def set_num_threads(count):
    """Use ``count`` threads in these kernels (numba's count is per calling thread, as OpenMP's)."""
    global _requested_threads
    _requested_threads = count
    if _kernels:
        _apply_thread_count(_kernels.numba)


def _matches(array, like):
    return type(array) is numpy.ndarray and array.dtype == like.dtype and array.shape == like.shape \
        and array.flags.c_contiguous


def _usable(x, min_bytes=MIN_BYTES):
    """The kernels module when ``x`` is a large C-contiguous float32/float64 array and numba is available."""
    if type(x) is not numpy.ndarray or x.nbytes < min_bytes or x.dtype not in _FLOATS or not x.flags.c_contiguous:
        return None
    kernels = _kernels if _kernels is not None else _load()
    return kernels or None


def _load():
    global _kernels, _one_at_a_time
    with _lock:
        if _kernels is not None:
            return _kernels
        try:
            from . import numba_kernels
            _choose_threading_layer(numba_kernels.numba)
            numba_kernels.warm_up()
        except Exception as error:  # not installed, or refusing this NumPy, or no threading layer
            _kernels = False
            _warn_missing(error)
            return _kernels
        if numba_kernels.numba.threading_layer() == "workqueue":
            _one_at_a_time = threading.Lock()
        _apply_thread_count(numba_kernels.numba)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forked)
        _kernels = numba_kernels
    return _kernels


def _choose_threading_layer(numba):
    """numba's workqueue thread pool, unless the user chose one (``NUMBA_THREADING_LAYER``): its threads sleep
    between kernels, where OpenMP's spin and take the cores from BLAS's next matrix product (a training step on 2
    cores took 4x longer). It runs one kernel at a time: calls from several threads take turns (``_one_at_a_time``)."""
    if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
        numba.config.THREADING_LAYER = "workqueue"


def _apply_thread_count(numba):
    if _requested_threads is not None:
        numba.set_num_threads(min(_requested_threads, numba.config.NUMBA_NUM_THREADS))


def _forked():
    global _kernels
    _kernels = False


def _warn_missing(error):
    reason = "numba is not installed" if isinstance(error, ModuleNotFoundError) and error.name == "numba" \
        else f"numba could not be used ({type(error).__name__}: {error})"
    warnings.warn(f"agnostic: {reason}, so large CPU elementwise ops and optimizer updates run on one core "
                  f"(NumPy's ufuncs, same results). For multi-core CPU kernels: {FAST_CPU_EXTRA}", RuntimeWarning,
                  stacklevel=4)
