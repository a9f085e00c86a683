"""Multi-core CPU kernels where numba is installed (``pip install "agnostic-tensor[fast-cpu]"``), NumPy's ufuncs where not.

NumPy's ufuncs run on one core. For large float32/float64 arrays, the functions here run numba-compiled kernels
(``numba_kernels``) on all cores, in one pass over memory: ReLU and its gradient, ``+ - * /`` of two arrays, a linear
layer's bias add, the optimizers' updates (on the calling thread alone below a size that grows as the cores are fewer),
softmax and layer_norm over rows (with their gradients), and attention (``numba_attention``). A float32 LSTM layer's
steps, forward and backward, run in one kernel each, every thread owning a slice of the batch rows where the weight
fits a core's cache, else of the hidden units, as oneDNN's LSTM does (where the weight is too large for that, each
step's BLAS product is followed by a cell pass in one vectorized loop on the calling thread). Each returns its result
(True for work done in place), or None (False for in-place work) when it doesn't apply (numba missing, an array too
small to gain from threads, not C-contiguous, another dtype): the caller then computes the same values with NumPy.
The elementwise kernels' results are identical to NumPy's (``numba_kernels`` says why); the row kernels' statistics
are summed in float64, so they differ from NumPy's float32 sums by a rounding at most; the LSTM kernels' tanh is within
7 ulp of the exact one (NumPy's: 1.4), the attention kernels' float32 exponential within 1, and their products round
as BLAS's do, not as NumPy's ufuncs.

The threads: GNU OpenMP's, told to sleep between kernels after a spin of about 10 us (``OMP_WAIT_POLICY=passive``,
``GOMP_SPINCOUNT=1000``; waking them costs about 40 us on 16 cores, while a kernel's next parallel region, such as an
LSTM's next step, finds them awake: 1 to 7 us), where agnostic loads the OpenMP runtime first and so can give it
that policy; else numba's workqueue pool (about 90 us). OpenMP threads that spin between kernels for its default 3 ms
take the cores from BLAS's next matrix product: a 2-core training step took 4x longer, a 16-core matrix product 3x.

numba loads on the first large op, not at ``import agnostic``. Where it is missing, agnostic warns once, naming the
extra that brings it. A child forked after the kernels ran keeps to NumPy: numba's thread pools don't survive a fork
(its GNU OpenMP one can't run in the child at all).

>>> import numpy
>>> from agnostic._backends import cpu_kernels
>>> cpu_kernels.relu(numpy.ones(4, numpy.float32)) is None  # too small to gain from threads: NumPy's turn
True
"""

import ctypes
import functools
import math
import os
import sys
import threading
import warnings
from contextlib import contextmanager, nullcontext

import numpy
import threadpoolctl

from . import host_memory

