"""Adagrad, Adadelta, Adamax, NAdam, RAdam and LBFGS follow PyTorch's updates step by step, on every device, and
their state dicts resume training where it stopped."""

import copy

import numpy as np
import pytest

import agnostic

# (optimizer, keywords): each option that changes the update.
CONFIGS = [
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5}),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {"lr": 0.05}),
    ("Adamax", {"lr": 0.05, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.05}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.05}),
    ("RAdam", {"lr": 0.05, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.05, "betas": (0.5, 0.6), "weight_decay": 0.1}),
]


def _start():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((5, 3))


def _loss(library, weight, bias, inputs):
    return ((library.tanh(inputs @ weight + bias) - 0.5) ** 2).sum()


def _train(library, name, keywords, steps, device=None, start=_start, loss=_loss):
    """(final parameters as NumPy arrays, optimizer) after ``steps`` steps of optimizer ``name`` of ``library``
    (agnostic or torch) on ``loss`` from the parameters and inputs ``start()`` gives."""
    weight, bias, inputs = start()
    make = (lambda a: agnostic.tensor(a, device=device)) if library is agnostic else library.tensor
    params = [library.nn.Parameter(make(weight)), library.nn.Parameter(make(bias))]
    optimizer = getattr(library.optim, name)(params, **keywords)
    inputs = make(inputs)
    for _ in range(steps):
        optimizer.zero_grad()
        loss(library, *params, inputs).backward()
        optimizer.step()
    return [p.detach().cpu().numpy() for p in params], optimizer


@pytest.mark.parametrize("name, keywords", CONFIGS)
def test_updates_match_pytorch(device, name, keywords):
    torch = pytest.importorskip("torch")
    ours, _ = _train(agnostic, name, keywords, 6, device)
    theirs, _ = _train(torch, name, keywords, 6)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, keywords", CONFIGS[::2])
def test_training_reduces_the_loss(device, name, keywords):
    keywords = {key: value for key, value in keywords.items() if key != "maximize"}
    weight, bias, inputs = _start()
    before = _loss(np, weight, bias, inputs)
    (weight, bias), _ = _train(agnostic, name, keywords, 30, device)
    assert _loss(np, weight, bias, inputs) < before


def test_adagrad_first_step_by_hand():
    w = agnostic.nn.Parameter(agnostic.tensor([2.0, -1.0], dtype=agnostic.float64))
    optimizer = agnostic.optim.Adagrad([w], lr=0.1, eps=0.0)
    (w ** 2).sum().backward()  # g = 2w, sum = g^2, step = lr * g / |g| = lr * sign(g)
    optimizer.step()
    np.testing.assert_allclose(w.detach().numpy(), [1.9, -0.9])


def check_resumes(name, keywords, steps, rtol, start=_start, loss=_loss):
    """Training ``steps`` steps straight through and training with the optimizer remade from its (deep-copied)
    state dict halfway give the same parameters, to ``rtol``."""
    full, _ = _train(agnostic, name, keywords, steps, start=start, loss=loss)
    weight, bias, inputs = start()
    params = [agnostic.nn.Parameter(agnostic.tensor(weight)), agnostic.nn.Parameter(agnostic.tensor(bias))]
    optimizer = getattr(agnostic.optim, name)(params, **keywords)
    inputs = agnostic.tensor(inputs)
    for step in range(steps):
        if step == steps // 2:
            saved = copy.deepcopy(optimizer.state_dict())
            optimizer = getattr(agnostic.optim, name)(params, **keywords)
            optimizer.load_state_dict(saved)
        optimizer.zero_grad()
        loss(agnostic, *params, inputs).backward()
        optimizer.step()
    for a, b in zip(full, params):
        np.testing.assert_allclose(b.detach().numpy(), a, rtol=rtol)


@pytest.mark.parametrize("name, keywords", [CONFIGS[1], CONFIGS[4], CONFIGS[8], CONFIGS[11]])
def test_state_dict_resumes_training(name, keywords):
    check_resumes(name, keywords, 6, rtol=1e-8)  # NAdam's float32 mu_product becomes float64 on loading, as in PyTorch


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_matches_pytorch(device, line_search_fn):
    torch = pytest.importorskip("torch")
    results = []
    for library in (agnostic, torch):
        weight, bias, inputs = _start()
        make = (lambda a: agnostic.tensor(a, device=device)) if library is agnostic else library.tensor
        params = [library.nn.Parameter(make(weight)), library.nn.Parameter(make(bias))]
        optimizer = library.optim.LBFGS(params, lr=0.5, max_iter=8, history_size=4, line_search_fn=line_search_fn)
        inputs = make(inputs)

        def closure():
            optimizer.zero_grad()
            loss = _loss(library, *params, inputs)
            loss.backward()
            return loss

        losses = [float(optimizer.step(closure)) for _ in range(3)]
        results.append((losses, [p.detach().cpu().numpy() for p in params]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-7)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


def test_lbfgs_minimizes_a_quadratic(device):
    target = agnostic.tensor([1.0, -2.0, 3.0], dtype=agnostic.float64, device=device)
    w = agnostic.nn.Parameter(agnostic.zeros(3, dtype=agnostic.float64, device=device))
    optimizer = agnostic.optim.LBFGS([w], line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = ((w - target) ** 2 * agnostic.tensor([1.0, 10.0, 100.0], dtype=agnostic.float64, device=device)).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    np.testing.assert_allclose(w.detach().cpu().numpy(), [1.0, -2.0, 3.0], atol=1e-6)


@pytest.mark.parametrize("make, message", [
    (lambda p: agnostic.optim.Adagrad(p, lr=-1), "Invalid learning rate"),
    (lambda p: agnostic.optim.Adagrad(p, lr_decay=-1), "Invalid lr_decay value"),
    (lambda p: agnostic.optim.Adadelta(p, rho=1.5), "Invalid rho value"),
    (lambda p: agnostic.optim.Adamax(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1"),
    (lambda p: agnostic.optim.NAdam(p, momentum_decay=-1), "Invalid momentum_decay value"),
    (lambda p: agnostic.optim.RAdam(p, eps=-1), "Invalid epsilon value"),
    (lambda p: agnostic.optim.LBFGS([{"params": p[:1]}, {"params": p[1:]}]), "doesn't support per-parameter"),
])
def test_bad_hyperparameters_raise_value_error(make, message):
    params = [agnostic.nn.Parameter(agnostic.zeros(2)), agnostic.nn.Parameter(agnostic.zeros(2))]
    with pytest.raises(ValueError, match=message):
        make(params)
