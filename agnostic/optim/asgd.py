"""Averaged stochastic gradient descent, as ``torch.optim.ASGD``."""

import numpy

from .._dtypes import float64, get_default_dtype
from .._tensor import wrap
from .._tensor_classes import Tensor
from ._single import check_hyperparameters, update_gradient
from .optimizer import Optimizer, advance, dense_gradients, scalar, zeros_state


def scalar_state(value, device):
    """A 0-dim state tensor on ``device`` holding ``value``, of PyTorch's scalar dtype for optimizer state (float64
    when that is the default dtype, else float32): ``eta`` and ``mu`` are rounded to it as in PyTorch."""
    dtype = numpy.float64 if get_default_dtype() is float64 else numpy.float32
    xp = device.backend.xp
    with device.backend.activate():
        return wrap(xp.asarray(value, dtype=dtype), device)


def _set(state_tensor, value):
    """Write a Python number into a 0-dim state tensor, rounded to its dtype."""
    with state_tensor._device.backend.activate():
        state_tensor._data[...] = value


class ASGD(Optimizer):
    """``torch.optim.ASGD``: SGD whose step ``eta`` decays as ``lr / (1 + lambd * lr * step) ** alpha``, with the
    parameter shrunk by ``1 - lambd * eta`` each step, and a running average ``ax`` of the parameters that starts at
    step ``t0`` (before it, ``ax`` follows the parameter).

    State per parameter: ``step``, ``eta``, ``mu`` (0-dim tensors on the parameter's device) and ``ax``.
    ``foreach`` and ``capturable`` are accepted and change nothing.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.ASGD([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyperparameters(lr, None, weight_decay, differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for param, param_state in self.state.items():  # checkpoints of old PyTorch versions kept numbers
            for key in ("eta", "mu"):
                if key in param_state and not isinstance(param_state[key], Tensor):
                    param_state[key] = scalar_state(float(param_state[key]), param._device)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            for p, grad in dense_gradients(self, group["params"]):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = scalar_state(0.0, p._device)
                    state["eta"] = scalar_state(lr, p._device)
                    state["mu"] = scalar_state(1.0, p._device)
                    state["ax"] = zeros_state(p)
                step = advance(state)
                grad = update_gradient(p, grad, group)
                eta, mu, ax = float(state["eta"].item()), float(state["mu"].item()), state["ax"]
                p.mul_(1 - lambd * eta)
                p.add_(grad, alpha=-eta)
                if mu != 1:
                    ax.add_((p - ax) * mu)
                else:
                    ax.copy_(p)
                _set(state["eta"], lr / ((1 + lambd * lr * step) ** alpha))
                _set(state["mu"], 1 / max(1, step - t0))
        return loss


__all__ = ["ASGD"]
