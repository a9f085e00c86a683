"""Backward rules of the core ops, one small function per op, written with agnostic's own (recordable) ops so that
``create_graph=True`` gives higher derivatives. Each rule returns one gradient per positional argument of the op
(None for arguments that are not tensors); ``fit`` sums broadcast dimensions away and restores the input's dtype.
"""

import math

import numpy

from .. import _backend
from .._tensor import Tensor
from .grad_mode import _state as _grad_state

A = None  # the agnostic module, bound by install(): rules call its (recording) functions


def fit(grad, like):
    """``grad`` summed back to ``like``'s shape (undoing broadcasting), in ``like``'s dtype and on its device."""
    if not isinstance(like, Tensor) or grad is None:
        return None
    shape = like._data.shape
    if grad._data.shape != shape:
        lead = grad.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and grad.shape[i + lead] != 1)
        if dims:
            grad = grad.sum(dim=dims, keepdim=True)
        grad = grad.reshape(shape)
    if grad.dtype is not like.dtype:
        grad = grad.to(like.dtype)
    if grad._device is not like._device:
        grad = grad.to(like._device)
    return grad


def _conj(x):
    return x.conj() if isinstance(x, Tensor) and x.dtype.is_complex else x


def _result(ctx, recompute):
    """The op's output: detached normally; recomputed (so it is recorded) when building a graph of the gradient."""
    return recompute() if _grad_state.enabled else ctx.result


# ----- elementwise (the rules of the declared elementwise ops live with them, in ops/elementwise.py) -------
def _extremum(pick_first):
    def rule(ctx, g):
        a, b = ctx.args[:2]
        tie = (a == b).to(g.dtype) if isinstance(b, Tensor) and isinstance(a, Tensor) else 0.0
        first = pick_first(a, b).to(g.dtype)
        return fit(g * (first - tie * 0.5) if isinstance(a, Tensor) else None, a), \
            fit(g * (1 - first + tie * 0.5) if isinstance(b, Tensor) else None, b)
    return rule


