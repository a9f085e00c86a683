"""agnostic.linalg's triangular solves, cond, householder_product, tensorinv/tensorsolve, vander, solve_ex and the
LDL factorization, and the deprecated torch.triangular_solve/cholesky/qr: values against NumPy/SciPy and PyTorch,
gradients by gradcheck, PyTorch's errors."""

import warnings

import numpy as np
import pytest
import scipy.linalg

import agnostic
from agnostic.autograd import gradcheck

L = agnostic.linalg


def _tensor(array, device, requires_grad=False):
    return agnostic.tensor(np.asarray(array), device=device, requires_grad=requires_grad)


def _well_conditioned_triangular(rng, shape, upper):
    A = rng.standard_normal(shape) + 4 * np.eye(shape[-1])
    return np.triu(A) if upper else np.tril(A)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular_matches_scipy_and_reads_one_triangle(device, upper, left, unitriangular):
    rng = np.random.default_rng(0)
    A = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)  # both triangles filled: only one may be read
    B = rng.standard_normal((2, 4, 3)) if left else rng.standard_normal((2, 3, 4))
    X = L.solve_triangular(_tensor(A, device), _tensor(B, device), upper=upper, left=left,
                           unitriangular=unitriangular).cpu().numpy()
    for k in range(2):
        if left:
            expected = scipy.linalg.solve_triangular(A[k], B[k], lower=not upper, unit_diagonal=unitriangular)
        else:
            expected = scipy.linalg.solve_triangular(A[k].T, B[k].T, lower=upper, unit_diagonal=unitriangular).T
        np.testing.assert_allclose(X[k], expected, rtol=1e-10, atol=1e-12)


def test_solve_triangular_broadcasts_batches_and_gives_inf_for_a_zero_diagonal(device):
    A = _tensor(np.triu(np.ones((3, 3)) + np.eye(3)), device)
    B = _tensor(np.ones((2, 3, 1)), device)
    X = L.solve_triangular(A, B, upper=True)
    assert X.shape == (2, 3, 1)
    np.testing.assert_allclose((A @ X).cpu().numpy(), B.cpu().numpy(), atol=1e-12)
    singular = L.solve_triangular(agnostic.zeros(2, 2, device=device), agnostic.ones(2, 1, device=device), upper=True)
    assert not np.isfinite(singular.cpu().numpy()).any()


def test_solve_triangular_errors(device):
    A = agnostic.eye(3, device=device)
    with pytest.raises(RuntimeError, match="B must have at least 2 dimensions"):
        L.solve_triangular(A, agnostic.ones(3, device=device), upper=True)
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x2\)"):
        L.solve_triangular(A, agnostic.ones(4, 2, device=device), upper=True)
    with pytest.raises(RuntimeError, match="square matrices"):
        L.solve_triangular(agnostic.ones(3, 2, device=device), agnostic.ones(3, 2, device=device), upper=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        L.solve_triangular(A, agnostic.ones(3, 2, dtype=agnostic.float64, device=device), upper=True)
    with pytest.raises(TypeError):
        L.solve_triangular(A, agnostic.ones(3, 2, device=device))  # upper is required


@pytest.mark.parametrize("upper,left,unitriangular", [(True, True, False), (False, False, True), (False, True, False)])
def test_solve_triangular_gradcheck(device, upper, left, unitriangular):
    rng = np.random.default_rng(1)
    A = _tensor(_well_conditioned_triangular(rng, (2, 3, 3), upper), device, True)
    B = _tensor(rng.standard_normal((3, 2) if left else (2, 3)), device, True)
    assert gradcheck(lambda A, B: L.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular),
                     (A, B))


