"""Losses: mse_loss, l1_loss, nll_loss, cross_entropy, binary_cross_entropy, binary_cross_entropy_with_logits."""

import warnings

import agnostic

from ...autograd import Function
from . import _index_cross_entropy
from ._activation import logsigmoid


def legacy_reduction(size_average, reduce, emit_warning=True):
    """The ``reduction`` string for PyTorch's deprecated ``size_average``/``reduce`` arguments."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    result = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{result}' instead.",
                      stacklevel=3)
    return result


def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _broadcast_with_warning(input, target):
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
                      "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
                      "same size.", stacklevel=3)
        return agnostic.broadcast_tensors(input, target)
    return input, target


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Squared error ``(input - target)^2``, reduced by ``reduction`` ('mean', 'sum' or 'none').

        >>> import agnostic.nn.functional as F
        >>> F.mse_loss(agnostic.tensor([1.0, 2.0, 3.0]), agnostic.tensor([1.0, 0.0, 0.0]))
        tensor(4.3333)
        >>> F.mse_loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([0.0, 0.0]), reduction="sum")
        tensor(5.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_with_warning(input, target)
    difference = agnostic.sub(input, target)
    loss = agnostic.mul(difference, difference)
    if weight is not None:
        loss = agnostic.mul(loss, weight)
    return _reduce(loss, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Absolute error ``|input - target|``, reduced by ``reduction``.

        >>> import agnostic.nn.functional as F
        >>> F.l1_loss(agnostic.tensor([1.0, 2.0, 3.0]), agnostic.tensor([1.0, 0.0, 0.0]), reduction="none")
        tensor([0., 2., 3.])
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_with_warning(input, target)
    loss = agnostic.abs(agnostic.sub(input, target))
    if weight is not None:
        loss = agnostic.mul(loss, weight)
    return _reduce(loss, reduction)


def _class_weights(weight, classes):
    if weight is not None and (weight.dim() != 1 or weight.shape[0] != classes):
        raise RuntimeError(f"weight tensor should be defined either for all {classes} classes or no classes but got "
                           f"weight tensor of shape: {list(weight.shape)}")


def _check_targets(input, target):
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if target.dtype not in (agnostic.int64, agnostic.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {_scalar_name(target.dtype)}")
    if input.dim() == 1:
        if target.dim() != 0:
            raise RuntimeError(f"0D target tensor expected, multi-target not supported (got target of shape "
                               f"{list(target.shape)})")
        return
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target.shape)}")


def _scalar_name(dtype):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "int32": "Int", "int16": "Short",
            "int8": "Char", "bool": "Bool", "bfloat16": "BFloat16"}.get(dtype.name, dtype.name)


def _picked_and_weights(input, target, weight, ignore_index):
    """``input[n, target[n], ...]`` and each element's weight (0 where ignored), class dimension 1."""
    classes = input.shape[1]
    target = target.long()
    ignored = agnostic.eq(target, ignore_index)
    safe = agnostic.where(ignored, 0, target)
    if safe.numel() and (bool((safe < 0).any()) or bool((safe >= classes).any())):
        bad = target[agnostic.logical_and(agnostic.logical_or(safe < 0, safe >= classes), ~ignored)][0].item()
        raise IndexError(f"Target {bad} is out of bounds.")
    picked = agnostic.gather(input, 1, safe.unsqueeze(1)).squeeze(1)
    if weight is None:
        weights = agnostic.ones(safe.shape, dtype=input.dtype, device=input.device)
    else:
        weights = agnostic.index_select(weight, 0, safe.reshape(-1)).reshape(safe.shape)
    weights = agnostic.where(ignored, 0.0, weights)
    return picked, weights, ignored


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices: ``-weight[t] * input[n, t]``; 'mean' divides by the summed
    weights of the targets not equal to ``ignore_index``.

        >>> import agnostic.nn.functional as F
        >>> log_probs = F.log_softmax(agnostic.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]]), dim=1)
        >>> F.nll_loss(log_probs, agnostic.tensor([0, 1]))
        tensor(0.3964)
        >>> F.nll_loss(log_probs, agnostic.tensor([0, -100]))
        tensor(0.2413)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_targets(input, target)
    unbatched = input.dim() == 1
    if unbatched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    _class_weights(weight, input.shape[1])
    picked, weights, _ = _picked_and_weights(input, target, weight, ignore_index)
    loss = agnostic.neg(agnostic.mul(picked, weights))
    if reduction == "mean":
        return agnostic.div(loss.sum(), weights.sum())
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices, or ``-sum(target * log_softmax)`` for class
    probabilities (``target`` shaped like ``input``); ``label_smoothing`` mixes in the uniform distribution.

        >>> import agnostic.nn.functional as F
        >>> logits = agnostic.tensor([[2.0, 0.5, -1.0], [0.0, 1.0, 0.0]])
        >>> F.cross_entropy(logits, agnostic.tensor([0, 1]))
        tensor(0.3964)
        >>> F.cross_entropy(logits, agnostic.tensor([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]]))
        tensor(0.6464)
        >>> F.cross_entropy(logits, agnostic.tensor([0, 1]), weight=agnostic.tensor([1.0, 3.0, 1.0]))
        tensor(0.4739)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if _index_cross_entropy.supports(input, target, weight, label_smoothing, reduction):
        return _index_cross_entropy.IndexCrossEntropy.apply(input, target, ignore_index, reduction)
    class_dim = 0 if input.dim() == 1 else 1
    classes = input.shape[class_dim]
    log_probabilities = agnostic.log_softmax(input, class_dim)
    if tuple(target.shape) == tuple(input.shape):
        if not target.dtype.is_floating_point:
            raise RuntimeError(f"Expected floating point type for target with class probabilities, got "
                               f"{_scalar_name(target.dtype) if target.dtype is not agnostic.int64 else 'Long'}")
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _soft_cross_entropy(log_probabilities, target, weight, reduction, label_smoothing, class_dim)
    nll = nll_loss(log_probabilities, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0.0:
        return nll
    return agnostic.add(agnostic.mul(nll, 1.0 - label_smoothing),
                        agnostic.mul(_smoothing_term(log_probabilities, target, weight, ignore_index, reduction,
                                                     class_dim), label_smoothing / classes))


def _smoothing_term(log_probabilities, target, weight, ignore_index, reduction, class_dim):
    if weight is not None:
        shape = [1] * log_probabilities.dim()
        shape[class_dim] = weight.shape[0]
        log_probabilities = agnostic.mul(log_probabilities, weight.reshape(shape))
    smooth = agnostic.neg(log_probabilities.sum(class_dim))
    ignored = agnostic.eq(target, ignore_index)
    smooth = agnostic.where(ignored, 0.0, smooth)
    if reduction == "sum":
        return smooth.sum()
    if reduction == "none":
        return smooth
    kept = agnostic.logical_not(ignored)
    if weight is None:
        return agnostic.div(smooth.sum(), kept.sum())
    return agnostic.div(smooth.sum(), agnostic.index_select(weight, 0, agnostic.masked_select(target, kept)).sum())


def _soft_cross_entropy(log_probabilities, target, weight, reduction, label_smoothing, class_dim):
    classes = log_probabilities.shape[class_dim]
    if label_smoothing > 0.0:
        target = agnostic.add(agnostic.mul(target, 1.0 - label_smoothing), label_smoothing / classes)
    terms = agnostic.mul(log_probabilities, target)
    if weight is not None:
        shape = [1] * log_probabilities.dim()
        shape[class_dim] = weight.shape[0]
        terms = agnostic.mul(terms, weight.reshape(shape))
    if reduction == "none":
        return agnostic.neg(terms.sum(class_dim))
    total = agnostic.neg(terms.sum())
    if reduction == "sum":
        return total
    return agnostic.div(total, log_probabilities.numel() // classes if log_probabilities.numel() else float("nan"))


class _BinaryCrossEntropy(Function):
    """Elementwise ``-(y log x + (1 - y) log(1 - x))`` with logs clamped at -100, and PyTorch's explicit gradients
    (finite at x = 0 and 1): ``(x - y) / max(x (1 - x), 1e-12)`` for x, ``log(1 - x) - log(x)`` for y."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        log_x = agnostic.clamp(agnostic.log(input), min=-100)
        log_not_x = agnostic.clamp(agnostic.log1p(-input), min=-100)
        return agnostic.neg(agnostic.add(agnostic.mul(target, log_x), agnostic.mul(1 - target, log_not_x)))

    @staticmethod
    def backward(ctx, grad):
        input, target = ctx.saved_tensors
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            denominator = agnostic.clamp(agnostic.mul(input, 1 - input), min=1e-12)
            grad_input = agnostic.mul(grad, agnostic.div(agnostic.sub(input, target), denominator))
        if ctx.needs_input_grad[1]:
            grad_target = agnostic.mul(grad, agnostic.sub(agnostic.log1p(-input), agnostic.log(input)))
        return grad_input, grad_target


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-weight * (target * log(input) + (1 - target) * log(1 - input))`` for probabilities ``input`` in [0, 1]
    (each log clamped at -100, as PyTorch).

        >>> import agnostic.nn.functional as F
        >>> F.binary_cross_entropy(agnostic.tensor([0.9, 0.2]), agnostic.tensor([1.0, 0.0]))
        tensor(0.1643)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
                         "is deprecated. Please ensure they have the same size.")
    if input.numel() and (bool((input < 0).any()) or bool((input > 1).any())):
        raise RuntimeError("all elements of input should be between 0 and 1")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = agnostic.mul(loss, weight)
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits:
    ``(1 - y) x - (1 + (pos_weight - 1) y) log(sigmoid(x))``, times ``weight``.

        >>> import agnostic.nn.functional as F
        >>> F.binary_cross_entropy_with_logits(agnostic.tensor([2.0, -1.0]), agnostic.tensor([1.0, 0.0]))
        tensor(0.2201)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    log_sigmoid = logsigmoid(input)
    if pos_weight is not None:
        log_weight = agnostic.add(agnostic.mul(agnostic.sub(pos_weight, 1), target), 1)
        log_sigmoid = agnostic.mul(log_weight, log_sigmoid)
    loss = agnostic.sub(agnostic.mul(agnostic.sub(1, target), input), log_sigmoid)
    if weight is not None:
        loss = agnostic.mul(loss, weight)
    return _reduce(loss, reduction)
