"""hardshrink, prelu and nonzero_static agree across devices and with NumPy on arbitrary shapes and dtypes
(integers refused, as PyTorch refuses them)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, arrays, check_tensor, fewer_examples, on_all_devices, shapes


@fewer_examples()
@given(shape=shapes(max_dims=4), dtype=st.sampled_from(INTS + FLOATS), lambd=st.sampled_from([0.0, 0.5, 3.0, -1.0]),
       data=st.data())
def test_hardshrink_is_numpys_band_zeroing(shape, dtype, lambd, data):
    values = data.draw(arrays(dtype, shape, lo=-5, hi=5))
    outcome = on_all_devices(lambda x: agnostic.hardshrink(x, lambd), values)
    if dtype in INTS:
        outcome.raises(NotImplementedError)
        return
    band = (values >= -lambd) & (values <= lambd)
    check_tensor(outcome, np.where(band, np.zeros_like(values), values), dtype)


@fewer_examples()
@given(shape=shapes(min_dims=0, max_dims=4, min_side=1), dtype=st.sampled_from(FLOATS), per_channel=st.booleans(),
       data=st.data())
def test_prelu_is_numpys_channel_scaled_negatives(shape, dtype, per_channel, data):
    values = data.draw(arrays(dtype, shape, lo=-5, hi=5))
    channels = shape[1] if len(shape) > 1 and per_channel else 1
    weight = data.draw(arrays(dtype, (channels,), lo=-2, hi=2))
    outcome = on_all_devices(agnostic.prelu, values, weight)
    broadcast = weight.reshape((1, -1) + (1,) * (len(shape) - 2)) if len(shape) > 1 else weight.reshape(())
    expected = np.where(values > 0, values, (broadcast * values).astype(dtype))
    check_tensor(outcome, expected, dtype)


@fewer_examples()
@given(shape=shapes(max_dims=3), dtype=st.sampled_from(INTS + FLOATS + ["bool"]), size=st.integers(0, 8),
       fill=st.sampled_from([-1, 0, 9]), data=st.data())
def test_nonzero_static_is_numpys_argwhere_resized(shape, dtype, size, fill, data):
    values = data.draw(arrays(dtype, shape, lo=-2, hi=2, integral=True))
    outcome = on_all_devices(lambda x: agnostic.nonzero_static(x, size=size, fill_value=fill), values)
    found = np.argwhere(values) if values.ndim else np.zeros((int(values != 0), 0), dtype=np.int64)
    expected = np.full((size, values.ndim), fill, dtype=np.int64)
    expected[:min(size, len(found))] = found[:size]
    check_tensor(outcome, expected, "int64")