# ----- reductions ----------------------------------------------------------------------------------------------
def _reduced_dims(x, dim):
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(x.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(d % x.ndim for d in dims) if x.ndim else ()


def _expand_back(g, x, dim, keepdim):
    """A gradient of a reduction over ``dim`` broadcast back to ``x``'s shape."""
    if not keepdim:
        for d in sorted(_reduced_dims(x, dim)):
            g = g.unsqueeze(d)
    return g.expand(x.shape)


def _reduction_arguments(ctx, dim_position=1):
    x = ctx.args[0]
    dim = ctx.args[dim_position] if len(ctx.args) > dim_position else ctx.kwargs.get("dim")
    keepdim = ctx.args[dim_position + 1] if len(ctx.args) > dim_position + 1 else ctx.kwargs.get("keepdim", False)
    return x, dim, keepdim


def sum(ctx, g):
    x, dim, keepdim = _reduction_arguments(ctx)
    return fit(_expand_back(g, x, dim, keepdim), x),


def mean(ctx, g):
    x, dim, keepdim = _reduction_arguments(ctx)
    count = math.prod(x.shape[d] for d in _reduced_dims(x, dim)) if x.ndim else 1
    return fit(_expand_back(g, x, dim, keepdim) / count, x),


def prod(ctx, g):
    x, dim, keepdim = _reduction_arguments(ctx)
    if dim is None:
        flat = x.reshape(-1)
        return fit(_product_of_others(flat, 0).reshape(x.shape) * g, x),
    axis = dim % x.ndim if x.ndim else 0
    grad = _expand_back(g, x, dim, keepdim)
    return fit(grad * _product_of_others(x, axis), x),


def _product_of_others(x, axis):
    """For each element, the product of the others along ``axis`` (exact with zeros: exclusive cumprods)."""
    if x.ndim == 0:
        return A.ones_like(x)
    ones_shape = list(x.shape)
    ones_shape[axis] = 1
    ones = A.ones(ones_shape, dtype=x.dtype, device=x.device)
    length = x.shape[axis]
    before = A.cat([ones, A.cumprod(x.narrow(axis, 0, length - 1), axis)], axis) if length > 1 else ones
    reversed_x = A.flip(x, (axis,))
    after = A.cat([ones, A.cumprod(reversed_x.narrow(axis, 0, length - 1), axis)], axis) if length > 1 else ones
    return before * A.flip(after, (axis,))


def _var_parts(ctx):
    x = ctx.args[0]
    from ..ops.reduction import _var_arguments

    dim, unbiased, keepdim = (list(ctx.args[1:4]) + [None, None, False])[:3]
    dim = ctx.kwargs.get("dim", dim)
    keepdim = ctx.kwargs.get("keepdim", keepdim)
    unbiased = ctx.kwargs.get("unbiased", unbiased)
    dim, keepdim, correction = _var_arguments(dim, unbiased, keepdim, ctx.kwargs.get("correction"))
    count = math.prod(x.shape[d] for d in _reduced_dims(x, dim)) if x.ndim else 1
    mean_keep = x.mean(dim=_reduced_dims(x, dim), keepdim=True) if x.ndim else x
    return x, dim, keepdim, builtin_max(count - correction, 0), mean_keep


builtin_max = max


def var(ctx, g):
    x, dim, keepdim, denominator, mean_keep = _var_parts(ctx)
    return fit(_expand_back(g, x, dim, keepdim) * 2 * (x - mean_keep) / denominator, x),


def std(ctx, g):
    x, dim, keepdim, denominator, mean_keep = _var_parts(ctx)
    result = _result(ctx, lambda: A.std(*ctx.args, **ctx.kwargs))
    return fit(_expand_back(g / result, x, dim, keepdim) * (x - mean_keep) / denominator, x),


def _evenly_to_extremes(g, x, value, dim, keepdim):
    """The gradient of an amax/amin, shared evenly between tied extreme elements, as PyTorch does."""
    value_back = _expand_back(value, x, dim, keepdim)
    mask = (x == value_back).to(g.dtype)
    count = _expand_back(mask.sum(dim=_reduced_dims(x, dim), keepdim=keepdim), x, dim, keepdim)
    return _expand_back(g, x, dim, keepdim) * mask / count


def _extreme_rule(function_name):
    def rule(ctx, g, *rest):
        x = ctx.args[0]
        dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim")
        keepdim = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("keepdim", False)
        if isinstance(dim, Tensor):
            return _extremum(lambda a, b: a >= b if function_name == "max" else a <= b)(ctx, g)
        if dim is None:
            return fit(_evenly_to_extremes(g, x, ctx.result, None, False), x), None, None
        indices = _plain(ctx.result[1])
        axis = dim % x.ndim if x.ndim else 0
        if x.ndim == 0:
            return fit(g, x), None, None
        index = indices if keepdim else indices.unsqueeze(axis)
        grad = g if keepdim else g.unsqueeze(axis)
        return fit(A.zeros_like(x, dtype=g.dtype).scatter(axis, index, grad), x), None, None
    return rule


max = _extreme_rule("max")
min = _extreme_rule("min")


def _plain(tensor):
    return tensor.detach()


def _amax_rule(ctx, g):
    x, dim, keepdim = _reduction_arguments(ctx)
    return fit(_evenly_to_extremes(g, x, ctx.result, dim, keepdim), x), None, None


amax = amin = _amax_rule


def norm(ctx, g):
    x = ctx.args[0]
    p = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("p", "fro")
    dim = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dim")
    keepdim = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs.get("keepdim", False)
    result = _result(ctx, lambda: A.norm(*ctx.args, **ctx.kwargs))
    back = _expand_back(result, x, dim, keepdim)
    grad = _expand_back(g, x, dim, keepdim)
    if p in ("fro", 2, 2.0):
        local = A.where(back == 0, 0.0, x / back)
    elif p == 1:
        local = A.sign(x)
    elif p in (math.inf, -math.inf):
        magnitude = A.abs(x)
        mask = (magnitude == back).to(x.dtype)
        count = _expand_back(mask.sum(dim=_reduced_dims(x, dim), keepdim=keepdim), x, dim, keepdim)
        local = A.sign(x) * mask / count
    elif p == 0:
        local = x * 0
    else:
        local = A.where(back == 0, 0.0, x * A.abs(x) ** (p - 2) / back ** (p - 1))
    return fit(grad * local, x),


def logsumexp(ctx, g):
    x, dim, keepdim = _reduction_arguments(ctx)
    result = _result(ctx, lambda: A.logsumexp(x, dim, keepdim))
    return fit(_expand_back(g, x, dim, keepdim) * A.exp(x - _expand_back(result, x, dim, keepdim)), x),


def cumsum(ctx, g):
    x = ctx.args[0]
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs["dim"]
    if x.ndim == 0:
        return fit(g, x),
    return fit(A.flip(A.cumsum(A.flip(g, (dim,)), dim), (dim,)), x),


def cumprod(ctx, g):
    x = ctx.args[0]
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs["dim"]
    if x.ndim == 0:
        return fit(g, x),
    axis = dim % x.ndim
    length = x.shape[axis]
    # grad_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k, exact with zeros (quadratic in the dimension)
    moved = A.movedim(x, axis, -1)
    grad_moved = A.movedim(g, axis, -1)
    index = A.arange(length, device=x.device)
    keep = (index.unsqueeze(0) != index.unsqueeze(1))  # [i, k]: k != i
    upto = (index.unsqueeze(0) <= index.unsqueeze(1))  # [j, k]: k <= j
    factors = A.where(keep.unsqueeze(1) & upto.unsqueeze(0), moved.unsqueeze(-2).unsqueeze(-2), 1.0)
    products = factors.prod(-1)  # [..., i, j]
    later = (index.unsqueeze(0) >= index.unsqueeze(1)).to(x.dtype)  # [i, j]: j >= i
    grad = (products * later * grad_moved.unsqueeze(-2)).sum(-1)
    return fit(A.movedim(grad, -1, axis), x),


# ----- linear algebra ------------------------------------------------------------------------------------------
def matmul(ctx, g):
    a, b = ctx.args[:2]
    a2 = a.unsqueeze(0) if a.ndim == 1 else a
    b2 = b.unsqueeze(-1) if b.ndim == 1 else b
    g2 = g
    if a.ndim == 1:
        g2 = g2.unsqueeze(-2)
    if b.ndim == 1:
        g2 = g2.unsqueeze(-1)
    grad_a = A.matmul(g2, _conj(b2).mT)
    grad_b = A.matmul(_conj(a2).mT, g2)
    if a.ndim == 1:
        grad_a = grad_a.squeeze(-2)
    if b.ndim == 1:
        grad_b = grad_b.squeeze(-1)
    return fit(grad_a, a), fit(grad_b, b)


mm = bmm = mv = dot = matmul


def inner(ctx, g):
    a, b = ctx.args[:2]
    if a.ndim == 0 or b.ndim == 0:  # inner with a scalar is a product
        return fit(g * _conj(b), a), fit(g * _conj(a), b)
    a2 = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
    b2 = b.reshape(math.prod(b.shape[:-1]), b.shape[-1])
    g2 = g.reshape(a2.shape[0], b2.shape[0])
    return fit(A.matmul(g2, _conj(b2)).reshape(a.shape), a), fit(A.matmul(g2.mT, _conj(a2)).reshape(b.shape), b)


def outer(ctx, g):
    a, b = ctx.args[:2]
    return fit(A.matmul(g, _conj(b)), a), fit(A.matmul(g.mT, _conj(a)), b)


def einsum(ctx, g):
    equation = ctx.args[0].replace(" ", "")
    operands = list(ctx.args[1:]) if not (len(ctx.args) == 2 and isinstance(ctx.args[1], (list, tuple))) \
        else list(ctx.args[1])
    inputs, output = _parse_einsum(equation, operands)
    grads = []
    for k, operand in enumerate(operands):
        others = [op for i, op in enumerate(operands) if i != k]
        other_subscripts = [s for i, s in enumerate(inputs) if i != k]
        available = set(output).union(*other_subscripts) if other_subscripts else set(output)
        target = "".join(dict.fromkeys(c for c in inputs[k] if c in available))
        reduced = A.einsum(",".join([output] + other_subscripts) + "->" + target, g, *[_conj(o) for o in others])
        grads.append(fit(_einsum_expand(reduced, target, inputs[k], operand), operand))
    if len(ctx.args) == 2 and isinstance(ctx.args[1], (list, tuple)):
        return None, grads
    return (None, *grads)


def _parse_einsum(equation, operands):
    if "..." in equation:
        raise RuntimeError("einsum backward: equations with '...' are not supported; spell the dimensions out")
    left, _, output = equation.partition("->")
    inputs = left.split(",")
    if "->" not in equation:
        counts = {}
        for subscripts in inputs:
            for c in subscripts:
                counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    return inputs, output


def _einsum_expand(reduced, target, subscripts, operand):
    """Broadcast a gradient over ``target`` subscripts back to the operand's ``subscripts``."""
    if target == subscripts:
        return reduced
    if len(set(subscripts)) != len(subscripts):
        raise RuntimeError("einsum backward: a subscript repeated within one operand (a diagonal) is not supported")
    sizes = {c: operand.shape[i] for i, c in enumerate(subscripts)}
    order = [target.index(c) for c in subscripts if c in target]
    shape = [sizes[c] if c in target else 1 for c in subscripts]
    return reduced.permute(order).reshape(shape).expand(operand.shape)


# ----- shape ---------------------------------------------------------------------------------------------------
def reshape(ctx, g):
    x = ctx.args[0]
    return (fit(g.reshape(x.shape), x),) + (None,) * (len(ctx.args) - 1)


view = flatten = unflatten = squeeze = unsqueeze = reshape_as = view_as = contiguous = reshape


def permute(ctx, g):
    x = ctx.args[0]
    dims = ctx.args[1:] if len(ctx.args) > 2 or not isinstance(ctx.args[1], (tuple, list)) else ctx.args[1]
    dims = [d % x.ndim for d in dims]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return (fit(g.permute(inverse), x),) + (None,) * (len(ctx.args) - 1)


def transpose(ctx, g):
    x, dim0, dim1 = ctx.args[:3]
    return fit(g.transpose(dim0, dim1) if x.ndim else g, x), None, None


swapaxes = swapdims = transpose


def t(ctx, g):
    return fit(g.t(), ctx.args[0]),


def matrix_transpose(ctx, g):
    return fit(g.mT, ctx.args[0]),


def reversed_dims(ctx, g):
    return fit(g.permute(tuple(reversed(range(g.ndim)))), ctx.args[0]),


def movedim(ctx, g):
    x, source, destination = ctx.args[:3]
    return fit(A.movedim(g, destination, source), x), None, None


moveaxis = movedim


def expand(ctx, g):
    return (fit(g, ctx.args[0]),) + (None,) * (len(ctx.args) - 1)


expand_as = broadcast_to = expand


def cat(ctx, g):
    tensors = list(ctx.args[0])
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim", 0)
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors
    axis = dim % kept[0].ndim
    pieces = iter(A.split(g, [t.shape[axis] for t in kept], axis))
    grads = [fit(next(pieces), t) if any(t is k for k in kept) else fit(A.zeros_like(t), t) for t in tensors]
    return (grads,) + (None,) * (len(ctx.args) - 1)


concat = concatenate = cat


def stack(ctx, g):
    tensors = list(ctx.args[0])
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim", 0)
    return ([fit(piece, t) for piece, t in zip(A.unbind(g, dim % g.ndim), tensors)],) + (None,) * (len(ctx.args) - 1)


def hstack(ctx, g):
    tensors = list(ctx.args[0])
    axis = 0 if tensors[0].ndim == 1 else 1
    pieces = A.split(g, [t.shape[axis] for t in tensors], axis)
    return [fit(p, t) for p, t in zip(pieces, tensors)],


def vstack(ctx, g):
    tensors = list(ctx.args[0])
    sizes = [1 if t.ndim == 1 else t.shape[0] for t in tensors]
    pieces = A.split(g, sizes, 0)
    return [fit(p.reshape(t.shape), t) for p, t in zip(pieces, tensors)],


def _pieces_rule(ctx, *grads):
    x = ctx.args[0]
    dim = _split_dim(ctx)
    return (fit(A.cat(list(grads), dim % x.ndim), x),) + (None,) * (len(ctx.args) - 1)


def _split_dim(ctx):
    return ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dim", 0)


split = chunk = tensor_split = _pieces_rule


def unbind(ctx, *grads):
    x = ctx.args[0]
    dim = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("dim", 0)
    return (fit(A.stack(list(grads), dim % x.ndim), x),) + (None,) * (len(ctx.args) - 1)


def narrow(ctx, g):
    x, dim, start, length = ctx.args[:4]
    axis = dim % x.ndim
    start = start + x.shape[axis] if start < 0 else start
    grad = A.zeros_like(x, dtype=g.dtype)
    index = [slice(None)] * x.ndim
    index[axis] = slice(start, start + length)
    grad[tuple(index)] = g
    return fit(grad, x), None, None, None


def flip(ctx, g):
    x = ctx.args[0]
    dims = ctx.args[1] if len(ctx.args) == 2 else ctx.args[1:]
    return (fit(A.flip(g, dims), x),) + (None,) * (len(ctx.args) - 1)


fliplr = lambda ctx, g: (fit(A.flip(g, (1,)), ctx.args[0]),)  # noqa: E731
flipud = lambda ctx, g: (fit(A.flip(g, (0,)), ctx.args[0]),)  # noqa: E731


def roll(ctx, g):
    x = ctx.args[0]
    shifts = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs["shifts"]
    dims = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dims")
    negated = -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)
    return fit(A.roll(g, negated, dims), x), None, None


