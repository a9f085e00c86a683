"""Weight and spectral normalization, hook-based (agnostic.nn.utils.weight_norm/spectral_norm) and parametrized
(agnostic.nn.utils.parametrizations), behave as PyTorch's."""

import warnings

import numpy as np
import pytest

import agnostic
from agnostic.nn.utils import parametrizations, parametrize


def _host(tensor):
    return tensor.numpy(force=True)


def _weight_norm_reference(v, g, dim):
    """``g * v / ||v||`` with NumPy, the norm over every axis but ``dim`` (all of them for None)."""
    if dim is None:
        return g * v / np.sqrt((v ** 2).sum())
    axes = tuple(axis for axis in range(v.ndim) if axis != dim % v.ndim)
    return g * v / np.sqrt((v ** 2).sum(axis=axes, keepdims=True))


def _old_weight_norm(module, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return agnostic.nn.utils.weight_norm(module, **kwargs)


def _torch_copy(torch, module, reference):
    with torch.no_grad():
        for name, tensor in module.state_dict().items():
            reference.state_dict()[name].copy_(torch.from_numpy(_host(tensor).copy()))


# ----- hook-based weight_norm ---------------------------------------------------------------------------------------
def test_weight_norm_warns_deprecated_and_splits_the_parameter(device):
    layer = agnostic.nn.Linear(3, 2, device=device)
    weight = _host(layer.weight).copy()
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        agnostic.nn.utils.weight_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert isinstance(layer.weight_g, agnostic.nn.Parameter) and layer.weight_g.shape == (2, 1)
    np.testing.assert_allclose(_host(layer.weight_g), np.linalg.norm(weight, axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(_host(layer.weight_v), weight)
    np.testing.assert_allclose(_host(layer.weight), weight, rtol=1e-6)
    with pytest.raises(RuntimeError, match="two weight_norm hooks"):
        _old_weight_norm(layer)


@pytest.mark.parametrize("dim", [0, 1, None, -2])
def test_weight_norm_recomputes_the_weight_before_each_forward(device, dim):
    conv = _old_weight_norm(agnostic.nn.Conv1d(2, 3, 2, device=device), dim=dim)
    with agnostic.no_grad():
        conv.weight_g.mul_(2.0)
    x = agnostic.randn(1, 2, 4, device=device)
    conv(x)
    expected = _weight_norm_reference(_host(conv.weight_v), _host(conv.weight_g), dim)
    np.testing.assert_allclose(_host(conv.weight), expected, rtol=1e-5)


def test_weight_norm_gradients_reach_g_and_v_and_match_pytorch(device):
    torch = pytest.importorskip("torch")
    layer = _old_weight_norm(agnostic.nn.Linear(3, 2, device=device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        reference = torch.nn.utils.weight_norm(torch.nn.Linear(3, 2))
    assert list(layer.state_dict()) == list(reference.state_dict())
    _torch_copy(torch, layer, reference)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    layer(agnostic.tensor(x, device=device)).square().sum().backward()
    reference(torch.from_numpy(x)).square().sum().backward()
    for name in ("weight_g", "weight_v", "bias"):
        np.testing.assert_allclose(_host(getattr(layer, name).grad), getattr(reference, name).grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_gradcheck(device, dim):
    """The formula both weight_norm forms compute, ``v * (g / ||v||)``, differentiated by autograd."""
    layer = _old_weight_norm(agnostic.nn.Linear(3, 2, device=device, dtype=agnostic.float64), dim=dim)
    hook = next(iter(layer._forward_pre_hooks.values()))
    v = layer.weight_v.detach().clone().requires_grad_(True)
    g = layer.weight_g.detach().clone().requires_grad_(True)
    np.testing.assert_allclose(_host(parametrizations._weight_norm(v, g, hook.dim)), _host(hook.compute_weight(layer)))
    assert agnostic.autograd.gradcheck(lambda v, g: parametrizations._weight_norm(v, g, hook.dim), (v, g))


def test_remove_weight_norm_leaves_a_parameter_with_the_normalized_value(device):
    layer = _old_weight_norm(agnostic.nn.Linear(3, 2, device=device))
    with agnostic.no_grad():
        layer.weight_g.fill_(3.0)
    expected = _weight_norm_reference(_host(layer.weight_v), 3.0, 0)
    agnostic.nn.utils.remove_weight_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"] and not layer._forward_pre_hooks
    assert isinstance(layer.weight, agnostic.nn.Parameter)
    np.testing.assert_allclose(_host(layer.weight), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        agnostic.nn.utils.remove_weight_norm(layer)


# ----- parametrizations.weight_norm ---------------------------------------------------------------------------------
def test_parametrized_weight_norm_values_gradients_and_layout_match_pytorch(device):
    torch = pytest.importorskip("torch")
    layer = parametrizations.weight_norm(agnostic.nn.Linear(3, 2, device=device))
    reference = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(3, 2))
    assert list(layer.state_dict()) == list(reference.state_dict())
    _torch_copy(torch, layer, reference)
    x = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
    out = layer(agnostic.tensor(x, device=device))
    expected = reference(torch.from_numpy(x))
    np.testing.assert_allclose(_host(out), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    expected.sum().backward()
    for index in (0, 1):
        np.testing.assert_allclose(_host(getattr(layer.parametrizations.weight, f"original{index}").grad),
                                   getattr(reference.parametrizations.weight, f"original{index}").grad.numpy(),
                                   rtol=1e-5, atol=1e-6)


def test_parametrized_weight_norm_loads_the_old_hook_layout(device):
    old = _old_weight_norm(agnostic.nn.Linear(3, 2, device=device))
    with agnostic.no_grad():
        old.weight_g.fill_(2.0)
    new = parametrizations.weight_norm(agnostic.nn.Linear(3, 2, device=device))
    result = new.load_state_dict(old.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_allclose(_host(new.weight), _host(old.weight_v * (2.0 / old.weight_v.norm(2, 1, keepdim=True))),
                               rtol=1e-6)
    plain = agnostic.nn.Linear(3, 2, device=device)  # other modules are not affected by the conversion hook
    with pytest.raises(RuntimeError, match="Unexpected key"):
        plain.load_state_dict(old.state_dict())


def test_parametrized_weight_norm_over_the_whole_tensor(device):
    layer = parametrizations.weight_norm(agnostic.nn.Linear(3, 2, device=device), dim=None)
    g = layer.parametrizations.weight.original0
    assert g.shape == ()
    np.testing.assert_allclose(_host(g), np.linalg.norm(_host(layer.parametrizations.weight.original1)), rtol=1e-6)


# ----- hook-based spectral_norm -------------------------------------------------------------------------------------
def _largest_singular_value(matrix):
    return np.linalg.svd(matrix, compute_uv=False)[0]


def test_spectral_norm_layout_and_normalized_weight(device):
    agnostic.manual_seed(0)  # a weight whose top singular values are apart: 30 power iterations converge to 1e-6
    layer = agnostic.nn.utils.spectral_norm(agnostic.nn.Linear(5, 4, device=device, dtype=agnostic.float64),
                                            n_power_iterations=30)
    assert sorted(layer.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert isinstance(layer.weight_orig, agnostic.nn.Parameter) and "weight_u" in layer._buffers
    layer(agnostic.randn(2, 5, dtype=agnostic.float64, device=device))
    assert _largest_singular_value(_host(layer.weight)) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(np.linalg.norm(_host(layer.weight_u)), 1.0, rtol=1e-12)
    with pytest.raises(RuntimeError, match="two spectral_norm hooks"):
        agnostic.nn.utils.spectral_norm(layer)


def test_spectral_norm_matches_pytorch_in_train_and_eval(device):
    torch = pytest.importorskip("torch")
    layer = agnostic.nn.utils.spectral_norm(agnostic.nn.Conv2d(2, 3, 2, device=device))
    reference = torch.nn.utils.spectral_norm(torch.nn.Conv2d(2, 3, 2))
    assert list(layer.state_dict()) == list(reference.state_dict())
    _torch_copy(torch, layer, reference)
    x = np.random.default_rng(2).standard_normal((1, 2, 3, 3)).astype(np.float32)
    for _ in range(2):
        out = layer(agnostic.tensor(x, device=device))
        expected = reference(torch.from_numpy(x))
        np.testing.assert_allclose(_host(out), expected.detach().numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(_host(layer.weight_u), reference.weight_u.numpy(), rtol=1e-4, atol=1e-6)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(_host(layer.weight_orig.grad), reference.weight_orig.grad.numpy(), rtol=1e-4,
                               atol=1e-5)
    layer.eval()
    u = _host(layer.weight_u).copy()
    layer(agnostic.tensor(x, device=device))
    np.testing.assert_array_equal(_host(layer.weight_u), u)  # eval mode does not advance the power method


def test_spectral_norm_uses_dim_1_for_transposed_convolutions(device):
    layer = agnostic.nn.utils.spectral_norm(agnostic.nn.ConvTranspose2d(2, 5, 3, device=device))
    assert layer.weight_u.shape == (5,) and layer.weight_v.shape == (2 * 3 * 3,)


def test_remove_spectral_norm_keeps_the_current_normalized_weight(device):
    layer = agnostic.nn.utils.spectral_norm(agnostic.nn.Linear(4, 3, device=device))
    layer(agnostic.randn(1, 4, device=device))
    u, v, original = _host(layer.weight_u), _host(layer.weight_v), _host(layer.weight_orig)
    agnostic.nn.utils.remove_spectral_norm(layer)
    assert sorted(layer.state_dict()) == ["bias", "weight"] and not layer._forward_pre_hooks
    np.testing.assert_allclose(_host(layer.weight), original / (u @ original @ v), rtol=1e-5)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        agnostic.nn.utils.remove_spectral_norm(layer)


def test_spectral_norm_refuses_bad_iteration_counts(device):
    with pytest.raises(ValueError, match="n_power_iterations"):
        agnostic.nn.utils.spectral_norm(agnostic.nn.Linear(2, 2, device=device), n_power_iterations=0)


# ----- parametrizations.spectral_norm -------------------------------------------------------------------------------
def test_parametrized_spectral_norm_layout_and_value(device):
    layer = parametrizations.spectral_norm(agnostic.nn.Linear(5, 4, device=device, dtype=agnostic.float64))
    assert parametrize.is_parametrized(layer, "weight")
    assert sorted(layer.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                          "parametrizations.weight.original"]
    # 15 power iterations at registration, one more per access in training mode
    for _ in range(20):
        weight = layer.weight
    assert _largest_singular_value(_host(weight)) == pytest.approx(1.0, abs=1e-4)


def test_parametrized_spectral_norm_matches_pytorch_and_eval_does_not_update(device):
    torch = pytest.importorskip("torch")
    layer = parametrizations.spectral_norm(agnostic.nn.Linear(4, 3, device=device))
    reference = torch.nn.utils.parametrizations.spectral_norm(torch.nn.Linear(4, 3))
    assert list(layer.state_dict()) == list(reference.state_dict())
    _torch_copy(torch, layer, reference)
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    out = layer(agnostic.tensor(x, device=device))
    expected = reference(torch.from_numpy(x))
    np.testing.assert_allclose(_host(out), expected.detach().numpy(), rtol=1e-4, atol=1e-5)
    out.square().sum().backward()
    expected.square().sum().backward()
    np.testing.assert_allclose(_host(layer.parametrizations.weight.original.grad),
                               reference.parametrizations.weight.original.grad.numpy(), rtol=1e-4, atol=1e-5)
    layer.eval()
    u = _host(layer.parametrizations.weight[0]._u).copy()
    first = _host(layer.weight)
    np.testing.assert_array_equal(_host(layer.parametrizations.weight[0]._u), u)
    np.testing.assert_array_equal(_host(layer.weight), first)


def test_parametrized_spectral_norm_normalizes_vectors_and_checks_dim(device):
    module = agnostic.nn.Module()
    module.weight = agnostic.nn.Parameter(agnostic.tensor([3.0, 4.0], device=device))
    parametrizations.spectral_norm(module)
    np.testing.assert_allclose(_host(module.weight), [0.6, 0.8], rtol=1e-6)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(agnostic.nn.Linear(2, 2, device=device), dim=2)
    layer = parametrizations.spectral_norm(agnostic.nn.ConvTranspose1d(2, 5, 3, device=device))
    assert layer.parametrizations.weight[0]._u.shape == (5,)


def test_parametrized_spectral_norm_gradcheck(device):
    layer = parametrizations.spectral_norm(agnostic.nn.Linear(3, 2, device=device, dtype=agnostic.float64))
    layer.eval()  # fixed u, v: the map is then a smooth function of the weight
    mapping = layer.parametrizations.weight[0]
    start = layer.parametrizations.weight.original.detach().clone().requires_grad_(True)
    assert agnostic.autograd.gradcheck(mapping, (start,))
