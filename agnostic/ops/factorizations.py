"""LAPACK-style factorizations PyTorch keeps at top level (geqrf, orgqr, ormqr), lobpcg, and the last Tensor methods
PyTorch has beside them (nonzero_static, slice_inverse)."""

from .. import _dtypes
from .._tensor import wrap
from ..linalg import _torch_name, eigh, householder_product, matrix_norm, solve, vector_norm
from ._dispatch import check_same_device, check_tensor
from ._registry import composite, public_names
from .creation import eye, full, zeros
from .random import randn
from .indexing import nonzero
from .linalg import return_type
from .shape import cat, stack
from .strided import as_strided

geqrf_result = return_type("geqrf", ["a", "tau"])
_LOW_PRECISION = (_dtypes.float16, _dtypes.bfloat16)


def _check_lapack_operand(name, value, position, argument):
    """PyTorch's checks of a LAPACK routine's operand: a float32, float64 or complex tensor."""
    check_tensor(name, value, position, argument)
    if not (value.dtype.is_floating_point or value.dtype.is_complex) or value.dtype in _LOW_PRECISION:
        raise NotImplementedError(f'"{name}" not implemented for \'{_torch_name(value.dtype)}\': it takes float32, '
                                  "float64 or complex tensors; convert with .float() or .double()")


def _geqrf_not_differentiable(grad, input):
    raise NotImplementedError("the derivative for 'geqrf' is not implemented.")


@composite(out="cast", gradients={"input": _geqrf_not_differentiable})
def geqrf(input):
    """``(a, tau)``: the QR factorization of each matrix of ``input`` in LAPACK's packed form (``geqrf``), as
    ``torch.geqrf``: R on and above the diagonal of ``a``, the Householder vectors below it (their leading 1 left
    out), and the reflectors' scales ``tau`` (``..., min(m, n)``). ``orgqr`` makes Q from them, ``ormqr`` multiplies
    by Q. Not differentiable (use ``agnostic.linalg.qr`` for gradients).

        >>> a, tau = agnostic.geqrf(agnostic.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> a
        tensor([[-5.0000, -2.2000],
                [ 0.5000,  0.4000]])
        >>> tau
        tensor([1.6000, 0.0000])
    """
    _check_lapack_operand("geqrf", input, 1, "input")
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    device = input._device
    backend = device.backend
    with backend.activate():
        factored, scales = backend.ops.geqrf(input._data)
    return geqrf_result(wrap(factored, device), wrap(scales, device))


@composite()
def orgqr(input, tau):
    """The Q of a QR factorization from ``geqrf``'s packed form: the first ``n`` columns of the product of the
    Householder reflectors, as ``torch.orgqr`` (``agnostic.linalg.householder_product``). Differentiable.

        >>> A = agnostic.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> agnostic.orgqr(*agnostic.geqrf(A))
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]])
    """
    return householder_product(input, tau)


def _check_ormqr(input, tau, other, left):
    for position, (argument, value) in enumerate((("input", input), ("tau", tau), ("other", other)), start=1):
        _check_lapack_operand("ormqr", value, position, argument)
    check_same_device(input, tau, other)
    if input.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError("torch.ormqr: other must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to input.shape[-2]")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(f"torch.ormqr: Expected tau to have one dimension less than input, but got tau.ndim "
                           f"equal to {tau.ndim} and input.ndim is equal to {input.ndim}")
    if tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to min(other.shape[{side}], "
                           "input.shape[-1])")
    if input.ndim != other.ndim:
        raise RuntimeError(f"torch.ormqr: Expected other to have the same number of dimensions as input, but got "
                           f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]) or tuple(other.shape[:-2]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"torch.ormqr: Expected batch dimensions of tau and other to be equal to "
                           f"input.shape[:-2] = {tuple(input.shape[:-2])}, but got {tuple(tau.shape[:-1])} and "
                           f"{tuple(other.shape[:-2])}")
    for argument, value in (("tau", tau), ("other", other)):
        if value.dtype is not input.dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {argument} to have the same dtype, but input has "
                               f"dtype {_torch_name(input.dtype)} and {argument} has dtype "
                               f"{_torch_name(value.dtype)}; convert one with .to()")


