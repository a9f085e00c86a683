"""The CPU's own implementations of agnostic's fused operations, on NumPy arrays: each function here has a
namesake in ``cuda_ops`` with the same arguments and results, and the ops reach them as ``device.backend.ops``.

>>> import numpy
>>> from agnostic._backends import cpu_ops
>>> cpu_ops.column_sums(numpy.ones((3, 2), numpy.float32))
array([3., 3.], dtype=float32)
"""

import math

import numpy

from .. import _conversion
from ..ops import _division
from .._layout import check_attention_gradient_layouts
from . import cpu_kernels, dlpack, lstm_steps, philox
from .special import erf_numpy, library_function

MULTI_TENSOR_KERNELS = False  # no one-launch update of many tensors: optimizers update each host tensor in turn
ROW_KERNELS = True  # softmax and layer_norm over rows: multi-core kernels for large arrays (see each)
ATTENTION_KERNELS = True  # attention_forward/backward on all cores where numba is installed (see attention_fits)
_BLOCK = 1 << 16  # elements per relu_gradient block
_ONES: dict = {}  # dtype -> the vector of ones column_sums multiplies by
_FEW_CLASSES = 32  # with at most this many classes and at least _MANY_ROWS rows, reduce column by column
_MANY_ROWS = 256


def add_row(array, row):
    """``array += row`` in place, ``row`` added along the last axis (a linear layer's bias)."""
    if not cpu_kernels.add_row(array, row):
        array += row


def erf(array):
    """erf of a floating array, in its dtype (fdlibm's, computed in float64)."""
    return erf_numpy(array)


def relu_gradient(grad, input):
    """``grad where input > 0 else 0`` of two arrays of one float dtype and shape: the multi-core kernel
    (``cpu_kernels``), else bit masking, a cache-sized block at a time (``numpy.where`` is several times slower on a
    mask as unpredictable as a ReLU's)."""
    out = cpu_kernels.relu_gradient(grad, input)
    if out is not None:
        return out
    out = numpy.empty(grad.shape, grad.dtype)
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


def kept_or_zero(mask, array):
    """``where(mask, array, 0)`` of an integer or float array, by masking bits: exact, and several times faster than
    ``numpy.where`` when the mask is unpredictable (a ReLU's gradient)."""
    integers = numpy.dtype(f"i{array.dtype.itemsize}")
    return (array.view(integers) & -mask.astype(integers)).view(array.dtype)


def column_sums(array):
    """``array.sum(0)`` of a 2-D, C-contiguous float32/float64 array: ``ones @ rows``, since BLAS's
    matrix-vector product runs on its threads where NumPy's sum takes one core."""
    return numpy.matmul(_ones(array.shape[0], array.dtype), array)


def _ones(count, dtype):
    """A vector of ``count`` ones, shared (read only): sliced from the longest made so far."""
    vector = _ONES.get(dtype)
    if vector is None or len(vector) < count:
        vector = _ONES[dtype] = numpy.ones(max(count, 1), dtype)
        vector.flags.writeable = False
    return vector[:count]


def softmax_rows(array, logarithm):
    """softmax (or log_softmax) over the last axis of a C-contiguous float32/float64 array: the multi-core kernel
    (``cpu_kernels``) for a large one, else None (the caller's composed form computes it)."""
    return cpu_kernels.softmax_rows(array, logarithm)


def softmax_backward_rows(grad, result, logarithm):
    """The gradient of ``softmax_rows`` from its ``result``: the multi-core kernel for large arrays, else None (the
    caller's composed form)."""
    return cpu_kernels.softmax_backward_rows(grad, result, logarithm)


def attention_fits(dtype, pairs, queries, keys, dim, value_dim):
    """Whether ``attention_forward`` takes ``pairs`` (B * H) of (B, H, L, D) queries of ``dtype`` (``queries`` rows)
    over ``keys`` keys and values of ``dim`` and ``value_dim`` dimensions: where numba is installed, from
    ``cpu_kernels.MIN_ATTENTION_WORK`` multiply-adds (the composed form's NumPy products and row kernels run below)."""
    return min(queries, keys, dim, value_dim) > 0 and \
        cpu_kernels.attention_usable(pairs * queries * keys * (dim + value_dim))


