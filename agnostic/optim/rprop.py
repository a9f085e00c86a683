"""Resilient backpropagation (a per-element step size driven by gradient signs), as ``torch.optim.Rprop``."""

from .._tensor_classes import Tensor
from ..ops.complex import view_as_real
from ..ops.creation import full_like
from ..ops.elementwise import where
from ._single import check_hyperparameters
from .asgd import scalar_state
from .optimizer import Optimizer, advance, dense_gradients, scalar, step_tensor, zeros_state


class Rprop(Optimizer):
    """``torch.optim.Rprop``: each element's step size grows by ``etaplus`` while its gradient keeps its sign and
    shrinks by ``etaminus`` when the sign flips (that element then skips the step), clamped to ``step_sizes``;
    ``p -= step_size * sign(g)``. Complex parameters are updated as pairs of real numbers.

    State per parameter: ``step``, ``prev`` (the last gradient used) and ``step_size``. ``foreach`` is accepted
    and changes nothing; ``capturable`` keeps ``step`` on the parameter's device, as in PyTorch.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.Rprop([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyperparameters(lr, None, 0, differentiable)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p, grad in dense_gradients(self, group["params"]):
                state = self.state[p]
                if len(state) == 0:
                    lr = scalar(group["lr"])
                    state["step"] = scalar_state(0.0, p._device) if group["capturable"] else step_tensor()
                    state["prev"] = zeros_state(p)
                    state["step_size"] = full_like(grad, complex(lr, lr) if p.is_complex() else lr)
                advance(state)
                if group["maximize"]:
                    grad = -grad
                param, prev, step_size = p, state["prev"], state["step_size"]
                if p.is_complex():  # the real and imaginary parts are two independent real numbers
                    param, prev, step_size, grad = (view_as_real(t) for t in (p, prev, step_size, grad))
                sign = (grad * prev).sign()
                # sign > 0: grow; < 0: shrink; 0: keep; NaN stays NaN, as PyTorch's masked writes leave it
                factor = where(sign > 0, etaplus, where(sign < 0, etaminus, where(sign == 0, 1.0, sign)))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = where(factor == etaminus, 0.0, grad)  # a flipped sign skips this step
                param.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss


__all__ = ["Rprop"]
