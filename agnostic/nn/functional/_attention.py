"""scaled_dot_product_attention and multi_head_attention_forward, as torch.nn.functional's: written with agnostic
ops, so autograd and every device follow, except where the backend's fused attention kernels take the attention
(``ops.ATTENTION_KERNELS`` and ``ops.attention_fits``: CUDA's, and the CPU's where numba is installed): there
attention without a mask is one recorded operation, a kernel forward and one or two back, as PyTorch's fused attention
is."""

import math

import numpy

import agnostic

from ... import _autocast
from ..._layout import same_layout
from ..._tensor import wrap
from ...autograd import Function
from ...autograd.functions import recomputed_gradients
from ...ops import random as _random
from ._dropout import DropoutDraw, dropout
from ._linear import linear
from ._padding import pad

_NEG_INF = float("-inf")


def _safe_softmax(scores):
    """Softmax over the last dim where a row whose every score is -inf (fully masked) gives zeros instead of NaN,
    as torch's attention kernels; the masked rows get a zero gradient rather than NaN."""
    # no data-dependent branch here: asking whether any row is fully masked would wait for the GPU
    fully_masked = (scores == _NEG_INF).all(-1, keepdim=True)
    weights = agnostic.softmax(agnostic.where(fully_masked, 0.0, scores), -1)
    return agnostic.where(fully_masked, 0.0, weights)


