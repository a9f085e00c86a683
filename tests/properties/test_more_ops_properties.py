"""The ops added for issue 15 agree across devices and with NumPy on arbitrary shapes and dtypes: addcmul, logaddexp,
gcd/lcm, isin, diff, unfold, the split family, vander, cov."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, arrays, broadcast_pair, check_tensor, fewer_examples, on_all_devices, shapes


@fewer_examples()
@given(pair=broadcast_pair(max_dims=3), dtype=st.sampled_from(["float32", "float64"]), data=st.data())
def test_addcmul_is_input_plus_value_times_product(pair, dtype, data):
    a = data.draw(arrays(dtype, pair[0], lo=-10, hi=10))
    b = data.draw(arrays(dtype, pair[1], lo=-10, hi=10))
    value = data.draw(st.sampled_from([1, 0.5, -2]))
    outcome = on_all_devices(lambda x, y: agnostic.addcmul(x, x, y, value=value), a, b)
    check_tensor(outcome, a + value * (a * b), dtype, rtol=1e-5, atol=1e-4)


@fewer_examples()
@given(pair=broadcast_pair(max_dims=3), dtype=st.sampled_from(FLOATS[1:]), data=st.data())
def test_logaddexp_matches_numpy(pair, dtype, data):
    a = data.draw(arrays(dtype, pair[0], lo=-50, hi=50))
    b = data.draw(arrays(dtype, pair[1], lo=-50, hi=50))
    check_tensor(on_all_devices(agnostic.logaddexp, a, b), np.logaddexp(a, b), dtype, rtol=1e-5, atol=1e-6)
    check_tensor(on_all_devices(agnostic.logaddexp2, a, b), np.logaddexp2(a, b), dtype, rtol=1e-5, atol=1e-6)


@fewer_examples()
@given(pair=broadcast_pair(max_dims=3), dtype=st.sampled_from(INTS), data=st.data())
def test_gcd_lcm_match_numpy(pair, dtype, data):
    a = data.draw(arrays(dtype, pair[0], lo=-20, hi=20))
    b = data.draw(arrays(dtype, pair[1], lo=-20, hi=20))
    check_tensor(on_all_devices(agnostic.gcd, a, b), np.gcd(a, b), dtype)
    check_tensor(on_all_devices(agnostic.lcm, a, b), np.lcm(a, b).astype(dtype), dtype)


@fewer_examples()
@given(shape=shapes(max_dims=3), dtype=st.sampled_from(INTS + ["float32"]), invert=st.booleans(), data=st.data())
def test_isin_matches_numpy(shape, dtype, invert, data):
    elements = data.draw(arrays(dtype, shape, lo=-5, hi=5, integral=True))
    tests = data.draw(arrays(dtype, data.draw(shapes(max_dims=2)), lo=-5, hi=5, integral=True))
    outcome = on_all_devices(lambda x, y: agnostic.isin(x, y, invert=invert), elements, tests)
    check_tensor(outcome, np.isin(elements, tests, invert=invert), "bool")


@fewer_examples()
@given(shape=shapes(min_dims=1, max_dims=3), dtype=st.sampled_from(["int64", "float64"]), n=st.integers(0, 3),
       data=st.data())
def test_diff_matches_numpy(shape, dtype, n, data):
    values = data.draw(arrays(dtype, shape, lo=-10, hi=10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    outcome = on_all_devices(lambda x: agnostic.diff(x, n=n, dim=dim), values)
    check_tensor(outcome, np.diff(values, n=n, axis=dim), dtype, rtol=1e-12, atol=1e-12)


@fewer_examples()
@given(shape=shapes(min_dims=1, max_dims=3, min_side=1), data=st.data())
def test_unfold_matches_a_sliding_window(shape, data):
    values = data.draw(arrays("float32", shape))
    dim = data.draw(st.integers(0, len(shape) - 1))
    size = data.draw(st.integers(0, shape[dim]))
    step = data.draw(st.integers(1, 3))
    outcome = on_all_devices(lambda x: x.unfold(dim, size, step) * 1, values)
    windows = np.lib.stride_tricks.sliding_window_view(values, size, axis=dim)
    check_tensor(outcome, np.take(windows, range(0, windows.shape[dim], step), axis=dim), "float32")


@fewer_examples()
@given(shape=shapes(min_dims=3, max_dims=3, min_side=1), sections=st.integers(1, 3), data=st.data())
def test_split_family_matches_numpy(shape, sections, data):
    values = data.draw(arrays("int32", shape))
    for name, axis in (("hsplit", 1), ("vsplit", 0), ("dsplit", 2)):
        assume(shape[axis] % sections == 0)
        pieces = on_all_devices(lambda x: agnostic.stack([p.sum() for p in getattr(agnostic, name)(x, sections)]),
                                values)
        expected = [piece.sum() for piece in getattr(np, name)(values, sections)]
        check_tensor(pieces, np.array(expected, dtype=np.int64), "int64")


@fewer_examples()
@given(length=st.integers(0, 5), columns=st.integers(0, 5), increasing=st.booleans(), data=st.data())
def test_vander_matches_numpy(length, columns, increasing, data):
    values = data.draw(arrays("int64", (length,), lo=-4, hi=4))
    outcome = on_all_devices(lambda x: agnostic.vander(x, N=columns, increasing=increasing), values)
    check_tensor(outcome, np.vander(values, columns, increasing=increasing), "int64")


@fewer_examples()
@given(variables=st.integers(1, 4), observations=st.integers(2, 6), correction=st.integers(0, 1), data=st.data())
def test_cov_matches_numpy(variables, observations, correction, data):
    values = data.draw(arrays("float64", (variables, observations), lo=-10, hi=10))
    outcome = on_all_devices(lambda x: agnostic.cov(x, correction=correction), values)
    check_tensor(outcome, np.cov(values, ddof=correction), "float64", rtol=1e-9, atol=1e-9)
