"""Cross-entropy of 2-D float32/float64 logits and int64 class indices, the common training-loop case, computed on
the backend arrays as one recorded operation. On CUDA the forward is one kernel (one block whose warps take the rows
in turn and add their losses in a fixed order; for many rows, a kernel per row and one adding up) and one read-back
of the target check, and the gradient ``(softmax - one_hot) * scale`` is one kernel: PyTorch's fused loss, not a
dozen small launches."""

import numpy

import agnostic

from ..._tensor import wrap
from ...autograd import Function, is_grad_enabled

_INT64 = numpy.dtype(numpy.int64)
_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


def supports(input, target, weight, label_smoothing, reduction):
    """Whether ``cross_entropy(input, target, ...)`` can take this path (read from the arrays: this runs every
    training step)."""
    logits, labels = getattr(input, "_data", None), getattr(target, "_data", None)
    return (logits is not None and labels is not None and logits.ndim == 2 and labels.ndim == 1
            and labels.dtype == _INT64 and weight is None and label_smoothing == 0.0 and reduction in ("mean", "sum")
            and logits.dtype in _FLOATS and input._device is target._device and logits.shape[0] == labels.shape[0]
            and logits.size > 0)


class IndexCrossEntropy(Function):
    """``sum(logsumexp(x_i) - x_i[t_i] for kept rows)``, divided by the kept count for ``reduction='mean'``."""

    @staticmethod
    def forward(ctx, input, target, ignore_index, reduction):
        device = input._device
        mean = reduction == "mean"
        logits, labels = input._data, target._data
        backend = device.backend
        with backend.activate(), numpy.errstate(divide="ignore", invalid="ignore"):
            result, log_sum_exp, count, bad = backend.ops.cross_entropy_forward(logits, labels, ignore_index, mean)
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
        device = grad._device
        backend = device.backend
        with backend.activate(), numpy.errstate(divide="ignore", invalid="ignore"):
            scale = grad._data.astype(logits.dtype, copy=False)
            gradient = backend.ops.cross_entropy_backward(logits, labels, log_sum_exp, count, scale, ctx.ignore_index,
                                                          ctx.mean)
        return wrap(gradient, device), None, None, None


def _first_bad_label(labels, ignore_index, classes):
    host = labels if isinstance(labels, numpy.ndarray) else labels.get()
    return int(host[(host != ignore_index) & ((host < 0) | (host >= classes))][0])


def _recorded_backward(ctx, grad):
    """The gradient from differentiable ops (``create_graph=True``): ``(softmax(x) - one_hot) * weights * grad``."""
    logits, labels, _, count = ctx.arrays
    device = grad.device
    xp = device.backend.xp
    with device.backend.activate():
        kept = labels != ctx.ignore_index
        one_hot = (xp.arange(logits.shape[1]) == xp.where(kept, labels, 0)[:, None]).astype(logits.dtype)
        weights = kept[:, None].astype(logits.dtype)
        if ctx.mean:  # ignored rows stay 0 even where every row is (count 0), as PyTorch's gradient
            with numpy.errstate(divide="ignore", invalid="ignore"):
                weights = xp.where(kept[:, None], weights / count, 0).astype(logits.dtype)
    return (agnostic.softmax(ctx.input, 1) - wrap(one_hot, device)) * wrap(weights, device) * grad
