"""ASGD, Rprop and Adafactor follow PyTorch's updates step by step on every device, keep PyTorch's state layout,
and resume from their state dicts."""

import numpy as np
import pytest

import agnostic

from test_optimizers_single import _train as train, check_resumes

# (optimizer, keywords): each option that changes the update.
CONFIGS = [
    ("ASGD", {}),
    ("ASGD", {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 3, "maximize": True}),
    ("Rprop", {}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.08)}),
    ("Rprop", {"lr": 0.05, "maximize": True, "foreach": False}),
    ("Adafactor", {}),
    ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "eps": (1e-6, 1e-2), "d": 1.5, "weight_decay": 0.1}),
    ("Adafactor", {"lr": 0.05, "maximize": True, "d": 1.0}),
]


def _start():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3, 4)), rng.standard_normal(4), rng.standard_normal((5, 3))


def _loss(library, weight, bias, inputs):
    # sin makes the gradients change sign along the way (Rprop's step sizes then shrink as well as grow)
    return ((library.tanh(inputs @ weight + bias) - 0.5) ** 2).sum() + library.sin(3 * weight).sum()


def _train(library, name, keywords, steps, device=None):
    return train(library, name, keywords, steps, device, start=_start, loss=_loss)


@pytest.mark.parametrize("name, keywords", CONFIGS)
def test_updates_match_pytorch(device, name, keywords):
    torch = pytest.importorskip("torch")
    (ours, optimizer), (theirs, reference) = _train(agnostic, name, keywords, 20, device), \
        _train(torch, name, keywords, 20)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    ours_state, theirs_state = optimizer.state_dict(), reference.state_dict()
    assert ours_state["param_groups"] == theirs_state["param_groups"]
    for index, state in theirs_state["state"].items():
        assert set(ours_state["state"][index]) == set(state)
        for key, value in state.items():
            mine = ours_state["state"][index][key]
            assert tuple(mine.shape) == tuple(value.shape)
            assert str(mine.dtype) == str(value.dtype).replace("torch", "agnostic")
            np.testing.assert_allclose(mine.cpu().numpy(), value.numpy(), rtol=1e-10, atol=1e-12)


def _state_devices(optimizer, device):
    state = next(iter(optimizer.state.values()))
    return {key: value.device for key, value in state.items()}


def test_state_lives_where_pytorch_keeps_it(device):
    _, asgd = _train(agnostic, "ASGD", {}, 1, device)
    assert _state_devices(asgd, device) == {"step": device, "eta": device, "mu": device, "ax": device}
    cpu = agnostic.device("cpu")
    _, rprop = _train(agnostic, "Rprop", {}, 1, device)
    assert _state_devices(rprop, device) == {"step": cpu, "prev": device, "step_size": device}
    _, rprop = _train(agnostic, "Rprop", {"capturable": True}, 1, device)
    assert _state_devices(rprop, device)["step"] == device
    _, adafactor = _train(agnostic, "Adafactor", {}, 1, device)
    weight_state = adafactor.state[adafactor.param_groups[0]["params"][0]]
    assert tuple(weight_state["row_var"].shape) == (2, 3, 1) and tuple(weight_state["col_var"].shape) == (2, 1, 4)
    assert "variance" in adafactor.state[adafactor.param_groups[0]["params"][1]]


@pytest.mark.parametrize("name, keywords", [CONFIGS[1], CONFIGS[4], CONFIGS[7]])
def test_training_reduces_the_loss(device, name, keywords):
    weight, bias, inputs = _start()
    before = _loss(np, weight, bias, inputs)
    (weight, bias), _ = _train(agnostic, name, keywords, 30, device)
    assert _loss(np, weight, bias, inputs) < before


def test_asgd_first_steps_by_hand(device):
    w = agnostic.nn.Parameter(agnostic.tensor([2.0, -1.0], dtype=agnostic.float64, device=device))
    optimizer = agnostic.optim.ASGD([w], lr=0.1, lambd=0.5, alpha=1.0, t0=0)
    expected, eta, ax = np.array([2.0, -1.0]), np.float32(0.1), None
    for step in range(1, 4):
        optimizer.zero_grad()
        (w ** 2).sum().backward()
        optimizer.step()
        expected = expected * (1 - 0.5 * float(eta)) - float(eta) * 2 * expected
        mu = 1.0 if step == 1 else 1 / (step - 1)  # mu as set by the previous step: 1 / max(1, step - t0)
        ax = expected.copy() if mu == 1 else ax + (expected - ax) * mu
        eta = np.float32(0.1 / (1 + 0.5 * 0.1 * step))
        np.testing.assert_allclose(w.detach().cpu().numpy(), expected, rtol=1e-12)
        np.testing.assert_allclose(optimizer.state[w]["ax"].cpu().numpy(), ax, rtol=1e-12)
        assert optimizer.state[w]["eta"].item() == float(eta)


