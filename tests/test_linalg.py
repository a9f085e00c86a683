"""agnostic.linalg: values against NumPy and PyTorch, batching, result dtypes, errors and gradients."""

import math

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

L = agnostic.linalg
RNG = np.random.default_rng(0)


def _random(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _spd(*batch, n=3):
    """Symmetric positive-definite matrices."""
    a = _random(*batch, n, n)
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def _tensor(array, device, requires_grad=False):
    return agnostic.tensor(array, device=device, requires_grad=requires_grad)


def _close(tensor, expected, atol=1e-5):
    np.testing.assert_allclose(tensor.cpu().numpy(), expected, atol=atol, rtol=1e-4)


# ----- norms ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3.5, -1.5])
def test_vector_norm_matches_numpy(device, ord):
    x = _random(4, 5, dtype=np.float32)
    result = L.vector_norm(_tensor(x, device), ord, dim=1)
    assert result.dtype is agnostic.float32
    _close(result, np.linalg.norm(x, ord, axis=1))


def test_vector_norm_of_complex_is_real_and_keeps_dims(device):
    x = _random(3, 4) + 1j * _random(3, 4)
    result = L.vector_norm(_tensor(x, device), dim=(0, 1), keepdim=True)
    assert result.dtype is agnostic.float64 and result.shape == (1, 1)
    _close(result, [[np.sqrt((np.abs(x) ** 2).sum())]])


def test_vector_norm_refuses_integers(device):
    with pytest.raises(RuntimeError, match="floating point or complex"):
        L.vector_norm(agnostic.tensor([3, 4], device=device))


def test_vector_norm_dtype_argument(device):
    result = L.vector_norm(agnostic.tensor([3.0, 4.0], device=device), dtype=agnostic.float64)
    assert result.dtype is agnostic.float64 and result.item() == 5.0


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf])
def test_matrix_norm_matches_numpy_on_batches(device, ord):
    a = _random(2, 3, 4)
    _close(L.matrix_norm(_tensor(a, device), ord), np.linalg.norm(a, ord, axis=(-2, -1)))
    kept = L.matrix_norm(_tensor(a, device), ord, dim=(0, 2), keepdim=True)
    assert kept.shape == (1, 3, 1)
    _close(kept, np.linalg.norm(a, ord, axis=(0, 2), keepdims=True))


def test_norm_dispatches_between_vector_and_matrix_norms(device):
    a = _random(3, 4)
    t = _tensor(a, device)
    _close(L.norm(t), np.sqrt((a * a).sum()))
    _close(L.norm(t, 2), np.linalg.norm(a, 2))  # 2-D with ord: the matrix 2-norm
    _close(L.norm(t, 1, dim=0), np.abs(a).sum(0))
    b = _random(2, 3, 4)
    _close(L.norm(_tensor(b, device)), np.sqrt((b * b).sum()))
    with pytest.raises(RuntimeError, match="1D or 2D"):
        L.norm(_tensor(_random(2, 3, 4), device), 2)


@pytest.mark.parametrize("ord", [2, 1, math.inf, 3.0])
def test_vector_norm_gradcheck(device, ord):
    x = _tensor(_random(3, 4), device, requires_grad=True)
    assert gradcheck(lambda t: L.vector_norm(t, ord, dim=1), (x,))


def test_vector_norm_gradient_is_zero_at_zero(device):
    x = agnostic.zeros(3, device=device, requires_grad=True)
    L.vector_norm(x).backward()
    assert x.grad.cpu().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, 1, math.inf])
def test_matrix_norm_gradcheck(device, ord):
    a = _tensor(_random(3, 3), device, requires_grad=True)
    assert gradcheck(lambda t: L.matrix_norm(t, ord), (a,))


# ----- inverses, solves, determinants -------------------------------------------------------------------------------
def test_inv_batched_float32(device):
    a = _random(2, 3, 3, dtype=np.float32) + 3 * np.eye(3, dtype=np.float32)
    result = L.inv(_tensor(a, device))
    assert result.dtype is agnostic.float32 and result.shape == (2, 3, 3)
    _close(result, np.linalg.inv(a), atol=1e-4)


def test_inv_of_a_singular_matrix_raises_linalg_error(device):
    batch = np.stack([np.eye(2), np.zeros((2, 2))])
    with pytest.raises(L.LinAlgError, match=r"Batch element 1.*singular"):
        L.inv(_tensor(batch, device))
    assert issubclass(L.LinAlgError, RuntimeError)