@_autocast.policy
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(query @ key^T * scale + mask) @ value`` over the last two dims (batch dims broadcast), as
    ``torch.nn.functional.scaled_dot_product_attention``: ``scale`` defaults to ``1 / sqrt(E)``; a bool
    ``attn_mask`` keeps the positions that are True, a float one is added to the scores; ``is_causal`` keeps
    ``j <= i``; ``dropout_p`` drops attention weights; ``enable_gqa`` repeats key/value heads (dim -3) to match the
    query's. Rows with every position masked give zeros.

        >>> import agnostic.nn.functional as F
        >>> query = agnostic.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> key = agnostic.tensor([[[1.0, 0.0], [0.0, 1.0]]])
        >>> value = agnostic.tensor([[[1.0, 2.0], [3.0, 4.0]]])
        >>> F.scaled_dot_product_attention(query, key, value, is_causal=True)
        tensor([[[1.0000, 2.0000],
                 [2.3395, 3.3395]]])
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value need at least 2 dimensions "
                           f"((..., L, E)), got {query.dim()}-D, {key.dim()}-D and {value.dim()}-D")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query's embedding size {query.shape[-1]} must equal "
                           f"key's {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key and value need the same sequence length, got "
                           f"{key.shape[-2]} and {value.shape[-2]}")
    if attn_mask is not None and attn_mask.dtype != agnostic.bool and attn_mask.dtype != query.dtype:
        if not attn_mask.is_floating_point():
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads, key_heads = query.shape[-3], key.shape[-3]
        if key_heads == 0 or heads % key_heads or heads % value.shape[-3]:
            raise RuntimeError("Number of heads in key and value must divide the number of heads in query")
        key = key.repeat_interleave(heads // key_heads, dim=-3)
        value = value.repeat_interleave(heads // value.shape[-3], dim=-3)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if (attn_mask is None and 0.0 <= dropout_p < 1.0 and query.shape[:-2] == key.shape[:-2] == value.shape[:-2]
            and _fused_attention_applies((query, key, value), math.prod(query.shape[:-2]), query.shape[-2],
                                         key.shape[-2], query.shape[-1], value.shape[-1])):
        return _FusedAttention.apply(query, key, value, scale, is_causal, dropout_p)
    if attn_mask is None and dropout_p == 0.0:
        return _composed_attention(query, key, value, scale, is_causal)
    scores = agnostic.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        attn_mask = agnostic.ones(length, source, dtype=agnostic.bool, device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == agnostic.bool:
            scores = scores.masked_fill(attn_mask.logical_not(), _NEG_INF)
        else:
            scores = scores + attn_mask
        weights = _safe_softmax(scores)
    else:
        weights = agnostic.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return agnostic.matmul(weights, value)


def _composed_attention(query, key, value, scale, causal, dropout=None):
    """``softmax(scale * query key^T) value`` of agnostic ops (keys after the query's own position hidden when
    ``causal``; the weights dropped by the ``dropout`` draw, ``(seed, start, keep)``): the fused kernels' reference,
    and their differentiable form for ``create_graph=True``."""
    scores = agnostic.matmul(query, key.transpose(-2, -1)) * scale
    if causal:
        length, source = query.shape[-2], key.shape[-2]
        keep = agnostic.ones(length, source, dtype=agnostic.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    weights = agnostic.softmax(scores, -1)
    if dropout is not None:
        weights = DropoutDraw.apply(weights, dropout)
    return agnostic.matmul(weights, value)


def _drawn_dropout(device, numpy_dtype, count, dropout_p):
    """For fused attention dropping weights with probability ``dropout_p``: ``(seed, start, keep)`` of the draw of
    ``count`` uniforms that ``dropout`` would take from ``device``'s default generator (which moves past it), and
    the keeping probability in the weights' dtype, as ``bernoulli`` compares it; None for no dropout."""
    if dropout_p == 0.0:
        return None
    seed, start = _random.uniform_stream(device, count, numpy_dtype)
    return seed, start, float(numpy_dtype.type(1.0 - dropout_p))


_FUSED_DTYPES = frozenset(numpy.dtype(name) for name in ("float32", "float64"))


def _fused_attention_applies(tensors, pairs, queries, keys, dim, value_dim):
    """Whether the backend's attention kernels take these tensors (one device and dtype, float32 or float64): ``pairs``
    (batch, head) pairs of ``queries`` query rows over ``keys`` keys with heads of ``dim`` (``value_dim`` for the
    values) dimensions."""
    first = tensors[0]
    dtype, device = first._data.dtype, first._device
    ops = device.backend.ops
    return (ops.ATTENTION_KERNELS and dtype in _FUSED_DTYPES
            and all(t._device is device and t._data.dtype is dtype for t in tensors[1:])
            and ops.attention_fits(dtype, pairs, queries, keys, dim, value_dim))


def _as_heads(array):
    """A (B, H, rows, D) view of a (..., rows, D) array with a unit last stride (the batch dimensions gathered into
    B and H as they allow)."""
    if array.ndim == 4:
        return array
    if array.ndim < 4:
        return array.reshape((1,) * (4 - array.ndim) + array.shape)
    return array.reshape((-1,) + array.shape[-3:])


def _unit_last_stride(xp, array):
    return array if array.strides[-1] == array.itemsize or array.shape[-1] == 1 else xp.ascontiguousarray(array)


class _FusedAttention(Function):
    """``softmax(scale * q k^T) v`` as one recorded operation on the backend's attention kernels: ``q`` (..., L, D),
    ``k`` (..., S, D) and ``v`` (..., S, Dv) with the same batch dimensions, read where they lie (a view of heads
    needs no copy). The (L, S) weights are never stored: the gradient computes them again from each row's
    log-sum-exp. A recorded backward (``create_graph=True``) differentiates the composed form instead."""

    @staticmethod
    def forward(ctx, q, k, v, scale, causal, dropout_p):
        device = q._device
        backend = device.backend
        xp = backend.xp
        with backend.activate():
            heads = [_as_heads(_unit_last_stride(xp, t._data)) for t in (q, k, v)]
            out = xp.empty(q._data.shape[:-1] + v._data.shape[-1:], q._data.dtype)
            batch, count, queries, _ = heads[0].shape
            dropout = _drawn_dropout(device, out.dtype, batch * count * queries * heads[1].shape[2], dropout_p)
            lse = backend.ops.attention_forward(*heads, _as_heads(out), scale, causal, dropout)
        ctx.tensors, ctx.settings = (q, k, v), (scale, causal, dropout)
        ctx.arrays = heads, out, lse
        return wrap(out, device)

    @staticmethod
    def backward(ctx, grad):
        scale, causal, dropout = ctx.settings
        if agnostic.is_grad_enabled():
            return recomputed_gradients(lambda q, k, v: _composed_attention(q, k, v, scale, causal, dropout),
                                        ctx.tensors, (grad,)) + (None, None, None)
        heads, out, lse = ctx.arrays
        device = grad._device
        backend = device.backend
        xp = backend.xp
        with backend.activate():
            # the kernels write each gradient with its input's strides: an input whose layout has gaps is copied
            heads, grads = list(heads), []
            for index, array in enumerate(heads):
                grad_array = xp.empty_like(array)
                if not same_layout(grad_array, array):
                    heads[index] = array = xp.ascontiguousarray(array)
                    grad_array = xp.empty_like(array)
                grads.append(grad_array)
            grad_heads = _as_heads(xp.ascontiguousarray(grad._data, out.dtype))
            backend.ops.attention_backward(*heads, _as_heads(out), grad_heads, lse, *grads, scale, causal, dropout)
        return tuple(wrap(g.reshape(t._data.shape), device) for g, t in zip(grads, ctx.tensors)) + (None, None, None)


def _packed_heads(array, heads, parts, batch_major):
    """``parts`` (N, H, L, D) views of a C-contiguous (A, B, parts * H * D) array holding, for each position, the
    ``parts`` (query, key, value...) side by side, each ``heads`` heads of D: (A, B) is (N, L) when ``batch_major``,
    else (L, N)."""
    first, second, width = array.shape
    split = array.reshape(first, second, parts, heads, width // (parts * heads))
    axes = (0, 2, 1, 3) if batch_major else (1, 2, 0, 3)
    return tuple(split[:, :, part].transpose(axes) for part in range(parts))


def _composed_packed_attention(projected, heads, scale, batch_major, dropout):
    """``_PackedSelfAttention``'s computation composed of agnostic ops (its differentiable form)."""
    first, second, width = projected.shape
    axes = (0, 2, 1, 3) if batch_major else (1, 2, 0, 3)
    q, k, v = (part.reshape(first, second, heads, width // (3 * heads)).permute(axes)
               for part in projected.chunk(3, -1))
    back = (0, 2, 1, 3) if batch_major else (2, 0, 1, 3)
    return _composed_attention(q, k, v, scale, False, dropout).permute(back).reshape(first, second, width // 3)


class _PackedSelfAttention(Function):
    """Multi-head self-attention between the projections, one recorded operation on the backend's attention
    kernels: ``projected`` (A, B, 3E) holds each position's query, key and value heads side by side (the packed input
    projection's output), read in place; the heads' outputs come back as (A, B, E) rows, the out projection's
    input, and the gradient of ``projected`` is written in its packed layout, so that no head is ever copied out or
    back. (A, B) is (N, L) when ``batch_major``, else (L, N)."""

    @staticmethod
    def forward(ctx, projected, heads, scale, batch_major, dropout_p):
        device = projected._device
        backend = device.backend
        xp = backend.xp
        with backend.activate():
            packed = xp.ascontiguousarray(projected._data)
            out = xp.empty(packed.shape[:2] + (packed.shape[2] // 3,), packed.dtype)
            length = packed.shape[1 if batch_major else 0]
            dropout = _drawn_dropout(device, out.dtype, packed.shape[0] * packed.shape[1] * heads * length, dropout_p)
            lse = backend.ops.attention_forward(*_packed_heads(packed, heads, 3, batch_major),
                                                *_packed_heads(out, heads, 1, batch_major), scale, False, dropout)
        ctx.projected, ctx.layout = projected, (heads, scale, batch_major, dropout)
        ctx.arrays = packed, out, lse
        return wrap(out, device)

    @staticmethod
    def backward(ctx, grad):
        heads, scale, batch_major, dropout = ctx.layout
        if agnostic.is_grad_enabled():
            return recomputed_gradients(lambda projected: _composed_packed_attention(projected, *ctx.layout),
                                        (ctx.projected,), (grad,)) + (None, None, None, None)
        packed, out, lse = ctx.arrays
        device = grad._device
        backend = device.backend
        xp = backend.xp
        with backend.activate():
            grad_packed = xp.empty_like(packed)
            backend.ops.attention_backward(
                *_packed_heads(packed, heads, 3, batch_major), *_packed_heads(out, heads, 1, batch_major),
                *_packed_heads(xp.ascontiguousarray(grad._data, out.dtype), heads, 1, batch_major), lse,
                *_packed_heads(grad_packed, heads, 3, batch_major), scale, False, dropout)
        return wrap(grad_packed, device), None, None, None, None


def _canonical_mask(mask, name, target_dtype):
    """A bool mask (True = ignore this position, torch.nn.MultiheadAttention's convention) as a float mask of
    0 / -inf; a float mask as it is."""
    if mask is None:
        return None
    if mask.dtype == agnostic.bool:
        return agnostic.zeros(mask.shape, dtype=target_dtype, device=mask.device).masked_fill(mask, _NEG_INF)
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The computation of ``torch.nn.MultiheadAttention`` on (L, N, E) query and (S, N, E_k/E_v) key/value (or
    unbatched (L, E) / (S, E)), as ``torch.nn.functional.multi_head_attention_forward``. Masks follow
    MultiheadAttention's convention: a True in a bool ``attn_mask`` ((L, S) or (N * num_heads, L, S)) or
    ``key_padding_mask`` ((N, S)) hides that position; float masks are added. Returns ``(output, weights)`` with
    the weights (N, L, S) averaged over heads (or (N, num_heads, L, S)), None unless ``need_weights``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.ones(2, 1, 4)
        >>> weight, out_weight = agnostic.eye(4).repeat(3, 1), agnostic.eye(4)
        >>> output, weights = F.multi_head_attention_forward(x, x, x, 4, 2, weight, None, None, None, False, 0.0,
        ...                                                  out_weight, None)
        >>> output.shape, weights
        (agnostic.Size([2, 1, 4]), tensor([[[0.5000, 0.5000],
                 [0.5000, 0.5000]]]))
    """
    batched = query.dim() == 3
    if not batched:
        if query.dim() != 2 or key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif key.dim() != 3 or value.dim() != 3:
        raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                             f"{key.dim()}-D and {value.dim()}-D tensors respectively")
    length, batch, embed_dim = query.shape
    source = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
    if (query is key and key is value and not use_separate_proj_weight and not need_weights and attn_mask is None
            and key_padding_mask is None and bias_k is None and bias_v is None and not add_zero_attn
            and static_k is None and static_v is None and (dropout_p < 1.0 or not training)
            and in_proj_weight is not None
            and _fused_attention_applies([t for t in (query, in_proj_weight, in_proj_bias, out_proj_weight,
                                                      out_proj_bias) if t is not None],
                                         batch * num_heads, length, length, head_dim, head_dim)):
        output = _packed_self_attention(query, num_heads, in_proj_weight, in_proj_bias, out_proj_weight,
                                        out_proj_bias, dropout_p if training else 0.0)
        return (output if batched else output.squeeze(1)), None

    # ----- input projections -----------------------------------------------------------------------------------
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
        else:
            weights = in_proj_weight.chunk(3)
            biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
            q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))
    else:
        biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q = linear(query, q_proj_weight, biases[0])
        k = linear(key, k_proj_weight, biases[1])
        v = linear(value, v_proj_weight, biases[2])

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (length, source):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(length, source)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (batch * num_heads, length, source):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(batch * num_heads, length, source)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = agnostic.cat([k, bias_k.repeat(1, batch, 1)])
        v = agnostic.cat([v, bias_v.repeat(1, batch, 1)])
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))

    # ----- heads: (L, N, E) -> (N * heads, L, head_dim) ------------------------------------------------------------
    q = q.reshape(length, batch * num_heads, head_dim).transpose(0, 1)
    k = (k.reshape(k.shape[0], batch * num_heads, head_dim).transpose(0, 1) if static_k is None else static_k)
    v = (v.reshape(v.shape[0], batch * num_heads, head_dim).transpose(0, 1) if static_v is None else static_v)
    if add_zero_attn:
        k = agnostic.cat([k, agnostic.zeros(k.shape[0], 1, head_dim, dtype=k.dtype, device=k.device)], 1)
        v = agnostic.cat([v, agnostic.zeros(v.shape[0], 1, head_dim, dtype=v.dtype, device=v.device)], 1)
        if attn_mask is not None:
            attn_mask = pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = pad(key_padding_mask, (0, 1))
    source = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (batch, source):
            raise AssertionError(f"expecting key_padding_mask shape of {(batch, source)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        padding = key_padding_mask.reshape(batch, 1, 1, source).expand(-1, num_heads, -1, -1)
        padding = padding.reshape(batch * num_heads, 1, source)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    scores = agnostic.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
    if attn_mask is not None:
        scores = scores + attn_mask
    # torch's weights path (need_weights) is a plain softmax (NaN on fully masked rows); its fused path gives 0
    weights = agnostic.softmax(scores, -1) if need_weights or attn_mask is None else _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    output = agnostic.matmul(weights, v)
    output = output.transpose(0, 1).reshape(length * batch, embed_dim)
    output = linear(output, out_proj_weight, out_proj_bias).reshape(length, batch, embed_dim)
    if not batched:
        output = output.squeeze(1)
    if not need_weights:
        return output, None
    weights = weights.reshape(batch, num_heads, length, source)
    if average_attn_weights:
        weights = weights.mean(1)
    if not batched:
        weights = weights.squeeze(0)
    return output, weights


def _packed_self_attention(x, heads, in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias, dropout_p):
    """Self-attention of (L, N, E) ``x`` by the fused kernels: the packed projection, ``_PackedSelfAttention``
    (dropping weights with probability ``dropout_p``), the out projection. A transposed (N, L, E) tensor
    (``batch_first``) is projected in its own order, so that no row is copied."""
    batch_major = x.stride(1) > x.stride(0)
    rows = x.transpose(0, 1) if batch_major else x
    projected = linear(rows, in_proj_weight, in_proj_bias)
    heads_out = _PackedSelfAttention.apply(projected, heads, 1.0 / math.sqrt(x.shape[-1] // heads), batch_major,
                                           dropout_p)
    output = linear(heads_out, out_proj_weight, out_proj_bias)
    return output.transpose(0, 1) if batch_major else output

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]
