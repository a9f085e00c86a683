"""Adadelta (``rho``, ``eps``, weight decay, maximize), as ``torch.optim.Adadelta``."""

from ._single import check_hyperparameters, parameters_to_update, update_gradient
from .optimizer import Optimizer, scalar


class Adadelta(Optimizer):
    """``torch.optim.Adadelta``: ``v = rho * v + (1 - rho) * g * g``;
    ``d = sqrt(u + eps) / sqrt(v + eps) * g``; ``u = rho * u + (1 - rho) * d * d``; ``p -= lr * d``.

    State per parameter: ``step``, ``square_avg`` (v) and ``acc_delta`` (u).

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.Adadelta([w], lr=1.0)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.9968, -1.9968], requires_grad=True)
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check_hyperparameters(lr, eps, weight_decay, differentiable)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            rho, eps = group["rho"], group["eps"]
            for p, state, _ in parameters_to_update(self, group, "square_avg", "acc_delta"):
                grad = update_gradient(p, p.grad, group)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).add_(grad * grad, alpha=1 - rho)
                delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * grad
                acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
                p.add_(delta, alpha=-scalar(group["lr"]))
        return loss


__all__ = ["Adadelta"]