def attention_forward(q, k, v, out, scale, causal, dropout=None):
    """``out = softmax(scale * q k^T) v``, as ``cuda_ops.attention_forward`` (the same arguments, dropout and
    result): ``numba_attention``'s kernel on all cores, a task per block of query rows of a (batch, head) pair, the
    weights never stored; with dropout, the draw's scales (one per weight) are computed first."""
    lse = numpy.empty(q.shape[:3], q.dtype)
    cpu_kernels.attention_forward(q, k, v, out, lse, scale, causal, _attention_dropout_scales(q, k, dropout))
    return lse


def attention_backward(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal, dropout=None):
    """The gradients of ``attention_forward``, as ``cuda_ops.attention_backward``: the weights computed again from
    ``lse`` by ``numba_attention``'s kernels (``cpu_kernels.attention_backward`` says which), or by NumPy's products
    where numba can no longer run (a child forked after the forward)."""
    check_attention_gradient_layouts(q, k, v, out, grad, grad_q, grad_k, grad_v)
    scales = _attention_dropout_scales(q, k, dropout)
    if cpu_kernels.attention_backward(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal, scales):
        return
    scores = numpy.matmul(q, k.swapaxes(-1, -2)) * q.dtype.type(scale)
    if causal:
        scores[..., ~numpy.tri(*scores.shape[-2:], dtype=bool)] = -numpy.inf
    weights = numpy.exp(scores - lse[..., None])
    dropped, weight_grads = weights, numpy.matmul(grad, v.swapaxes(-1, -2))
    if dropout is not None:
        drop = scales.reshape(weights.shape)
        dropped, weight_grads = weights * drop, weight_grads * drop
    score_grads = weights * (weight_grads - (grad * out).sum(-1, keepdims=True))
    grad_q[...] = numpy.matmul(score_grads, k) * q.dtype.type(scale)
    grad_k[...] = numpy.matmul(score_grads.swapaxes(-1, -2), q) * q.dtype.type(scale)
    grad_v[...] = numpy.matmul(dropped.swapaxes(-1, -2), grad)


def _attention_dropout_scales(q, k, dropout):
    """The scales (1 / keep or 0) of attention's dropout draw ``(seed, start, keep)``, one per (B, H, L, S) weight,
    flat; an empty array for no dropout."""
    if dropout is None:
        return numpy.empty(0, q.dtype)
    seed, start, keep = dropout
    return philox.host_dropout_scales(seed, start, math.prod(q.shape[:3]) * k.shape[2], q.dtype, keep)


def layer_norm_rows(rows, weight, bias, eps):
    """``(normalized, mean, rstd)`` of the rows of a 2-D C-contiguous float32/float64 array: each row less its mean,
    times ``1 / sqrt(var + eps)`` (biased variance), times ``weight`` and plus ``bias`` (vectors, or None). ``mean``
    and ``rstd`` (one per row) are what the gradient needs."""
    fused = cpu_kernels.layer_norm_rows(rows, weight, bias, eps)
    if fused is not None:
        return fused
    mean = rows.mean(axis=1)
    centered = rows - mean[:, None]
    rstd = 1 / numpy.sqrt((centered * centered).mean(axis=1) + eps)
    out = centered * rstd[:, None]
    if weight is not None:
        out *= weight
    if bias is not None:
        out += bias
    return out, mean, rstd


def layer_norm_backward_rows(grad, rows, weight, mean, rstd):
    """``(grad_input, grad_weight, grad_bias)`` of ``layer_norm_rows`` (2-D C-contiguous arrays)."""
    fused = cpu_kernels.layer_norm_backward_rows(grad, rows, weight, mean, rstd)
    if fused is not None:
        return fused
    # the statistics may be the kernel's float64 ones (where the kernels stopped applying since: a fork)
    mean, rstd = mean.astype(rows.dtype, copy=False), rstd.astype(rows.dtype, copy=False)
    normalized = (rows - mean[:, None]) * rstd[:, None]
    scaled = grad if weight is None else grad * weight
    centre = scaled.mean(axis=1, keepdims=True)
    correlation = (scaled * normalized).mean(axis=1, keepdims=True)
    grad_input = rstd[:, None] * (scaled - centre - normalized * correlation)
    return grad_input, column_sums(grad * normalized), column_sums(grad)