def _sum_tiles(g, x, sizes):
    """The gradient of tiling ``x`` ``sizes`` times: the tiles' gradients added up."""
    lead = len(sizes) - x.ndim
    grad = g.reshape((-1,) + tuple(g.shape[lead:])).sum(0) if lead else g
    shape = []
    for count, size in zip(sizes[lead:], x.shape):
        shape.extend([count, size])
    return grad.reshape(shape).sum(dim=tuple(range(0, len(shape), 2))) if shape else grad


def repeat(ctx, g):
    x = ctx.args[0]
    sizes = ctx.args[1:] if len(ctx.args) > 2 or not isinstance(ctx.args[1], (tuple, list)) else ctx.args[1]
    return (fit(_sum_tiles(g, x, list(sizes)), x),) + (None,) * (len(ctx.args) - 1)


def tile(ctx, g):
    x, dims = ctx.args[:2]
    return fit(_sum_tiles(g, x, [1] * (x.ndim - len(dims)) + list(dims)), x), None


def repeat_interleave(ctx, g):
    x = ctx.args[0]
    repeats = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs["repeats"]
    dim = ctx.args[2] if len(ctx.args) > 2 else ctx.kwargs.get("dim")
    source = x.reshape(-1) if dim is None else x
    axis = 0 if dim is None else dim % x.ndim
    if isinstance(repeats, Tensor):
        counts = repeats.expand(source.shape[axis]) if repeats.numel() == 1 else repeats
        owner = A.repeat_interleave(A.arange(source.shape[axis], device=g.device), counts)
    else:
        owner = A.repeat_interleave(A.arange(source.shape[axis], device=g.device), repeats)
    grad = A.zeros_like(source, dtype=g.dtype).index_add(axis, owner, g)
    return fit(grad.reshape(x.shape), x), None, None


