"""agnostic.linalg: linear algebra (norms, inverses, solves, decompositions, least squares), as torch.linalg, with
PyTorch's batching, result dtypes, gradients and error types on every device."""

import builtins
import math

import numpy

from . import _dtypes
from ._tensor import TensorBase, _normalize_dim
from .ops import linalg as _products
from .ops._dispatch import check_same_device, finish
from .fft import _conjugate
from .ops._registry import composite, public_names
from .ops.creation import as_tensor, eye, zeros
from .ops.elementwise import maximum, where
from .ops.shape import cat

_FLOATING = 2
_LOW_PRECISION = (_dtypes.float16, _dtypes.bfloat16)
_TORCH_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double",
                "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


class LinAlgError(RuntimeError):
    """Raised for a singular matrix (``inv``, ``solve``) or one that is not positive-definite (``cholesky``), as
    ``torch.linalg.LinAlgError``; a ``RuntimeError``.

        >>> try:
        ...     agnostic.linalg.inv(agnostic.zeros(2, 2))
        ... except agnostic.linalg.LinAlgError as error:
        ...     print(type(error).__name__)
        LinAlgError
    """


slogdet_result = _products.return_type("linalg_slogdet", ["sign", "logabsdet"])
inv_ex_result = _products.return_type("linalg_inv_ex", ["inverse", "info"])
cholesky_ex_result = _products.return_type("linalg_cholesky_ex", ["L", "info"])
eigh_result = _products.return_type("linalg_eigh", ["eigenvalues", "eigenvectors"])
eig_result = _products.return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
svd_result = _products.return_type("linalg_svd", ["U", "S", "Vh"])
qr_result = _products.return_type("linalg_qr", ["Q", "R"])
lstsq_result = _products.return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


# ----- checks and backend calls -----------------------------------------------------------------------------------
def _torch_name(dtype):
    return _TORCH_NAMES.get(dtype.name, dtype.name)


def _check_floating(name, A, what="input", low_precision=False):
    if not isinstance(A, TensorBase):
        raise TypeError(f"linalg.{name}(): argument '{what}' must be a Tensor, got {type(A).__name__}")
    if A.dtype.category < _FLOATING:
        raise RuntimeError(f"linalg.{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_torch_name(A.dtype)}; convert it with .float() or .double()")
    if A.dtype in _LOW_PRECISION and not low_precision:
        raise RuntimeError(f"linalg.{name}: Low precision dtypes not supported. Got {_torch_name(A.dtype)}; "
                           "convert it with .float()")


def _check_matrix(name, A, square=True, what="A"):
    """Refuse what torch.linalg refuses: non-tensors, integer and half dtypes, fewer than 2 dims, non-square."""
    _check_floating(name, A)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{name}: The input tensor {what} must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{name}: {what} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _call(name, A, *arrays, **kwargs):
    """``xp.linalg.<name>(*arrays)`` on ``A``'s device, through the backend (which raises on singular input)."""
    device = A._device
    with device.backend.activate():
        return device.backend.ops.linalg(name, *arrays, **kwargs)


def _result(array, dtype, device):
    return finish(array, dtype, device)


def _batch_text(A, index):
    return f"(Batch element {index}): " if A.ndim > 2 else ""


def _failing_element(name, A, arrays):
    """The first batch element (flat index) for which ``xp.linalg.<name>`` fails, and the matrices as a batch."""
    flat = [array.reshape((-1,) + array.shape[-2:]) for array in arrays]
    for index in range(flat[0].shape[0]):
        try:
            _call(name, A, *(array[index if array.shape[0] > 1 else 0] for array in flat))
        except numpy.linalg.LinAlgError:
            return index
    return 0


def _leading_minor(A, matrix):
    """The order of the first leading minor of a (failed) Cholesky input that is not positive-definite."""
    for order in range(1, matrix.shape[-1] + 1):
        try:
            _call("cholesky", A, matrix[:order, :order])
        except numpy.linalg.LinAlgError:
            return order
    return matrix.shape[-1]


def _first_batch_matrix(array, index):
    return array.reshape((-1,) + array.shape[-2:])[index]


# ----- norms ------------------------------------------------------------------------------------------------------
def _vector_dims(x, dim):
    if dim is None:
        return tuple(range(x.ndim))
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    normalized = tuple(_normalize_dim(d, x.ndim) for d in dims)
    if len(set(normalized)) != len(normalized):
        raise RuntimeError(f"dim {list(dims)} appears multiple times in the list of dims")
    return normalized


def _unsqueezed(value, dims, keepdim):
    """A reduction's result over ``dims`` with its reduced dims put back (size 1), for broadcasting."""
    if not keepdim:
        for d in sorted(dims):
            value = value.unsqueeze(d)
    return value


def _vector_norm_gradient(grad, x, ord, dim, keepdim, dtype, result):
    if dtype is not None:
        x = x.to(dtype)
    dims = _vector_dims(x, dim) if x.ndim else ()
    norms = _unsqueezed(result, dims, keepdim)
    grad = _unsqueezed(grad, dims, keepdim)
    if ord == 2:
        local = where(norms == 0, 0.0, x / norms)
    elif ord == 1:
        local = x.sgn() if x.dtype.is_complex else x.sign()
    elif ord in (math.inf, -math.inf):
        at_norm = (x.abs() == norms).to(grad.dtype)
        count = _unsqueezed(at_norm.sum(dim=dims, keepdim=keepdim), dims, keepdim)
        local = (x.sgn() if x.dtype.is_complex else x.sign()) * at_norm / count
    elif ord == 0:
        local = x * 0
    else:
        local = where(norms == 0, 0.0, x * x.abs() ** (ord - 2) / norms ** (ord - 1))
    return grad * local


@composite(namespace="agnostic.linalg", method=False, gradients={"x": _vector_norm_gradient})
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (every element by default), as ``torch.linalg.vector_norm``:
    ``ord`` 2, 1, inf, -inf, 0 (non-zero count) or any float; a real result for complex input.

        >>> agnostic.linalg.vector_norm(agnostic.tensor([3.0, -4.0]))
        tensor(5.)
    """
    _check_floating("vector_norm", x, "x", low_precision=True)
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number (2, 1, inf, -inf, 0 or a float), got {ord!r}; "
                           "for 'fro' or 'nuc' use linalg.matrix_norm")
    if dtype is not None:
        x = x.to(dtype)
    device = x._device
    xp = device.backend.xp
    dims = _vector_dims(x, dim) if x.ndim else None
    # Half precision accumulates in float32, as PyTorch does.
    array = x._data if x.dtype not in _LOW_PRECISION else x.to(_dtypes.float32)._data
    if ord < 0 or ord == math.inf:
        if builtins.any(array.shape[d] == 0 for d in (dims if dims is not None else range(array.ndim))):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {ord} norm on an empty tensor because the "
                               "operation does not have an identity")
    with device.backend.activate(), numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
        magnitude = xp.abs(array)
        if ord == 2:
            out = xp.sqrt((magnitude * magnitude).sum(axis=dims, keepdims=keepdim))
        elif ord == math.inf:
            out = magnitude.max(axis=dims, keepdims=keepdim)
        elif ord == -math.inf:
            out = magnitude.min(axis=dims, keepdims=keepdim)
        elif ord == 0:
            out = (magnitude != 0).sum(axis=dims, keepdims=keepdim)
        elif ord == 1:
            out = magnitude.sum(axis=dims, keepdims=keepdim)
        else:
            out = (magnitude ** ord).sum(axis=dims, keepdims=keepdim) ** (1.0 / ord)
    return _result(out, x.dtype.to_real(), device)


def _matrix_dims(A, dim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim!r}")
    rows, columns = (_normalize_dim(d, A.ndim) for d in dim)
    if rows == columns:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return rows, columns


@composite(namespace="agnostic.linalg", method=False)
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix ``ord``-norm of ``A`` over the two dims ``dim``, as ``torch.linalg.matrix_norm``: ``ord`` "fro",
    "nuc", inf, -inf, 1, -1, 2 (largest singular value) or -2 (smallest).

        >>> agnostic.linalg.matrix_norm(agnostic.tensor([[1.0, -2.0], [3.0, 4.0]]), ord=1)
        tensor(6.)
    """
    _check_floating("matrix_norm", A, low_precision=ord not in ("nuc", 2, -2))
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if dtype is not None:
        A = A.to(dtype)
    rows, columns = _matrix_dims(A, dim)
    if ord == "fro":
        return vector_norm(A, 2, (rows, columns), keepdim)
    if ord in ("nuc", 2, -2):
        moved = A.movedim((rows, columns), (-2, -1))
        values = svdvals(moved)
        if ord == "nuc":
            norms = values.sum(-1)
        else:
            norms = values.amax(-1) if ord == 2 else values.amin(-1)
        return _unsqueezed(norms, (rows, columns), False) if keepdim else norms
    if ord in (1, -1, math.inf, -math.inf):
        summed, reduced = (rows, columns) if ord in (1, -1) else (columns, rows)
        sums = A.abs().sum(summed, keepdim=True)
        norms = sums.amax(reduced, keepdim=True) if ord > 0 else sums.amin(reduced, keepdim=True)
        return norms if keepdim else norms.squeeze(max(rows, columns)).squeeze(min(rows, columns))
    raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported; use 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2")


