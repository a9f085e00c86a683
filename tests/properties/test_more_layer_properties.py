"""Padding of every mode and RMSNorm on arbitrary shapes and dtypes agree across devices and with NumPy references:
``F.pad`` equals ``numpy.pad`` (constant, reflect, edge, wrap) in the input's dtype; ``F.rms_norm`` equals
``x / sqrt(mean(x^2) + eps)`` over the trailing dimensions."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic.nn.functional as F
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes

NUMPY_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@st.composite
def padded_cases(draw):
    """(array, mode, pad) with F.pad's rank rule: ``dims`` padded dimensions of a ``dims + 1`` or ``dims + 2``-D
    input, each amount within what the mode allows."""
    mode = draw(st.sampled_from(list(NUMPY_MODES)))
    dims = draw(st.integers(1, 3))
    rank = dims + draw(st.integers(1, 2))
    shape = draw(shapes(min_dims=rank, max_dims=rank, min_side=1, max_side=4))
    names = ["float32", "float64", "int64"] if mode != "constant" else ["float32", "int32", "bool"]
    name = draw(st.sampled_from(names))
    amounts = []
    for dim in range(rank - 1, rank - 1 - dims, -1):
        size = shape[dim]
        limit = {"reflect": size - 1, "circular": size}.get(mode, 3)
        amounts += [draw(st.integers(0, limit)), draw(st.integers(0, limit))]
    return draw(arrays(name, shape)), mode, tuple(amounts)


@fewer_examples(0.5)
@given(padded_cases())
def test_pad_equals_numpy_pad_in_every_mode(case):
    array, mode, amounts = case
    outcome = on_all_devices(lambda t: F.pad(t, amounts, mode=mode), array)
    widths = [(0, 0)] * (array.ndim - len(amounts) // 2)
    widths += [(amounts[2 * i], amounts[2 * i + 1]) for i in reversed(range(len(amounts) // 2))]
    check_tensor(outcome, np.pad(array, widths, mode=NUMPY_MODES[mode]), array.dtype.name)


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64"]), shapes(min_dims=1, max_dims=4, min_side=1, max_side=4),
       st.integers(1, 4), st.sampled_from([None, 1e-3]))
def test_rms_norm_equals_the_root_mean_square_formula(name, shape, count, eps):
    assume(count <= len(shape))
    array = np.random.default_rng(len(shape)).standard_normal(shape).astype(name)
    normalized = shape[len(shape) - count:]
    outcome = on_all_devices(lambda t: F.rms_norm(t, normalized, eps=eps), array)
    axes = tuple(range(len(shape) - count, len(shape)))
    wide = array.astype(np.float64)
    epsilon = np.finfo(name).eps if eps is None else eps
    expected = wide / np.sqrt((wide ** 2).mean(axis=axes, keepdims=True) + epsilon)
    check_tensor(outcome, expected, name, rtol=1e-4 if name == "float32" else 1e-10, atol=1e-5)