# Below these sizes, waking the threads (40 to 100 us) costs more than they save: one pass over memory (ReLU,
# a + b) gains from 1 MiB, what NumPy does in several passes (softmax, layer_norm; an optimizer's update on 8 threads
# or more, see below) from 256 KiB.
MIN_BYTES = 1 << 20
MIN_FUSED_BYTES = 1 << 18
# An optimizer's update is one compiled pass from MIN_UPDATE_BYTES (below it, NumPy's whole-array passes cost a few
# microseconds and no compilation), on the calling thread alone up to the bytes ``_parallel_update`` gives for the
# thread count: waking the other threads costs about as much on few cores as on many, and gains less. On the 2-core
# VM, 784 x 256 float32: SGD 30 us on one thread, 79 on both, 111 in NumPy; Adam 44, 97 and 308 us; from 4 MiB both
# threads gain.
MIN_UPDATE_BYTES = 1 << 16
# threads -> bytes from which an update takes them all (other thread counts: MIN_FUSED_BYTES)
_PARALLEL_UPDATE_BYTES = {1: float("inf"), 2: 4 << 20, 3: 2 << 20, 4: 1 << 20}
# An op on a large strided operand that isn't dense in its result's axis order (``_in_result_order``: a transposed
# operand of a transposed result is) copies it dense and computes on all cores from this many threads; with fewer,
# the copy and the op each waking the threads cost more than NumPy's one-core strided pass. 64 x 32 x 256 float32, after
# a 2 ms pause (hot threads in brackets), NumPy against the kernels: a sum beside a transposed view, 16-core host 837
# against 200 us (654 / 111), 2-core VM 299 against 418 (193 / 109); an expanded view divided by a number, 260 / 187
# (225 / 52) and 83 / 294 (68 / 90).
MIN_STRIDED_THREADS = 8
# A stack of matrices, each of at most MAX_BATCHED_PRODUCT multiply-adds (larger ones keep BLAS's threads busy on
# their own), shares them among the threads from MIN_BATCHED_PRODUCTS multiply-adds in all.
MAX_BATCHED_PRODUCT = 1 << 18
MIN_BATCHED_PRODUCTS = 1 << 20
# An LSTM layer runs its steps in one kernel (``lstm_forward_sequence``) where each thread's share of the
# hidden-to-gates weight is at most this many bytes: it stays in the thread's core's cache from step to step. Larger
# shares left the kernel slower than a BLAS product per step (hidden size 1024: 1 MiB a thread on 16 cores, 8 MiB on
# two), or little faster (hidden size 512 on two cores: 2 MiB).
LSTM_MAX_WEIGHT_SHARE = 512 << 10
# Where every thread gets a batch row and the whole weight fits a core's second-level cache, each thread owns a slice
# of the batch rows instead, for every step (``lstm_forward_rows``): no barrier a step, the whole weight read from
# that cache each step. LSTM(64, 256), 32 steps (a 1 MiB weight), forward / backward: 16-core host (2 MiB a core),
# batch 64, 2.3-3.1 / 2.3-2.4 ms against 3.1-3.2 / 3.8-4.2 (batch 16: 1.1-1.2 / 0.9-1.0 against 1.1 / 1.2-1.4; 256:
# 7.2-8.6 / 8.9-10.0 against 11.6-11.7 / 12.9-14.8); 2-core VM (1 MiB a core), batch 64, 4.8-4.9 / 4.8-5.0 against
# 5.1-5.4 / 5.9-6.1.
# A layer_norm gradient's rows are split into this many chunks a thread, each summing its rows' share of the weight's
# and the bias's gradients (as PyTorch's LayerNorm backward does), instead of two BLAS matrix-vector products after.
LAYER_NORM_CHUNKS_PER_THREAD = 4
# Attention runs on the kernels (``numba_attention``) from this many multiply-adds in its two products (pairs x
# queries x keys x (dim + value_dim)): below, its composed form's few NumPy operations cost less than waking the
# threads.
MIN_ATTENTION_WORK = MIN_BATCHED_PRODUCTS
FAST_CPU_EXTRA = 'pip install "agnostic-tensor[fast-cpu]"'
_FLOATS = frozenset((numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)))
_PYTHON_NUMBERS = frozenset((bool, int, float))

_kernels = None  # the numba_kernels module once loaded; False where it can't be (or in a forked child)
_loops: dict = {}  # an optimizer's per-element function -> its compiled parallel loop
_one_at_a_time = nullcontext()  # a lock instead, under numba's workqueue layer (not safe for concurrent calls)
_requested_threads = None  # set_num_threads's count, applied when numba loads
_blas_follows = True  # whether SciPy's OpenBLAS, where loaded, runs _requested_threads threads
# How long GNU OpenMP's threads spin after a parallel region before they sleep (GOMP_SPINCOUNT, about 100 spins a
# microsecond): long enough for the next region of one kernel (an LSTM's next step) to find them awake, too short to
# take the cores from BLAS's next product (passive, they would spin for none; by default, for about 3 ms).
_SPIN_COUNT = "1000"
_lock = threading.Lock()