def _takes_out_ellipsis():
    """Whether NumPy's ufuncs take ``out=...`` (NumPy 2.3 and later): the result is then an array even where it
    has no dimensions, instead of a NumPy scalar that ``numpy.asarray`` must turn back into one (1.5 times the
    cost of a small reduction)."""
    try:
        return numpy.add.reduce(numpy.zeros(1), out=...).__class__ is numpy.ndarray
    except (TypeError, ValueError):
        return False


OUT_ELLIPSIS = _takes_out_ellipsis()


def whole_reduction(array, name, keepdim):
    """``array``'s ``name`` (sum, mean, max or min) over every element, a 0-dim array (all dimensions 1 with
    ``keepdim``): NumPy's ufunc reductions called directly (``array.sum()`` and the others are Python functions
    around them, 0.1 us to 3 us slower), a mean being the sum divided in place by the count, as NumPy's.

        >>> whole_reduction(numpy.array([1.0, 2.0, 4.0]), "mean", False)
        array(2.33333333)
    """
    reduce = _WHOLE_REDUCTIONS[name]
    if OUT_ELLIPSIS:
        result = reduce(array, None, keepdims=keepdim, out=...)
    else:  # a NumPy scalar, made a 0-dim array
        result = numpy.asarray(reduce(array, None, keepdims=keepdim))
    if name == "mean":
        numpy.true_divide(result, array.size, out=result)
    return result


_WHOLE_REDUCTIONS = {"sum": numpy.add.reduce, "mean": numpy.add.reduce, "max": numpy.maximum.reduce,
                     "min": numpy.minimum.reduce}


def cross_entropy_forward(logits, labels, ignore_index, mean):
    """NumPy: ``(result, log_sum_exp per row, kept count, any bad label)`` (ufunc reductions called directly: the
    array methods cost several microseconds more each, and this runs every training step)."""
    rows, classes = logits.shape
    lowest, highest = numpy.minimum.reduce(labels), numpy.maximum.reduce(labels)
    every_row = 0 <= lowest and highest < classes and not lowest <= ignore_index <= highest
    if every_row:  # the common case: all labels valid, none ignored
        safe, kept = labels, None
    else:
        kept = labels != ignore_index
        safe = numpy.where(kept, labels, 0)
        if numpy.minimum.reduce(safe) < 0 or numpy.maximum.reduce(safe) >= classes:
            return None, None, None, True
    high = _across_row(numpy.maximum, logits)
    shifted = numpy.subtract(logits, high[:, None])
    log_sum_exp = high + numpy.log(_across_row(numpy.add, numpy.exp(shifted, out=shifted)))
    losses = log_sum_exp - logits[numpy.arange(rows), safe]
    if kept is None:
        count = logits.dtype.type(rows)
    else:
        losses = numpy.where(kept, losses, 0)
        count = numpy.add.reduce(kept, dtype=logits.dtype)
    total = numpy.add.reduce(losses, dtype=logits.dtype)
    return numpy.asarray(total / count if mean else total, logits.dtype), log_sum_exp, count, False


def _across_row(ufunc, array):
    """``ufunc.reduce(array, axis=1)``; for a few classes, a column at a time: NumPy reduces a short inner axis ten
    times slower than it combines whole columns."""
    rows, classes = array.shape
    if classes > _FEW_CLASSES or rows < _MANY_ROWS:
        return ufunc.reduce(array, axis=1)
    result = array[:, 0].copy()
    for column in range(1, classes):
        ufunc(result, array[:, column], out=result)
    return result


