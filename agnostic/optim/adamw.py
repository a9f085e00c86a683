"""AdamW: Adam with decoupled weight decay (default 1e-2), as ``torch.optim.AdamW``."""

from .adam import Adam


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam that multiplies each parameter by ``1 - lr * weight_decay`` before the update
    instead of adding ``weight_decay * p`` to its gradient.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0]))
        >>> optimizer = agnostic.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> w.grad = agnostic.zeros(1)
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([0.9500], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


__all__ = ["AdamW"]