def test_inv_refuses_non_square_and_integer_input(device):
    with pytest.raises(RuntimeError, match="square matrices, but they are 2 by 3"):
        L.inv(agnostic.zeros(2, 3, device=device))
    with pytest.raises(RuntimeError, match="floating point or complex tensor as input. Got Long"):
        L.inv(agnostic.tensor([[1, 0], [0, 1]], device=device))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        L.inv(agnostic.ones(3, device=device))


def test_inv_ex_reports_singular_matrices_in_info(device):
    batch = np.stack([2 * np.eye(2), np.zeros((2, 2))])
    inverse, info = L.inv_ex(_tensor(batch, device))
    assert info.dtype is agnostic.int32 and info.cpu().tolist()[0] == 0 and info.cpu().tolist()[1] > 0
    _close(inverse[0], 0.5 * np.eye(2))


def test_solve_matrix_vector_left_right_and_broadcast(device):
    a = _random(2, 3, 3) + 3 * np.eye(3)
    b = _random(2, 3, 4)
    _close(L.solve(_tensor(a, device), _tensor(b, device)), np.linalg.solve(a, b))
    v = _random(2, 3)
    _close(L.solve(_tensor(a, device), _tensor(v, device)), np.linalg.solve(a, v[..., None])[..., 0])
    c = _random(4, 3)
    _close(L.solve(_tensor(a, device), _tensor(c, device), left=False), c @ np.linalg.inv(a))
    _close(L.solve(_tensor(a, device), _tensor(b[0], device)), np.linalg.solve(a, b[0]))