def tril(ctx, g):
    diagonal = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("diagonal", 0)
    return fit(A.tril(g, diagonal), ctx.args[0]), None


def triu(ctx, g):
    diagonal = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("diagonal", 0)
    return fit(A.triu(g, diagonal), ctx.args[0]), None


def diagonal(ctx, g):
    x = ctx.args[0]
    offset, dim1, dim2 = (list(ctx.args[1:4]) + [0, 0, 1][len(ctx.args) - 1:])[:3]
    offset = ctx.kwargs.get("offset", offset)
    dim1 = ctx.kwargs.get("dim1", dim1) % x.ndim
    dim2 = ctx.kwargs.get("dim2", dim2) % x.ndim
    grad = A.zeros_like(x, dtype=g.dtype)
    moved = A.movedim(grad, (dim1, dim2), (-2, -1))
    length = g.shape[-1]
    positions = A.arange(length, device=g.device)
    rows = positions + builtin_max(-offset, 0)
    columns = positions + builtin_max(offset, 0)
    moved[..., rows, columns] = g
    return (fit(A.movedim(moved, (-2, -1), (dim1, dim2)), x),) + (None,) * (len(ctx.args) - 1)


def diag(ctx, g):
    x = ctx.args[0]
    offset = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("diagonal", 0)
    if x.ndim == 1:
        return fit(A.diagonal(g, offset), x), None
    return fit(_diag_embed(g, x, offset), x), None


