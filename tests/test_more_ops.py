"""The PyTorch names added for issue 15: addcmul..vander, cov/corrcoef/dist/vdot, in-place forms, random samplers."""

import math

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck


def _t(values, device, dtype=None, requires_grad=False):
    return agnostic.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _close(tensor, expected, **tolerance):
    np.testing.assert_allclose(tensor.cpu().numpy(), np.asarray(expected), **tolerance)


# ----- elementwise ------------------------------------------------------------------------------------------------
def test_addcmul_and_addcdiv_match_their_formulas_and_broadcast(device):
    x, a, b = np.random.default_rng(0).random((3, 2, 3)) + 0.5
    _close(agnostic.addcmul(_t(x, device), _t(a, device), _t(b[0], device), value=0.5), x + 0.5 * a * b[0])
    _close(agnostic.addcdiv(_t(x, device), _t(a, device), _t(b, device), value=-2), x - 2 * a / b)
    y = _t(x, device)
    assert y.addcmul_(_t(a, device), _t(b, device)) is y
    _close(y, x + a * b)
    _close(_t(x, device).addcdiv_(_t(a, device), _t(b, device)), x + a / b)
    with pytest.raises(RuntimeError, match="Integer division"):
        agnostic.addcdiv(_t([1], device), _t([1], device), _t([2], device))


def test_addcmul_addcdiv_gradients(device):
    x, a, b = (_t(np.random.default_rng(1).random(3) + 0.5, device, agnostic.float64, True) for _ in range(3))
    assert gradcheck(lambda x, a, b: agnostic.addcmul(x, a, b, value=0.3), (x, a, b))
    assert gradcheck(lambda x, a, b: agnostic.addcdiv(x, a, b, value=0.3), (x, a, b))


def test_clamp_min_max_and_their_in_place_forms(device):
    x = _t([-2.0, 0.5, 3.0], device)
    _close(agnostic.clamp_min(x, 0), [0, 0.5, 3])
    _close(x.clamp_max(1), [-2, 0.5, 1])
    assert agnostic.clamp_min(_t([1, 2], device), 1.5).dtype is agnostic.float32  # promotes, as in PyTorch
    y = x.clone()
    assert y.clamp_min_(0) is y
    _close(y, [0, 0.5, 3])
    z = x.clone()
    assert agnostic.clamp_max_(z, 0) is z
    _close(z, [-2, 0, 0])


def test_float_power_is_double_precision(device):
    result = agnostic.float_power(_t([2, 3], device), 2)
    assert result.dtype is agnostic.float64
    _close(result, [4.0, 9.0])
    assert agnostic.float_power(_t([2.0], device), _t([1j], device)).dtype is agnostic.complex128
    with pytest.raises(RuntimeError, match="float64"):
        _t([2.0], device).float_power_(2)
    x = _t([2.0], device, agnostic.float64)
    assert x.float_power_(3) is x and x.item() == 8.0


def test_logaddexp_family_values_and_gradients(device):
    a, b = np.array([0.0, 1000.0, -3.0]), np.array([0.0, 1000.0, 2.0])
    _close(agnostic.logaddexp(_t(a, device), _t(b, device)), np.logaddexp(a, b), rtol=1e-6)
    _close(agnostic.logaddexp2(_t(a, device), _t(b, device)), np.logaddexp2(a, b), rtol=1e-6)
    with pytest.raises(NotImplementedError):
        agnostic.logaddexp(_t([1], device), _t([2], device))
    x, y = (_t(np.random.default_rng(2).standard_normal(4), device, agnostic.float64, True) for _ in range(2))
    assert gradcheck(agnostic.logaddexp, (x, y))
    assert gradcheck(agnostic.logaddexp2, (x, y))


def test_angle_conversions(device):
    _close(agnostic.deg2rad(_t([180.0, -90.0], device)), [math.pi, -math.pi / 2], rtol=1e-6)
    _close(agnostic.rad2deg(_t([math.pi], device, agnostic.float64)), [180.0])
    assert agnostic.deg2rad(_t([180], device)).dtype is agnostic.float32
    x = _t([1.0, 2.0], device, agnostic.float64, True)
    assert gradcheck(agnostic.deg2rad, (x,)) and gradcheck(agnostic.rad2deg, (x,))