def test_solve_errors(device):
    with pytest.raises(L.LinAlgError, match="singular"):
        L.solve(agnostic.zeros(2, 2, device=device), agnostic.ones(2, device=device))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        L.solve(agnostic.eye(2, device=device), agnostic.ones(3, 1, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        L.solve(agnostic.eye(2, device=device), agnostic.ones(2, dtype=agnostic.float64, device=device))
    with pytest.raises(RuntimeError, match=r"XA = B \(2x2 and 2x1\)"):  # a vector B is a column, as in PyTorch
        L.solve(agnostic.eye(2, device=device), agnostic.ones(2, device=device), left=False)
    with pytest.raises(RuntimeError, match="Vector broadcasting of the left hand side is not supported"):
        L.solve(agnostic.eye(1, device=device), agnostic.ones(1, device=device), left=False)


@pytest.mark.parametrize("a_shape, b_shape, left", [((1, 1), (1, 0), True), ((2, 0, 0), (2, 0), True),
                                                    ((0, 3, 3), (0, 3), True), ((3, 3), (0, 3), False)])
def test_solve_with_nothing_to_solve_gives_an_empty_result(device, a_shape, b_shape, left):
    a = np.broadcast_to(np.eye(a_shape[-1]), a_shape).copy()
    result = L.solve(_tensor(a, device), agnostic.ones(b_shape, dtype=agnostic.float64, device=device), left=left)
    assert tuple(result.shape) == b_shape and result.dtype is agnostic.float64  # as torch.linalg.solve gives


def test_det_and_slogdet(device):
    a = _random(3, 4, 4)
    t = _tensor(a, device)
    _close(L.det(t), np.linalg.det(a))
    sign, logabsdet = L.slogdet(t)
    expected_sign, expected_log = np.linalg.slogdet(a)
    _close(sign, expected_sign)
    _close(logabsdet, expected_log)
    assert L.det(t.float()).dtype is agnostic.float32
    singular = L.slogdet(agnostic.zeros(2, 2, device=device))
    assert singular.sign.item() == 0 and singular.logabsdet.item() == -math.inf


def test_cholesky_lower_and_upper(device):
    a = _spd(2)
    _close(L.cholesky(_tensor(a, device)), np.linalg.cholesky(a))
    _close(L.cholesky(_tensor(a, device), upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2))


def test_cholesky_of_an_indefinite_matrix_raises_with_the_minor(device):
    a = agnostic.tensor([[1.0, 2.0], [2.0, 1.0]], device=device)
    with pytest.raises(L.LinAlgError, match="leading minor of order 2 is not positive-definite"):
        L.cholesky(a)
    factor, info = L.cholesky_ex(a)
    assert info.item() == 2


def test_inv_solve_det_cholesky_gradcheck(device):
    a = _tensor(_random(3, 3) + 3 * np.eye(3), device, requires_grad=True)
    b = _tensor(_random(3, 2), device, requires_grad=True)
    assert gradcheck(L.inv, (a,))
    assert gradcheck(lambda x, y: L.solve(x, y), (a, b))
    assert gradcheck(lambda x, y: L.solve(x, y.mT, left=False), (a, b))
    assert gradcheck(lambda x, y: L.solve(x, y[:, 0]), (a, b))
    assert gradcheck(L.det, (a,))
    assert gradcheck(lambda x: L.slogdet(x).logabsdet, (a,))
    spd = _tensor(_spd(2), device, requires_grad=True)
    assert gradcheck(lambda x: L.cholesky(x @ x.mT), (spd,))
    assert gradcheck(lambda x: L.cholesky(x @ x.mT, upper=True), (spd,))


def test_inv_solve_cholesky_backward_match_pytorch(device):
    torch = pytest.importorskip("torch")
    a = _spd(2)
    g = _random(2, 3, 3)
    for op, reference in ((L.inv, torch.linalg.inv), (L.cholesky, torch.linalg.cholesky),
                          (lambda x: L.solve(x, x.sum(-1)), lambda x: torch.linalg.solve(x, x.sum(-1)))):
        ours = _tensor(a, device, requires_grad=True)
        theirs = torch.tensor(a, requires_grad=True)
        out = op(ours)
        expected = reference(theirs)
        out.backward(_tensor(g[..., : out.shape[-1]] if out.ndim == 3 else g[..., 0], device))
        expected.backward(torch.tensor(g[..., : expected.shape[-1]] if expected.ndim == 3 else g[..., 0]))
        _close(ours.grad, theirs.grad.numpy())


# ----- decompositions ---------------------------------------------------------------------------------------------
def test_eigh_batched(device):
    a = _spd(2)
    values, vectors = L.eigh(_tensor(a, device))
    expected_values, _ = np.linalg.eigh(a)
    _close(values, expected_values)
    rebuilt = vectors.cpu().numpy() @ (values.cpu().numpy()[..., None] * np.swapaxes(vectors.cpu().numpy(), -1, -2))
    np.testing.assert_allclose(rebuilt, a, atol=1e-8)
    _close(L.eigvalsh(_tensor(a, device), UPLO="U"), expected_values)
    assert L.eigh(_tensor(a, device).float()).eigenvalues.dtype is agnostic.float32


def test_eigh_and_eigvalsh_gradcheck(device):
    x = _tensor(_random(3, 3), device, requires_grad=True)
    assert gradcheck(lambda t: L.eigvalsh(t + t.mT), (x,))
    # eigenvectors are defined up to sign: check a sign-invariant function of them
    assert gradcheck(lambda t: (lambda r: (r.eigenvectors ** 2, r.eigenvalues))(L.eigh(t + t.mT)), (x,))


def test_eig_is_complex(device):
    a = np.array([[0.0, -1.0], [1.0, 0.0]], np.float32)
    values, vectors = L.eig(_tensor(a, device))
    assert values.dtype is agnostic.complex64 and vectors.dtype is agnostic.complex64
    np.testing.assert_allclose(sorted(values.cpu().numpy(), key=lambda z: z.imag), [-1j, 1j], atol=1e-6)
    assert L.eigvals(_tensor(a.astype(np.float64), device)).dtype is agnostic.complex128


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (3, 5)])
def test_svd_reconstructs_and_matches_singular_values(device, shape):
    a = _random(*shape)
    U, S, Vh = L.svd(_tensor(a, device), full_matrices=False)
    k = min(shape[-2:])
    assert U.shape == shape[:-1] + (k,) and Vh.shape == shape[:-2] + (k, shape[-1])
    rebuilt = (U.cpu().numpy() * S.cpu().numpy()[..., None, :]) @ Vh.cpu().numpy()
    np.testing.assert_allclose(rebuilt, a, atol=1e-8)
    _close(L.svdvals(_tensor(a, device)), np.linalg.svd(a, compute_uv=False))
    full = L.svd(_tensor(a, device))
    assert full.U.shape[-1] == shape[-2] and full.Vh.shape[-2] == shape[-1]


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_svd_and_svdvals_gradcheck(device, shape):
    x = _tensor(_random(*shape), device, requires_grad=True)
    assert gradcheck(L.svdvals, (x,))
    # U and Vh are defined up to sign per singular value: U diag(S) Vh and |U| are invariant
    assert gradcheck(lambda t: (lambda r: (r.U * r.S.unsqueeze(-2)) @ r.Vh)(L.svd(t, full_matrices=False)), (x,))
    assert gradcheck(lambda t: (lambda r: (r.U ** 2, r.Vh ** 2))(L.svd(t, full_matrices=False)), (x,))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4), (2, 4, 2)])
