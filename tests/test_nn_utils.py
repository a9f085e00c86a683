"""agnostic.nn.utils: gradient clipping and parameter/vector conversion behave as torch.nn.utils'."""

import math
import warnings

import numpy as np
import pytest

import agnostic
from agnostic.nn.utils import (
    clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm, parameters_to_vector,
    vector_to_parameters,
)


def _parameter(values, device, dtype=agnostic.float32, grad=None):
    parameter = agnostic.nn.Parameter(agnostic.tensor(values, dtype=dtype, device=device))
    if grad is not None:
        parameter.grad = agnostic.tensor(grad, dtype=dtype, device=device)
    return parameter


# ----- clip_grad_norm_ ----------------------------------------------------------------------------------------------
def test_clip_grad_norm_scales_gradients_to_max_norm_and_returns_total_norm(device):
    first = _parameter([0.0, 0.0], device, grad=[3.0, 0.0])
    second = _parameter([[0.0, 0.0]], device, grad=[[0.0, 4.0]])
    total = clip_grad_norm_([first, second], max_norm=2.0)
    assert total.device == device and total.dtype == agnostic.float32 and total.shape == ()
    assert total.item() == pytest.approx(5.0)
    scale = 2.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(first.grad.cpu().numpy(), [3.0 * scale, 0.0], rtol=1e-6)
    np.testing.assert_allclose(second.grad.cpu().numpy(), [[0.0, 4.0 * scale]], rtol=1e-6)


def test_clip_grad_norm_leaves_small_gradients_alone(device):
    parameter = _parameter([0.0, 0.0], device, grad=[0.3, 0.4])
    total = clip_grad_norm_(parameter, 10.0)  # a single tensor
    assert total.item() == pytest.approx(0.5)
    np.testing.assert_array_equal(parameter.grad.cpu().numpy(), np.float32([0.3, 0.4]))


@pytest.mark.parametrize("norm_type, expected",
                         [(1, 7.0), (2.0, 5.0), (math.inf, 4.0), ("inf", 4.0), (3, 91 ** (1 / 3))])
def test_clip_grad_norm_norm_types(device, norm_type, expected):
    parameters = [_parameter([0.0], device, grad=[-3.0]), _parameter([0.0], device, grad=[4.0])]
    total = clip_grad_norm_(parameters, 1.0, norm_type=norm_type)
    assert total.item() == pytest.approx(expected, rel=1e-6)
    clipped = [parameter.grad.item() for parameter in parameters]
    assert clipped == pytest.approx([-3.0 / (expected + 1e-6), 4.0 / (expected + 1e-6)], rel=1e-5)


def test_clip_grad_norm_skips_parameters_without_gradients_and_empty_lists(device):
    with_grad = _parameter([0.0], device, grad=[2.0])
    without = _parameter([1.0], device)
    assert clip_grad_norm_([with_grad, without], 1.0).item() == pytest.approx(2.0)
    assert without.grad is None
    empty = clip_grad_norm_([], 1.0)
    assert empty.item() == 0.0 and empty.dtype == agnostic.float32
    with pytest.warns(UserWarning, match="empty generator"):
        clip_grad_norm_((p for p in []), 1.0)


