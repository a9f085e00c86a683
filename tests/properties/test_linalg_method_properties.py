"""torch's top-level linear algebra names and Tensor methods (det, logdet, slogdet, inverse, pinverse, matrix_power,
matrix_exp, cholesky_solve, cholesky_inverse, the older svd with ``some``), einsum's sublist form and the LU
factorization (``linalg.lu_factor_ex``, ``lu``, ``lu_solve``) agree across devices and with NumPy/SciPy on batches
of well-conditioned matrices drawn by construction; their gradients pass gradcheck in float64 and match PyTorch's
where it is installed."""

import warnings

import numpy as np
import pytest
import scipy.linalg
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import DEVICES, arrays, check_tensor, fewer_examples, on_all_devices, shapes

TOLERANCE = {"float32": 2e-4, "float64": 1e-9}


@st.composite
def well_conditioned(draw, names=("float32", "float64"), max_n=4, min_n=1):
    """(batch of square matrices, dtype name): a random part in [-1, 1] plus ``n + 1`` on the diagonal, so every
    matrix is diagonally dominant (invertible, condition number below 2n + 1)."""
    name = draw(st.sampled_from(names))
    batch = draw(shapes(max_dims=2, min_side=1, max_side=3))
    n = draw(st.integers(min_n, max_n))
    a = draw(arrays(name, batch + (n, n), -1, 1))
    sign = draw(st.sampled_from([1, -1]))
    return (a + sign * (n + 1) * np.eye(n, dtype=a.dtype)).astype(a.dtype), name


@st.composite
def cholesky_factors(draw, names=("float32", "float64"), max_n=4):
    """(lower factor L of a positive-definite matrix, dtype name): a triangle with a positive, dominant diagonal."""
    a, name = draw(well_conditioned(names, max_n))
    lower = np.tril(a)
    n = a.shape[-1]
    lower = lower - np.diagonal(lower, 0, -2, -1)[..., None] * np.eye(n) + (n + 1) * np.eye(n)
    return lower.astype(a.dtype), name


def _tolerance(name):
    return dict(rtol=TOLERANCE[name], atol=TOLERANCE[name])


@fewer_examples(0.5)
@given(well_conditioned())
def test_det_slogdet_logdet_match_numpy(case):
    a, name = case
    wide = a.astype(np.float64)
    check_tensor(on_all_devices(agnostic.det, a), np.linalg.det(wide), name, **_tolerance(name))
    check_tensor(on_all_devices(lambda t: t.det(), a), np.linalg.det(wide), name, **_tolerance(name))
    sign, logabsdet = np.linalg.slogdet(wide)
    outcome = on_all_devices(lambda t: tuple(t.slogdet()), a).ok()
    check_tensor(outcome[0], sign, name)
    check_tensor(outcome[1], logabsdet, name, **_tolerance(name))
    expected = np.where(sign < 0, np.nan, logabsdet)
    check_tensor(on_all_devices(agnostic.logdet, a), expected, name, **_tolerance(name))


@fewer_examples(0.5)
@given(well_conditioned(), st.data())
def test_inverse_and_pinverse_match_numpy(case, data):
    a, name = case
    wide = a.astype(np.float64)
    check_tensor(on_all_devices(agnostic.inverse, a), np.linalg.inv(wide), name, **_tolerance(name))
    check_tensor(on_all_devices(lambda t: t.inverse(), a), np.linalg.inv(wide), name, **_tolerance(name))
    columns = data.draw(st.integers(1, 4))
    rectangular = np.ascontiguousarray(a[..., :columns])  # full column rank: a dominant diagonal block
    check_tensor(on_all_devices(lambda t: t.pinverse(), rectangular), np.linalg.pinv(rectangular.astype(np.float64)),
                 name, **_tolerance(name))


def test_singular_inverse_raises_on_every_device():
    on_all_devices(agnostic.inverse, np.zeros((2, 2))).raises(RuntimeError)
    on_all_devices(agnostic.inverse, np.ones((2, 3))).raises(RuntimeError)
    on_all_devices(agnostic.det, np.ones((2, 2), np.int64)).raises(RuntimeError)


@fewer_examples(0.5)
@given(well_conditioned(), st.integers(-3, 4))
def test_matrix_power_matches_numpy(case, n):
    a, name = case
    a = (a / a.shape[-1]).astype(a.dtype)  # powers stay of order one
    expected = np.linalg.matrix_power(a.astype(np.float64), n)
    check_tensor(on_all_devices(lambda t: t.matrix_power(n), a), expected, name, rtol=1e-3 if name == "float32"
                 else 1e-9, atol=1e-3 if name == "float32" else 1e-9)
    check_tensor(on_all_devices(agnostic.matrix_power, a, n), expected, name, rtol=1e-3 if name == "float32"
                 else 1e-9, atol=1e-3 if name == "float32" else 1e-9)