@composite(namespace="agnostic.linalg", method=False)
def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector or matrix norm, as ``torch.linalg.norm``: a matrix norm when ``dim`` is a 2-tuple (or ``dim`` is None,
    ``ord`` is given and ``A`` is 2-D), else a vector norm (the 2-norm of every element when both are None).

        >>> agnostic.linalg.norm(agnostic.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(5.)
    """
    _check_floating("norm", A, low_precision=True)
    if dim is not None:
        dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if A.ndim == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got {A.ndim}D.")


# ----- inverses, solves, determinants, Cholesky -------------------------------------------------------------------
def _mH(A):
    """The conjugate transpose of (a batch of) matrices, differentiable."""
    return _conjugate(A.mT) if A.dtype.is_complex else A.mT


def _conjugate_transpose(A, array):
    device = A._device
    with device.backend.activate():
        return device.backend.xp.conj(array.swapaxes(-1, -2))


@composite(namespace="agnostic.linalg", method=False, gradients={"A": lambda grad, result: -_mH(result).matmul(
    grad.matmul(_mH(result)))})
def inv(A):
    """The inverse of each square matrix of ``A`` (leading dims are batches), as ``torch.linalg.inv``; raises
    ``LinAlgError`` for a singular matrix.

        >>> agnostic.linalg.inv(agnostic.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    _check_matrix("inv", A)
    try:
        out = _call("inv", A, A._data)
    except numpy.linalg.LinAlgError:
        index = _failing_element("inv", A, [A._data])
        raise LinAlgError(f"linalg.inv: {_batch_text(A, index)}The inversion could not be completed because the "
                          "input matrix is singular.") from None
    return _result(out, A.dtype, A._device)


@composite(namespace="agnostic.linalg", method=False)
def inv_ex(A, *, check_errors=False):
    """``(inverse, info)``, as ``torch.linalg.inv_ex``: ``info`` (int32, one per matrix) is 0 where the matrix was
    inverted and positive where it is singular (that inverse is then not meaningful); raises only with
    ``check_errors``.

        >>> agnostic.linalg.inv_ex(agnostic.tensor([[2.0, 0.0], [0.0, 4.0]])).info
        tensor(0, dtype=agnostic.int32)
    """
    _check_matrix("inv_ex", A)
    if check_errors:
        return inv_ex_result(inv(A), zeros(A.shape[:-2], dtype=_dtypes.int32, device=A.device))
    try:
        inverse = inv(A)
        info = numpy.zeros(A.shape[:-2], numpy.int32)
    except LinAlgError:
        flat = A.detach()._data.reshape((-1,) + tuple(A.shape[-2:]))
        info = numpy.zeros(flat.shape[0], numpy.int32)
        inverses = []
        for index in range(flat.shape[0]):
            try:
                inverses.append(_call("inv", A, flat[index]))
            except numpy.linalg.LinAlgError:
                info[index] = 1
                inverses.append(A._device.backend.xp.full(flat.shape[1:], numpy.nan, flat.dtype))
        with A._device.backend.activate():
            stacked = A._device.backend.xp.stack(inverses).reshape(A.shape)
        inverse = _result(stacked, A.dtype, A._device)
        info = info.reshape(A.shape[:-2])
    return inv_ex_result(inverse, as_tensor(info, device=A.device))


def _as_columns(A, B, left):
    """Whether ``B`` is a (batch of) vector(s) for ``solve``: 1-D, or one dim less than ``A`` matching its batch."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def _solve_gradient_B(grad, A, B, left):
    vector = _as_columns(A, B, left)
    g = grad.unsqueeze(-1) if vector else grad
    gB = solve(_mH(A), g, left=left)
    return gB.squeeze(-1) if vector else gB


def _solve_gradient_A(grad, A, B, left, result):
    vector = _as_columns(A, B, left)
    g = grad.unsqueeze(-1) if vector else grad
    X = result.unsqueeze(-1) if vector else result
    gB = solve(_mH(A), g, left=left)
    return -gB.matmul(_mH(X)) if left else -_mH(X).matmul(gB)


@composite(namespace="agnostic.linalg", method=False,
           gradients={"A": _solve_gradient_A, "B": _solve_gradient_B})
def solve(A, B, *, left=True):
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` with ``left=False``), as ``torch.linalg.solve``, batches
    broadcasting; ``B`` may be a vector (or a batch of them); raises ``LinAlgError`` for a singular ``A``.

        >>> agnostic.linalg.solve(agnostic.tensor([[2.0, 0.0], [0.0, 4.0]]), agnostic.tensor([2.0, 2.0]))
        tensor([1.0000, 0.5000])
    """
    _check_matrix("solve", A)
    _check_floating("solve", B, "B")
    check_same_device(A, B)
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{_torch_name(A.dtype)} and B of type {_torch_name(B.dtype)} instead")
    vector = _as_columns(A, B, left)
    b = B._data[..., None] if vector else B._data
    a = A._data
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = a.swapaxes(-1, -2), b.swapaxes(-1, -2)
    if vector and not left and a.shape[-1] == 1:
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. "
                           "In this case linalg.solve is equivalent to B / A.squeeze(-1)")
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:  # as PyTorch, a vector B is a column: (n, 1)
        columns = B.shape[-1:] + (1,) if vector else B.shape[-2:] if B.ndim > 1 else B.shape
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_products._shape_text(A.shape[-2:])} and "
                           f"{_products._shape_text(columns)})")
    try:
        shape = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise RuntimeError(f"linalg.solve: batch dimensions {tuple(A.shape[:-2])} and {tuple(B.shape[:-2])} don't "
                           "broadcast") from None
    xp = A._device.backend.xp
    with A._device.backend.activate():
        a = xp.broadcast_to(a, shape + a.shape[-2:])
        b = xp.broadcast_to(b, shape + b.shape[-2:])
    if not (a.size and b.size):  # nothing to solve (CuPy's solver divides by the zero width of an empty B)
        with A._device.backend.activate():
            out = xp.zeros(shape + (a.shape[-1], b.shape[-1]), a.dtype)
    else:
        try:
            out = _call("solve", A, a, b)
        except numpy.linalg.LinAlgError:
            index = _failing_element("solve", A, [a, b])
            raise LinAlgError(f"torch.linalg.solve: {_batch_text(A, index)}The solver failed because the input "
                              "matrix is singular.") from None
    if not left:
        out = out.swapaxes(-1, -2)
    return _result(out[..., 0] if vector else out, A.dtype, A._device)


def _det_gradient(grad, A, result):
    """``grad * adj(A)^H``: ``grad * conj(det) * inv(A)^H`` where every matrix is invertible, else the adjugate
    through the SVD (``det(U) det(Vh) Vh^H diag(product of the other singular values) U^H``), as PyTorch does."""
    if bool((result != 0).all()):
        scale = grad * (_conjugate(result) if result.dtype.is_complex else result)
        return scale.unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))
    U, S, Vh = svd(A, full_matrices=False)
    n = S.shape[-1]
    on_diagonal = eye(n, dtype=_dtypes.bool, device=S.device)
    others = where(on_diagonal, 1.0, S.unsqueeze(-2)).prod(-1).to(U.dtype)
    adjugate = (det(U) * det(Vh)).unsqueeze(-1).unsqueeze(-1) * (_mH(Vh) * others.unsqueeze(-2)).matmul(_mH(U))
    return grad.unsqueeze(-1).unsqueeze(-1) * _mH(adjugate)


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _det_gradient})
def det(A):
    """The determinant of each square matrix of ``A``, as ``torch.linalg.det``.

        >>> agnostic.linalg.det(agnostic.tensor([[2.0, 1.0], [1.0, 3.0]]))
        tensor(5.)
    """
    _check_matrix("det", A)
    return _result(_call("det", A, A._data), A.dtype, A._device)