def test_clip_grad_norm_nonfinite(device):
    parameter = _parameter([0.0, 0.0], device, grad=[float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(parameter, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(parameter.grad.cpu().numpy(), np.float32([np.inf, 1.0]))  # untouched
    assert math.isinf(clip_grad_norm_(parameter, 1.0).item())


def test_clip_grad_norm_mixed_dtypes_promote_the_total(device):
    single = _parameter([0.0], device, grad=[3.0])
    double = _parameter([0.0], device, dtype=agnostic.float64, grad=[4.0])
    total = clip_grad_norm_([single, double], 1.0)
    assert total.dtype == agnostic.float64 and total.item() == pytest.approx(5.0)
    assert single.grad.dtype == agnostic.float32


def test_clip_grad_norm_is_not_recorded(device):
    weight = _parameter([1.0, 2.0], device)
    (weight * weight).sum().backward()
    total = clip_grad_norm_(weight, 1.0)
    assert not total.requires_grad and total.grad_fn is None


def test_clip_grad_norm_matches_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(shape).astype(np.float32) for shape in [(3, 4), (5,), (2, 2, 2)]]
    for norm_type in (2.0, 1.0, math.inf, 0.5):
        ours = [_parameter(np.zeros_like(g), device, grad=g) for g in grads]
        theirs = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
        for parameter, g in zip(theirs, grads):
            parameter.grad = torch.tensor(g)
        total = clip_grad_norm_(ours, 0.7, norm_type)
        expected = torch.nn.utils.clip_grad_norm_(theirs, 0.7, norm_type)
        assert total.item() == pytest.approx(expected.item(), rel=1e-5)
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(mine.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_get_total_norm_and_clip_grads_with_norm(device):
    tensors = [agnostic.tensor([3.0], device=device), agnostic.tensor([4.0], device=device)]
    assert get_total_norm(tensors).item() == pytest.approx(5.0)
    assert get_total_norm(tensors, 1).item() == pytest.approx(7.0)
    parameter = _parameter([0.0, 0.0], device, grad=[6.0, 8.0])
    assert clip_grads_with_norm_([parameter], 5.0, agnostic.tensor(10.0, device=device)) is None
    np.testing.assert_allclose(parameter.grad.cpu().numpy(), [3.0, 4.0], rtol=1e-6)


def test_clip_grad_norm_deprecated_name_warns(device):
    parameter = _parameter([0.0], device, grad=[2.0])
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        assert clip_grad_norm(parameter, 1.0).item() == pytest.approx(2.0)


# ----- clip_grad_value_ ---------------------------------------------------------------------------------------------
def test_clip_grad_value_clamps_each_gradient(device):
    first = _parameter([0.0, 0.0, 0.0], device, grad=[-3.0, 0.25, 2.0])
    second = _parameter([0.0], device, dtype=agnostic.float64, grad=[-0.5])
    without = _parameter([0.0], device)
    assert clip_grad_value_([first, second, without], 1) is None
    np.testing.assert_array_equal(first.grad.cpu().numpy(), np.float32([-1.0, 0.25, 1.0]))
    np.testing.assert_array_equal(second.grad.cpu().numpy(), [-0.5])
    assert without.grad is None
    clip_grad_value_(first, 0.1)
    np.testing.assert_allclose(first.grad.cpu().numpy(), [-0.1, 0.1, 0.1], rtol=1e-6)


# ----- parameters_to_vector / vector_to_parameters ------------------------------------------------------------------
def test_parameters_to_vector_concatenates_flattened_parameters(device):
    layer = agnostic.nn.Linear(3, 2).to(device)
    vector = parameters_to_vector(layer.parameters())
    assert vector.shape == (8,) and vector.device == device
    expected = np.concatenate([layer.weight.detach().cpu().numpy().ravel(), layer.bias.detach().cpu().numpy()])
    np.testing.assert_array_equal(vector.detach().cpu().numpy(), expected)
    vector.sum().backward()  # the vector is part of the graph, as in PyTorch
    np.testing.assert_array_equal(layer.weight.grad.cpu().numpy(), np.ones((2, 3), np.float32))


def test_vector_to_parameters_round_trip(device):
    layer = agnostic.nn.Linear(3, 2).to(device)
    values = agnostic.arange(8, dtype=agnostic.float32, device=device)
    assert vector_to_parameters(values, layer.parameters()) is None
    np.testing.assert_array_equal(layer.weight.detach().cpu().numpy(), np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(layer.bias.detach().cpu().numpy(), np.float32([6, 7]))
    assert isinstance(layer.weight, agnostic.nn.Parameter) and layer.weight.requires_grad
    np.testing.assert_array_equal(parameters_to_vector(layer.parameters()).detach().cpu().numpy(),
                                  np.arange(8, dtype=np.float32))


def test_vector_to_parameters_refuses_a_non_tensor(device):
    layer = agnostic.nn.Linear(1, 1).to(device)
    with pytest.raises(TypeError, match="but got: list"):
        vector_to_parameters([1.0, 2.0], layer.parameters())
    with pytest.raises(TypeError, match="numpy.ndarray"):
        vector_to_parameters(np.zeros(2), layer.parameters())


def test_conversions_refuse_parameters_on_two_devices():
    if agnostic.cuda.device_count() == 0:
        pytest.skip("needs a CUDA device")
    parameters = [agnostic.zeros(2), agnostic.zeros(2, device="cuda")]
    with pytest.raises(TypeError, match="different devices"):
        parameters_to_vector(parameters)
    with pytest.raises(TypeError, match="different devices"):
        vector_to_parameters(agnostic.zeros(4), parameters)


def test_no_warnings_on_ordinary_use(device):
    parameter = _parameter([0.0], device, grad=[2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clip_grad_norm_(parameter, 1.0)
        clip_grad_value_(parameter, 1.0)


# ----- parametrizations.weight_norm ---------------------------------------------------------------------------------
def test_weight_norm_keeps_the_weight_and_splits_it_into_magnitude_and_direction(device):
    from agnostic.nn.utils.parametrizations import weight_norm

    layer = agnostic.nn.Linear(3, 2).to(device)
    before = layer.weight.detach().cpu().numpy().copy()
    assert weight_norm(layer) is layer
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, agnostic.nn.Linear)
    magnitude = layer.parametrizations.weight.original0
    direction = layer.parametrizations.weight.original1
    assert isinstance(magnitude, agnostic.nn.Parameter) and magnitude.shape == (2, 1)
    np.testing.assert_allclose(magnitude.detach().cpu().numpy(), np.linalg.norm(before, axis=1, keepdims=True),
                               rtol=1e-6)
    np.testing.assert_array_equal(direction.detach().cpu().numpy(), before)
    np.testing.assert_allclose(layer.weight.detach().cpu().numpy(), before, rtol=1e-6)
    assert sorted(name for name, _ in layer.named_parameters()) == [
        "bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    assert sorted(layer.state_dict()) == ["bias", "parametrizations.weight.original0",
                                          "parametrizations.weight.original1"]


def test_weight_norm_recomputes_the_weight_from_its_parts(device):
    from agnostic.nn.utils.parametrizations import weight_norm

    layer = weight_norm(agnostic.nn.Linear(2, 2).to(device))
    with agnostic.no_grad():
        layer.parametrizations.weight.original0.fill_(2.0)
        layer.parametrizations.weight.original1.copy_(agnostic.tensor([[3.0, 4.0], [0.0, -1.0]], device=device))
    np.testing.assert_allclose(layer.weight.detach().cpu().numpy(), [[1.2, 1.6], [0.0, -2.0]], rtol=1e-6)
    layer.weight = agnostic.tensor([[0.0, 5.0], [1.0, 0.0]], device=device)  # set through the right inverse
    np.testing.assert_allclose(layer.parametrizations.weight.original0.detach().cpu().numpy(), [[5.0], [1.0]])
    np.testing.assert_allclose(layer.weight.detach().cpu().numpy(), [[0.0, 5.0], [1.0, 0.0]], rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(device, dim):
    torch = pytest.importorskip("torch")
    from agnostic.nn.utils.parametrizations import weight_norm

    rng = np.random.default_rng(3)
    weight, bias = rng.standard_normal((4, 2, 3, 3)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    ours, theirs = agnostic.nn.Conv2d(2, 4, 3).to(device), torch.nn.Conv2d(2, 4, 3)
    with agnostic.no_grad():
        ours.weight.copy_(agnostic.tensor(weight, device=device))
        ours.bias.copy_(agnostic.tensor(bias, device=device))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(weight))
        theirs.bias.copy_(torch.tensor(bias))
    weight_norm(ours, dim=dim)
    torch.nn.utils.parametrizations.weight_norm(theirs, dim=dim)
    x = rng.standard_normal((2, 2, 5, 5)).astype(np.float32)
    ours(agnostic.tensor(x, device=device)).square().sum().backward()
    theirs(torch.tensor(x)).square().sum().backward()
    for part in ("original0", "original1"):
        mine = getattr(ours.parametrizations.weight, part)
        reference = getattr(theirs.parametrizations.weight, part)
        assert tuple(mine.shape) == tuple(reference.shape)
        np.testing.assert_allclose(mine.detach().cpu().numpy(), reference.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(mine.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-4, atol=1e-4)


def test_weight_norm_trains_and_loads_state(device):
    from agnostic.nn.utils.parametrizations import weight_norm

    layer = weight_norm(agnostic.nn.Linear(3, 1).to(device), dim=None)
    optimizer = agnostic.optim.SGD(layer.parameters(), lr=0.1)
    x = agnostic.ones(4, 3, device=device)
    losses = []
    for _ in range(3):
        optimizer.zero_grad()
        loss = layer(x).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[2] < losses[0]
    copy = weight_norm(agnostic.nn.Linear(3, 1).to(device), dim=None)
    copy.load_state_dict(layer.state_dict())
    np.testing.assert_allclose(copy.weight.detach().cpu().numpy(), layer.weight.detach().cpu().numpy(), rtol=1e-6)


def test_weight_norm_refuses_a_missing_parameter():
    from agnostic.nn.utils.parametrizations import weight_norm

    with pytest.raises(ValueError, match="no parameter named 'kernel'"):
        weight_norm(agnostic.nn.Linear(1, 1), name="kernel")