def cross_entropy_backward(logits, labels, log_sum_exp, count, scale, ignore_index, mean):
    """The gradient ``(softmax(logits) - one_hot(labels)) * scale`` (divided by ``count`` for ``mean``), rows of
    ignored labels zero."""
    gradient = numpy.subtract(logits, log_sum_exp[:, None])
    numpy.exp(gradient, out=gradient)
    weight = scale / count if mean else scale
    if count == len(labels):  # no row ignored
        gradient[numpy.arange(len(labels)), labels] -= 1
        gradient *= weight
    else:
        kept = labels != ignore_index
        gradient[numpy.arange(len(labels)), numpy.where(kept, labels, 0)] -= 1
        gradient *= numpy.where(kept, weight, 0)[:, None]  # ignored rows 0 even where every row is (weight 1/0)
    return gradient


def convert(array, dtype):
    """``array`` as NumPy dtype ``dtype``, as PyTorch converts it (``agnostic._conversion``): a float array whose
    values are all inside the range of the intermediate integer goes through it by two casts that are exact on every
    machine; others take the formula."""
    if _conversion.kind(array.dtype, dtype) == "float_to_integer" and array.size:
        wide, low, high = _conversion.integer_range(dtype)
        if low <= array.min() and array.max() < high:  # False for NaN
            return array.astype(wide).astype(dtype, copy=False)
    return _conversion.convert(numpy, array, dtype)


def _numpy_where_identical(name):
    """A ``_division`` function on NumPy arrays: NumPy's own ufunc for the dtypes where it gives the same bits
    (``_division.NUMPY_EQUIVALENTS``; faster), the formula for the others."""
    ufunc = getattr(numpy, name, None)
    formula = getattr(_division, name)
    identical = frozenset(numpy.dtype(dtype) for dtype in _division.NUMPY_EQUIVALENTS.get(name, ()))

    def compute(a, b):
        return ufunc(a, b) if a.dtype in identical else formula(numpy, a, b)
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = f"PyTorch's {name} of two arrays (or an array and a NumPy scalar) of one dtype (``_division``)."
    return compute


floor_divide = _numpy_where_identical("floor_divide")
remainder = _numpy_where_identical("remainder")
fmod = _numpy_where_identical("fmod")
trunc_divide = _numpy_where_identical("trunc_divide")
complex_divide = _numpy_where_identical("complex_divide")


def linalg(name, *arrays, **kwargs):
    """``numpy.linalg.<name>(*arrays, **kwargs)``, which raises ``numpy.linalg.LinAlgError`` for a singular matrix
    (``inv``, ``solve``) or one that is not positive-definite (``cholesky``); the same in ``cuda_ops``."""
    return getattr(numpy.linalg, name)(*arrays, **kwargs)


def _scipy_special():
    import scipy.special

    return scipy.special


def _scipy_linalg():
    """``scipy.linalg`` (its ``blas`` and ``lapack`` modules included), imported on first use, with its OpenBLAS
    running ``set_num_threads``' count."""
    import scipy.linalg

    cpu_kernels.follow_thread_count()
    return scipy.linalg


def special_function(name, adjust=None):
    """``f(*arguments)``: SciPy's ``scipy.special.<name>`` of NumPy arrays, in the first array's dtype (see
    ``special.library_function``; SciPy is imported on the first call)."""
    return library_function(_scipy_special, lambda: numpy, name, adjust)


def scatter_maximum(target, positions, values):
    """``target[positions] = maximum(target[positions], values)`` in place, every repeated position taken into
    account (a NaN wins, as in PyTorch's ``scatter_reduce(reduce="amax")``)."""
    numpy.maximum.at(target, positions, values)


def scatter_minimum(target, positions, values):
    """``target[positions] = minimum(target[positions], values)`` in place, every repeated position taken into
    account (a NaN wins)."""
    numpy.minimum.at(target, positions, values)


_CAPACITY: list = []  # [bytes of physical memory and swap], read on first use


def memory_capacity():
    """The most bytes arrays here could ever take, physical memory plus swap (read once), or None where the system
    doesn't say; allocation requests beyond it are refused up front (see ``agnostic._allocation``)."""
    if not _CAPACITY:
        _CAPACITY.append(_physical_memory_and_swap())
    return _CAPACITY[0]


def _physical_memory_and_swap():
    import os

    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or no such name: no limit known
        return None
    if physical <= 0:
        return None
    swap = 0
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("SwapTotal:"):
                    swap = int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return physical + swap


