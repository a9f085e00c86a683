"""This session's new tensor factories and layers agree across devices and with independent references:
``new_zeros/new_ones/new_full/new_empty`` take ``self``'s dtype and device and never its ``requires_grad``;
``F.interpolate(antialias=True)`` keeps constants, equals plain bilinear resampling when upsampling, matches
PyTorch's values and passes gradcheck; the fused LSTM layer equals the composed one it replaces (outputs, final
states, gradients) on random sizes, and ``nn.LSTM`` agrees across devices and with PyTorch."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
import agnostic.nn.functional as F
from agnostic import nn
from agnostic.nn import rnn
from agnostic.nn.functional import _fused_lstm
from _strategies import (
    ALL, DEVICES, arrays, check_tensor, fewer_examples, on_all_devices, scalars, shapes,
)


# ----- new_zeros / new_ones / new_full / new_empty ----------------------------------------------------------------
@fewer_examples(0.5)
@given(st.sampled_from(ALL), st.sampled_from([None] + ALL), shapes(max_dims=3, max_side=4),
       shapes(max_dims=3, max_side=3), st.booleans())
def test_new_factories_take_self_s_dtype_and_device(self_name, dtype_name, self_shape, size, self_requires_grad):
    source = np.zeros(self_shape, self_name)
    keywords = {} if dtype_name is None else {"dtype": getattr(agnostic, dtype_name)}
    expected_name = self_name if dtype_name is None else dtype_name

    def factories(t):
        if self_requires_grad and t.dtype.is_floating_point:
            t.requires_grad_()
        results = (t.new_zeros(size, **keywords), t.new_ones(*size, **keywords),
                   t.new_full(size, 1, **keywords), t.new_empty(size, **keywords))
        assert not any(r.requires_grad for r in results), "new_* tensors never inherit requires_grad"
        return results[:3] + (agnostic.tensor(list(results[3].shape), device=t.device),)

    zeros, ones, full, empty_shape = on_all_devices(factories, source).ok()
    check_tensor(zeros, np.zeros(size), expected_name)
    check_tensor(ones, np.ones(size), expected_name)
    check_tensor(full, np.ones(size), expected_name)
    assert tuple(empty_shape.array.tolist()) == size


@fewer_examples(0.5)
@given(st.sampled_from(["bool", "int32", "int64", "float16", "float32", "float64", "complex64"]),
       scalars(kinds=("bool", "int", "float")), shapes(max_dims=2, max_side=3))
def test_new_full_keeps_self_s_dtype_not_the_value_s(self_name, value, size):
    outcome = on_all_devices(lambda t: t.new_full(size, value), np.zeros((1,), self_name))
    expected = np.full(size, value).astype(self_name) if self_name != "bool" else np.full(size, bool(value))
    if self_name in ("int32", "int64"):
        expected = np.full(size, int(value), dtype=self_name)
    check_tensor(outcome, expected, self_name, rtol=1e-3, atol=1e-3)


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "int64"]), shapes(max_dims=2, max_side=3), st.booleans())
def test_new_factories_follow_explicit_device_and_requires_grad(name, size, requires_grad):
    for source_device in DEVICES:
        for target_device in DEVICES:
            t = agnostic.zeros(2, dtype=getattr(agnostic, name), device=source_device)
            made = t.new_zeros(size, dtype=agnostic.float64, device=target_device, requires_grad=requires_grad)
            assert made.device == agnostic.device(target_device)
            assert made.requires_grad is requires_grad and made.dtype is agnostic.float64
            assert t.new_ones(size).device == agnostic.device(source_device)


def test_new_factories_match_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("float16", "float64", "int8", "bool", "complex128"):
        ours, theirs = agnostic.zeros(2, dtype=getattr(agnostic, name)), torch.zeros(2, dtype=getattr(torch, name))
        for method, args in (("new_zeros", ((2, 3),)), ("new_ones", (2,)), ("new_full", ((2,), 1)),
                             ("new_empty", ((0, 2),))):
            got, expected = getattr(ours, method)(*args), getattr(theirs, method)(*args)
            assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
            assert tuple(got.shape) == tuple(expected.shape)
            if method != "new_empty":
                np.testing.assert_array_equal(got.numpy(), expected.numpy())


# ----- F.interpolate(antialias=True) ------------------------------------------------------------------------------
@st.composite
def resampling(draw, name="float64"):
    """(input (N, C, H, W), keyword arguments of interpolate): a size or a scale factor, either direction."""
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7)))
    x = draw(arrays(name, shape, -3, 3))
    mode = draw(st.sampled_from(["bilinear", "bicubic"]))
    align_corners = draw(st.booleans())
    if draw(st.booleans()):
        keywords = {"size": (draw(st.integers(1, 8)), draw(st.integers(1, 8)))}
    else:
        factors = st.sampled_from([0.25, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5])
        keywords = {"scale_factor": (draw(factors), draw(factors))}
        assume(all(int(n * f) >= 1 for n, f in zip(shape[2:], keywords["scale_factor"])))
    return x, dict(keywords, mode=mode, align_corners=align_corners, antialias=True)


def _output_shape(x, keywords):
    if "size" in keywords:
        return x.shape[:2] + keywords["size"]
    return x.shape[:2] + tuple(int(n * f) for n, f in zip(x.shape[2:], keywords["scale_factor"]))


@fewer_examples(0.5)
@given(resampling(name="float32"))
def test_antialiased_resampling_keeps_constants_and_the_output_size(case):
    x, keywords = case
    constant = np.full(x.shape, 2.5, np.float32)
    outcome = on_all_devices(lambda t: F.interpolate(t, **keywords), constant)
    check_tensor(outcome, np.full(_output_shape(x, keywords), 2.5), "float32", rtol=1e-5, atol=1e-5)
    on_all_devices(lambda t: F.interpolate(t, **keywords), x, rtol=1e-4, atol=1e-5).ok()


@fewer_examples(0.5)
@given(st.tuples(st.integers(1, 2), st.integers(1, 2), st.integers(1, 5), st.integers(1, 5)), st.data())
def test_antialiased_bilinear_upsampling_is_plain_bilinear(shape, data):
    x = data.draw(arrays("float64", shape, -3, 3))
    size = (data.draw(st.integers(shape[2], 9)), data.draw(st.integers(shape[3], 9)))
    plain = on_all_devices(lambda t: F.interpolate(t, size=size, mode="bilinear", align_corners=False), x).ok()
    check_tensor(on_all_devices(lambda t: F.interpolate(t, size=size, mode="bilinear", antialias=True), x),
                 plain.array, "float64", rtol=1e-12, atol=1e-12)


@fewer_examples(0.5)
@given(resampling())
def test_antialiased_resampling_matches_pytorch(case):
    torch = pytest.importorskip("torch")
    x, keywords = case
    out_height, out_width = _output_shape(x, keywords)[2:]
    # PyTorch 2.14's CPU kernel gives every row the same value when the output is one column wide and the height
    # changes (size (3, 1) of [[0], [1]] gives [0, 0, 0]; agnostic gives [0, 0.5, 1], as a width of 2 does).
    assume(out_width > 1 or out_height == x.shape[2])
    expected = torch.nn.functional.interpolate(torch.tensor(x), **keywords).numpy()
    check_tensor(on_all_devices(lambda t: F.interpolate(t, **keywords), x), expected, "float64", rtol=1e-10,
                 atol=1e-10)


def test_antialias_refuses_other_modes_and_ranks():
    on_all_devices(lambda t: F.interpolate(t, size=2, mode="linear", antialias=True),
                   np.ones((1, 1, 4))).raises(NotImplementedError)
    on_all_devices(lambda t: F.interpolate(t, size=(2, 2), mode="nearest", antialias=True),
                   np.ones((1, 1, 4, 4))).raises(NotImplementedError)


@fewer_examples(0.1, minimum=4)
@given(resampling())
def test_antialiased_resampling_passes_gradcheck(case):
    x, keywords = case
    for device in DEVICES:
        leaf = agnostic.tensor(x, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda t: F.interpolate(t, **keywords), (leaf,))


# ----- the fused LSTM layer against the composed one ------------------------------------------------------------
@st.composite
def lstm_layers(draw):
    """(steps, batch, features, size, bias, reverse, seed)."""
    return (draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(st.integers(1, 4)), draw(st.integers(1, 4)),
            draw(st.booleans()), draw(st.booleans()), draw(st.integers(0, 2 ** 16)))


def _layer_tensors(device, dtype, steps, batch, features, size, bias, seed):
    generator = np.random.default_rng(seed)

    def tensor(*shape):
        return agnostic.tensor(generator.standard_normal(shape) * 0.6, dtype=dtype, device=device,
                               requires_grad=True)
    tensors = [tensor(steps, batch, features), tensor(batch, size), tensor(batch, size),
               tensor(4 * size, features), tensor(4 * size, size)]
    return tensors + ([tensor(4 * size), tensor(4 * size)] if bias else [None, None])


def _projected_gradients(results, tensors, seed):
    generator = np.random.default_rng(seed + 1)
    total = sum((r * agnostic.tensor(generator.standard_normal(tuple(r.shape)), dtype=r.dtype, device=r.device)).sum()
                for r in results)
    return agnostic.autograd.grad(total, [t for t in tensors if t is not None])


@fewer_examples(0.5)
@given(lstm_layers(), st.sampled_from(["float32", "float64"]))
def test_fused_lstm_layer_equals_the_composed_layer(case, name):
    steps, batch, features, size, bias, reverse, seed = case
    dtype = getattr(agnostic, name)
    tolerance = dict(rtol=1e-4, atol=1e-5) if name == "float32" else dict(rtol=1e-10, atol=1e-12)
    reference = None
    for device in DEVICES:
        tensors = _layer_tensors(device, dtype, steps, batch, features, size, bias, seed)
        assert _fused_lstm.supports(tensors[0], tensors[3:], None, 0)
        fused = _fused_lstm.LSTMLayer.apply(*tensors, reverse, rnn._composed_lstm)
        composed = rnn._composed_lstm(*tensors, reverse)
        values = [r.detach().cpu().numpy() for r in fused] + [g.cpu().numpy() for g in
                                                              _projected_gradients(fused, tensors, seed)]
        expected = [r.detach().cpu().numpy() for r in composed] + [g.cpu().numpy() for g in
                                                                   _projected_gradients(composed, tensors, seed)]
        for got, want in zip(values, expected):
            assert got.dtype == want.dtype == np.dtype(name)
            np.testing.assert_allclose(got, want, **tolerance)
        if reference is None:
            reference = values
        for got, want in zip(values, reference):  # every device agrees with the CPU
            np.testing.assert_allclose(got, want, **tolerance)


@fewer_examples(0.1, minimum=4)
@given(lstm_layers())
def test_fused_lstm_layer_passes_gradcheck(case):
    steps, batch, features, size, bias, reverse, seed = case
    for device in DEVICES:
        tensors = _layer_tensors(device, agnostic.float64, min(steps, 3), batch, min(features, 2), min(size, 2),
                                 bias, seed)
        present = [t for t in tensors if t is not None]

        def layer(*inputs):
            it = iter(inputs)
            arguments = [next(it) if t is not None else None for t in tensors]
            return _fused_lstm.LSTMLayer.apply(*arguments, reverse, rnn._composed_lstm)
        assert agnostic.autograd.gradcheck(layer, present)


@fewer_examples(0.25, minimum=6)
@given(st.integers(1, 2), st.booleans(), st.booleans(), st.integers(1, 4), st.integers(1, 3), st.integers(0, 999))
def test_lstm_module_matches_pytorch(num_layers, bidirectional, batch_first, steps, batch, seed):
    torch = pytest.importorskip("torch")
    torch.manual_seed(seed)
    theirs = torch.nn.LSTM(3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first,
                           dtype=torch.float64)
    inputs = np.random.default_rng(seed).standard_normal((batch, steps, 3) if batch_first else (steps, batch, 3))
    expected_input = torch.tensor(inputs, requires_grad=True)
    expected, (expected_hidden, expected_cell) = theirs(expected_input)
    (expected.sum() + expected_hidden.pow(2).sum() + expected_cell.sum()).backward()
    for device in DEVICES:
        ours = nn.LSTM(3, 4, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first,
                       dtype=agnostic.float64, device=device)
        ours.load_state_dict({k: agnostic.tensor(v.detach().numpy(), device=device)
                         for k, v in theirs.state_dict().items()})
        x = agnostic.tensor(inputs, device=device, requires_grad=True)
        output, (hidden, cell) = ours(x)
        (output.sum() + hidden.pow(2).sum() + cell.sum()).backward()
        for got, want in ((output, expected), (hidden, expected_hidden), (cell, expected_cell),
                          (x.grad, expected_input.grad)):
            np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)
