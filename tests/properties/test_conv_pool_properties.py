"""Convolution, pooling, nearest upsampling and pixel shuffle over drawn shapes and settings: agree across devices,
with NumPy sliding-window references, and with their algebraic identities (transposed convolution is the adjoint of
convolution; pixel_unshuffle undoes pixel_shuffle)."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import agnostic
import agnostic.nn.functional as F
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices

CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
CONV_TRANSPOSE = {1: F.conv_transpose1d, 2: F.conv_transpose2d}


@st.composite
def conv_cases(draw):
    """(x, weight, stride, padding, dilation, groups) whose output is non-empty."""
    dims = draw(st.integers(1, 3))
    groups = draw(st.integers(1, 2))
    per_group, out_per_group = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    dilation = tuple(draw(st.integers(1, 2)) for _ in range(dims))
    padding = tuple(draw(st.integers(0, 1)) for _ in range(dims))
    spatial = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 6))
                    for k, d, p in zip(kernel, dilation, padding))
    batch = draw(st.integers(1, 2))
    x = draw(arrays("float64", (batch, per_group * groups) + spatial, -3, 3))
    weight = draw(arrays("float64", (out_per_group * groups, per_group) + kernel, -3, 3))
    return x, weight, stride, padding, dilation, groups


def conv_reference(x, weight, stride, padding, dilation, groups):
    """Cross-correlation from NumPy's sliding windows (an independent route from im2col's strided slices)."""
    dims = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    kernel = weight.shape[2:]
    reach = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    windows = sliding_window_view(x, reach, axis=tuple(range(2, 2 + dims)))
    windows = windows[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]  # dilated kernel taps
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    per_group, out_per_group = weight.shape[1], weight.shape[0] // groups
    outputs = []
    for g in range(groups):
        part = windows[:, g * per_group:(g + 1) * per_group]
        kernels = weight[g * out_per_group:(g + 1) * out_per_group]
        taps = "".join("klm"[:dims])
        outputs.append(np.einsum(f"nc{'xyz'[:dims]}{taps},oc{taps}->no{'xyz'[:dims]}", part, kernels))
    return np.concatenate(outputs, axis=1)


@fewer_examples()
@given(conv_cases())
def test_conv_matches_sliding_window_reference(case):
    x, weight, stride, padding, dilation, groups = case
    convolve = CONV[x.ndim - 2]
    outcome = on_all_devices(lambda t, w: convolve(t, w, None, stride, padding, dilation, groups), x, weight)
    check_tensor(outcome, conv_reference(x, weight, stride, padding, dilation, groups), "float64")


@fewer_examples()
@given(conv_cases(), st.data())
def test_conv_transpose_is_the_adjoint_of_conv(case, data):
    x, weight, stride, padding, dilation, groups = case
    dims = x.ndim - 2
    assume(dims in CONV_TRANSPOSE)
    forward = CONV[dims](agnostic.tensor(x), agnostic.tensor(weight), None, stride, padding, dilation, groups)
    y = data.draw(arrays("float64", tuple(forward.shape), -3, 3))
    # the output sizes a transposed convolution can reach differ by up to stride - 1: pick the one of x
    smallest = [(o - 1) * s - 2 * p + d * (k - 1) + 1
                for o, s, p, d, k in zip(forward.shape[2:], stride, padding, dilation, weight.shape[2:])]
    extra = tuple(size - low for size, low in zip(x.shape[2:], smallest))
    assume(all(e < s or e < d for e, s, d in zip(extra, stride, dilation)))
    outcome = on_all_devices(lambda t, w: CONV_TRANSPOSE[dims](t, w, None, stride, padding, extra, groups, dilation),
                             y, weight)
    back = outcome.ok().array
    assert back.shape == x.shape
    np.testing.assert_allclose((forward.numpy() * y).sum(), (x * back).sum(), rtol=1e-9, atol=1e-9)


@st.composite
def pool_cases(draw, dtypes):
    dims = draw(st.integers(1, 3))
    kernel = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    stride = tuple(draw(st.integers(1, 3)) for _ in range(dims))
    spatial = tuple(draw(st.integers(k, 6)) for k in kernel)
    dtype = draw(st.sampled_from(dtypes))
    x = draw(arrays(dtype, (draw(st.integers(1, 2)), draw(st.integers(1, 2))) + spatial, -50, 50))
    return x, kernel, stride


def pool_windows(x, kernel, stride):
    dims = x.ndim - 2
    windows = sliding_window_view(x, kernel, axis=tuple(range(2, 2 + dims)))
    windows = windows[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)]
    return windows.reshape(windows.shape[:2 + dims] + (-1,))


@fewer_examples()
@given(pool_cases(["float32", "float64", "int32", "int64"]))
def test_max_pool_matches_sliding_window_maximum(case):
    x, kernel, stride = case
    pool = getattr(F, f"max_pool{x.ndim - 2}d")
    outcome = on_all_devices(lambda t: pool(t, kernel, stride), x)
    check_tensor(outcome, pool_windows(x, kernel, stride).max(-1), x.dtype.name)


@fewer_examples()
@given(pool_cases(["float32", "float64"]))
def test_avg_pool_matches_sliding_window_mean(case):
    x, kernel, stride = case
    pool = getattr(F, f"avg_pool{x.ndim - 2}d")
    outcome = on_all_devices(lambda t: pool(t, kernel, stride), x, rtol=1e-5, atol=1e-5)
    expected = pool_windows(x.astype(np.float64), kernel, stride).mean(-1).astype(x.dtype)
    np.testing.assert_allclose(outcome.ok().array, expected, rtol=1e-5, atol=1e-5)
    assert outcome.ok().dtype == x.dtype.name


@fewer_examples()
@given(st.integers(1, 3), st.integers(1, 3), st.sampled_from(["float32", "float64", "int64", "uint8"]), st.data())
def test_nearest_upsampling_by_an_integer_repeats_each_element(dims, factor, dtype, data):
    shape = (1, 2) + tuple(data.draw(st.integers(1, 4)) for _ in range(dims))
    x = data.draw(arrays(dtype, shape, 0, 50))
    expected = x
    for axis in range(2, 2 + dims):
        expected = np.repeat(expected, factor, axis=axis)
    check_tensor(on_all_devices(lambda t: F.interpolate(t, scale_factor=factor), x), expected, dtype)


@fewer_examples()
@given(st.integers(1, 3), st.sampled_from(["float32", "int64", "bool"]), st.data())
def test_pixel_unshuffle_undoes_pixel_shuffle(factor, dtype, data):
    shape = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)) * factor * factor,
             data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    x = data.draw(arrays(dtype, shape, -9, 9))
    outcome = on_all_devices(lambda t: F.pixel_unshuffle(F.pixel_shuffle(t, factor), factor), x)
    check_tensor(outcome, x, dtype)