def set_matmul_tf32(allowed):
    """Whether float32 matrix products may use TF32 (``backends.cuda.matmul.allow_tf32``): NumPy's BLAS has no
    TF32, so nothing changes on the CPU; the same in ``cuda_ops``."""


_GATE_AFFINES: dict = {}  # (hidden size, dtype) -> the rows _gate_affine gives


def _gate_affine(size, dtype):
    """``(scale, shift)`` rows over the 4H gate columns: sigmoid(x) = 0.5 + 0.5 * tanh(x / 2) on the input, forget
    and output gates, tanh itself on the candidate, so one tanh pass over the row computes all four gates."""
    key = (size, dtype)
    if key not in _GATE_AFFINES:
        scale = numpy.full(4 * size, 0.5, dtype)
        scale[2 * size:3 * size] = 1
        shift = numpy.full(4 * size, 0.5, dtype)
        shift[2 * size:3 * size] = 0
        _GATE_AFFINES[key] = scale, shift
    return _GATE_AFFINES[key]


def _lstm_cell_forward(projected, recurrent, cell_prev, gates, cell, hidden):
    """One LSTM time step of a batch: the gates ``sigmoid/tanh(projected + recurrent)`` ((B, 4H), PyTorch's gate
    order) into ``gates``, the new cell state into ``cell`` and the new hidden state into ``hidden`` ((B, H)), in a
    few whole-row NumPy passes: float64 steps, and float32 ones where numba is missing (``cpu_kernels`` runs a
    float32 step in one pass)."""
    size = cell.shape[-1]
    scale, shift = _gate_affine(size, gates.dtype)
    numpy.add(projected, recurrent, out=gates)
    numpy.multiply(gates, scale, out=gates)
    numpy.tanh(gates, out=gates)
    numpy.multiply(gates, scale, out=gates)
    numpy.add(gates, shift, out=gates)
    input_gate, forget_gate, candidate, output_gate = (gates[:, k * size:(k + 1) * size] for k in range(4))
    numpy.multiply(forget_gate, cell_prev, out=cell)
    numpy.multiply(input_gate, candidate, out=hidden)
    numpy.add(cell, hidden, out=cell)
    numpy.tanh(cell, out=hidden)
    numpy.multiply(output_gate, hidden, out=hidden)


def _lstm_cell_backward(gates, cell, cell_prev, grad_hidden, grad_output, grad_cell, grad_cell_prev, grad_gates):
    """The gradients of one LSTM time step: with respect to the gates' pre-activations into ``grad_gates`` (B, 4H)
    and to the previous cell state into ``grad_cell_prev`` (B, H), from the gradients reaching the step's hidden
    state (``grad_hidden`` from the next step, ``grad_output`` from the layer's output) and cell state."""
    size = cell.shape[-1]
    input_gate, forget_gate, candidate, output_gate = (gates[:, k * size:(k + 1) * size] for k in range(4))
    grad_input, grad_forget, grad_candidate, grad_output_gate = (grad_gates[:, k * size:(k + 1) * size]
                                                                 for k in range(4))
    hidden_total = grad_hidden + grad_output
    tanh_cell = numpy.tanh(cell)
    numpy.multiply(hidden_total, tanh_cell, out=grad_output_gate)
    # cell_total = grad_cell + hidden_total * output_gate * (1 - tanh_cell^2), built in grad_cell_prev
    numpy.multiply(tanh_cell, tanh_cell, out=tanh_cell)
    numpy.subtract(1, tanh_cell, out=tanh_cell)
    numpy.multiply(tanh_cell, output_gate, out=tanh_cell)
    numpy.multiply(tanh_cell, hidden_total, out=tanh_cell)
    cell_total = numpy.add(tanh_cell, grad_cell, out=tanh_cell)
    numpy.multiply(cell_total, candidate, out=grad_input)
    numpy.multiply(cell_total, cell_prev, out=grad_forget)
    numpy.multiply(cell_total, input_gate, out=grad_candidate)
    numpy.multiply(cell_total, forget_gate, out=grad_cell_prev)
    # the activations' derivatives: s * (1 - s) for the sigmoid gates, 1 - g^2 for the candidate
    slopes = numpy.subtract(1, gates)
    numpy.multiply(slopes, gates, out=slopes)
    candidate_slope = slopes[:, 2 * size:3 * size]
    numpy.multiply(candidate, candidate, out=candidate_slope)
    numpy.subtract(1, candidate_slope, out=candidate_slope)
    numpy.multiply(grad_gates, slopes, out=grad_gates)


