"""PyTorch's top-level forms of layer functions (``torch.conv2d``, ``torch.batch_norm``, ``torch.embedding``...) and
the smaller ``torch.*`` utilities, with PyTorch's own signatures where they differ from ``torch.nn.functional``'s.
(Autocast's older state functions are in ``_autocast_legacy``, Poisson and binomial samples in ``_sampling``.)

The layer functions delegate to ``agnostic.nn.functional`` (so gradients come with them); PyTorch's top-level losses
take ``reduction`` as an int (0: ``'none'``, 1: ``'mean'``, 2: ``'sum'``), as ATen's do.
"""

import builtins
import math
import numbers
import os
import warnings

import numpy

from . import _dtypes
from . import _legacy_types
from . import storage as _storage
from ._device import set_default_device
from ._dtypes import set_default_dtype
from ._tensor import TensorBase
from .amp import GradScaler
from .autograd import grad_mode as _grad_mode
from .cuda import OutOfMemoryError
from .nn import functional as _functional
from .nn.functional import _dropout
from .ops import creation as _creation
import agnostic as _agnostic

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(reduction):
    """ATen's reduction enum (0, 1, 2) as ``torch.nn.functional``'s name; the names are taken as well."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be 0 ('none'), 1 ('mean') or 2 ('sum'), got {reduction!r}")
    return _REDUCTIONS[reduction]


def _pool_stride(stride):
    """ATen's pooling stride default, ``()`` (the kernel size), as ``torch.nn.functional``'s None."""
    return None if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) else stride


# ----- convolutions -----------------------------------------------------------------------------------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution, as ``torch.conv1d`` (``torch.nn.functional.conv1d``); ``padding`` may be ``'same'`` or
    ``'valid'``.

        >>> agnostic.conv1d(agnostic.ones(1, 1, 4), agnostic.ones(1, 1, 2))
        tensor([[[2., 2., 2.]]])
    """
    return _functional.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution, as ``torch.conv2d`` (``torch.nn.functional.conv2d``).

        >>> agnostic.conv2d(agnostic.ones(1, 1, 3, 3), agnostic.ones(1, 1, 2, 2))
        tensor([[[[4., 4.],
                  [4., 4.]]]])
    """
    return _functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution, as ``torch.conv3d`` (``torch.nn.functional.conv3d``).

        >>> agnostic.conv3d(agnostic.ones(1, 1, 2, 2, 2), agnostic.ones(1, 1, 2, 2, 2)).flatten()
        tensor([8.])
    """
    return _functional.conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution, as ``torch.conv_transpose1d``.

        >>> agnostic.conv_transpose1d(agnostic.ones(1, 1, 2), agnostic.ones(1, 1, 2))
        tensor([[[1., 2., 1.]]])
    """
    return _functional.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution, as ``torch.conv_transpose2d``.

        >>> agnostic.conv_transpose2d(agnostic.ones(1, 1, 1, 2), agnostic.ones(1, 1, 1, 2))
        tensor([[[[1., 2., 1.]]]])
    """
    return _functional.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution, as ``torch.conv_transpose3d``.

        >>> agnostic.conv_transpose3d(agnostic.ones(1, 1, 1, 1, 2), agnostic.ones(1, 1, 1, 1, 2)).flatten()
        tensor([1., 2., 1.])
    """
    return _functional.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """ATen's general convolution, as ``torch.convolution``: the 1-, 2- or 3-D convolution (``transposed``: the
    transposed one) that ``weight``'s rank names, with every argument given.

        >>> agnostic.convolution(agnostic.ones(1, 1, 4), agnostic.ones(1, 1, 2), None, [1], [0], [1], False, [0], 1)
        tensor([[[2., 2., 2.]]])
    """
    spatial = weight.dim() - 2
    if spatial not in (1, 2, 3):
        raise RuntimeError(f"convolution expects a weight of 3, 4 or 5 dimensions, got {weight.dim()}")
    if transposed:
        function = (_functional.conv_transpose1d, _functional.conv_transpose2d,
                    _functional.conv_transpose3d)[spatial - 1]
        return function(input, weight, bias, stride, padding, output_padding, groups, dilation)
    function = (_functional.conv1d, _functional.conv2d, _functional.conv3d)[spatial - 1]
    return function(input, weight, bias, stride, padding, dilation, groups)


# ----- normalization ----------------------------------------------------------------------------------------------
def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """Batch normalization with ATen's argument order, as ``torch.batch_norm``: ``weight`` and ``bias`` first, every
    argument given (``cudnn_enabled`` is accepted and ignored).

        >>> x = agnostic.tensor([[1.0], [3.0]])
        >>> agnostic.batch_norm(x, None, None, None, None, True, 0.1, 1e-5, False)
        tensor([[-1.0000],
                [ 1.0000]])
    """
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean must be defined in evaluation mode")
    return _functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    """``(output, save_mean, save_invstd)``, as ``torch.native_batch_norm``: in training, the batch's mean and
    ``1 / sqrt(biased variance + eps)`` per channel; outside training both are empty.

        >>> x = agnostic.tensor([[1.0], [3.0]])
        >>> out, mean, invstd = agnostic.native_batch_norm(x, None, None, None, None, True, 0.1, 0.0)
        >>> out.flatten(), mean, invstd
        (tensor([-1.,  1.]), tensor([2.]), tensor([1.]))
    """
    output = batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, False)
    if not training:
        empty = _creation.empty(0, dtype=input.dtype, device=input.device)
        return output, empty, empty.clone()
    dims = [0] + list(builtins.range(2, input.dim()))
    mean = input.mean(dim=dims)
    variance = input.var(dim=dims, correction=0)
    return output, mean, _agnostic.rsqrt(variance + eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """Layer normalization over the last ``len(normalized_shape)`` dimensions, as ``torch.layer_norm``
    (``cudnn_enable`` is accepted and ignored).

        >>> agnostic.layer_norm(agnostic.tensor([[1.0, 3.0]]), [2])
        tensor([[-1.0000,  1.0000]])
    """
    return _functional.layer_norm(input, normalized_shape, weight, bias, eps)


def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """``(output, mean, rstd)``, as ``torch.native_layer_norm``: the statistics of each normalized slice, shaped as
    ``input`` with the normalized dimensions kept as 1.

        >>> out, mean, rstd = agnostic.native_layer_norm(agnostic.tensor([[1.0, 3.0]]), [2], None, None, 0.0)
        >>> out, mean, rstd
        (tensor([[-1.,  1.]]), tensor([[2.]]), tensor([[1.]]))
    """
    output = _functional.layer_norm(input, normalized_shape, weight, bias, eps)
    dims = list(builtins.range(input.dim() - len(normalized_shape), input.dim()))
    mean = input.mean(dim=dims, keepdim=True)
    variance = input.var(dim=dims, correction=0, keepdim=True)
    return output, mean, _agnostic.rsqrt(variance + eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """Group normalization, as ``torch.group_norm`` (``cudnn_enabled`` is accepted and ignored).

        >>> agnostic.group_norm(agnostic.tensor([[[1.0], [3.0]]]), 1)
        tensor([[[-1.0000],
                 [ 1.0000]]])
    """
    return _functional.group_norm(input, num_groups, weight, bias, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """Instance normalization with ATen's argument order, as ``torch.instance_norm`` (every argument given;
    ``cudnn_enabled`` is accepted and ignored).

        >>> agnostic.instance_norm(agnostic.tensor([[[1.0, 3.0]]]), None, None, None, None, True, 0.1, 1e-5, False)
        tensor([[[-1.0000,  1.0000]]])
    """
    return _functional.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """RMS normalization over the last ``len(normalized_shape)`` dimensions, as ``torch.rms_norm`` (``eps`` None:
    the dtype's machine epsilon).

        >>> agnostic.rms_norm(agnostic.tensor([[3.0, 4.0]]), [2])
        tensor([[0.8485, 1.1314]])
    """
    return _functional.rms_norm(input, normalized_shape, weight, eps)


# ----- embeddings and linear --------------------------------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` at ``indices``, as ``torch.embedding``: the weight comes first, and ``padding_idx`` is
    ATen's (-1 for none; a row given gets no gradient).

        >>> agnostic.embedding(agnostic.tensor([[0.0, 1.0], [2.0, 3.0]]), agnostic.tensor([1, 0, 1]))
        tensor([[2., 3.],
                [0., 1.],
                [2., 3.]])
    """
    padding_idx = None if padding_idx is None or padding_idx < 0 else padding_idx
    return _functional.embedding(indices, weight, padding_idx, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums (``mode`` 0), means (1) or maxima (2) of bags of ``weight``'s rows, as ``torch.embedding_bag``: the bag
    ``b`` holds ``indices[offsets[b]:offsets[b + 1]]``. Returns ``(output, offset2bag, bag_size, max_indices)``:
    ``output`` is ``torch.nn.functional.embedding_bag``'s; ``offset2bag`` is each index's bag, ``bag_size`` each
    bag's count of (non-padding) indices, and ``max_indices`` (mode 2) the row each maximum came from, else
    ``bag_size`` again (PyTorch's CPU kernel returns empty or zero bookkeeping tensors in sum mode).

        >>> weight = agnostic.arange(6.0).reshape(3, 2)
        >>> output, offset2bag, bag_size, _ = agnostic.embedding_bag(weight, agnostic.tensor([0, 2, 1]),
        ...                                                          agnostic.tensor([0, 2]))
        >>> output, offset2bag, bag_size
        (tensor([[4., 6.],
                [2., 3.]]), tensor([0, 0, 1]), tensor([2, 1]))
    """
    if mode not in _BAG_MODES:
        raise ValueError(f"embedding_bag's mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    indices, offsets = indices.reshape(-1), offsets.reshape(-1)  # ATen reads indices as one flat sequence
    if per_sample_weights is not None:
        per_sample_weights = per_sample_weights.reshape(-1)
    output = _functional.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq,
                                       mode=_BAG_MODES[mode], sparse=sparse, per_sample_weights=per_sample_weights,
                                       include_last_offset=include_last_offset, padding_idx=padding_idx)
    bags = output.shape[0]
    positions = _agnostic.arange(indices.shape[0], device=indices.device)
    offset2bag = _agnostic.searchsorted(offsets, positions, right=True) - 1
    counted = _agnostic.ones_like(indices)
    if padding_idx is not None:
        padding_idx = padding_idx + weight.shape[0] if padding_idx < 0 else padding_idx
        counted = (indices != padding_idx).long()
    bag_size = _agnostic.zeros(bags, dtype=_dtypes.int64, device=indices.device)
    inside = offset2bag < bags  # include_last_offset: the last offset closes the last bag
    bag_size = bag_size.index_add(0, offset2bag[inside], counted[inside])
    if mode != 2:
        return output, offset2bag, bag_size, bag_size.clone()
    return output, offset2bag, bag_size, _max_rows(weight, indices, offset2bag, counted, output.detach(), bags)


def _max_rows(weight, indices, offset2bag, counted, maxima, bags):
    """For each bag and feature, the row of ``weight`` that holds the bag's maximum (0 for an empty bag)."""
    count = indices.shape[0]
    rows = weight.detach()[indices]
    members = (offset2bag < bags) & counted.bool()
    bag = offset2bag.clamp(0, max(bags - 1, 0))
    matches = (rows == maxima[bag]) & members[:, None]
    position = _agnostic.where(matches, _agnostic.arange(count, device=indices.device)[:, None], count)
    first = _agnostic.full((bags, weight.shape[1]), count, dtype=_dtypes.int64, device=indices.device)
    first = first.scatter_reduce(0, bag[:, None].expand(count, weight.shape[1]), position, "amin")
    padded = _agnostic.cat([indices, _agnostic.zeros(1, dtype=indices.dtype, device=indices.device)])
    return padded[first]


def bilinear(input1, input2, weight, bias=None):
    """``x1ᵀ A x2 + b`` per output feature, as ``torch.bilinear``.

        >>> agnostic.bilinear(agnostic.ones(1, 2), agnostic.ones(1, 3), agnostic.ones(1, 2, 3))
        tensor([[6.]])
    """
    return _functional.bilinear(input1, input2, weight, bias)


# ----- activations ------------------------------------------------------------------------------------------------
def celu(input, alpha=1.0):
    """CELU, as ``torch.celu``: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

        >>> agnostic.celu(agnostic.tensor([-2.0, 0.0, 3.0]), alpha=2.0)
        tensor([-1.2642,  0.0000,  3.0000])
    """
    return _functional.celu(input, alpha)


def celu_(input, alpha=1.0):
    """In-place ``celu``, as ``torch.celu_``.

        >>> x = agnostic.tensor([-2.0, 3.0])
        >>> agnostic.celu_(x) is x, x
        (True, tensor([-0.8647,  3.0000]))
    """
    return _functional.celu_(input, alpha)


def selu(input):
    """SELU, as ``torch.selu``.

        >>> agnostic.selu(agnostic.tensor([-2.0, 1.0]))
        tensor([-1.5202,  1.0507])
    """
    return _functional.selu(input)


def selu_(input):
    """In-place ``selu``, as ``torch.selu_``.

        >>> x = agnostic.tensor([-2.0, 1.0])
        >>> agnostic.selu_(x) is x, x
        (True, tensor([-1.5202,  1.0507]))
    """
    return _functional.selu_(input)


def rrelu(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """Randomized leaky ReLU, as ``torch.rrelu``: in training, negative inputs are scaled by slopes drawn from
    ``U(lower, upper)`` (from ``generator`` when given); otherwise by ``(lower + upper) / 2``.

        >>> agnostic.rrelu(agnostic.tensor([-3.0, 2.0]), 0.25, 0.75)
        tensor([-1.5000,  2.0000])
    """
    if not training or generator is None:
        return _functional.rrelu(input, lower, upper, training)
    return _random_slopes(input, lower, upper, generator)


def _random_slopes(input, lower, upper, generator):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"rrelu" is not implemented for {input.dtype}; use a floating-point input')
    slopes = _agnostic.rand(input.shape, generator=generator, dtype=input.dtype, device=input.device)
    slopes = slopes * (upper - lower) + lower
    return _agnostic.where(input >= 0, input, input * slopes)


def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """In-place ``rrelu``, as ``torch.rrelu_``.

        >>> x = agnostic.tensor([-3.0, 2.0])
        >>> agnostic.rrelu_(x, 0.25, 0.75) is x, x
        (True, tensor([-1.5000,  2.0000]))
    """
    if not training or generator is None:
        return _functional.rrelu_(input, lower, upper, training)
    source = input.clone() if input.requires_grad and _agnostic.is_grad_enabled() else input
    return input.copy_(_random_slopes(source, lower, upper, generator))


def threshold(input, threshold, value):
    """``value`` where ``input <= threshold``, ``input`` elsewhere, as ``torch.threshold``.

        >>> agnostic.threshold(agnostic.tensor([-1.0, 0.5, 2.0]), 1.0, -5.0)
        tensor([-5., -5.,  2.])
    """
    return _functional.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    """In-place ``threshold``, as ``torch.threshold_``.

        >>> x = agnostic.tensor([-1.0, 2.0])
        >>> agnostic.threshold_(x, 0.0, -5.0) is x, x
        (True, tensor([-5.,  2.]))
    """
    return _functional.threshold_(input, threshold, value)


# ----- shuffles and padding ---------------------------------------------------------------------------------------
def pixel_shuffle(input, upscale_factor):
    """``(*, C r², H, W)`` to ``(*, C, H r, W r)``, as ``torch.pixel_shuffle``.

        >>> agnostic.pixel_shuffle(agnostic.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    return _functional.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """``(*, C, H r, W r)`` to ``(*, C r², H, W)``, the inverse of ``pixel_shuffle``, as ``torch.pixel_unshuffle``.

        >>> agnostic.pixel_unshuffle(agnostic.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    return _functional.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """Interleave the channels of ``groups`` groups, as ``torch.channel_shuffle``.

        >>> agnostic.channel_shuffle(agnostic.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return _functional.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """``channel_shuffle``, as ``torch.native_channel_shuffle``.

        >>> agnostic.native_channel_shuffle(agnostic.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return _functional.native_channel_shuffle(input, groups)


def constant_pad_nd(input, pad, value=0):
    """Pad with ``value``, as ``torch.constant_pad_nd``: ``pad`` gives (before, after) pairs from the last
    dimension backwards; negative amounts crop.

        >>> agnostic.constant_pad_nd(agnostic.ones(2, 2), [1, 0], 5.0)
        tensor([[5., 1., 1.],
                [5., 1., 1.]])
    """
    return _functional.pad(input, list(pad), "constant", value)


# ----- distances and losses ---------------------------------------------------------------------------------------
def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """Cosine similarity along ``dim``, as ``torch.cosine_similarity``.

        >>> agnostic.cosine_similarity(agnostic.tensor([[1.0, 0.0]]), agnostic.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    return _functional.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1, x2, p=2, eps=1e-06, keepdim=False):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension, as ``torch.pairwise_distance``.

        >>> agnostic.pairwise_distance(agnostic.tensor([[0.0, 0.0]]), agnostic.tensor([[3.0, 4.0]]), eps=0.0)
        tensor([5.])
    """
    return _functional.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input, p=2):
    """The ``p``-norm distances between the rows of ``input``, upper triangle in row order, as ``torch.pdist``.

        >>> agnostic.pdist(agnostic.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
        tensor([5.0000, 1.0000, 4.2426])
    """
    return _functional.pdist(input, p)


def kl_div(input, target, reduction=1, *, log_target=False):
    """KL divergence of log-probabilities ``input`` from ``target``, as ``torch.kl_div``: ``reduction`` an int
    (0: none, 1: mean, 2: sum).

        >>> agnostic.kl_div(agnostic.tensor([-1.0, -2.0]), agnostic.tensor([0.5, 0.5]), 0)
        tensor([0.1534, 0.6534])
    """
    return _functional.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    """Binary cross-entropy of logits, as ``torch.binary_cross_entropy_with_logits``: ``reduction`` an int.

        >>> agnostic.binary_cross_entropy_with_logits(agnostic.tensor([0.0, 0.0]), agnostic.tensor([1.0, 0.0]))
        tensor(0.6931)
    """
    return _functional.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                                        pos_weight=pos_weight)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``max(0, -target * (input1 - input2) + margin)``, as ``torch.margin_ranking_loss`` (``reduction`` an int).

        >>> agnostic.margin_ranking_loss(agnostic.tensor([1.0, 2.0]), agnostic.tensor([2.0, 1.0]),
        ...                              agnostic.tensor([1.0, 1.0]), 0.0, 0)
        tensor([1., 0.])
    """
    return _functional.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction=1):
    """Triplet loss ``max(d(a, p) - d(a, n) + margin, 0)``, as ``torch.triplet_margin_loss`` (``reduction`` an int).

        >>> agnostic.triplet_margin_loss(agnostic.tensor([[0.0]]), agnostic.tensor([[1.0]]), agnostic.tensor([[3.0]]),
        ...                              margin=3.0, eps=0.0)
        tensor(1.)
    """
    return _functional.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                           reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for -1, as
    ``torch.cosine_embedding_loss`` (``reduction`` an int).

        >>> agnostic.cosine_embedding_loss(agnostic.tensor([[1.0, 0.0]]), agnostic.tensor([[0.0, 1.0]]),
        ...                                agnostic.tensor([1.0]))
        tensor(1.)
    """
    return _functional.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """``x`` for target 1, ``max(0, margin - x)`` for -1, as ``torch.hinge_embedding_loss`` (``reduction`` an int).

        >>> agnostic.hinge_embedding_loss(agnostic.tensor([0.3, 0.3]), agnostic.tensor([1.0, -1.0]), 1.0, 0)
        tensor([0.3000, 0.7000])
    """
    return _functional.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """Poisson negative log-likelihood, as ``torch.poisson_nll_loss``: every argument given, ``reduction`` an int.

        >>> agnostic.poisson_nll_loss(agnostic.tensor([0.0]), agnostic.tensor([1.0]), True, False, 1e-8, 1)
        tensor(1.)
    """
    return _functional.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """Connectionist temporal classification loss, as ``torch.ctc_loss`` (``reduction`` an int; the lengths are
    tensors or sequences of ints).

        >>> log_probs = agnostic.full((1, 1, 2), 0.5).log()
        >>> agnostic.ctc_loss(log_probs, agnostic.tensor([[1]]), [1], [1])
        tensor(0.6931)
    """
    return _functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction),
                                zero_infinity)


# ----- pooling ----------------------------------------------------------------------------------------------------
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """1-D max pooling, as ``torch.max_pool1d`` (``stride`` ``()``: the kernel size).

        >>> agnostic.max_pool1d(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        tensor([[[3., 2.]]])
    """
    return _functional.max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``(maxima, indices)`` of 1-D max pooling, as ``torch.max_pool1d_with_indices``.

        >>> agnostic.max_pool1d_with_indices(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
    return _functional.max_pool1d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode,
                                  return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """2-D max pooling, as ``torch.max_pool2d`` (``stride`` ``()``: the kernel size).

        >>> agnostic.max_pool2d(agnostic.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    return _functional.max_pool2d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """3-D max pooling, as ``torch.max_pool3d`` (``stride`` ``()``: the kernel size).

        >>> agnostic.max_pool3d(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten()
        tensor([7.])
    """
    return _functional.max_pool3d(input, kernel_size, _pool_stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling, as ``torch.avg_pool1d`` (``stride`` ``()``: the kernel size).

        >>> agnostic.avg_pool1d(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        tensor([[[2., 1.]]])
    """
    return _functional.avg_pool1d(input, kernel_size, _pool_stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """1-D adaptive average pooling to ``output_size``, as ``torch.adaptive_avg_pool1d``.

        >>> agnostic.adaptive_avg_pool1d(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 1)
        tensor([[[1.5000]]])
    """
    return _functional.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``(maxima, indices)`` of 1-D adaptive max pooling, as ``torch.adaptive_max_pool1d`` (which, unlike
    ``torch.nn.functional``'s, always returns the indices).

        >>> agnostic.adaptive_max_pool1d(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 1)
        (tensor([[[3.]]]), tensor([[[1]]]))
    """
    return _functional.adaptive_max_pool1d(input, output_size, return_indices=True)


# ----- dropout ----------------------------------------------------------------------------------------------------
def dropout(input, p, train):
    """Dropout, as ``torch.dropout``: with ``train``, zero each element with probability ``p`` and scale the rest
    by ``1 / (1 - p)``.

        >>> agnostic.dropout(agnostic.ones(3), 0.5, False)
        tensor([1., 1., 1.])
        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.dropout(agnostic.ones(6), 0.5, True)
        tensor([2., 2., 0., 2., 2., 2.])
    """
    return _functional.dropout(input, p, train)


def dropout_(input, p, train):
    """In-place ``dropout``, as ``torch.dropout_``.

        >>> x = agnostic.ones(3)
        >>> agnostic.dropout_(x, 1.0, True) is x, x
        (True, tensor([0., 0., 0.]))
    """
    return _functional.dropout(input, p, train, inplace=True)


def _feature_mask_shape(input, p, train):
    if train and p > 0 and input.numel() and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.dim() - 2)


def feature_dropout(input, p, train):
    """Dropout of whole channels (one draw per ``(N, C)`` entry of an input of at least 2 dimensions), as
    ``torch.feature_dropout``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.feature_dropout(agnostic.ones(1, 3, 2), 0.5, True)
        tensor([[[2., 2.],
                 [2., 2.],
                 [0., 0.]]])
    """
    return _dropout._dropped(input, p, train, False, _feature_mask_shape(input, p, train))


def feature_dropout_(input, p, train):
    """In-place ``feature_dropout``, as ``torch.feature_dropout_``.

        >>> x = agnostic.ones(1, 2, 2)
        >>> agnostic.feature_dropout_(x, 1.0, True) is x, x.sum()
        (True, tensor(0.))
    """
    return _dropout._dropped(input, p, train, True, _feature_mask_shape(input, p, train))


def alpha_dropout(input, p, train):
    """Alpha dropout (SELU's, keeping mean and variance), as ``torch.alpha_dropout``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.alpha_dropout(agnostic.zeros(4), 0.5, True)
        tensor([ 0.7792,  0.7792, -0.7792,  0.7792])
    """
    return _functional.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    """In-place ``alpha_dropout``, as ``torch.alpha_dropout_``.

        >>> x = agnostic.zeros(2)
        >>> agnostic.alpha_dropout_(x, 0.5, False) is x, x
        (True, tensor([0., 0.]))
    """
    return _functional.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    """Alpha dropout of whole channels, as ``torch.feature_alpha_dropout``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.feature_alpha_dropout(agnostic.zeros(1, 3, 1), 0.5, True).flatten()
        tensor([ 0.7792,  0.7792, -0.7792])
    """
    return _functional.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    """In-place ``feature_alpha_dropout``, as ``torch.feature_alpha_dropout_``.

        >>> x = agnostic.zeros(1, 2, 1)
        >>> agnostic.feature_alpha_dropout_(x, 0.5, False) is x
        True
    """
    return _functional.feature_alpha_dropout(input, p, train, inplace=True)


# ----- tensor utilities -------------------------------------------------------------------------------------------
def clone(input, *, memory_format=None):
    """A copy of ``input`` (recorded by autograd), as ``torch.clone``.

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> y = agnostic.clone(x)
        >>> y is x, y
        (False, tensor([1., 2.]))
    """
    if memory_format is None:
        return input.clone()
    return input.clone(memory_format=memory_format)


def detach(input):
    """``input``'s values without its autograd history, as ``torch.detach``.

        >>> agnostic.detach(agnostic.ones(2, requires_grad=True)).requires_grad
        False
    """
    return input.detach()


def detach_(input):
    """Detach ``input`` from its autograd history in place, as ``torch.detach_``.

        >>> x = agnostic.ones(2, requires_grad=True) * 2
        >>> agnostic.detach_(x) is x, x.requires_grad
        (True, False)
    """
    return input.detach_()


def fill(input, value):
    """A tensor shaped and typed as ``input``, filled with ``value`` (a number or a 0-dimensional tensor), as
    ``torch.fill``.

        >>> agnostic.fill(agnostic.ones(2), 3)
        tensor([3., 3.])
    """
    return input.clone().fill_(value)


def get_device(input):
    """The index of ``input``'s CUDA device, or -1 on the CPU, as ``torch.get_device``.

        >>> agnostic.get_device(agnostic.ones(1))
        -1
    """
    return input.get_device()


def typename(obj):
    """The type name of ``obj``, as ``torch.typename``: a tensor's legacy type (``'agnostic.FloatTensor'``), else
    the module-qualified name of the class (of ``obj``, or ``obj`` itself for a class or function).

        >>> agnostic.typename(agnostic.ones(1)), agnostic.typename(3), agnostic.typename(agnostic.nn.Linear)
        ('agnostic.FloatTensor', 'int', 'agnostic.nn.linear.Linear')
    """
    if isinstance(obj, TensorBase):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = type(obj).__module__ or ""
        qualname = type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def is_storage(obj):
    """Whether ``obj`` is a storage (``UntypedStorage`` or ``TypedStorage``), as ``torch.is_storage``.

        >>> agnostic.is_storage(agnostic.ones(1).untyped_storage()), agnostic.is_storage(agnostic.ones(1))
        (True, False)
    """
    return isinstance(obj, (_storage.UntypedStorage, _storage.TypedStorage))


def is_inference_mode_enabled():
    """Whether this thread runs inside ``agnostic.inference_mode()``, as ``torch.is_inference_mode_enabled``.

        >>> agnostic.is_inference_mode_enabled()
        False
    """
    return _grad_mode._state.inference_mode


_warn_always = [False]


def set_warn_always(b):
    """Make warnings that PyTorch issues once per process be issued every time (a flag, as
    ``torch.set_warn_always``).

        >>> agnostic.set_warn_always(True)
        >>> agnostic.is_warn_always_enabled()
        True
        >>> agnostic.set_warn_always(False)
    """
    _warn_always[0] = bool(b)


def is_warn_always_enabled():
    """Whether ``set_warn_always(True)`` is in effect, as ``torch.is_warn_always_enabled``.

        >>> agnostic.is_warn_always_enabled()
        False
    """
    return _warn_always[0]


def set_default_tensor_type(t):
    """PyTorch's deprecated way to set the default floating dtype and device of factories, as
    ``torch.set_default_tensor_type``: ``t`` is a legacy floating type or its name (``agnostic.DoubleTensor``,
    ``'torch.cuda.FloatTensor'``). Warns that ``set_default_dtype`` and ``set_default_device`` replace it.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.set_default_tensor_type(agnostic.DoubleTensor)
        >>> agnostic.ones(1).dtype
        agnostic.float64
        >>> agnostic.set_default_dtype(agnostic.float32)
    """
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    if not isinstance(t, (str, _legacy_types._LegacyTensorType)):
        raise TypeError(f"invalid type object: expected a legacy tensor type (agnostic.FloatTensor) or its name, "
                        f"got {type(t).__name__}")
    if isinstance(t, str) and t.split(".")[-1] not in _legacy_types._BY_NAME:
        raise TypeError(f"invalid type: {t!r}; use a name such as 'torch.FloatTensor' or 'torch.cuda.DoubleTensor'")
    device, dtype = _legacy_types.parse_type(t, _creation._target(None))
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(dtype)
    if device is not None:
        set_default_device(device)


def set_flush_denormal(mode):
    """Whether flushing denormal floats to zero was set, as ``torch.set_flush_denormal``: False, NumPy and CuPy
    give no control of the CPU's denormal mode (PyTorch returns False where it is unsupported too).

        >>> agnostic.set_flush_denormal(True)
        False
    """
    return False


_interop_threads = {"count": None}


def get_num_interop_threads():
    """The number of threads used for inter-op parallelism, as ``torch.get_num_interop_threads`` (the CPU count
    unless ``set_num_interop_threads`` set it; agnostic runs ops one after another, so it only reports the
    setting).

        >>> agnostic.get_num_interop_threads() >= 1
        True
    """
    return _interop_threads["count"] or os.cpu_count() or 1


def set_num_interop_threads(num):
    """Set the number of inter-op threads, once, as ``torch.set_num_interop_threads`` (a second call raises).

        >>> agnostic.set_num_interop_threads  # doctest: +ELLIPSIS
        <function set_num_interop_threads at ...>
    """
    if isinstance(num, bool) or not isinstance(num, numbers.Integral) or num < 1:
        raise RuntimeError(f"Expected positive number of threads, got {num!r}")
    if _interop_threads["count"] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has started or "
                           "set_num_interop_threads called")
    _interop_threads["count"] = int(num)


def init_num_threads():
    """Initialize the calling thread's intra-op threads, as ``torch.init_num_threads``: nothing to do in agnostic,
    whose thread pools (BLAS's, the CPU kernels') start on first use.

        >>> agnostic.init_num_threads()
    """


def _blas_build():
    """NumPy's BLAS library: its name and build configuration, lower-cased (empty where NumPy doesn't say)."""
    dependencies = getattr(getattr(numpy, "__config__", None), "CONFIG", {}).get("Build Dependencies", {})
    blas = dependencies.get("blas", {})
    return str(blas.get("name", "")).lower(), str(blas.get("openblas configuration", "")).lower()


# What this build has: NumPy always ships LAPACK (its own lapack_lite where no system one) and FFTs; MKL where NumPy
# was built on it; OpenMP where its BLAS was built with OpenMP threads (an MKL build, or OpenBLAS's USE_OPENMP).
has_lapack = True
has_spectral = True
has_mkl = "mkl" in _blas_build()[0]
has_openmp = has_mkl or "openmp" in _blas_build()[1]


def range(start, end, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Values from ``start`` to ``end`` inclusive, ``step`` apart, in the default floating dtype unless ``dtype``
    says otherwise, as PyTorch's deprecated ``torch.range`` (which warns: use ``arange``, whose end is excluded).

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.range(0, 3)
        tensor([0., 1., 2., 3.])
    """
    warnings.warn("torch.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(math.floor((end - start) / step)) + 1
    dtype = _dtypes.get_default_dtype() if dtype is None else _dtypes.as_dtype(dtype)
    values = _agnostic.arange(count, dtype=_dtypes.float64, device=device) * step + start
    result = values.to(dtype)
    if out is not None:
        if tuple(out.shape) != tuple(result.shape):
            raise RuntimeError(f"range: out has shape {tuple(out.shape)}, the result {tuple(result.shape)}; pass an "
                               "out of the result's shape")
        return out.copy_(result)
    return result.requires_grad_(requires_grad) if requires_grad else result


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor that shares the memory of a Python buffer (``bytes``, ``bytearray``, ``array.array``,
    ``memoryview``), as ``torch.frombuffer``: ``count`` elements of ``dtype`` from byte ``offset`` (all of them
    with -1). A read-only buffer gives a read-only tensor, with PyTorch's warning.

        >>> agnostic.frombuffer(bytearray(b"\\x01\\x00\\x02\\x00"), dtype=agnostic.int16)
        tensor([1, 2], dtype=agnostic.int16)
    """
    dtype = _dtypes.as_dtype(dtype)
    view = memoryview(buffer)
    length = view.nbytes
    size = dtype.itemsize
    if length <= 0 or offset < 0 or offset >= length:
        raise ValueError(f"both buffer length ({length}) and offset ({offset}) must be positive, with the offset "
                         "inside the buffer")
    if count == 0 or count < -1:
        raise ValueError(f"count must be -1 or a positive number of elements, got {count}")
    if count == -1:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must not "
                         f"be greater than actual buffer length ({length} bytes)")
    if view.readonly:
        warnings.warn("The given buffer is not writable, and PyTorch does not support non-writable tensors. This "
                      "means you can write to the underlying (supposedly non-writable) buffer using the tensor. You "
                      "may want to copy the buffer to protect its data or make it writable before converting it to a "
                      "tensor.", UserWarning, stacklevel=2)
    array = numpy.frombuffer(view.cast("B"), dtype=dtype.numpy_dtype, count=count, offset=offset)
    tensor = _agnostic.from_numpy(array)
    return tensor.requires_grad_(True) if requires_grad else tensor


# ----- in-place forms of ops --------------------------------------------------------------------------------------
def gcd_(input, other):
    """In-place ``gcd``, as ``torch.gcd_``.

        >>> x = agnostic.tensor([4, 9])
        >>> agnostic.gcd_(x, agnostic.tensor([6, 3])) is x, x
        (True, tensor([2, 3]))
    """
    return input.gcd_(other)


def lcm_(input, other):
    """In-place ``lcm``, as ``torch.lcm_``.

        >>> x = agnostic.tensor([4, 9])
        >>> agnostic.lcm_(x, agnostic.tensor([6, 3])) is x, x
        (True, tensor([12,  9]))
    """
    return input.lcm_(other)


def sinc_(input):
    """In-place ``sinc``, as ``torch.sinc_``.

        >>> x = agnostic.tensor([0.0, 0.5])
        >>> agnostic.sinc_(x) is x, x
        (True, tensor([1.0000, 0.6366]))
    """
    return input.sinc_()


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    """In-place ``addmv``: ``input = beta * input + alpha * (mat @ vec)``, as ``torch.addmv_``.

        >>> x = agnostic.ones(2)
        >>> agnostic.addmv_(x, agnostic.eye(2), agnostic.tensor([1.0, 2.0]), alpha=2) is x, x
        (True, tensor([3., 5.]))
    """
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def conj_physical_(input):
    """Conjugate ``input`` in place (a no-op for real tensors), as ``torch.conj_physical_``.

        >>> x = agnostic.tensor([1 + 2j])
        >>> agnostic.conj_physical_(x) is x, x
        (True, tensor([1.-2.j]))
    """
    if not input.dtype.is_complex:
        return input
    source = input.clone() if input.requires_grad and _agnostic.is_grad_enabled() else input
    return input.copy_(_agnostic.conj_physical(source))


def index_put_(input, indices, values, accumulate=False):
    """``input[indices] = values`` in place (``accumulate``: ``+=``, duplicates summed), as ``torch.index_put_``.

        >>> x = agnostic.zeros(3)
        >>> agnostic.index_put_(x, (agnostic.tensor([0, 0, 2]),), agnostic.tensor(1.0), accumulate=True)
        tensor([2., 0., 1.])
    """
    return input.index_put_(indices, values, accumulate)


# ----- control flow -----------------------------------------------------------------------------------------------
def cond(pred, true_fn, false_fn, operands=()):
    """``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, as ``torch.cond`` run eagerly: ``pred`` is
    a bool or a one-element tensor.

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> agnostic.cond(x.sum() > 0, lambda t: t * 2, lambda t: -t, (x,))
        tensor([2., 4.])
    """
    if isinstance(pred, TensorBase):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got a tensor of shape "
                               f"{tuple(pred.shape)}")
        pred = bool(pred.item())
    elif not isinstance(pred, (bool, numbers.Integral, numpy.bool_)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {type(pred).__name__}")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple or a list, but got {type(operands).__name__}")
    return (true_fn if pred else false_fn)(*operands)


__all__ = [
    "OutOfMemoryError", "GradScaler",
    "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "convolution",
    "batch_norm", "native_batch_norm", "layer_norm", "native_layer_norm", "group_norm", "instance_norm", "rms_norm",
    "embedding", "embedding_bag", "bilinear",
    "celu", "celu_", "selu", "selu_", "rrelu", "rrelu_", "threshold", "threshold_",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "constant_pad_nd",
    "cosine_similarity", "pairwise_distance", "pdist", "kl_div", "binary_cross_entropy_with_logits",
    "margin_ranking_loss", "triplet_margin_loss", "cosine_embedding_loss", "hinge_embedding_loss",
    "poisson_nll_loss", "ctc_loss",
    "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d",
    "adaptive_max_pool1d",
    "dropout", "dropout_", "feature_dropout", "feature_dropout_", "alpha_dropout", "alpha_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_",
    "clone", "detach", "detach_", "fill", "get_device", "typename", "is_storage", "is_inference_mode_enabled",
    "set_warn_always", "is_warn_always_enabled", "set_default_tensor_type", "set_flush_denormal",
    "get_num_interop_threads", "set_num_interop_threads", "init_num_threads",
    "has_lapack", "has_mkl", "has_openmp", "has_spectral",
    "range", "frombuffer", "gcd_", "lcm_", "sinc_", "addmv_", "conj_physical_", "index_put_",
    "cond",
]
