"""gradient, histogramdd and stft on arbitrary shapes and dtypes agree across devices and with NumPy (np.gradient,
np.histogramdd, a framed np.fft.rfft)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes

TOLERANCE = {"float32": 1e-4, "float64": 1e-10}


@given(st.sampled_from(["float32", "float64"]), shapes(min_dims=1, max_dims=3, min_side=3, max_side=6),
       st.integers(1, 2), st.floats(0.25, 4.0), st.data())
@fewer_examples()
def test_gradient_on_any_shape_matches_numpy(dtype, shape, edge_order, step, data):
    a = data.draw(arrays(dtype, shape, -10, 10))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    outcome = on_all_devices(lambda t: agnostic.gradient(t, spacing=step, dim=dim, edge_order=edge_order)[0], a,
                             rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])
    expected = np.gradient(a.astype(np.float64), step, axis=dim, edge_order=edge_order)
    check_tensor(outcome, expected.astype(dtype), dtype, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * 100)


@given(st.sampled_from(["float32", "float64"]), st.integers(0, 30), st.integers(1, 3), st.integers(1, 4), st.data())
@fewer_examples()
def test_histogramdd_on_any_points_matches_numpy(dtype, count, dims, bins, data):
    # values on a coarse grid, so that no point sits within rounding of an edge
    points = data.draw(arrays(dtype, (count, dims), -8, 8, integral=True)) / np.asarray(2, dtype)
    outcome = on_all_devices(lambda t: agnostic.histogramdd(t, bins, range=[-4.25, 4.25] * dims).hist, points)
    expected, _ = np.histogramdd(points.astype(np.float64), bins, range=[(-4.25, 4.25)] * dims)
    check_tensor(outcome, expected.astype(dtype), dtype)


@given(st.sampled_from(["float32", "float64"]), st.integers(1, 3), st.integers(8, 24), st.integers(2, 8),
       st.integers(1, 4), st.data())
@fewer_examples()
def test_stft_on_any_signal_matches_framed_rfft(dtype, batch, length, n_fft, hop, data):
    signal = data.draw(arrays(dtype, (batch, length), -10, 10))
    outcome = on_all_devices(lambda t: agnostic.stft(t, n_fft, hop, window=agnostic.ones(n_fft, dtype=t.dtype,
                                                                                          device=t.device),
                                                     center=False, return_complex=True), signal,
                             rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype] * 100)
    count = 1 + (length - n_fft) // hop
    frames = np.stack([signal[:, t * hop:t * hop + n_fft] for t in range(count)], 1).astype(np.float64)
    expected = np.fft.rfft(frames, axis=-1).transpose(0, 2, 1)
    complex_dtype = "complex64" if dtype == "float32" else "complex128"
    check_tensor(outcome, expected.astype(complex_dtype), complex_dtype, rtol=TOLERANCE[dtype],
                 atol=TOLERANCE[dtype] * 100)
