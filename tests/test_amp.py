"""Mixed precision: autocast regions give each op the dtype PyTorch's autocast gives it, on every device, with
gradients in the parameters' dtype; GradScaler scales, unscales, skips overflowing steps and adapts its scale as
PyTorch's."""

import threading

import numpy as np
import pytest

import agnostic
import agnostic.nn.functional as F


def _torch_device(device):
    return "cpu" if device.type == "cpu" else "cuda"


# name -> f(library, functional, x, w, labels), each an op with an autocast policy (or none, for contrast).
OPS = {
    "matmul": lambda lib, fn, x, w, labels: x @ w,
    "mm": lambda lib, fn, x, w, labels: lib.mm(x, w),
    "bmm": lambda lib, fn, x, w, labels: lib.bmm(x.unsqueeze(0), w.unsqueeze(0)),
    "linear": lambda lib, fn, x, w, labels: fn.linear(x, w),
    "prod": lambda lib, fn, x, w, labels: (x @ w).prod(dim=-1),
    "sum": lambda lib, fn, x, w, labels: (x @ w).sum(),
    "exp": lambda lib, fn, x, w, labels: (x @ w).exp(),
    "pow": lambda lib, fn, x, w, labels: (x @ w) ** 2,
    "softmax": lambda lib, fn, x, w, labels: fn.softmax(x @ w, dim=-1),
    "log_softmax": lambda lib, fn, x, w, labels: fn.log_softmax(x @ w, dim=-1),
    "cross_entropy": lambda lib, fn, x, w, labels: fn.cross_entropy(x @ w, labels),
    "mse_loss": lambda lib, fn, x, w, labels: fn.mse_loss(x @ w, x @ w),
    "layer_norm": lambda lib, fn, x, w, labels: fn.layer_norm(x @ w, (4,)),
    "relu": lambda lib, fn, x, w, labels: fn.relu(x @ w),
    "add (promotion, no policy)": lambda lib, fn, x, w, labels: (x @ w) + x,
}


@pytest.mark.parametrize("name", OPS)
def test_each_op_gets_the_dtype_pytorch_autocast_gives(device, name):
    torch = pytest.importorskip("torch")
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    rng = np.random.default_rng(0)
    x, w, labels = rng.standard_normal((3, 4), np.float32), rng.standard_normal((4, 4), np.float32), [0, 3, 1]
    with agnostic.autocast(device.type, dtype=agnostic.float16):
        ours = OPS[name](agnostic, F, agnostic.tensor(x, device=device), agnostic.tensor(w, device=device),
                         agnostic.tensor(labels, device=device))
    with torch.autocast(_torch_device(device), dtype=torch.float16):
        theirs = OPS[name](torch, torch.nn.functional, torch.tensor(x, device=_torch_device(device)),
                           torch.tensor(w, device=_torch_device(device)),
                           torch.tensor(labels, device=_torch_device(device)))
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours.float().cpu().numpy(), theirs.float().cpu().numpy(), rtol=2e-2, atol=2e-2)


def test_gradients_reach_float32_parameters(device):
    model = agnostic.nn.Linear(4, 3).to(device)
    x = agnostic.randn(5, 4, device=device)
    with agnostic.autocast(device.type, dtype=agnostic.float16):
        out = model(x)
        loss = F.cross_entropy(out, agnostic.tensor([0, 1, 2, 0, 1], device=device))
    assert out.dtype is agnostic.float16 and loss.dtype is agnostic.float32
    loss.backward()
    assert model.weight.grad.dtype is agnostic.float32 and model.bias.grad.dtype is agnostic.float32

    reference = agnostic.nn.Linear(4, 3).to(device)
    reference.load_state_dict(model.state_dict())
    F.cross_entropy(reference(x), agnostic.tensor([0, 1, 2, 0, 1], device=device)).backward()
    np.testing.assert_allclose(model.weight.grad.cpu().numpy(), reference.weight.grad.cpu().numpy(), atol=5e-3)


def test_regions_nest_and_end(device):
    a = agnostic.ones(2, 2, device=device)
    with agnostic.autocast(device.type, dtype=agnostic.float16):
        assert (a @ a).dtype is agnostic.float16 and agnostic.is_autocast_enabled(device.type)
        with agnostic.autocast(device.type, enabled=False):
            assert (a @ a).dtype is agnostic.float32 and not agnostic.is_autocast_enabled(device.type)
        assert (a @ a).dtype is agnostic.float16
    assert (a @ a).dtype is agnostic.float32 and not agnostic.is_autocast_enabled(device.type)
    assert agnostic.get_autocast_dtype("cuda") is agnostic.float16


def test_a_region_of_another_device_type_changes_nothing(device):
    a = agnostic.ones(2, 2, device=device)
    other = "cpu" if device.type == "cuda" else "cuda"
    with agnostic.autocast(other, dtype=agnostic.float16):
        assert (a @ a).dtype is agnostic.float32


def test_autocast_is_per_thread():
    a = agnostic.ones(2, 2)
    seen = []
    with agnostic.autocast("cpu", dtype=agnostic.float16):
        thread = threading.Thread(target=lambda: seen.append((a @ a).dtype))
        thread.start()
        thread.join()
        assert (a @ a).dtype is agnostic.float16
    assert seen == [agnostic.float32]