def relu(x):
    """``numpy.maximum(x, 0)`` in a new array laid out as NumPy's (``_in_result_order``), or None."""
    kernels = _usable(x, dense=False)
    prepared = None if kernels is None else _in_result_order(kernels, x)
    if prepared is None:
        return None
    out, target, (x,) = prepared
    with _one_at_a_time:
        kernels.relu(x.reshape(-1), target.reshape(-1))
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
    shape, or of an array and a Python number (converted to the array's dtype first, as NumPy does), in a new array
    laid out as NumPy's (``_in_result_order``: transposed operands of a transposed result need no copy), or None."""
    kernels = _usable(x, dense=False)
    if kernels is None:
        return None
    scalar = type(y) in _PYTHON_NUMBERS
    if not scalar and not _matches(y, x, dense=False):
        return None
    prepared = _in_result_order(kernels, x) if scalar else _in_result_order(kernels, x, y)
    if prepared is None:
        return None
    out, target, operands = prepared
    with _one_at_a_time:
        if scalar:
            kernels.WITH_SCALAR[name](operands[0].reshape(-1), x.dtype.type(y), target.reshape(-1))
        else:
            kernels.BINARY[name](operands[0].reshape(-1), operands[1].reshape(-1), target.reshape(-1))
    return out


def _in_result_order(kernels, *arrays):
    """What a flat elementwise kernel over ``arrays`` (one shape and dtype) needs: ``(out, target, dense)``, ``out``
    its uninitialized result laid out as NumPy lays out a ufunc's (its iterator's axis order, which follows the
    operands where they agree and is C's where they don't: PyTorch's strides in those cases), ``target`` a
    C-contiguous view of ``out`` with its axes reordered so, and ``dense`` the arrays with their axes reordered the
    same way, each C-contiguous (a transposed operand of a transposed result already is; others are copied on all
    cores with ``MIN_STRIDED_THREADS`` threads or more, ``contiguous``). None where a copy would be needed and can't
    be made here.

        >>> x = numpy.arange(6.0).reshape(2, 3).T
        >>> out, target, (dense,) = _in_result_order(None, x)
        >>> out.strides == x.strides, target.flags.c_contiguous, dense.flags.c_contiguous
        (True, True, True)
    """
    if all(array.flags.c_contiguous for array in arrays):
        out = numpy.empty(arrays[0].shape, arrays[0].dtype)
        return out, out, arrays
    out = numpy.nditer(arrays + (None,), flags=("zerosize_ok",), order="K",
                       op_flags=[("readonly",)] * len(arrays) + [("writeonly", "allocate")]).operands[-1]
    order = sorted(range(out.ndim), key=lambda axis: -out.strides[axis])
    dense = tuple(_dense(array.transpose(order), kernels) for array in arrays)
    if any(array is None for array in dense):
        return None
    return out, out.transpose(order), dense


def add_row(matrix, row):
    """``matrix += row`` along the last axis of a C-contiguous ``matrix`` (2-D or more) and a row of its dtype; False
    when not done."""
    kernels = _usable(matrix)
    if kernels is None or matrix.ndim < 2 or type(row) is not numpy.ndarray or row.dtype != matrix.dtype \
            or row.shape != matrix.shape[-1:] or not matrix.flags.writeable or numpy.may_share_memory(row, matrix):
        return False
    with _one_at_a_time:
        kernels.add_row(matrix.reshape(-1, row.size), row)
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
    threads = kernels.numba.get_num_threads()
    with _one_at_a_time:
        loop(*flat, scalars, flags, threads if param.nbytes >= _parallel_update(threads) else 1)
    return True


def _parallel_update(threads):
    """Bytes from which an optimizer's update runs on ``threads`` threads rather than the calling one alone."""
    return _PARALLEL_UPDATE_BYTES.get(threads, MIN_FUSED_BYTES)


def contiguous(array):
    """A C-contiguous copy of a strided array (2-D to 4-D), made on all cores, or None."""
    if type(array) is not numpy.ndarray or array.ndim < 2 or array.flags.c_contiguous:
        return None
    kernels = _copying(array)
    return None if kernels is None else _copied(kernels, array, numpy.empty(array.shape, array.dtype))


def aligned(array):
    """``array`` itself where it is C-contiguous and starts on a cache line, else such a copy
    (``host_memory.empty_aligned``), made on all cores where it is large (the transposed weight of an LSTM layer with
    256 hidden units took 310 us on one core of the 2-core VM, 180 on both).

        >>> copy = aligned(numpy.arange(12, dtype=numpy.float32).reshape(3, 4).T)
        >>> host_memory.is_aligned(copy), aligned(copy) is copy
        (True, True)
    """
    if host_memory.is_aligned(array):
        return array
    out = host_memory.empty_aligned(array.shape, array.dtype)
    kernels = _copying(array)
    if kernels is None:
        out[...] = array
        return out
    return _copied(kernels, array, out)


def _copied(kernels, array, out):
    """``out``, ``array`` copied into it on all cores (2-D to 4-D, of one shape)."""
    with _one_at_a_time:
        kernels.COPIES[array.ndim](array, out)
    return out


def concatenate(arrays, axis):
    """``numpy.concatenate(arrays, axis)`` of arrays of one dtype and number of dimensions (2 to 4), each copied
    into its part of the result on all cores, or None."""
    first = arrays[0]
    if len(arrays) < 2 or any(type(a) is not numpy.ndarray or a.dtype != first.dtype or a.ndim != first.ndim
                              for a in arrays) or first.ndim < 2:
        return None
    length = sum(a.shape[axis] for a in arrays)
    shape = first.shape[:axis] + (length,) + first.shape[axis + 1:]
    if any(a.shape[:axis] + a.shape[axis + 1:] != shape[:axis] + shape[axis + 1:] for a in arrays):
        return None  # NumPy's error
    out = numpy.empty(shape, first.dtype)
    kernels = _copying(out)
    if kernels is None:
        return None
    start = 0
    with _one_at_a_time:
        for array in arrays:
            part = out[(slice(None),) * axis + (slice(start, start + array.shape[axis]),)]
            if array.size:
                kernels.COPIES[array.ndim](array, part)
            start += array.shape[axis]
    return out


def _copying(array):
    """The kernels module for a large copy of ``array`` (2-D to 4-D float32/float64, at least as many rows as
    threads)."""
    if array.nbytes < MIN_BYTES or array.dtype not in _FLOATS or not 2 <= array.ndim <= 4:
        return None
    kernels = _loaded()
    if kernels is None or array.shape[0] < kernels.numba.get_num_threads():
        return None
    return kernels


def batched_matmul(a, b):
    """``a @ b`` of two stacks of small matrices (the same batch dimensions, one float dtype) in a new array, the
    matrices' products shared among the threads, or None (NumPy's loop then runs them one after another)."""
    if type(a) is not numpy.ndarray or type(b) is not numpy.ndarray or a.ndim < 3 or a.shape[:-2] != b.shape[:-2] \
            or a.dtype != b.dtype or a.dtype not in _FLOATS or a.shape[-1] != b.shape[-2] or a.size == 0:
        return None
    rows, inner, cols = a.shape[-2], a.shape[-1], b.shape[-1]
    each = rows * inner * cols
    if each > MAX_BATCHED_PRODUCT or each * math.prod(a.shape[:-2]) < MIN_BATCHED_PRODUCTS or not cols:
        return None
    kernels = _loaded()
    if kernels is None:
        return None
    out = numpy.empty(a.shape[:-1] + (cols,), a.dtype)
    with _one_at_a_time:
        kernels.batched_matmul(a.reshape(-1, rows, inner), b.reshape(-1, inner, cols), out.reshape(-1, rows, cols))
    return out


def softmax_rows(x, logarithm):
    """softmax (or log_softmax) over the last axis of a C-contiguous array, in a new array, or None."""
    kernels = _usable(x, MIN_FUSED_BYTES)
    if kernels is None:
        return None
    out = numpy.empty(x.shape, x.dtype)
    cols = x.shape[-1]
    with _one_at_a_time:
        kernels.softmax_rows(x.reshape(-1, cols), out.reshape(-1, cols), logarithm)
    return out


def softmax_backward_rows(grad, result, logarithm):
    """The gradient of ``softmax_rows`` from its ``result`` (arrays of one dtype and shape), or None."""
    kernels = _usable(result, MIN_FUSED_BYTES)
    if kernels is None or not _matches(grad, result):
        return None
    out = numpy.empty(result.shape, result.dtype)
    cols = result.shape[-1]
    with _one_at_a_time:
        kernels.softmax_backward_rows(grad.reshape(-1, cols), result.reshape(-1, cols), out.reshape(-1, cols),
                                      logarithm)
    return out


def attention_usable(work):
    """Whether attention of ``work`` multiply-adds runs on the kernels: enough work, and numba available."""
    return work >= MIN_ATTENTION_WORK and _loaded() is not None


def attention_forward(q, k, v, out, lse, scale, causal, scales):
    """``numba_attention.attention_forward`` on the threads (``attention_usable`` said yes)."""
    from . import numba_attention

    threads = _kernels.numba.get_num_threads()
    with _one_at_a_time:
        numba_attention.attention_forward(q, k, v, out, lse, scale, causal, scales, threads)


def attention_backward(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal, scales):
    """``numba_attention``'s gradient kernels on the threads: a task per (batch, head) pair where there are as many
    pairs as threads (``attention_backward_pairs``), else the query rows' and the key rows' kernels, each a task per
    block of rows; False where numba can't run any more (a child forked since the forward ran)."""
    if _loaded() is None:
        return False
    from . import numba_attention

    threads = _kernels.numba.get_num_threads()
    with _one_at_a_time:
        if q.shape[0] * q.shape[1] >= threads:
            numba_attention.attention_backward_pairs(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal,
                                                     scales, threads)
        else:
            numba_attention.attention_backward_query(q, k, v, out, grad, lse, grad_q, scale, causal, scales,
                                                     threads)
            numba_attention.attention_backward_key(q, k, v, out, grad, lse, grad_k, grad_v, scale, causal, scales,
                                                   threads)
    return True


def layer_norm_rows(rows, weight, bias, eps):
    """``(normalized, mean, rstd)`` of the rows of a 2-D C-contiguous array (``cpu_ops.layer_norm_rows``), or None;
    ``weight`` and ``bias`` are vectors of its dtype, or None."""
    kernels = _usable(rows, MIN_FUSED_BYTES)
    if kernels is None or not all(p is None or _matches(p, rows[0]) for p in (weight, bias)):
        return None
    out = numpy.empty(rows.shape, rows.dtype)
    mean, rstd = numpy.empty(len(rows)), numpy.empty(len(rows))
    with _one_at_a_time:
        kernels.layer_norm_rows(rows, rows[0] if weight is None else weight, rows[0] if bias is None else bias, out,
                                mean, rstd, float(eps), weight is not None, bias is not None)
    return out, mean, rstd


def layer_norm_backward_rows(grad, rows, weight, mean, rstd):
    """``(grad_input, grad_weight, grad_bias)`` of ``layer_norm_rows`` (2-D C-contiguous arrays), or None: one pass,
    the parameters' gradients summed in float64 by each chunk of rows (``LAYER_NORM_CHUNKS_PER_THREAD`` a thread),
    then over the chunks."""
    kernels = _usable(rows, MIN_FUSED_BYTES)
    if kernels is None or not _matches(grad, rows) or (weight is not None and not _matches(weight, rows[0])):
        return None
    grad_input = numpy.empty(rows.shape, rows.dtype)
    chunks = min(len(rows), LAYER_NORM_CHUNKS_PER_THREAD * kernels.numba.get_num_threads())
    parameter_sums = numpy.zeros((chunks, 2, rows.shape[1]))
    with _one_at_a_time:
        kernels.layer_norm_backward_rows(grad, rows, rows[0] if weight is None else weight, mean, rstd, grad_input,
                                         parameter_sums, weight is not None)
    grad_weight, grad_bias = parameter_sums.sum(0).astype(rows.dtype)
    return grad_input, grad_weight, grad_bias


def lstm_cell_forward(projected, recurrent, cell_prev, gates, cell, hidden):
    """One float32 LSTM step (``cpu_ops._lstm_cell_forward``'s arguments and results) in one vectorized pass on
    the calling thread; False when not done (numba missing, another dtype)."""
    kernels = _lstm_kernels(gates)
    if kernels is None:
        return False
    kernels.lstm_cell_forward(projected, recurrent, cell_prev, gates, cell, hidden)
    return True


def lstm_cell_backward(gates, cell, cell_prev, grad_hidden, grad_output, grad_cell, grad_cell_prev, grad_gates):
    """The gradients of ``lstm_cell_forward``'s step (``cpu_ops._lstm_cell_backward``'s arguments and results) in
    one pass on the calling thread; False when not done."""
    kernels = _lstm_kernels(gates)
    if kernels is None:
        return False
    kernels.lstm_cell_backward(gates, cell, cell_prev, grad_hidden, grad_output, grad_cell, grad_cell_prev, grad_gates)
    return True


def lstm_forward_sequence(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse):
    """Every step of a float32 LSTM layer direction (``cpu_ops.lstm_forward_steps``' arguments, without its scratch)
    in one kernel, each thread owning a slice of the batch rows where every thread gets one and the whole weight fits
    a core's cache (``numba_kernels.lstm_forward_rows``), else a slice of the hidden units
    (``numba_kernels.lstm_forward_sequence``); False when not done (numba missing, another dtype, a weight too large
    for the threads' caches)."""
    kernels = _lstm_sequence_kernels(weight_hh)
    if kernels is None:
        return False
    # The arrays its products read, on cache lines (``host_memory``; the caller's results come so: ``empty``)
    weight_hh, first_hidden = aligned(weight_hh), aligned(first_hidden)
    groups = _lstm_row_groups(kernels, weight_hh, cells.shape[1])
    with _one_at_a_time:
        if groups:
            kernels.lstm_forward_rows(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse,
                                      groups)
        else:
            kernels.lstm_forward_sequence(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs,
                                          reverse, _lstm_slices(kernels, cells.shape[2]))
    return True


def lstm_backward_sequence(gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, grad_cell, grad_gates,
                           reverse):
    """The gradients of ``lstm_forward_sequence``'s layer (``cpu_ops.lstm_backward_steps``' arguments, without its
    scratch) in one kernel; False when not done."""
    kernels = _lstm_sequence_kernels(weight_hh)
    if kernels is None:
        return False
    weight_hh_t = aligned(weight_hh.T)  # before taking the kernels: the copy takes them too
    groups = _lstm_row_groups(kernels, weight_hh, cells.shape[1])
    with _one_at_a_time:
        if groups:
            kernels.lstm_backward_rows(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell,
                                       grad_gates, reverse, groups)
        else:
            kernels.lstm_backward_sequence(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden,
                                           grad_cell, grad_gates, reverse, _lstm_slices(kernels, cells.shape[2]))
    return True


def _lstm_sequence_kernels(weight_hh):
    """The kernels module where one kernel runs a float32 layer's steps faster than a BLAS product and a cell pass
    per step: where each thread's share of ``weight_hh`` fits ``LSTM_MAX_WEIGHT_SHARE``; else None."""
    kernels = _lstm_kernels(weight_hh)
    if kernels is None or weight_hh.nbytes > LSTM_MAX_WEIGHT_SHARE * _lstm_slices(kernels, weight_hh.shape[1]):
        return None
    return kernels


def _lstm_row_groups(kernels, weight_hh, batch):
    """How many slices of the batch rows the threads share, or 0: slices of the hidden units."""
    threads = kernels.numba.get_num_threads()
    if batch < threads or weight_hh.nbytes > core_cache_bytes():
        return 0
    return threads


@functools.cache
def core_cache_bytes(folder="/sys/devices/system/cpu/cpu0/cache"):
    """The size of a core's second-level cache, as Linux describes the first CPU's caches in ``folder``; 0 where
    unknown (another system).

    >>> core_cache_bytes() >= 0
    True
    """
    try:
        for index in sorted(os.listdir(folder)):
            with open(os.path.join(folder, index, "level")) as level, open(os.path.join(folder, index, "type")) as kind:
                if level.read().strip() != "2" or kind.read().strip() == "Instruction":
                    continue
            with open(os.path.join(folder, index, "size")) as size:
                text = size.read().strip()
            return int(text[:-1]) * _SIZE_SUFFIXES[text[-1]] if text[-1:] in _SIZE_SUFFIXES else int(text)
    except (OSError, ValueError):
        pass
    return 0


_SIZE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}  # of Linux's cache sizes ("2048K")