def _diag_embed(g, x, offset):
    """Zeros shaped like the matrix ``x`` with ``g`` on its ``offset`` diagonal."""
    grad = A.zeros_like(x, dtype=g.dtype)
    positions = A.arange(g.shape[0], device=g.device)
    grad[positions + builtin_max(-offset, 0), positions + builtin_max(offset, 0)] = g
    return grad


# ----- indexing ------------------------------------------------------------------------------------------------
def getitem(ctx, g):
    x, key = ctx.args[:2]
    grad = A.zeros_like(x, dtype=g.dtype)
    _index_accumulate(grad, key, g)
    return fit(grad, x), None


def _index_accumulate(target, key, values):
    """``target[key] += values``, adding repeated advanced indices up (not last-write-wins)."""
    from ..ops.indexing import _normalize_key

    index = _normalize_key(target, key)
    device = target._device
    array = target._data
    source = values._data
    advanced = any(not isinstance(item, (slice, int, type(None), type(Ellipsis), bool)) for item in index)
    with _backend.on(device):
        if not advanced:
            array[index] += source
        elif device.type == "cpu":
            numpy.add.at(array, index, source)
        else:
            import cupyx

            selected_shape = array[index].shape
            cupyx.scatter_add(array, index, _backend.namespace(device).broadcast_to(source, selected_shape))