@composite(out=True)
def ormqr(input, tau, other, left=True, transpose=False):
    """``op(Q) @ other`` (``left``; else ``other @ op(Q)``), where Q is the product of the Householder reflectors
    in ``geqrf``'s packed form ``(input, tau)`` and ``op`` is the conjugate transpose when ``transpose``, as
    ``torch.ormqr``. Differentiable.

        >>> A = agnostic.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> a, tau = agnostic.geqrf(A)
        >>> agnostic.ormqr(a, tau, A, transpose=True)  # Q^T A = R
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    _check_ormqr(input, tau, other, left)
    size, reflectors = input.shape[-2], tau.shape[-1]
    vectors = input[..., :, :reflectors]
    if reflectors < size:  # the square Q of every reflector: householder_product keeps as many columns as given
        padding = zeros(*input.shape[:-1], size - reflectors, dtype=input.dtype, device=input.device)
        vectors = cat([vectors, padding], -1)
    q = householder_product(vectors, tau)
    if transpose:
        q = q.mT.conj()
    return q.matmul(other) if left else other.matmul(q)


@composite()
def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero(input)`` with exactly ``size`` rows, as ``torch.nonzero_static``: the first ``size`` indices,
    padded with rows of ``fill_value`` where there are fewer (a shape known before the values are).

        >>> agnostic.nonzero_static(agnostic.tensor([[1, 0], [3, 2]]), size=4)
        tensor([[ 0,  0],
                [ 1,  0],
                [ 1,  1],
                [-1, -1]])
    """
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not {type(size).__name__}")
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    found = nonzero(input)
    if found.shape[0] >= size:
        return found[:size].contiguous()
    padding = full((size - found.shape[0], found.shape[1]), fill_value, dtype=found.dtype, device=found.device)
    return cat([found, padding])


@composite()
def slice_inverse(input, src, dim=0, start=None, end=None, step=1):
    """The inverse of slicing, as ``torch.slice_inverse``: a view of ``input``'s memory with ``src``'s size, strides
    and offset, where ``input`` is the slice ``src[start:end:step]`` along ``dim`` (those arguments name the slice;
    the view comes from ``src``'s geometry alone).

        >>> base = agnostic.arange(6.0)
        >>> piece = base[1:5:2]
        >>> agnostic.slice_inverse(piece, base, 0, 1, 5, 2)
        tensor([0., 1., 2., 3., 4., 5.])
    """
    check_tensor("slice_inverse", src, 1, "src")
    return as_strided(input, src.shape, src.stride(), src.storage_offset())


# ----- lobpcg -----------------------------------------------------------------------------------------------------
_LOBPCG_TOLERANCES = {"float32": 1.2e-07, "float64": 2.23e-16}


def _times(M, V):
    return V if M is None else M.matmul(V)


def _orthonormal_basis(S, B):
    """A ``B``-orthonormal basis of the span of ``S``'s columns (``B`` None: the identity), nearly dependent
    columns dropped: the columns are scaled to unit norm, then orthonormalized twice through the eigenvectors of
    their Gram matrix (once loses up to half the digits; twice recovers them)."""
    S = S / vector_norm(S, dim=0, keepdim=True).clamp_min(_dtypes.finfo(S.dtype.to_real()).tiny)
    for _ in range(2):
        gram = S.mH.matmul(_times(B, S))
        values, vectors = eigh((gram + gram.mH) / 2)
        keep = values > values[-1] * (_dtypes.finfo(values.dtype).eps * S.shape[0] * 10)
        S = S.matmul(vectors[:, keep] / values[keep].sqrt().to(S.dtype))
    return S


def _rayleigh_ritz(A, basis, count, largest):
    """The ``count`` extreme eigenpairs of ``A`` in the span of the orthonormal ``basis``: (values, vectors)."""
    projected = basis.mH.matmul(A.matmul(basis))
    values, vectors = eigh((projected + projected.mH) / 2)
    if largest:
        return values[-count:].flip(-1), basis.matmul(vectors[:, -count:].flip(-1))
    return values[:count], basis.matmul(vectors[:, :count])


def _lobpcg_one(A, B, X, iK, k, niter, tol, largest):
    """LOBPCG on one matrix: the Rayleigh-Ritz step over [X, preconditioned residuals, previous directions] until
    the first ``k`` residuals fall below ``tol`` (relative to the norms of A, B and X), or ``niter`` steps."""
    count = X.shape[-1]
    A_norm = matrix_norm(A)
    B_norm = 1.0 if B is None else matrix_norm(B)
    E, X = _rayleigh_ritz(A, _orthonormal_basis(X, B), count, largest)
    directions = None
    for _ in range(niter):
        residuals = A.matmul(X) - _times(B, X) * E.to(X.dtype)
        errors = vector_norm(residuals, dim=0) / (vector_norm(X, dim=0) * (A_norm + E.abs() * B_norm))
        if bool((errors[:k] < tol).all()):
            break
        search = [X, _times(iK, residuals)] + ([directions] if directions is not None else [])
        E, new_X = _rayleigh_ritz(A, _orthonormal_basis(cat(search, -1), B), count, largest)
        # the step taken, B-orthogonal to the old X: with X it spans what [X, P] spans in LOBPCG
        directions = new_X - X.matmul(X.mH.matmul(_times(B, new_X)))
        X = new_X
    return E[:k], X[:, :k]