@fewer_examples(0.5)
@given(well_conditioned())
def test_matrix_exp_matches_scipy(case):
    a, name = case
    a = (a / (2 * a.shape[-1])).astype(a.dtype)
    flat = a.astype(np.float64).reshape((-1,) + a.shape[-2:])
    expected = np.stack([scipy.linalg.expm(m) for m in flat]).reshape(a.shape) if flat.size else flat
    check_tensor(on_all_devices(lambda t: t.matrix_exp(), a), expected, name, **_tolerance(name))


@fewer_examples(0.5)
@given(cholesky_factors(), st.booleans(), st.integers(1, 3), st.data())
def test_cholesky_solve_and_inverse_match_numpy(case, upper, columns, data):
    lower, name = case
    factor = np.ascontiguousarray(np.swapaxes(lower, -1, -2)) if upper else lower
    wide = lower.astype(np.float64)
    matrix = wide @ np.swapaxes(wide, -1, -2)
    b = data.draw(arrays(name, lower.shape[:-1] + (columns,), -3, 3))
    expected = np.linalg.solve(matrix, b.astype(np.float64))
    check_tensor(on_all_devices(lambda rhs, f: rhs.cholesky_solve(f, upper), b, factor), expected, name,
                 **_tolerance(name))
    check_tensor(on_all_devices(lambda f: agnostic.cholesky_inverse(f, upper), factor), np.linalg.inv(matrix), name,
                 **_tolerance(name))


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64"]), shapes(max_dims=1, min_side=1, max_side=2),
       st.integers(1, 4), st.integers(1, 4), st.booleans(), st.booleans(), st.data())
def test_svd_reconstructs_with_some_and_compute_uv(name, batch, rows, columns, some, compute_uv, data):
    """Singular vectors are unique only up to sign (and the completion of U or V to a square basis is arbitrary), so
    devices are compared on what is unique: the singular values, the product U S V^T, and U^T U and V^T V (identities
    of U's and V's widths, or zeros without ``compute_uv``)."""
    a = data.draw(arrays(name, batch + (rows, columns), -3, 3))
    k = min(rows, columns)

    def invariants(t):
        U, S, V = t.svd(some=some, compute_uv=compute_uv)
        return S, (U[..., :k] * S[..., None, :]) @ V[..., :k].mT, U.mT @ U, V.mT @ V

    outcome = on_all_devices(invariants, a, rtol=1e-3, atol=1e-3)
    S, rebuilt, gram_u, gram_v = (snap.array for snap in outcome.ok())
    check_tensor(outcome.value[0], np.linalg.svd(a.astype(np.float64), compute_uv=False), name, **_tolerance(name))
    if not compute_uv:
        assert gram_u.shape == batch + (rows, rows) and gram_v.shape == batch + (columns, columns)
        assert not gram_u.any() and not gram_v.any()
        return
    assert gram_u.shape == batch + ((k, k) if some else (rows, rows))
    assert gram_v.shape == batch + ((k, k) if some else (columns, columns))
    tolerance = _tolerance(name) if name == "float64" else dict(rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rebuilt, a, **tolerance)
    np.testing.assert_allclose(gram_u, np.broadcast_to(np.eye(gram_u.shape[-1]), gram_u.shape), **tolerance)
    np.testing.assert_allclose(gram_v, np.broadcast_to(np.eye(gram_v.shape[-1]), gram_v.shape), **tolerance)


