"""agnostic.sparse: functions on sparse tensors (products, reductions, softmax), as ``torch.sparse``."""

from .._tensor import _normalize_dim
from ..ops._registry import composite, public_names
from ..ops.creation import zeros
from ..ops.indexing import index_add, index_select
from ..ops.sparse import _as_coo, _coalesced, _convert, _like, _linear, _matmul, _sparse_operand, _sum


@composite(namespace="agnostic.sparse", method=False)
def mm(mat1, mat2):
    """The product of a sparse matrix and a dense one (dense result), differentiable in both (the sparse operand's
    gradient reaches its values), as ``torch.sparse.mm``.

        >>> s = agnostic.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> agnostic.sparse.mm(s, agnostic.ones(2, 1))
        tensor([[2.],
                [3.]])
    """
    return _matmul(_sparse_operand(mat1, "sparse.mm"), mat2, "sparse.mm")


@composite(namespace="agnostic.sparse", method=False)
def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse and ``mat`` dense, as ``torch.sparse.addmm``.

        >>> s = agnostic.sparse_coo_tensor([[0], [1]], [2.0], (2, 2))
        >>> agnostic.sparse.addmm(agnostic.ones(2, 2), s, agnostic.ones(2, 2), alpha=0.5)
        tensor([[2., 2.],
                [1., 1.]])
    """
    product = _matmul(_sparse_operand(mat1, "sparse.addmm"), mat2, "sparse.addmm")
    return mat * beta + product * alpha


@composite(namespace="agnostic.sparse", method=False)
def sampled_addmm(input, mat1, mat2, *, beta=1.0, alpha=1.0, out=None):
    """``beta * input + alpha * (mat1 @ mat2)`` computed only where the sparse ``input`` has entries (its layout and
    indices), as ``torch.sparse.sampled_addmm``; differentiable in all three.

        >>> mask = agnostic.eye(2).to_sparse_csr()
        >>> agnostic.sparse.sampled_addmm(mask, agnostic.ones(2, 3), agnostic.ones(3, 2)).values()
        tensor([4., 4.])
    """
    if out is not None:
        raise RuntimeError("sparse.sampled_addmm(out=...) is not supported; assign the result instead")
    coo = _coalesced(_as_coo(_sparse_operand(input, "sparse.sampled_addmm")))
    if coo.dense_dim() or mat1.ndim != 2 or mat2.ndim != 2 or mat1.shape[1] != mat2.shape[0] \
            or (mat1.shape[0], mat2.shape[1]) != tuple(coo.shape):
        raise RuntimeError(f"sparse.sampled_addmm: expected a {list(coo.shape)} sparse matrix and dense matrices "
                           f"whose product has that size, got {list(mat1.shape)} and {list(mat2.shape)}")
    rows, columns = coo._index_tensor[0], coo._index_tensor[1]
    products = (index_select(mat1, 0, rows) * index_select(mat2, 1, columns).t()).sum(1)
    sampled = _like(coo, coo._value_tensor * beta + products * alpha)
    return _convert(sampled, input.layout, None)


@composite(namespace="agnostic.sparse", method=False)
def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's entries: a dense 0-dim tensor, or over ``dim`` a sparse tensor (dense when every
    sparse dimension is summed), as ``torch.sparse.sum``.

        >>> s = agnostic.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        >>> agnostic.sparse.sum(s)
        tensor(12.)
        >>> agnostic.sparse.sum(s, 0).to_dense()
        tensor([4., 0., 8.])
    """
    return _sum(_sparse_operand(input, "sparse.sum"), dim, dtype)


def _softmax(input, dim, dtype, logarithm, name):
    coo = _coalesced(_as_coo(_sparse_operand(input, name)))
    values = coo._value_tensor if dtype is None else coo._value_tensor.to(dtype)
    dim = _normalize_dim(dim, len(coo._size))
    if dim >= coo._sparse_dim:  # a dense dimension: every value row is complete
        position = dim - coo._sparse_dim + 1
        values = values.log_softmax(position) if logarithm else values.softmax(position)
        return _like(coo, values)
    if values.shape[0] == 0:
        return _like(coo, values)
    # The entries sharing every sparse index but ``dim`` form one group; unspecified elements count as -inf.
    others = [d for d in range(coo._sparse_dim) if d != dim]
    sizes = tuple(coo._size[d] for d in others)
    kept = coo._index_tensor[others] if others else coo._index_tensor[:0]
    group = _linear(kept, sizes)
    count = 1
    for size in sizes:
        count *= size
    shape = (count,) + tuple(values.shape[1:])
    largest = zeros(shape, dtype=values.dtype, device=values.device).index_reduce(
        0, group, values.detach(), "amax", include_self=False)
    shifted = values - index_select(largest, 0, group)
    exponentials = shifted.exp()
    totals = index_add(zeros(shape, dtype=values.dtype, device=values.device), 0, group, exponentials)
    per_entry = index_select(totals, 0, group)
    return _like(coo, shifted - per_entry.log() if logarithm else exponentials / per_entry)


@composite(namespace="agnostic.sparse", method=False)
def softmax(input, dim, dtype=None):
    """Softmax over ``dim`` of a sparse COO tensor's specified entries (unspecified ones count as -inf, so they stay
    unspecified), as ``torch.sparse.softmax``; differentiable with respect to the values.

        >>> s = agnostic.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
        >>> agnostic.sparse.softmax(s, 1).values()
        tensor([1.0000, 0.2689, 0.7311])
    """
    return _softmax(input, dim, dtype, False, "sparse.softmax")


@composite(namespace="agnostic.sparse", method=False)
def log_softmax(input, dim, dtype=None):
    """The logarithm of ``softmax`` over ``dim`` of a sparse COO tensor's specified entries, as
    ``torch.sparse.log_softmax``.

        >>> s = agnostic.sparse_coo_tensor([[0, 0], [0, 1]], [1.0, 1.0], (1, 2))
        >>> agnostic.sparse.log_softmax(s, 1).values()
        tensor([-0.6931, -0.6931])
    """
    return _softmax(input, dim, dtype, True, "sparse.log_softmax")


__all__ = public_names(globals())