# ----- DLPack and __cuda_array_interface__ -------------------------------------------------------------------------
def dlpack_device(array):
    """``__dlpack_device__`` of a host array: ``(kDLCPU, 0)``."""
    return dlpack.CPU_DEVICE


def dlpack_export(array, stream, max_version, dl_device, copy):
    """A DLPack capsule of a NumPy array (``__dlpack__``'s keywords, as the Array API standard gives them).

    The CPU has no streams: ``stream`` is None (or -1, "no synchronization", which PyTorch also accepts). bfloat16,
    which NumPy's DLPack does not know, leaves as its uint16 bits relabelled kDLBfloat.
    """
    if stream is not None and stream != -1:
        raise BufferError(f"a CPU tensor has no stream to synchronize with: pass stream=None (got stream={stream!r})")
    bfloat16 = array.dtype.name == "bfloat16"
    exported = array.view(numpy.uint16) if bfloat16 else array
    capsule = exported.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)
    if bfloat16:
        dlpack.retype(capsule, dlpack.BFLOAT, 16)
    return capsule


def dlpack_import(producer, copy):
    """A NumPy array sharing the host memory of ``producer`` (an object with ``__dlpack__`` or a capsule), copied
    when ``copy`` is True; ``copy=False`` refuses a producer's copy."""
    if dlpack.is_capsule(producer):
        capsule, copied = producer, copy is not True
    else:
        capsule, copied = dlpack.request_capsule(producer, copy=copy)
    code, bits, _ = dlpack.capsule_dtype(capsule)
    bfloat16 = code == dlpack.BFLOAT and bits == 16
    if bfloat16:
        dlpack.retype(capsule, dlpack.UNSIGNED_INTEGER, 16)
    if dlpack.is_legacy(capsule):
        array = numpy.asarray(dlpack.LegacyCapsuleMemory(capsule))
    else:
        array = numpy.from_dlpack(dlpack.CapsuleProducer(capsule))
    if bfloat16:
        import ml_dtypes

        array = array.view(ml_dtypes.bfloat16)
    return array if copied else array.copy()


def cuda_array_interface(array):
    """``__cuda_array_interface__`` of host memory: there is none (AttributeError, so ``hasattr`` is False)."""
    raise AttributeError("Can't get __cuda_array_interface__ on a CPU tensor; if CUDA data is required, use "
                         "tensor.cuda() to copy the tensor to device memory")


def array_from_cuda_interface(obj):
    """An array sharing the device memory of an object with ``__cuda_array_interface__``: not a host array."""
    raise TypeError(f"{type(obj).__name__} exposes __cuda_array_interface__ (CUDA memory): make a CUDA tensor of it")


def lstm_forward_steps(projected, first_hidden, first_cell, weight_hh, recurrent, gates, cells, outputs, reverse):
    """Run an LSTM layer direction from its input projection ``projected`` (T, B, 4H) and first states (B, H): each
    step's activated gates into ``gates``, cell states into ``cells`` and hidden states into ``outputs``: in one
    multi-core kernel for float32 where numba is installed (``cpu_kernels.lstm_forward_sequence``), else a step
    being one matrix product (into ``recurrent``, (B, 4H) scratch) and the cell (``cpu_kernels``' one pass, else
    NumPy's), on preallocated arrays so that nothing is allocated inside the loop."""
    if cpu_kernels.lstm_forward_sequence(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs,
                                         reverse):
        return
    weight_hh_t = weight_hh.T
    hidden, cell = first_hidden, first_cell
    for t in lstm_steps.order(len(projected), reverse):
        numpy.matmul(hidden, weight_hh_t, out=recurrent)
        step = projected[t], recurrent, cell, gates[t], cells[t], outputs[t]
        if not cpu_kernels.lstm_cell_forward(*step):
            _lstm_cell_forward(*step)
        hidden, cell = outputs[t], cells[t]


