"""Statistics and scans (agnostic/ops/statistics.py): values, dtypes, shapes, errors and gradients as PyTorch's,
checked against NumPy references, hand-computed values and (where installed) PyTorch itself."""

import math

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

NAN = float("nan")


def _t(values, device, dtype=None, requires_grad=False):
    return agnostic.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _np(tensor):
    return tensor.detach().cpu().numpy()


def _rows(seed, shape, dtype=np.float64, distinct=True):
    rng = np.random.default_rng(seed)
    values = rng.permutation(np.prod(shape)).reshape(shape) / 7.0 - 1.5 if distinct else rng.standard_normal(shape)
    return values.astype(dtype)


# ----- var_mean, std_mean -------------------------------------------------------------------------------------------
def test_var_mean_and_std_mean_match_numpy(device):
    x = _rows(0, (3, 4))
    variance, mean = agnostic.var_mean(_t(x, device), 1)
    np.testing.assert_allclose(_np(variance), x.var(1, ddof=1))
    np.testing.assert_allclose(_np(mean), x.mean(1))
    spread, center = agnostic.std_mean(_t(x, device), dim=(0, 1), correction=0, keepdim=True)
    assert spread.shape == (1, 1) and center.shape == (1, 1)
    np.testing.assert_allclose(_np(spread), [[x.std()]])
    np.testing.assert_allclose(_np(center), [[x.mean()]])
    biased, _ = agnostic.var_mean(_t(x, device), False)  # var_mean(input, unbiased)
    np.testing.assert_allclose(_np(biased), x.var())
    assert isinstance(agnostic.var_mean(_t(x, device)), tuple)


def test_var_mean_refuses_integers_and_both_corrections(device):
    with pytest.raises(RuntimeError, match="floating point"):
        agnostic.var_mean(_t([1, 2], device))
    with pytest.raises(TypeError, match="either unbiased or correction"):
        agnostic.std_mean(_t([1.0, 2.0], device), 0, True, correction=1)


def test_var_mean_gradients(device):
    x = _t(_rows(1, (2, 3)), device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.var_mean(t, 1)[0] * agnostic.var_mean(t, 1)[1], (x,))
    assert gradcheck(lambda t: agnostic.std_mean(t, 0, correction=0)[0] + agnostic.std_mean(t)[1], (x,))


# ----- nansum, nanmean, aminmax -------------------------------------------------------------------------------------
def test_nansum_and_nanmean_skip_nans(device):
    x = np.array([[1.0, NAN, 3.0], [NAN, NAN, NAN]], np.float32)
    np.testing.assert_array_equal(_np(agnostic.nansum(_t(x, device), 1)), np.float32([4.0, 0.0]))
    np.testing.assert_array_equal(_np(agnostic.nanmean(_t(x, device), 1)), np.float32([2.0, NAN]))
    assert agnostic.nansum(_t(x, device)).item() == 4.0
    assert agnostic.nanmean(_t(x, device), dim=0, keepdim=True).shape == (1, 3)
    integers = agnostic.nansum(_t([1, 2, 3], device, dtype=agnostic.int8))
    assert integers.dtype == agnostic.int64 and integers.item() == 6
    assert agnostic.nansum(_t([1.0, NAN], device), dtype=agnostic.float64).dtype == agnostic.float64


def test_nansum_and_nanmean_errors(device):
    with pytest.raises(RuntimeError, match="complex"):
        agnostic.nansum(_t([1j], device))
    with pytest.raises(RuntimeError, match="floating point"):
        agnostic.nanmean(_t([1, 2], device))


def test_nansum_and_nanmean_gradients_are_zero_at_nans(device):
    x = _t([[1.0, NAN], [2.0, 4.0]], device, dtype=agnostic.float64, requires_grad=True)
    (agnostic.nansum(x) + agnostic.nanmean(x, 1).sum()).backward()
    np.testing.assert_allclose(_np(x.grad), [[2.0, 0.0], [1.5, 1.5]])
    assert gradcheck(lambda t: agnostic.nanmean(t, 0), (_t(_rows(2, (3, 2)), device, requires_grad=True),))


