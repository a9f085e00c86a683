"""agnostic.nn.grad: convolution gradients with respect to input and weight, against a NumPy loop, autograd of
F.conv*d, and PyTorch's torch.nn.grad."""

import itertools

import numpy as np
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

CASES = [  # dims, batch, in channels, out channels, spatial, kernel, stride, padding, dilation, groups
    (1, 2, 4, 6, (9,), (3,), 2, 1, 1, 2),
    (1, 1, 3, 2, (8,), (2,), 3, 0, 2, 1),
    (2, 2, 3, 4, (7, 8), (3, 2), 2, 1, 1, 1),
    (2, 1, 4, 4, (6, 7), (2, 3), (1, 2), (0, 2), (2, 1), 2),
    (2, 3, 6, 3, (5, 5), (1, 1), 3, 0, 1, 3),
    (3, 1, 2, 2, (4, 5, 6), (2, 2, 3), (2, 1, 2), (1, 0, 1), 1, 1),
]
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _per_dim(value, dims):
    return tuple(value) if isinstance(value, tuple) else (value,) * dims


def _numpy_gradients(x, w, grad_out, stride, padding, dilation, groups):
    """Input and weight gradients of a cross-correlation, by looping over every (output, kernel) position."""
    dims = x.ndim - 2
    stride, padding, dilation = (_per_dim(v, dims) for v in (stride, padding, dilation))
    grad_x, grad_w = np.zeros_like(x), np.zeros_like(w)
    out_per_group, in_per_group = w.shape[0] // groups, w.shape[1]
    for out_pos in itertools.product(*(range(size) for size in grad_out.shape[2:])):
        for k_pos in itertools.product(*(range(size) for size in w.shape[2:])):
            pos = [o * s - p + k * d for o, s, p, k, d in zip(out_pos, stride, padding, k_pos, dilation)]
            if any(q < 0 or q >= size for q, size in zip(pos, x.shape[2:])):
                continue
            for o in range(w.shape[0]):
                channels = slice(o // out_per_group * in_per_group, (o // out_per_group + 1) * in_per_group)
                g = grad_out[(slice(None), o) + out_pos]  # (N,)
                grad_x[(slice(None), channels) + tuple(pos)] += g[:, None] * w[(o, slice(None)) + k_pos]
                grad_w[(o, slice(None)) + k_pos] += (g[:, None] * x[(slice(None), channels) + tuple(pos)]).sum(0)
    return grad_x, grad_w


def _case_tensors(case, device, dtype=agnostic.float64):
    dims, batch, cin, cout, spatial, kernel, stride, padding, dilation, groups = case
    generator = np.random.default_rng(sum(spatial) + dims)
    x = generator.standard_normal((batch, cin) + spatial)
    w = generator.standard_normal((cout, cin // groups) + kernel)
    out_shape = CONV[dims](agnostic.tensor(x), agnostic.tensor(w), None, stride, padding, dilation, groups).shape
    grad_out = generator.standard_normal(tuple(out_shape))
    as_tensor = lambda a: agnostic.tensor(a, dtype=dtype, device=device)  # noqa: E731
    return (x, w, grad_out), (as_tensor(x), as_tensor(w), as_tensor(grad_out)), dict(
        stride=stride, padding=padding, dilation=dilation, groups=groups)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}d-{case[4]}-s{case[6]}-g{case[9]}")
def test_gradients_match_a_numpy_loop_and_autograd(device, case):
    dims = case[0]
    (x_np, w_np, g_np), (x, w, grad_out), geometry = _case_tensors(case, device)
    expected_x, expected_w = _numpy_gradients(x_np, w_np, g_np, **geometry)
    grad_x = getattr(agnostic.nn.grad, f"conv{dims}d_input")(x.shape, w, grad_out, **geometry)
    grad_w = getattr(agnostic.nn.grad, f"conv{dims}d_weight")(x, w.shape, grad_out, **geometry)
    assert grad_x.shape == x.shape and grad_w.shape == w.shape
    assert grad_x.device == device and grad_x.dtype == agnostic.float64
    np.testing.assert_allclose(grad_x.cpu().numpy(), expected_x, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_w.cpu().numpy(), expected_w, rtol=1e-10, atol=1e-10)

    leaf_x, leaf_w = x.clone().requires_grad_(), w.clone().requires_grad_()
    CONV[dims](leaf_x, leaf_w, None, **geometry).backward(grad_out)
    np.testing.assert_allclose(grad_x.cpu().numpy(), leaf_x.grad.cpu().numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(grad_w.cpu().numpy(), leaf_w.grad.cpu().numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}d-{case[4]}-s{case[6]}-g{case[9]}")
def test_gradients_match_pytorch(device, case):
    torch = pytest.importorskip("torch")
    import torch.nn.grad as torch_grad

    dims = case[0]
    (x_np, w_np, g_np), (x, w, grad_out), geometry = _case_tensors(case, device, agnostic.float32)
    tx, tw, tg = (torch.tensor(a, dtype=torch.float32) for a in (x_np, w_np, g_np))
    expected_x = getattr(torch_grad, f"conv{dims}d_input")(tx.shape, tw, tg, **geometry)
    expected_w = getattr(torch_grad, f"conv{dims}d_weight")(tx, tw.shape, tg, **geometry)
    grad_x = getattr(agnostic.nn.grad, f"conv{dims}d_input")(x.shape, w, grad_out, **geometry)
    grad_w = getattr(agnostic.nn.grad, f"conv{dims}d_weight")(x, w.shape, grad_out, **geometry)
    assert grad_x.dtype == agnostic.float32 and grad_w.dtype == agnostic.float32
    np.testing.assert_allclose(grad_x.cpu().numpy(), expected_x.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(grad_w.cpu().numpy(), expected_w.numpy(), rtol=1e-4, atol=1e-4)


def test_input_gradient_of_an_input_the_windows_did_not_cover_is_zero_there(device):
    # width 10, kernel 3, stride 4: the windows start at 0 and 4, so positions 7..9 get no gradient
    weight = agnostic.ones(1, 1, 3, device=device)
    grad = agnostic.nn.grad.conv1d_input((1, 1, 10), weight, agnostic.tensor([[[1.0, 2.0]]], device=device), stride=4)
    assert grad.tolist() == [[[1.0, 1.0, 1.0, 0.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0]]]
    columns = agnostic.nn.grad.conv1d_weight(agnostic.arange(10.0, device=device).reshape(1, 1, 10), (1, 1, 3),
                                             agnostic.tensor([[[1.0, 2.0]]], device=device), stride=4)
    assert columns.tolist() == [[[8.0, 11.0, 14.0]]]  # 1 * [0, 1, 2] + 2 * [4, 5, 6]


def test_gradients_are_differentiable_gradcheck(device):
    generator = np.random.default_rng(0)
    x = agnostic.tensor(generator.standard_normal((1, 2, 5, 4)), device=device, requires_grad=True)
    w = agnostic.tensor(generator.standard_normal((4, 1, 2, 2)), device=device, requires_grad=True)
    grad_out = agnostic.tensor(generator.standard_normal((1, 4, 3, 3)), device=device, requires_grad=True)
    geometry = dict(stride=2, padding=1, dilation=1, groups=2)
    assert gradcheck(lambda w, g: agnostic.nn.grad.conv2d_input(x.shape, w, g, **geometry), (w, grad_out))
    assert gradcheck(lambda x, g: agnostic.nn.grad.conv2d_weight(x, w.shape, g, **geometry), (x, grad_out))


def test_double_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    import torch.nn.grad as torch_grad

    generator = np.random.default_rng(1)
    w_np, g_np = generator.standard_normal((3, 2, 2)), generator.standard_normal((2, 3, 3))
    w = agnostic.tensor(w_np, device=device, requires_grad=True)
    tw = torch.tensor(w_np, requires_grad=True)
    agnostic.nn.grad.conv1d_input((2, 2, 7), w, agnostic.tensor(g_np, device=device), stride=2).pow(2).sum().backward()
    torch_grad.conv1d_input((2, 2, 7), tw, torch.tensor(g_np), stride=2).pow(2).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), tw.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("call, message", [
    (lambda d: agnostic.nn.grad.conv2d_input((1, 1, 5, 5), agnostic.ones(1, 1, 2, 2, device=d),
                                             agnostic.ones(1, 1, 3, 3, device=d)), "grad_output has size"),
    (lambda d: agnostic.nn.grad.conv2d_input((1, 5, 5), agnostic.ones(1, 1, 2, 2, device=d),
                                             agnostic.ones(1, 1, 4, 4, device=d)), "4-dimensional input"),
    (lambda d: agnostic.nn.grad.conv2d_weight(agnostic.ones(1, 3, 5, 5, device=d), (2, 2, 2, 2),
                                              agnostic.ones(1, 2, 4, 4, device=d)), "channels"),
    (lambda d: agnostic.nn.grad.conv1d_weight(agnostic.ones(1, 1, 5, device=d), (1, 1, 2),
                                              agnostic.ones(1, 1, 4, device=d, dtype=agnostic.float64)),
     "expected scalar type"),
    (lambda d: agnostic.nn.grad.conv1d_input((1, 1, 5), agnostic.ones(1, 1, 2, device=d),
                                             agnostic.ones(1, 1, 4, device=d), padding="same"), "padding"),
    (lambda d: agnostic.nn.grad.conv1d_input((1, 1, 5), agnostic.ones(1, 1, 2, device=d),
                                             agnostic.ones(1, 1, 4, device=d), stride=0), "stride"),
])
def test_inconsistent_shapes_and_dtypes_raise_runtime_error(device, call, message):
    with pytest.raises(RuntimeError, match=message):
        call(device)


def test_every_pytorch_name_is_there():
    pytest.importorskip("torch")
    import inspect

    import torch.nn.grad as torch_grad

    for name in agnostic.nn.grad.__all__:
        assert inspect.signature(getattr(agnostic.nn.grad, name)) == inspect.signature(getattr(torch_grad, name))
    assert set(agnostic.nn.grad.__all__) == {name for name in dir(torch_grad) if name.startswith("conv")}
