"""Statistics and scans (median, nanmedian, mode, quantile, nanquantile, cummax, cummin, logcumsumexp, histc,
bincount, nansum, var_mean) agree across devices and with NumPy references (np.nanmedian-style lower medians,
np.quantile's methods, ufunc accumulations, np.bincount)."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, arrays, check_tensor, fewer_examples, on_all_devices, shapes

ORDERED = INTS + FLOATS


def _with_nans(draw, a, chance=True):
    """``a`` (a float array) with NaNs put in some places."""
    if a.dtype.kind != "f" or not a.size or not (chance and draw(st.booleans())):
        return a
    mask = draw(arrays("bool", a.shape))
    a = a.copy()
    a[mask] = np.nan
    return a


@st.composite
def case(draw, names=ORDERED, min_side=0, nans=True, integral=False):
    """(array, dim): a dim in range (ints negative too), or None."""
    name = draw(st.sampled_from(names))
    shape = draw(shapes(max_dims=3, min_side=min_side, max_side=5))
    a = draw(arrays(name, shape, -20, 20, integral=integral))
    a = _with_nans(draw, a, nans)
    bound = max(len(shape), 1)
    return a, draw(st.one_of(st.none(), st.integers(-bound, bound - 1)))


def _lower_median(rows, ignore_nan):
    """The lower median of each row (last axis): of all values (NaN if any is NaN), or of the numbers."""
    out = np.empty(rows.shape[:-1], rows.dtype)
    for index in np.ndindex(*rows.shape[:-1]):
        row = rows[index]
        numbers = np.sort(row[~np.isnan(row)] if row.dtype.kind == "f" else row)
        if (not ignore_nan and numbers.size < row.size) or numbers.size == 0:
            out[index] = np.nan
        else:
            out[index] = numbers[(numbers.size - 1) // 2]
    return out


def _axis(dim, ndim):
    return dim % max(ndim, 1)


def _same_or_both_nan(picked, values):
    return (picked == values) | (np.isnan(picked) & np.isnan(values)) if values.dtype.kind == "f" else picked == values


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@fewer_examples(0.5)
@given(data=st.data())
def test_median_matches_lower_median(name, data):
    a, dim = data.draw(case(min_side=1, nans=True))
    ignore_nan = name == "nanmedian"
    function = getattr(agnostic, name)
    if dim is None:
        outcome = on_all_devices(lambda t: function(t), a)
        expected = _lower_median(a.reshape(1, -1), ignore_nan).reshape(())
        check_tensor(outcome, expected, a.dtype.name)
        return
    keepdim = data.draw(st.booleans())
    outcome = on_all_devices(lambda t: function(t, dim, keepdim), a)
    values, indices = outcome.ok()
    axis = _axis(dim, a.ndim)
    rows = np.moveaxis(a, axis, -1) if a.ndim else a.reshape(1)
    expected = _lower_median(rows, ignore_nan)
    if keepdim and a.ndim:
        expected = np.expand_dims(expected, axis)
    check_tensor(values, expected.reshape(values.shape), a.dtype.name)
    assert indices.dtype == "int64" and indices.shape == values.shape
    if a.ndim:
        picked = np.take_along_axis(a, indices.array if keepdim else np.expand_dims(indices.array, axis), axis)
        assert _same_or_both_nan(picked.reshape(values.shape), values.array).all()


@fewer_examples(0.5)
@given(case(names=INTS + ["float64"], min_side=1, nans=False, integral=True), st.booleans())
def test_mode_is_the_smallest_most_frequent_value_at_its_last_index(a_dim, keepdim):
    a, dim = a_dim
    dim = -1 if dim is None else dim
    values, indices = on_all_devices(lambda t: agnostic.mode(t, dim, keepdim), a).ok()
    rows = np.moveaxis(a, _axis(dim, a.ndim), -1) if a.ndim else a.reshape(1)
    expected_values = np.empty(rows.shape[:-1], a.dtype)
    expected_indices = np.empty(rows.shape[:-1], np.int64)
    for index in np.ndindex(*rows.shape[:-1]):
        row = rows[index]
        unique, counts = np.unique(row, return_counts=True)
        mode = unique[np.argmax(counts)]  # np.unique sorts: the first of the most frequent is the smallest
        expected_values[index] = mode
        expected_indices[index] = np.flatnonzero(row == mode)[-1]
    if keepdim and a.ndim:
        expected_values = np.expand_dims(expected_values, _axis(dim, a.ndim))
        expected_indices = np.expand_dims(expected_indices, _axis(dim, a.ndim))
    check_tensor(values, expected_values.reshape(values.shape), a.dtype.name)
    check_tensor(indices, expected_indices.reshape(values.shape), "int64")


QUANTILES = st.lists(st.integers(0, 16).map(lambda k: k / 16), min_size=1, max_size=4)  # exact in binary


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@fewer_examples(0.25)
@given(data=st.data())
def test_quantile_matches_numpy(name, interpolation, data):
    a, dim = data.draw(case(names=["float64"], min_side=1, nans=True))
    q = data.draw(QUANTILES)
    keepdim = data.draw(st.booleans())
    as_tensor = data.draw(st.booleans())
    q_argument = np.array(q) if as_tensor else q[0]
    outcome = on_all_devices(lambda t, qs: getattr(agnostic, name)(t, qs, dim, keepdim, interpolation=interpolation),
                             a, q_argument)
    reference = np.nanquantile if name == "nanquantile" else np.quantile
    axis = None if dim is None or a.ndim == 0 else _axis(dim, a.ndim)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected = reference(a, q_argument, axis=axis, keepdims=keepdim and a.ndim > 0, method=interpolation)
    if name == "quantile" and np.isnan(a).any():
        # PyTorch: a row with a NaN gives NaN (NumPy may interpolate between numbers below the NaN)
        rows_nan = np.isnan(a).any(axis=axis, keepdims=keepdim and a.ndim > 0)
        expected = np.where(rows_nan, np.nan, expected)
    check_tensor(outcome, np.asarray(expected), "float64", rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@fewer_examples(0.5)
@given(data=st.data())
def test_cummax_cummin_match_accumulate(name, data):
    a, dim = data.draw(case(nans=False))
    dim = 0 if dim is None else dim
    values, indices = on_all_devices(lambda t: getattr(agnostic, name)(t, dim), a).ok()
    ufunc = np.maximum if name == "cummax" else np.minimum

    def expected_rows(row, place):
        return ufunc.reduce(row[:place + 1])
    expected = ufunc.accumulate(a, axis=_axis(dim, a.ndim)) if a.ndim else a
    check_tensor(values, expected, a.dtype.name)
    rows = np.moveaxis(a, _axis(dim, a.ndim), -1) if a.ndim else a.reshape(1)
    expected_indices = np.empty(rows.shape, np.int64)
    for index in np.ndindex(*rows.shape[:-1]):
        row = rows[index]
        for place in range(row.size):  # the latest place up to here holding the running extreme
            expected_indices[index + (place,)] = np.flatnonzero(row[:place + 1] == expected_rows(row, place))[-1]
    expected_indices = np.moveaxis(expected_indices, -1, _axis(dim, a.ndim)) if a.ndim else expected_indices[0]
    check_tensor(indices, expected_indices, "int64")


@fewer_examples(0.5)
@given(case(names=FLOATS, nans=False))
def test_logcumsumexp_matches_logaddexp_accumulate(a_dim):
    a, dim = a_dim
    dim = 0 if dim is None else dim
    outcome = on_all_devices(lambda t: agnostic.logcumsumexp(t, dim), a, rtol=1e-5, atol=1e-5)
    wide = a.astype(np.float64)
    expected = np.logaddexp.accumulate(wide, axis=_axis(dim, a.ndim)) if a.ndim else wide
    tolerance = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-12}[a.dtype.name]
    check_tensor(outcome, expected.astype(a.dtype), a.dtype.name, rtol=tolerance, atol=tolerance)


@fewer_examples(0.5)
@given(case(names=["float32", "float64"], nans=False), st.integers(1, 9), st.booleans())
def test_histc_matches_bin_counts(a_dim, bins, own_range):
    a, _ = a_dim
    low, high = (0.0, 0.0) if own_range else (-10.0, 15.0)
    outcome = on_all_devices(lambda t: agnostic.histc(t, bins, low, high), a)
    values = a.reshape(-1)
    if own_range:
        low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 0.0)
        if low == high:
            low, high = low - 1, high + 1
    inside = values[(values >= low) & (values <= high)]
    scale = a.dtype.type(bins) / (a.dtype.type(high) - a.dtype.type(low))
    places = np.minimum(((inside - a.dtype.type(low)) * scale).astype(np.int64), bins - 1)
    check_tensor(outcome, np.bincount(places, minlength=bins).astype(a.dtype), a.dtype.name)


@fewer_examples(0.5)
@given(st.sampled_from(["uint8", "int8", "int32", "int64"]), st.integers(0, 12), st.integers(0, 6), st.data())
def test_bincount_matches_numpy(name, length, minlength, data):
    x = data.draw(arrays(name, (length,), -1 if name != "uint8" else 0, 9))
    weighted = data.draw(st.booleans())
    w = data.draw(arrays("float32", (length,), -5, 5)) if weighted else None
    outcome = on_all_devices(lambda t, weights: agnostic.bincount(t, weights, minlength), x, w)
    if (x < 0).any():
        outcome.raises(RuntimeError)
        return
    expected = np.bincount(x.astype(np.int64), None if w is None else w.astype(np.float64), minlength)
    check_tensor(outcome, expected.astype(np.float32 if weighted else np.int64),
                 "float32" if weighted else "int64", rtol=1e-6, atol=1e-5)


@fewer_examples(0.5)
@given(case(names=FLOATS, nans=True), st.booleans())
def test_nansum_and_nanmean_match_numpy(a_dim, keepdim):
    a, dim = a_dim
    axis = None if dim is None or a.ndim == 0 else _axis(dim, a.ndim)
    atol = 1e-2 if a.dtype.name == "float16" else 1e-4
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        expected_sum = np.nansum(a.astype(np.float64), axis=axis, keepdims=keepdim)
        expected_mean = np.nanmean(a.astype(np.float64), axis=axis, keepdims=keepdim)
    total = on_all_devices(lambda t: agnostic.nansum(t, dim, keepdim), a, atol=atol, rtol=1e-3)
    check_tensor(total, expected_sum.astype(a.dtype), a.dtype.name, atol=atol, rtol=1e-3)
    average = on_all_devices(lambda t: agnostic.nanmean(t, dim, keepdim), a, atol=atol, rtol=1e-3)
    check_tensor(average, expected_mean.astype(a.dtype), a.dtype.name, atol=atol, rtol=1e-3)


@fewer_examples(0.5)
@given(case(names=["float32", "float64"], min_side=1, nans=False), st.integers(0, 2), st.booleans())
def test_var_mean_matches_numpy(a_dim, correction, keepdim):
    a, dim = a_dim
    axis = None if dim is None or a.ndim == 0 else _axis(dim, a.ndim)
    count = a.size if axis is None else a.shape[axis]
    assume(count > correction)
    variance, mean = on_all_devices(lambda t: agnostic.var_mean(t, dim, keepdim=keepdim, correction=correction),
                                    a, rtol=1e-4, atol=1e-4).ok()
    wide = a.astype(np.float64)
    expected_mean = wide.mean(axis=axis, keepdims=keepdim)
    check_tensor(mean, expected_mean.astype(a.dtype), a.dtype.name, rtol=1e-4, atol=1e-4)
    expected_var = wide.var(axis=axis, ddof=correction, keepdims=keepdim)
    check_tensor(variance, expected_var.astype(a.dtype), a.dtype.name, rtol=1e-4, atol=1e-3)
    assert math.isfinite(float(np.asarray(variance.array).sum()))
