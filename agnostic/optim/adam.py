"""Adam (with AMSGrad, L2 or decoupled weight decay, maximize), as ``torch.optim.Adam``."""

from ..ops.creation import zeros
from . import _fused
from .optimizer import Optimizer, advance, scalar, step_tensor, zeros_state


class Adam(Optimizer):
    """``torch.optim.Adam``: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2) * g * g`` (AMSGrad
    keeps the running maximum of ``v``), then ``p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``.

    ``weight_decay`` adds ``weight_decay * p`` to the gradient, or with ``decoupled_weight_decay`` (AdamW)
    multiplies ``p`` by ``1 - lr * weight_decay`` first. State per parameter: ``step`` (a float32 CPU tensor),
    ``exp_avg``, ``exp_avg_sq`` and, with ``amsgrad``, ``max_exp_avg_sq``. On CUDA a group's parameters of one
    dtype update in one fused kernel (``foreach=False``: one by one); ``fused`` is accepted and changes nothing.
    ``capturable=True`` keeps each ``step`` on its parameter's device and computes the bias corrections there, in
    the fused update, as PyTorch's capturable Adam: ``step()`` can then be captured in a CUDA graph.

        >>> model = agnostic.nn.Linear(2, 1)
        >>> optimizer = agnostic.optim.Adam(model.parameters(), lr=1e-3)
        >>> before = model.bias.item()
        >>> model(agnostic.ones(4, 2)).sum().backward()
        >>> optimizer.step()
        >>> round(before - model.bias.item(), 6)
        0.001
        >>> sorted(optimizer.state[model.bias])
        ['exp_avg', 'exp_avg_sq', 'step']
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= scalar(betas[0]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= scalar(betas[1]) < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if differentiable:
            raise NotImplementedError("differentiable=True is not supported: agnostic optimizers update parameters "
                                      "in place, outside autograd")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        defaults = dict(lr=lr, betas=tuple(scalar(b) for b in betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            params, grads = self._params_with_grad(group)
            if not params:
                continue
            if group["capturable"]:
                self._step_on_the_device(group, params, grads)
                continue
            amsgrad = group["amsgrad"]
            by_step = {}  # parameters at the same step share bias corrections, hence one launch
            for index, p in enumerate(params):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = zeros_state(p)
                by_step.setdefault(advance(state), []).append(index)
            beta1, beta2 = (scalar(b) for b in group["betas"])
            lr, weight_decay = scalar(group["lr"]), scalar(group["weight_decay"])
            flags = dict(maximize=int(group["maximize"]), decoupled=int(group["decoupled_weight_decay"]),
                         amsgrad=int(amsgrad))
            for step, indices in by_step.items():
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                scalars = dict(weight_decay=weight_decay, decay=1 - lr * weight_decay, one_minus_beta1=1 - beta1,
                               beta1_complement=beta1, beta2=beta2, one_minus_beta2=1 - beta2,
                               bias_correction2_sqrt=bias_correction2 ** 0.5, eps=group["eps"],
                               neg_step_size=-(lr / bias_correction1))
                states = [self.state[params[i]] for i in indices]
                lists = [[params[i]._data for i in indices], [grads[i] for i in indices],
                         [s["exp_avg"]._data for s in states], [s["exp_avg_sq"]._data for s in states],
                         [s["max_exp_avg_sq"]._data for s in states] if amsgrad else None]
                _fused.run(_fused.ADAM, lists, scalars, flags, group["foreach"])
        return loss

    def _step_on_the_device(self, group, params, grads):
        """``capturable=True``: each parameter's step count is a float32 tensor on its device (moved there if a
        checkpoint put it elsewhere), advanced by one launch, and the update computes the bias corrections from it
        on the device: nothing in the step is a number computed on the host, so a CUDA graph can capture it."""
        amsgrad = group["amsgrad"]
        for p in params:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = zeros((), device=p.device)
                state["exp_avg"] = zeros_state(p)
                state["exp_avg_sq"] = zeros_state(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_state(p)
            if state["step"].device != p.device:
                state["step"] = state["step"].to(p.device)
        states = [self.state[p] for p in params]
        steps = [s["step"]._data for s in states]
        _fused.run(_fused.COUNT, [steps], {}, {}, group["foreach"])
        beta1, beta2 = (scalar(b) for b in group["betas"])
        lr, weight_decay = scalar(group["lr"]), scalar(group["weight_decay"])
        scalars = dict(weight_decay=weight_decay, decay=1 - lr * weight_decay, one_minus_beta1=1 - beta1,
                       beta1_complement=beta1, beta1=beta1, beta2=beta2, one_minus_beta2=1 - beta2, eps=group["eps"],
                       lr=lr)
        flags = dict(maximize=int(group["maximize"]), decoupled=int(group["decoupled_weight_decay"]),
                     amsgrad=int(amsgrad))
        lists = [[p._data for p in params], grads, [s["exp_avg"]._data for s in states],
                 [s["exp_avg_sq"]._data for s in states],
                 [s["max_exp_avg_sq"]._data for s in states] if amsgrad else None, steps]
        _fused.run(_fused.ADAM_CAPTURABLE, lists, scalars, flags, group["foreach"])


__all__ = ["Adam"]