def _slogdet_gradient(grads, A):
    return grads[1].unsqueeze(-1).unsqueeze(-1) * _mH(inv(A))


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _slogdet_gradient})
def slogdet(A):
    """``(sign, logabsdet)`` of each square matrix's determinant, as ``torch.linalg.slogdet`` (sign 0 and logabsdet
    -inf for a singular matrix).

        >>> agnostic.linalg.slogdet(agnostic.tensor([[-2.0, 0.0], [0.0, 3.0]])).sign
        tensor(-1.)
    """
    _check_matrix("slogdet", A)
    sign, logabsdet = _call("slogdet", A, A._data)
    return slogdet_result(_result(sign, A.dtype, A._device), _result(logabsdet, A.dtype.to_real(), A._device))


def _cholesky_gradient(grad, upper, result):
    # Iain Murray (2016), arXiv:1602.07527, as PyTorch's cholesky_backward.
    L, gL = (_mH(result), _mH(grad)) if upper else (result, grad)
    gA = _mH(L).matmul(gL).tril()
    gA = 0.5 * (gA + _mH(gA.tril(-1)))
    gA = solve(_mH(L), gA)
    return solve(L, gA, left=False)


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _cholesky_gradient})
def cholesky(A, *, upper=False):
    """The Cholesky factor ``L`` (lower triangular, ``A = L @ L.mH``; ``U = L.mH`` with ``upper``) of each Hermitian
    positive-definite matrix of ``A``, as ``torch.linalg.cholesky``; raises ``LinAlgError`` otherwise. Only the
    lower triangle of ``A`` is read.

        >>> agnostic.linalg.cholesky(agnostic.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[2., 0.],
                [1., 1.]])
    """
    _check_matrix("cholesky", A)
    try:
        out = _call("cholesky", A, A._data)
    except numpy.linalg.LinAlgError:
        index = _failing_element("cholesky", A, [A._data])
        order = _leading_minor(A, _first_batch_matrix(A._data, index))
        raise LinAlgError(f"linalg.cholesky: {_batch_text(A, index)}The factorization could not be completed "
                          f"because the input is not positive-definite (the leading minor of order {order} is not "
                          "positive-definite).") from None
    if upper:
        out = _conjugate_transpose(A, out)
    return _result(out, A.dtype, A._device)


@composite(namespace="agnostic.linalg", method=False)
def cholesky_ex(A, *, upper=False, check_errors=False):
    """``(L, info)``, as ``torch.linalg.cholesky_ex``: ``info`` (int32, one per matrix) is 0 where the factorization
    succeeded, else the order of the first leading minor that is not positive-definite.

        >>> agnostic.linalg.cholesky_ex(agnostic.tensor([[4.0, 2.0], [2.0, 2.0]])).info
        tensor(0, dtype=agnostic.int32)
    """
    _check_matrix("cholesky_ex", A)
    try:
        return cholesky_ex_result(cholesky(A, upper=upper),
                                  zeros(A.shape[:-2], dtype=_dtypes.int32, device=A.device))
    except LinAlgError:
        if check_errors:
            raise
    flat = A.detach()._data.reshape((-1,) + tuple(A.shape[-2:]))
    info = numpy.zeros(flat.shape[0], numpy.int32)
    factors = []
    xp = A._device.backend.xp
    for index in range(flat.shape[0]):
        try:
            factors.append(_call("cholesky", A, flat[index]))
        except numpy.linalg.LinAlgError:
            info[index] = _leading_minor(A, flat[index])
            factors.append(xp.zeros(flat.shape[1:], flat.dtype))
    with A._device.backend.activate():
        out = xp.stack(factors).reshape(A.shape)
    if upper:
        out = _conjugate_transpose(A, out)
    return cholesky_ex_result(_result(out, A.dtype, A._device),
                              as_tensor(info.reshape(A.shape[:-2]), device=A.device))



# ----- eigenvalues, singular values, QR ---------------------------------------------------------------------------
def _diagonal_matrix(values):
    """Each vector of ``values`` (last dim) as a diagonal matrix."""
    n = values.shape[-1]
    return values.unsqueeze(-1) * eye(n, dtype=values.dtype, device=values.device)


def _off_diagonal_quotient(numerator, differences):
    """``numerator / differences`` off the diagonal, 0 on it (where ``differences`` is 0)."""
    n = differences.shape[-1]
    identity = eye(n, dtype=differences.dtype, device=differences.device)
    return numerator * (1 - identity) / (differences + identity)


def _eigh_gradient(grads, result):
    # PyTorch's linalg_eig_backward for Hermitian input: V (diag(gL) + skew(V^H gV) / E) V^H, E_ij = L_j - L_i.
    values, vectors = result
    grad_values, grad_vectors = grads
    VhgV = _mH(vectors).matmul(grad_vectors)
    VhgV = 0.5 * (VhgV - _mH(VhgV))
    differences = values.unsqueeze(-2) - values.unsqueeze(-1)
    inner = _off_diagonal_quotient(VhgV, differences.to(VhgV.dtype)) + _diagonal_matrix(grad_values.to(VhgV.dtype))
    return vectors.matmul(inner.matmul(_mH(vectors)))


def _check_uplo(name, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"linalg.{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _eigh_gradient})
def eigh(A, UPLO="L"):
    """``(eigenvalues, eigenvectors)`` of each Hermitian (real symmetric) matrix of ``A``, eigenvalues ascending and
    real, as ``torch.linalg.eigh``; only the ``UPLO`` triangle ("L" or "U") is read.

        >>> agnostic.linalg.eigh(agnostic.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
        tensor([1., 2.])
    """
    _check_matrix("eigh", A)
    _check_uplo("eigh", UPLO)
    values, vectors = _call("eigh", A, A._data, UPLO=UPLO)
    return eigh_result(_result(values, A.dtype.to_real(), A._device), _result(vectors, A.dtype, A._device))


def _eigvalsh_gradient(grad, A, UPLO):
    vectors = eigh(A.detach(), UPLO).eigenvectors
    return vectors.matmul(_diagonal_matrix(grad.to(vectors.dtype)).matmul(_mH(vectors)))


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _eigvalsh_gradient})
def eigvalsh(A, UPLO="L"):
    """The eigenvalues of each Hermitian (real symmetric) matrix of ``A``, ascending, as ``torch.linalg.eigvalsh``.

        >>> agnostic.linalg.eigvalsh(agnostic.tensor([[2.0, 1.0], [1.0, 2.0]]))
        tensor([1., 3.])
    """
    _check_matrix("eigvalsh", A)
    _check_uplo("eigvalsh", UPLO)
    values = _call("eigvalsh", A, A._data, UPLO=UPLO)
    return _result(values, A.dtype.to_real(), A._device)


def _complex_of(dtype):
    return _dtypes.complex128 if dtype in (_dtypes.float64, _dtypes.complex128) else _dtypes.complex64


