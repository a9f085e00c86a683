"""RMSprop (smoothing ``alpha``, ``eps``, momentum, centered, weight decay, maximize), as ``torch.optim.RMSprop``."""

from . import _fused
from .optimizer import Optimizer, advance, scalar, step_tensor, zeros_state


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``: ``v = alpha * v + (1 - alpha) * g * g``; ``centered`` also keeps
    ``a = lerp(a, g, 1 - alpha)`` and uses ``v - a * a``; ``d = sqrt(...) + eps``; then ``p -= lr * g / d``, or with
    momentum ``b = momentum * b + g / d`` and ``p -= lr * b``.

    State per parameter: ``step``, ``square_avg``, and ``momentum_buffer`` / ``grad_avg`` when used. On CUDA a
    group's parameters of one dtype update in one fused kernel (``foreach=False``: one by one); ``capturable`` is
    accepted and changes nothing.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.RMSprop([w], lr=0.01)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        if differentiable:
            raise NotImplementedError("differentiable=True is not supported: agnostic optimizers update parameters "
                                      "in place, outside autograd")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered, weight_decay=weight_decay,
                        capturable=capturable, foreach=foreach, maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads = self._params_with_grad(group)
            if not params:
                continue
            momentum, centered = scalar(group["momentum"]), group["centered"]
            states = []
            for p in params:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["square_avg"] = zeros_state(p)
                    if momentum > 0:
                        state["momentum_buffer"] = zeros_state(p)
                    if centered:
                        state["grad_avg"] = zeros_state(p)
                advance(state)
                states.append(state)
            alpha = scalar(group["alpha"])
            scalars = dict(weight_decay=scalar(group["weight_decay"]), alpha=alpha, one_minus_alpha=1 - alpha,
                           alpha_complement=alpha, eps=group["eps"], momentum=momentum, neg_lr=-scalar(group["lr"]))
            flags = dict(maximize=int(group["maximize"]), centered=int(centered))
            lists = [[p._data for p in params], grads, [s["square_avg"]._data for s in states],
                     [s["momentum_buffer"]._data for s in states] if momentum > 0 else None,
                     [s["grad_avg"]._data for s in states] if centered else None]
            _fused.run(_fused.RMSPROP, lists, scalars, flags, group["foreach"])
        return loss


__all__ = ["RMSprop"]
