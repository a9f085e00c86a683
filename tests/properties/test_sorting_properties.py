"""sort, argsort, topk, kthvalue, unique, searchsorted, isclose and equal agree across devices and with independent
references (Python's stable ``sorted``, NumPy's stable sort, ``np.unique``, ``np.searchsorted``, ``np.isclose``) on
random shapes and dtypes."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, REAL, arrays, check_tensor, fewer_examples, on_all_devices, shapes


@st.composite
def ordered_input(draw, names=REAL, min_dims=0, nan=False):
    """(array, dim): a real array, with NaNs in some float arrays, and a dim of it."""
    name = draw(st.sampled_from(names))
    shape = draw(shapes(min_dims=min_dims, max_dims=3, max_side=6))
    array = draw(arrays(name, shape, lo=-4, hi=4, integral=draw(st.booleans())))  # integral floats: many ties
    if nan and name in FLOATS and array.size and draw(st.booleans()):
        holes = draw(st.lists(st.integers(0, array.size - 1), max_size=3))
        array.reshape(-1)[holes] = np.nan
    bound = max(len(shape), 1)
    return array, draw(st.integers(-bound, bound - 1))


def reference_order(array, axis, descending):
    """Stable order along ``axis`` from Python's ``sorted`` (stable in both directions), NaN as the largest value."""
    moved = np.moveaxis(np.atleast_1d(array), axis if array.ndim else 0, -1)
    order = np.empty(moved.shape, np.int64)
    for index in np.ndindex(moved.shape[:-1]):
        row = moved[index]
        key = (lambda i: (bool(np.isnan(row[i])), row[i])) if row.dtype.kind == "f" else (lambda i: row[i])
        order[index] = sorted(range(row.size), key=key, reverse=descending)
    order = np.moveaxis(order, -1, axis if array.ndim else 0)
    return order.reshape(array.shape)


@fewer_examples(0.5)
@given(ordered_input(nan=True), st.booleans())
def test_sort_is_stable_and_matches_python_sorted(case, descending):
    array, dim = case
    outcome = on_all_devices(lambda x: agnostic.sort(x, dim, descending, stable=True), array).ok()
    order = reference_order(array, dim, descending)
    values = np.take_along_axis(array, order, dim) if array.ndim else array
    check_tensor(outcome[1], order, "int64")
    check_tensor(outcome[0], values, array.dtype.name)
    if not descending and array.ndim:
        np.testing.assert_array_equal(order, np.argsort(array, axis=dim, kind="stable"))


@fewer_examples(0.5)
@given(ordered_input(nan=True), st.booleans())
def test_argsort_is_sort_s_indices(case, descending):
    array, dim = case
    outcome = on_all_devices(lambda x: agnostic.argsort(x, dim, descending), array)
    check_tensor(outcome, reference_order(array, dim, descending), "int64")


@fewer_examples(0.5)
@given(ordered_input(names=INTS + FLOATS, nan=True), st.booleans(), st.data())
def test_topk_is_the_head_of_the_stable_sort(case, largest, data):
    array, dim = case
    size = array.shape[dim] if array.ndim else 1
    k = data.draw(st.integers(0, size + 1))
    outcome = on_all_devices(lambda x: agnostic.topk(x, k, dim, largest), array)
    if k > size:
        outcome.raises(RuntimeError)
        return
    order = reference_order(array, dim, largest)
    if array.ndim:
        order = np.take(order, np.arange(k), axis=dim)
    values = np.take_along_axis(array, order, dim) if array.ndim else array
    check_tensor(outcome.ok()[1], order, "int64")
    check_tensor(outcome.ok()[0], values, array.dtype.name)


@fewer_examples(0.5)
@given(ordered_input(names=INTS + FLOATS, nan=True), st.booleans(), st.data())
def test_kthvalue_is_the_kth_of_the_stable_sort(case, keepdim, data):
    array, dim = case
    size = array.shape[dim] if array.ndim else 1
    k = data.draw(st.integers(1, max(size, 1)))
    outcome = on_all_devices(lambda x: agnostic.kthvalue(x, k, dim, keepdim), array)
    if size == 0:
        outcome.raises(IndexError)
        return
    order = reference_order(array, dim, False)
    if array.ndim:
        order = np.take(order, [k - 1], axis=dim)
        values = np.take_along_axis(array, order, dim)
        if not keepdim:
            order, values = order.squeeze(dim), values.squeeze(dim)
    else:
        values = array
    check_tensor(outcome.ok()[1], order, "int64")
    check_tensor(outcome.ok()[0], values, array.dtype.name)


@fewer_examples(0.5)
@given(ordered_input(), st.booleans(), st.booleans())
def test_unique_matches_numpy(case, return_inverse, return_counts):
    array, _ = case
    outcome = on_all_devices(lambda x: agnostic.unique(x, return_inverse=return_inverse,
                                                       return_counts=return_counts), array).ok()
    values, inverse, counts = np.unique(array, return_inverse=True, return_counts=True)
    results = [outcome] if not (return_inverse or return_counts) else list(outcome)
    check_tensor(results.pop(0), values, array.dtype.name)
    if return_inverse:
        check_tensor(results.pop(0), inverse.reshape(array.shape), "int64")
    if return_counts:
        check_tensor(results.pop(0), counts, "int64")


