"""Losses, as torch.nn.functional: regression, classification, ranking/embedding, probabilistic and CTC losses,
and the cosine similarity and distances some of them are made of."""

import math
import warnings

import numpy

import agnostic

from ... import _autocast
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


@_autocast.policy
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
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, input, reduction)


@_autocast.policy
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Absolute error ``|input - target|``, reduced by ``reduction``.

        >>> import agnostic.nn.functional as F
        >>> F.l1_loss(agnostic.tensor([1.0, 2.0, 3.0]), agnostic.tensor([1.0, 0.0, 0.0]), reduction="none")
        tensor([0., 2., 3.])
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_with_warning(input, target)
    loss = agnostic.abs(agnostic.sub(input, target))
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, input, reduction)


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


@_autocast.policy
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
        # Divided by a total weight of 0 (every target ignored) the loss is NaN, as PyTorch's, but the gradient 0:
        # the division is by 1 there, and the NaN is added as a constant.
        total = weights.sum()
        empty = total == 0
        return agnostic.div(loss.sum(), agnostic.where(empty, 1.0, total)) + agnostic.zeros_like(total).masked_fill(
            empty, math.nan)
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


@_autocast.policy
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


@_autocast.policy
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


def _weighted(loss, weight, input, reduction):
    """``loss * weight``, reduced as PyTorch's weighted regression losses: 'mean' divides by the summed weights."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = agnostic.mul(loss, weight)
    if reduction == "mean":
        return agnostic.div(loss.sum(), weight.sum())
    return _reduce(loss, reduction)


@_autocast.policy
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 (x - y)^2 / beta`` where ``|x - y| < beta``, else ``|x - y| - 0.5 beta`` (``l1_loss`` for beta 0).

        >>> import agnostic.nn.functional as F
        >>> F.smooth_l1_loss(agnostic.tensor([0.5, 3.0]), agnostic.tensor([0.0, 0.0]), reduction="none")
        tensor([0.1250, 2.5000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = _broadcast_with_warning(input, target)
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)
    distance = agnostic.abs(agnostic.sub(input, target))
    quadratic = agnostic.div(agnostic.mul(agnostic.mul(distance, distance), 0.5), beta)
    loss = agnostic.where(agnostic.lt(distance, beta), quadratic, agnostic.sub(distance, 0.5 * beta))
    return _reduce(loss, reduction)


@_autocast.policy
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 (x - y)^2`` where ``|x - y| < delta``, else ``delta (|x - y| - 0.5 delta)``; optional elementwise
    ``weight`` ('mean' then divides by the summed weights).

        >>> import agnostic.nn.functional as F
        >>> F.huber_loss(agnostic.tensor([0.5, 3.0]), agnostic.tensor([0.0, 0.0]), reduction="none", delta=2.0)
        tensor([0.1250, 4.0000])
    """
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    input, target = _broadcast_with_warning(input, target)
    distance = agnostic.abs(agnostic.sub(input, target))
    quadratic = agnostic.mul(agnostic.mul(distance, distance), 0.5)
    loss = agnostic.where(agnostic.lt(distance, delta), quadratic,
                          agnostic.mul(agnostic.sub(distance, 0.5 * delta), delta))
    return _reduce(loss, reduction) if weight is None else _weighted(loss, weight, input, reduction)