def test_rprop_step_sizes_by_hand(device):
    w = agnostic.nn.Parameter(agnostic.tensor([1.0, -1.0, 0.0], dtype=agnostic.float64, device=device))
    optimizer = agnostic.optim.Rprop([w], lr=0.1, etas=(0.5, 2.0), step_sizes=(0.01, 0.3))
    for grad in ([1.0, 1.0, 0.0], [1.0, -1.0, 2.0], [1.0, 3.0, 2.0]):
        w.grad = agnostic.tensor(grad, dtype=agnostic.float64, device=device)
        optimizer.step()
    # element 0 grows every step (0.1, 0.2, 0.3 capped); element 1 flips at step 2 (halved, skipped, prev = 0),
    # then keeps its size; element 2 starts at 0 (kept), then grows
    np.testing.assert_allclose(optimizer.state[w]["step_size"].cpu().numpy(), [0.3, 0.05, 0.2])
    np.testing.assert_allclose(w.detach().cpu().numpy(), [1.0 - 0.1 - 0.2 - 0.3, -1.0 - 0.1 - 0.05, -0.1 - 0.2])
    np.testing.assert_allclose(optimizer.state[w]["prev"].cpu().numpy(), [1.0, 3.0, 2.0])


def test_rprop_complex_parameters_move_as_real_pairs(device):
    torch = pytest.importorskip("torch")
    start = np.array([1.0 + 2.0j, -0.5 + 0.25j])
    results = []
    for library, make in ((agnostic, lambda a: agnostic.tensor(a, device=device)), (torch, torch.tensor)):
        w = library.nn.Parameter(make(start))
        optimizer = library.optim.Rprop([w], lr=0.1)
        for _ in range(6):
            optimizer.zero_grad()
            (library.sin(library.view_as_real(w) * 3) ** 2).sum().backward()
            optimizer.step()
        results.append(w.detach().cpu().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_adafactor_vector_step_by_hand(device):
    w = agnostic.nn.Parameter(agnostic.tensor([3.0, -4.0], dtype=agnostic.float64, device=device))
    optimizer = agnostic.optim.Adafactor([w], lr=0.5)
    (w ** 2).sum().backward()  # g = 2w; first step: variance = g^2, update = sign(g), RMS 1, so no clipping
    optimizer.step()
    alpha = np.sqrt((9 + 16) / 2) * min(0.5, 1.0)
    np.testing.assert_allclose(w.detach().cpu().numpy(), [3.0 - alpha, -4.0 + alpha], rtol=1e-12)


def test_adafactor_refuses_complex_parameters():
    w = agnostic.nn.Parameter(agnostic.tensor([1.0 + 1.0j]))
    w.grad = agnostic.ones_like(w)
    with pytest.raises(RuntimeError, match="complex"):
        agnostic.optim.Adafactor([w]).step()


@pytest.mark.parametrize("name, keywords", [CONFIGS[1], CONFIGS[4], CONFIGS[7]])
def test_state_dict_resumes_training(name, keywords):
    # ASGD's float32 eta and mu become float64 on loading, as in PyTorch: equal to rounding
    check_resumes(name, keywords, 8, rtol=1e-7, start=_start, loss=_loss)


def test_default_hyperparameters_are_pytorchs():
    torch = pytest.importorskip("torch")
    for name in ("ASGD", "Rprop", "Adafactor"):
        ours = getattr(agnostic.optim, name)([agnostic.nn.Parameter(agnostic.zeros(1))]).defaults
        theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(1))]).defaults
        assert ours == theirs, name


@pytest.mark.parametrize("make, message", [
    (lambda p: agnostic.optim.ASGD(p, lr=-1.0), "Invalid learning rate"),
    (lambda p: agnostic.optim.ASGD(p, weight_decay=-1.0), "Invalid weight_decay"),
    (lambda p: agnostic.optim.Rprop(p, etas=(1.5, 1.2)), "Invalid eta values"),
    (lambda p: agnostic.optim.Rprop(p, lr=agnostic.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
    (lambda p: agnostic.optim.Adafactor(p, beta2_decay=0.5), "beta2_decay should be <= 0"),
    (lambda p: agnostic.optim.Adafactor(p, eps=(-1.0, 1e-3)), "epsilon1 should be >= 0"),
    (lambda p: agnostic.optim.Adafactor(p, d=0.5), "Clipping threshold d should be >= 1"),
])
def test_bad_hyperparameters_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make([agnostic.nn.Parameter(agnostic.zeros(1))])
