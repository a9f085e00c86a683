"""The fused LSTM layer (``nn.functional._fused_lstm``) against the composed one it replaces: the same outputs,
final states and gradients in every configuration that takes the fused path, gradcheck in float64, recorded
backwards (double backward) through the recomputed composition, and the cases that keep the composed path."""

import numpy
import pytest

import agnostic
from agnostic import nn
from agnostic.nn import rnn
from agnostic.nn.functional import _fused_lstm


def layer_inputs(device, dtype, steps=5, batch=3, features=4, size=6, bias=True, seed=0):
    generator = numpy.random.default_rng(seed)

    def tensor(*shape):
        return agnostic.tensor(generator.standard_normal(shape) * 0.5, dtype=dtype, device=device,
                               requires_grad=True)
    tensors = [tensor(steps, batch, features), tensor(batch, size), tensor(batch, size),
               tensor(4 * size, features), tensor(4 * size, size)]
    tensors += [tensor(4 * size), tensor(4 * size)] if bias else [None, None]
    return tensors


def gradients(results, tensors, seed=1):
    """Gradients of a fixed random projection of ``results`` with respect to ``tensors`` (None ones skipped)."""
    generator = numpy.random.default_rng(seed)
    total = sum((result * agnostic.tensor(generator.standard_normal(tuple(result.shape)), dtype=result.dtype,
                                          device=result.device)).sum() for result in results)
    wanted = [t for t in tensors if t is not None]
    return agnostic.autograd.grad(total, wanted)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_layer_equals_the_composed_layer(device, reverse, bias):
    _check_fused_equals_composed(layer_inputs(device, agnostic.float64, bias=bias), reverse)


