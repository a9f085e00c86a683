"""embedding (with padding_idx, max_norm and scale_grad_by_freq), embedding_bag and one_hot."""

import numpy

import agnostic

from ...autograd import Function, no_grad


class _Embedding(Function):
    """Rows of ``weight`` at ``indices``; the gradient skips ``padding_idx`` and, with ``scale_by_freq``, is divided
    by how often each index occurs in the batch. With ``sparse``, the weight's gradient is a sparse COO tensor: one
    entry per looked-up index (uncoalesced, as PyTorch leaves it) holding that position's output gradient."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_by_freq, sparse):
        ctx.save_for_backward(indices)
        ctx.options = (tuple(weight.shape), padding_idx, scale_by_freq, sparse)
        flat = indices.reshape(-1)
        return agnostic.index_select(weight, 0, flat).reshape(tuple(indices.shape) + (weight.shape[1],))

    @staticmethod
    def backward(ctx, grad):
        indices, = ctx.saved_tensors
        (rows, dim), padding_idx, scale_by_freq, sparse = ctx.options
        flat = indices.reshape(-1).long()
        grad = grad.reshape(-1, dim)
        if sparse:
            return _sparse_weight_gradient(grad, flat, (rows, dim), padding_idx, scale_by_freq), None, None, None, None
        keep = agnostic.ones(flat.shape, dtype=grad.dtype, device=grad.device)
        if padding_idx is not None:
            keep = agnostic.where(flat == padding_idx, 0.0, keep)
        if scale_by_freq:
            counts = agnostic.zeros(rows, dtype=grad.dtype, device=grad.device).scatter_add(
                0, flat, agnostic.ones(flat.shape, dtype=grad.dtype, device=grad.device))
            keep = keep / agnostic.index_select(counts, 0, flat)
        grad = agnostic.mul(grad, keep.reshape(-1, 1))
        target = agnostic.zeros((rows, dim), dtype=grad.dtype, device=grad.device)
        grad_weight = agnostic.scatter_add(target, 0, flat.reshape(-1, 1).expand(flat.shape[0], dim), grad)
        return grad_weight, None, None, None, None


def _sparse_weight_gradient(grad, flat, size, padding_idx, scale_by_freq):
    """The weight's gradient as ``torch.embedding_sparse_backward`` makes it: indices ``(1, n)``, values the rows of
    ``grad`` (``(n, dim)``), the positions looking up ``padding_idx`` left out."""
    if scale_by_freq:  # PyTorch refuses it here, at backward time, not when the lookup is made
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    if padding_idx is not None:
        kept = agnostic.nonzero(flat != padding_idx).reshape(-1)
        flat, grad = agnostic.index_select(flat, 0, kept), agnostic.index_select(grad, 0, kept)
    return agnostic.sparse_coo_tensor(flat.reshape(1, -1), grad, size)


def _renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows of ``weight`` that ``indices`` use so their ``norm_type``-norm is at most
    ``max_norm`` (``torch.embedding_renorm_``)."""
    with no_grad():
        rows = indices.reshape(-1)  # repeated rows get the same value written twice: no need to dedupe
        selected = agnostic.index_select(weight.detach(), 0, rows)
        norms = agnostic.norm(selected, norm_type, dim=1, keepdim=True)
        scale = agnostic.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.detach()[rows] = selected * scale


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Look up rows of ``weight`` (num_embeddings, dim) at integer ``input``: output shape ``input.shape + (dim,)``.

    ``padding_idx`` rows get no gradient; ``max_norm`` renormalizes the used rows in place first. With ``sparse``,
    ``weight``'s gradient is a sparse COO tensor with one entry per looked-up index (uncoalesced, as PyTorch's), for
    SGD, Adagrad or SparseAdam; ``scale_grad_by_freq`` is then refused at backward, as in PyTorch.

        >>> import agnostic.nn.functional as F
        >>> weight = agnostic.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]])
        >>> F.embedding(agnostic.tensor([2, 0, 2]), weight)
        tensor([[2., 4.],
                [0., 0.],
                [2., 4.]])
        >>> weight = weight.requires_grad_()
        >>> F.embedding(agnostic.tensor([2, 0, 2]), weight, sparse=True).sum().backward()
        >>> weight.grad
        tensor(indices=tensor([[2, 0, 2]]),
               values=tensor([[1., 1.],
                              [1., 1.],
                              [1., 1.]]),
               size=(3, 2), nnz=3, layout=agnostic.sparse_coo)
        >>> weight.grad.to_dense()
        tensor([[1., 1.],
                [0., 0.],
                [2., 2.]])
    """
    if input.dtype not in (agnostic.int64, agnostic.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    rows = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < rows, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -rows, "Padding_idx must be within num_embeddings"
            padding_idx += rows
    if input.numel() and (bool((input < 0).any()) or bool((input >= rows).any())):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return _Embedding.apply(weight, input, padding_idx, scale_grad_by_freq, bool(sparse))


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape ``tensor.shape + (num_classes,)`` with a 1 at each index (``-1``: max + 1).

        >>> import agnostic.nn.functional as F
        >>> F.one_hot(agnostic.tensor([0, 2, 1]))
        tensor([[1, 0, 0],
                [0, 0, 1],
                [0, 1, 0]])
        >>> F.one_hot(agnostic.tensor([1]), num_classes=4)
        tensor([[0, 1, 0, 0]])
    """
    if tensor.dtype is not agnostic.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        if bool((tensor < 0).any()):
            raise RuntimeError("Class values must be non-negative.")
        if bool((tensor >= num_classes).any()):
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = agnostic.arange(num_classes, device=tensor.device)
    return agnostic.eq(tensor.unsqueeze(-1), classes).long()