@composite(namespace="agnostic.linalg", method=False)
def eig(A):
    """``(eigenvalues, eigenvectors)`` of each square matrix of ``A``, complex (complex64 for float32 input), as
    ``torch.linalg.eig`` (no gradient).

        >>> agnostic.linalg.eig(agnostic.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    _check_matrix("eig", A)
    values, vectors = _call("eig", A, A._data)
    dtype = _complex_of(A.dtype)
    return eig_result(_result(values, dtype, A._device), _result(vectors, dtype, A._device))


@composite(namespace="agnostic.linalg", method=False)
def eigvals(A):
    """The eigenvalues of each square matrix of ``A``, complex, as ``torch.linalg.eigvals`` (no gradient).

        >>> agnostic.linalg.eigvals(agnostic.tensor([[0.0, -1.0], [1.0, 0.0]]))
        tensor([0.+1.j, 0.-1.j])
    """
    _check_matrix("eigvals", A)
    return _result(_call("eigvals", A, A._data), _complex_of(A.dtype), A._device)


def _svd_gradient(grads, full_matrices, result):
    # PyTorch's svd_backward (full_matrices: through the first k columns of U and rows of Vh, as PyTorch).
    U, S, Vh = result
    grad_U, grad_S, grad_Vh = grads
    k = S.shape[-1]
    if full_matrices:
        U, grad_U = U[..., :k], grad_U[..., :k]
        Vh, grad_Vh = Vh[..., :k, :], grad_Vh[..., :k, :]
    m, n = U.shape[-2], Vh.shape[-1]
    S = S.to(U.dtype)
    UhgU = _mH(U).matmul(grad_U)
    UhgU = UhgU - _mH(UhgU)
    VhgV = Vh.matmul(_mH(grad_Vh))
    VhgV = VhgV - _mH(VhgV)
    squares = S * S
    gA = _off_diagonal_quotient(UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV,
                                squares.unsqueeze(-2) - squares.unsqueeze(-1))
    gA = gA + _diagonal_matrix(grad_S.to(U.dtype))
    if U.dtype.is_complex:  # the phase of each pair of singular vectors
        gA = gA + _diagonal_matrix(UhgU.diagonal(0, -2, -1) / (2 * S))
    if m > k:
        gA = U.matmul(gA)
        gU_over_S = grad_U / S.unsqueeze(-2)
        gA = gA + gU_over_S - U.matmul(_mH(U).matmul(gU_over_S))
        return gA.matmul(Vh)
    if n > k:
        gA = gA.matmul(Vh)
        gVh_over_S = grad_Vh / S.unsqueeze(-1)
        gA = gA + gVh_over_S - gVh_over_S.matmul(_mH(Vh)).matmul(Vh)
        return U.matmul(gA)
    return U.matmul(gA.matmul(Vh))


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _svd_gradient})
def svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)`` with ``A = U @ diag(S) @ Vh`` for each matrix of ``A``, singular values descending and real,
    as ``torch.linalg.svd``; ``full_matrices=False`` gives the reduced form (k = min(m, n) columns of U).

        >>> agnostic.linalg.svd(agnostic.tensor([[3.0, 0.0], [0.0, -4.0]])).S
        tensor([4., 3.])
    """
    _check_matrix("svd", A, square=False)
    U, S, Vh = _call("svd", A, A._data, full_matrices=full_matrices)
    device = A._device
    return svd_result(_result(U, A.dtype, device), _result(S, A.dtype.to_real(), device),
                      _result(Vh, A.dtype, device))


def _svdvals_gradient(grad, A):
    U, _, Vh = svd(A.detach(), full_matrices=False)
    return U.matmul(_diagonal_matrix(grad.to(U.dtype))).matmul(Vh)


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _svdvals_gradient})
def svdvals(A, *, driver=None):
    """The singular values of each matrix of ``A``, descending, as ``torch.linalg.svdvals``.

        >>> agnostic.linalg.svdvals(agnostic.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor([4., 3.])
    """
    _check_matrix("svdvals", A, square=False)
    return _result(_call("svd", A, A._data, compute_uv=False), A.dtype.to_real(), A._device)


def _qr_square_or_tall_gradient(Q, R, grad_Q, grad_R):
    """PyTorch's linalg_qr_backward for m >= n: [gQ + Q syminvadj(triu(M))] R^{-H}, M = gR R^H - Q^H gQ."""
    upper = (grad_R.matmul(_mH(R)) - _mH(Q).matmul(grad_Q)).triu()
    symmetric = upper + _mH(upper)
    identity = eye(upper.shape[-1], dtype=upper.dtype, device=upper.device)
    M = symmetric - 0.5 * symmetric * identity  # the diagonal: the real part of upper's
    return solve(_mH(R), Q.matmul(M) + grad_Q, left=False)


def _qr_gradient(grads, A, mode, result):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                           "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
                           "linalg.qr.")
    Q, R = result
    grad_Q, grad_R = grads
    m, n = A.shape[-2], A.shape[-1]
    if mode == "complete" and m > n:
        raise NotImplementedError("The QR decomposition is not differentiable when mode='complete' and "
                                  "nrows > ncols; use mode='reduced'")
    if m >= n:
        return _qr_square_or_tall_gradient(Q, R, grad_Q, grad_R)
    # A = [X | Y] with X square: X = Q R_1 and R_2 = Q^H Y, so Y's gradient is Q gR_2 and Q's gains Y gR_2^H.
    Y = A[..., m:]
    grad_X = _qr_square_or_tall_gradient(Q, R[..., :m], grad_Q + Y.matmul(_mH(grad_R[..., m:])), grad_R[..., :m])
    return cat([grad_X, Q.matmul(grad_R[..., m:])], -1)


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _qr_gradient})
def qr(A, mode="reduced"):
    """``(Q, R)`` with ``A = Q @ R``, Q orthonormal columns and R upper triangular, as ``torch.linalg.qr``;
    ``mode`` "reduced" (k = min(m, n) columns of Q), "complete" (square Q) or "r" (R only; Q empty).

        >>> agnostic.linalg.qr(agnostic.tensor([[3.0, 1.0], [4.0, 2.0]])).R.abs()
        tensor([[5.0000, 2.2000],
                [0.0000, 0.4000]])
    """
    _check_matrix("qr", A, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    device = A._device
    if mode == "r":
        R = _call("qr", A, A._data, mode="r")
        return qr_result(zeros(0, dtype=A.dtype, device=A.device), _result(R, A.dtype, device))
    Q, R = _call("qr", A, A._data, mode=mode)
    return qr_result(_result(Q, A.dtype, device), _result(R, A.dtype, device))


# ----- least squares, ranks, powers, products ---------------------------------------------------------------------
@composite(namespace="agnostic.linalg", method=False)
def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The Moore-Penrose pseudo-inverse of each matrix of ``A`` (through its SVD; singular values at most
    ``max(atol, rtol * largest)`` count as zero), as ``torch.linalg.pinv``.

        >>> agnostic.linalg.pinv(agnostic.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    _check_matrix("pinv", A, square=False)
    U, S, Vh = svd(A, full_matrices=False)
    cutoff = _cutoff(A, S, atol, rtol)
    kept = S > cutoff.unsqueeze(-1)
    inverse_values = where(kept, 1.0 / where(kept, S, 1.0), 0.0).to(U.dtype)
    return _mH(Vh).matmul(inverse_values.unsqueeze(-1) * _mH(U))


def _cutoff(A, S, atol, rtol):
    """The singular values at most this count as zero (PyTorch's default rtol: eps * max(m, n) without atol)."""
    largest = S.amax(-1) if S.shape[-1] else zeros(S.shape[:-1], dtype=S.dtype, device=S.device)
    if rtol is None:
        rtol = 0.0 if atol is not None and _positive(atol) else _dtypes.finfo(S.dtype).eps * max(A.shape[-2:])
    absolute = as_tensor(0.0 if atol is None else atol, dtype=S.dtype, device=S.device)
    return maximum(absolute, rtol * largest)


def _positive(value):
    return bool((value > 0).all()) if isinstance(value, TensorBase) else value > 0


@composite(namespace="agnostic.linalg", method=False)
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False):
    """The number of singular values above ``max(atol, rtol * largest)`` of each matrix of ``A`` (int64), as
    ``torch.linalg.matrix_rank``.

        >>> agnostic.linalg.matrix_rank(agnostic.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1)
    """
    _check_matrix("matrix_rank", A, square=False)
    S = svdvals(A.detach())
    return (S > _cutoff(A, S, atol, rtol).unsqueeze(-1)).sum(-1)


@composite(namespace="agnostic.linalg", method=False)
def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` of the least-squares problem ``min ||A X - B||``, as
    ``torch.linalg.lstsq`` (the solution through the pseudo-inverse, so differentiable; residuals for full-rank
    tall ``A``; rank and singular values for the drivers that give them, "gelsy" (default), "gelsd", "gelss").

        >>> agnostic.linalg.lstsq(agnostic.tensor([[1.0], [1.0]]), agnostic.tensor([[1.0], [3.0]])).solution
        tensor([[2.0000]])
    """
    _check_matrix("lstsq", A, square=False)
    _check_floating("lstsq", B, "B")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {_torch_name(A.dtype)} and other's dtype {_torch_name(B.dtype)}")
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss); "
                           f"got {driver!r}")
    vector = B.ndim == A.ndim - 1
    columns = B.unsqueeze(-1) if vector else B
    if columns.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got {A.shape[-2]} and "
                           f"{columns.shape[-2]}")
    m, n = A.shape[-2], A.shape[-1]
    U, S, Vh = svd(A, full_matrices=False)
    eps = _dtypes.finfo(S.dtype).eps
    cutoff = (eps * max(m, n) if rcond is None else rcond) * S.amax(-1, keepdim=True) if S.shape[-1] else S
    kept = S > cutoff
    inverse_values = where(kept, 1.0 / where(kept, S, 1.0), 0.0).to(U.dtype)
    solution = _mH(Vh).matmul(inverse_values.unsqueeze(-1) * _mH(U).matmul(columns))
    driver = driver or "gelsy"
    rank = kept.sum(-1) if driver != "gels" else zeros(0, dtype=_dtypes.int64, device=A.device)
    empty = zeros(0, dtype=S.dtype, device=A.device)
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        residual = (A.matmul(solution) - columns).abs()
        residuals = (residual * residual).sum(-2)
    else:
        residuals = empty
    return lstsq_result(solution.squeeze(-1) if vector else solution, residuals, rank,
                        S if driver in ("gelsd", "gelss") else empty)


@composite(namespace="agnostic.linalg", method=False)
def matrix_power(A, n):
    """``A`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse for negative ``n``), as
    ``torch.linalg.matrix_power``, by repeated squaring.

        >>> agnostic.linalg.matrix_power(agnostic.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    if not isinstance(A, TensorBase):
        raise TypeError(f"linalg.matrix_power(): argument 'A' must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{_products._shape_text(A.shape[-2:])} matrices")
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        A, n = inv(A), -n
    if n == 0:
        return eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape).clone()
    result = None
    square = A
    while n:
        if n & 1:
            result = square if result is None else result.matmul(square)
        n >>= 1
        if n:
            square = square.matmul(square)
    return result