def lstm_backward_steps(gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, grad_cell, spare, grad_gates,
                        reverse):
    """The gradients of an LSTM layer direction's steps, last step first: each step's gates' pre-activation
    gradients into ``grad_gates`` (T, B, 4H); ``grad_hidden`` and ``grad_cell`` (B, H) come in holding the
    gradients of the final states and leave holding those of the first states; ``spare`` (B, H) is scratch. One
    multi-core kernel where the forward's is (``cpu_kernels.lstm_backward_sequence``)."""
    if cpu_kernels.lstm_backward_sequence(gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, grad_cell,
                                          grad_gates, reverse):
        return
    times = list(lstm_steps.order(len(gates), reverse))
    incoming, outgoing = grad_cell, spare
    for position in range(len(times) - 1, -1, -1):
        t = times[position]
        cell_prev = cells[times[position - 1]] if position else first_cell
        step = gates[t], cells[t], cell_prev, grad_hidden, grad_outputs[t], incoming, outgoing, grad_gates[t]
        if not cpu_kernels.lstm_cell_backward(*step):
            _lstm_cell_backward(*step)
        numpy.matmul(grad_gates[t], weight_hh, out=grad_hidden)
        incoming, outgoing = outgoing, incoming
    if incoming is not grad_cell:
        grad_cell[...] = incoming