def test_aminmax(device):
    x = _t([[1, 5, -2], [3, 2, 7]], device)
    both = agnostic.aminmax(x)
    assert (both.min.item(), both.max.item()) == (-2, 7)
    assert type(both).__name__ == "aminmax" and both._fields == ("min", "max")
    by_row = agnostic.aminmax(x, dim=1, keepdim=True)
    np.testing.assert_array_equal(_np(by_row.min), [[-2], [2]])
    np.testing.assert_array_equal(_np(by_row.max), [[5], [7]])
    assert agnostic.aminmax(x, keepdim=True).min.shape == (1, 1)
    assert agnostic.aminmax(x, dim=-1).max.dtype == agnostic.int64
    assert repr(both).startswith("agnostic.return_types.aminmax(\nmin=tensor(-2")
    with pytest.raises(RuntimeError, match="empty dimension"):
        agnostic.aminmax(agnostic.zeros(0, device=device))
    with pytest.raises(IndexError):
        agnostic.aminmax(x, dim=2)


def test_aminmax_gradient(device):
    x = _t(_rows(3, (3, 4)), device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.aminmax(t, dim=0).min + 2 * agnostic.aminmax(t, dim=0).max, (x,))


# ----- median, nanmedian --------------------------------------------------------------------------------------------
def test_median_of_all_elements_is_the_lower_median(device):
    assert agnostic.median(_t([3.0, 1.0, 4.0, 2.0], device)).item() == 2.0
    odd = agnostic.median(_t([[5, 1, 4], [2, 3, 9]], device))
    assert odd.shape == () and odd.dtype == agnostic.int64 and odd.item() == 3
    assert math.isnan(agnostic.median(_t([1.0, NAN, 2.0], device)).item())
    assert math.isnan(agnostic.median(agnostic.zeros(0, device=device)).item())


def test_median_along_a_dim(device):
    x = np.array([[1.0, NAN, 3.0], [4.0, 2.0, NAN], [5.0, 1.0, 2.0], [7.0, 6.0, 6.0]], np.float32)
    result = agnostic.median(_t(x, device), 1)
    assert type(result).__name__ == "median" and result._fields == ("values", "indices")
    np.testing.assert_array_equal(_np(result.values), np.float32([NAN, NAN, 2.0, 6.0]))
    np.testing.assert_array_equal(_np(result.indices[:3]), [1, 2, 2])  # a row's first NaN
    assert result.indices[3].item() in (1, 2)
    kept = agnostic.median(_t(x, device), 0, keepdim=True)
    assert kept.values.shape == (1, 3) and kept.indices.dtype == agnostic.int64
    scalar = agnostic.median(_t(2.5, device), 0)
    assert scalar.values.item() == 2.5 and scalar.indices.item() == 0


def test_median_errors(device):
    with pytest.raises(IndexError, match="non-zero size"):
        agnostic.median(agnostic.zeros(0, 3, device=device), 0)
    with pytest.raises(IndexError):
        agnostic.median(agnostic.zeros(2, device=device), 1)
    with pytest.raises(RuntimeError, match="complex"):
        agnostic.median(_t([1j], device))
    with pytest.raises(NotImplementedError, match="bool"):
        agnostic.nanmedian(_t([True, False], device), 0)


def test_nanmedian_ignores_nans(device):
    x = np.array([[NAN, NAN, 3.0, NAN], [4.0, 1.0, NAN, 2.0], [NAN, NAN, NAN, NAN]], np.float64)
    result = agnostic.nanmedian(_t(x, device), 1)
    np.testing.assert_array_equal(_np(result.values), [3.0, 2.0, NAN])
    np.testing.assert_array_equal(_np(result.indices), [2, 3, 0])
    assert agnostic.nanmedian(_t(x, device)).item() == 2.0  # of 3, 4, 1, 2: the lower median
    assert agnostic.nanmedian(_t([5, 1, 3, 2], device)).item() == 2