def _lobpcg_gradient(grads, A, B, result):
    """The gradient of the k computed eigenpairs (E, U) of a symmetric ``A`` (PyTorch's lobpcg backward): within
    span(U), ``U ((U^T gU) * F + diag(gE)) U^T`` with ``F_ji = 1 / (E_i - E_j)``; outside it, ``Y U^T`` with
    ``Y_i = (E_i - A)^+ (I - U U^T) gU_i``, solved with span(U) shifted away so that the system is regular; then
    symmetrized, as PyTorch's."""
    if B is not None:
        raise ValueError("lobpcg.backward does not support backward with B != I yet.")
    if A.dtype.is_complex:
        raise ValueError("lobpcg.backward does not support complex input yet. Note that lobpcg.forward does though.")
    E, U = result
    grad_E, grad_U = grads
    size, count = U.shape[-2], U.shape[-1]
    differences = E.unsqueeze(-2) - E.unsqueeze(-1)  # [j, i] = E_i - E_j
    identity_k = eye(count, dtype=E.dtype, device=E.device)
    inverse = (1 - identity_k) / (differences + identity_k)
    Ut = U.mT
    projected = Ut.matmul(grad_U)
    inside = U.matmul((projected * inverse + grad_E.diag_embed()).matmul(Ut))
    outside_grad = grad_U - U.matmul(projected)
    shift = 2 * matrix_norm(A).unsqueeze(-1).unsqueeze(-1).unsqueeze(-1) + 1
    identity = eye(size, dtype=A.dtype, device=A.device)
    systems = (E.unsqueeze(-1).unsqueeze(-1) * identity - A.unsqueeze(-3)
               + shift * U.matmul(Ut).unsqueeze(-3))
    Y = solve(systems, outside_grad.mT.unsqueeze(-1)).squeeze(-1).mT
    gradient = inside + Y.matmul(Ut)
    return (gradient + gradient.mT) / 2  # A is symmetric: PyTorch's gradient is too


@composite(gradients={"A": _lobpcg_gradient})
def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """``(E, X)``: the ``k`` largest (``largest=False``: smallest) eigenvalues of the symmetric (Hermitian)
    ``A x = E B x`` problem and their eigenvectors, by LOBPCG (Knyazev's locally optimal block preconditioned
    conjugate gradient), as ``torch.lobpcg``: ``X`` (m x n) the initial block (random normal by default), ``iK``
    a preconditioner, ``niter`` (default 1000) the most steps, ``tol`` the relative residual (default: the square
    root of the dtype's epsilon); m must be at least 3n. Batched over A's leading dimensions; differentiable in
    ``A`` (with ``B`` None). Every ``method`` runs agnostic's one Rayleigh-Ritz iteration (PyTorch's "ortho" and
    "basic" differ in how they orthogonalize); ``tracker`` is called with None after each matrix.

        >>> A = agnostic.diag(agnostic.arange(1.0, 11.0, dtype=agnostic.float64))
        >>> E, X = agnostic.lobpcg(A, k=2)
        >>> [round(value, 6) for value in E.tolist()]
        [10.0, 9.0]
    """
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {tuple(A.shape)} vs {tuple(B.shape)}")
    if method not in (None, "ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', got {method!r}")
    dtype = A.dtype if A.dtype.is_floating_point or A.dtype.is_complex else _dtypes.float32
    if tol is None:
        tol = _LOBPCG_TOLERANCES.get(dtype.to_real().name, _LOBPCG_TOLERANCES["float32"]) ** 0.5
    size = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if size < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={size}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    batch = tuple(A.shape[:-2])
    matrices = A.to(dtype).reshape(-1, size, size)
    Bs = None if B is None else B.to(dtype).reshape(-1, size, size)
    Xs = None if X is None else X.to(dtype).reshape(-1, size, n)
    values, vectors = [], []
    for index in range(matrices.shape[0]):
        start = randn(size, n, dtype=dtype, device=A.device) if Xs is None else Xs[index]
        if tuple(start.shape) != (size, n):
            raise AssertionError(f"X shape mismatch: got {tuple(start.shape)}, expected {(size, n)}")
        E, U = _lobpcg_one(matrices[index], None if Bs is None else Bs[index], start, iK, k, niter, tol, largest)
        values.append(E)
        vectors.append(U)
        if tracker is not None:
            tracker(None)
    return stack(values).reshape(batch + (k,)), stack(vectors).reshape(batch + (size, k))


__all__ = public_names(globals())
