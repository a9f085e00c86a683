"""embedding (with padding_idx, max_norm and scale_grad_by_freq) and one_hot."""

import agnostic

from ...autograd import Function, no_grad


class _Embedding(Function):
    """Rows of ``weight`` at ``indices``; the gradient skips ``padding_idx`` and, with ``scale_by_freq``, is divided
    by how often each index occurs in the batch."""

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_by_freq):
        ctx.save_for_backward(indices)
        ctx.options = (tuple(weight.shape), padding_idx, scale_by_freq)
        flat = indices.reshape(-1)
        return agnostic.index_select(weight, 0, flat).reshape(tuple(indices.shape) + (weight.shape[1],))

    @staticmethod
    def backward(ctx, grad):
        indices, = ctx.saved_tensors
        (rows, dim), padding_idx, scale_by_freq = ctx.options
        flat = indices.reshape(-1).long()
        grad = grad.reshape(-1, dim)
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
        return grad_weight, None, None, None


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

    ``padding_idx`` rows get no gradient; ``max_norm`` renormalizes the used rows in place first.

        >>> import agnostic.nn.functional as F
        >>> weight = agnostic.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 4.0]])
        >>> F.embedding(agnostic.tensor([2, 0, 2]), weight)
        tensor([[2., 4.],
                [0., 0.],
                [2., 4.]])
    """
    if input.dtype not in (agnostic.int64, agnostic.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    if sparse:
        raise NotImplementedError("embedding(sparse=True): sparse gradients are not supported; use sparse=False")
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
    return _Embedding.apply(weight, input, padding_idx, scale_grad_by_freq)


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