# ----- einsum's sublist form ------------------------------------------------------------------------------------
@st.composite
def sublist_contractions(draw):
    """(operands, sublists, output sublist or None, equivalent equation): two operands over subscripts 0-4, some
    shared, with an ellipsis sometimes."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=5, max_size=5))
    first = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3, unique=True))
    second = draw(st.lists(st.integers(0, 4), min_size=0, max_size=3, unique=True))
    ellipsis = draw(st.booleans())
    batch = tuple(draw(st.lists(st.integers(1, 2), max_size=2))) if ellipsis else ()
    a = draw(arrays("float64", batch + tuple(sizes[i] for i in first), -3, 3))
    b = draw(arrays("float64", batch + tuple(sizes[i] for i in second), -3, 3))
    letters = "abcde"
    left = ("..." if ellipsis else "") + "".join(letters[i] for i in first)
    right = ("..." if ellipsis else "") + "".join(letters[i] for i in second)
    sublist_a = ([Ellipsis] if ellipsis else []) + first
    sublist_b = ([Ellipsis] if ellipsis else []) + second
    explicit = draw(st.booleans())
    if not explicit:
        return (a, b), (sublist_a, sublist_b), None, f"{left},{right}"
    kept = sorted(set(draw(st.lists(st.sampled_from(sorted(set(first + second) or [0])), max_size=3)))
                  & set(first + second))
    output = ([Ellipsis] if ellipsis else []) + kept
    return (a, b), (sublist_a, sublist_b), output, f"{left},{right}->" + ("..." if ellipsis else "") + "".join(
        letters[i] for i in kept)


@fewer_examples(0.5)
@given(sublist_contractions())
def test_einsum_sublist_form_equals_the_equation_form(case):
    (a, b), (sublist_a, sublist_b), output, equation = case
    tail = [] if output is None else [output]
    outcome = on_all_devices(lambda x, y: agnostic.einsum(x, sublist_a, y, sublist_b, *tail), a, b)
    check_tensor(outcome, np.einsum(equation, a, b), "float64", rtol=1e-10, atol=1e-10)
    check_tensor(outcome, on_all_devices(lambda x, y: agnostic.einsum(equation, x, y), a, b).ok().array, "float64",
                 rtol=1e-12, atol=1e-12)


def test_einsum_sublist_refuses_out_of_range_subscripts():
    on_all_devices(lambda x: agnostic.einsum(x, [0, 52]), np.ones((2, 2))).raises(ValueError, RuntimeError)


# ----- gradients ------------------------------------------------------------------------------------------------
def _symmetric_factor(t):
    """A differentiable lower factor with a dominant positive diagonal, from a matrix of ``well_conditioned`` (its
    diagonal within 1 of n + 1 or of -(n + 1))."""
    n = t.shape[-1]
    return t.tril() + 2 * (n + 1) * agnostic.eye(n, dtype=t.dtype, device=t.device)


GRADIENT_FUNCTIONS = {
    "det": agnostic.det,
    "logdet": lambda t: (t @ t.mT).logdet(),
    "slogdet": lambda t: t.slogdet().logabsdet,
    "inverse": agnostic.inverse,
    "pinverse": lambda t: t[..., :max(t.shape[-1] - 1, 1)].pinverse(),
    "matrix_power": lambda t: t.matrix_power(3),
    "matrix_power_negative": lambda t: t.matrix_power(-2),
    "matrix_exp": lambda t: (t / 4).matrix_exp(),
    "cholesky_inverse": lambda t: agnostic.cholesky_inverse(_symmetric_factor(t)),
    "cholesky_solve": lambda t: agnostic.cholesky_solve(t[..., :1] * 2, _symmetric_factor(t)),
    "svd_values": lambda t: t.svd().S,
}


@fewer_examples(0.1, minimum=3)
@pytest.mark.parametrize("name", sorted(GRADIENT_FUNCTIONS))
@given(well_conditioned(names=("float64",), max_n=3))
def test_gradcheck_in_float64(name, case):
    a, _ = case
    if name == "svd_values":  # a repeated singular value has no derivative (finite differences see a kink)
        values = np.linalg.svd(a, compute_uv=False)
        assume(values.shape[-1] < 2 or np.abs(np.diff(values, axis=-1)).min() > 1e-3)
    for device in DEVICES:
        leaf = agnostic.tensor(a, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(GRADIENT_FUNCTIONS[name], (leaf,))


@fewer_examples(0.1, minimum=3)
@pytest.mark.parametrize("name", ["det", "inverse", "matrix_exp", "logdet"])
@given(well_conditioned(names=("float64",), max_n=3))
def test_gradients_match_pytorch(name, case):
    torch = pytest.importorskip("torch")
    a, _ = case
    functions = {"det": lambda t: t.det(), "inverse": lambda t: t.inverse(),
                 "matrix_exp": lambda t: (t / 4).matrix_exp(), "logdet": lambda t: (t @ t.mT).logdet()}
    weights = np.cos(np.arange(np.prod(functions[name](torch.tensor(a)).shape)))
    expected = torch.tensor(a, requires_grad=True)
    result = functions[name](expected)
    (result * torch.tensor(weights).reshape(result.shape)).sum().backward()
    for device in DEVICES:
        leaf = agnostic.tensor(a, device=device, requires_grad=True)
        value = functions[name](leaf)
        (value * agnostic.tensor(weights, device=device).reshape(value.shape)).sum().backward()
        np.testing.assert_allclose(leaf.grad.cpu().numpy(), expected.grad.numpy(), rtol=1e-8, atol=1e-10)


@fewer_examples(0.1, minimum=3)
@given(sublist_contractions())
def test_einsum_sublist_gradcheck(case):
    (a, b), (sublist_a, sublist_b), output, _ = case
    tail = [] if output is None else [output]
    for device in DEVICES:
        x = agnostic.tensor(a, device=device, requires_grad=True)
        y = agnostic.tensor(b, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda p, q: agnostic.einsum(p, sublist_a, q, sublist_b, *tail), (x, y))


# ----- LU -------------------------------------------------------------------------------------------------------
@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64", "complex64", "complex128"]), shapes(max_dims=2, min_side=1, max_side=2),
       st.integers(0, 4), st.integers(0, 4), st.data())
def test_lu_factors_match_scipy_on_any_shape(name, batch, rows, columns, data):
    a = data.draw(arrays(name, batch + (rows, columns), -3, 3))
    # Distinct irrational offsets: no two candidates for a pivot tie, where LAPACK and cuSOLVER, rounding the
    # eliminated entries differently, could pick different rows (singular matrices: tests/test_lu.py).
    a = (a + 1e-2 * np.sqrt(np.arange(a.size) + 2).reshape(a.shape)).astype(name)
    # Nearly rank-deficient matrices (all ones plus those offsets) have trailing factor entries made of cancellations,
    # which two correct factorizations in float32 round differently; the devices are compared on the others.
    if a.size:
        singular = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
        assume((singular[..., -1] > 1e-2 * singular[..., 0]).all())
    outcome = on_all_devices(lambda t: tuple(agnostic.linalg.lu_factor_ex(t)), a, rtol=1e-4, atol=1e-4).ok()
    factors = on_all_devices(lambda t: tuple(agnostic.linalg.lu(t)), a, rtol=1e-4, atol=1e-4).ok()
    k = min(rows, columns)
    assert outcome[1].dtype == outcome[2].dtype == "int32"
    assert outcome[1].shape == batch + (k,) and outcome[2].shape == batch
    P, L, U = (snap.array for snap in factors)
    assert P.shape == batch + (rows, rows) and L.shape == batch + (rows, k) and U.shape == batch + (k, columns)
    if k == 0:
        assert not outcome[2].array.any()
        return
    tolerance = 1e-4 if name in ("float32", "complex64") else 1e-10
    np.testing.assert_allclose(P @ L @ U, a, rtol=tolerance, atol=tolerance)
    for index in np.ndindex(batch):
        with warnings.catch_warnings():  # SciPy warns of a singular matrix, which agnostic factors silently
            warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
            expected_LU, expected_pivots = scipy.linalg.lu_factor(a[index])
        np.testing.assert_array_equal(outcome[1].array[index], expected_pivots + 1)
        np.testing.assert_allclose(outcome[0].array[index], expected_LU, rtol=tolerance, atol=tolerance)
        diagonal = np.diagonal(expected_LU)
        expected_info = int(np.argmax(diagonal == 0)) + 1 if (diagonal == 0).any() else 0
        assert outcome[2].array[index] == expected_info


@fewer_examples(0.1, minimum=4)
@given(shapes(max_dims=1, min_side=1, max_side=2), st.integers(1, 3), st.integers(1, 3), st.data())
def test_lu_gradcheck_on_any_shape(batch, rows, columns, data):
    a = data.draw(arrays("float64", batch + (rows, columns), -2, 2))
    k = min(rows, columns)
    # Strictly diagonally dominant by columns (each diagonal entry at least 5, the others in a column at most 2 * 2):
    # partial pivoting then never swaps rows, and no two rows tie for a pivot, so the factors are smooth near a
    # (with 3 * eye, [[1], [-2], [-2]] tied two rows and the numerical derivative averaged the two choices).
    a[..., :k, :k] += 7 * np.eye(k)
    for device in DEVICES:
        leaf = agnostic.tensor(a, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda t: agnostic.linalg.lu_factor(t).LU, (leaf,))
        if rows == columns:
            right = agnostic.tensor(data.draw(arrays("float64", batch + (rows, 2), -2, 2)), device=device,
                                    requires_grad=True)
            assert agnostic.autograd.gradcheck(
                lambda t, b: agnostic.linalg.lu_solve(*agnostic.linalg.lu_factor(t), b), (leaf, right))
