"""Adafactor (second moments kept as row and column factors), as ``torch.optim.Adafactor``."""

from .._dtypes import finfo
from .._tensor_classes import Tensor
from .optimizer import Optimizer, advance, dense_gradients, scalar, step_tensor, zeros_state


class Adafactor(Optimizer):
    """``torch.optim.Adafactor``: for a gradient of 2 or more dimensions the second moment is kept as a row factor
    and a column factor of its last two dimensions (for a vector, in full); ``beta2`` grows as ``1 - step **
    beta2_decay``; the step is ``max(eps2, RMS(p)) * min(lr, 1 / sqrt(step))`` times the update clipped to RMS
    ``d``; ``weight_decay`` is decoupled (``p *= 1 - lr * weight_decay``). ``eps[0]`` of None means the parameter
    dtype's machine epsilon.

    State per parameter: ``step`` and ``row_var``/``col_var`` (matrices and more) or ``variance`` (vectors).
    ``foreach`` is accepted and changes nothing.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -2.0]))
        >>> optimizer = agnostic.optim.Adafactor([w], lr=0.1)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.8419, -1.8419], requires_grad=True)
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, eps2, d, weight_decay = scalar(group["lr"]), group["eps"][1], group["d"], group["weight_decay"]
            for p, grad in dense_gradients(self, group["params"]):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_tensor()
                    if grad.dim() > 1:
                        state["row_var"] = grad.new_zeros(grad.shape[:-1] + (1,))
                        state["col_var"] = grad.new_zeros(grad.shape[:-2] + (1,) + grad.shape[-1:])
                    else:
                        state["variance"] = zeros_state(grad)
                step = advance(state)
                if group["maximize"]:
                    grad = -grad
                eps1 = group["eps"][0]
                if eps1 is None:
                    eps1 = finfo(p.dtype).eps
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / step ** 0.5)
                alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * rho
                if weight_decay != 0:
                    p.mul_(1 - lr * weight_decay)
                if grad.dim() > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_var.lerp_((grad * grad).mean(dim=-1, keepdim=True), one_minus_beta2)
                    col_var.lerp_((grad * grad).mean(dim=-2, keepdim=True), one_minus_beta2)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    var_estimate = variance.clone()
                update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()  # eps1 squared: the root restores its size
                update.mul_(grad)
                denominator = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * d))
                p.add_(update, alpha=-alpha / denominator)
        return loss


__all__ = ["Adafactor"]