def test_gcd_lcm_integers_only(device):
    a, b = np.array([4, -6, 0, 9]), np.array([6, 4, 5, 0])
    _close(agnostic.gcd(_t(a, device), _t(b, device)), np.gcd(a, b))
    _close(agnostic.lcm(_t(a, device), _t(b, device)), np.lcm(a, b))
    for bad in ([1.0], [True]):
        with pytest.raises(RuntimeError):
            agnostic.gcd(_t(bad, device), _t(bad, device))


def test_infinity_and_reality_queries(device):
    x = _t([1.0, math.inf, -math.inf, math.nan], device)
    assert agnostic.isposinf(x).tolist() == [False, True, False, False]
    assert agnostic.isneginf(x).tolist() == [False, False, True, False]
    assert agnostic.isposinf(_t([1, 2], device)).tolist() == [False, False]
    assert agnostic.isreal(_t([1 + 0j, 1 + 1j], device)).tolist() == [True, False]
    assert agnostic.isreal(_t([3, 4], device)).tolist() == [True, True]


def test_positive_returns_input_and_refuses_bool(device):
    x = _t([-1.0, 2.0], device)
    assert agnostic.positive(x) is x
    with pytest.raises(NotImplementedError):
        agnostic.positive(_t([True], device))


def test_isin_values_scalars_and_invert(device):
    elements, tests = np.array([[1, 2], [3, 4]]), np.array([2, 3, 9])
    assert agnostic.isin(_t(elements, device), _t(tests, device)).tolist() == np.isin(elements, tests).tolist()
    assert agnostic.isin(_t(elements, device), 2, invert=True).tolist() == [[True, False], [True, True]]


def test_elementwise_additions_match_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.array([-2.5, 0.0, 1.5, 7.0], dtype=np.float32)
    others = np.array([1.0, -3.0, 2.0, 0.5], dtype=np.float32)
    for name in ("logaddexp", "logaddexp2", "float_power"):
        ours = getattr(agnostic, name)(_t(values, device), _t(others, device))
        theirs = getattr(torch, name)(torch.tensor(values), torch.tensor(others))
        np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-6)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    for name in ("deg2rad", "rad2deg", "isposinf", "isneginf", "isreal"):
        ours = getattr(agnostic, name)(_t(values, device))
        np.testing.assert_allclose(ours.cpu().numpy(), getattr(torch, name)(torch.tensor(values)).numpy(), rtol=1e-6)
    ints, other_ints = np.array([12, -18, 0, 7]), np.array([8, 24, 3, 0])
    for name in ("gcd", "lcm"):
        ours = getattr(agnostic, name)(_t(ints, device), _t(other_ints, device))
        assert ours.tolist() == getattr(torch, name)(torch.tensor(ints), torch.tensor(other_ints)).tolist()
    ours = agnostic.isin(_t(ints, device), _t(other_ints, device), invert=True)
    assert ours.tolist() == torch.isin(torch.tensor(ints), torch.tensor(other_ints), invert=True).tolist()


def test_top_level_in_place_functions_write_into_their_argument(device):
    for name, arguments, reference in (("relu_", (), lambda v: np.maximum(v, 0)), ("exp_", (), np.exp),
                                       ("sigmoid_", (), lambda v: 1 / (1 + np.exp(-v))), ("tanh_", (), np.tanh),
                                       ("abs_", (), np.abs), ("clamp_", (-1, 1), lambda v: np.clip(v, -1, 1)),
                                       ("zero_", (), np.zeros_like), ("fill_", (2.0,), lambda v: np.full_like(v, 2))):
        values = np.array([-1.5, 0.25, 2.0], dtype=np.float32)
        x = _t(values, device)
        assert getattr(agnostic, name)(x, *arguments) is x
        _close(x, reference(values), rtol=1e-6)


# ----- shape ------------------------------------------------------------------------------------------------------
def test_type_as_and_ravel(device):
    x = _t([[1, 2], [3, 4]], device)
    assert x.type_as(_t([0.5], device, agnostic.float64)).dtype is agnostic.float64
    assert x.ravel().tolist() == [1, 2, 3, 4]
    assert agnostic.ravel(x.t()).tolist() == [1, 3, 2, 4]