@composite(namespace="agnostic.linalg", method=False)
def multi_dot(tensors):
    """The product of a list of matrices (the first and last may be vectors), as ``torch.linalg.multi_dot``.

        >>> agnostic.linalg.multi_dot([agnostic.tensor([1.0, 2.0]), agnostic.eye(2), agnostic.tensor([3.0, 4.0])])
        tensor(11.)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for position, tensor in enumerate(tensors):
        expected = (1, 2) if position in (0, len(tensors) - 1) else (2,)
        if tensor.ndim not in expected:
            raise RuntimeError(f"multi_dot(): tensor {position} must be "
                               f"{'1D or 2D' if len(expected) == 2 else '2D'} but got {tensor.ndim}D")
    result = tensors[0]
    for tensor in tensors[1:]:
        result = result.matmul(tensor)
    return result


@composite(namespace="agnostic.linalg", method=False)
def matmul(input, other):
    """Matrix product, as ``torch.linalg.matmul`` (an alias of ``agnostic.matmul``).

        >>> agnostic.linalg.matmul(agnostic.tensor([[1, 2], [3, 4]]), agnostic.tensor([1, 1]))
        tensor([3, 7])
    """
    return _products.matmul(input, other)


@composite(namespace="agnostic.linalg", method=False)
def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y)`` over ``dim``, batches broadcasting, as ``torch.linalg.vecdot``.

        >>> agnostic.linalg.vecdot(agnostic.tensor([1.0, 2.0]), agnostic.tensor([3.0, 4.0]))
        tensor(11.)
    """
    return ((_conjugate(x) if x.dtype.is_complex else x) * y).sum(dim)


@composite(namespace="agnostic.linalg", method=False)
def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (batches broadcasting), as ``torch.linalg.cross``.

        >>> agnostic.linalg.cross(agnostic.tensor([1.0, 0.0, 0.0]), agnostic.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.])
    """
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions. Got {input.ndim} and "
                           f"{other.ndim}")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} and "
                           f"{other.shape[dim]}")
    a = [input.narrow(dim, i, 1) for i in range(3)]
    b = [other.narrow(dim, i, 1) for i in range(3)]
    return cat([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], dim)


@composite(namespace="agnostic.linalg", method=False)
def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonal (``offset`` above it when positive) of the matrices over ``dim1``, ``dim2``, as
    ``torch.linalg.diagonal`` (a view).

        >>> agnostic.linalg.diagonal(agnostic.tensor([[1, 2], [3, 4]]))
        tensor([1, 4])
    """
    return A.diagonal(offset, dim1, dim2)


@composite(namespace="agnostic.linalg", method=False)
def matrix_exp(A):
    """The matrix exponential of each square matrix of ``A``, as ``torch.linalg.matrix_exp``: scaling and squaring
    of a degree-18 Taylor polynomial, in differentiable ops.

        >>> agnostic.linalg.matrix_exp(agnostic.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    _check_matrix("matrix_exp", A)
    norms = A.detach().abs().sum(-2).amax(-1)
    largest = float(norms.amax()) if norms.numel() else 0.0
    squarings = builtins.max(0, math.ceil(math.log2(largest)) + 1) if largest > 0 else 0
    scaled = A / (2.0 ** squarings)
    identity = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    result = identity + scaled
    term = scaled
    for k in range(2, 19):
        term = term.matmul(scaled) / k
        result = result + term
    for _ in range(squarings):
        result = result.matmul(result)
    return result


# ----- LU ---------------------------------------------------------------------------------------------------------
lu_factor_result = _products.return_type("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_result = _products.return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_result = _products.return_type("linalg_lu", ["P", "L", "U"])


def _check_pivot(name, pivot):
    if not pivot:
        raise RuntimeError(f"linalg.{name}: LU without pivoting is not implemented; use pivot=True (the default)")


def _check_lu_input(name, A):
    if isinstance(A, TensorBase) and A.ndim < 2:
        raise RuntimeError(f"torch.{name}: Expected tensor with 2 or more dimensions. Got size: {list(A.shape)} "
                           "instead")
    _check_matrix(name, A, square=False)


def _factor_arrays(A):
    """``(LU, pivots, info)`` arrays of every matrix of ``A`` by the backend's ``lu_factor``; ``info`` is LAPACK's:
    0, or the 1-based index of the first zero on U's diagonal (the matrix is singular)."""
    device, data = A._device, A._data
    rows, columns = data.shape[-2:]
    batch = data.shape[:-2]
    k = builtins.min(rows, columns)
    backend = device.backend
    xp = backend.xp
    with backend.activate():
        if k == 0 or math.prod(batch) == 0:
            return xp.array(data, copy=True), xp.ones(batch + (k,), numpy.int32), xp.zeros(batch, numpy.int32)
        factors, pivots = backend.ops.lu_factor(xp.ascontiguousarray(data.reshape((-1, rows, columns))))
        factors, pivots = factors.reshape(data.shape), pivots.reshape(batch + (k,))
        zero = xp.diagonal(factors, 0, -2, -1) == 0
        info = xp.where(zero.any(-1), xp.argmax(zero.astype(numpy.int8), -1) + 1, 0).astype(numpy.int32)
    return factors, pivots, info


def _lu_factor_gradient(grads, result):
    """PyTorch's ``linalg_lu_backward`` through the packed factors: ``A = P L U`` gives
    ``gA = P L^{-H} (tril(L^H gL, -1) + triu(gU U^H)) U^{-H}`` for a square matrix; a wide one's extra columns of
    U (``U2 = L^{-1} P^T A2``) and a tall one's extra rows of L (``L2 = B2 U^{-1}``) pass their gradients through
    the same solves."""
    LU, pivots, _ = result
    grad = grads[0]
    P, L, U = _products.lu_unpack(LU, pivots)
    m, n = LU.shape[-2], LU.shape[-1]
    k = builtins.min(m, n)
    gL = grad.tril(-1)[..., :, :k]
    gU = grad.triu()[..., :k, :]
    if m == n:
        inner = _mH(L).matmul(gL).tril(-1) + gU.matmul(_mH(U)).triu()
        return P.matmul(solve(_mH(L), solve(_mH(U), inner, left=False)))
    if m < n:  # A = P L [U1 U2]
        U1, gU1, U2, gU2 = U[..., :k], gU[..., :k], U[..., k:], gU[..., k:]
        inner = (_mH(L).matmul(gL) - gU2.matmul(_mH(U2))).tril(-1) + gU1.matmul(_mH(U1)).triu()
        gA1 = solve(_mH(L), solve(_mH(U1), inner, left=False))
        gA2 = solve(_mH(L), gU2)
        return P.matmul(cat([gA1, gA2], -1))
    # A = P [L1; L2] U
    L1, gL1, L2, gL2 = L[..., :k, :], gL[..., :k, :], L[..., k:, :], gL[..., k:, :]
    inner = _mH(L1).matmul(gL1).tril(-1) + (gU.matmul(_mH(U)) - _mH(L2).matmul(gL2)).triu()
    gB1 = solve(_mH(L1), solve(_mH(U), inner, left=False))
    gB2 = solve(_mH(U), gL2, left=False)
    return P.matmul(cat([gB1, gB2], -2))


