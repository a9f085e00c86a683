"""Cross-entropy of 2-D float32/float64 logits and int64 class indices, the common training-loop case, computed on
the backend arrays: one recorded operation, one read-back (the target check), and on CUDA a single fused kernel
for the gradient ``(softmax - one_hot) * kept * scale``."""

import numpy

import agnostic

from ... import _backend
from ..._device import CPU
from ..._tensor import wrap
from ...autograd import Function, is_grad_enabled

_kernels = {}


def supports(input, target, weight, label_smoothing, reduction):
    """Whether ``cross_entropy(input, target, ...)`` can take this path."""
    return (input.dim() == 2 and target.dim() == 1 and target.dtype.name == "int64" and weight is None
            and label_smoothing == 0.0 and reduction in ("mean", "sum")
            and input.dtype.name in ("float32", "float64") and input.device == target.device
            and input.shape[0] == target.shape[0])


class IndexCrossEntropy(Function):
    """``-sum(log_softmax(x)[i, t_i] for kept rows)``, divided by the kept count for ``reduction='mean'``."""

    @staticmethod
    def forward(ctx, input, target, ignore_index, reduction):
        device = input.device
        xp = _backend.namespace(device)
        logits, labels = input._data, target._data
        classes = logits.shape[1]
        with _backend.on(device), numpy.errstate(divide="ignore", invalid="ignore"):
            kept = labels != ignore_index
            safe = xp.where(kept, labels, 0)
            # Negative labels read as huge unsigned ones: one comparison finds both kinds of bad label.
            if safe.size and bool((safe.view(numpy.uint64) >= classes).any()):
                bad = int(labels[kept & ((safe < 0) | (safe >= classes))][0])
                raise IndexError(f"Target {bad} is out of bounds.")
            shifted = logits - logits.max(axis=1, keepdims=True)
            log_probabilities = shifted - xp.log(xp.exp(shifted).sum(axis=1, keepdims=True))
            if device is CPU:
                picked = numpy.take_along_axis(log_probabilities, safe[:, None], 1)[:, 0] * kept
            else:  # one launch (CuPy's take_along_axis builds index arrays first)
                log_probabilities = xp.ascontiguousarray(log_probabilities)  # the kernel reads it row-major
                picked = _kernel("pick")(log_probabilities, safe, kept, classes)
            total = -picked.sum()
            count = kept.sum().astype(logits.dtype)
            result = total / count if reduction == "mean" else total
        ctx.arrays = log_probabilities, safe, kept, count
        ctx.mean = reduction == "mean"
        ctx.input = input
        return wrap(xp.asarray(result, dtype=logits.dtype), device)

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():
            return _recorded_backward(ctx, grad), None, None, None
        log_probabilities, safe, kept, count = ctx.arrays
        device = grad.device
        scale = grad._data.astype(log_probabilities.dtype)
        with _backend.on(device), numpy.errstate(divide="ignore", invalid="ignore"):
            if ctx.mean:
                scale = scale / count
            if device is CPU:
                gradient = numpy.exp(log_probabilities)
                gradient[numpy.arange(len(safe)), safe] -= 1
                gradient *= (kept * scale)[:, None]
            else:
                gradient = _kernel("gradient")(log_probabilities, safe[:, None], kept[:, None], scale,
                                              log_probabilities.shape[1])
        return wrap(gradient, device), None, None, None


def _recorded_backward(ctx, grad):
    """The gradient from differentiable ops (``create_graph=True``): ``(softmax(x) - one_hot) * weights * grad``."""
    log_probabilities, safe, kept, count = ctx.arrays
    device = grad.device
    xp = _backend.namespace(device)
    with _backend.on(device):
        one_hot = (xp.arange(log_probabilities.shape[1]) == safe[:, None]).astype(log_probabilities.dtype)
        weights = kept[:, None].astype(log_probabilities.dtype)
        if ctx.mean:
            weights = weights / count
    return (agnostic.softmax(ctx.input, 1) - wrap(one_hot, device)) * wrap(weights, device) * grad


_KERNELS = {
    # per row: the kept rows' log-probability of their target class
    "pick": ("raw T log_probabilities, int64 target, bool kept, int64 classes", "T picked",
             "picked = kept ? log_probabilities[i * classes + target] : (T)0"),
    # per element of the (rows, classes) gradient, ``i`` running over it in C order
    "gradient": ("T log_probability, int64 target, bool kept, T scale, int64 classes", "T gradient",
                 "gradient = kept ? (exp(log_probability) - (T)((i % classes) == target)) * scale : (T)0"),
}


def _kernel(name):
    kernel = _kernels.get(name)
    if kernel is None:
        inputs, output, body = _KERNELS[name]
        kernel = _kernels[name] = _backend.require_cupy().ElementwiseKernel(
            inputs, output, body, f"agnostic_index_cross_entropy_{name}")
    return kernel
