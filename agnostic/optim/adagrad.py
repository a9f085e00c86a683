"""Adagrad (learning-rate decay, initial accumulator, weight decay, maximize), as ``torch.optim.Adagrad``."""

from ._single import check_hyperparameters, parameters_to_update, update_gradient
from .optimizer import Optimizer, scalar, step_tensor, zeros_state
from ._sparse_gradients import add_sparse_, is_sparse_gradient, like_sparse, values_at


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``: ``sum += g * g``; ``p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps)``,
    with ``g`` the gradient (negated if ``maximize``) plus ``weight_decay * p``.

    State per parameter: ``step`` and ``sum`` (starting at ``initial_accumulator_value``). A sparse gradient
    (``nn.Embedding(sparse=True)``) updates ``sum`` and the parameter at its rows only, as PyTorch's (which refuses
    it with ``weight_decay``).

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.Adagrad([w], lr=0.5)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.5000, -1.5000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_hyperparameters(lr, eps, weight_decay, differentiable, lr_decay=lr_decay,
                              initial_accumulator_value=initial_accumulator_value)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:  # PyTorch makes Adagrad's state up front
            for p in group["params"]:
                state = self.state[p]
                state["step"] = step_tensor()
                state["sum"] = zeros_state(p).add_(group["initial_accumulator_value"])

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p, state, step in parameters_to_update(self, group, sparse=True):
                decayed_lr = scalar(group["lr"]) / (1 + (step - 1) * group["lr_decay"])
                if is_sparse_gradient(p.grad):
                    _sparse_update(p, state["sum"], group, decayed_lr)
                    continue
                grad = update_gradient(p, p.grad, group)
                state["sum"].add_(grad * grad)
                p.add_(grad / (state["sum"].sqrt() + group["eps"]), alpha=-decayed_lr)
        return loss


def _sparse_update(param, state_sum, group, decayed_lr):
    """PyTorch's update for a sparse gradient: ``sum`` and the parameter change at the gradient's rows only."""
    grad = -param.grad if group["maximize"] else param.grad
    if group["weight_decay"] != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    grad = grad.coalesce()  # the update is not linear in the gradient: each index once
    values = grad._values()
    add_sparse_(state_sum, like_sparse(grad, values * values))
    std = values_at(state_sum, grad).sqrt() + group["eps"]
    add_sparse_(param, like_sparse(grad, values / std), alpha=-decayed_lr)


__all__ = ["Adagrad"]
