"""Every learning-rate scheduler follows PyTorch's schedule step by step (learning rates and cycled momentum), and
its state dict resumes the schedule where it stopped."""

import math

import pytest

import agnostic
from agnostic.optim import lr_scheduler

# (name, optimizer keywords, scheduler keywords, steps), the scheduler built over one or two parameter groups.
SCHEDULES = [
    ("MultiplicativeLR", {}, {"lr_lambda": lambda epoch: 0.9}, 6),
    ("ConstantLR", {}, {"factor": 0.25, "total_iters": 3}, 6),
    ("LinearLR", {}, {"start_factor": 0.1, "end_factor": 0.9, "total_iters": 4}, 7),
    ("PolynomialLR", {}, {"total_iters": 5, "power": 2.0}, 8),
    ("CosineAnnealingWarmRestarts", {}, {"T_0": 3, "T_mult": 2, "eta_min": 0.01}, 14),
    ("CyclicLR", {"momentum": 0.9}, {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "mode": "triangular2"}, 14),
    ("CyclicLR", {"momentum": 0.9}, {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 2, "step_size_down": 3,
                                     "mode": "exp_range", "gamma": 0.9}, 12),
    ("OneCycleLR", {"momentum": 0.9}, {"max_lr": 0.5, "total_steps": 10}, 10),
    ("OneCycleLR", {"momentum": 0.9}, {"max_lr": [0.5, 0.2], "total_steps": 12, "three_phase": True,
                                       "anneal_strategy": "linear"}, 12),
]


def _optimizer(library, groups, **keywords):
    params = [{"params": [library.nn.Parameter(library.zeros(1))], "lr": 0.1 * (i + 1)} for i in range(groups)]
    return library.optim.SGD(params, lr=0.1, **keywords)


def _trace(scheduler, optimizer, steps, metric=None):
    """Each group's learning rate and momentum before each step, in one flat list."""
    rates = []
    for step in range(steps):
        for group in optimizer.param_groups:
            rates += [float(group["lr"]), float(group["momentum"])]
        optimizer.step()
        scheduler.step() if metric is None else scheduler.step(metric(step))
    return rates


def _groups_for(keywords):
    return 2 if any(isinstance(value, list) for value in keywords.values()) else 1


@pytest.mark.parametrize("name, optimizer_keywords, keywords, steps", SCHEDULES)
def test_schedule_matches_pytorch(name, optimizer_keywords, keywords, steps):
    torch = pytest.importorskip("torch")
    groups = _groups_for(keywords)
    ours_optimizer = _optimizer(agnostic, groups, **optimizer_keywords)
    theirs_optimizer = _optimizer(torch, groups, **optimizer_keywords)
    ours = _trace(getattr(lr_scheduler, name)(ours_optimizer, **keywords), ours_optimizer, steps)
    theirs = _trace(getattr(torch.optim.lr_scheduler, name)(theirs_optimizer, **keywords), theirs_optimizer, steps)
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)


def test_sequential_and_chained_schedules_match_pytorch():
    torch = pytest.importorskip("torch")
    traces = []
    for library in (agnostic, torch):
        schedulers = library.optim.lr_scheduler
        optimizer = _optimizer(library, 1)
        sequential = schedulers.SequentialLR(optimizer, [schedulers.LinearLR(optimizer, 0.2, total_iters=3),
                                                         schedulers.StepLR(optimizer, 2, gamma=0.5)], milestones=[3])
        first = _trace(sequential, optimizer, 9)
        optimizer = _optimizer(library, 1)
        chained = schedulers.ChainedScheduler([schedulers.ConstantLR(optimizer, factor=0.5, total_iters=3),
                                               schedulers.ExponentialLR(optimizer, gamma=0.8)])
        traces.append((first, _trace(chained, optimizer, 6)))
    assert traces[0][0] == pytest.approx(traces[1][0], rel=1e-12)
    assert traces[0][1] == pytest.approx(traces[1][1], rel=1e-12)