def _lstm_slices(kernels, size):
    """How many slices of the hidden units the threads share: four units each, at least."""
    return max(1, min(kernels.numba.get_num_threads(), size // 4))


def _lstm_kernels(gates):
    """The kernels module for a float32 LSTM step (``gates``' dtype stands for all the step's arrays), or None."""
    return _loaded() if gates.dtype == numpy.float32 else None


def set_num_threads(count):
    """Use ``count`` threads in these kernels (numba's count is per calling thread, as OpenMP's), and in the BLAS
    library that loads with numba or SciPy's linear algebra after this (``follow_thread_count``); the caller
    (``_threads.set_num_threads``) tells the BLAS libraries loaded already."""
    global _requested_threads, _blas_follows
    _requested_threads = count
    _blas_follows = "scipy.linalg" in sys.modules
    if _kernels:
        _apply_thread_count(_kernels.numba)


def follow_thread_count():
    """Give ``set_num_threads``' count to SciPy's OpenBLAS, once it is loaded (by numba's first kernel, or a
    linear-algebra op through ``scipy.linalg``): a library loaded after the count was set starts with as many
    threads as there are cores. Once that is done, a call reads one flag."""
    global _blas_follows
    if _blas_follows or _requested_threads is None or "scipy.linalg" not in sys.modules:
        return
    threadpoolctl.threadpool_limits(_requested_threads, user_api="blas")
    _blas_follows = True


def _matches(array, like, dense=True):
    return type(array) is numpy.ndarray and array.dtype == like.dtype and array.shape == like.shape \
        and (array.flags.c_contiguous or not dense)


def _dense(array, kernels):
    """``array`` where it is C-contiguous, else a copy made on all cores (``contiguous``) where there are enough of
    them, or None."""
    if array.flags.c_contiguous:
        return array
    if kernels is None or kernels.numba.get_num_threads() < MIN_STRIDED_THREADS:
        return None
    return contiguous(array)


def _usable(x, min_bytes=MIN_BYTES, dense=True):
    """The kernels module when ``x`` is a large float32/float64 array (C-contiguous, unless not ``dense``) and numba
    is available."""
    if type(x) is not numpy.ndarray or x.nbytes < min_bytes or x.dtype not in _FLOATS or \
            (dense and not x.flags.c_contiguous):
        return None
    return _loaded()


def _loaded():
    """The kernels module, loading it on first use; None where numba can't be used."""
    kernels = _kernels if _kernels is not None else _load()
    return kernels or None


def _load():
    global _kernels, _one_at_a_time
    with _lock:
        if _kernels is not None:
            return _kernels
        try:
            from . import numba_kernels
            with _threading_layer(numba_kernels.numba):
                numba_kernels.warm_up()
        except Exception as error:  # not installed, or refusing this NumPy, or no threading layer
            _kernels = False
            _warn_missing(error)
            return _kernels
        if numba_kernels.numba.threading_layer() == "workqueue":
            _one_at_a_time = threading.Lock()
        _apply_thread_count(numba_kernels.numba)
        follow_thread_count()  # the warm-up loaded SciPy's OpenBLAS
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forked)
        _kernels = numba_kernels
    return _kernels


@contextmanager
def _threading_layer(numba):
    """Load numba's threads inside this context: GNU OpenMP's with the passive wait policy and a short spin where no
    OpenMP runtime is loaded yet (the runtime reads ``OMP_WAIT_POLICY`` and ``GOMP_SPINCOUNT`` once, when it loads;
    the variables are set only meanwhile, so child processes don't inherit them; a count the user set stays), else
    numba's workqueue pool, unless the user chose a layer (``NUMBA_THREADING_LAYER``) or asked for passive OpenMP
    threads themselves. The workqueue pool runs one kernel at a time: calls from several threads take turns
    (``_one_at_a_time``)."""
    if "NUMBA_THREADING_LAYER" in os.environ or "NUMBA_THREADING_LAYER_PRIORITY" in os.environ \
            or numba.config.THREADING_LAYER != "default":
        yield
        return
    set_here = "OMP_WAIT_POLICY" not in os.environ and not _openmp_loaded()
    spin_set_here = set_here and "GOMP_SPINCOUNT" not in os.environ
    if set_here:
        os.environ["OMP_WAIT_POLICY"] = "passive"
    if spin_set_here:
        os.environ["GOMP_SPINCOUNT"] = _SPIN_COUNT
    if os.environ.get("OMP_WAIT_POLICY", "").lower() == "passive":
        numba.config.THREADING_LAYER_PRIORITY = ["omp", "workqueue", "tbb"]  # workqueue where numba has no OpenMP
    else:  # OpenMP threads that would spin, or a runtime already loaded with a policy agnostic can't know
        numba.config.THREADING_LAYER = "workqueue"
    try:
        yield
    finally:
        if set_here:
            del os.environ["OMP_WAIT_POLICY"]
        if spin_set_here:
            del os.environ["GOMP_SPINCOUNT"]


def _openmp_loaded():
    """Whether an OpenMP runtime that numba may use is already in the process (True where it can't be told)."""
    if not hasattr(os, "RTLD_NOLOAD"):
        return True
    for name in ("libgomp.so.1", "libiomp5.so", "libomp.so"):
        try:
            ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:  # not loaded
            continue
        return True
    return False


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
