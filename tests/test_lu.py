"""LU factorization (``linalg.lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve``, ``lu_unpack``, ``Tensor.lu``,
``Tensor.lu_solve``): PyTorch's packing, 1-based int32 pivots, batching, errors and gradients, against SciPy and
(where installed) PyTorch."""

import numpy
import pytest
import scipy.linalg

import agnostic


def random(shape, seed=0, dtype="float64"):
    values = numpy.random.default_rng(seed).standard_normal(shape)
    if dtype.startswith("complex"):
        values = values + 1j * numpy.random.default_rng(seed + 1).standard_normal(shape)
    return values.astype(dtype)


SHAPES = [(3, 3), (4, 2), (2, 4), (2, 3, 3), (2, 1, 4, 3), (1, 1)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_lu_factor_matches_scipy_per_matrix(device, shape, dtype):
    A = random(shape, dtype=dtype)
    LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor(A, device=device))
    assert LU.dtype.name == dtype and LU.device == agnostic.device(device)
    assert pivots.dtype is agnostic.int32 and tuple(pivots.shape) == shape[:-2] + (min(shape[-2:]),)
    tolerance = 1e-5 if dtype in ("float32", "complex64") else 1e-12
    flat = A.reshape((-1,) + shape[-2:])
    flat_LU = LU.cpu().numpy().reshape(flat.shape)
    flat_pivots = pivots.cpu().numpy().reshape(flat.shape[0], min(shape[-2:]))
    for matrix, got_LU, got_pivots in zip(flat, flat_LU, flat_pivots):
        expected_LU, expected_pivots = scipy.linalg.lu_factor(matrix)
        numpy.testing.assert_allclose(got_LU, expected_LU, rtol=tolerance, atol=tolerance)
        numpy.testing.assert_array_equal(got_pivots, expected_pivots + 1)  # PyTorch's (LAPACK's) are 1-based


@pytest.mark.parametrize("shape", SHAPES)
def test_lu_reconstructs_and_matches_scipy(device, shape):
    A = random(shape, seed=1)
    P, L, U = agnostic.linalg.lu(agnostic.tensor(A, device=device))
    k = min(shape[-2:])
    assert tuple(P.shape) == shape[:-1] + (shape[-2],)
    assert tuple(L.shape) == shape[:-1] + (k,) and tuple(U.shape) == shape[:-2] + (k, shape[-1])
    P, L, U = (t.cpu().numpy() for t in (P, L, U))
    numpy.testing.assert_allclose(P @ L @ U, A, atol=1e-12)
    numpy.testing.assert_array_equal(numpy.tril(U, -1), 0)
    numpy.testing.assert_array_equal(numpy.diagonal(L, 0, -2, -1), 1)
    for index in numpy.ndindex(shape[:-2]):
        expected = scipy.linalg.lu(A[index])
        for got, want in zip((P[index], L[index], U[index]), expected):
            numpy.testing.assert_allclose(got, want, atol=1e-12)


def test_lu_unpack_inverts_lu_factor_and_its_flags(device):
    A = agnostic.tensor(random((2, 4, 4), seed=2), device=device)
    LU, pivots = agnostic.linalg.lu_factor(A)
    P, L, U = agnostic.lu_unpack(LU, pivots)
    numpy.testing.assert_allclose((P @ L @ U).cpu().numpy(), A.cpu().numpy(), atol=1e-12)
    only_pivots = agnostic.lu_unpack(LU, pivots, unpack_data=False)
    assert tuple(only_pivots.L.shape) == (0,) and tuple(only_pivots.U.shape) == (0,)
    numpy.testing.assert_array_equal(only_pivots.P.cpu().numpy(), P.cpu().numpy())
    only_data = agnostic.lu_unpack(LU, pivots, unpack_pivots=False)
    assert tuple(only_data.P.shape) == (0,)
    with pytest.raises(RuntimeError, match="int32"):
        agnostic.lu_unpack(LU, pivots.long())


def test_singular_matrices(device):
    A = numpy.stack([numpy.eye(3), numpy.zeros((3, 3)), numpy.diag([1.0, 0.0, 2.0])])
    tensor = agnostic.tensor(A, device=device)
    LU, pivots, info = agnostic.linalg.lu_factor_ex(tensor)
    numpy.testing.assert_array_equal(info.cpu().numpy(), [0, 1, 2])
    assert info.dtype is agnostic.int32
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): U\[1,1\] is zero"):
        agnostic.linalg.lu_factor(tensor)
    with pytest.raises(RuntimeError, match="U\\[1,1\\] is zero"):
        agnostic.linalg.lu_factor_ex(tensor, check_errors=True)
    P, L, U = agnostic.linalg.lu(tensor)  # factored anyway
    numpy.testing.assert_allclose((P @ L @ U).cpu().numpy(), A, atol=1e-12)


def test_empty_and_batchless_shapes(device):
    P, L, U = agnostic.linalg.lu(agnostic.zeros(2, 0, 3, device=device))
    assert (tuple(P.shape), tuple(L.shape), tuple(U.shape)) == ((2, 0, 0), (2, 0, 0), (2, 0, 3))
    LU, pivots, info = agnostic.linalg.lu_factor_ex(agnostic.zeros(0, 3, 3, device=device))
    assert (tuple(LU.shape), tuple(pivots.shape), tuple(info.shape)) == ((0, 3, 3), (0, 3), (0,))