def test_reduce_on_plateau_matches_pytorch():
    torch = pytest.importorskip("torch")
    losses = [1.0, 0.8, 0.8, 0.81, 0.79, 0.79, 0.79, 0.79, 0.5, 0.5, 0.5, 0.5, 0.5]
    traces = []
    for library in (agnostic, torch):
        optimizer = _optimizer(library, 2)
        scheduler = library.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1, cooldown=1,
                                                                  min_lr=[0.02, 0.0])
        traces.append(_trace(scheduler, optimizer, len(losses), metric=losses.__getitem__))
    assert traces[0] == pytest.approx(traces[1], rel=1e-12)


def test_linear_warmup_then_cosine_by_hand():
    optimizer = _optimizer(agnostic, 1)
    scheduler = lr_scheduler.SequentialLR(optimizer, [lr_scheduler.LinearLR(optimizer, 0.5, total_iters=2),
                                                      lr_scheduler.CosineAnnealingLR(optimizer, T_max=2)],
                                          milestones=[2])
    rates = _trace(scheduler, optimizer, 5)[::2]
    assert rates == pytest.approx([0.05, 0.075, 0.1, 0.05, 0.0], abs=1e-12)


def test_cosine_warm_restarts_takes_fractional_epochs():
    optimizer = _optimizer(agnostic, 1)
    scheduler = lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=4)
    scheduler.step(2.0)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)
    scheduler.step(5.0)  # one epoch into the second period
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05 * (1 + math.cos(math.pi / 4)))


@pytest.mark.parametrize("make", [
    lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=20),
    lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4),
    lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2),
    lambda o: lr_scheduler.PolynomialLR(o, total_iters=10),
    lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(o, 0.5, 2), lr_scheduler.ExponentialLR(o, 0.9)],
                                        [2]),
])
def test_state_dict_resumes_the_schedule(make):
    optimizer = _optimizer(agnostic, 1, momentum=0.9)
    scheduler = make(optimizer)
    _trace(scheduler, optimizer, 5)
    saved_state, saved_groups = scheduler.state_dict(), [dict(group) for group in optimizer.param_groups]
    expected = _trace(scheduler, optimizer, 6)

    resumed_optimizer = _optimizer(agnostic, 1, momentum=0.9)
    resumed = make(resumed_optimizer)
    for group, saved in zip(resumed_optimizer.param_groups, saved_groups):
        group.update({key: value for key, value in saved.items() if key != "params"})
    resumed.load_state_dict(saved_state)
    assert _trace(resumed, resumed_optimizer, 6) == pytest.approx(expected)


def test_bad_arguments_raise_as_pytorch():
    optimizer = _optimizer(agnostic, 1)
    with pytest.raises(ValueError, match="between 0 and 1"):
        lr_scheduler.ConstantLR(optimizer, factor=2.0)
    with pytest.raises(ValueError, match="total_steps OR"):
        lr_scheduler.OneCycleLR(optimizer, max_lr=1.0)
    with pytest.raises(ValueError, match="must support momentum"):
        lr_scheduler.CyclicLR(_NoMomentum(), 0.1, 1.0)
    with pytest.raises(ValueError, match="one more than the number of milestone"):
        lr_scheduler.SequentialLR(optimizer, [lr_scheduler.ConstantLR(optimizer)], milestones=[1])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([lr_scheduler.ReduceLROnPlateau(optimizer)])
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(optimizer, factor=1.5)
    with pytest.raises(ValueError, match="Tried to step 3 times. The specified number of total steps is 2"):
        scheduler = lr_scheduler.OneCycleLR(_optimizer(agnostic, 1, momentum=0.9), max_lr=1.0, total_steps=2)
        for _ in range(3):
            scheduler.optimizer.step()
            scheduler.step()


class _NoMomentum(agnostic.optim.Optimizer):
    def __init__(self):
        super().__init__([agnostic.nn.Parameter(agnostic.zeros(1))], {"lr": 0.1})

    def step(self, closure=None):
        return None
