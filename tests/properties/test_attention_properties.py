"""scaled_dot_product_attention and pad_sequence on arbitrary batch shapes, sequence lengths and float dtypes agree
across devices and with NumPy."""

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
import agnostic.nn.functional as F
from agnostic.nn.utils.rnn import pad_sequence
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes


def numpy_attention(q, k, v, mask):
    scores = q.astype(np.float64) @ np.swapaxes(k, -1, -2).astype(np.float64) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    with np.errstate(invalid="ignore"):
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights = np.nan_to_num(weights / weights.sum(-1, keepdims=True), nan=0.0)
    return weights @ v.astype(np.float64)


@st.composite
def attention_inputs(draw):
    name = draw(st.sampled_from(["float32", "float64"]))
    batch = draw(shapes(max_dims=2, min_side=1, max_side=3))
    length, source, embed, value_embed = (draw(st.integers(1, 5)) for _ in range(4))
    q = draw(arrays(name, batch + (length, embed), -2, 2))
    k = draw(arrays(name, batch + (source, embed), -2, 2))
    v = draw(arrays(name, batch + (source, value_embed), -2, 2))
    mask = draw(st.none() | arrays("bool", (length, source)))
    return name, q, k, v, mask


@given(attention_inputs())
@fewer_examples()
def test_sdpa_on_any_batch_shape_matches_numpy(case):
    name, q, k, v, mask = case
    tolerance = 1e-4 if name == "float32" else 1e-10
    outcome = on_all_devices(lambda q, k, v, mask: F.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                             q, k, v, mask, rtol=tolerance, atol=tolerance)
    check_tensor(outcome, numpy_attention(q, k, v, mask).astype(name), name, rtol=tolerance, atol=tolerance)


@given(st.sampled_from(["float32", "int64"]), st.lists(st.integers(0, 4), min_size=1, max_size=4),
       shapes(max_dims=2, max_side=3), st.booleans(), st.sampled_from(["left", "right"]), st.data())
@fewer_examples()
def test_pad_sequence_on_any_trailing_shape_matches_numpy(name, lengths, trailing, batch_first, side, data):
    sequences = [data.draw(arrays(name, (length,) + trailing, -9, 9, integral=name == "int64")) for length in lengths]
    longest = max(lengths)
    expected = np.full((len(lengths), longest) + trailing, -1, dtype=name)
    for row, sequence in enumerate(sequences):
        if side == "right":
            expected[row, :len(sequence)] = sequence
        else:
            expected[row, longest - len(sequence):] = sequence
    if not batch_first:
        expected = np.swapaxes(expected, 0, 1)
    outcome = on_all_devices(lambda *tensors: pad_sequence(list(tensors), batch_first=batch_first, padding_value=-1,
                                                           padding_side=side), *sequences)
    check_tensor(outcome, expected, name)
    assert agnostic.is_tensor(pad_sequence([agnostic.tensor(s) for s in sequences]))
