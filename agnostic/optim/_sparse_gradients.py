"""The arithmetic of sparse COO gradients (``nn.Embedding(sparse=True)``'s) against dense tensors, shared by the
optimizers with a sparse update (SGD, Adagrad, SparseAdam)."""

from .._tensor import TensorBase
from ..ops.sparse import sparse_coo_tensor


def is_sparse_gradient(grad):
    """True for a sparse COO gradient (what ``nn.Embedding(sparse=True)`` gives its weight)."""
    return grad is not None and type(grad) is not TensorBase.plain and grad.is_sparse  # a plain Tensor is dense


def add_sparse_(dense, sparse, alpha=1):
    """``dense += alpha * sparse`` in place (repeated indices of an uncoalesced ``sparse`` add up), as PyTorch's
    ``dense.add_(sparse, alpha=alpha)``; returns ``dense``."""
    values = sparse._values()
    if alpha != 1:
        values = values * alpha
    return dense.index_put_(tuple(sparse._indices()), values.to(dense.dtype), accumulate=True)


def values_at(dense, sparse):
    """The entries of ``dense`` at ``sparse``'s indices, one per stored value (``dense.sparse_mask(sparse)``'s
    values, for a coalesced ``sparse``)."""
    return dense[tuple(sparse._indices())]


def like_sparse(sparse, values):
    """A sparse tensor with ``sparse``'s indices (and coalesced flag) and new ``values``."""
    return sparse_coo_tensor(sparse._indices(), values, tuple(sparse.shape), is_coalesced=sparse.is_coalesced())