def _check_fused_equals_composed(tensors, reverse):
    """The fused layer's outputs and gradients are the composed layer's, to float64 rounding."""
    fused = _fused_lstm.LSTMLayer.apply(*tensors, reverse, rnn._composed_lstm)
    composed = rnn._composed_lstm(*tensors, reverse)
    for got, expected in zip(fused, composed):
        numpy.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=1e-12,
                                      atol=1e-12)
    for got, expected in zip(gradients(fused, tensors), gradients(composed, tensors)):
        numpy.testing.assert_allclose(got.cpu().numpy(), expected.cpu().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("frozen", [(0,), (0, 3), (0, 1, 2, 4), (5,), (6,), (5, 6)])
def test_only_the_gradients_autograd_asks_for_are_computed(device, frozen, monkeypatch):
    """Inputs that don't require grad (a model's data, frozen weights or biases) get none, and the others get the
    composed layer's."""
    tensors = layer_inputs(device, agnostic.float64)
    for index in frozen:
        tensors[index] = tensors[index].detach()
    fused = _fused_lstm.LSTMLayer.apply(*tensors, False, rnn._composed_lstm)
    composed = rnn._composed_lstm(*tensors, False)
    wanted = [t for t in tensors if t.requires_grad]
    for got, expected in zip(gradients(fused, wanted), gradients(composed, wanted)):
        numpy.testing.assert_allclose(got.cpu().numpy(), expected.cpu().numpy(), rtol=1e-10, atol=1e-12)
    seen = []
    original = _fused_lstm.LSTMLayer.backward

    def backward(ctx, *grads):
        seen.append(original(ctx, *grads))
        return seen[-1]
    monkeypatch.setattr(_fused_lstm.LSTMLayer, "backward", staticmethod(backward))
    gradients(_fused_lstm.LSTMLayer.apply(*tensors, False, rnn._composed_lstm), wanted)
    assert [index for index, grad in enumerate(seen[0][:7]) if grad is None] == [i for i in frozen if i not in (1, 2)]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch, size", [(1, 1), (6, 40), (9, 70)])
def test_fused_layer_at_sizes_that_fill_no_whole_tile(device, reverse, batch, size):
    """Batches and hidden sizes that don't divide into the CUDA step kernel's tiles (4 batch rows of 32 units):
    the composed layer's values and gradients."""
    _check_fused_equals_composed(layer_inputs(device, agnostic.float64, steps=4, batch=batch, features=3, size=size),
                                 reverse)


def test_float32_layer_agrees_with_float64(device):
    tensors64 = layer_inputs(device, agnostic.float64, steps=12, size=16)
    tensors32 = [t.detach().float().requires_grad_() for t in tensors64]
    fused32 = _fused_lstm.LSTMLayer.apply(*tensors32, False, rnn._composed_lstm)
    fused64 = _fused_lstm.LSTMLayer.apply(*tensors64, False, rnn._composed_lstm)
    for got, expected in zip(fused32, fused64):
        numpy.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().cpu().numpy(), atol=1e-5)
    for got, expected in zip(gradients(fused32, tensors32), gradients(fused64, tensors64)):
        numpy.testing.assert_allclose(got.cpu().numpy(), expected.cpu().numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_through_the_fused_layer(device, reverse):
    tensors = layer_inputs(device, agnostic.float64, steps=3, batch=2, features=2, size=3)

    def layer(*inputs):
        return _fused_lstm.LSTMLayer.apply(*inputs, reverse, rnn._composed_lstm)
    assert agnostic.autograd.gradcheck(layer, tuple(tensors))


def test_double_backward_recomputes_the_composed_layer(device):
    tensors = layer_inputs(device, agnostic.float64, steps=3, batch=2, features=2, size=3)
    fused = _fused_lstm.LSTMLayer.apply(*tensors, False, rnn._composed_lstm)
    composed = rnn._composed_lstm(*tensors, False)
    second = []
    for results in (fused, composed):
        first = agnostic.autograd.grad(results[0].pow(2).sum() + results[2].sum(), tensors[3], create_graph=True)[0]
        second.append(agnostic.autograd.grad(first.pow(2).sum(), tensors[0])[0])
    numpy.testing.assert_allclose(second[0].cpu().numpy(), second[1].cpu().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("config", [dict(), dict(num_layers=2, bidirectional=True, batch_first=True),
                                    dict(bias=False, bidirectional=True)])
def test_lstm_module_takes_the_fused_path_with_the_composed_results(device, config, monkeypatch):
    agnostic.manual_seed(3)
    layer = nn.LSTM(4, 6, **config).double().to(device)
    x = agnostic.randn(5, 3, 4, dtype=agnostic.float64, device=device, requires_grad=True)
    fused_output, (fused_hidden, fused_cell) = layer(x)
    fused_grads = gradients([fused_output, fused_hidden, fused_cell], [x, *layer.parameters()])
    assert fused_output.grad_fn is not None
    calls = []
    monkeypatch.setattr(_fused_lstm, "supports", lambda *args: calls.append(args) and False)
    output, (hidden, cell) = layer(x)
    assert calls, "the module asks whether the fused layer applies"
    for got, expected in zip((fused_output, fused_hidden, fused_cell), (output, hidden, cell)):
        numpy.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=1e-12,
                                      atol=1e-12)
    for got, expected in zip(fused_grads, gradients([output, hidden, cell], [x, *layer.parameters()])):
        numpy.testing.assert_allclose(got.cpu().numpy(), expected.cpu().numpy(), rtol=1e-10, atol=1e-12)


def test_packed_projected_half_and_autocast_inputs_keep_the_composed_path(device):
    x = agnostic.randn(4, 2, 3, device=device)
    weights = [agnostic.randn(8, 3, device=device), agnostic.randn(8, 2, device=device), None, None]
    assert _fused_lstm.supports(x, weights, None, 0)
    assert not _fused_lstm.supports(x, weights, [2, 2, 1, 1], 0)
    assert not _fused_lstm.supports(x, weights, None, 2)
    assert not _fused_lstm.supports(x.half(), weights, None, 0)
    assert not _fused_lstm.supports(x, [weights[0].double(), *weights[1:]], None, 0)
    with agnostic.autocast(device_type=agnostic.device(device).type, dtype=agnostic.bfloat16):
        assert not _fused_lstm.supports(x, weights, None, 0)


@pytest.mark.parametrize("reverse", [False, True])
def test_repeated_calls_of_one_shape_agree_with_the_composed_layer(device, reverse):
    """Calls of one shape reuse nothing from each other: each, with new inputs and weights, equals the composed
    layer."""
    for seed in range(4):
        tensors = layer_inputs(device, agnostic.float64, steps=6, batch=3, features=4, size=5, seed=seed)
        fused = _fused_lstm.LSTMLayer.apply(*tensors, reverse, rnn._composed_lstm)
        composed = rnn._composed_lstm(*tensors, reverse)
        for got, expected in zip(fused, composed):
            numpy.testing.assert_allclose(got.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=1e-12,
                                          atol=1e-12)
        for got, expected in zip(gradients(fused, tensors, seed), gradients(composed, tensors, seed)):
            numpy.testing.assert_allclose(got.cpu().numpy(), expected.cpu().numpy(), rtol=1e-10, atol=1e-12)


def test_the_layers_results_start_where_the_backends_kernels_want_them(device):
    """The layer's outputs come from ``backend.empty``: on the CPU on a cache line, so that the threads writing
    neighbouring hidden units share no line (``host_memory``)."""
    tensors = layer_inputs(device, agnostic.float32, batch=4, size=16)
    output, hidden, cell = _fused_lstm.LSTMLayer.apply(*tensors, False, rnn._composed_lstm)
    array = output._data
    pointer = array.__array_interface__["data"][0] if device.type == "cpu" else array.data.ptr
    assert pointer % (64 if device.type == "cpu" else 256) == 0
    output.sum().backward()
    assert all(t.grad is not None for t in tensors if t is not None)