def test_diff_matches_numpy(device):
    values = np.random.default_rng(3).integers(-5, 5, (3, 5))
    for n, dim in ((1, -1), (2, 0), (3, 1), (0, 1)):
        assert agnostic.diff(_t(values, device), n=n, dim=dim).tolist() == np.diff(values, n=n, axis=dim).tolist()
    before, after = np.array([[9], [8], [7]]), np.array([[1, 1], [2, 2], [3, 3]])
    ours = agnostic.diff(_t(values, device), prepend=_t(before, device), append=_t(after, device))
    assert ours.tolist() == np.diff(values, prepend=before, append=after).tolist()
    assert agnostic.diff(_t([True, True, False], device)).tolist() == [False, True]
    x = _t(np.random.default_rng(4).random((2, 4)), device, agnostic.float64, True)
    assert gradcheck(lambda x: agnostic.diff(x, n=2, dim=1), (x,))


def test_unfold_is_a_strided_view_with_its_gradient(device):
    x = agnostic.arange(10, device=device).reshape(2, 5)
    windows = x.unfold(1, 3, 2)
    expected = np.lib.stride_tricks.sliding_window_view(np.arange(10).reshape(2, 5), 3, axis=1)[:, ::2]
    assert windows.tolist() == expected.tolist()
    windows[0, 0, 0] = 100  # a view: the write shows in ``x``
    assert x[0, 0].item() == 100
    y = _t(np.random.default_rng(5).random((3, 6)), device, agnostic.float64, True)
    assert gradcheck(lambda y: y.unfold(1, 2, 1) * 1.0, (y,))
    assert gradcheck(lambda y: y.unfold(0, 2, 1).sum(-1), (y,))
    with pytest.raises(RuntimeError, match="step"):
        x.unfold(0, 1, 0)


def test_unfold_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.arange(24.0).reshape(2, 3, 4)
    for dimension, size, step in ((0, 1, 1), (1, 2, 1), (2, 3, 2), (-1, 4, 3)):
        ours = _t(values, device).unfold(dimension, size, step)
        theirs = torch.tensor(values).unfold(dimension, size, step)
        assert ours.tolist() == theirs.tolist()
    x = _t(values, device, requires_grad=True)
    x.unfold(2, 2, 1).pow(2).sum().backward()
    tx = torch.tensor(values, requires_grad=True)
    tx.unfold(2, 2, 1).pow(2).sum().backward()
    _close(x.grad, tx.grad.numpy())


def test_atleast_nd(device):
    scalar, vector, matrix = _t(1.0, device), _t([1, 2], device), _t([[1, 2]], device)
    assert agnostic.atleast_1d(scalar).shape == (1,)
    assert [t.shape for t in agnostic.atleast_2d(scalar, vector, matrix)] == [(1, 1), (1, 2), (1, 2)]
    assert [t.shape for t in agnostic.atleast_3d([scalar, vector, matrix])] == [
        np.atleast_3d(v).shape for v in (np.array(1.0), np.array([1, 2]), np.array([[1, 2]]))]


def test_hsplit_vsplit_dsplit(device):
    values = np.arange(24).reshape(2, 4, 3)
    x = _t(values, device)
    assert [p.tolist() for p in x.hsplit(2)] == [p.tolist() for p in np.hsplit(values, 2)]
    assert [p.tolist() for p in agnostic.vsplit(x, [1])] == [p.tolist() for p in np.vsplit(values, [1])]
    assert [p.tolist() for p in x.dsplit(3)] == [p.tolist() for p in np.dsplit(values, 3)]
    assert [p.tolist() for p in _t([1, 2, 3, 4], device).hsplit(2)] == [[1, 2], [3, 4]]
    with pytest.raises(RuntimeError, match="divisible"):
        x.hsplit(3)
    with pytest.raises(RuntimeError, match="at least 3"):
        _t([[1]], device).dsplit(1)


def test_triangle_indices_match_numpy(device):
    for rows, columns, offset in ((3, 3, 0), (4, 2, -1), (2, 5, 2), (0, 3, 0)):
        lower = agnostic.tril_indices(rows, columns, offset, device=device)
        upper = agnostic.triu_indices(rows, columns, offset, device=device)
        assert lower.tolist() == np.stack(np.tril_indices(rows, offset, columns)).reshape(2, -1).tolist()
        assert upper.tolist() == np.stack(np.triu_indices(rows, offset, columns)).reshape(2, -1).tolist()
        assert lower.dtype is agnostic.int64 and lower.device == agnostic.device(device)


