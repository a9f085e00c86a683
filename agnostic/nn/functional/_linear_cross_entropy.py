"""linear_cross_entropy: the cross-entropy of a linear layer's logits, as torch.nn.functional.linear_cross_entropy
(PyTorch 2.14), with the chunked path that ``options`` selects.

The reference path is ``cross_entropy(linear(input, linear_weight, linear_bias), target, ...)``. The chunked path
computes the logits a block of batch rows at a time, so the whole ``(N, C)`` logits matrix is never held: for
``reduction`` 'mean'/'sum' its forward also computes the gradients (one pass over the chunks) and its backward scales
them by the incoming gradient, as PyTorch's does; for 'none' the backward recomputes each chunk's logits.
"""

import math
import warnings

import agnostic

from ...autograd import Function, is_grad_enabled
from ...autograd.functions import recomputed_gradients
from ._linear import linear
from ._loss import cross_entropy

_CHUNKED_REDUCTIONS = ("mean", "sum", "none")
_CONSUMED = ("linear_cross_entropy chunked backward called twice; retain_graph=True / double backward are not "
             "supported. Construct the options with LinearCrossEntropyOptions(allow_retain_graph=True) to allow it.")


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None, reduction="mean",
                         ignore_index=None, label_smoothing=0.0, options=None):
    """The cross entropy of the logits ``linear(input, linear_weight, linear_bias)`` against ``target`` (class
    indices or class probabilities), as ``cross_entropy(logits, target, ...)`` with ``ignore_index=None`` meaning
    -100. ``linear_weight`` is ``(C, in_features)``, or ``(C, d_1, ..., d_K, in_features)`` for a K-dimensional loss
    (then ``input`` must be batched, ``(N, in_features)``, and ``target`` ``(N, d_1, ..., d_K)``).

    ``options`` (an ``agnostic.nn.LinearCrossEntropyOptions``) selects the chunked path, which never holds the whole
    logits matrix; it supports ``out_features == ()``, ``label_smoothing == 0`` and int64 targets for every reduction,
    or probability targets of ``input``'s dtype (not requiring grad) for 'mean'/'sum'. Other calls with ``options``
    warn and take the reference path, as PyTorch's do.

        >>> import agnostic.nn.functional as F
        >>> input = agnostic.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> linear_weight = agnostic.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, -1.0]])
        >>> target = agnostic.tensor([0, 1, 2])
        >>> F.linear_cross_entropy(input, linear_weight, target)
        tensor(1.0439)
        >>> options = agnostic.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
        >>> F.linear_cross_entropy(input, linear_weight, target, options=options)
        tensor(1.0439)
        >>> F.linear_cross_entropy(input, linear_weight, target, reduction="none")
        tensor([0.8620, 0.4076, 1.8620])
    """
    if input.dim() < 1 or input.dim() > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.dim()}")
    if linear_weight.dim() < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got {linear_weight.dim()}")
    batch_shape = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions (in_features), "
                           f"got {input.shape[-1]} and {linear_weight.shape[-1]}, respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got {tuple(linear_bias.shape)}")
    if out_features and not batch_shape:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} requires"
                           f" batched input, (N, {in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batch_shape, num_classes, *out_features)
    # cross_entropy tells probability targets from class indices by the target having the logits' shape.
    target_contains_probabilities = tuple(target.shape) == logits_shape
    if target_contains_probabilities and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index

    if options is not None:
        # The chunked op has no gradient for the target, so a probability target that requires one takes the
        # reference path.
        chunkable_probabilities = (target_contains_probabilities and reduction in ("mean", "sum")
                                   and target.dtype == input.dtype and not (target.requires_grad and is_grad_enabled()))
        if (not out_features and reduction in _CHUNKED_REDUCTIONS and label_smoothing == 0.0
                and (target.dtype == agnostic.int64 or chunkable_probabilities)):
            return _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options)
        warnings.warn(
            "linear_cross_entropy: ``options`` ignored; chunked path needs reduction in {'mean','sum','none'}, "
            "label_smoothing == 0, target.dtype == int64 (or a probability target with reduction in {'mean','sum'}, "
            "dtype matching input, and requires_grad == False), out_features == (). Got "
            f"reduction={reduction!r}, label_smoothing={label_smoothing}, target.dtype={target.dtype}, "
            f"out_features={out_features}, tracing=False, target.requires_grad={target.requires_grad}, "
            f"linear_bias.shape={tuple(linear_bias.shape) if linear_bias is not None else None}.", stacklevel=2)

    if out_features:
        flat_classes = math.prod(out_features, start=num_classes)
        linear_weight = linear_weight.reshape(flat_classes, in_features)
        if linear_bias is not None:
            linear_bias = linear_bias.reshape(flat_classes)
    logits = linear(input, linear_weight, linear_bias).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore_index,
                         label_smoothing=label_smoothing)


