"""Learning-rate schedulers: PyTorch's schedules (closed forms and recursive updates), get_last_lr, state_dict."""

import math
import warnings

import pytest

import agnostic
from agnostic import optim
from agnostic.optim import lr_scheduler


def _optimizer(lrs=(0.1,)):
    return optim.SGD([{"params": [agnostic.zeros(1)], "lr": lr} for lr in lrs], lr=lrs[0])


def _run(scheduler, epochs):
    """The learning rates of each epoch: the constructor's, then after each optimizer/scheduler step."""
    seen = [scheduler.get_last_lr()]
    for _ in range(epochs):
        scheduler.optimizer.step()
        scheduler.step()
        seen.append(scheduler.get_last_lr())
    return seen


def test_step_lr():
    scheduler = lr_scheduler.StepLR(_optimizer(), step_size=3, gamma=0.5)
    assert [lrs[0] for lrs in _run(scheduler, 7)] == pytest.approx([0.1] * 3 + [0.05] * 3 + [0.025] * 2)


def test_multi_step_lr_counts_repeated_milestones():
    scheduler = lr_scheduler.MultiStepLR(_optimizer(), milestones=[2, 4, 4], gamma=0.1)
    assert [lrs[0] for lrs in _run(scheduler, 5)] == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.0001, 0.0001])


def test_exponential_lr():
    scheduler = lr_scheduler.ExponentialLR(_optimizer(), gamma=0.9)
    assert [lrs[0] for lrs in _run(scheduler, 4)] == pytest.approx([0.1 * 0.9 ** e for e in range(5)])


def test_cosine_annealing_follows_the_closed_form_and_restarts():
    t_max, eta_min = 5, 0.01
    scheduler = lr_scheduler.CosineAnnealingLR(_optimizer((0.1, 1.0)), T_max=t_max, eta_min=eta_min)
    seen = _run(scheduler, 12)
    for epoch, lrs in enumerate(seen):
        for base, lr in zip((0.1, 1.0), lrs):
            expected = eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / t_max)) / 2
            assert lr == pytest.approx(expected, abs=1e-12)


def test_lambda_lr_per_group():
    scheduler = lr_scheduler.LambdaLR(_optimizer((0.1, 1.0)), [lambda e: 0.5 ** e, lambda e: e + 1])
    assert _run(scheduler, 3) == [pytest.approx(x) for x in ([0.1, 1.0], [0.05, 2.0], [0.025, 3.0], [0.0125, 4.0])]
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        lr_scheduler.LambdaLR(_optimizer((0.1, 1.0)), [lambda e: 1])


def test_scheduler_writes_the_optimizer_lr():
    opt = _optimizer()
    scheduler = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    p = opt.param_groups[0]["params"][0]
    p.grad = agnostic.ones(1)
    opt.step()
    scheduler.step()
    assert opt.param_groups[0]["lr"] == pytest.approx(0.05)
    assert opt.param_groups[0]["initial_lr"] == 0.1
    opt.step()
    assert p.item() == pytest.approx(-0.1 - 0.05)


@pytest.mark.parametrize("name, options", [
    ("StepLR", dict(step_size=2, gamma=0.3)),
    ("MultiStepLR", dict(milestones=[1, 3], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.8)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.001)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1))),
])
def test_matches_pytorch(name, options):
    torch = pytest.importorskip("torch")
    ours = getattr(lr_scheduler, name)(_optimizer((0.1, 0.7)), **options)
    torch_opt = torch.optim.SGD([{"params": [torch.zeros(1)], "lr": lr} for lr in (0.1, 0.7)], lr=0.1)
    theirs = getattr(torch.optim.lr_scheduler, name)(torch_opt, **options)
    expected = [theirs.get_last_lr()]
    for _ in range(9):
        torch_opt.step()
        theirs.step()
        expected.append(theirs.get_last_lr())
    assert _run(ours, 9) == [pytest.approx(lrs) for lrs in expected]


def test_state_dict_round_trip():
    opt = _optimizer()
    scheduler = lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    _run(scheduler, 3)
    state = scheduler.state_dict()
    assert "optimizer" not in state
    assert state["last_epoch"] == 3 and state["step_size"] == 2 and state["base_lrs"] == [0.1]
    restored_opt = _optimizer()
    restored_opt.load_state_dict(opt.state_dict())  # the chainable form continues from the optimizer's lr
    restored = lr_scheduler.StepLR(restored_opt, step_size=7, gamma=0.9)
    restored.load_state_dict(state)
    assert restored.step_size == 2 and restored.last_epoch == 3
    assert _run(restored, 2)[-1] == _run(scheduler, 2)[-1]


def test_lambda_state_dict_keeps_callable_objects_only():
    class Warmup:
        def __init__(self):
            self.factor = 2

        def __call__(self, epoch):
            return self.factor

    warmup = Warmup()
    scheduler = lr_scheduler.LambdaLR(_optimizer((0.1, 0.2)), [warmup, lambda e: 1])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"factor": 2}, None]
    warmup.factor = 5
    scheduler.load_state_dict(state)
    assert warmup.factor == 2 and "lr_lambdas" in state


def test_resuming_needs_initial_lr():
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(_optimizer(), step_size=1, last_epoch=3)


def test_warnings_as_pytorch():
    scheduler = lr_scheduler.StepLR(_optimizer(), step_size=1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()
    with pytest.warns(UserWarning, match="get_last_lr"):
        scheduler.get_lr()
    fine = lr_scheduler.StepLR(_optimizer(), step_size=1)
    fine.optimizer.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fine.step()


def test_step_with_epoch_uses_the_closed_form():
    scheduler = lr_scheduler.StepLR(_optimizer(), step_size=2, gamma=0.5)
    scheduler.optimizer.step()
    with pytest.warns(UserWarning, match="epoch parameter"):
        scheduler.step(5)
    assert scheduler.get_last_lr() == [pytest.approx(0.1 * 0.25)]
