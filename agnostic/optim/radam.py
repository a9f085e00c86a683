"""RAdam (Adam with a rectified adaptive learning rate), as ``torch.optim.RAdam``."""

import math

from ._single import check_hyperparameters, parameters_to_update, update_gradient
from .optimizer import Optimizer, scalar


class RAdam(Optimizer):
    """``torch.optim.RAdam``: Adam's moments; while the variance of the adaptive rate is intractable (``rho_t <=
    5``) the step is plain momentum, ``p -= lr * m_hat``, and after it Adam's step scaled by the rectification term;
    ``decoupled_weight_decay`` gives RAdamW.

    State per parameter: ``step``, ``exp_avg`` and ``exp_avg_sq``.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.RAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        check_hyperparameters(lr, eps, weight_decay, differentiable, betas=betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr = scalar(group["lr"])
            rho_inf = 2 / (1 - beta2) - 1
            for p, state, step in parameters_to_update(self, group, "exp_avg", "exp_avg_sq"):
                grad = update_gradient(p, p.grad, group, decoupled=group["decoupled_weight_decay"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                bias_correction2 = 1 - beta2 ** step
                corrected_exp_avg = exp_avg / (1 - beta1 ** step)
                rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
                if rho_t > 5.0:
                    rectification = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                              / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                    adaptive_lr = math.sqrt(bias_correction2) / (exp_avg_sq.sqrt() + group["eps"])
                    p.add_(corrected_exp_avg * lr * adaptive_lr * rectification, alpha=-1.0)
                else:
                    p.add_(corrected_exp_avg * lr, alpha=-1.0)
        return loss


__all__ = ["RAdam"]
