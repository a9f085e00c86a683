"""Cross-entropy of 2-D float32/float64 logits and int64 class indices, the common training-loop case, computed on
the backend arrays as one recorded operation. On CUDA the forward is one kernel (one block whose warps take the rows
in turn and add their losses in a fixed order; for many rows, a kernel per row and one adding up) and one read-back
of the target check, and the gradient ``(softmax - one_hot) * scale`` is one kernel: PyTorch's fused loss, not a
dozen small launches."""

import numpy

import agnostic

from ... import _backend
from ..._device import CPU
from ..._tensor import wrap
from ...autograd import Function, is_grad_enabled
from ..._backends import cuda_kernels

_ROWS_PER_BLOCK = 8  # one warp per row
_WARPS = 32  # of the one block that takes up to _ONE_BLOCK_ROWS rows
_ONE_BLOCK_ROWS = 16384
_TOTAL_THREADS = cuda_kernels.CROSS_ENTROPY_TOTAL_THREADS  # the adding kernel's: its shared arrays fit them
_FEW_CLASSES = 32  # with at most this many classes and at least _MANY_ROWS rows, the CPU reduces column by column
_MANY_ROWS = 256


def supports(input, target, weight, label_smoothing, reduction):
    """Whether ``cross_entropy(input, target, ...)`` can take this path."""
    return (input.dim() == 2 and target.dim() == 1 and target.dtype.name == "int64" and weight is None
            and label_smoothing == 0.0 and reduction in ("mean", "sum")
            and input.dtype.name in ("float32", "float64") and input.device == target.device
            and input.shape[0] == target.shape[0] and input.numel() > 0)


class IndexCrossEntropy(Function):
    """``sum(logsumexp(x_i) - x_i[t_i] for kept rows)``, divided by the kept count for ``reduction='mean'``."""

    @staticmethod
    def forward(ctx, input, target, ignore_index, reduction):
        device = input.device
        mean = reduction == "mean"
        logits, labels = input._data, target._data
        with _backend.on(device), numpy.errstate(divide="ignore", invalid="ignore"):
            if device is CPU:
                result, log_sum_exp, count, bad = _host_forward(logits, labels, ignore_index, mean)
            else:
                result, log_sum_exp, count, bad = _device_forward(logits, labels, ignore_index, mean)
        if bad:
            raise IndexError(f"Target {_first_bad_label(labels, ignore_index, logits.shape[1])} is out of bounds.")
        ctx.arrays = logits, labels, log_sum_exp, count
        ctx.ignore_index, ctx.mean, ctx.input = ignore_index, mean, input
        return wrap(result, device)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():
            return _recorded_backward(ctx, grad), None, None, None
        logits, labels, log_sum_exp, count = ctx.arrays
        device = grad.device
        with _backend.on(device), numpy.errstate(divide="ignore", invalid="ignore"):
            scale = grad._data.astype(logits.dtype, copy=False)
            if device is CPU:
                gradient = numpy.subtract(logits, log_sum_exp[:, None])
                numpy.exp(gradient, out=gradient)
                weight = scale / count if ctx.mean else scale
                if count == len(labels):  # no row ignored
                    gradient[numpy.arange(len(labels)), labels] -= 1
                    gradient *= weight
                else:
                    kept = labels != ctx.ignore_index
                    gradient[numpy.arange(len(labels)), numpy.where(kept, labels, 0)] -= 1
                    gradient *= (kept * weight)[:, None]
            else:
                gradient = cuda_kernels.kernel("agnostic_cross_entropy_backward")(
                    logits, labels[:, None], log_sum_exp[:, None], scale, count, logits.shape[1], ctx.ignore_index,
                    int(ctx.mean))
        return wrap(gradient, device), None, None, None


def _host_forward(logits, labels, ignore_index, mean):
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


def _device_forward(logits, labels, ignore_index, mean):
    """CuPy, on the current device: the same, from one kernel (two for many rows) and one read-back."""
    cupy = _backend.require_cupy()
    rows, classes = logits.shape
    logits = cupy.ascontiguousarray(logits)
    labels = cupy.ascontiguousarray(labels)
    log_sum_exp = cupy.empty(rows, logits.dtype)
    totals = cupy.empty(3, logits.dtype)  # the loss, the kept count, whether any label is out of bounds
    shape = (numpy.int64(rows), numpy.int64(classes), numpy.int64(ignore_index))
    if rows <= _ONE_BLOCK_ROWS:
        cuda_kernels.kernel("agnostic_cross_entropy_block", logits.dtype)(
            (1,), (32 * _WARPS,), (logits, labels) + shape + (numpy.int32(mean), log_sum_exp, totals))
    else:
        losses = cupy.empty(rows, logits.dtype)
        flags = cupy.empty(rows, numpy.int32)
        blocks = (rows + _ROWS_PER_BLOCK - 1) // _ROWS_PER_BLOCK
        cuda_kernels.kernel("agnostic_cross_entropy_rows", logits.dtype)(
            (blocks,), (32 * _ROWS_PER_BLOCK,), (logits, labels) + shape + (log_sum_exp, losses, flags))
        cuda_kernels.kernel("agnostic_cross_entropy_total", logits.dtype)(
            (1,), (_TOTAL_THREADS,), (losses, flags, numpy.int64(rows), numpy.int32(mean), totals))
    bad = bool(totals[2].get())  # the one read-back: PyTorch's target check
    return totals[0], log_sum_exp, totals[1], bad


def _first_bad_label(labels, ignore_index, classes):
    host = labels if isinstance(labels, numpy.ndarray) else labels.get()
    return int(host[(host != ignore_index) & ((host < 0) | (host >= classes))][0])


def _recorded_backward(ctx, grad):
    """The gradient from differentiable ops (``create_graph=True``): ``(softmax(x) - one_hot) * weights * grad``."""
    logits, labels, _, count = ctx.arrays
    device = grad.device
    xp = _backend.namespace(device)
    with _backend.on(device):
        kept = labels != ctx.ignore_index
        one_hot = (xp.arange(logits.shape[1]) == xp.where(kept, labels, 0)[:, None]).astype(logits.dtype)
        weights = kept[:, None].astype(logits.dtype)
        if ctx.mean:
            weights = weights / count
    return (agnostic.softmax(ctx.input, 1) - wrap(one_hot, device)) * wrap(weights, device) * grad