def _xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0``; the log reads 1 there so that its masked gradient is 0, not nan."""
    zero = agnostic.eq(x, 0)
    return agnostic.where(zero, 0.0, agnostic.mul(x, agnostic.log(agnostic.where(zero, 1.0, y))))


@_autocast.policy
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log(target) - input)`` of log-probabilities ``input`` (``target``
    as probabilities, or log-probabilities with ``log_target=True``); ``reduction='batchmean'`` divides the sum by
    the batch size (the mathematical KL divergence), 'mean' by the number of elements (with PyTorch's warning).

        >>> import agnostic.nn.functional as F
        >>> log_q = agnostic.tensor([[0.25, 0.75]]).log()
        >>> F.kl_div(log_q, agnostic.tensor([[0.5, 0.5]]), reduction="batchmean")
        tensor(0.1438)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_target:
        loss = agnostic.mul(agnostic.exp(target), agnostic.sub(target, input))
    else:
        loss = agnostic.sub(_xlogy(target, target), agnostic.mul(target, input))
    if reduction == "batchmean":
        total = loss.sum()
        return agnostic.div(total, input.shape[0]) if input.dim() != 0 else total
    return _reduce(loss, reduction)


@_autocast.policy
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """Poisson negative log-likelihood: ``exp(input) - target * input`` (``log_input``), else
    ``input - target * log(input + eps)``; ``full`` adds Stirling's ``target log(target) - target +
    0.5 log(2 pi target)`` where ``target > 1``.

        >>> import agnostic.nn.functional as F
        >>> F.poisson_nll_loss(agnostic.tensor([0.0, 1.0]), agnostic.tensor([1.0, 2.0]))
        tensor(0.8591)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = agnostic.sub(agnostic.exp(input), agnostic.mul(target, input))
    else:
        loss = agnostic.sub(input, agnostic.mul(target, agnostic.log(agnostic.add(input, eps))))
    if full:
        above_one = agnostic.gt(target, 1)
        safe = agnostic.where(above_one, target, 1.0)
        stirling = agnostic.add(agnostic.sub(agnostic.mul(safe, agnostic.log(safe)), safe),
                                agnostic.mul(agnostic.log(agnostic.mul(safe, 2 * math.pi)), 0.5))
        loss = agnostic.add(loss, agnostic.where(above_one, stirling, 0.0))
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """Gaussian negative log-likelihood ``0.5 (log(var) + (input - target)^2 / var)`` (+ ``0.5 log(2 pi)`` with
    ``full``); ``var`` (clamped at ``eps``, without changing its gradient) is shaped like ``input``, has one
    dimension fewer or one dimension of size 1, or is a float.

        >>> import agnostic.nn.functional as F
        >>> F.gaussian_nll_loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([0.0, 2.0]), agnostic.tensor([1.0, 4.0]))
        tensor(0.5966)
    """
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = agnostic.full_like(input, float(var))
    elif bool(agnostic.lt(var, 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim()
                  and sum(other for size, other in zip(input.shape, var.shape) if size != other) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    # PyTorch clamps a copy under no_grad: the value is clamped, the gradient is var's own.
    floor = agnostic.sub(agnostic.clamp(var.detach(), min=eps), var.detach())
    var = agnostic.add(var, floor)
    difference = agnostic.sub(input, target)
    loss = agnostic.mul(agnostic.add(agnostic.log(var), agnostic.div(agnostic.mul(difference, difference), var)), 0.5)
    if full:
        loss = agnostic.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce(loss, reduction)


def _norm_clamped_without_gradient(input, dim, eps):
    """``max(||input||, eps)`` along ``dim`` (kept), whose gradient is the norm's even where clamped (PyTorch
    clamps under no_grad)."""
    norm = agnostic.norm(input, 2, dim, keepdim=True)
    return agnostic.add(norm, agnostic.sub(agnostic.clamp(norm.detach(), min=eps), norm.detach()))


@_autocast.policy
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim``, after broadcasting.

        >>> import agnostic.nn.functional as F
        >>> F.cosine_similarity(agnostic.tensor([[1.0, 0.0], [1.0, 1.0]]), agnostic.tensor([[1.0, 1.0], [-2.0, -2.0]]))
        tensor([ 0.7071, -1.0000])
    """
    common = agnostic.result_type(x1, x2)
    if not common.is_floating_point:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is {_scalar_name(common)}; "
                           "convert the inputs with .float().")
    x1, x2 = agnostic.broadcast_tensors(x1.to(common), x2.to(common))
    return agnostic.mul(agnostic.div(x1, _norm_clamped_without_gradient(x1, dim, eps)),
                        agnostic.div(x2, _norm_clamped_without_gradient(x2, dim, eps))).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dimension.

        >>> import agnostic.nn.functional as F
        >>> F.pairwise_distance(agnostic.tensor([[0.0, 0.0], [1.0, 1.0]]), agnostic.tensor([[3.0, 4.0], [1.0, 1.0]]))
        tensor([5.0000e+00, 1.4142e-06])
    """
    dim = max(x1.dim(), x2.dim()) - 1
    return agnostic.norm(agnostic.add(agnostic.sub(x1, x2), eps), p, dim, keepdim=keepdim)


@_autocast.policy
def pdist(input, p=2):
    """The p-norm distance between every pair of rows of an (N, M) ``input``: the upper triangle of
    ``cdist(input, input)`` row by row, an N * (N - 1) / 2 vector, as ``torch.nn.functional.pdist``.

        >>> import agnostic.nn.functional as F
        >>> F.pdist(agnostic.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if not input.is_floating_point():
        raise RuntimeError(f"pdist only supports floating-point dtypes, got {input.dtype}: convert with .float()")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got p={p}")
    rows, columns = agnostic.triu_indices(input.shape[0], input.shape[0], offset=1, device=input.device)
    differences = agnostic.sub(input.index_select(0, rows), input.index_select(0, columns))
    return agnostic.linalg.vector_norm(differences, p, dim=1)


@_autocast.policy
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``.

        >>> import agnostic.nn.functional as F
        >>> F.normalize(agnostic.tensor([[3.0, 4.0], [0.0, 0.0]]))
        tensor([[0.6000, 0.8000],
                [0.0000, 0.0000]])
    """
    denominator = agnostic.clamp(agnostic.norm(input, p, dim, keepdim=True), min=eps).expand_as(input)
    if out is None:
        return agnostic.div(input, denominator)
    return agnostic.div(input, denominator, out=out)


@_autocast.policy
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``.

        >>> import agnostic.nn.functional as F
        >>> x1, x2 = agnostic.tensor([[1.0, 0.0], [1.0, 1.0]]), agnostic.tensor([[1.0, 1.0], [1.0, 1.0]])
        >>> F.cosine_embedding_loss(x1, x2, agnostic.tensor([1.0, -1.0]), reduction="none")
        tensor([0.2929, 1.0000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    target_dim = target.dim()
    if target_dim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target_dim == 1 and (input1.dim() != 2 or input2.dim() != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    if target_dim == 0 and (input1.dim() != 1 or input2.dim() != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with sizes "
                           f"{list(input1.shape)} and {list(input2.shape)}.")
    products = agnostic.mul(input1, input2).sum(target_dim)
    squares1 = agnostic.add(agnostic.mul(input1, input1).sum(target_dim), 1e-12)
    squares2 = agnostic.add(agnostic.mul(input2, input2).sum(target_dim), 1e-12)
    cosine = agnostic.div(products, agnostic.sqrt(agnostic.mul(squares1, squares2)))
    positive = agnostic.where(agnostic.eq(target, 1), agnostic.sub(1, cosine), 0.0)
    negative = agnostic.where(agnostic.eq(target, -1), agnostic.clamp(agnostic.sub(cosine, margin), min=0), 0.0)
    return _reduce(agnostic.add(positive, negative), reduction)


@_autocast.policy
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``.

        >>> import agnostic.nn.functional as F
        >>> F.margin_ranking_loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([2.0, 1.0]), agnostic.tensor([1.0, 1.0]))
        tensor(0.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {input1.shape}, input2: {input2.shape}, target: {target.shape} ")
    loss = agnostic.clamp(agnostic.add(agnostic.mul(agnostic.neg(target), agnostic.sub(input1, input2)), margin), min=0)
    return _reduce(loss, reduction)


@_autocast.policy
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``.

        >>> import agnostic.nn.functional as F
        >>> F.hinge_embedding_loss(agnostic.tensor([0.3, 0.3]), agnostic.tensor([1.0, -1.0]), reduction="none")
        tensor([0.3000, 0.7000])
    """
    reduction = _reduction(size_average, reduce, reduction)
    below_margin = agnostic.where(agnostic.ne(target, 1), agnostic.clamp(agnostic.sub(margin, input), min=0), 0.0)
    itself = agnostic.where(agnostic.ne(target, -1), input, 0.0)
    return _reduce(agnostic.add(below_margin, itself), reduction)


@_autocast.policy
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))`` for targets in {1, -1}.

        >>> import agnostic.nn.functional as F
        >>> F.soft_margin_loss(agnostic.tensor([2.0, -1.0]), agnostic.tensor([1.0, 1.0]))
        tensor(0.7201)
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce(agnostic.log1p(agnostic.exp(agnostic.mul(agnostic.neg(input), target))), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class binary cross entropy of logits, averaged over the classes (the last dimension): one loss per
    sample before ``reduction``.

        >>> import agnostic.nn.functional as F
        >>> F.multilabel_soft_margin_loss(agnostic.tensor([[2.0, -1.0]]), agnostic.tensor([[1.0, 0.0]]))
        tensor(0.2201)
    """
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    loss = agnostic.neg(agnostic.add(agnostic.mul(target, logsigmoid(input)),
                                     agnostic.mul(agnostic.sub(1, target), logsigmoid(agnostic.neg(input)))))
    if weight is not None:
        loss = agnostic.mul(loss, weight)
    class_dim = input.dim() - 1
    loss = agnostic.div(loss.sum(class_dim), input.shape[class_dim])
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


@_autocast.policy
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Multi-class hinge loss: ``sum over i != y of max(0, margin - x[y] + x[i])^p / C`` (times ``weight[y]``), for
    (N, C) scores and N class indices (or C scores and one index).

        >>> import agnostic.nn.functional as F
        >>> F.multi_margin_loss(agnostic.tensor([[0.1, 0.2, 0.4, 0.8]]), agnostic.tensor([3]))
        tensor(0.3250)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if input.dim() > 2 or (input.dim() >= 1 and input.numel() == 0 and input.dim() != 2):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    unbatched = input.dim() <= 1
    scores = input.reshape(1, -1) if unbatched else input
    labels = target.reshape(1) if unbatched else target
    if not unbatched and (labels.dim() != 1 or labels.shape[0] != scores.shape[0]):
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{scores.shape[0]}], but got "
                           f"{list(labels.shape)}. Input has shape {list(input.shape)}.")
    classes = scores.shape[1]
    labels = labels.long()
    if labels.numel() and (bool(agnostic.lt(labels, 0).any()) or bool(agnostic.ge(labels, classes).any())):
        raise RuntimeError(f"target out of range: class indices must be in [0, {classes - 1}]")
    picked = agnostic.gather(scores, 1, labels.unsqueeze(1))
    margins = agnostic.add(agnostic.sub(scores, picked), margin)
    is_target = agnostic.eq(agnostic.arange(classes, device=scores.device).unsqueeze(0), labels.unsqueeze(1))
    # The target's own column, and margins met (z <= 0, gradient 0 as in PyTorch), contribute nothing.
    counted = agnostic.logical_and(agnostic.gt(margins, 0), agnostic.logical_not(is_target))
    terms = agnostic.where(counted, margins if p == 1 else agnostic.mul(margins, margins), 0.0)
    if weight is not None:
        terms = agnostic.mul(terms, agnostic.index_select(weight, 0, labels).unsqueeze(1))
    loss = agnostic.div(terms.sum(1), classes)
    if unbatched and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@_autocast.policy
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with ``d`` the ``pairwise_distance`` of norm
    ``p``; ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

        >>> import agnostic.nn.functional as F
        >>> a, p, n = agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]), agnostic.tensor([[1.0, 0.0]])
        >>> F.triplet_margin_loss(a, p, n)
        tensor(5.0000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1 or dims[0] not in (1, 2):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions (1 or 2), but got: anchor {dims[0]}D, positive {dims[1]}D, and negative "
                           f"{dims[2]}D inputs")
    positive_distance = pairwise_distance(anchor, positive, p, eps)
    negative_distance = pairwise_distance(anchor, negative, p, eps)
    if swap:
        negative_distance = agnostic.minimum(negative_distance, pairwise_distance(positive, negative, p, eps))
    loss = agnostic.clamp(agnostic.sub(agnostic.add(positive_distance, margin), negative_distance), min=0)
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for any distance ``distance_function``
    (``pairwise_distance`` by default); ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative distance.

        >>> import agnostic.nn.functional as F
        >>> a, p, n = agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]), agnostic.tensor([[1.0, 0.0]])
        >>> F.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1))
        tensor(7.)
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.dim()}D, positive {positive.dim()}D, and negative "
                           f"{negative.dim()}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    positive_distance = distance(anchor, positive)
    negative_distance = distance(anchor, negative)
    if swap:
        negative_distance = agnostic.minimum(negative_distance, distance(positive, negative))
    loss = agnostic.clamp(agnostic.sub(agnostic.add(positive_distance, margin), negative_distance), min=0)
    return _reduce(loss, reduction)