def _chunked(input, linear_weight, target, linear_bias, weight, reduction, ignore_index, options):
    """The chunked path for a 2-D ``linear_weight``: unbatched calls run as a batch of one."""
    batched = input.dim() == 2
    if not batched:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    num_batches, in_features = input.shape
    num_classes = linear_weight.shape[0]
    options = options._adjust(num_batches=num_batches, in_features=in_features, num_classes=num_classes,
                              dtype=input.dtype, device=input.device, prob_target=target.dtype.is_floating_point)
    plan = _Plan(input, linear_weight, target, linear_bias, weight, reduction, ignore_index,
                 options.batch_chunk_size, options.acc_dtype)
    if reduction == "none":
        result = _ChunkedUnreducedLoss.apply(input, linear_weight, linear_bias, plan)
    else:
        grad_enabled = is_grad_enabled()
        wanted = (grad_enabled and input.requires_grad, grad_enabled and linear_weight.requires_grad,
                  grad_enabled and linear_bias is not None and linear_bias.requires_grad)
        result = _ChunkedReducedLoss.apply(input, linear_weight, linear_bias, plan, wanted,
                                           options.allow_retain_graph)
    return result if batched else result.squeeze(0)


class _Plan:
    """The operands of one chunked call, checked, with the per-row loss weights of index targets: ``weight[t]`` (1
    without ``weight``) on kept rows, 0 on ignored ones."""

    def __init__(self, input, linear_weight, target, linear_bias, weight, reduction, ignore_index, chunk_size,
                 acc_dtype):
        dtype = input.dtype
        widened = dtype in (agnostic.float16, agnostic.bfloat16) and acc_dtype == agnostic.float32
        if dtype != acc_dtype and not widened:
            raise RuntimeError(f"linear_cross_entropy supports float32 acc_dtype with float16/bfloat16 inputs, but got "
                               f"{acc_dtype} acc_dtype and {dtype} inputs.")
        if linear_weight.dtype != dtype:
            raise RuntimeError(f"linear_cross_entropy: expected input and linear_weight to have the same dtype, but "
                               f"got {dtype} != {linear_weight.dtype}; convert one with .to(other.dtype)")
        num_batches, num_classes = input.shape[0], linear_weight.shape[0]
        self.probabilities = target.dtype.is_floating_point
        if not self.probabilities:
            if tuple(target.shape) != (num_batches,):
                raise ValueError(f"Expected input batch_size ({num_batches}) to match target batch_size "
                                 f"({target.shape[0] if target.dim() else 'a 0-dimensional target'}); "
                                 "the target of class indices must be shaped (N,).")
            kept = agnostic.ne(target, ignore_index)
            out_of_range = agnostic.logical_and(kept, agnostic.logical_or(target < 0, target >= num_classes))
            if bool(out_of_range.any()):
                raise IndexError(f"Target {int(agnostic.masked_select(target, out_of_range)[0])} is out of bounds.")
            self.safe_target = agnostic.where(kept, target, 0)
            if weight is None:
                self.row_weights = kept.to(acc_dtype)
            else:
                self.row_weights = agnostic.where(kept, weight.to(acc_dtype).index_select(0, self.safe_target), 0.0)
        self.target, self.weight = target, weight
        self.reduction, self.ignore_index = reduction, ignore_index
        self.chunk_size, self.dtype, self.acc_dtype = chunk_size, dtype, acc_dtype
        self.num_batches = num_batches

    def scale(self):
        """What the summed loss is divided by: the kept rows' weight for index targets' 'mean', the row count for
        probability targets' 'mean', 1 for 'sum'."""
        if self.reduction == "sum":
            return 1.0
        if self.probabilities:
            return float(self.num_batches) if self.num_batches else math.nan
        return self.row_weights.sum()

    def run(self, input, linear_weight, linear_bias, wanted, coefficients=None):
        """``(loss, grad_input, grad_linear_weight, grad_linear_bias)``, chunk by chunk. The loss is the per-row
        loss (N,) for 'none', else the reduced scalar; the gradients (None where not ``wanted``) are those of the
        sum of the per-row losses each times ``coefficients`` (N,), or of the reduced loss when it is None."""
        acc = self.acc_dtype
        weight_acc = linear_weight.to(acc)
        bias_acc = None if linear_bias is None else linear_bias.to(acc)
        class_weight = None if self.weight is None or not self.probabilities else self.weight.to(acc).unsqueeze(0)
        want_input, want_weight, want_bias = wanted
        num_batches, in_features = input.shape
        grad_input = agnostic.empty((num_batches, in_features), dtype=input.dtype, device=input.device) \
            if want_input else None
        grad_weight = agnostic.zeros(tuple(linear_weight.shape), dtype=acc, device=input.device) if want_weight \
            else None
        grad_bias = agnostic.zeros((linear_weight.shape[0],), dtype=acc, device=input.device) if want_bias else None
        unreduced = self.reduction == "none" and coefficients is None
        losses = agnostic.empty((num_batches,), dtype=acc, device=input.device) if unreduced else None
        total = agnostic.zeros((), dtype=acc, device=input.device)
        scale = self.scale() if coefficients is None and not unreduced else None
        row_scale = scale
        if scale is not None and not self.probabilities and self.reduction == "mean":
            # All rows ignored: the loss is 0/0 = nan, but the reference path's gradients are 0, not nan.
            row_scale = agnostic.where(scale == 0, 1.0, scale)
        for start in range(0, num_batches, self.chunk_size):
            stop = min(start + self.chunk_size, num_batches)
            rows = input[start:stop].to(acc)
            logits = agnostic.matmul(rows, weight_acc.T)
            if bias_acc is not None:
                logits = logits + bias_acc
            shifted = logits - logits.amax(1, keepdim=True)
            exponentials = shifted.exp()
            denominators = exponentials.sum(1)
            log_denominators = denominators.log()
            if self.probabilities:
                weighted_target = self.target[start:stop].to(acc)
                if class_weight is not None:
                    weighted_target = weighted_target * class_weight
                row_mass = weighted_target.sum(1)
                row_losses = row_mass * log_denominators - (weighted_target * shifted).sum(1)
            else:
                targets = self.safe_target[start:stop]
                row_weights = self.row_weights[start:stop]
                target_logits = shifted.gather(1, targets.unsqueeze(1)).squeeze(1)
                row_losses = row_weights * (log_denominators - target_logits)
            if unreduced:
                losses[start:stop] = row_losses
                continue
            total += row_losses.sum()
            if not any(wanted):
                continue
            row_coefficients = (coefficients[start:stop].to(acc) if coefficients is not None
                                else agnostic.full((stop - start,), 1.0, dtype=acc, device=input.device) / row_scale)
            if self.probabilities:
                grad_logits = exponentials * (row_mass * row_coefficients / denominators).unsqueeze(1) \
                    - weighted_target * row_coefficients.unsqueeze(1)
                one_hot_weights = None
            else:
                # d(row loss)/d(logits) = weight * (softmax - one_hot); the one-hot part is added by index below.
                one_hot_weights = row_weights * row_coefficients
                grad_logits = exponentials * (one_hot_weights / denominators).unsqueeze(1)
            if want_input:
                chunk = agnostic.matmul(grad_logits, weight_acc)
                if one_hot_weights is not None:
                    chunk -= weight_acc.index_select(0, targets) * one_hot_weights.unsqueeze(1)
                grad_input[start:stop] = chunk.to(input.dtype)
            if want_weight:
                grad_weight += agnostic.matmul(grad_logits.T, rows)
                if one_hot_weights is not None:
                    grad_weight.index_add_(0, targets, rows * one_hot_weights.unsqueeze(1), alpha=-1)
            if want_bias:
                grad_bias += grad_logits.sum(0)
                if one_hot_weights is not None:
                    grad_bias.index_add_(0, targets, one_hot_weights, alpha=-1)
        if unreduced:
            loss = losses.to(self.dtype)
        else:
            loss = (total if scale is None else total / scale).to(self.dtype)
        grad_weight = None if grad_weight is None else grad_weight.to(linear_weight.dtype)
        grad_bias = None if grad_bias is None else grad_bias.to(linear_bias.dtype)
        return loss, grad_input, grad_weight, grad_bias

    def reference(self, input, linear_weight, linear_bias):
        """The same loss through the reference path, from differentiable ops (for recorded backwards)."""
        return cross_entropy(linear(input, linear_weight, linear_bias), self.target, weight=self.weight,
                             reduction=self.reduction, ignore_index=self.ignore_index)