def test_errors_name_the_problem(device):
    with pytest.raises(RuntimeError, match="2 or more dimensions"):
        agnostic.linalg.lu_factor(agnostic.ones(3, device=device))
    with pytest.raises(RuntimeError, match="floating point"):
        agnostic.linalg.lu_factor(agnostic.ones(3, 3, dtype=agnostic.int64, device=device))
    with pytest.raises(RuntimeError, match="pivot=True"):
        agnostic.linalg.lu(agnostic.ones(3, 3, device=device), pivot=False)
    LU, pivots = agnostic.linalg.lu_factor(agnostic.eye(3, device=device))
    with pytest.raises(RuntimeError, match="Incompatible shapes"):
        agnostic.linalg.lu_solve(LU, pivots, agnostic.ones(2, 1, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.linalg.lu_solve(LU, pivots, agnostic.ones(3, 1, dtype=agnostic.float64, device=device))
    with pytest.raises(RuntimeError, match="square"):
        agnostic.linalg.lu_solve(agnostic.ones(2, 3, device=device), pivots[:2], agnostic.ones(2, 1, device=device))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_lu_solve_solves_every_form(device, left, adjoint, dtype):
    A = random((2, 3, 3), seed=3, dtype=dtype) + 3 * numpy.eye(3)
    B = random((2, 3, 2) if left else (2, 2, 3), seed=4, dtype=dtype)
    LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor(A, device=device))
    X = agnostic.linalg.lu_solve(LU, pivots, agnostic.tensor(B, device=device), left=left, adjoint=adjoint)
    matrix = numpy.conj(numpy.swapaxes(A, -1, -2)) if adjoint else A
    expected = numpy.linalg.solve(matrix, B) if left else numpy.swapaxes(
        numpy.linalg.solve(numpy.swapaxes(matrix, -1, -2), numpy.swapaxes(B, -1, -2)), -1, -2)
    numpy.testing.assert_allclose(X.cpu().numpy(), expected, rtol=1e-10, atol=1e-12)


def test_lu_solve_broadcasts_batches(device):
    A = random((3, 3), seed=5) + 3 * numpy.eye(3)
    B = random((4, 3, 2), seed=6)
    LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor(A, device=device))
    X = agnostic.linalg.lu_solve(LU, pivots, agnostic.tensor(B, device=device))
    numpy.testing.assert_allclose(X.cpu().numpy(), numpy.linalg.solve(A, B), rtol=1e-10, atol=1e-12)


def test_tensor_methods_and_top_level_names(device):
    A = random((2, 3, 3), seed=7) + 3 * numpy.eye(3)
    tensor = agnostic.tensor(A, device=device)
    LU, pivots = tensor.lu()
    expected_LU, expected_pivots = agnostic.linalg.lu_factor(tensor)
    numpy.testing.assert_array_equal(LU.cpu().numpy(), expected_LU.cpu().numpy())
    numpy.testing.assert_array_equal(pivots.cpu().numpy(), expected_pivots.cpu().numpy())
    assert tuple(tensor.lu(get_infos=True).infos.shape) == (2,)
    B = agnostic.tensor(random((2, 3, 1), seed=8), device=device)
    for X in (B.lu_solve(LU, pivots), agnostic.lu_solve(B, LU, pivots)):
        numpy.testing.assert_allclose(X.cpu().numpy(), numpy.linalg.solve(A, B.cpu().numpy()), atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (2, 3, 4)])
def test_gradcheck_through_the_factors(device, shape):
    A = agnostic.tensor(random(shape, seed=9), device=device, requires_grad=True)
    assert agnostic.autograd.gradcheck(lambda a: agnostic.linalg.lu_factor(a).LU, (A,))
    assert agnostic.autograd.gradcheck(lambda a: tuple(agnostic.linalg.lu(a))[1:], (A,))


def test_gradcheck_through_lu_solve(device):
    A = agnostic.tensor(random((2, 3, 3), seed=10) + 3 * numpy.eye(3), device=device, requires_grad=True)
    B = agnostic.tensor(random((2, 3, 2), seed=11), device=device, requires_grad=True)
    assert agnostic.autograd.gradcheck(lambda a, b: agnostic.linalg.lu_solve(*agnostic.linalg.lu_factor(a), b),
                                       (A, B))
    assert agnostic.autograd.gradcheck(
        lambda a, b: agnostic.linalg.lu_solve(*agnostic.linalg.lu_factor(a), b.mT, left=False, adjoint=True), (A, B))


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 3), (2, 3, 4)])
def test_values_and_gradients_match_pytorch(device, shape):
    torch = pytest.importorskip("torch")
    A, weights = random(shape, seed=12), random(shape, seed=13)
    ours = agnostic.tensor(A, device=device, requires_grad=True)
    theirs = torch.tensor(A, requires_grad=True)
    LU, pivots = agnostic.linalg.lu_factor(ours)
    expected_LU, expected_pivots = torch.linalg.lu_factor(theirs)
    numpy.testing.assert_allclose(LU.detach().cpu().numpy(), expected_LU.detach().numpy(), atol=1e-12)
    numpy.testing.assert_array_equal(pivots.cpu().numpy(), expected_pivots.numpy())
    (LU * agnostic.tensor(weights, device=device)).sum().backward()
    (expected_LU * torch.tensor(weights)).sum().backward()
    numpy.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-11)
    ours.grad = theirs.grad = None
    P, L, U = agnostic.linalg.lu(ours)
    (L.pow(2).sum() + U.sin().sum()).backward()
    _, L, U = torch.linalg.lu(theirs)
    (L.pow(2).sum() + U.sin().sum()).backward()
    numpy.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-9, atol=1e-11)