@composite(namespace="agnostic.linalg", method=False, gradients={"A": _lu_factor_gradient})
def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """``(LU, pivots, info)`` of the LU factorization with partial pivoting ``A = P L U`` of each matrix of ``A``
    (any m x n; leading dims are batches), as ``torch.linalg.lu_factor_ex``: ``LU`` packs the unit lower ``L``
    (its diagonal not stored) and ``U``; ``pivots`` (int32, 1-based, LAPACK's) say which row was exchanged with
    row i; ``info`` (int32) is 0, or the 1-based index of the first zero on U's diagonal. A singular matrix raises
    only with ``check_errors``.

        >>> agnostic.linalg.lu_factor_ex(agnostic.tensor([[1.0, 2.0], [3.0, 4.0]])).pivots
        tensor([2, 2], dtype=agnostic.int32)
    """
    _check_lu_input("linalg.lu_factor_ex", A)
    _check_pivot("lu_factor_ex", pivot)
    factors, pivots, info = _factor_arrays(A)
    device = A._device
    result = lu_factor_ex_result(_result(factors, A.dtype, device), finish(pivots, _dtypes.int32, device),
                                 finish(info, _dtypes.int32, device))
    if check_errors:
        _raise_if_singular("torch.linalg.lu_factor_ex", A, result.info)
    return result


def _first_failure(info):
    """``(batch index, the failing diagonal position)`` of the first matrix whose factorization's ``info`` is
    non-zero, or None when every one succeeded (LAPACK's convention: ``info`` is the 1-based position)."""
    failed = info.reshape(-1).cpu().numpy()
    if not failed.any():
        return None
    index = int(numpy.flatnonzero(failed)[0])
    return index, int(failed[index])


def _raise_if_singular(name, A, info):
    failure = _first_failure(info)
    if failure is not None:
        index, position = failure
        raise RuntimeError(f"{name}: {_batch_text(A, index)}U[{position},{position}] is zero and using it on "
                           "lu_solve would result in a division by zero. If you still want to perform the "
                           "factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


@composite(namespace="agnostic.linalg", method=False)
def lu_factor(A, *, pivot=True):
    """``(LU, pivots)`` of each matrix of ``A``, as ``torch.linalg.lu_factor`` (see ``lu_factor_ex``); raises a
    RuntimeError for a singular matrix (use ``lu_factor_ex`` or ``lu`` to factor it anyway).

        >>> LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> LU
        tensor([[3.0000, 4.0000],
                [0.3333, 0.6667]])
    """
    _check_lu_input("linalg.lu_factor", A)
    _check_pivot("lu_factor", pivot)
    LU, pivots, info = lu_factor_ex(A)
    _raise_if_singular("torch.linalg.lu_factor", A, info)
    return lu_factor_result(LU, pivots)


@composite(namespace="agnostic.linalg", method=False)
def lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P @ L @ U`` for each matrix of ``A`` (m x n, k = min(m, n)): ``P`` an m x m
    permutation matrix, ``L`` m x k unit lower triangular, ``U`` k x n upper triangular, as ``torch.linalg.lu``;
    singular matrices are factored too.

        >>> agnostic.linalg.lu(agnostic.tensor([[1.0, 2.0], [3.0, 4.0]])).P
        tensor([[0., 1.],
                [1., 0.]])
    """
    _check_lu_input("linalg.lu", A)
    _check_pivot("lu", pivot)
    LU, pivots, _ = lu_factor_ex(A)
    return lu_result(*_products.lu_unpack(LU, pivots))


@composite(namespace="agnostic.linalg", method=False)
def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``; ``A^H`` for ``A`` with ``adjoint``) from
    ``A``'s ``lu_factor``, as ``torch.linalg.lu_solve``; batches broadcast.

        >>> A = agnostic.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> agnostic.linalg.lu_solve(*agnostic.linalg.lu_factor(A), agnostic.tensor([[3.0], [4.0]]))
        tensor([[1.],
                [1.]])
    """
    _check_matrix("lu_solve", LU, what="A")
    _check_floating("lu_solve", B, "B")
    check_same_device(LU, pivots, B)
    if LU.dtype is not B.dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type "
                           f"{_torch_name(LU.dtype)} and B of type {_torch_name(B.dtype)} instead")
    if B.ndim < 2:
        raise RuntimeError(f"linalg.lu_solve: The input tensor B must have at least 2 dimensions, got {B.ndim}; "
                           "make a vector a column with B.unsqueeze(-1)")
    n = LU.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation {equation} "
                           f"({_products._shape_text(LU.shape[-2:])} and {_products._shape_text(B.shape[-2:])})")
    P, L, U = _products.lu_unpack(LU, pivots)
    if left and not adjoint:  # X = U^-1 L^-1 P^T B
        return solve(U, solve(L, P.mT.matmul(B)))
    if left:  # A^H = U^H L^H P^T: X = P L^-H U^-H B
        return P.matmul(solve(_mH(L), solve(_mH(U), B)))
    if not adjoint:  # X = B U^-1 L^-1 P^T
        return solve(L, solve(U, B, left=False), left=False).matmul(P.mT)
    return solve(_mH(U), solve(_mH(L), B.matmul(P), left=False), left=False)  # X = B P L^-H U^-H


# ----- triangular solves, conditioning, Householder products, tensor solves -------------------------------------
solve_ex_result = _products.return_type("linalg_solve_ex", ["result", "info"])
ldl_factor_ex_result = _products.return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
ldl_factor_result = _products.return_type("linalg_ldl_factor", ["LD", "pivots"])


def _triangle(A, upper, unitriangular):
    """The part of ``A`` that a triangular solve reads: its ``upper`` (or lower) triangle, less the diagonal when
    ``unitriangular``."""
    offset = (1 if upper else -1) if unitriangular else 0
    return A.triu(offset) if upper else A.tril(offset)


def _solve_triangular_gradient_A(grad, A, upper, left, unitriangular, result):
    gB = solve_triangular(_mH(A), grad, upper=not upper, left=left, unitriangular=unitriangular)
    gA = -gB.matmul(_mH(result)) if left else -_mH(result).matmul(gB)
    return _triangle(gA, upper, unitriangular)


def _solve_triangular_gradient_B(grad, A, upper, left, unitriangular):
    return solve_triangular(_mH(A), grad, upper=not upper, left=left, unitriangular=unitriangular)


@composite(namespace="agnostic.linalg", method=False,
           gradients={"A": _solve_triangular_gradient_A, "B": _solve_triangular_gradient_B})
def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """The solution ``X`` of ``A @ X = B`` (``X @ A = B`` with ``left=False``) for triangular ``A`` (only its
    ``upper`` or lower triangle is read; its diagonal taken as ones with ``unitriangular``), as
    ``torch.linalg.solve_triangular``: batches broadcast; a zero on the diagonal gives inf/NaN, not an error.

        >>> A = agnostic.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> agnostic.linalg.solve_triangular(A, agnostic.tensor([[3.0], [4.0]]), upper=True)
        tensor([[1.],
                [1.]])
    """
    _check_matrix("solve_triangular", A)
    _check_floating("solve_triangular", B, "B")
    check_same_device(A, B)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions; make a "
                           "vector a column with B.unsqueeze(-1)")
    if A.dtype is not B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found A of type "
                           f"{_torch_name(A.dtype)} and B of type {_torch_name(B.dtype)} instead")
    if (B.shape[-2] if left else B.shape[-1]) != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({_products._shape_text(A.shape[-2:])} and "
                           f"{_products._shape_text(B.shape[-2:])})")
    try:
        batch = numpy.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2]))
    except ValueError:
        raise RuntimeError(f"linalg.solve_triangular: batch dimensions {tuple(A.shape[:-2])} and "
                           f"{tuple(B.shape[:-2])} don't broadcast") from None
    a, b, lower = A._data, B._data, not upper
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T's triangle is the other one
        a, b, lower = a.swapaxes(-1, -2), b.swapaxes(-1, -2), upper
    backend = A._device.backend
    xp = backend.xp
    n, k = a.shape[-1], b.shape[-1]
    with backend.activate():
        if n == 0 or k == 0 or math.prod(batch) == 0:
            out = xp.zeros(batch + (n, k), a.dtype)
        else:
            a = xp.ascontiguousarray(xp.broadcast_to(a, batch + (n, n))).reshape((-1, n, n))
            b = xp.ascontiguousarray(xp.broadcast_to(b, batch + (n, k))).reshape((-1, n, k))
            with numpy.errstate(all="ignore"):
                out = backend.ops.solve_triangular(a, b, lower, unitriangular).reshape(batch + (n, k))
    if not left:
        out = out.swapaxes(-1, -2)
    return _result(out, A.dtype, A._device)