def _bag_layout(input, offsets, include_last_offset):
    """Flat indices, and a (bags, longest) host array of each bag's positions in them (-1 past a bag's end)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        bags, length = input.shape
        return input.reshape(-1), numpy.arange(bags * length).reshape(bags, length)
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None or offsets.dim() != 1:
        raise ValueError(f"offsets has to be a 1D Tensor but got {None if offsets is None else offsets.dim()}")
    starts = numpy.asarray(offsets.tolist(), dtype=numpy.int64)  # bag boundaries shape the result: read them once
    total = input.shape[0]
    if starts.size and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if starts.size and starts[-1] > total:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {total} but got offsets[-1] of "
                           f"{starts[-1]}")
    ends = numpy.append(starts[1:], total)
    if include_last_offset:
        starts, ends = starts[:-1], starts[1:]
    if numpy.any(ends < starts):
        raise RuntimeError("offsets must be non-decreasing: each bag has to start at or after the previous one")
    longest = int((ends - starts).max()) if starts.size else 0
    positions = starts[:, None] + numpy.arange(longest)
    return input, numpy.where(positions < ends[:, None], positions, -1)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sum, mean or max of ``weight``'s rows over bags of indices, without materializing the per-index rows'
    output: 2-D ``input`` is one bag per row; 1-D ``input`` is split into bags starting at ``offsets``.

    ``per_sample_weights`` (mode 'sum' only) scales each looked-up row; indices equal to ``padding_idx`` are left
    out of their bag (and of its mean's count); an empty bag gives zeros. ``sparse`` (modes 'sum' and 'mean') makes
    ``weight``'s gradient a sparse COO tensor, one entry per looked-up index, as ``embedding``'s.

        >>> import agnostic.nn.functional as F
        >>> weight = agnostic.tensor([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]])
        >>> F.embedding_bag(agnostic.tensor([0, 1, 2, 2]), weight, agnostic.tensor([0, 3]), mode="sum")
        tensor([[5., 6.],
                [4., 4.]])
        >>> F.embedding_bag(agnostic.tensor([[0, 1], [1, 2]]), weight, mode="max")
        tensor([[1., 2.],
                [4., 4.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      "on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({list(input.shape)})")
    flat, layout = _bag_layout(input, offsets, include_last_offset)
    rows = embedding(flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
    bags, longest = layout.shape
    dim = weight.shape[1]
    device = weight.device
    # Gather into a dense (bags, longest, dim) block; positions past a bag's end read an extra row at the end.
    index = agnostic.tensor(numpy.where(layout < 0, flat.shape[0], layout).reshape(-1), dtype=agnostic.int64,
                            device=device)
    kept = agnostic.cat([flat != (-1 if padding_idx is None else padding_idx % weight.shape[0]),
                         agnostic.zeros(1, dtype=agnostic.bool, device=device)])
    kept = agnostic.index_select(kept, 0, index).reshape(bags, longest, 1)
    filler = agnostic.zeros((1, dim), dtype=weight.dtype, device=device)
    block = agnostic.index_select(agnostic.cat([rows, filler]), 0, index).reshape(bags, longest, dim)
    if mode == "max":
        lowest = -float("inf") if weight.dtype.is_floating_point else agnostic.iinfo(weight.dtype).min
        block = agnostic.where(kept, block, lowest)
        if longest == 0:
            return agnostic.zeros((bags, dim), dtype=weight.dtype, device=device)
        return agnostic.where(kept.any(dim=1), block.max(dim=1).values, 0.0)
    if per_sample_weights is not None:
        scales = agnostic.cat([per_sample_weights.reshape(-1), agnostic.zeros(1, dtype=per_sample_weights.dtype,
                                                                                device=device)])
        block = agnostic.mul(block, agnostic.index_select(scales, 0, index).reshape(bags, longest, 1))
    block = agnostic.where(kept, block, 0.0)
    total = block.sum(dim=1)
    if mode == "sum":
        return total
    counts = kept.sum(dim=1).clamp(min=1).to(weight.dtype)
    return agnostic.div(total, counts)


__all__ = ["embedding", "embedding_bag", "one_hot"]
