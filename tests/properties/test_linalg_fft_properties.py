"""agnostic.linalg and agnostic.fft on arbitrary shapes agree across devices and with NumPy: batched matrices,
vector norms over any dims, transforms over any dim with any ``n``; PyTorch's result dtypes."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes

_COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


@st.composite
def batched_square(draw, name=None):
    """Well-conditioned batched square matrices (a random part plus a dominant diagonal)."""
    name = name or draw(st.sampled_from(["float32", "float64"]))
    batch = draw(shapes(max_dims=2, min_side=1, max_side=3))
    n = draw(st.integers(1, 4))
    a = draw(arrays(name, batch + (n, n), -1, 1))
    return (a + (n + 1) * np.eye(n, dtype=a.dtype)).astype(a.dtype), name


@given(batched_square())
@fewer_examples()
def test_inv_det_solve_on_batches(case):
    a, name = case
    tolerance = 1e-4 if name == "float32" else 1e-9
    check_tensor(on_all_devices(agnostic.linalg.inv, a), np.linalg.inv(a), name, rtol=tolerance, atol=tolerance)
    check_tensor(on_all_devices(agnostic.linalg.det, a), np.linalg.det(a), name, rtol=tolerance, atol=tolerance)
    b = a.sum(-1)
    check_tensor(on_all_devices(agnostic.linalg.solve, a, b), np.linalg.solve(a, b[..., None])[..., 0], name,
                 rtol=tolerance, atol=tolerance)


@given(st.sampled_from(["float32", "float64"]).flatmap(
    lambda name: st.tuples(st.just(name), shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))),
    st.sampled_from([2, 1, math.inf, -math.inf, 0, 3.0]), st.booleans(), st.data())
@fewer_examples()
def test_vector_norm_over_any_dim(case, ord, keepdim, data):
    name, shape = case
    x = data.draw(arrays(name, shape, -10, 10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    expected = np.linalg.norm(x.astype(np.float64), ord, axis=dim, keepdims=keepdim)
    tolerance = 1e-4 if name == "float32" else 1e-9
    check_tensor(on_all_devices(lambda t: agnostic.linalg.vector_norm(t, ord, dim, keepdim), x), expected, name,
                 rtol=tolerance, atol=tolerance)


@given(st.sampled_from(["float32", "float64"]).flatmap(
    lambda name: st.tuples(st.just(name), shapes(min_dims=1, max_dims=3, min_side=1, max_side=6))),
    st.sampled_from([None, "ortho", "forward"]), st.data())
@fewer_examples()
def test_transforms_over_any_dim_and_length(case, norm, data):
    name, shape = case
    x = data.draw(arrays(name, shape, -10, 10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.none() | st.integers(1, 8))
    tolerance = 1e-3 if name == "float32" else 1e-9
    wide = x.astype(np.float64)
    check_tensor(on_all_devices(lambda t: agnostic.fft.fft(t, n, dim, norm), x),
                 np.fft.fft(wide, n, dim, norm), _COMPLEX_OF[name], rtol=tolerance, atol=tolerance)
    check_tensor(on_all_devices(lambda t: agnostic.fft.rfft(t, n, dim, norm), x),
                 np.fft.rfft(wide, n, dim, norm), _COMPLEX_OF[name], rtol=tolerance, atol=tolerance)
    if shape[dim] > 1 or n is not None:
        check_tensor(on_all_devices(lambda t: agnostic.fft.irfft(t, n, dim, norm), x),
                     np.fft.irfft(wide, n, dim, norm), name, rtol=tolerance, atol=tolerance)