_INVERSE_NORMS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


@composite(namespace="agnostic.linalg", method=False)
def cond(A, p=None):
    """The condition number of each matrix of ``A`` in the norm ``p``, as ``torch.linalg.cond``: the ratio of the
    largest to the smallest singular value for ``p`` None, 2 or -2 (its inverse for -2; any m x n matrix), else
    ``matrix_norm(A, p) * matrix_norm(inv(A), p)`` of square matrices ("fro", "nuc", inf, -inf, 1, -1), inf where
    ``A`` is singular. The result is real.

        >>> agnostic.linalg.cond(agnostic.tensor([[1.0, 0.0], [0.0, 4.0]]))
        tensor(4.)
    """
    _check_floating("cond", A, "A")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    if p in (None, 2, -2):
        values = svdvals(A)
        if values.shape[-1] == 0:
            return zeros(values.shape[:-1], dtype=values.dtype, device=values.device)
        largest, smallest = values[..., 0], values[..., -1]
        return smallest / largest if p == -2 else largest / smallest
    if p not in _INVERSE_NORMS:
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p!r}; use None, 'fro', 'nuc', inf, -inf, 1, -1, "
                           "2 or -2")
    _check_matrix(f"cond(ord={p})", A)
    if A.shape[-1] == 0:
        return zeros(A.shape[:-2], dtype=A.dtype.to_real(), device=A.device)
    inverse, info = inv_ex(A)
    singular = info != 0
    result = matrix_norm(A, p) * matrix_norm(where(singular.unsqueeze(-1).unsqueeze(-1), 0.0, inverse), p)
    return where(singular, math.inf, result)


@composite(namespace="agnostic.linalg", method=False)
def householder_product(A, tau):
    """The first ``n`` columns of the product ``H_1 H_2 ... H_k`` of Householder reflectors ``H_i = I - tau_i v_i
    v_i^H`` (``v_i``: column i of ``A`` below the diagonal, with a 1 on it), as ``torch.linalg.householder_product``
    (LAPACK's orgqr: the Q of a QR factorization from its packed form); ``A`` is m x n with m >= n >= k, ``tau``
    has ``A``'s batch and k elements. Differentiable in both.

        >>> A = agnostic.tensor([[1.0], [1.0]])
        >>> agnostic.linalg.householder_product(A, agnostic.tensor([1.0]))
        tensor([[ 0.],
                [-1.]])
    """
    name = "torch.linalg.householder_product"
    _check_floating("householder_product", A, "input")
    _check_floating("householder_product", tau, "tau")
    check_same_device(A, tau)
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
                           f"{tau.ndim} and input.ndim is equal to {A.ndim}")
    m, n, k = A.shape[-2], A.shape[-1], tau.shape[-1]
    if m < n:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < k:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(A.shape[:-2]) != tuple(tau.shape[:-1]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{tuple(tau.shape[:-1])}")
    if A.dtype is not tau.dtype:
        raise RuntimeError(f"{name}: tau dtype {_torch_name(tau.dtype)} does not match input dtype "
                           f"{_torch_name(A.dtype)}")
    reflectors = A.tril(-1) + eye(m, n, dtype=A.dtype, device=A.device)
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(*A.shape)
    # Q = H_1 (H_2 (... (H_k I))): each reflector applied on the left, the last one first.
    for i in reversed(range(k)):
        v = reflectors[..., :, i:i + 1]
        projection = _mH(v).matmul(Q)
        Q = Q - (tau[..., i:i + 1].unsqueeze(-1) * v).matmul(projection)
    return Q


def _check_ind(ind):
    if not isinstance(ind, int) or ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")


@composite(namespace="agnostic.linalg", method=False)
def tensorinv(A, ind=2):
    """The inverse of ``A`` for ``tensordot`` over its first ``ind`` dims, as ``torch.linalg.tensorinv``: ``A``
    reshaped to a square matrix (the product of its first ``ind`` sizes by that of the rest) and inverted; the result
    has shape ``A.shape[ind:] + A.shape[:ind]``.

        >>> agnostic.linalg.tensorinv(agnostic.eye(4).reshape(4, 2, 2), ind=1).shape
        agnostic.Size([2, 2, 4])
    """
    _check_ind(ind)
    rows, columns = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {columns} != {rows}")
    return inv(A.reshape(rows, columns)).reshape(tuple(A.shape[ind:]) + tuple(A.shape[:ind]))


@composite(namespace="agnostic.linalg", method=False)
def tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B``, as ``torch.linalg.tensorsolve``: ``X`` has shape
    ``A.shape[B.ndim:]``; ``dims`` names dims of ``A`` moved to its end first.

        >>> agnostic.linalg.tensorsolve(agnostic.eye(6).reshape(2, 3, 6), agnostic.ones(2, 3)).shape
        agnostic.Size([6])
    """
    if dims is not None:
        dims = [dims] if isinstance(dims, int) else list(dims)
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    solution_shape = tuple(A.shape[B.ndim:])
    rows, columns = B.numel(), math.prod(solution_shape)
    if tuple(A.shape[:B.ndim]) != tuple(B.shape) or rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {columns} != {rows} (A's first dims must be "
                           f"B's shape {tuple(B.shape)})")
    return solve(A.reshape(rows, columns), B.reshape(rows)).reshape(solution_shape)


@composite(namespace="agnostic.linalg", method=False)
def vander(x, N=None):
    """The Vandermonde matrix of each vector of ``x`` (last dim, n elements): its columns the powers
    ``x**0, x**1, ..., x**(N-1)`` (N = n by default), shape ``x.shape + (N,)``, as ``torch.linalg.vander``
    (increasing powers, unlike ``agnostic.vander``); integer, floating or complex input.

        >>> agnostic.linalg.vander(agnostic.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [1, 2, 4],
                [1, 3, 9]])
    """
    if not isinstance(x, TensorBase):
        raise TypeError(f"linalg.vander(): argument 'x' must be Tensor, not {type(x).__name__}")
    if x.dtype is _dtypes.bool:
        raise RuntimeError("linalg.vander supports floating point, complex, and integer tensors, but got Bool; "
                           "convert it with .int() or .float()")
    if x.ndim == 0:
        raise RuntimeError("N must be greater than 1.")
    if N is None:
        N = x.shape[-1]
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    repeated = x.unsqueeze(-1).expand(*x.shape, N - 1)
    ones = repeated.new_ones(tuple(x.shape) + (1,))
    return cat([ones, repeated], -1).cumprod(-1)


@composite(namespace="agnostic.linalg", method=False)
def solve_ex(A, B, *, left=True, check_errors=False):
    """``(result, info)``, as ``torch.linalg.solve_ex``: ``result`` is ``linalg.solve``'s (inf/NaN where a matrix
    is singular), ``info`` (int32, one per matrix of the broadcast batch) 0 where it was solved and positive where
    ``A`` is singular; raises ``LinAlgError`` for a singular matrix only with ``check_errors``.

        >>> agnostic.linalg.solve_ex(agnostic.tensor([[2.0, 0.0], [0.0, 4.0]]), agnostic.tensor([2.0, 2.0])).info
        tensor(0, dtype=agnostic.int32)
    """
    _check_matrix("solve_ex", A)
    try:
        result = solve(A, B, left=left)
    except LinAlgError as error:
        if check_errors:
            raise LinAlgError(str(error).replace("torch.linalg.solve:", "torch.linalg.solve_ex:")) from None
        result = None
    batch = tuple(numpy.broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])
                                         if not _as_columns(A, B, left) else tuple(B.shape[:-1])))
    if result is not None:
        return solve_ex_result(result, zeros(batch, dtype=_dtypes.int32, device=A.device))
    # A singular matrix: solve through the LU factors as LAPACK's gesv does, without stopping at a zero pivot.
    LU, pivots, info = lu_factor_ex(A)
    vector = _as_columns(A, B, left)
    columns = B.unsqueeze(-1) if vector else B
    if left:
        P, L, U = _products.lu_unpack(LU, pivots)
        rows = P.mT.matmul(columns)
        out = solve_triangular(U, solve_triangular(L, rows, upper=False, unitriangular=True), upper=True)
    else:  # X A = B: X = B U^-1 L^-1 P^T
        P, L, U = _products.lu_unpack(LU, pivots)
        partial = solve_triangular(U, columns, upper=True, left=False)
        out = solve_triangular(L, partial, upper=False, left=False, unitriangular=True).matmul(P.mT)
    out = out.squeeze(-1) if vector else out
    return solve_ex_result(out, info.expand(*batch).contiguous() if info.ndim or batch else info)


def _check_ldl_input(name, A):
    _check_floating(name.split(".")[-1], A, "A")
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


@composite(namespace="agnostic.linalg", method=False)
def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``(LD, pivots, info)`` of the Bunch-Kaufman factorization ``A = P L D L^T P^T`` (``L^H`` with
    ``hermitian``) of each symmetric matrix of ``A`` (its lower triangle is read), as
    ``torch.linalg.ldl_factor_ex``: LAPACK's ``sytrf`` (``hetrf``) packed form, ``LD`` lower triangular, with
    1-based int32 ``pivots`` (negative pairs mark 2 x 2 blocks of D) and ``info`` (int32) 0, or the 1-based index
    of a zero block of D. Computed on the host's LAPACK (through SciPy) for every device; no gradient.

        >>> agnostic.linalg.ldl_factor_ex(agnostic.tensor([[4.0, 2.0], [2.0, 3.0]])).LD
        tensor([[4.0000, 0.0000],
                [0.5000, 2.0000]])
    """
    name = "torch.linalg.ldl_factor_ex"
    _check_ldl_input(name, A)
    device = A._device
    data = A.detach()._data
    n = data.shape[-1]
    batch = data.shape[:-2]
    backend = device.backend
    with backend.activate():
        if n == 0 or math.prod(batch) == 0:
            xp = backend.xp
            factors, pivots, info = xp.zeros(data.shape, data.dtype), xp.zeros(batch + (n,), numpy.int32), \
                xp.zeros(batch, numpy.int32)
        else:
            matrices = backend.xp.ascontiguousarray(data.reshape((-1, n, n)))
            factors, pivots, info = backend.ops.ldl_factor(matrices, bool(hermitian and A.dtype.is_complex))
            factors, pivots, info = factors.reshape(data.shape), pivots.reshape(batch + (n,)), info.reshape(batch)
    result = ldl_factor_ex_result(_result(factors, A.dtype, device), finish(pivots, _dtypes.int32, device),
                                  finish(info, _dtypes.int32, device))
    if check_errors:
        _raise_if_block_singular(name, A, result.info)
    return result


