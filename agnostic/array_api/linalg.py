"""The standard's ``linalg`` extension over ``agnostic.linalg``, bridged where PyTorch's signatures differ."""

import agnostic
from . import _helpers



def cholesky(x, /, *, upper=False):
    """The Cholesky factor of symmetric positive-definite matrices (upper when ``upper``).

        >>> agnostic.array_api.linalg.cholesky(agnostic.tensor([[4.0, 0.0], [0.0, 9.0]]))
        tensor([[2., 0.],
                [0., 3.]])
    """
    return agnostic.linalg.cholesky(x, upper=upper)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis``.

        >>> agnostic.array_api.linalg.cross(agnostic.tensor([1.0, 0, 0]), agnostic.tensor([0.0, 1, 0]))
        tensor([0., 0., 1.])
    """
    x1, x2 = _helpers.promoted(x1, x2)
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError("cross() needs vectors of size 3 along axis")
    x1, x2 = agnostic.broadcast_tensors(x1, x2)
    return agnostic.linalg.cross(x1, x2, dim=axis)


def det(x, /):
    """The determinant of square matrices.

        >>> agnostic.array_api.linalg.det(agnostic.eye(2))
        tensor(1.)
    """
    return agnostic.linalg.det(x)


def diagonal(x, /, *, offset=0):
    """The ``offset``-th diagonal of the last two axes.

        >>> agnostic.array_api.linalg.diagonal(agnostic.eye(2))
        tensor([1., 1.])
    """
    return agnostic.linalg.diagonal(x, offset=offset)


def eigh(x, /):
    """Eigenvalues (ascending) and eigenvectors of symmetric or Hermitian matrices.

        >>> agnostic.array_api.linalg.eigh(agnostic.eye(2)).eigenvalues
        tensor([1., 1.])
    """
    return agnostic.linalg.eigh(x)


def eigvalsh(x, /):
    """Eigenvalues (ascending) of symmetric or Hermitian matrices.

        >>> agnostic.array_api.linalg.eigvalsh(agnostic.eye(2))
        tensor([1., 1.])
    """
    return agnostic.linalg.eigvalsh(x)


def inv(x, /):
    """The inverse of square matrices.

        >>> agnostic.array_api.linalg.inv(2 * agnostic.eye(2))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.5000]])
    """
    return agnostic.linalg.inv(x)


def matmul(x1, x2, /):
    """Matrix product (``agnostic.array_api.matmul``).

        >>> agnostic.array_api.linalg.matmul(agnostic.ones(1, 2), agnostic.ones(2, 1))
        tensor([[2.]])
    """
    x1, x2 = _helpers.promoted(x1, x2)
    return agnostic.matmul(x1, x2)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """A norm of the matrices of the last two axes.

        >>> agnostic.array_api.linalg.matrix_norm(agnostic.eye(2), ord=1)
        tensor(1.)
    """
    return agnostic.linalg.matrix_norm(x, ord=ord, keepdim=keepdims)


def matrix_power(x, n, /):
    """Square matrices raised to the integer power ``n``.

        >>> agnostic.array_api.linalg.matrix_power(2 * agnostic.eye(2), 2)
        tensor([[4., 0.],
                [0., 4.]])
    """
    return agnostic.linalg.matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    """The number of singular values above ``rtol`` times the largest.

        >>> agnostic.array_api.linalg.matrix_rank(agnostic.eye(3))
        tensor(3)
    """
    return agnostic.linalg.matrix_rank(x, rtol=rtol)


def matrix_transpose(x, /):
    """The transpose of the last two axes.

        >>> agnostic.array_api.linalg.matrix_transpose(agnostic.ones(2, 3)).shape
        agnostic.Size([3, 2])
    """
    return agnostic.swapaxes(x, -1, -2)


def outer(x1, x2, /):
    """The outer product of two vectors.

        >>> agnostic.array_api.linalg.outer(agnostic.tensor([1, 2]), agnostic.tensor([3, 4]))
        tensor([[3, 4],
                [6, 8]])
    """
    x1, x2 = _helpers.promoted(x1, x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError("outer() takes two 1-D arrays")
    return agnostic.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    """The Moore-Penrose pseudo-inverse.

        >>> agnostic.array_api.linalg.pinv(2 * agnostic.eye(2))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.5000]])
    """
    return agnostic.linalg.pinv(x, rtol=rtol)


def qr(x, /, *, mode="reduced"):
    """The QR decomposition (``mode`` ``"reduced"`` or ``"complete"``).

        >>> agnostic.array_api.linalg.qr(agnostic.eye(2)).R.shape
        agnostic.Size([2, 2])
    """
    return agnostic.linalg.qr(x, mode=mode)


def slogdet(x, /):
    """The sign and the log of the absolute value of the determinant.

        >>> agnostic.array_api.linalg.slogdet(agnostic.eye(2)).logabsdet
        tensor(0.)
    """
    return agnostic.linalg.slogdet(x)


def solve(x1, x2, /):
    """The solution ``X`` of ``x1 @ X = x2`` (``x2`` a vector when it is 1-D).

        >>> agnostic.array_api.linalg.solve(2 * agnostic.eye(2), agnostic.tensor([2.0, 4.0]))
        tensor([1., 2.])
    """
    x1, x2 = _helpers.promoted(x1, x2)
    if x2.ndim == 1:
        return agnostic.linalg.solve(x1, x2.reshape(-1, 1).expand(*x1.shape[:-1], 1)).squeeze(-1)
    return agnostic.linalg.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    """The singular value decomposition ``U, S, Vh``.

        >>> agnostic.array_api.linalg.svd(agnostic.eye(2)).S
        tensor([1., 1.])
    """
    return agnostic.linalg.svd(x, full_matrices=full_matrices)


def svdvals(x, /):
    """The singular values, descending.

        >>> agnostic.array_api.linalg.svdvals(agnostic.eye(2))
        tensor([1., 1.])
    """
    return agnostic.linalg.svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    """Contraction over ``axes`` (``agnostic.array_api.tensordot``).

        >>> agnostic.array_api.linalg.tensordot(agnostic.ones(2), agnostic.ones(2), axes=1)
        tensor(2.)
    """
    x1, x2 = _helpers.promoted(x1, x2)
    if not isinstance(axes, int):
        axes = (list(axes[0]), list(axes[1]))
    return agnostic.tensordot(x1, x2, dims=axes)


def trace(x, /, *, offset=0, dtype=None):
    """The sum of the ``offset``-th diagonal of the last two axes (integers accumulate in int64).

        >>> agnostic.array_api.linalg.trace(agnostic.eye(3))
        tensor(3.)
    """
    diagonal_values = agnostic.linalg.diagonal(x, offset=offset)
    if dtype is None:
        dtype = agnostic.int64 if diagonal_values.dtype in _helpers.INTEGERS else diagonal_values.dtype
    return agnostic.sum(diagonal_values.to(dtype), dim=-1)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along ``axis`` (``x1`` conjugated).

        >>> agnostic.array_api.linalg.vecdot(agnostic.tensor([1.0, 2.0]), agnostic.tensor([3.0, 4.0]))
        tensor(11.)
    """
    x1, x2 = _helpers.promoted(x1, x2)
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot() needs equal sizes along axis {axis}")
    product = (agnostic.conj(x1) if x1.dtype.is_complex else x1) * x2
    return agnostic.sum(product, dim=axis, dtype=product.dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """A vector norm over ``axis`` (all axes by default).

        >>> agnostic.array_api.linalg.vector_norm(agnostic.tensor([3.0, 4.0]))
        tensor(5.)
    """
    if axis == ():
        return agnostic.abs(x) if ord != 0 else (x != 0).to(x.dtype)
    return agnostic.linalg.vector_norm(x, ord=ord, dim=axis, keepdim=keepdims)


__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul", "matrix_norm",
           "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve", "svd",
           "svdvals", "tensordot", "trace", "vecdot", "vector_norm"]
