"""NAdam (Adam with Nesterov momentum and momentum decay), as ``torch.optim.NAdam``."""

from ._single import check_hyperparameters, parameters_to_update, update_gradient
from .optimizer import Optimizer, scalar, step_tensor


class NAdam(Optimizer):
    """``torch.optim.NAdam``: Adam's moments, with the momentum ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t *
    momentum_decay))`` and its running product applied Nesterov-style; ``decoupled_weight_decay`` gives NAdamW.

    State per parameter: ``step``, ``mu_product``, ``exp_avg`` and ``exp_avg_sq``.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.NAdam([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.8944, -1.8944], requires_grad=True)
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        check_hyperparameters(lr, eps, weight_decay, differentiable, betas=betas, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, momentum_decay = scalar(group["lr"]), group["eps"], group["momentum_decay"]
            for p, state, step in parameters_to_update(self, group, "exp_avg", "exp_avg_sq",
                                                       mu_product=lambda: step_tensor().add_(1.0)):
                grad = update_gradient(p, p.grad, group, decoupled=group["decoupled_weight_decay"])
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                mu_product = state["mu_product"].mul_(mu).item()
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                denom = (exp_avg_sq / (1 - beta2 ** step)).sqrt() + eps
                p.add_(grad / denom, alpha=-lr * (1.0 - mu) / (1.0 - mu_product))
                p.add_(exp_avg / denom, alpha=-lr * mu_next / (1.0 - mu_product * mu_next))
        return loss


__all__ = ["NAdam"]