def _raise_if_block_singular(name, A, info):
    failure = _first_failure(info)
    if failure is not None:
        index, position = failure
        raise RuntimeError(f"{name}: {_batch_text(A, index)}The factorization could not be completed because D"
                           f"[{position},{position}] is exactly zero (the matrix is singular); ldl_solve would "
                           "divide by zero. Use linalg.ldl_factor_ex without check_errors to factor it anyway")


@composite(namespace="agnostic.linalg", method=False)
def ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)`` of each symmetric (Hermitian, with ``hermitian``) matrix of ``A``, as
    ``torch.linalg.ldl_factor`` (see ``ldl_factor_ex``); raises a RuntimeError for a singular matrix.

        >>> agnostic.linalg.ldl_factor(agnostic.tensor([[1.0, 2.0], [2.0, 1.0]])).pivots
        tensor([-2, -2], dtype=agnostic.int32)
    """
    LD, pivots, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_if_block_singular("torch.linalg.ldl_factor", A, info)
    return ldl_factor_result(LD, pivots)


@composite(namespace="agnostic.linalg", method=False)
def ldl_solve(LD, pivots, B, *, hermitian=False):
    """The solution ``X`` of ``A X = B`` from ``A``'s ``ldl_factor``, as ``torch.linalg.ldl_solve`` (LAPACK's
    ``sytrs``/``hetrs`` on the host's LAPACK for every device); batches broadcast; no gradient.

        >>> A = agnostic.tensor([[1.0, 2.0], [2.0, 1.0]])
        >>> agnostic.linalg.ldl_solve(*agnostic.linalg.ldl_factor(A), agnostic.tensor([[3.0], [3.0]]))
        tensor([[1.],
                [1.]])
    """
    name = "torch.linalg.ldl_solve"
    _check_ldl_input(name, LD)
    _check_floating("ldl_solve", B, "B")
    check_same_device(LD, pivots, B)
    if pivots.dtype is not _dtypes.int32:
        raise RuntimeError(f"{name}: Expected pivots to be integers (int32, ldl_factor's). Got {pivots.dtype}")
    if LD.dtype is not B.dtype:
        raise RuntimeError(f"{name}: Expected LD and B to have the same dtype, but got LD with dtype "
                           f"{_torch_name(LD.dtype)} and B with dtype {_torch_name(B.dtype)} instead")
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions; make a vector a column "
                           "with B.unsqueeze(-1)")
    n = LD.shape[-1]
    if B.shape[-2] != n or tuple(pivots.shape[-1:]) != (n,):
        raise RuntimeError(f"{name}: Incompatible shapes of LD, pivots and B ({_products._shape_text(LD.shape)}, "
                           f"{_products._shape_text(pivots.shape)} and {_products._shape_text(B.shape)})")
    batch = tuple(numpy.broadcast_shapes(tuple(LD.shape[:-2]), tuple(pivots.shape[:-1]), tuple(B.shape[:-2])))
    backend = LD._device.backend
    xp = backend.xp
    k = B.shape[-1]
    with backend.activate():
        if n == 0 or k == 0 or math.prod(batch) == 0:
            out = xp.zeros(batch + (n, k), B.dtype.numpy_dtype)
        else:
            factors = xp.ascontiguousarray(xp.broadcast_to(LD.detach()._data, batch + (n, n))).reshape((-1, n, n))
            swaps = xp.ascontiguousarray(xp.broadcast_to(pivots._data, batch + (n,))).reshape((-1, n))
            rhs = xp.ascontiguousarray(xp.broadcast_to(B.detach()._data, batch + (n, k))).reshape((-1, n, k))
            out = backend.ops.ldl_solve(factors, swaps, rhs, bool(hermitian and LD.dtype.is_complex))
            out = out.reshape(batch + (n, k))
    return _result(out, B.dtype, LD._device)


# torch's top-level names (agnostic.det, x.inverse()...) call these (see agnostic/ops/linalg.py).
_products.linalg_functions.update(det=det, slogdet=slogdet, inv=inv, pinv=pinv, matrix_power=matrix_power,
                                  matrix_exp=matrix_exp, solve=solve, svd=svd, svdvals=svdvals,
                                  lu_factor_ex=lu_factor_ex, lu_solve=lu_solve, solve_triangular=solve_triangular,
                                  cholesky=cholesky, qr=qr)


polar_result = _products.return_type("linalg_polar", ["U", "H"])


@composite(namespace="agnostic.linalg", method=False)
def polar(A):
    """``(U, H)`` with ``A = U @ H`` for each m x n matrix of ``A`` (m >= n): U has orthonormal columns (the nearest
    such matrix to ``A``) and H is Hermitian positive semi-definite, as ``torch.linalg.polar``, from the SVD
    ``A = W S V^H``: ``U = W V^H``, ``H = V S V^H``. Differentiable where ``A`` has full column rank.

        >>> U, H = agnostic.linalg.polar(agnostic.tensor([[0.0, -2.0], [3.0, 0.0]]))
        >>> U
        tensor([[ 0., -1.],
                [ 1.,  0.]])
        >>> H
        tensor([[3., 0.],
                [0., 2.]])
    """
    _check_matrix("polar", A, square=False)
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(f"linalg.polar: input must have at least as many rows as columns, but got "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices; polar-decompose A.mH instead")
    W, S, Vh = svd(A, full_matrices=False)
    V = _mH(Vh)
    return polar_result(W.matmul(Vh), (V * S.to(A.dtype).unsqueeze(-2)).matmul(Vh))


@composite(namespace="agnostic.linalg", method=False)
def matrix_sqrth(A):
    """The principal square root of each Hermitian (real symmetric) positive-definite matrix of ``A``: the
    Hermitian positive-definite X with ``X @ X = A``, as ``torch.linalg.matrix_sqrth``; only the lower triangle is
    read (``eigh``), and negative eigenvalues count as 0. Differentiable.

        >>> agnostic.linalg.matrix_sqrth(agnostic.tensor([[4.0, 0.0], [0.0, 9.0]]))
        tensor([[2., 0.],
                [0., 3.]])
    """
    _check_matrix("matrix_sqrth", A)
    values, vectors = eigh(A)
    roots = values.clamp_min(0).sqrt().to(A.dtype)
    return (vectors * roots.unsqueeze(-2)).matmul(_mH(vectors))


__all__ = public_names(globals()) + ["LinAlgError"]
