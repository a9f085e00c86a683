"""Learning-rate schedulers: LambdaLR, StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, as PyTorch's."""

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .._tensor_classes import Tensor
from .optimizer import Optimizer

_EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, "
    "the closed form is used instead of the new chainable form, where available. Please open an issue if you are "
    "unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose."
)


def _lrs(optimizer):
    return [group["lr"].clone() if isinstance(group["lr"], Tensor) else group["lr"]
            for group in optimizer.param_groups]


class LRScheduler:
    """Base class, as ``torch.optim.lr_scheduler.LRScheduler``: the constructor records each group's
    ``initial_lr`` and takes the first step (epoch 0); ``step()`` advances ``last_epoch`` and writes the new
    learning rates into the optimizer's groups; ``state_dict()`` is every attribute but the optimizer.

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> class Halving(agnostic.optim.lr_scheduler.LRScheduler):
        ...     def get_lr(self):
        ...         return [base / 2 ** self.last_epoch for base in self.base_lrs]
        >>> scheduler = Halving(optimizer)
        >>> for _ in range(3):
        ...     optimizer.step()
        ...     scheduler.step()
        >>> scheduler.get_last_lr()
        [0.125]
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                initial = group["lr"]
                group.setdefault("initial_lr", initial.clone() if isinstance(initial, Tensor) else initial)
        else:
            for index, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{index}] when resuming "
                                   "scheduler with last_epoch >= 0; load the optimizer's state first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self):
        """Every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restore attributes from ``state_dict()``."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rates the last ``step()`` set, one per parameter group."""
        return self._last_lr

    def get_lr(self):
        """The learning rates of the current ``last_epoch`` (the chainable form)."""
        raise NotImplementedError

    def step(self, epoch=None):
        """Advance one epoch (call after ``optimizer.step()``); ``epoch`` (deprecated) jumps to that epoch."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you "
                "should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure "
                "to do this will result in PyTorch skipping the first value of the learning rate schedule. See more "
                "details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=2)
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(_EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            if isinstance(group["lr"], Tensor):
                group["lr"].fill_(lr)
            else:
                group["lr"] = lr
        self._last_lr = _lrs(self.optimizer)

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=3)


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``, with one function for all groups or one per group.

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=0.1)
        >>> scheduler = agnostic.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1 / (epoch + 1))
        >>> lrs = []
        >>> for _ in range(3):
        ...     lrs.append(optimizer.param_groups[0]["lr"])
        ...     optimizer.step()
        ...     scheduler.step()
        >>> [round(lr, 4) for lr in lrs]
        [0.1, 0.05, 0.0333]
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        if not isinstance(lr_lambda, (list, tuple)):
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        else:
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self):
        """Attributes but the optimizer; ``lr_lambdas`` keeps the ``__dict__`` of callable objects (functions and
        lambdas are not saved: None)."""
        state = {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        """Restore attributes; callable objects in ``lr_lambdas`` get their saved ``__dict__`` back."""
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for index, saved in enumerate(lr_lambdas):
            if saved is not None:
                self.lr_lambdas[index].__dict__.update(saved)

    def get_lr(self):
        self._warn_outside_step()
        return [base_lr * lmbda(self.last_epoch) for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> scheduler = agnostic.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(scheduler.get_last_lr()[0])
        ...     optimizer.step()
        ...     scheduler.step()
        >>> lrs
        [1.0, 1.0, 0.5, 0.5, 0.25]
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone epoch (repeated milestones count each time).

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> scheduler = agnostic.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[1, 3], gamma=0.1)
        >>> lrs = []
        >>> for _ in range(4):
        ...     lrs.append(round(scheduler.get_last_lr()[0], 4))
        ...     optimizer.step()
        ...     scheduler.step()
        >>> lrs
        [1.0, 0.1, 0.1, 0.01]
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base_lr * self.gamma ** bisect_right(milestones, self.last_epoch) for base_lr in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch.

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> scheduler = agnostic.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
        >>> for _ in range(3):
        ...     optimizer.step()
        ...     scheduler.step()
        >>> scheduler.get_last_lr()
        [0.125]
    """

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``, computed recursively from the
    current learning rate as PyTorch does (so changes made to it between steps carry on).

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> scheduler = agnostic.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
        >>> lrs = []
        >>> for _ in range(5):
        ...     lrs.append(round(scheduler.get_last_lr()[0], 4))
        ...     optimizer.step()
        ...     scheduler.step()
        >>> lrs
        [1.0, 0.8536, 0.5, 0.1464, 0.0]
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                    / 2 for base_lr in self.base_lrs]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / self.T_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)) * (group["lr"] - self.eta_min)
                + self.eta_min for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]


__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR"]
