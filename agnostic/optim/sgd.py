"""SGD: stochastic gradient descent with momentum, dampening, Nesterov, weight decay and maximize, as PyTorch."""

from . import _fused
from .optimizer import Optimizer, scalar, zeros_state
from ._sparse_gradients import add_sparse_, is_sparse_gradient


def _check_common(lr, weight_decay, differentiable):
    if scalar(lr) < 0.0:
        raise ValueError(f"Invalid learning rate: {lr}")
    if weight_decay < 0.0:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: agnostic optimizers update parameters "
                                  "in place, outside autograd")


class SGD(Optimizer):
    """``torch.optim.SGD``: with ``g`` the gradient (negated if ``maximize``) plus ``weight_decay * p``,
    ``b = g`` at the first step and ``b = momentum * b + (1 - dampening) * g`` after; the step uses
    ``g + momentum * b`` (``nesterov``) or ``b``; ``p -= lr * step``.

    On CUDA all parameters of a group with one dtype update in one fused kernel (``foreach=False`` updates them one
    by one with ordinary array operations). A sparse gradient (``nn.Embedding(sparse=True)``) updates only its rows,
    with a sparse momentum buffer, as PyTorch's; with ``weight_decay`` PyTorch refuses it, and so does this.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, 2.0]))
        >>> optimizer = agnostic.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     optimizer.zero_grad()
        ...     (w ** 2).sum().backward()
        ...     optimizer.step()
        >>> w
        Parameter containing:
        tensor([0.4600, 0.9200], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_common(lr, weight_decay, differentiable)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            sparse = [p for p in group["params"] if is_sparse_gradient(p.grad)]
            for p in sparse:
                self._sparse_update(p, group)
            if sparse:  # the rest take the fused update
                group = dict(group, params=[p for p in group["params"] if not is_sparse_gradient(p.grad)])
            params, grads = self._params_with_grad(group)
            if not params:
                continue
            momentum = scalar(group["momentum"])
            scalars = dict(weight_decay=scalar(group["weight_decay"]), momentum=momentum,
                           one_minus_dampening=1 - scalar(group["dampening"]), neg_lr=-scalar(group["lr"]))
            flags = dict(maximize=int(group["maximize"]), nesterov=int(group["nesterov"]), first=0)
            if momentum == 0:
                _fused.run(_fused.SGD, [[p._data for p in params], grads, None], scalars, flags, group["foreach"])
                continue
            # A first step copies the (decayed) gradient into a new buffer: its own launch, not a per-element branch
            for first in (False, True):
                chosen = [i for i, p in enumerate(params)
                          if (self.state[p].get("momentum_buffer") is None) == first]
                if not chosen:
                    continue
                buffers = []
                for i in chosen:
                    state = self.state[params[i]]
                    if first:
                        state["momentum_buffer"] = zeros_state(params[i])
                    buffers.append(state["momentum_buffer"]._data)
                flags["first"] = int(first)
                _fused.run(_fused.SGD, [[params[i]._data for i in chosen], [grads[i] for i in chosen], buffers],
                           scalars, flags, group["foreach"])
        return loss

    def _sparse_update(self, param, group):
        """PyTorch's single-tensor update for a sparse gradient: the momentum buffer starts as a copy of it and
        stays sparse; the parameter changes at the gradient's (and buffer's) rows only."""
        grad = -param.grad if group["maximize"] else param.grad
        if scalar(group["weight_decay"]) != 0:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        momentum = scalar(group["momentum"])
        if momentum != 0:
            state = self.state[param]
            buffer = state.get("momentum_buffer")
            if buffer is None:
                buffer = grad.detach().clone()
            elif buffer.is_sparse:  # coalesced first, as PyTorch's mul_ does: the buffer's entries stay bounded
                buffer = buffer.coalesce() * momentum + grad * (1 - scalar(group["dampening"]))
            else:
                add_sparse_(buffer.mul_(momentum), grad, alpha=1 - scalar(group["dampening"]))
            state["momentum_buffer"] = buffer
            grad = grad + buffer * momentum if group["nesterov"] else buffer
        if grad.is_sparse:
            add_sparse_(param, grad, alpha=-scalar(group["lr"]))
        else:
            param.add_(grad, alpha=-scalar(group["lr"]))


__all__ = ["SGD"]