class _ChunkedReducedLoss(Function):
    """'mean'/'sum': the forward computes the loss and, for the tensors in ``wanted``, its gradients; the backward
    scales them by the incoming gradient (consuming them unless ``allow_retain_graph``)."""

    @staticmethod
    def forward(ctx, input, linear_weight, linear_bias, plan, wanted, allow_retain_graph):
        loss, *ctx.gradients = plan.run(input, linear_weight, linear_bias, wanted)
        ctx.plan, ctx.tensors, ctx.allow_retain_graph = plan, (input, linear_weight, linear_bias), allow_retain_graph
        return loss

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph=True: differentiate the reference path, so higher orders stay exact
            return recomputed_gradients(ctx.plan.reference, ctx.tensors, (grad,)) + (None, None, None)
        gradients = ctx.gradients
        if gradients is None:
            raise RuntimeError(_CONSUMED)
        if ctx.allow_retain_graph:
            results = tuple(None if g is None else g * grad for g in gradients)
        else:
            ctx.gradients = None
            results = tuple(None if g is None else g.mul_(grad) for g in gradients)
        return results + (None, None, None)


class _ChunkedUnreducedLoss(Function):
    """'none': the forward computes the per-row losses only; the backward recomputes each chunk's logits and
    weighs its rows' gradients by the incoming ones."""

    @staticmethod
    def forward(ctx, input, linear_weight, linear_bias, plan):
        ctx.plan, ctx.tensors = plan, (input, linear_weight, linear_bias)
        return plan.run(input, linear_weight, linear_bias, (False, False, False))[0]

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():
            return recomputed_gradients(ctx.plan.reference, ctx.tensors, (grad,)) + (None,)
        input, linear_weight, linear_bias = ctx.tensors
        wanted = (input.requires_grad, linear_weight.requires_grad,
                  linear_bias is not None and linear_bias.requires_grad)
        _, *gradients = ctx.plan.run(input.detach(), linear_weight.detach(),
                                     None if linear_bias is None else linear_bias.detach(), wanted, coefficients=grad)
        return tuple(gradients) + (None,)


__all__ = ["linear_cross_entropy"]