def gather(ctx, g):
    x, dim, index = ctx.args[:3]
    axis = dim % x.ndim if x.ndim else 0
    return fit(A.zeros_like(x, dtype=g.dtype).scatter_add(axis, index, g), x), None, None


def scatter(ctx, g):
    x, dim, index = ctx.args[:3]
    source = ctx.args[3] if len(ctx.args) > 3 else ctx.kwargs.get("src", ctx.kwargs.get("value"))
    if ctx.kwargs.get("reduce") is not None:
        raise RuntimeError("scatter(reduce=...) is not differentiable; use scatter_add")
    axis = dim % x.ndim if x.ndim else 0
    grad_x = g.scatter(axis, index, 0.0)
    grad_source = g.gather(axis, index) if isinstance(source, Tensor) else None
    return fit(grad_x, x), None, None, fit(grad_source, source)


def scatter_add(ctx, g):
    x, dim, index, source = ctx.args[:4]
    axis = dim % x.ndim if x.ndim else 0
    return fit(g, x), None, None, fit(g.gather(axis, index), source)


def index_select(ctx, g):
    x, dim, index = ctx.args[:3]
    axis = dim % x.ndim if x.ndim else 0
    return fit(A.zeros_like(x, dtype=g.dtype).index_add(axis, index.reshape(-1), g), x), None, None


def index_add(ctx, g):
    x, dim, index, source = ctx.args[:4]
    alpha = ctx.args[4] if len(ctx.args) > 4 else ctx.kwargs.get("alpha", 1)
    axis = dim % x.ndim if x.ndim else 0
    return fit(g, x), None, None, fit(A.index_select(g, axis, index) * alpha, source)


def masked_fill(ctx, g):
    x, mask, value = ctx.args[:3]
    grad_value = A.where(mask, g, 0.0).sum() if isinstance(value, Tensor) else None
    return fit(g.masked_fill(mask, 0.0), x), None, fit(grad_value, value)


def masked_select(ctx, g):
    x, mask = ctx.args[:2]
    shape = A.broadcast_shapes(x.shape, mask.shape)
    grad = A.zeros(shape, dtype=g.dtype, device=g.device)
    grad[mask.expand(shape)] = g
    return fit(grad, x), None


def take(ctx, g):
    x, index = ctx.args[:2]
    grad = A.zeros(x.numel(), dtype=g.dtype, device=g.device)
    _index_accumulate(grad, index.reshape(-1), g.reshape(-1))
    return fit(grad.reshape(x.shape), x), None


# ----- copies and conversions ----------------------------------------------------------------------------------
def clone(ctx, g):
    return fit(g, ctx.args[0]),


def conversion(ctx, g):
    """``to``/``cuda``/``cpu``/``float``/``type``...: the gradient goes back to the input's device and dtype."""
    return (fit(g, ctx.args[0]),) + (None,) * (len(ctx.args) - 1)


class _Swapped:
    """A context whose first two arguments are exchanged: reflected operators reuse the forward rules."""

    __slots__ = ("args", "kwargs", "result")

    def __init__(self, ctx):
        self.args = (ctx.args[1], ctx.args[0]) + tuple(ctx.args[2:])
        self.kwargs = ctx.kwargs
        self.result = ctx.result


def reflected(rule):
    """The rule of ``other <op> self`` called as ``self.__r<op>__(other)``."""
    def swapped(ctx, g):
        grads = rule(_Swapped(ctx), g)
        return (grads[1], grads[0]) + tuple(grads[2:])
    return swapped