@fewer_examples(0.5)
@given(ordered_input(names=INTS + ["bool", "float32"], min_dims=1))
def test_unique_along_a_dim_matches_numpy(case):
    array, dim = case
    outcome = on_all_devices(lambda x: agnostic.unique(x, return_inverse=True, return_counts=True, dim=dim), array)
    others = [n for i, n in enumerate(array.shape) if i != dim % array.ndim]
    if array.size == 0 and 0 in others:
        outcome.raises(RuntimeError)
        return
    values, inverse, counts = np.unique(array, return_inverse=True, return_counts=True, axis=dim)
    results = outcome.ok()
    check_tensor(results[0], values, array.dtype.name)
    check_tensor(results[1], inverse.reshape(-1), "int64")
    check_tensor(results[2], counts, "int64")


@fewer_examples(0.5)
@given(ordered_input(min_dims=1))
def test_unique_consecutive_keeps_runs_once(case):
    array, _ = case
    flat = array.reshape(-1)
    starts = np.concatenate([[True], flat[1:] != flat[:-1]])[:flat.size]
    outcome = on_all_devices(lambda x: agnostic.unique_consecutive(x, return_inverse=True, return_counts=True),
                             array).ok()
    check_tensor(outcome[0], flat[starts], array.dtype.name)
    check_tensor(outcome[1], (np.cumsum(starts) - 1).reshape(array.shape), "int64")
    check_tensor(outcome[2], np.diff(np.append(np.flatnonzero(starts), flat.size)), "int64")


@fewer_examples(0.5)
@given(st.sampled_from(INTS + FLOATS), st.integers(0, 3), st.integers(0, 9), st.integers(0, 5), st.booleans(),
       st.booleans(), st.data())
def test_searchsorted_matches_numpy(name, batch_dims, length, count, right, batched, data):
    batch = tuple(data.draw(st.lists(st.integers(1, 3), min_size=batch_dims, max_size=batch_dims))) if batched \
        else ()
    sequence = np.sort(data.draw(arrays(name, batch + (length,), lo=-20, hi=20, integral=True)), axis=-1)
    values = data.draw(arrays(name, batch + (count,), lo=-25, hi=25))
    outcome = on_all_devices(lambda s, v: agnostic.searchsorted(s, v, right=right), sequence, values)
    expected = np.empty(values.shape, np.int64)
    for index in np.ndindex(batch):
        expected[index] = np.searchsorted(sequence[index], values[index], side="right" if right else "left")
    check_tensor(outcome, expected, "int64")
    if not batched:
        check_tensor(on_all_devices(lambda v, b: agnostic.bucketize(v, b, right=right), values, sequence), expected,
                     "int64")


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64"]), shapes(max_dims=3), st.sampled_from([(1e-5, 1e-8), (1e-2, 0.0),
                                                                                     (0.0, 0.5), (0.0, 0.0)]),
       st.booleans(), st.data())
def test_isclose_matches_numpy(name, shape, tolerances, equal_nan, data):
    rtol, atol = tolerances
    a = data.draw(arrays(name, shape, lo=-10, hi=10))
    nudge = data.draw(arrays(name, shape, lo=-1, hi=1)) * np.asarray(
        data.draw(st.sampled_from([0, 1e-7, 1e-4, 1e-2])), name)
    b = np.asarray(a + nudge, dtype=name)
    if a.size and data.draw(st.booleans()):
        a.reshape(-1)[0], b.reshape(-1)[0] = data.draw(st.sampled_from([(np.nan, np.nan), (np.inf, np.inf),
                                                                        (np.inf, -np.inf), (np.nan, 1.0)]))
    outcome = on_all_devices(lambda x, y: agnostic.isclose(x, y, rtol, atol, equal_nan), a, b)
    expected = np.isclose(a, b, rtol, atol, equal_nan)
    check_tensor(outcome, expected, "bool")
    assert on_all_devices(lambda x, y: agnostic.allclose(x, y, rtol, atol, equal_nan), a, b).ok() is \
        bool(expected.all())


@fewer_examples(0.5)
@given(st.sampled_from(REAL), st.sampled_from(REAL), shapes(max_dims=2, max_side=3), st.booleans(), st.data())
def test_equal_matches_numpy(first, second, shape, same_shape, data):
    a = data.draw(arrays(first, shape, lo=-2, hi=2, integral=True))
    other_shape = shape if same_shape else data.draw(shapes(max_dims=2, max_side=3))
    b = data.draw(arrays(second, other_shape, lo=-2, hi=2, integral=True))
    outcome = on_all_devices(agnostic.equal, a, b).ok()
    assert outcome is (a.shape == b.shape and bool((a == b).all()))


def test_reference_order_is_stable_both_ways():
    rows = np.array([1.0, math.nan, 1.0, 0.0])
    assert reference_order(rows, 0, False).tolist() == [3, 0, 2, 1]
    assert reference_order(rows, 0, True).tolist() == [1, 0, 2, 3]
