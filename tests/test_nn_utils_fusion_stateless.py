"""agnostic.nn.utils: batch-norm fusion, functional_call, skip_init and the memory-format converters behave as
PyTorch's."""

import warnings

import numpy as np
import pytest

import agnostic
from agnostic.nn.utils import stateless


def _host(tensor):
    return tensor.numpy(force=True)


def _functional_call(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return stateless.functional_call(*args, **kwargs)


def _randomize_batch_norm(bn, device, seed=0):
    rng = np.random.default_rng(seed)
    n = bn.num_features
    with agnostic.no_grad():
        bn.running_mean.copy_(agnostic.tensor(rng.standard_normal(n), dtype=agnostic.float32, device=device))
        bn.running_var.copy_(agnostic.tensor(rng.uniform(0.5, 2.0, n), dtype=agnostic.float32, device=device))
        bn.weight.copy_(agnostic.tensor(rng.standard_normal(n), dtype=agnostic.float32, device=device))
        bn.bias.copy_(agnostic.tensor(rng.standard_normal(n), dtype=agnostic.float32, device=device))
    return bn.eval()


# ----- fusion -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [True, False])
def test_fuse_conv_bn_eval_equals_conv_then_bn(device, bias):
    conv = agnostic.nn.Conv2d(2, 3, 3, bias=bias, device=device).eval()
    bn = _randomize_batch_norm(agnostic.nn.BatchNorm2d(3, device=device), device)
    fused = agnostic.nn.utils.fuse_conv_bn_eval(conv, bn)
    assert fused is not conv and isinstance(fused.bias, agnostic.nn.Parameter)
    assert (conv.bias is None) == (not bias)  # the original layer is untouched
    x = agnostic.randn(2, 2, 5, 5, device=device)
    np.testing.assert_allclose(_host(fused(x)), _host(bn(conv(x))), rtol=1e-4, atol=1e-5)


def test_fuse_transposed_conv_scales_dim_1(device):
    conv = agnostic.nn.ConvTranspose2d(2, 3, 3, device=device).eval()
    bn = _randomize_batch_norm(agnostic.nn.BatchNorm2d(3, device=device), device, seed=1)
    fused = agnostic.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=True)
    x = agnostic.randn(1, 2, 4, 4, device=device)
    np.testing.assert_allclose(_host(fused(x)), _host(bn(conv(x))), rtol=1e-4, atol=1e-5)


def test_fuse_conv_bn_weights_by_hand(device):
    weight, bias = agnostic.nn.utils.fuse_conv_bn_weights(
        agnostic.ones(2, 1, 1, 1, device=device, requires_grad=True), None,
        agnostic.tensor([1.0, 2.0], device=device), agnostic.tensor([4.0, 1.0], device=device), 0.0,
        agnostic.tensor([2.0, 3.0], device=device), None)
    np.testing.assert_allclose(_host(weight).ravel(), [1.0, 3.0])
    np.testing.assert_allclose(_host(bias), [-1.0, -6.0])  # (0 - mean) / sqrt(var) * gamma, beta = 0
    assert weight.requires_grad and not bias.requires_grad and weight.is_leaf


