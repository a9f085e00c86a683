"""PyTorch's remaining top-level functions and Tensor methods: hardshrink and prelu as ops, conj_physical_,
nonzero_static, slice_inverse, geqrf/orgqr/ormqr, lobpcg, the ATen entry points of ``_aten_extras`` (norms,
native_*, conv_tbc, grid samplers...), the global queries, linalg.polar/matrix_sqrth and
autograd.set_multithreading_enabled: values against NumPy/SciPy and PyTorch, gradients by gradcheck and against
PyTorch's backward, PyTorch's errors."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck


def _tensor(array, device, requires_grad=False, dtype=None):
    return agnostic.tensor(np.asarray(array), device=device, requires_grad=requires_grad, dtype=dtype)


def _host(tensor):
    return tensor.detach().cpu().numpy()


# ----- hardshrink and prelu -----------------------------------------------------------------------------------------
def test_hardshrink_and_prelu_are_one_op_everywhere():
    assert F.hardshrink is agnostic.hardshrink and F.prelu is agnostic.prelu
    assert agnostic.Tensor.hardshrink.__name__ == "hardshrink" and agnostic.Tensor.prelu.__name__ == "prelu"


@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64, agnostic.float16])
def test_hardshrink_zeroes_the_band_and_keeps_nan(device, dtype):
    values = np.array([-2.0, -0.5, -0.3, 0.0, 0.5, 0.51, np.nan, np.inf])
    result = _tensor(values, device, dtype=dtype).hardshrink(0.5)
    assert result.dtype is dtype
    expected = np.where(np.abs(values) > 0.5, values, 0.0)
    expected[6] = np.nan
    np.testing.assert_allclose(_host(result).astype(np.float64), expected, rtol=1e-3)
    np.testing.assert_array_equal(_host(agnostic.hardshrink(_tensor(values, device), -1.0)), values)


def test_hardshrink_gradient_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.array([[-2.0, 0.2, 0.7], [0.5, -0.6, 3.0]])
    x = _tensor(values, device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.hardshrink(t, 0.4), (x,))
    agnostic.hardshrink(x, 0.5).sum().backward()
    reference = torch.tensor(values, requires_grad=True)
    torch.hardshrink(reference, 0.5).sum().backward()
    np.testing.assert_array_equal(_host(x.grad), reference.grad.numpy())
    np.testing.assert_array_equal(_host(x.grad), (np.abs(values) > 0.5).astype(float))


def test_hardshrink_refuses_integers_as_pytorch(device):
    with pytest.raises(NotImplementedError, match="hardshrink.*int64"):
        agnostic.hardshrink(agnostic.tensor([1, 2], device=device))


def test_prelu_values_per_channel_and_shared(device):
    images = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    slopes = np.array([0.1, 0.2, 0.3])
    result = _tensor(images, device).prelu(_tensor(slopes, device))
    np.testing.assert_allclose(_host(result), np.where(images > 0, images, slopes[None, :, None, None] * images))
    shared = agnostic.prelu(_tensor(images, device), _tensor([0.25], device))
    np.testing.assert_allclose(_host(shared), np.where(images > 0, images, 0.25 * images))
    scalar = agnostic.prelu(_tensor(-2.0, device), _tensor([0.5], device))
    assert scalar.shape == () and scalar.item() == -1.0


def test_prelu_gradients_match_pytorch_and_gradcheck(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    images, slopes = rng.standard_normal((2, 3, 4)), rng.uniform(0.1, 0.5, 3)
    x, w = _tensor(images, device, requires_grad=True), _tensor(slopes, device, requires_grad=True)
    assert gradcheck(agnostic.prelu, (x, w))
    assert gradcheck(agnostic.prelu, (x, _tensor([0.3], device, requires_grad=True)))
    weights = rng.standard_normal((2, 3, 4))
    (agnostic.prelu(x, w) * _tensor(weights, device)).sum().backward()
    tx, tw = torch.tensor(images, requires_grad=True), torch.tensor(slopes, requires_grad=True)
    (torch.prelu(tx, tw) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_host(x.grad), tx.grad.numpy())
    np.testing.assert_allclose(_host(w.grad), tw.grad.numpy())


def test_prelu_errors_are_pytorchs(device):
    x = agnostic.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        agnostic.prelu(x, agnostic.ones(2, device=device))
    with pytest.raises(RuntimeError, match="scalar or 1D tensor"):
        agnostic.prelu(x, agnostic.ones(1, 1, device=device))
    with pytest.raises(RuntimeError, match="Type promoting not supported"):
        agnostic.prelu(x, agnostic.ones(3, dtype=agnostic.float64, device=device))
    with pytest.raises(NotImplementedError, match="prelu"):
        agnostic.prelu(agnostic.tensor([1, -2], device=device), agnostic.tensor([1], device=device))


def test_prelu_module_still_learns(device):
    layer = agnostic.nn.PReLU(3).to(device)
    layer(agnostic.full((2, 3), -1.0, device=device)).sum().backward()
    np.testing.assert_allclose(_host(layer.weight.grad), [-2.0, -2.0, -2.0])


# ----- conj_physical_, nonzero_static, slice_inverse ----------------------------------------------------------------
def test_conj_physical_in_place_records_its_gradient(device):
    x = _tensor([1 + 2j, 3 - 1j], device)
    assert x.conj_physical_() is x
    np.testing.assert_array_equal(_host(x), [1 - 2j, 3 + 1j])
    real = _tensor([1.0, 2.0], device)
    assert real.conj_physical_() is real and _host(real).tolist() == [1.0, 2.0]
    leaf = _tensor([1 + 2j, 3 - 1j], device, requires_grad=True)
    y = leaf * 2
    y.conj_physical_()
    (y.real.sum() + 3 * y.imag.sum()).backward()
    np.testing.assert_allclose(_host(leaf.grad), [2 - 6j, 2 - 6j])  # PyTorch's conj(2 + 3 * -2j)


def test_conj_physical_of_a_view_writes_the_base(device):
    base = _tensor([[1 + 1j, 2j], [3 + 0j, 4 - 4j]], device)
    base.t().conj_physical_()
    np.testing.assert_array_equal(_host(base), [[1 - 1j, -2j], [3, 4 + 4j]])


@pytest.mark.parametrize("size", [0, 2, 3, 5])
def test_nonzero_static_pads_or_truncates_numpys_nonzero(device, size):
    values = np.array([[1, 0], [3, 2]])
    found = np.argwhere(values)
    expected = np.full((size, 2), -1)
    expected[:min(size, len(found))] = found[:size]
    result = agnostic.nonzero_static(_tensor(values, device), size=size)
    assert result.dtype is agnostic.int64
    np.testing.assert_array_equal(_host(result), expected)
    np.testing.assert_array_equal(_host(_tensor(values, device).nonzero_static(size=size, fill_value=7)),
                                  np.where(np.arange(size)[:, None] < len(found), expected, 7))


def test_nonzero_static_matches_pytorch_and_its_errors(device):
    torch = pytest.importorskip("torch")
    for values in ([True, False, True], 3.0, [[0.0, 1.5], [2.0, 0.0]]):
        for size in (0, 1, 4):
            expected = torch.nonzero_static(torch.tensor(values), size=size)
            result = agnostic.nonzero_static(agnostic.tensor(values, device=device), size=size)
            assert tuple(result.shape) == tuple(expected.shape)
            np.testing.assert_array_equal(_host(result), expected.numpy())
    with pytest.raises(RuntimeError, match="non-negative"):
        agnostic.nonzero_static(agnostic.ones(2, device=device), size=-1)
    with pytest.raises(TypeError, match="must be int"):
        agnostic.nonzero_static(agnostic.ones(2, device=device), size=2.0)


def test_slice_inverse_is_a_view_of_the_base_with_srcs_geometry(device):
    base = agnostic.arange(10.0, device=device)
    piece = base[2:8:2]
    restored = agnostic.slice_inverse(piece, base, 0, 2, 8, 2)
    assert tuple(restored.shape) == (10,) and restored.stride() == (1,)
    restored[0] = 100.0
    assert base[0].item() == 100.0
    matrix = agnostic.arange(12.0, device=device).reshape(3, 4)
    column = matrix[:, 1:3]
    np.testing.assert_array_equal(_host(column.slice_inverse(matrix, 1, 1, 3)), _host(matrix))
    with pytest.raises(RuntimeError, match="out of bounds"):
        agnostic.slice_inverse(agnostic.ones(3, device=device), agnostic.zeros(10, device=device))


# ----- geqrf, orgqr, ormqr ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32", "complex128"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 4, 4)])
def test_geqrf_is_lapacks(device, dtype, shape):
    rng = np.random.default_rng(2)
    values = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype.startswith("complex") else 0)
    values = values.astype(dtype)
    a, tau = agnostic.geqrf(_tensor(values, device))
    assert a.dtype.name == dtype and tau.shape == shape[:-2] + (min(shape[-2:]),)
    factor, = scipy.linalg.lapack.get_lapack_funcs(("geqrf",), (values,))
    tolerance = 1e-4 if dtype == "float32" else 1e-10
    for index in np.ndindex(shape[:-2]):
        expected_a, expected_tau, _, _ = factor(values[index])
        np.testing.assert_allclose(_host(a)[index], expected_a, rtol=tolerance, atol=tolerance)
        np.testing.assert_allclose(_host(tau)[index], expected_tau, rtol=tolerance, atol=tolerance)
    q = agnostic.orgqr(a[..., :, :min(shape[-2:])], tau)  # Q R rebuilds the matrix
    r = a.triu()[..., :min(shape[-2:]), :]
    np.testing.assert_allclose(_host(q.matmul(r)), values, rtol=tolerance, atol=tolerance * 10)


def test_geqrf_matches_pytorch_and_refuses_what_it_refuses(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(3).standard_normal((5, 3))
    a, tau = _tensor(values, device).geqrf()
    expected = torch.geqrf(torch.tensor(values))
    np.testing.assert_allclose(_host(a), expected.a.numpy(), atol=1e-12)
    np.testing.assert_allclose(_host(tau), expected.tau.numpy(), atol=1e-12)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        agnostic.geqrf(agnostic.ones(3, device=device))
    with pytest.raises(NotImplementedError, match="geqrf"):
        agnostic.geqrf(agnostic.ones(2, 2, dtype=agnostic.int64, device=device))
    with pytest.raises(NotImplementedError, match="derivative for 'geqrf'"):
        agnostic.geqrf(agnostic.ones(2, 2, device=device, requires_grad=True))[0].sum().backward()


def test_orgqr_is_numpys_q_and_differentiable(device):
    values = np.random.default_rng(4).standard_normal((5, 3))
    a, tau = agnostic.geqrf(_tensor(values, device))
    np.testing.assert_allclose(np.abs(_host(a.orgqr(tau))), np.abs(np.linalg.qr(values)[0]), atol=1e-12)
    assert gradcheck(agnostic.orgqr, (a.clone().requires_grad_(), tau.clone().requires_grad_()))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_multiplies_by_the_full_q(device, left, transpose):
    rng = np.random.default_rng(5)
    values = rng.standard_normal((2, 4, 3))
    other = rng.standard_normal((2, 4, 2) if left else (2, 2, 4))
    a, tau = agnostic.geqrf(_tensor(values, device))
    q = np.stack([np.linalg.qr(matrix, mode="complete")[0] for matrix in values])
    signs = np.sign(np.diagonal(np.linalg.qr(values)[1], axis1=-2, axis2=-1) / np.diagonal(_host(a), axis1=-2,
                                                                                         axis2=-1))
    q[..., :3] *= signs[:, None, :]  # LAPACK's Q against NumPy's: the columns of R's sign; the last is free
    result = _host(agnostic.ormqr(a, tau, _tensor(other, device), left=left, transpose=transpose))
    full_q = _host(agnostic.orgqr(
        agnostic.cat([a, agnostic.zeros(2, 4, 1, dtype=a.dtype, device=device)], -1),
        agnostic.cat([tau, agnostic.zeros(2, 1, dtype=a.dtype, device=device)], -1)))
    np.testing.assert_allclose(full_q[..., :3], q[..., :3], atol=1e-10)
    op = np.swapaxes(full_q, -1, -2) if transpose else full_q
    np.testing.assert_allclose(result, op @ other if left else other @ op, atol=1e-10)


def test_ormqr_matches_pytorch_values_gradients_and_errors(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(6)
    values, other = rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    a, tau = agnostic.geqrf(_tensor(values, device))
    ta, ttau = torch.geqrf(torch.tensor(values))
    np.testing.assert_allclose(_host(a.ormqr(tau, _tensor(other, device), transpose=True)),
                               torch.ormqr(ta, ttau, torch.tensor(other), transpose=True).numpy(), atol=1e-12)
    c = _tensor(other, device, requires_grad=True)
    assert gradcheck(lambda A, t, C: agnostic.ormqr(A, t, C), (a.clone().requires_grad_(),
                                                               tau.clone().requires_grad_(), c))
    with pytest.raises(RuntimeError, match=r"other.shape\[-2\] must be equal to input.shape\[-2\]"):
        agnostic.ormqr(a, tau, agnostic.ones(3, 3, dtype=a.dtype, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.ormqr(a, tau, agnostic.ones(4, 2, device=device))
    with pytest.raises(RuntimeError, match="other must have at least 2 dimensions"):
        agnostic.ormqr(a, tau, agnostic.ones(4, dtype=a.dtype, device=device))


# ----- lobpcg -------------------------------------------------------------------------------------------------------
def _symmetric(rng, size, batch=()):
    values = rng.standard_normal(batch + (size, size))
    return values @ np.swapaxes(values, -1, -2) + np.eye(size)


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg_finds_numpys_extreme_eigenpairs(device, largest):
    matrix = _symmetric(np.random.default_rng(7), 30)
    agnostic.manual_seed(0)
    E, X = agnostic.lobpcg(_tensor(matrix, device), k=3, largest=largest)
    reference = np.linalg.eigvalsh(matrix)
    expected = reference[::-1][:3] if largest else reference[:3]
    np.testing.assert_allclose(_host(E), expected, rtol=1e-6)
    vectors = _host(X)
    np.testing.assert_allclose(matrix @ vectors, vectors * _host(E), atol=1e-4 * reference[-1])
    np.testing.assert_allclose(vectors.T @ vectors, np.eye(3), atol=1e-8)


def test_lobpcg_generalized_batched_and_preconditioned_match_scipy(device):
    rng = np.random.default_rng(8)
    A, B = _symmetric(rng, 24), _symmetric(rng, 24) + 5 * np.eye(24)
    E, _ = agnostic.lobpcg(_tensor(A, device), k=2, B=_tensor(B, device), X=_tensor(rng.standard_normal((24, 3)),
                                                                                    device))
    np.testing.assert_allclose(_host(E), scipy.linalg.eigh(A, B, eigvals_only=True)[::-1][:2], rtol=1e-6)
    batch = _symmetric(rng, 15, (2,))
    E, X = agnostic.lobpcg(_tensor(batch, device), k=2, iK=_tensor(np.eye(15) * 0.1, device))
    assert tuple(X.shape) == (2, 15, 2)
    np.testing.assert_allclose(_host(E), np.linalg.eigvalsh(batch)[:, ::-1][:, :2], rtol=1e-6)
    with pytest.raises(ValueError, match="smaller than 3 x the number of requested eigenpairs"):
        agnostic.lobpcg(_tensor(A, device), k=9)


def test_lobpcg_matches_pytorch_eigenvalues_and_gradient(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    matrix, weights = _symmetric(rng, 12), rng.standard_normal((12, 12))

    def loss(module, E, X):  # unchanged by the eigenvectors' signs
        return E.sum() + ((X @ X.mT) * module.tensor(weights)).sum() + X[:, 0].sum() * X[0, 0]

    for largest in (True, False):
        A = _tensor(matrix, device, requires_grad=True)
        E, X = agnostic.lobpcg(A, k=2, largest=largest)
        loss(agnostic, E, X.cpu()).backward()
        reference = torch.tensor(matrix, requires_grad=True)
        tE, tX = torch.lobpcg(reference, k=2, largest=largest)
        loss(torch, tE, tX).backward()
        np.testing.assert_allclose(_host(E), tE.detach().numpy(), rtol=1e-8)
        np.testing.assert_allclose(_host(A.grad), reference.grad.numpy(), atol=1e-5)
        # the same gradient from the full eigendecomposition, without PyTorch
        full = _tensor(matrix, device, requires_grad=True)
        values, vectors = agnostic.linalg.eigh(full)
        chosen = [-1, -2] if largest else [0, 1]
        loss(agnostic, values[chosen], vectors[:, chosen].cpu()).backward()
        symmetric = _host(full.grad)
        np.testing.assert_allclose(_host(A.grad), (symmetric + symmetric.T) / 2, atol=1e-5)


# ----- creation and norms -------------------------------------------------------------------------------------------
def test_empty_permuted_lays_dimensions_out_as_asked(device):
    torch = pytest.importorskip("torch")
    for size, layout in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4, 5), (0, 2, 3, 1)), ((3,), (0,))):
        result = agnostic.empty_permuted(size, layout, dtype=agnostic.float64, device=device)
        assert tuple(result.shape) == size and result.dtype is agnostic.float64 and result.device == device
        assert result.stride() == torch.empty_permuted(size, layout).stride()
    assert agnostic.empty_permuted((2, 2), (1, 0), requires_grad=True).is_leaf
    with pytest.raises(RuntimeError, match="permutation"):
        agnostic.empty_permuted((2, 3), (0, 0))
    with pytest.raises(RuntimeError, match="does not match"):
        agnostic.empty_permuted((2, 3), (0,))


def test_matrix_and_vector_norm_entry_points_match_numpy(device):
    values = np.arange(24.0).reshape(2, 3, 4) - 11
    x = _tensor(values, device)
    np.testing.assert_allclose(_host(agnostic.frobenius_norm(x, [1, 2])), np.sqrt((values ** 2).sum((1, 2))))
    np.testing.assert_allclose(_host(agnostic.frobenius_norm(x, 2, keepdim=True)),
                               np.linalg.norm(values, axis=2, keepdims=True))
    np.testing.assert_allclose(_host(agnostic.nuclear_norm(x, [1, 2])), np.linalg.norm(values, "nuc", axis=(1, 2)))
    np.testing.assert_allclose(_host(agnostic.nuclear_norm(x[0], True)),
                               np.linalg.norm(values[0], "nuc", keepdims=True))
    np.testing.assert_allclose(_host(agnostic.native_norm(x)), np.linalg.norm(values.ravel()))
    np.testing.assert_allclose(_host(agnostic.native_norm(x, 1)), np.abs(values).sum())
    np.testing.assert_allclose(_host(agnostic.norm_except_dim(x, 2, 1)),
                               np.sqrt((values ** 2).sum((0, 2), keepdims=True)))
    np.testing.assert_allclose(_host(agnostic.norm_except_dim(x, 1, 0)), np.abs(values).sum((1, 2), keepdims=True))
    np.testing.assert_allclose(_host(agnostic.norm_except_dim(x, 2, -1)), np.linalg.norm(values.ravel()))
    with pytest.raises(RuntimeError, match="at most 2 dimensions"):
        agnostic.frobenius_norm(x, [0, 1, 2])
    with pytest.raises(RuntimeError, match="2 dimensions"):
        agnostic.nuclear_norm(x)


def test_norms_match_pytorch_and_are_differentiable(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(10).standard_normal((3, 4))
    x, reference = _tensor(values, device), torch.tensor(values)
    with warnings.catch_warnings():  # PyTorch's deprecation notes (some versions warn once per process)
        warnings.simplefilter("ignore")
        expected = [torch.frobenius_norm(reference, [0, 1]), torch.nuclear_norm(reference),
                    torch.norm_except_dim(reference, 2, 0), torch.norm_except_dim(reference, 3, 1)]
    actual = [agnostic.frobenius_norm(x, [0, 1]), agnostic.nuclear_norm(x), agnostic.norm_except_dim(x, 2, 0),
              agnostic.norm_except_dim(x, 3, 1)]
    for got, want in zip(actual, expected):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(_host(got), want.numpy(), rtol=1e-12)
    leaf = _tensor(values, device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.norm_except_dim(t, 2, 1), (leaf,))
    assert gradcheck(lambda t: agnostic.nuclear_norm(t), (leaf,))


# ----- native_* layers, embeddings, conv_tbc, grids ---------------------------------------------------------------
def test_native_group_norm_statistics_match_numpy_and_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(11).standard_normal((2, 4, 3))
    weight, bias = np.array([1.0, 2.0, 0.5, -1.0]), np.array([0.0, 1.0, 2.0, 3.0])
    out, mean, rstd = agnostic.native_group_norm(_tensor(values, device), _tensor(weight, device),
                                                 _tensor(bias, device), 2, 4, 3, 2, 1e-5)
    groups = values.reshape(2, 2, -1)
    np.testing.assert_allclose(_host(mean), groups.mean(-1))
    np.testing.assert_allclose(_host(rstd), 1 / np.sqrt(groups.var(-1) + 1e-5))
    expected = torch.native_group_norm(torch.tensor(values), torch.tensor(weight), torch.tensor(bias), 2, 4, 3, 2,
                                       1e-5)
    for got, want in zip((out, mean, rstd), expected):
        np.testing.assert_allclose(_host(got), want.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="divisible"):
        agnostic.native_group_norm(_tensor(values, device), None, None, 2, 4, 3, 3, 1e-5)


def test_native_dropout_scales_the_kept_and_reports_them(device):
    agnostic.manual_seed(0)
    x = agnostic.ones(20000, device=device, requires_grad=True)
    out, mask = agnostic.native_dropout(x, 0.25, True)
    assert mask.dtype is agnostic.bool
    kept = _host(mask)
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(_host(out), np.where(kept, 1 / 0.75, 0.0))
    out.sum().backward()
    np.testing.assert_allclose(_host(x.grad), np.where(kept, 1 / 0.75, 0.0))
    out, mask = agnostic.native_dropout(x, 0.25, False)
    assert _host(mask).all() and (_host(out) == 1).all()
    out, mask = agnostic.native_dropout(x.detach(), 1.0, None)
    assert not _host(mask).any() and (_host(out) == 0).all()
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        agnostic.native_dropout(x, 1.5, True)


def test_embedding_renorm_rescales_the_used_long_rows(device):
    torch = pytest.importorskip("torch")
    weight = np.arange(12.0).reshape(4, 3)
    result = _tensor(weight, device)
    assert agnostic.embedding_renorm_(result, _tensor([0, 2, 2], device), 5.0, 2.0) is result
    expected = weight.copy()
    norms = np.linalg.norm(weight[[0, 2]], axis=1, keepdims=True)
    expected[[0, 2]] = np.where(norms > 5, weight[[0, 2]] * 5 / (norms + 1e-7), weight[[0, 2]])
    np.testing.assert_allclose(_host(result), expected, rtol=1e-12)
    reference = torch.tensor(weight)
    torch.embedding_renorm_(reference, torch.tensor([0, 2, 2]), 5.0, 2.0)
    np.testing.assert_allclose(_host(result), reference.numpy(), rtol=1e-12)


def test_conv_tbc_is_a_time_major_convolution(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(12)
    values, weight, bias = rng.standard_normal((6, 2, 3)), rng.standard_normal((3, 3, 4)), rng.standard_normal(4)
    result = agnostic.conv_tbc(_tensor(values, device), _tensor(weight, device), _tensor(bias, device), 1)
    padded = np.pad(values, ((1, 1), (0, 0), (0, 0)))
    expected = np.stack([sum(padded[t + j] @ weight[j] for j in range(3)) for t in range(6)]) + bias
    np.testing.assert_allclose(_host(result), expected, atol=1e-12)
    np.testing.assert_allclose(_host(result), torch.conv_tbc(torch.tensor(values), torch.tensor(weight),
                                                             torch.tensor(bias), 1).numpy(), atol=1e-12)
    inputs = [_tensor(array, device, requires_grad=True) for array in (values[:4], weight[:2], bias)]
    assert gradcheck(lambda a, b, c: agnostic.conv_tbc(a, b, c), inputs)
    with pytest.raises(RuntimeError, match="input channels"):
        agnostic.conv_tbc(_tensor(values, device), _tensor(weight[:, :2], device), _tensor(bias, device))


def test_grid_samplers_are_grid_sample_with_int_modes(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    image, grid = rng.standard_normal((1, 2, 4, 5)), rng.uniform(-1.2, 1.2, (1, 3, 3, 2))
    for interpolation, padding in ((0, 0), (1, 1), (2, 2), (0, 2)):
        result = agnostic.grid_sampler_2d(_tensor(image, device), _tensor(grid, device), interpolation, padding,
                                          False)
        expected = torch.grid_sampler_2d(torch.tensor(image), torch.tensor(grid), interpolation, padding, False)
        np.testing.assert_allclose(_host(result), expected.numpy(), atol=1e-10)
        mode = ("bilinear", "nearest", "bicubic")[interpolation]
        same = F.grid_sample(_tensor(image, device), _tensor(grid, device), mode,
                             ("zeros", "border", "reflection")[padding], False)
        np.testing.assert_array_equal(_host(result), _host(same))
    volume, grid3 = rng.standard_normal((1, 1, 3, 3, 3)), rng.uniform(-1, 1, (1, 2, 2, 2, 3))
    np.testing.assert_allclose(
        _host(agnostic.grid_sampler(_tensor(volume, device), _tensor(grid3, device), 0, 1, True)),
        torch.grid_sampler_3d(torch.tensor(volume), torch.tensor(grid3), 0, 1, True).numpy(), atol=1e-10)
    theta = rng.standard_normal((2, 2, 3))
    np.testing.assert_allclose(_host(agnostic.affine_grid_generator(_tensor(theta, device), [2, 1, 3, 4], False)),
                               torch.affine_grid_generator(torch.tensor(theta), [2, 1, 3, 4], False).numpy(),
                               atol=1e-12)
    with pytest.raises(RuntimeError, match="interpolation_mode"):
        agnostic.grid_sampler(_tensor(image, device), _tensor(grid, device), 5, 0, False)
    with pytest.raises(RuntimeError, match="expected 4D input"):
        agnostic.grid_sampler_2d(_tensor(volume, device), _tensor(grid3, device), 0, 0, False)
    with pytest.raises(RuntimeError, match="bicubic"):
        agnostic.grid_sampler_3d(_tensor(volume, device), _tensor(grid3, device), 2, 0, False)


# ----- global state and queries -----------------------------------------------------------------------------------
def test_deterministic_debug_mode_is_use_deterministic_algorithms():
    try:
        for mode, name in ((1, "warn"), (2, "error"), (0, "default")):
            agnostic.set_deterministic_debug_mode(name)
            assert agnostic.get_deterministic_debug_mode() == mode
            agnostic.set_deterministic_debug_mode(mode)
            assert agnostic.get_deterministic_debug_mode() == mode
        agnostic.use_deterministic_algorithms(True, warn_only=True)
        assert agnostic.get_deterministic_debug_mode() == 1
        agnostic.set_deterministic_debug_mode(2)
        assert agnostic.are_deterministic_algorithms_enabled()
        assert not agnostic.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(RuntimeError, match="expected one of"):
            agnostic.set_deterministic_debug_mode("loud")
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
            agnostic.set_deterministic_debug_mode(3)
        with pytest.raises(TypeError, match="str or int"):
            agnostic.set_deterministic_debug_mode(1.0)
    finally:
        agnostic.use_deterministic_algorithms(False)


def test_queries_answer_as_pytorch_does(device):
    assert agnostic.is_distributed(agnostic.ones(1, device=device)) is False
    assert agnostic.is_vulkan_available() is False
    assert agnostic.get_device_module("cuda:0") is agnostic.cuda
    assert agnostic.get_device_module(agnostic.device("cuda")) is agnostic.cuda
    cpu = agnostic.get_device_module("cpu")
    assert cpu.is_available() and cpu.device_count() == 1 and cpu.current_stream().device.type == "cpu"
    cpu.synchronize()
    expected = agnostic.cuda if agnostic.accelerator.is_available() else cpu
    assert agnostic.get_device_module() is expected
    assert agnostic.get_device_module(device) is (cpu if device.type == "cpu" else agnostic.cuda)
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        agnostic.get_device_module("mtia")
    with pytest.raises(TypeError):
        agnostic.is_distributed([1.0])


def test_default_generator_is_the_one_manual_seed_seeds():
    state = agnostic.get_rng_state()
    try:
        assert isinstance(agnostic.default_generator, agnostic.Generator)
        assert agnostic.manual_seed(5) is agnostic.default_generator
        assert agnostic.default_generator.initial_seed() == 5
        first = agnostic.rand(3)
        agnostic.default_generator.manual_seed(5)
        np.testing.assert_array_equal(_host(agnostic.rand(3)), _host(first))
    finally:
        agnostic.set_rng_state(state)


def test_set_multithreading_enabled_sets_now_and_restores_on_exit():
    enabled = agnostic.autograd._is_multithreading_enabled
    assert enabled()
    with agnostic.autograd.set_multithreading_enabled(False):
        assert not enabled()
        x = agnostic.ones(2, requires_grad=True)
        (x * 3).sum().backward()  # the engine still runs
        assert x.grad.tolist() == [3.0, 3.0]
    assert enabled()

    @agnostic.autograd.set_multithreading_enabled(False)
    def inside():
        return enabled()

    assert inside() is False and enabled()
    agnostic.autograd.set_multithreading_enabled(False)
    assert not enabled()
    agnostic.autograd.set_multithreading_enabled(True)
    assert enabled()


# ----- linalg.polar and linalg.matrix_sqrth -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_polar_matches_scipy(device, dtype):
    rng = np.random.default_rng(14)
    values = rng.standard_normal((2, 5, 3)) + (1j * rng.standard_normal((2, 5, 3)) if dtype == "complex128" else 0)
    U, H = agnostic.linalg.polar(_tensor(values, device))
    for index in range(2):
        expected_u, expected_h = scipy.linalg.polar(values[index])
        np.testing.assert_allclose(_host(U)[index], expected_u, atol=1e-10)
        np.testing.assert_allclose(_host(H)[index], expected_h, atol=1e-10)
    with pytest.raises(RuntimeError, match="at least as many rows as columns"):
        agnostic.linalg.polar(_tensor(values[0].T, device))


def test_polar_and_matrix_sqrth_match_pytorch_and_gradcheck(device):
    torch = pytest.importorskip("torch", minversion="2.14")  # where torch.linalg has them
    rng = np.random.default_rng(15)
    values = rng.standard_normal((4, 3))
    expected = torch.linalg.polar(torch.tensor(values))
    actual = agnostic.linalg.polar(_tensor(values, device))
    np.testing.assert_allclose(_host(actual.U), expected.U.numpy(), atol=1e-10)
    np.testing.assert_allclose(_host(actual.H), expected.H.numpy(), atol=1e-10)
    spd = _symmetric(rng, 4)
    np.testing.assert_allclose(_host(agnostic.linalg.matrix_sqrth(_tensor(spd, device))),
                               torch.linalg.matrix_sqrth(torch.tensor(spd)).numpy(), atol=1e-10)
    np.testing.assert_allclose(_host(agnostic.linalg.matrix_sqrth(_tensor(spd, device))), scipy.linalg.sqrtm(spd),
                               atol=1e-10)
    assert gradcheck(lambda a: agnostic.linalg.polar(a).U, (_tensor(values, device, requires_grad=True),))
    assert gradcheck(lambda a: agnostic.linalg.polar(a).H, (_tensor(values, device, requires_grad=True),))
    weights = rng.standard_normal((4, 4))
    A = _tensor(spd, device, requires_grad=True)
    (agnostic.linalg.matrix_sqrth(A) * _tensor(weights, device)).sum().backward()
    reference = torch.tensor(spd, requires_grad=True)
    (torch.linalg.matrix_sqrth(reference) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_host(A.grad), reference.grad.numpy(), atol=1e-8)
    with pytest.raises(RuntimeError, match="square"):
        agnostic.linalg.matrix_sqrth(agnostic.ones(2, 3, device=device))