def test_median_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = _rows(4, (4, 6), np.float32)
    x[1, 2] = x[3, 0] = np.nan
    for dim in (0, 1, -1):
        for name in ("median", "nanmedian"):
            ours = getattr(agnostic, name)(_t(x, device), dim)
            theirs = getattr(torch, name)(torch.tensor(x), dim)
            np.testing.assert_array_equal(_np(ours.values), theirs.values.numpy())
            np.testing.assert_array_equal(_np(ours.indices), theirs.indices.numpy())


def test_median_gradients(device):
    x = _t(_rows(5, (3, 4)), device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.median(t, 1).values, (x,))
    assert gradcheck(lambda t: agnostic.nanmedian(t, 0, keepdim=True).values, (x,))
    assert gradcheck(lambda t: agnostic.median(t), (x,))
    ties = _t([1.0, 2.0, 2.0, 3.0, 2.0], device, requires_grad=True)
    agnostic.median(ties).backward()  # shared evenly between the elements equal to the median, as PyTorch
    np.testing.assert_allclose(_np(ties.grad), [0, 1 / 3, 1 / 3, 0, 1 / 3])
    chosen = _t([[3.0, 1.0, 2.0]], device, requires_grad=True)
    agnostic.median(chosen, 1).values.sum().backward()
    np.testing.assert_array_equal(_np(chosen.grad), [[0.0, 0.0, 1.0]])


# ----- mode --------------------------------------------------------------------------------------------------------
def test_mode_is_the_smallest_most_frequent_value_at_its_last_index(device):
    result = agnostic.mode(_t([[3, 1, 3, 1, 2], [0, 5, 5, 0, 5]], device))
    np.testing.assert_array_equal(_np(result.values), [1, 5])
    np.testing.assert_array_equal(_np(result.indices), [3, 4])
    by_column = agnostic.mode(_t([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]], device), 0, keepdim=True)
    np.testing.assert_array_equal(_np(by_column.values), [[1.0, 3.0]])
    np.testing.assert_array_equal(_np(by_column.indices), [[1, 2]])
    assert type(result).__name__ == "mode"
    with pytest.raises(IndexError, match="non-zero size"):
        agnostic.mode(agnostic.zeros(2, 0, device=device))


def test_mode_matches_torch_and_gradient(device):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(6).integers(0, 4, (5, 7)).astype(np.float64)
    for dim in (0, 1):
        ours = agnostic.mode(_t(x, device), dim)
        theirs = torch.mode(torch.tensor(x), dim)
        np.testing.assert_array_equal(_np(ours.values), theirs.values.numpy())
        np.testing.assert_array_equal(_np(ours.indices), theirs.indices.numpy())
    leaf = _t(x, device, requires_grad=True)
    agnostic.mode(leaf, 1).values.sum().backward()
    expected = np.zeros_like(x)
    expected[np.arange(5), _np(agnostic.mode(_t(x, device), 1).indices)] = 1
    np.testing.assert_array_equal(_np(leaf.grad), expected)


# ----- quantile, nanquantile ----------------------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("interpolation", METHODS)
def test_quantile_matches_numpy(device, interpolation):
    x = _rows(7, (3, 5, 4), distinct=False)
    q = np.array([0.0, 0.125, 0.5, 0.625, 1.0])
    for dim in (None, 0, 1, -1):
        for keepdim in (False, True):
            ours = agnostic.quantile(_t(x, device), _t(q, device), dim, keepdim, interpolation=interpolation)
            expected = np.quantile(x, q, axis=dim, keepdims=keepdim, method=interpolation)
            np.testing.assert_allclose(_np(ours), expected, rtol=1e-12, atol=1e-12)
            single = agnostic.quantile(_t(x, device), 0.375, dim, keepdim, interpolation=interpolation)
            np.testing.assert_allclose(_np(single), np.quantile(x, 0.375, axis=dim, keepdims=keepdim,
                                                                   method=interpolation), rtol=1e-12, atol=1e-12)