def test_fuse_linear_bn_eval_equals_linear_then_bn_and_matches_pytorch(device):
    linear = agnostic.nn.Linear(3, 4, device=device).eval()
    bn = _randomize_batch_norm(agnostic.nn.BatchNorm1d(4, device=device), device, seed=2)
    fused = agnostic.nn.utils.fuse_linear_bn_eval(linear, bn)
    x = agnostic.randn(5, 3, device=device)
    np.testing.assert_allclose(_host(fused(x)), _host(bn(linear(x))), rtol=1e-4, atol=1e-5)
    torch = pytest.importorskip("torch")
    t_linear, t_bn = torch.nn.Linear(3, 4).eval(), torch.nn.BatchNorm1d(4).eval()
    t_linear.load_state_dict({k: torch.from_numpy(_host(v)) for k, v in linear.state_dict().items()})
    t_bn.load_state_dict({k: torch.from_numpy(_host(v)) for k, v in bn.state_dict().items()})
    reference = torch.nn.utils.fuse_linear_bn_eval(t_linear, t_bn)
    np.testing.assert_allclose(_host(fused.weight), reference.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(_host(fused.bias), reference.bias.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_fusion_refuses_training_mode_and_mismatched_features(device):
    conv, bn = agnostic.nn.Conv2d(1, 2, 1, device=device), agnostic.nn.BatchNorm2d(2, device=device)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        agnostic.nn.utils.fuse_conv_bn_eval(conv, bn)
    with pytest.raises(AssertionError, match="out_features"):
        agnostic.nn.utils.fuse_linear_bn_eval(agnostic.nn.Linear(2, 3, device=device).eval(),
                                              agnostic.nn.BatchNorm1d(2, device=device).eval())
    no_stats = agnostic.nn.BatchNorm2d(2, track_running_stats=False, device=device).eval()
    with pytest.raises(AssertionError, match="running_mean"):
        agnostic.nn.utils.fuse_conv_bn_eval(conv.eval(), no_stats)


# ----- functional_call ----------------------------------------------------------------------------------------------
def test_functional_call_uses_the_given_tensors_and_restores_the_module(device):
    layer = agnostic.nn.Linear(2, 1, device=device)
    weight, bias = layer.weight, layer.bias
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = stateless.functional_call(layer, {"weight": agnostic.tensor([[1.0, 2.0]], device=device),
                                                "bias": agnostic.tensor([0.5], device=device)},
                                        agnostic.tensor([[1.0, 1.0]], device=device))
    np.testing.assert_allclose(_host(out), [[3.5]])
    assert layer.weight is weight and layer.bias is bias
    assert layer._parameters["weight"] is weight


def test_functional_call_gradients_flow_to_the_passed_tensors(device):
    layer = agnostic.nn.Linear(2, 1, device=device)
    weight = agnostic.tensor([[1.0, 2.0]], device=device, requires_grad=True)
    x = agnostic.tensor([[3.0, 4.0]], device=device)
    _functional_call(layer, {"weight": weight}, (x,)).sum().backward()
    np.testing.assert_allclose(_host(weight.grad), [[3.0, 4.0]])
    assert layer.weight.grad is None


def test_functional_call_restores_after_an_exception(device):
    class Failing(agnostic.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = agnostic.nn.Parameter(agnostic.ones(2, device=device))

        def forward(self, x):
            raise ValueError("boom")

    module = Failing()
    weight = module.weight
    with pytest.raises(ValueError, match="boom"):
        _functional_call(module, {"weight": agnostic.zeros(2, device=device), "extra": agnostic.ones(1)}, (1,))
    assert module.weight is weight and not hasattr(module, "extra")


def test_functional_call_on_nested_modules_buffers_and_kwargs(device):
    net = agnostic.nn.Sequential(agnostic.nn.Linear(2, 2, device=device), agnostic.nn.BatchNorm1d(2, device=device))
    net.eval()
    mean = agnostic.tensor([1.0, -1.0], device=device)
    replacements = {"0.weight": agnostic.eye(2, device=device), "0.bias": agnostic.zeros(2, device=device),
                    "1.running_mean": mean}
    out = _functional_call(net, replacements, kwargs={"input": agnostic.tensor([[1.0, 1.0]], device=device)})
    expected = (np.array([[1.0, 1.0]]) - [1.0, -1.0]) / np.sqrt(1.0 + 1e-5)
    np.testing.assert_allclose(_host(out), expected, rtol=1e-5)
    np.testing.assert_array_equal(_host(net[1].running_mean), [0.0, 0.0])


def test_functional_call_ties_weights_and_checks_strict_keys(device):
    class Tied(agnostic.nn.Module):
        def __init__(self):
            super().__init__()
            self.first = agnostic.nn.Linear(2, 2, bias=False, device=device)
            self.second = agnostic.nn.Linear(2, 2, bias=False, device=device)
            self.second.weight = self.first.weight

        def forward(self, x):
            return self.second(self.first(x))

    model = Tied()
    double = 2 * agnostic.eye(2, device=device)
    x = agnostic.ones(1, 2, device=device)
    np.testing.assert_allclose(_host(_functional_call(model, {"first.weight": double}, x)), [[4.0, 4.0]])
    untied = _functional_call(model, {"first.weight": double}, x, tie_weights=False)
    np.testing.assert_allclose(_host(untied), _host((x @ double.T) @ model.first.weight.T), rtol=1e-6)
    with pytest.raises(ValueError, match="which are tied"):
        _functional_call(model, {"first.weight": double, "second.weight": agnostic.eye(2, device=device)}, x)
    with pytest.raises(RuntimeError, match="Missing key"):
        _functional_call(agnostic.nn.Linear(2, 1, device=device), {"weight": agnostic.ones(1, 2)}, x, strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key"):
        _functional_call(agnostic.nn.Linear(2, 1, device=device),
                         {"weight": agnostic.ones(1, 2), "bias": agnostic.ones(1), "scale": agnostic.ones(1)}, x,
                         strict=True)


def test_functional_call_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    layer, reference = agnostic.nn.Linear(3, 2, device=device), torch.nn.Linear(3, 2)
    rng = np.random.default_rng(4)
    values = {"weight": rng.standard_normal((2, 3)).astype(np.float32),
              "bias": rng.standard_normal(2).astype(np.float32)}
    x = rng.standard_normal((4, 3)).astype(np.float32)
    given = {k: agnostic.tensor(v, device=device, requires_grad=True) for k, v in values.items()}
    given_torch = {k: torch.tensor(v, requires_grad=True) for k, v in values.items()}
    out = _functional_call(layer, given, agnostic.tensor(x, device=device))
    expected = torch.func.functional_call(reference, given_torch, torch.from_numpy(x))
    np.testing.assert_allclose(_host(out), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.square().sum().backward()
    expected.square().sum().backward()
    for name in values:
        np.testing.assert_allclose(_host(given[name].grad), given_torch[name].grad.numpy(), rtol=1e-5, atol=1e-5)


# ----- skip_init and memory formats ---------------------------------------------------------------------------------
def test_skip_init_builds_the_module_on_the_device(device):
    layer = agnostic.nn.utils.skip_init(agnostic.nn.Linear, 4, 3, device=device, dtype=agnostic.float64)
    assert type(layer) is agnostic.nn.Linear
    assert layer.weight.shape == (3, 4) and layer.weight.dtype == agnostic.float64
    assert layer.weight.device == device and layer.weight.requires_grad
    bn = agnostic.nn.utils.skip_init(agnostic.nn.BatchNorm1d, 3, device=device)
    assert bn.running_mean.shape == (3,) and bn.running_mean.device == device

    class NoDevice(agnostic.nn.Module):
        pass

    with pytest.raises(RuntimeError, match="'device' arg"):
        agnostic.nn.utils.skip_init(NoDevice)
    with pytest.raises(RuntimeError, match="Expected a Module"):
        agnostic.nn.utils.skip_init(int)


def test_convert_weight_memory_format_keeps_values_and_recurses(device):
    net = agnostic.nn.Sequential(agnostic.nn.Conv2d(1, 2, 3, device=device),
                                 agnostic.nn.Sequential(agnostic.nn.ConvTranspose2d(2, 2, 2, device=device)),
                                 agnostic.nn.Conv3d(1, 1, 1, device=device))
    parameters = [p for p in net.parameters()]
    before = [_host(p).copy() for p in parameters]
    assert agnostic.nn.utils.convert_conv2d_weight_memory_format(net, None) is net
    assert agnostic.nn.utils.convert_conv3d_weight_memory_format(net, None) is net
    assert list(net.parameters()) == parameters  # same Parameter objects, so optimizers keep working
    for parameter, values in zip(parameters, before):
        np.testing.assert_array_equal(_host(parameter), values)
        assert parameter.is_contiguous()
