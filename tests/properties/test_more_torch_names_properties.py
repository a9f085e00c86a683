"""Everyday PyTorch names agree across devices and with NumPy on arbitrary shapes and dtypes: select, column_stack,
dstack, diagflat, addr, nextafter, renorm, sum_to_size, trapezoid, cumulative_trapezoid and unravel_index."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, arrays, check_tensor, fewer_examples, on_all_devices, shapes


@fewer_examples()
@given(shape=shapes(min_dims=1, max_dims=4, min_side=1), dtype=st.sampled_from(INTS + FLOATS + ["bool"]),
       data=st.data())
def test_select_is_numpys_take_of_one_index(shape, dtype, data):
    values = data.draw(arrays(dtype, shape))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    index = data.draw(st.integers(-shape[dim] - 1, shape[dim]))
    outcome = on_all_devices(lambda x: x.select(dim, index), values)
    if not -shape[dim] <= index < shape[dim]:
        outcome.raises(IndexError)
        return
    check_tensor(outcome, np.take(values, index, axis=dim), dtype)


@fewer_examples()
@given(rows=st.integers(0, 4), count=st.integers(1, 3), dtype=st.sampled_from(INTS + FLOATS), data=st.data())
def test_column_and_depth_stacks_match_numpy(rows, count, dtype, data):
    pieces = [data.draw(arrays(dtype, data.draw(st.sampled_from([(rows,), (rows, 2)])))) for _ in range(count)]
    check_tensor(on_all_devices(lambda *t: agnostic.column_stack(t), *pieces), np.column_stack(pieces), dtype)
    same = [data.draw(arrays(dtype, pieces[0].shape)) for _ in range(count)]
    check_tensor(on_all_devices(lambda *t: agnostic.dstack(t), *same), np.dstack(same), dtype)


@fewer_examples()
@given(shape=shapes(max_dims=3, max_side=4), offset=st.integers(-3, 3), dtype=st.sampled_from(INTS + FLOATS),
       data=st.data())
def test_diagflat_matches_numpy(shape, offset, dtype, data):
    values = data.draw(arrays(dtype, shape))
    check_tensor(on_all_devices(lambda x: agnostic.diagflat(x, offset), values), np.diagflat(values, offset), dtype)


@fewer_examples()
@given(n=st.integers(0, 4), m=st.integers(0, 4), dtype=st.sampled_from(["int64", "float32", "float64"]),
       beta=st.sampled_from([0, 1, 2]), alpha=st.sampled_from([1, -3]), data=st.data())
def test_addr_matches_numpy(n, m, dtype, beta, alpha, data):
    base = data.draw(arrays(dtype, data.draw(st.sampled_from([(n, m), (m,), (1, m), ()])), lo=-10, hi=10))
    vec1 = data.draw(arrays(dtype, (n,), lo=-10, hi=10))
    vec2 = data.draw(arrays(dtype, (m,), lo=-10, hi=10))
    outcome = on_all_devices(lambda a, b, c: agnostic.addr(a, b, c, beta=beta, alpha=alpha), base, vec1, vec2)
    expected = alpha * np.outer(vec1, vec2) + (beta * np.broadcast_to(base, (n, m)) if beta else 0)
    check_tensor(outcome, expected.astype(dtype), dtype, rtol=1e-5, atol=1e-3)


@fewer_examples()
@given(shape=shapes(max_dims=3), dtype=st.sampled_from(FLOATS), data=st.data())
def test_nextafter_matches_numpy(shape, dtype, data):
    start = data.draw(arrays(dtype, shape, lo=-5, hi=5))
    toward = data.draw(arrays(dtype, shape, lo=-5, hi=5))
    with np.errstate(all="ignore"):
        expected = np.nextafter(start, toward)
    # NumPy's half nextafter gives ``start`` for +-0 towards -+0; PyTorch (and C) give ``toward``.
    expected = np.where(start == toward, toward, expected)
    check_tensor(on_all_devices(agnostic.nextafter, start, toward), expected, dtype, rtol=0, atol=0)


@fewer_examples()
@given(shape=shapes(min_dims=2, max_dims=3, min_side=1), dtype=st.sampled_from(["float32", "float64"]),
       p=st.sampled_from([1, 2, 3.0]), maxnorm=st.floats(0, 20), data=st.data())
def test_renorm_bounds_each_slice_norm(shape, dtype, p, maxnorm, data):
    values = data.draw(arrays(dtype, shape, lo=-10, hi=10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    snap = check_tensor(on_all_devices(lambda x: agnostic.renorm(x, p, dim, maxnorm), values, rtol=1e-5, atol=1e-5),
                        _renormed(values.astype(np.float64), p, dim, maxnorm), dtype, rtol=1e-4, atol=1e-4)
    slices = np.moveaxis(snap.array.astype(np.float64), dim, 0).reshape(shape[dim], -1)
    assert ((np.abs(slices) ** p).sum(1) ** (1 / p) <= maxnorm * (1 + 1e-4) + 1e-4).all() or maxnorm == 0 or \
        np.allclose(snap.array, values)


def _renormed(values, p, dim, maxnorm):
    moved = np.moveaxis(values, dim, 0)
    norms = (np.abs(moved.reshape(moved.shape[0], -1)) ** p).sum(1) ** (1 / p)
    factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * factor.reshape((-1,) + (1,) * (moved.ndim - 1)), 0, dim)


@fewer_examples()
@given(shape=shapes(max_dims=4, max_side=4), dtype=st.sampled_from(["int64", "float64"]), data=st.data())
def test_sum_to_size_is_the_inverse_of_broadcasting(shape, dtype, data):
    values = data.draw(arrays(dtype, shape, lo=-10, hi=10))
    kept = len(shape) - data.draw(st.integers(0, len(shape)))
    size = tuple(side if data.draw(st.booleans()) else 1 for side in shape[len(shape) - kept:])
    expected = values.sum(tuple(range(len(shape) - kept)))
    expected = expected.sum(tuple(i for i, side in enumerate(size) if side == 1), keepdims=True).reshape(size)
    check_tensor(on_all_devices(lambda x: x.sum_to_size(size), values), expected, dtype, rtol=1e-12, atol=1e-9)


@fewer_examples()
@given(shape=shapes(min_dims=1, max_dims=3, max_side=5), dtype=st.sampled_from(["int64", "float32", "float64"]),
       spacing=st.sampled_from([None, 0.5, 2]), data=st.data())
def test_trapezoid_and_cumulative_trapezoid_match_numpy(shape, dtype, spacing, data):
    values = data.draw(arrays(dtype, shape, lo=-10, hi=10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    points = np.cumsum(data.draw(arrays("float64", (shape[dim],), lo=0, hi=3)))
    result_dtype = "float32" if dtype == "int64" else dtype
    tolerance = {"rtol": 1e-4, "atol": 1e-3} if result_dtype == "float32" else {"rtol": 1e-10, "atol": 1e-9}
    dx = 1 if spacing is None else spacing
    if shape[dim]:
        expected = np.trapezoid(values.astype(np.float64), dx=dx, axis=dim)
    else:
        expected = np.zeros(values.sum(dim).shape, values.dtype)
    outcome = on_all_devices(lambda y: agnostic.trapezoid(y, dx=spacing, dim=dim), values, **tolerance)
    check_tensor(outcome, expected, result_dtype if shape[dim] else dtype, **tolerance)
    pairs = (np.take(values, range(1, shape[dim]), dim).astype(np.float64)
             + np.take(values, range(shape[dim] - 1), dim)) / 2
    steps = np.diff(points).reshape([-1 if d == dim % len(shape) else 1 for d in range(len(shape))])
    outcome = on_all_devices(lambda y: agnostic.cumulative_trapezoid(y, dx=spacing, dim=dim), values, **tolerance)
    check_tensor(outcome, np.cumsum(pairs * dx, dim), result_dtype, **tolerance)
    points_dtype = "float64" if dtype == "float64" else "float32"
    outcome = on_all_devices(lambda y, x: agnostic.cumulative_trapezoid(y, x, dim=dim), values,
                             points.astype(points_dtype), **tolerance)
    check_tensor(outcome, np.cumsum(pairs * steps, dim), points_dtype, **tolerance)


@fewer_examples()
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=4).map(tuple),
       indices_shape=shapes(max_dims=2, max_side=4), dtype=st.sampled_from(["int32", "int64"]), data=st.data())
def test_unravel_index_matches_numpy(shape, indices_shape, dtype, data):
    flat = data.draw(arrays(dtype, indices_shape, lo=0, hi=math.prod(shape) - 1, integral=True))
    outcome = on_all_devices(lambda i: agnostic.unravel_index(i, shape), flat).ok()
    for snap, expected in zip(outcome, np.unravel_index(flat, shape)):
        check_tensor(snap, expected, "int64")