def test_qr_values_and_gradcheck(device, shape):
    a = _random(*shape)
    Q, R = L.qr(_tensor(a, device))
    np.testing.assert_allclose(Q.cpu().numpy() @ R.cpu().numpy(), a, atol=1e-8)
    _close(R.abs(), np.abs(np.linalg.qr(a)[1]))
    x = _tensor(a, device, requires_grad=True)
    assert gradcheck(lambda t: tuple(L.qr(t)), (x,))
    complete = L.qr(_tensor(a, device), mode="complete")
    assert complete.Q.shape[-1] == shape[-2]


def test_decompositions_backward_match_pytorch(device):
    torch = pytest.importorskip("torch")
    a = _random(4, 3)
    for op, reference in ((lambda x: L.svd(x, full_matrices=False), lambda x: torch.linalg.svd(x, full_matrices=False)),
                          (L.qr, torch.linalg.qr),
                          (lambda x: L.eigh(x.mT @ x), lambda x: torch.linalg.eigh(x.mT @ x))):
        ours = _tensor(a, device, requires_grad=True)
        theirs = torch.tensor(a, requires_grad=True)
        out, expected = op(ours), reference(theirs)
        # compare only sign-invariant quantities
        sum((o ** 2).sum() for o in out).backward()
        sum((e ** 2).sum() for e in expected).backward()
        _close(ours.grad, theirs.grad.numpy())


# ----- least squares, ranks, powers, products ---------------------------------------------------------------------
def test_lstsq_pinv_rank(device):
    a = _random(2, 5, 3)
    b = _random(2, 5, 2)
    result = L.lstsq(_tensor(a, device), _tensor(b, device))
    expected = np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[0] for i in range(2)])
    _close(result.solution, expected)
    assert result.rank.cpu().tolist() == [3, 3]
    gelsd = L.lstsq(_tensor(a, device), _tensor(b, device), driver="gelsd")
    _close(gelsd.residuals, np.stack([np.linalg.lstsq(a[i], b[i], rcond=None)[1] for i in range(2)]))
    _close(gelsd.singular_values, np.linalg.svd(a, compute_uv=False))
    _close(L.pinv(_tensor(a, device)), np.linalg.pinv(a))
    low_rank = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert L.matrix_rank(_tensor(low_rank, device)).item() == 1
    assert L.matrix_rank(_tensor(a, device)).dtype is agnostic.int64
    x = _tensor(a[0], device, requires_grad=True)
    assert gradcheck(L.pinv, (x,))


def test_matrix_power_multi_dot_cross_vecdot(device):
    a = _random(2, 3, 3) + 2 * np.eye(3)
    t = _tensor(a, device)
    _close(L.matrix_power(t, 5), np.linalg.matrix_power(a, 5), atol=1e-6)
    _close(L.matrix_power(t, -2), np.linalg.matrix_power(np.linalg.inv(a), 2), atol=1e-6)
    _close(L.matrix_power(t, 0), np.broadcast_to(np.eye(3), a.shape))
    ints = agnostic.tensor([[1, 1], [0, 1]], device=device)
    assert L.matrix_power(ints, 3).cpu().tolist() == [[1, 3], [0, 1]]
    mats = [_random(2, 3), _random(3, 4), _random(4)]
    _close(L.multi_dot([_tensor(m, device) for m in mats]), np.linalg.multi_dot(mats))
    u, v = _random(4, 3), _random(1, 3)
    _close(L.cross(_tensor(u, device), _tensor(v, device)), np.cross(u, v))
    _close(L.cross(_tensor(u.T.copy(), device), _tensor(u.T.copy()[::-1].copy(), device), dim=0),
           np.cross(u.T, u.T[::-1], axis=0))
    _close(L.vecdot(_tensor(u, device), _tensor(v, device)), (u * v).sum(-1))
    _close(L.matmul(_tensor(u, device), _tensor(v[0], device)), u @ v[0])
    _close(L.diagonal(_tensor(a, device)), np.diagonal(a, axis1=-2, axis2=-1))
    with pytest.raises(RuntimeError, match="length 3"):
        L.cross(agnostic.ones(2, device=device), agnostic.ones(2, device=device))