def test_autocast_as_a_decorator():
    @agnostic.autocast("cpu", dtype=agnostic.float16)
    def product(a, b):
        return a @ b

    assert product(agnostic.ones(2, 2), agnostic.ones(2, 2)).dtype is agnostic.float16
    assert (agnostic.ones(2, 2) @ agnostic.ones(2, 2)).dtype is agnostic.float32


def test_a_weight_is_cast_once_per_region():
    w = agnostic.nn.Parameter(agnostic.randn(3, 3))
    with agnostic.autocast("cpu", dtype=agnostic.float16):
        (agnostic.ones(1, 3) @ w) @ w
        cast = agnostic._autocast.STATE.cache[id(w)][1][1]
        assert cast.dtype is agnostic.float16
        (agnostic.ones(1, 3) @ w)
        assert agnostic._autocast.STATE.cache[id(w)][1][1] is cast
    assert not agnostic._autocast.STATE.cache


def test_unsupported_autocast_arguments():
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'mps'"):
        agnostic.autocast("mps")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        agnostic.autocast(agnostic.device("cpu"))
    with pytest.warns(UserWarning, match="Disabling autocast"):
        region = agnostic.autocast("cpu", dtype=agnostic.float64)
    with region:
        assert (agnostic.ones(2, 2) @ agnostic.ones(2, 2)).dtype is agnostic.float32


def test_cuda_amp_aliases():
    region = agnostic.cuda.amp.autocast()
    assert isinstance(region, agnostic.amp.autocast) and region.device == "cuda"
    assert agnostic.cuda.amp.GradScaler(init_scale=8.0)._init_scale == 8.0


# ----- GradScaler -------------------------------------------------------------------------------------------------
def _scaled_training(library, device, gradients_per_step, **keywords):
    """Steps of SGD on one parameter through a GradScaler, with each step's (unscaled) gradient given: the
    parameter and the scale after each step."""
    w = library.nn.Parameter(library.tensor([1.0, 2.0], device=device))
    optimizer = library.optim.SGD([w], lr=0.5)
    scaler = library.amp.GradScaler(str(device).split(":")[0], **keywords)
    trace = []
    for gradient in gradients_per_step:
        optimizer.zero_grad()
        scaler.scale((w * library.tensor(gradient, device=device)).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        trace.append((w.detach().cpu().numpy().tolist(), scaler.get_scale()))
    return trace, scaler


GRADIENTS = [[1.0, 1.0], [float("inf"), 1.0], [0.5, -0.5], [1.0, float("nan")], [0.25, 0.25], [1.0, 2.0]]


def test_grad_scaler_skips_overflowing_steps_and_adapts_its_scale(device):
    trace, scaler = _scaled_training(agnostic, device, GRADIENTS, init_scale=64.0, growth_interval=2)
    parameters, scales = zip(*trace)
    assert parameters[1] == parameters[0] and parameters[3] == parameters[2]  # inf/nan steps skipped
    assert parameters[0] == [0.5, 1.5] and parameters[2] == [0.25, 1.75]
    assert scales == (64.0, 32.0, 32.0, 16.0, 16.0, 32.0)
    assert scaler.state_dict() == {"scale": 32.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                                   "growth_interval": 2, "_growth_tracker": 0}


def test_grad_scaler_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    if device.type == "cuda" and not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    ours, _ = _scaled_training(agnostic, device, GRADIENTS, init_scale=64.0, growth_interval=2)
    theirs, scaler = _scaled_training(torch, _torch_device(device), GRADIENTS, init_scale=64.0, growth_interval=2)
    assert ours == theirs
    resumed = agnostic.amp.GradScaler(device.type)
    resumed.load_state_dict(scaler.state_dict())
    assert resumed.state_dict() == scaler.state_dict()


def test_grad_scaler_unscale_then_clip():
    w = agnostic.nn.Parameter(agnostic.tensor([3.0, 4.0]))
    optimizer = agnostic.optim.SGD([w], lr=1.0)
    scaler = agnostic.amp.GradScaler("cpu", init_scale=128.0)
    scaler.scale((w * w).sum() / 2).backward()
    scaler.unscale_(optimizer)
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 4.0])
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
    scaler.step(optimizer)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called since the last update"):
        scaler.step(optimizer)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0])


def test_disabled_grad_scaler_passes_through():
    scaler = agnostic.amp.GradScaler("cpu", enabled=False)
    loss = agnostic.tensor(2.0)
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_grad_scaler_refuses_bad_factors_and_fp16_gradients():
    with pytest.raises(ValueError, match="growth factor must be > 1.0"):
        agnostic.amp.GradScaler("cpu", growth_factor=0.5)
    w = agnostic.nn.Parameter(agnostic.ones(2, dtype=agnostic.float16))
    optimizer = agnostic.optim.SGD([w], lr=1.0)
    scaler = agnostic.amp.GradScaler("cpu")
    scaler.scale(w.sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        scaler.step(optimizer)