def lu_factor(matrices):
    """``(LU, pivots)`` of a stack of (m, n) matrices (b, m, n), each by LAPACK's ``getrf`` through SciPy: the unit
    lower factor (its diagonal not stored) and the upper one packed in one (b, m, n) array, and (b, min(m, n))
    int32 pivots, 1-based as LAPACK's and PyTorch's (row i was exchanged with row pivots[i] - 1). A singular
    matrix is factored as well, silently (SciPy would warn)."""
    import warnings

    linalg = _scipy_linalg()
    count, rows, columns = matrices.shape
    factors = numpy.empty(matrices.shape, matrices.dtype)
    pivots = numpy.empty((count, min(rows, columns)), numpy.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        for index in range(count):
            factors[index], rows_exchanged = linalg.lu_factor(matrices[index], check_finite=False)
            pivots[index] = rows_exchanged + 1
    return factors, pivots



def solve_triangular(a, b, lower, unit_diagonal):
    """The solutions ``X`` of ``A X = B`` for a stack of triangular (n, n) matrices ``a`` (only the ``lower`` or
    upper triangle read, its diagonal taken as ones with ``unit_diagonal``) and (n, k) right-hand sides ``b``, both
    (count, ...): BLAS's ``trsm`` through SciPy, matrix by matrix. trsm rather than SciPy's ``solve_triangular``
    (LAPACK's trtrs), which refuses a zero on the diagonal: PyTorch returns inf/NaN there, as trsm does."""
    trsm = _scipy_linalg().blas.get_blas_funcs("trsm", (a, b))
    out = numpy.empty(b.shape, b.dtype)
    for index in range(a.shape[0]):
        out[index] = trsm(1.0, a[index], b[index], lower=int(lower), diag=int(unit_diagonal))
    return out


def ldl_factor(matrices, hermitian):
    """``(LD, pivots, info)`` of a stack of symmetric (Hermitian, with ``hermitian``) (n, n) matrices, each by
    LAPACK's ``sytrf`` (``hetrf``) through SciPy on its lower triangle: the packed factors (upper triangle zeroed),
    1-based int32 pivots as LAPACK's (negative for 2 x 2 blocks) and int32 ``info`` (0, or the 1-based index of a
    zero diagonal block of D)."""
    sytrf = _scipy_linalg().lapack.get_lapack_funcs("hetrf" if hermitian else "sytrf", (matrices,))
    count, n, _ = matrices.shape
    factors = numpy.empty(matrices.shape, matrices.dtype)
    pivots = numpy.empty((count, n), numpy.int32)
    info = numpy.empty(count, numpy.int32)
    for index in range(count):
        factors[index], pivots[index], info[index] = sytrf(matrices[index], lower=1)
    return numpy.tril(factors), pivots, info


def ldl_solve(factors, pivots, b, hermitian):
    """The solutions ``X`` of ``A X = B`` from ``ldl_factor``'s ``factors`` and ``pivots`` of each ``A`` and (n, k)
    right-hand sides ``b`` (stacks of one count), by LAPACK's ``sytrs`` (``hetrs``) through SciPy."""
    sytrs = _scipy_linalg().lapack.get_lapack_funcs("hetrs" if hermitian else "sytrs", (factors, b))
    out = numpy.empty(b.shape, b.dtype)
    for index in range(factors.shape[0]):
        out[index], _ = sytrs(factors[index], pivots[index], b[index], lower=1)
    return out


def allocation(array):
    """``(memory, offset)``: the whole allocation ``array``'s elements lie in, as a flat uint8 array from its first
    byte, and the byte offset of ``array``'s first element in it (PyTorch's storage and storage offset). The
    allocation is the buffer at the end of ``array``'s chain of bases (its own memory when it has none)."""
    root = array
    while True:
        owner = getattr(root, "base", None) if not isinstance(root, memoryview) else root.obj
        if owner is None:
            break
        root = owner
    memory = None
    if isinstance(root, numpy.ndarray) and (root.flags.c_contiguous or root.flags.f_contiguous):
        memory = root.ravel(order="K").view(numpy.uint8)
    elif not isinstance(root, numpy.ndarray):
        try:
            memory = numpy.frombuffer(root, numpy.uint8)
        except (TypeError, ValueError):
            memory = None
    start = array.__array_interface__["data"][0]
    if memory is not None and memory.size:
        offset = start - memory.__array_interface__["data"][0]
        if 0 <= offset <= memory.size:
            return memory, offset
    # Memory whose owner can't be read as bytes: the array's own elements are all that is known of it.
    if not array.flags.c_contiguous:
        raise RuntimeError("can't find the memory this tensor's elements lie in; call .contiguous() first")
    return array.reshape(-1).view(numpy.uint8), 0


def strided_view(memory, dtype, shape, strides, offset):
    """A view of the flat uint8 ``memory`` (see ``allocation``) from byte ``offset``, as ``dtype`` elements with
    ``shape`` and byte ``strides`` (writable where the memory is), bounds already checked by the caller."""
    return numpy.ndarray(shape, dtype, buffer=memory, offset=offset, strides=strides)


def capturable_matmul(a, b):
    """``a @ b`` (NumPy's matmul: the CPU has no graph capture to work around; see ``cuda_ops.capturable_matmul``)."""
    return numpy.matmul(a, b)


def geqrf(matrices):
    """``(a, tau)``: LAPACK's ``geqrf`` of each matrix of ``matrices`` (..., m, n): R on and above the diagonal,
    the Householder vectors below it, and their scales (..., min(m, n))."""
    *batch, rows, columns = matrices.shape
    factored = numpy.empty(matrices.shape, matrices.dtype)
    scales = numpy.zeros((*batch, min(rows, columns)), matrices.dtype)
    if factored.size == 0:
        return factored, scales
    factor, = _scipy_linalg().lapack.get_lapack_funcs(("geqrf",), (matrices,))
    flat_matrices, flat_factored = matrices.reshape(-1, rows, columns), factored.reshape(-1, rows, columns)
    flat_scales = scales.reshape(-1, scales.shape[-1])
    for index in range(flat_matrices.shape[0]):
        a, tau, _, _ = factor(flat_matrices[index])
        flat_factored[index], flat_scales[index] = a, tau
    return factored, scales


def nonzero(array):
    """The indices of ``array``'s nonzero elements, one array per dimension (``numpy.nonzero``)."""
    return numpy.nonzero(array)


def fuse(trace, functions, outputs, name):
    """The ``ops._tracing.Trace`` ``trace`` (its ops' NumPy ``functions``, computing ``outputs``) run op by op on
    NumPy arrays, without agnostic's per-op dispatch: NumPy's vectorized ufuncs (``exp``, ``tanh``...) are faster
    than one pass of numba's scalar calls to the C library, which also round differently."""
    return trace.program(functions, outputs)
