"""Layers: forward values, gradients of inputs and parameters (gradcheck, float64), train/eval behaviour."""

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck
from conftest import DEVICES

RNG = numpy.random.default_rng(7)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


class Reseeded(nn.Module):
    """Runs ``inner`` after reseeding, so every gradcheck evaluation draws the same dropout mask."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        agnostic.manual_seed(5)
        return self.inner(x)


def check_layer_gradients(layer, x):
    """gradcheck with respect to the input and every parameter (perturbed in place, as the layer sees them)."""
    params = list(layer.parameters())
    return gradcheck(lambda inp, *_: layer(inp), (x, *params))


@pytest.mark.parametrize("make_layer, shape", [
    (lambda: nn.Linear(3, 2), (4, 3)),
    (lambda: nn.Conv2d(2, 4, 3, stride=2, padding=1, groups=2), (1, 2, 5, 4)),
    (lambda: nn.Conv2d(1, 2, (2, 3), padding="same", dilation=(2, 1), padding_mode="reflect"), (1, 1, 4, 5)),
    (lambda: nn.Conv2d(1, 1, 2, padding=1, padding_mode="circular", bias=False), (1, 1, 3, 3)),
    (lambda: nn.LayerNorm(4), (2, 4)),
    (lambda: nn.BatchNorm1d(3), (4, 3)),
    (lambda: nn.BatchNorm2d(2), (3, 2, 2, 2)),
    (lambda: nn.Sequential(nn.Linear(3, 3), nn.GELU(), nn.Linear(3, 2), nn.Tanh()), (2, 3)),
    (lambda: nn.Sequential(nn.Conv2d(1, 2, 2), nn.Sigmoid(), nn.AvgPool2d(2), nn.Flatten()), (2, 1, 5, 5)),
    (lambda: nn.Sequential(nn.Softmax(dim=1), nn.Identity(), nn.LogSoftmax(dim=0)), (2, 3)),
    (lambda: nn.Sequential(nn.Linear(3, 4), nn.ReLU(), Reseeded(nn.Dropout(0.3))), (3, 3)),
], ids=["linear", "conv_groups", "conv_same_reflect", "conv_circular", "layernorm", "batchnorm1d", "batchnorm2d",
        "mlp", "conv_pool", "softmax", "relu_dropout"])
def test_layer_gradients(device, make_layer, shape):
    layer = make_layer().to(device, agnostic.float64)
    x = make(RNG.standard_normal(shape), device, True)
    assert check_layer_gradients(layer, x)


def test_max_pool_and_relu_layers(device):
    x = RNG.permutation(32).reshape(2, 1, 4, 4) - 15.5
    pooled, indices = nn.MaxPool2d(2, return_indices=True)(make(x, device))
    assert host(pooled).tolist() == x.reshape(2, 1, 2, 2, 2, 2).max((3, 5)).tolist()
    assert indices.shape == (2, 1, 2, 2)
    assert (host(nn.ReLU()(make(x, device))) == numpy.maximum(x, 0)).all()
    assert gradcheck(nn.MaxPool2d(2, stride=1), (make(x / 3, device, True),))


def test_linear_forward(device):
    layer = nn.Linear(3, 2).to(device)
    x = RNG.standard_normal((5, 3)).astype(numpy.float32)
    expected = x @ host(layer.weight).T + host(layer.bias)
    assert numpy.allclose(host(layer(make(x, device))), expected, atol=1e-6)
    assert nn.Linear(3, 2, bias=False).bias is None


def test_conv2d_layer_matches_functional(device):
    layer = nn.Conv2d(3, 4, 3, stride=(1, 2), padding=(1, 0), dilation=1).to(device)
    x = make(RNG.standard_normal((2, 3, 6, 7)).astype(numpy.float32), device)
    expected = F.conv2d(x, layer.weight, layer.bias, (1, 2), (1, 0))
    assert numpy.array_equal(host(layer(x)), host(expected))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 2, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nn.Conv2d(2, 3, 3, groups=2)
    with pytest.raises(ValueError, match="Invalid padding string 'foo'"):
        nn.Conv2d(1, 2, 3, padding="foo")
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(1, 2, 3, stride=2, padding="same")


def test_conv2d_padding_modes_pad_first(device):
    x = make(RNG.standard_normal((1, 1, 4, 4)), device)
    layer = nn.Conv2d(1, 1, 3, padding=1, padding_mode="replicate").to(device, agnostic.float64)
    expected = F.conv2d(F.pad(x, (1, 1, 1, 1), mode="replicate"), layer.weight, layer.bias)
    assert numpy.allclose(host(layer(x)), host(expected))


def test_batchnorm_running_statistics_and_eval(device):
    bn = nn.BatchNorm2d(3, momentum=0.3).to(device, agnostic.float64)
    batches = [RNG.standard_normal((4, 3, 2, 2)) * 2 + 1 for _ in range(3)]
    mean, var = numpy.zeros(3), numpy.ones(3)
    for batch in batches:
        out = bn(make(batch, device))
        mu, biased = batch.mean((0, 2, 3)), batch.var((0, 2, 3))
        expected = (batch - mu[None, :, None, None]) / numpy.sqrt(biased[None, :, None, None] + 1e-5)
        assert numpy.allclose(host(out), expected)
        mean = 0.7 * mean + 0.3 * mu
        var = 0.7 * var + 0.3 * batch.var((0, 2, 3), ddof=1)
    assert numpy.allclose(host(bn.running_mean), mean) and numpy.allclose(host(bn.running_var), var)
    assert bn.num_batches_tracked.item() == 3
    bn.eval()
    x = RNG.standard_normal((2, 3, 2, 2))
    expected = (x - mean[None, :, None, None]) / numpy.sqrt(var[None, :, None, None] + 1e-5)
    assert numpy.allclose(host(bn(make(x, device))), expected)
    assert bn.num_batches_tracked.item() == 3  # eval mode leaves the statistics alone
    assert numpy.allclose(host(bn.running_mean), mean)


def test_batchnorm_cumulative_average_and_untracked(device):
    bn = nn.BatchNorm1d(2, momentum=None).to(device, agnostic.float64)
    batches = [RNG.standard_normal((5, 2)) for _ in range(4)]
    for batch in batches:
        bn(make(batch, device))
    assert numpy.allclose(host(bn.running_mean), numpy.mean([b.mean(0) for b in batches], 0))
    untracked = nn.BatchNorm1d(2, track_running_stats=False, affine=False).to(device)
    assert untracked.running_mean is None and list(untracked.state_dict()) == []
    untracked.eval()
    x = RNG.standard_normal((6, 2, 3)).astype(numpy.float32)
    expected = (x - x.mean((0, 2), keepdims=True)) / numpy.sqrt(x.var((0, 2), keepdims=True) + 1e-5)
    assert numpy.allclose(host(untracked(make(x, device))), expected, atol=1e-5)  # batch statistics even in eval
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(make(numpy.zeros((2, 2, 1, 1)), device))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        nn.BatchNorm2d(2)(make(numpy.zeros((2, 2, 2)), device))


def test_layernorm_layer(device):
    layer = nn.LayerNorm((2, 3), elementwise_affine=False).to(device)
    assert list(layer.parameters()) == []
    x = RNG.standard_normal((4, 2, 3)).astype(numpy.float32)
    expected = (x - x.mean((1, 2), keepdims=True)) / numpy.sqrt(x.var((1, 2), keepdims=True) + 1e-5)
    assert numpy.allclose(host(layer(make(x, device))), expected, atol=1e-5)


def test_embedding_layer(device):
    layer = nn.Embedding(6, 3, padding_idx=-1).to(device)
    assert layer.padding_idx == 5 and (host(layer.weight)[5] == 0).all()
    indices = make([[5, 1], [1, 0]], device)
    out = layer(indices)
    assert numpy.array_equal(host(out), host(layer.weight)[[[5, 1], [1, 0]]])
    out.sum().backward()
    assert host(layer.weight.grad)[:, 0].tolist() == [1, 2, 0, 0, 0, 0]
    layer = nn.Embedding(6, 2).to(device, agnostic.float64)
    assert gradcheck(lambda w: layer(indices), (layer.weight,))
    pretrained = nn.Embedding.from_pretrained(make(numpy.eye(3), device))
    assert not pretrained.weight.requires_grad and host(pretrained(make([2], device))).tolist() == [[0, 0, 1]]
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(3, 2, padding_idx=3)


def test_dropout_layer_train_and_eval(device):
    layer = nn.Dropout(0.25)
    x = make(numpy.ones((100, 100)), device)
    out = host(layer(x))
    assert set(numpy.unique(out).tolist()) <= {0.0, 1 / 0.75} and abs((out == 0).mean() - 0.25) < 0.02
    layer.eval()
    assert layer(x) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got -0.1"):
        nn.Dropout(-0.1)


def test_activation_layers(device):
    x = RNG.standard_normal((2, 3))
    t = make(x, device)
    assert numpy.allclose(host(nn.Tanh()(t)), numpy.tanh(x))
    assert numpy.allclose(host(nn.Sigmoid()(t)), 1 / (1 + numpy.exp(-x)))
    assert numpy.allclose(host(nn.GELU(approximate="tanh")(t)), host(F.gelu(t, approximate="tanh")))
    assert numpy.allclose(host(nn.Softmax(dim=0)(t)).sum(0), 1.0)
    assert numpy.allclose(numpy.exp(host(nn.LogSoftmax(dim=1)(t))).sum(1), 1.0)
    assert nn.Flatten()(make(numpy.zeros((2, 3, 4)), device)).shape == (2, 12)
    assert nn.Flatten(0, 1)(make(numpy.zeros((2, 3, 4)), device)).shape == (6, 4)
    assert nn.Identity(54, unused="x")(t) is t


def test_half_precision_model_runs(device):
    model = nn.Sequential(nn.Linear(4, 3), nn.LayerNorm(3), nn.GELU()).to(device).half()
    out = model(agnostic.ones(2, 4, device=device, dtype=agnostic.float16))
    assert out.dtype is agnostic.float16 and out.shape == (2, 3)


def test_small_model_trains(device):
    agnostic.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    x = agnostic.randn(64, 2, device=device)
    target = (x[:, 0] * x[:, 1] > 0).long()
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(150):
        model.zero_grad()
        loss = loss_fn(model(x), target)
        loss.backward()
        first = loss.item() if first is None else first
        with agnostic.no_grad():
            for param in model.parameters():
                param.sub_(param.grad * 0.5)
    assert loss.item() < 0.5 * first


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(0, 300), columns=st.integers(1, 70), dtype=st.sampled_from(["float32", "float64"]),
       seed=st.integers(0, 2**16))
def test_linear_bias_gradient_is_the_column_sum_on_every_device(rows, columns, dtype, seed):
    """The bias gradient (CUDA: one column-sum kernel) equals NumPy's sum of the output gradient over rows."""
    generator = numpy.random.default_rng(seed)
    inputs = generator.standard_normal((rows, 3)).astype(dtype)
    grad = generator.standard_normal((rows, columns)).astype(dtype)
    expected = grad.astype(numpy.float64).sum(0)
    for name in DEVICES:
        layer = agnostic.nn.Linear(3, columns, device=name, dtype=getattr(agnostic, dtype))
        layer(agnostic.tensor(inputs, device=name)).backward(agnostic.tensor(grad, device=name))
        tolerance = 1e-4 if dtype == "float32" else 1e-10
        numpy.testing.assert_allclose(layer.bias.grad.cpu().numpy(), expected, rtol=tolerance, atol=tolerance * 10)
        assert layer.bias.grad.dtype is getattr(agnostic, dtype)