def test_matrix_exp(device):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = _random(2, 3, 3) * 2
    _close(L.matrix_exp(_tensor(a, device)), np.stack([scipy_linalg.expm(m) for m in a]), atol=1e-6)
    x = _tensor(_random(2, 2), device, requires_grad=True)
    assert gradcheck(L.matrix_exp, (x,))


def test_values_match_pytorch(device):
    torch = pytest.importorskip("torch")
    a = _random(2, 4, 4).astype(np.float32)
    t, r = _tensor(a, device), torch.tensor(a)
    for ours, theirs in ((L.det(t), torch.linalg.det(r)), (L.matrix_norm(t, "nuc"), torch.linalg.matrix_norm(r, "nuc")),
                         (L.norm(t, dim=(1, 2)), torch.linalg.norm(r, dim=(1, 2))),
                         (L.svdvals(t), torch.linalg.svdvals(r)), (L.pinv(t), torch.linalg.pinv(r)),
                         (L.matrix_rank(t), torch.linalg.matrix_rank(r)),
                         (L.matrix_exp(t), torch.linalg.matrix_exp(r))):
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        assert tuple(ours.shape) == tuple(theirs.shape)
        _close(ours, theirs.numpy(), atol=1e-4)


def test_norms_of_half_precision_accumulate_in_float32(device):
    x = agnostic.full((4096,), 100.0, dtype=agnostic.float16, device=device)
    result = L.vector_norm(x)
    assert result.dtype is agnostic.float16 and result.item() == 6400.0
    assert L.matrix_norm(x.reshape(64, 64), 1).item() == 6400.0
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported"):
        L.inv(agnostic.eye(2, dtype=agnostic.float16, device=device))


def test_complex_matrices(device):
    a = _random(2, 3, 3) + 1j * _random(2, 3, 3) + 3 * np.eye(3)
    t = _tensor(a, device)
    _close(L.inv(t), np.linalg.inv(a))
    _close(L.det(t), np.linalg.det(a))
    hermitian = a @ np.conj(np.swapaxes(a, -1, -2))
    _close(L.cholesky(_tensor(hermitian, device), upper=True),
           np.conj(np.swapaxes(np.linalg.cholesky(hermitian), -1, -2)))
    values = L.eigvalsh(_tensor(hermitian, device))
    assert values.dtype is agnostic.float64
    _close(values, np.linalg.eigvalsh(hermitian))
    _close(L.vecdot(t, t), (np.conj(a) * a).sum(-1))


@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_complex_backward_matches_pytorch(device, shape):
    torch = pytest.importorskip("torch")
    a = _random(*shape) + 1j * _random(*shape)
    square = a[..., :3, :3] + 3 * np.eye(3)
    cases = [(lambda t: L.qr(t).Q, lambda t: torch.linalg.qr(t).Q, a),
             (lambda t: L.qr(t).R, lambda t: torch.linalg.qr(t).R, a),
             (L.svdvals, torch.linalg.svdvals, a),
             (L.inv, torch.linalg.inv, square), (L.det, torch.linalg.det, square),
             (lambda t: L.eigvalsh(t), lambda t: torch.linalg.eigvalsh(t), square)]
    for op, reference, value in cases:
        ours = _tensor(value, device, requires_grad=True)
        theirs = torch.tensor(value, requires_grad=True)
        out, expected = op(ours), reference(theirs)
        grad = _random(*expected.shape) + (1j * _random(*expected.shape) if expected.is_complex() else 0)
        out.backward(_tensor(grad, device))
        expected.backward(torch.tensor(grad))
        _close(ours.grad, theirs.grad.numpy(), atol=1e-8)


def test_det_gradient_of_a_singular_matrix_is_the_adjugate(device):
    a = _tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 5.0]], device, requires_grad=True)
    L.det(a).backward()
    m = a.detach().cpu().numpy()
    cofactors = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(m, i, 0), j, 1)) for j in range(3)]
                          for i in range(3)])
    _close(a.grad, cofactors, atol=1e-5)  # float32: the SVD behind a singular adjugate rounds
    batch = _tensor(np.stack([np.eye(2), np.zeros((2, 2)), [[1.0, 2.0], [3.0, 4.0]]]), device, requires_grad=True)
    L.det(batch).sum().backward()
    _close(batch.grad, [[[1, 0], [0, 1]], [[0, 0], [0, 0]], [[4, -3], [-2, 1]]], atol=1e-5)
