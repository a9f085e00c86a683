"""Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``."""

from ._single import check_hyperparameters, parameters_to_update, update_gradient
from .optimizer import Optimizer, scalar


class Adamax(Optimizer):
    """``torch.optim.Adamax``: ``m = lerp(m, g, 1 - beta1)``; ``u = max(beta2 * u, |g| + eps)``;
    ``p -= lr / (1 - beta1 ** step) * m / u``.

    State per parameter: ``step``, ``exp_avg`` (m) and ``exp_inf`` (u).

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.Adamax([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        check_hyperparameters(lr, eps, weight_decay, differentiable, betas=betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p, state, step in parameters_to_update(self, group, "exp_avg", "exp_inf"):
                grad = update_gradient(p, p.grad, group)
                exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_inf.copy_((exp_inf * beta2).maximum(grad.abs() + group["eps"]))
                p.add_(exp_avg / exp_inf, alpha=-scalar(group["lr"]) / (1 - beta1 ** step))
        return loss


__all__ = ["Adamax"]
