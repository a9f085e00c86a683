"""Muon: momentum orthogonalized by Newton-Schulz iterations, for 2-D parameters, as torch.optim.Muon."""

import math

import agnostic

from .. import _dtypes
from .optimizer import Optimizer, scalar, zeros_state

_ADJUSTMENTS = ("original", "match_rms_adamw", "spectral_unclamped")


def _orthogonalized(update, coefficients, steps, eps):
    """``update``'s zeroth power (about ``U V^T`` of its SVD) by ``steps`` quintic Newton-Schulz iterations in
    bfloat16, as PyTorch's ``_zeropower_via_newtonschulz``."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    tall = update.shape[0] > update.shape[1]
    result = _rounded(update)
    if tall:  # iterate on the wide form: its Gram matrix is the smaller one
        result = result.T
    result = _rounded(result / _rounded(result.norm()).clamp(min=eps))
    for _ in range(steps):
        # PyTorch's bfloat16 products accumulate in float32 and round once: the same here, op by op
        wide = result.to(_dtypes.float32)
        gram = _rounded(wide @ wide.T).to(_dtypes.float32)
        polynomial = _rounded(b * gram + c * (gram @ gram)).to(_dtypes.float32)
        result = _rounded(a * wide + polynomial @ wide)
    return result.T if tall else result


def _rounded(tensor):
    return tensor.to(_dtypes.bfloat16)


def _adjusted_lr(lr, adjustment, shape):
    rows, columns = shape[:2]
    if adjustment is None or adjustment == "original":
        ratio = math.sqrt(max(1, rows / columns))
    elif adjustment == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, columns))
    elif adjustment == "spectral_unclamped":
        ratio = math.sqrt(rows / columns)
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """``torch.optim.Muon(params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None)``, for 2-D parameters only
    (use another optimizer for biases and embeddings): ``b = lerp(b, g, 1 - momentum)``; the update is
    ``lerp(g, b, momentum)`` (``nesterov``) or ``b``, orthogonalized by ``ns_steps`` Newton-Schulz iterations in
    bfloat16; ``p *= 1 - lr * weight_decay``; ``p -= adjusted_lr * update``, with ``adjust_lr_fn`` one of
    ``"original"`` (``lr * sqrt(max(1, rows / columns))``, the default), ``"match_rms_adamw"``
    (``0.2 * lr * sqrt(max(rows, columns))``) or ``"spectral_unclamped"`` (``lr * sqrt(rows / columns)``).

        >>> w = agnostic.nn.Parameter(agnostic.tensor([[3.0, 0.0], [0.0, 1.0]]))
        >>> optimizer = agnostic.optim.Muon([w], lr=0.1, weight_decay=0.0)
        >>> (w ** 2).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([[2.9250, 0.0000],
                [0.0000, 0.8867]], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None):
        if isinstance(lr, agnostic.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUSTMENTS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        with agnostic.no_grad():
            for group in self.param_groups:
                lr, weight_decay, momentum = scalar(group["lr"]), group["weight_decay"], group["momentum"]
                for p in group["params"]:
                    grad = p.grad
                    if grad is None:
                        continue
                    if p.is_complex():
                        raise RuntimeError("Muon does not support complex parameters")
                    if grad.is_sparse:
                        raise RuntimeError("Muon does not support sparse gradients")
                    if grad.dim() != 2:
                        raise ValueError("Param gradient must be a 2D matrix")
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = zeros_state(grad)
                    buffer = state["momentum_buffer"]
                    buffer.lerp_(grad, 1 - momentum)
                    update = grad.lerp(buffer, momentum) if group["nesterov"] else buffer
                    update = _orthogonalized(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
                    p.mul_(1 - lr * weight_decay)
                    p.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], p.shape))
        return loss


__all__ = ["Muon"]
