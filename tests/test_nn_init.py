"""nn.init: gains, fans, the distributions each initializer draws from, and the layers' default initialization."""

import math

import numpy
import pytest

import agnostic
import agnostic.nn as nn
from agnostic.nn import init


def host(tensor):
    return tensor.detach().cpu().numpy()


def test_calculate_gain():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("leaky_relu") == math.sqrt(2.0 / (1 + 0.01 ** 2))
    assert init.calculate_gain("leaky_relu", math.sqrt(5)) == math.sqrt(2.0 / 6)
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_fans():
    assert init._calculate_fan_in_and_fan_out(agnostic.empty(5, 3)) == (3, 5)
    assert init._calculate_fan_in_and_fan_out(agnostic.empty(8, 4, 3, 2)) == (24, 48)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 "
                                         "dimensions"):
        init._calculate_fan_in_and_fan_out(agnostic.empty(3))
    with pytest.raises(ValueError, match=r"Mode foo not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(agnostic.empty(3, 3), mode="foo")


def test_initializers_run_without_recording_on_parameters(device):
    param = nn.Parameter(agnostic.empty(40, 30, device=device))
    for fill in (init.uniform_, init.normal_, init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_,
                 init.kaiming_normal_, init.trunc_normal_, init.zeros_, init.ones_):
        assert fill(param) is param
        assert param.is_leaf and param.grad_fn is None and param.requires_grad and param.device == device
    assert init.constant_(param, 0.25) is param and (host(param) == 0.25).all()
    assert (host(init.zeros_(param)) == 0).all() and (host(init.ones_(param)) == 1).all()


def _uniform_check(values, bound):
    assert numpy.abs(values).max() <= bound
    assert numpy.abs(values).max() > 0.97 * bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.03 * bound


def test_uniform_family_bounds(device):
    tensor = agnostic.empty(200, 300, device=device)
    values = host(init.uniform_(tensor, -2.0, 3.0))
    assert values.min() >= -2.0 and values.max() < 3.0 and abs(values.mean() - 0.5) < 0.03
    _uniform_check(host(init.xavier_uniform_(tensor, gain=2.0)), 2.0 * math.sqrt(6.0 / 500))
    _uniform_check(host(init.kaiming_uniform_(tensor, a=math.sqrt(5))), 1 / math.sqrt(300))
    _uniform_check(host(init.kaiming_uniform_(tensor, mode="fan_out", nonlinearity="relu")),
                   math.sqrt(2.0) * math.sqrt(3.0 / 200))


def test_normal_family_moments(device):
    tensor = agnostic.empty(300, 400, device=device)
    values = host(init.normal_(tensor, 1.0, 2.0))
    assert abs(values.mean() - 1.0) < 0.02 and abs(values.std() - 2.0) < 0.02
    std = math.sqrt(2.0 / 700)
    assert abs(host(init.xavier_normal_(tensor)).std() - std) < 0.01 * std * 3
    std = math.sqrt(2.0) / math.sqrt(400)
    assert abs(host(init.kaiming_normal_(tensor, nonlinearity="relu")).std() - std) < 0.03 * std


def test_trunc_normal(device):
    tensor = agnostic.empty(300, 400, dtype=agnostic.float64, device=device)
    values = host(init.trunc_normal_(tensor, mean=0.5, std=1.0, a=-1.0, b=1.5))
    assert values.min() >= -1.0 and values.max() <= 1.5
    # moments of N(0.5, 1) truncated to [-1, 1.5]: alpha = -1.5, beta = 1
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    mass = cdf(1.0) - cdf(-1.5)
    mean = 0.5 + (pdf(-1.5) - pdf(1.0)) / mass
    assert abs(values.mean() - mean) < 0.01
    assert values.max() > 1.49 and values.min() < -0.99
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        init.trunc_normal_(agnostic.empty(3), mean=10.0)


def test_zero_element_tensors_warn():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(agnostic.empty(0, 3))


def test_initializers_are_reproducible_across_devices(device):
    agnostic.manual_seed(3)
    on_cpu = host(init.kaiming_uniform_(agnostic.empty(6, 5), a=math.sqrt(5)))
    agnostic.manual_seed(3)
    on_device = host(init.kaiming_uniform_(agnostic.empty(6, 5, device=device), a=math.sqrt(5)))
    assert numpy.allclose(on_cpu, on_device, rtol=1e-6, atol=0)  # same Philox stream; GPUs may fuse a*u+b


# ----- the layers' default initialization -------------------------------------------------------------------------

def test_linear_default_init_matches_pytorch_formula(device):
    layer = nn.Linear(256, 300, device=device)
    bound = 1 / math.sqrt(256)
    _uniform_check(host(layer.weight), bound)
    biases = host(layer.bias)
    assert numpy.abs(biases).max() <= bound and numpy.abs(biases).max() > 0.9 * bound
    assert layer.weight.device == device and layer.weight.dtype is agnostic.float32
    assert nn.Linear(2, 2, dtype=agnostic.float64).weight.dtype is agnostic.float64


def test_conv2d_default_init_matches_pytorch_formula(device):
    layer = nn.Conv2d(16, 64, (3, 5), groups=2, device=device)
    assert layer.weight.shape == (64, 8, 3, 5)
    fan_in = 8 * 15
    _uniform_check(host(layer.weight), 1 / math.sqrt(fan_in))
    assert numpy.abs(host(layer.bias)).max() <= 1 / math.sqrt(fan_in)


def test_embedding_and_norm_defaults(device):
    embedding = nn.Embedding(400, 50, padding_idx=3, device=device)
    values = host(embedding.weight)
    assert (values[3] == 0).all()
    assert abs(values.std() - 1.0) < 0.02 and abs(values.mean()) < 0.02
    for norm in (nn.BatchNorm2d(5, device=device), nn.LayerNorm((2, 3), device=device)):
        assert (host(norm.weight) == 1).all() and (host(norm.bias) == 0).all()
    bn = nn.BatchNorm1d(4, device=device)
    assert (host(bn.running_mean) == 0).all() and (host(bn.running_var) == 1).all()
    assert bn.num_batches_tracked.item() == 0 and bn.num_batches_tracked.dtype is agnostic.int64