def test_solve_triangular_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    A0, B0 = _well_conditioned_triangular(rng, (3, 3), False), rng.standard_normal((3, 2))
    A, B = _tensor(A0, device, True), _tensor(B0, device, True)
    L.solve_triangular(A, B, upper=False).square().sum().backward()
    tA, tB = torch.tensor(A0, requires_grad=True), torch.tensor(B0, requires_grad=True)
    torch.linalg.solve_triangular(tA, tB, upper=False).square().sum().backward()
    np.testing.assert_allclose(A.grad.cpu().numpy(), tA.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(B.grad.cpu().numpy(), tB.grad.numpy(), atol=1e-12)


def test_cond_by_norm(device):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((2, 4, 4))
    t = _tensor(A, device)
    for p in (None, 2, -2, "fro", "nuc", np.inf, -np.inf, 1, -1):
        expected = np.linalg.cond(A, p)
        np.testing.assert_allclose(L.cond(t, p).cpu().numpy(), expected, rtol=1e-10)
    assert L.cond(agnostic.zeros(2, 2, device=device), 1).item() == float("inf")
    assert L.cond(_tensor(rng.standard_normal((2, 3)), device)).shape == ()
    with pytest.raises(RuntimeError, match="square"):
        L.cond(agnostic.ones(2, 3, device=device), 1)
    assert L.cond(_tensor(A.astype(np.complex128), device)).dtype == agnostic.float64


def _householder_reference(A, tau):
    m, n = A.shape
    Q = np.eye(m)
    for i in range(len(tau)):
        v = np.concatenate([np.zeros(i), [1.0], A[i + 1:, i]])
        Q = Q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return Q[:, :n]


def test_householder_product_is_the_q_of_lapacks_qr(device):
    rng = np.random.default_rng(4)
    A = rng.standard_normal((5, 3))
    (packed, tau), _ = scipy.linalg.qr(A, mode="raw")
    Q = L.householder_product(_tensor(packed, device), _tensor(tau, device)).cpu().numpy()
    np.testing.assert_allclose(Q, scipy.linalg.qr(A, mode="economic")[0], atol=1e-12)
    tau2 = rng.standard_normal(2)
    np.testing.assert_allclose(L.householder_product(_tensor(A, device), _tensor(tau2, device)).cpu().numpy(),
                               _householder_reference(A, tau2), atol=1e-12)
    with pytest.raises(RuntimeError, match="greater than or equal to tau.shape"):
        L.householder_product(_tensor(A[:, :1], device), _tensor(tau2, device))
    with pytest.raises(RuntimeError, match="one dimension less"):
        L.householder_product(_tensor(A[None], device), _tensor(tau2, device))


def test_householder_product_gradcheck(device):
    rng = np.random.default_rng(5)
    A = _tensor(rng.standard_normal((2, 4, 3)), device, True)
    tau = _tensor(rng.standard_normal((2, 2)), device, True)
    assert gradcheck(L.householder_product, (A, tau))


def test_householder_product_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    A0, tau0 = rng.standard_normal((4, 3)), rng.standard_normal(3)
    A, tau = _tensor(A0, device, True), _tensor(tau0, device, True)
    L.householder_product(A, tau).sin().sum().backward()
    tA, ttau = torch.tensor(A0, requires_grad=True), torch.tensor(tau0, requires_grad=True)
    torch.linalg.householder_product(tA, ttau).sin().sum().backward()
    np.testing.assert_allclose(A.grad.cpu().numpy(), tA.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(tau.grad.cpu().numpy(), ttau.grad.numpy(), atol=1e-10)


def test_tensorinv_and_tensorsolve(device):
    rng = np.random.default_rng(7)
    A = rng.standard_normal((4, 6, 8, 3))
    inverse = L.tensorinv(_tensor(A, device), ind=2).cpu().numpy()
    np.testing.assert_allclose(inverse, np.linalg.tensorinv(A, ind=2), rtol=1e-9, atol=1e-10)
    B = rng.standard_normal((4, 6))
    np.testing.assert_allclose(L.tensorsolve(_tensor(A, device), _tensor(B, device)).cpu().numpy(),
                               np.linalg.tensorsolve(A, B), rtol=1e-9, atol=1e-10)
    C, D = rng.standard_normal((12, 2, 6)), rng.standard_normal((2, 6))
    np.testing.assert_allclose(L.tensorsolve(_tensor(C, device), _tensor(D, device), dims=(0,)).cpu().numpy(),
                               np.linalg.tensorsolve(C, D, axes=(0,)), rtol=1e-9, atol=1e-10)
    with pytest.raises(RuntimeError, match="strictly positive"):
        L.tensorinv(_tensor(A, device), ind=0)
    with pytest.raises(RuntimeError, match="prod"):
        L.tensorinv(_tensor(A[:, :, :, :2], device), ind=2)


def test_tensorinv_and_tensorsolve_gradcheck(device):
    rng = np.random.default_rng(8)
    A = _tensor(rng.standard_normal((2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3, device, True)
    B = _tensor(rng.standard_normal((2, 3)), device, True)
    assert gradcheck(L.tensorsolve, (A, B))
    assert gradcheck(lambda A: L.tensorinv(A, ind=1), (A.detach().reshape(6, 2, 3).requires_grad_(),))


def test_vander(device):
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(L.vander(_tensor(x, device)).cpu().numpy(), np.vander(x, increasing=True))
    np.testing.assert_allclose(L.vander(_tensor(x, device), N=5).cpu().numpy(), np.vander(x, 5, increasing=True))
    ints = L.vander(agnostic.tensor([[1, 2], [3, 4]], device=device))
    assert ints.dtype == agnostic.int64 and ints.tolist() == [[[1, 1], [1, 2]], [[1, 3], [1, 4]]]
    with pytest.raises(RuntimeError, match="N must be greater than 1"):
        L.vander(_tensor(x, device), N=1)
    with pytest.raises(RuntimeError, match="Bool"):
        L.vander(agnostic.tensor([True], device=device), N=2)
    assert gradcheck(lambda x: L.vander(x, N=4), (_tensor(x, device, True),))


def test_solve_ex(device):
    A = _tensor([[2.0, 0.0], [0.0, 4.0]], device)
    result, info = L.solve_ex(A, _tensor([2.0, 2.0], device))
    assert result.tolist() == [1.0, 0.5] and info.item() == 0 and info.dtype == agnostic.int32
    singular = agnostic.zeros(2, 2, dtype=agnostic.float64, device=device)
    result, info = L.solve_ex(singular, _tensor([1.0, 1.0], device))
    assert info.item() > 0 and not np.isfinite(result.cpu().numpy()).all()
    with pytest.raises(L.LinAlgError, match="solve_ex"):
        L.solve_ex(singular, _tensor([1.0, 1.0], device), check_errors=True)
    batch = agnostic.stack([A, singular])
    _, info = L.solve_ex(batch, _tensor(np.ones((2, 2, 1)), device))
    assert info.tolist()[0] == 0 and info.tolist()[1] > 0


def test_ldl_factor_and_solve(device):
    rng = np.random.default_rng(9)
    S = rng.standard_normal((3, 5, 5))
    S = S + S.transpose(0, 2, 1)
    LD, pivots, info = L.ldl_factor_ex(_tensor(S, device))
    assert pivots.dtype == agnostic.int32 and info.tolist() == [0, 0, 0]
    assert np.all(np.triu(LD.cpu().numpy(), 1) == 0)
    B = rng.standard_normal((3, 5, 2))
    X = L.ldl_solve(LD, pivots, _tensor(B, device)).cpu().numpy()
    np.testing.assert_allclose(S @ X, B, atol=1e-10)
    LD2, pivots2 = L.ldl_factor(_tensor([[1.0, 2.0], [2.0, 1.0]], device))
    assert pivots2.tolist() == [-2, -2]
    with pytest.raises(RuntimeError, match="singular"):
        L.ldl_factor(agnostic.zeros(2, 2, device=device))
    assert L.ldl_factor_ex(agnostic.zeros(2, 2, device=device)).info.item() == 1
    with pytest.raises(RuntimeError, match="floating point"):
        L.ldl_factor(agnostic.ones(2, 2, dtype=agnostic.int32, device=device))


def test_ldl_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(10)
    S = rng.standard_normal((2, 4, 4))
    S = S + S.transpose(0, 2, 1)
    ours = L.ldl_factor(_tensor(S, device))
    theirs = torch.linalg.ldl_factor(torch.tensor(S))
    np.testing.assert_allclose(ours.LD.cpu().numpy(), theirs.LD.numpy(), atol=1e-12)
    assert ours.pivots.tolist() == theirs.pivots.tolist()
    H = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    H = H + H.conj().T
    ours = L.ldl_factor(_tensor(H, device), hermitian=True)
    theirs = torch.linalg.ldl_factor(torch.tensor(H), hermitian=True)
    np.testing.assert_allclose(ours.LD.cpu().numpy(), theirs.LD.numpy(), atol=1e-12)
    B = rng.standard_normal((3, 2)) + 0j
    X = L.ldl_solve(*ours, _tensor(B, device), hermitian=True).cpu().numpy()
    np.testing.assert_allclose(H @ X, B, atol=1e-10)


def test_deprecated_top_level_forms_warn_and_compute(device):
    A = _tensor([[2.0, 1.0], [0.0, 4.0]], device)
    b = _tensor([[3.0], [4.0]], device)
    with pytest.warns(UserWarning, match="solve_triangular"):
        solution, coefficient = agnostic.triangular_solve(b, A)
    assert solution.tolist() == [[1.0], [1.0]] and coefficient.tolist() == A.tolist()
    with pytest.warns(UserWarning):
        transposed = b.triangular_solve(A, transpose=True).solution
    np.testing.assert_allclose(transposed.cpu().numpy(), np.linalg.solve(A.cpu().numpy().T, b.cpu().numpy()))
    P = _tensor([[4.0, 2.0], [2.0, 2.0]], device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert P.cholesky().tolist() == [[2.0, 0.0], [1.0, 1.0]]
        assert agnostic.cholesky(P, upper=True).tolist() == [[2.0, 1.0], [0.0, 1.0]]
        Q, R = _tensor(np.random.default_rng(0).standard_normal((4, 2)), device).qr()
        assert Q.shape == (4, 2) and R.shape == (2, 2)
        assert agnostic.qr(_tensor(np.ones((4, 2)), device), some=False).Q.shape == (4, 4)