@_autocast.policy
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Multi-label hinge loss: for each sample, ``sum over target classes j and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C``; ``target`` holds class indices, ended by the first -1.

        >>> import agnostic.nn.functional as F
        >>> F.multilabel_margin_loss(agnostic.tensor([[0.1, 0.2, 0.4, 0.8]]), agnostic.tensor([[3, 0, -1, 1]]))
        tensor(0.8500)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input.dim() > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    unbatched = input.dim() <= 1
    scores = input.reshape(1, -1) if unbatched else input
    rows = target.reshape(1, -1).tolist() if unbatched else target.tolist()
    classes = scores.shape[1]
    counts = numpy.zeros((len(rows), classes))
    for n, row in enumerate(rows):
        for label in row:
            if label < 0:
                break
            if label >= classes:
                raise RuntimeError(f"multilabel_margin_loss: target index {label} is out of range for {classes} "
                                   "classes")
            counts[n, label] += 1
    # counts[n, j]: how often j is a target (repeats count, as in PyTorch's loop); others: the non-target classes.
    weights = agnostic.tensor(counts, dtype=scores.dtype, device=scores.device)
    others = agnostic.tensor((counts == 0).astype(numpy.float64), dtype=scores.dtype, device=scores.device)
    margins = agnostic.add(agnostic.sub(scores.unsqueeze(1), scores.unsqueeze(2)), 1.0)
    pairs = agnostic.mul(weights.unsqueeze(2), others.unsqueeze(1))
    hinge = agnostic.where(agnostic.gt(margins, 0), margins, 0.0)
    loss = agnostic.div(agnostic.mul(hinge, pairs).sum((1, 2)), classes)
    if unbatched and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _lengths(lengths):
    if isinstance(lengths, agnostic.Tensor):
        return [int(value) for value in lengths.reshape(-1).tolist()]
    if isinstance(lengths, int):
        return [lengths]
    return [int(value) for value in lengths]