@pytest.mark.filterwarnings("ignore:All-NaN slice")
def test_quantile_values_and_nans(device):
    assert agnostic.quantile(_t([1.0, 2.0, 3.0, 4.0], device), 0.5).item() == 2.5
    rows = _t([[1.0, NAN, 3.0], [1.0, 2.0, 3.0]], device)
    np.testing.assert_array_equal(_np(agnostic.quantile(rows, 0.5, 1)), np.float32([NAN, 2.0]))
    np.testing.assert_array_equal(_np(agnostic.nanquantile(rows, 0.5, 1)), np.float32([2.0, 2.0]))
    assert math.isnan(agnostic.nanquantile(_t([NAN, NAN], device), 0.3).item())
    x = _rows(8, (4, 6), distinct=False)
    x[0, 1] = x[2, :] = x[3, 0] = np.nan
    for method in METHODS:
        np.testing.assert_allclose(_np(agnostic.nanquantile(_t(x, device), 0.25, 1, interpolation=method)),
                                   np.nanquantile(x, 0.25, axis=1, method=method))
    assert agnostic.quantile(_t(2.0, device), 0.5, 0, True).shape == ()


def test_quantile_errors(device):
    x = _t([1.0, 2.0], device)
    cases = [
        (lambda: agnostic.quantile(agnostic.zeros(0, device=device), 0.5), "non-empty"),
        (lambda: agnostic.quantile(_t([1, 2], device), 0.5), "float or double"),
        (lambda: agnostic.quantile(x, 1.5), r"range \[0, 1\] but got 1.5"),
        (lambda: agnostic.quantile(x, _t([0.5, 2.0], device)), r"range \[0, 1\]"),
        (lambda: agnostic.quantile(x, _t([0.5], device, dtype=agnostic.float64)), "same dtype"),
        (lambda: agnostic.quantile(x, _t([[0.5]], device)), "scalar or 1D"),
        (lambda: agnostic.quantile(x, 0.5, interpolation="cubic"), "interpolation must be one of"),
    ]
    for call, message in cases:
        with pytest.raises(RuntimeError, match=message):
            call()
    with pytest.raises(IndexError):
        agnostic.quantile(x, 0.5, dim=1)


def test_quantile_gradients(device):
    x = _t(_rows(9, (3, 5)), device, requires_grad=True)
    q = _t([0.1, 0.5, 0.95], device, dtype=agnostic.float64)
    assert gradcheck(lambda t: agnostic.quantile(t, q, 1), (x,))
    assert gradcheck(lambda t: agnostic.quantile(t, 0.3, interpolation="midpoint"), (x,))
    assert gradcheck(lambda t: agnostic.nanquantile(t, 0.7, 0, keepdim=True), (x,))
    line = _t([4.0, 1.0, 3.0, 2.0], device, requires_grad=True)
    agnostic.quantile(line, 0.5).backward()  # halfway between 2 and 3
    np.testing.assert_allclose(_np(line.grad), [0.0, 0.0, 0.5, 0.5])