def test_block_diag_and_its_gradient(device):
    result = agnostic.block_diag(_t([[1, 2]], device), _t(3.0, device), _t([4, 5], device))
    assert result.dtype is agnostic.float32
    assert result.tolist() == [[1, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, 4, 5]]
    a = _t(np.ones((2, 2)), device, agnostic.float64, True)
    b = _t([1.0, 2.0, 3.0], device, agnostic.float64, True)
    assert gradcheck(agnostic.block_diag, (a, b))


def test_vander_matches_numpy_and_has_gradients(device):
    x = np.array([1, 2, 3, 5])
    assert agnostic.vander(_t(x, device)).tolist() == np.vander(x).tolist()
    assert agnostic.vander(_t(x, device), N=3, increasing=True).tolist() == np.vander(x, 3, increasing=True).tolist()
    assert agnostic.vander(_t(x, device), N=0).shape == (4, 0)
    y = _t([0.0, 1.5, -2.0], device, agnostic.float64, True)
    assert gradcheck(lambda y: agnostic.vander(y, N=4), (y,))


def test_shape_additions_match_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.arange(12).reshape(3, 4)
    assert agnostic.diff(_t(values, device), n=2, dim=0).tolist() == torch.diff(torch.tensor(values), n=2,
                                                                                  dim=0).tolist()
    assert agnostic.tril_indices(4, 3, 1).tolist() == torch.tril_indices(4, 3, 1).tolist()
    assert agnostic.triu_indices(3, 4, -1).tolist() == torch.triu_indices(3, 4, -1).tolist()
    ours = agnostic.block_diag(_t([[1, 2], [3, 4]], device), _t([5], device))
    assert ours.tolist() == torch.block_diag(torch.tensor([[1, 2], [3, 4]]), torch.tensor([5])).tolist()
    assert agnostic.vander(_t([2, 3], device), N=3).tolist() == torch.vander(torch.tensor([2, 3]), N=3).tolist()
    assert [p.tolist() for p in _t(values, device).vsplit([1, 2])] == [
        p.tolist() for p in torch.tensor(values).vsplit([1, 2])]


# ----- statistics and reductions ----------------------------------------------------------------------------------
def test_cov_matches_numpy_with_weights(device):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 6))
    frequencies, weights = rng.integers(0, 4, 6), rng.random(6)
    _close(agnostic.cov(_t(x, device)), np.cov(x), rtol=1e-10)
    _close(agnostic.cov(_t(x, device), correction=0), np.cov(x, ddof=0), rtol=1e-10)
    _close(agnostic.cov(_t(x, device), fweights=_t(frequencies, device), aweights=_t(weights, device)),
           np.cov(x, fweights=frequencies, aweights=weights), rtol=1e-10)
    assert agnostic.cov(_t([1, 2, 4], device)).shape == ()
    with pytest.raises(RuntimeError, match="integral"):
        agnostic.cov(_t(x, device), fweights=_t(weights, device))


def test_corrcoef_matches_numpy(device):
    x = np.random.default_rng(7).standard_normal((4, 5))
    _close(agnostic.corrcoef(_t(x, device)), np.corrcoef(x), rtol=1e-10)
    assert agnostic.corrcoef(_t([1.0, 2.0, 3.0], device)).item() == 1.0


def test_cov_corrcoef_gradients(device):
    x = _t(np.random.default_rng(8).standard_normal((2, 5)), device, agnostic.float64, True)
    assert gradcheck(agnostic.cov, (x,))
    assert gradcheck(agnostic.corrcoef, (x,))


def test_dist_and_vdot(device):
    a, b = np.array([1.0, -2.0, 3.0]), np.array([0.5, 1.0, -1.0])
    for p in (1, 2, 3, math.inf, 0):
        expected = np.linalg.norm(a - b, p) if p else np.count_nonzero(a - b)
        _close(agnostic.dist(_t(a, device), _t(b, device), p), expected, rtol=1e-6)
    assert agnostic.vdot(_t([1 + 1j, 2], device), _t([1j, 1], device)).item() == np.vdot([1 + 1j, 2], [1j, 1])
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.vdot(_t([1.0], device), _t([1], device))
    x, y = (_t(np.random.default_rng(9).random(3), device, agnostic.float64, True) for _ in range(2))
    assert gradcheck(agnostic.dist, (x, y)) and gradcheck(agnostic.vdot, (x, y))