def _padded_targets(targets, target_lengths, batch):
    """The targets as an (N, max length) list of lists, from the padded (N, S) or the concatenated 1-D form."""
    rows = targets.tolist()
    if targets.dim() == 2 or (batch == 1 and targets.dim() == 1 and len(rows) == target_lengths[0]):
        rows = rows if targets.dim() == 2 else [rows]
        for length, row in zip(target_lengths, rows):
            if length > len(row):
                raise RuntimeError(f"Expected tensor to have size at least {length} at dimension 1, but got size "
                                   f"{len(row)} for argument #2 'targets' (while checking arguments for ctc_loss)")
        return [row[:length] for row, length in zip(rows, target_lengths)]
    if sum(target_lengths) > len(rows):
        raise RuntimeError(f"Expected the concatenated targets to hold sum(target_lengths) = {sum(target_lengths)} "
                           f"labels, but they hold {len(rows)}")
    starts = numpy.cumsum([0] + target_lengths)
    return [rows[start:start + length] for start, length in zip(starts, target_lengths)]


@_autocast.policy
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist temporal classification loss: ``-log`` of the total probability of every alignment of each
    target to its input (log-probabilities ``(T, N, C)``, or ``(T, C)`` for one sequence; targets padded ``(N, S)``
    or concatenated). 'mean' divides each loss by its target length, then averages; ``zero_infinity`` zeroes the
    infinite losses of impossible alignments and their gradients.

        >>> import agnostic.nn.functional as F
        >>> log_probs = agnostic.tensor([[[0.5, 0.5]], [[0.5, 0.5]]]).log()
        >>> F.ctc_loss(log_probs, agnostic.tensor([[1]]), [2], [1], reduction="sum")
        tensor(0.2877)
    """
    reduction = _reduction(None, None, reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    if log_probs.dim() != 3:
        raise RuntimeError(f"ctc_loss expects log_probs of shape (T, N, C) or (T, C), got {list(log_probs.shape)}")
    steps, batch, classes = log_probs.shape
    input_lengths = _lengths(input_lengths)
    target_lengths = _lengths(target_lengths)
    if len(input_lengths) != batch or len(target_lengths) != batch:
        raise RuntimeError(f"input_lengths and target_lengths must have batch_size {batch} elements, got "
                           f"{len(input_lengths)} and {len(target_lengths)}")
    if not 0 <= blank < classes:
        raise RuntimeError(f"blank must be in label range: got blank={blank} for {classes} classes")
    for length in input_lengths:
        if length > steps:
            raise RuntimeError(f"Expected input_lengths to have value at most {steps}, but got value {length} "
                               "(while checking arguments for ctc_loss)")
    labels = _padded_targets(targets, target_lengths, batch)
    loss = _ctc_forward(log_probs, labels, input_lengths, target_lengths, blank)
    if zero_infinity:
        loss = agnostic.where(agnostic.isinf(loss), 0.0, loss)
    if reduction == "mean":
        divisor = agnostic.tensor([max(length, 1) for length in target_lengths], dtype=loss.dtype,
                                  device=loss.device)
        return agnostic.div(loss, divisor).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


def _ctc_forward(log_probs, labels, input_lengths, target_lengths, blank):
    """Each sequence's ``-log p(target | input)`` by the forward (alpha) recursion over the blank-interleaved
    target, in probabilities rescaled at every step (Rabiner's scaling): each step's states are divided by their sum
    ``c_t`` and ``log p = sum_t log c_t``. No log of 0 is ever taken, so the gradient autograd derives has no nan:
    unreachable states are zeros, impossible alignments give +inf through a final ``where``."""
    steps, batch, classes = log_probs.shape
    device, dtype = log_probs.device, log_probs.dtype
    states = 2 * max(target_lengths + [0]) + 1
    extended = numpy.full((batch, states), blank, dtype=numpy.int64)
    skip = numpy.zeros((batch, states), dtype=bool)
    first = numpy.zeros((batch, states))
    final = numpy.zeros((batch, states))
    for n, row in enumerate(labels):
        extended[n, 1:2 * len(row):2] = row
        # A label may follow the label two states back directly (skipping the blank) unless it repeats it.
        for s in range(3, 2 * len(row), 2):
            skip[n, s] = extended[n, s] != extended[n, s - 2]
        first[n, :min(2, 2 * len(row) + 1)] = 1.0
        final[n, max(2 * len(row) - 1, 0):2 * len(row) + 1] = 1.0
    extended_tensor = agnostic.tensor(extended, device=device)
    skip = agnostic.tensor(skip, device=device)
    final = agnostic.tensor(final, dtype=dtype, device=device)
    emissions = agnostic.gather(log_probs, 2, extended_tensor.unsqueeze(0).expand(steps, batch, states))
    lengths = agnostic.tensor(input_lengths, device=device)
    active_steps = agnostic.lt(agnostic.arange(steps, device=device).unsqueeze(1), lengths.unsqueeze(0))
    alpha = agnostic.tensor(first, dtype=dtype, device=device)
    log_likelihood = agnostic.zeros(batch, dtype=dtype, device=device)
    for t in range(max(input_lengths + [0])):
        if t == 0:
            reachable = alpha
        else:
            reachable = agnostic.add(alpha, _shift_states(alpha, 1))
            reachable = agnostic.add(reachable, agnostic.where(skip, _shift_states(alpha, 2), 0.0))
        emission = emissions[t]
        with agnostic.no_grad():
            # The largest reachable log-probability becomes 0 before exp, so the step cannot underflow to 0.
            shift = agnostic.amax(agnostic.where(agnostic.gt(reachable, 0), emission, -math.inf), 1, keepdim=True)
            shift = agnostic.where(agnostic.isinf(shift), 0.0, shift)
        scaled = agnostic.mul(reachable, agnostic.exp(agnostic.clamp(agnostic.sub(emission, shift), max=0)))
        total = scaled.sum(1, keepdim=True)
        possible = agnostic.gt(total, 0)
        safe_total = agnostic.where(possible, total, 1.0)
        active = active_steps[t]
        alpha = agnostic.where(active.unsqueeze(1), agnostic.div(scaled, safe_total), alpha)
        step = agnostic.add(agnostic.log(safe_total), shift).squeeze(1)
        log_likelihood = agnostic.add(log_likelihood, agnostic.where(active, step, 0.0))
    ending = agnostic.mul(alpha, final).sum(1)
    possible = agnostic.gt(ending, 0)
    loss = agnostic.neg(agnostic.add(log_likelihood, agnostic.log(agnostic.where(possible, ending, 1.0))))
    loss = agnostic.add(loss, _log_softmax_gradient_term(log_probs, active_steps))
    return agnostic.where(possible, loss, math.inf)


def _shift_states(alpha, by):
    """``alpha`` moved ``by`` states to the right along dimension 1, zeros entering."""
    batch, states = alpha.shape
    if by >= states:
        return agnostic.zeros_like(alpha)
    zeros = agnostic.zeros((batch, by), dtype=alpha.dtype, device=alpha.device)
    return agnostic.cat([zeros, alpha[:, :states - by]], 1)


def _log_softmax_gradient_term(log_probs, active_steps):
    """Zero, with gradient ``exp(log_probs)`` over each sequence's time steps (``active_steps``, (T, N)).

    PyTorch's CTC gradient is the one for the logits under a log_softmax: ``exp(log_probs) - posterior``, not the
    ``-posterior`` of the loss as written. The two agree once a log_softmax's backward is applied; this term makes
    the gradient of ``log_probs`` itself PyTorch's too."""
    probabilities = agnostic.exp(log_probs)
    masked = agnostic.where(active_steps.unsqueeze(2), agnostic.sub(probabilities, probabilities.detach()), 0.0)
    return masked.sum((0, 2))


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cosine_similarity",
           "cross_entropy", "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss",
           "margin_ranking_loss", "mse_loss", "multi_margin_loss", "multilabel_margin_loss",
           "multilabel_soft_margin_loss", "nll_loss", "normalize", "pairwise_distance", "pdist",
           "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]