def test_quantile_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = _rows(10, (4, 5), np.float32)
    for method in METHODS:
        for dim in (None, 0, 1):
            ours = agnostic.quantile(_t(x, device), _t([0.3, 0.8], device), dim, interpolation=method)
            theirs = torch.quantile(torch.tensor(x), torch.tensor([0.3, 0.8]), dim, interpolation=method)
            np.testing.assert_allclose(_np(ours), theirs.numpy(), rtol=1e-6)
    leaf, reference = _t(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    agnostic.quantile(leaf, 0.37, 0).sum().backward()
    torch.quantile(reference, 0.37, 0).sum().backward()
    np.testing.assert_allclose(_np(leaf.grad), reference.grad.numpy(), rtol=1e-5)


# ----- cummax, cummin, logcumsumexp, cumprod ------------------------------------------------------------------------
def test_cummax_and_cummin_take_the_latest_index_of_ties(device):
    result = agnostic.cummax(_t([1, 3, 2, 3, 5], device), 0)
    np.testing.assert_array_equal(_np(result.values), [1, 3, 3, 3, 5])
    np.testing.assert_array_equal(_np(result.indices), [0, 1, 1, 3, 4])
    low = agnostic.cummin(_t([1.0, 3.0, 3.0, 2.0, 1.0], device), 0)
    np.testing.assert_array_equal(_np(low.values), [1.0, 1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(_np(low.indices), [0, 0, 0, 0, 4])
    with_nan = agnostic.cummax(_t([1.0, NAN, 3.0, NAN], device), 0)
    np.testing.assert_array_equal(_np(with_nan.values), [1.0, NAN, NAN, NAN])
    np.testing.assert_array_equal(_np(with_nan.indices), [0, 1, 1, 3])
    assert type(result).__name__ == "cummax" and type(low).__name__ == "cummin"


def test_cummax_along_dims_matches_numpy(device):
    x = np.random.default_rng(11).integers(-5, 5, (3, 9, 2))
    for dim in (0, 1, 2, -2):
        np.testing.assert_array_equal(_np(agnostic.cummax(_t(x, device), dim).values), np.maximum.accumulate(x, dim))
        np.testing.assert_array_equal(_np(agnostic.cummin(_t(x, device), dim).values), np.minimum.accumulate(x, dim))
    scalar = agnostic.cummax(_t(4.0, device), 0)
    assert scalar.values.item() == 4.0 and scalar.indices.item() == 0
    assert agnostic.cummin(agnostic.zeros(0, 3, device=device), 0).values.shape == (0, 3)


def test_cummax_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).integers(0, 4, (4, 13)).astype(np.float32)
    x[1, 5] = x[2, 0] = x[2, 7] = np.nan
    for name in ("cummax", "cummin"):
        for dim in (0, 1):
            ours = getattr(agnostic, name)(_t(x, device), dim)
            theirs = getattr(torch, name)(torch.tensor(x), dim)
            np.testing.assert_array_equal(_np(ours.values), theirs.values.numpy())
            np.testing.assert_array_equal(_np(ours.indices), theirs.indices.numpy())


def test_cummax_gradients(device):
    x = _t(_rows(13, (3, 5)), device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.cummax(t, 1).values, (x,))
    assert gradcheck(lambda t: agnostic.cummin(t, 0).values, (x,))
    steps = _t([2.0, 1.0, 3.0], device, requires_grad=True)
    agnostic.cummax(steps, 0).values.sum().backward()
    np.testing.assert_array_equal(_np(steps.grad), [2.0, 0.0, 1.0])


def test_logcumsumexp_is_stable(device):
    x = np.array([[0.0, 0.0, 0.0, 1000.0, -1000.0], [-np.inf, -np.inf, 1.0, -np.inf, 2.0]])
    out = agnostic.logcumsumexp(_t(x, device), 1)
    np.testing.assert_allclose(_np(out), np.logaddexp.accumulate(x, 1), rtol=1e-12)
    x = _rows(14, (4, 7), distinct=False) * 30
    for dim in (0, 1):
        np.testing.assert_allclose(_np(agnostic.logcumsumexp(_t(x, device), dim)), np.logaddexp.accumulate(x, dim),
                                   rtol=1e-12)
    half = agnostic.logcumsumexp(_t([1.0, 2.0], device, dtype=agnostic.float16), 0)
    assert half.dtype == agnostic.float16
    np.testing.assert_allclose(_np(half).astype(np.float64), np.logaddexp.accumulate([1.0, 2.0]), rtol=1e-3)
    with pytest.raises(NotImplementedError, match="float"):
        agnostic.logcumsumexp(_t([1, 2], device), 0)
    with pytest.raises(IndexError):
        agnostic.logcumsumexp(_t([1.0], device), 1)


def test_logcumsumexp_gradient(device):
    x = _t(_rows(15, (3, 6), distinct=False), device, requires_grad=True)
    assert gradcheck(lambda t: agnostic.logcumsumexp(t, 1), (x,))
    assert gradcheck(lambda t: agnostic.logcumsumexp(t * 40, 0), (x,))


def test_logcumsumexp_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = _rows(16, (3, 8), np.float32, distinct=False) * 10
    weights = _rows(17, (3, 8), np.float32, distinct=False)
    leaf, reference = _t(x, device, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours, theirs = agnostic.logcumsumexp(leaf, 1), torch.logcumsumexp(reference, 1)
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=1e-5)
    (ours * _t(weights, device)).sum().backward()
    (theirs * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(_np(leaf.grad), reference.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_cumprod_gradient_with_zeros(device):
    x = np.array([[2.0, 0.0, 3.0, 0.5], [1.0, 2.0, 0.0, 4.0], [0.0, 0.0, 2.0, 1.0]])
    leaf = _t(x, device, requires_grad=True)
    agnostic.cumprod(leaf, 1).sum().backward()
    expected = np.zeros_like(x)  # d/dx_i of sum_j prod_{k<=j} x_k, by hand
    for row in range(3):
        for i in range(4):
            expected[row, i] = sum(np.prod([x[row, k] for k in range(j + 1) if k != i]) for j in range(i, 4))
    np.testing.assert_allclose(_np(leaf.grad), expected)
    assert gradcheck(lambda t: agnostic.cumprod(t, 1), (_t(x, device, requires_grad=True),))


# ----- histc, bincount ----------------------------------------------------------------------------------------------
def test_histc(device):
    np.testing.assert_array_equal(_np(agnostic.histc(_t([1.0, 2.0, 1.0, NAN], device), bins=4, min=0, max=3)),
                                  np.float32([0, 2, 1, 0]))
    np.testing.assert_array_equal(_np(agnostic.histc(_t([1.0, 1.0], device), bins=4)), np.float32([0, 0, 2, 0]))
    x = _rows(18, (50,), distinct=False)
    counts = agnostic.histc(_t(x, device), bins=7)
    assert counts.dtype == agnostic.float64 and counts.shape == (7,)
    np.testing.assert_array_equal(_np(counts), np.histogram(x, 7)[0])
    inside = agnostic.histc(_t(x.reshape(5, 10), device), bins=5, min=-1, max=1)  # elements outside are left out
    np.testing.assert_array_equal(_np(inside), np.histogram(x[(x >= -1) & (x <= 1)], 5, range=(-1, 1))[0])
    assert _np(agnostic.histc(agnostic.zeros(0, device=device), bins=3)).tolist() == [0, 0, 0]


def test_histc_errors(device):
    x = _t([1.0, 2.0], device)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        agnostic.histc(x, bins=0)
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        agnostic.histc(x, bins=3, min=3, max=1)
    with pytest.raises(RuntimeError, match="not finite"):
        agnostic.histc(x, bins=3, min=-math.inf, max=1)
    with pytest.raises(RuntimeError, match="not finite"):
        agnostic.histc(_t([1.0, NAN], device), bins=3)
    with pytest.raises(NotImplementedError):
        agnostic.histc(_t([1, 2], device))


def test_bincount(device):
    counts = agnostic.bincount(_t([1, 3, 1], device))
    assert counts.dtype == agnostic.int64
    np.testing.assert_array_equal(_np(counts), [0, 2, 0, 1])
    np.testing.assert_array_equal(_np(agnostic.bincount(_t([1], device, dtype=agnostic.uint8), minlength=4)),
                                  [0, 1, 0, 0])
    empty = agnostic.bincount(agnostic.zeros(0, dtype=agnostic.int64, device=device), minlength=2)
    assert empty.tolist() == [0, 0]
    x = np.random.default_rng(19).integers(0, 9, 40)
    w = _rows(20, (40,), np.float32, distinct=False)
    weighted = agnostic.bincount(_t(x, device), _t(w, device))
    assert weighted.dtype == agnostic.float32
    np.testing.assert_allclose(_np(weighted), np.bincount(x, w.astype(np.float64)), rtol=1e-6)
    for weights_dtype in (agnostic.float64, agnostic.int64, agnostic.float16):
        assert agnostic.bincount(_t([0, 1], device), _t([1, 2], device, dtype=weights_dtype)).dtype == agnostic.float64


def test_bincount_errors(device):
    for bad in (_t([1, -1], device), _t([[1]], device)):
        with pytest.raises(RuntimeError, match="1-d non-negative integral"):
            agnostic.bincount(bad)
    with pytest.raises(NotImplementedError):
        agnostic.bincount(_t([1.0], device))
    with pytest.raises(NotImplementedError):
        agnostic.bincount(_t([True], device))
    with pytest.raises(RuntimeError, match="minlength"):
        agnostic.bincount(_t([1], device), minlength=-1)
    with pytest.raises(RuntimeError, match="same length"):
        agnostic.bincount(_t([1, 2], device), weights=_t([1.0], device))


# ----- Tensor methods -----------------------------------------------------------------------------------------------
def test_tensor_methods_exist_as_in_pytorch(device):
    """torch.Tensor has these methods (not var_mean/std_mean): they need ``ops.statistics`` among the modules
    ``agnostic/_tensor_classes.py`` imports before it makes Tensor's methods."""
    x = _t([[3.0, 1.0], [2.0, 2.0]], device)
    assert x.median().item() == 2.0
    assert x.nanmedian(1).values.tolist() == [1.0, 2.0]
    assert x.quantile(0.5).item() == 2.0 and x.nanquantile(0.5).item() == 2.0
    assert x.mode(1).values.tolist() == [1.0, 2.0]
    assert x.cummax(1).values.tolist() == [[3.0, 3.0], [2.0, 2.0]]
    assert x.cummin(0).indices.tolist() == [[0, 0], [1, 0]]
    assert x.logcumsumexp(0).shape == (2, 2)
    assert x.nansum().item() == 8.0 and x.nanmean().item() == 2.0
    assert x.aminmax().max.item() == 3.0
    assert x.histc(bins=2, min=0, max=4).tolist() == [1.0, 3.0]
    assert _t([0, 2], device).bincount().tolist() == [1, 0, 1]
    assert not hasattr(agnostic.Tensor, "var_mean") and not hasattr(agnostic.Tensor, "std_mean")


@pytest.mark.parametrize("numpy_takes_out_ellipsis", [True, False])
def test_whole_reductions_give_0_dim_arrays_with_or_without_numpys_out_ellipsis(monkeypatch, numpy_takes_out_ellipsis):
    """NumPy 2.3 and later return the arrays themselves (``out=...``); before, the scalars are made arrays again."""
    from agnostic._backends import cpu_ops
    monkeypatch.setattr(cpu_ops, "OUT_ELLIPSIS", numpy_takes_out_ellipsis and cpu_ops.OUT_ELLIPSIS)
    values = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    x = agnostic.from_numpy(values)
    for result, expected in ((x.sum(), values.sum()), (x.max(), values.max()), (x.min(), values.min()),
                             (x.sum(keepdim=True), values.sum(keepdims=True))):
        assert type(result._data) is np.ndarray and result.dtype == agnostic.float32
        assert result.shape == expected.shape and result.item() == expected.item()


@pytest.mark.parametrize("size", [1, 31, 512, 2051, 8192, 8193, 20000])
@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64])
def test_whole_sum_and_mean_match_numpy_on_every_device(device, size, dtype):
    """A sum or mean of every element: CUDA reduces a small contiguous array in one block of one kernel (up to 8192
    elements), larger or strided ones through CuPy; every path agrees with NumPy's float64 result to the dtype's
    rounding, gives the same bits when repeated, keeps ``keepdim``'s shape, and lets NaN and infinity through."""
    values = np.random.default_rng(size).standard_normal(size).astype(dtype.numpy_dtype) + 0.25
    x = agnostic.tensor(values, device=device)
    tolerance = 1e-5 if dtype is agnostic.float32 else 1e-12
    for result, expected in ((x.sum(), values.astype(np.float64).sum()), (x.mean(), values.astype(np.float64).mean()),
                             (x[::2].sum(), values[::2].astype(np.float64).sum())):
        assert result.dtype == dtype and result.shape == () and result.device == x.device
        assert abs(result.item() - expected) <= tolerance * max(1.0, np.abs(values).sum())
    assert x.sum().item() == x.sum().item() and x.mean().item() == x.mean().item()
    kept = x.reshape(1, -1).mean(keepdim=True)
    assert kept.shape == (1, 1) and kept.item() == x.mean().item()
    for special in (float("nan"), float("inf"), -float("inf")):
        y = x.clone()
        y[size // 2] = special
        assert np.array_equal(y.sum().cpu().numpy(), np.array(special, dtype=dtype.numpy_dtype), equal_nan=True)