def test_statistics_match_pytorch(device):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(10).standard_normal((3, 5))
    _close(agnostic.cov(_t(x, device), correction=2), torch.cov(torch.tensor(x), correction=2).numpy(), rtol=1e-10)
    _close(agnostic.corrcoef(_t(x, device)), torch.corrcoef(torch.tensor(x)).numpy(), rtol=1e-10)
    _close(agnostic.dist(_t(x, device), _t(x[0], device), 3), torch.dist(torch.tensor(x), torch.tensor(x[0]), 3),
           rtol=1e-10)
    ours = _t(x, device, requires_grad=True)
    agnostic.corrcoef(ours).sum().backward()
    theirs = torch.tensor(x, requires_grad=True)
    torch.corrcoef(theirs).sum().backward()
    _close(ours.grad, theirs.grad.numpy(), atol=1e-10)


# ----- in-place forms ---------------------------------------------------------------------------------------------
def test_shape_changing_in_place_forms(device):
    x = agnostic.zeros(2, 1, 3, device=device)
    assert x.squeeze_() is x and x.shape == (2, 3)
    assert x.unsqueeze_(0).shape == (1, 2, 3)
    assert x.transpose_(0, 2).shape == (3, 2, 1)
    assert x.swapaxes_(0, 1).shape == (2, 3, 1)
    y = _t([[1, 2, 3]], device)
    assert y.t_().tolist() == [[1], [2], [3]]
    with pytest.raises(RuntimeError, match="out-of-place"):
        _t([[1.0]], device, requires_grad=True).squeeze_()


def test_value_in_place_forms(device):
    values = np.arange(1.0, 10.0).reshape(3, 3)
    x = _t(values, device)
    assert x.tril_(-1) is x and x.tolist() == np.tril(values, -1).tolist()
    assert _t(values, device).triu_(1).tolist() == np.triu(values, 1).tolist()
    assert _t(values, device).cumsum_(1).tolist() == np.cumsum(values, 1).tolist()
    assert _t(values, device).cumprod_(0).tolist() == np.cumprod(values, 0).tolist()
    tall = agnostic.zeros(7, 3, device=device)
    expected = np.zeros((7, 3))
    np.fill_diagonal(expected, 5, wrap=True)
    assert tall.fill_diagonal_(5, wrap=True).tolist() == expected.tolist()
    cube = agnostic.zeros(2, 2, 2, device=device).fill_diagonal_(1)
    assert cube.sum().item() == 2 and cube[1, 1, 1].item() == 1


def test_in_place_forms_record_gradients(device):
    base = _t([[1.0, 2.0], [3.0, 4.0]], device, agnostic.float64, True)
    x = base * 1
    x.tril_()
    x.cumsum_(0)
    x.sum().backward()
    assert base.grad.tolist() == [[2.0, 0.0], [1.0, 1.0]]


# ----- random -----------------------------------------------------------------------------------------------------
def test_random_fills_are_reproducible_and_in_range(device):
    for method, arguments, check in (
            ("random_", (3, 9), lambda v: ((v >= 3) & (v < 9) & (v == np.floor(v))).all()),
            ("exponential_", (2.0,), lambda v: (v >= 0).all() and abs(v.mean() - 0.5) < 0.05),
            ("geometric_", (0.25,), lambda v: (v >= 1).all() and abs(v.mean() - 4) < 0.3),
            ("log_normal_", (0.0, 0.5), lambda v: (v > 0).all() and abs(np.log(v).std() - 0.5) < 0.05),
            ("cauchy_", (1.0, 2.0), lambda v: abs(np.median(v) - 1.0) < 0.2),
            ("bernoulli_", (0.3,), lambda v: set(np.unique(v)) <= {0.0, 1.0} and abs(v.mean() - 0.3) < 0.05)):
        agnostic.manual_seed(11)
        first = getattr(agnostic.empty(2000, device=device), method)(*arguments)
        agnostic.manual_seed(11)
        second = getattr(agnostic.empty(2000, device=device), method)(*arguments)
        assert first.tolist() == second.tolist(), method
        assert check(first.cpu().numpy()), method


