"""Stochastic weight averaging and exponential moving averages of a model, as ``torch.optim.swa_utils``."""

import itertools
import math
from copy import deepcopy

from .._dtypes import int64
from ..autograd.grad_mode import no_grad
from ..nn.module import Module
from ..nn.normalization import _BatchNorm, _InstanceNorm
from ..ops.creation import tensor
from .lr_scheduler import LRScheduler, _per_group


def _is_floating_or_complex(value):
    return value.is_floating_point() or value.is_complex()


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place update of a list of averaged tensors towards the current ones: ``ema = decay * ema + (1 - decay)
    * current`` (for ``AveragedModel(multi_avg_fn=...)``).

        >>> ema, current = [agnostic.tensor([0.0, 1.0])], [agnostic.tensor([1.0, 1.0])]
        >>> agnostic.optim.swa_utils.get_ema_multi_avg_fn(0.9)(ema, current, 1)
        >>> ema
        [tensor([0.1000, 1.0000])]
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        if _is_floating_or_complex(ema_param_list[0]):
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.lerp_(p_model, 1 - decay)
        else:
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place update of a list of averaged tensors to the running mean once ``current`` is added:
    ``avg += (current - avg) / (num_averaged + 1)`` (for ``AveragedModel(multi_avg_fn=...)``).

        >>> average, current = [agnostic.tensor([1.0, 2.0])], [agnostic.tensor([3.0, 4.0])]
        >>> agnostic.optim.swa_utils.get_swa_multi_avg_fn()(average, current, 1)
        >>> average
        [tensor([2., 3.])]
    """
    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        if _is_floating_or_complex(averaged_param_list[0]):
            # a tensor count gives a float32 weight, as PyTorch's 1 / (n + 1)
            weight = float(1 / (num_averaged + 1))
            for p_averaged, p_model in zip(averaged_param_list, current_param_list):
                p_averaged.lerp_(p_model, weight)
        else:
            for p_averaged, p_model in zip(averaged_param_list, current_param_list):
                p_averaged.copy_(p_averaged + (p_model - p_averaged) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """The exponential moving average of one tensor: ``decay * ema + (1 - decay) * current`` (for
    ``AveragedModel(avg_fn=...)``).

        >>> agnostic.optim.swa_utils.get_ema_avg_fn(0.5)(agnostic.tensor([0.0]), agnostic.tensor([1.0]), 3)
        tensor([0.5000])
    """
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """The running mean of one tensor once ``current`` is added: ``avg + (current - avg) / (num_averaged + 1)``
    (for ``AveragedModel(avg_fn=...)``).

        >>> agnostic.optim.swa_utils.get_swa_avg_fn()(agnostic.tensor([1.0]), agnostic.tensor([4.0]), 2)
        tensor([2.])
    """
    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """``torch.optim.swa_utils.AveragedModel``: a deep copy of ``model`` (moved to ``device`` when given) whose
    parameters ``update_parameters(model)`` averages: the first call copies them, later ones apply ``avg_fn`` (one
    tensor at a time) or ``multi_avg_fn`` (lists of tensors), by default the running mean. Buffers are copied from
    ``model`` each time, or averaged too with ``use_buffers=True``. ``n_averaged`` (an int64 buffer) counts the
    updates; calling the averaged model runs the copy.

        >>> model = agnostic.nn.Linear(1, 1, bias=False)
        >>> swa_model = agnostic.optim.swa_utils.AveragedModel(model)
        >>> for value in (1.0, 2.0, 6.0):
        ...     with agnostic.no_grad():
        ...         _ = model.weight.fill_(value)
        ...     swa_model.update_parameters(model)
        >>> swa_model.module.weight
        Parameter containing:
        tensor([[3.]], requires_grad=True)
        >>> swa_model.n_averaged
        tensor(3)
        >>> swa_model(agnostic.tensor([[2.0]]))
        tensor([[6.]], grad_fn=<...>)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Run the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Fold ``model``'s current parameters (and buffers, with ``use_buffers``) into the average."""
        if self.use_buffers:
            averaged = itertools.chain(self.module.parameters(), self.module.buffers())
            current = itertools.chain(model.parameters(), model.buffers())
        else:
            averaged, current = self.parameters(), model.parameters()
        averaged_detached, current_detached = [], []
        first = bool(self.n_averaged == 0)
        for p_averaged, p_model in zip(averaged, current):
            p_model = p_model.detach().to(p_averaged.device)
            averaged_detached.append(p_averaged.detach())
            current_detached.append(p_model)
            if first:
                p_averaged.detach().copy_(p_model)
        if not first:
            if self.multi_avg_fn is not None:
                for averaged_group, current_group in _by_device_and_dtype(averaged_detached, current_detached):
                    self.multi_avg_fn(averaged_group, current_group, self.n_averaged.to(averaged_group[0].device))
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for p_averaged, p_model in zip(averaged_detached, current_detached):
                    n_averaged = self.n_averaged.to(p_averaged.device)
                    p_averaged.copy_(avg_fn(p_averaged, p_model, n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


def _by_device_and_dtype(averaged, current):
    """Pairs of lists of averaged and current tensors, one pair per (device, dtype), in first-seen order."""
    groups = {}
    for p_averaged, p_model in zip(averaged, current):
        group = groups.setdefault((str(p_averaged.device), p_averaged.dtype), ([], []))
        group[0].append(p_averaged)
        group[1].append(p_model)
    return list(groups.values())


@no_grad()
def update_bn(loader, model, device=None):
    """Recompute the running statistics of ``model``'s batch-norm layers with one pass over ``loader`` (a batch may
    be a tensor, or a list/tuple whose first item is the input), as a cumulative average; the layers' momentum and
    the model's training mode are restored afterwards.

        >>> model = agnostic.nn.BatchNorm1d(1)
        >>> loader = [agnostic.tensor([[1.0], [3.0]]), agnostic.tensor([[5.0], [7.0]])]
        >>> agnostic.optim.swa_utils.update_bn(loader, model)
        >>> model.running_mean
        tensor([4.])
    """
    momenta = {}
    for module in model.modules():
        # agnostic's instance norms derive from _BatchNorm; PyTorch's don't, and update_bn leaves them alone
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """``torch.optim.swa_utils.SWALR``: anneals each group's learning rate to ``swa_lr`` (one value, or one per
    group) over ``anneal_epochs`` steps, along a cosine (``"cos"``) or a straight line (``"linear"``), then holds it.

        >>> optimizer = agnostic.optim.SGD([agnostic.nn.Parameter(agnostic.zeros(1))], lr=1.0)
        >>> scheduler = agnostic.optim.swa_utils.SWALR(optimizer, swa_lr=0.1, anneal_epochs=2,
        ...                                            anneal_strategy="linear")
        >>> rates = []
        >>> for _ in range(3):
        ...     optimizer.step()
        ...     scheduler.step()
        ...     rates.append(round(scheduler.get_last_lr()[0], 4))
        >>> rates
        [0.55, 0.1, 0.1]
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        swa_lrs = _per_group("swa_lr", optimizer, swa_lr)
        for value, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = value
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        """The rates of this step: each group's rate moved from the previous one towards ``swa_lr`` by the
        annealing curve (PyTorch's chainable form, so another scheduler may change ``lr`` in between)."""
        self._warn_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        """Every attribute except the optimizer and the annealing function (restored from its name)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Restore attributes from ``state_dict()``."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)


__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]