def test_random_default_ranges():
    assert agnostic.zeros(1000, dtype=agnostic.bool).random_().sum().item() > 0
    assert agnostic.zeros(1000, dtype=agnostic.int8).random_().max().item() <= 127
    assert agnostic.zeros(1000).random_().max().item() <= 2 ** 24
    assert agnostic.zeros(1000).random_(5).max().item() <= 4
    with pytest.raises(RuntimeError, match="fit"):
        agnostic.zeros(1, dtype=agnostic.uint8).random_(0, 300)


def test_random_fills_give_the_same_numbers_on_every_device():
    from conftest import DEVICES
    results = []
    for name in DEVICES:
        agnostic.manual_seed(12)
        results.append(agnostic.empty(50, device=name).random_(0, 1000).cpu().tolist())
    assert all(result == results[0] for result in results)


def test_bernoulli_with_a_tensor_of_probabilities(device):
    agnostic.manual_seed(13)
    drawn = agnostic.empty(2, 500, device=device).bernoulli_(_t([[0.0], [1.0]], device))
    assert drawn[0].sum().item() == 0 and drawn[1].sum().item() == 500


def test_multinomial_with_and_without_replacement(device):
    agnostic.manual_seed(14)
    weights = _t([1.0, 2.0, 7.0, 0.0], device)
    drawn = agnostic.multinomial(weights, 20000, replacement=True)
    assert drawn.dtype is agnostic.int64 and drawn.shape == (20000,)
    np.testing.assert_allclose(np.bincount(drawn.cpu().numpy(), minlength=4) / 20000, [0.1, 0.2, 0.7, 0.0],
                               atol=0.02)
    rows = weights.expand(500, 4).multinomial(3)
    assert rows.shape == (500, 3)
    assert all(sorted(row) == [0, 1, 2] for row in rows.tolist())  # no repeats, never the zero-weight category
    # P(first pick is category 2) = 0.7 when drawing without replacement
    assert abs((rows[:, 0] == 2).float().mean().item() - 0.7) < 0.07
    with pytest.raises(RuntimeError, match="not enough"):
        weights.multinomial(4)
    with pytest.raises(RuntimeError, match="element < 0"):
        _t([1.0, -1.0], device).multinomial(1)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        _t([0.0, 0.0], device).multinomial(1, True)


# ----- histogram --------------------------------------------------------------------------------------------------
def test_histogram_matches_numpy(device):
    rng = np.random.default_rng(15)
    values, weights = rng.standard_normal(500), rng.random(500)
    for arguments in (dict(bins=7), dict(bins=5, range=(-1.0, 1.0)), dict(bins=4, density=True)):
        ours = agnostic.histogram(_t(values, device), **arguments)
        expected, edges = np.histogram(values, **arguments)
        _close(ours.hist, expected, rtol=1e-12)
        _close(ours.bin_edges, edges, rtol=1e-12)
    edges = np.array([-3.0, 0.0, 0.5, 3.0])
    ours = _t(values, device).histogram(_t(edges, device), weight=_t(weights, device))
    _close(ours.hist, np.histogram(values, edges, weights=weights)[0], rtol=1e-12)
    with pytest.raises(NotImplementedError):
        agnostic.histogram(_t([1, 2], device))


def test_histogram_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(16).standard_normal(300).astype(np.float32)
    ours = agnostic.histogram(_t(values, device), bins=9)
    theirs = torch.histogram(torch.tensor(values), bins=9)
    _close(ours.hist, theirs.hist.numpy())
    _close(ours.bin_edges, theirs.bin_edges.numpy(), rtol=1e-6)
    same = agnostic.histogram(_t([2.0, 2.0], device), bins=2)
    assert same.bin_edges.tolist() == torch.histogram(torch.tensor([2.0, 2.0]), bins=2).bin_edges.tolist()


def test_pytorchs_constants_are_the_same_values():
    assert (agnostic.pi, agnostic.e, agnostic.inf) == (math.pi, math.e, math.inf)
    assert math.isnan(agnostic.nan) and agnostic.newaxis is None
    assert agnostic.ones(3)[agnostic.newaxis].shape == (1, 3)
    torch = pytest.importorskip("torch")
    assert (agnostic.pi, agnostic.e, agnostic.inf, agnostic.newaxis) == (torch.pi, torch.e, torch.inf, torch.newaxis)
