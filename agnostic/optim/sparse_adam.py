"""SparseAdam: Adam for sparse gradients (``nn.Embedding(sparse=True)``), as ``torch.optim.SparseAdam``."""

import math

from ._sparse_gradients import add_sparse_, like_sparse, values_at
from .optimizer import Optimizer, scalar, zeros_state


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: lazy Adam for sparse gradients. Only the entries present in the (coalesced)
    gradient ``g`` update: there ``m += (1 - beta1) * (g - m)``, ``v += (1 - beta2) * (g * g - v)`` and
    ``p -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * m / (sqrt(v) + eps)``; the other rows keep their moments
    and values. Dense gradients are refused (use Adam); ``maximize`` negates the gradient.

    State per parameter: ``step`` (a Python int, as PyTorch keeps it here), ``exp_avg`` and ``exp_avg_sq``.

        >>> embedding = agnostic.nn.Embedding(4, 2, sparse=True)
        >>> optimizer = agnostic.optim.SparseAdam(embedding.parameters(), lr=0.1)
        >>> before = embedding.weight.detach().clone()
        >>> embedding(agnostic.tensor([1, 3])).sum().backward()
        >>> optimizer.step()
        >>> (embedding.weight - before).abs().gt(0).any(dim=1)
        tensor([False,  True, False,  True])
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params, complex_params = [], []
        for group_index, group in enumerate(self.param_groups):
            for param_index, param in enumerate(group["params"]):
                if param.is_sparse:
                    sparse_params.append([group_index, param_index])
                if param.is_complex():
                    complex_params.append([group_index, param_index])
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss when given."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for param in group["params"]:
                grad = param.grad
                if grad is None:
                    continue
                if not grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
                state = self.state[param]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = zeros_state(param)
                    state["exp_avg_sq"] = zeros_state(param)
                state["step"] += 1
                self._update(param, grad, state, group, beta1, beta2)
        return loss

    @staticmethod
    def _update(param, grad, state, group, beta1, beta2):
        if group.get("maximize", False):
            grad = -grad
        grad = grad.coalesce()  # the update is not linear in the gradient: each index once
        values = grad._values()
        if values.numel() == 0:
            return
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        old_exp_avg = values_at(exp_avg, grad)
        exp_avg_update = (values - old_exp_avg) * (1 - beta1)
        add_sparse_(exp_avg, like_sparse(grad, exp_avg_update))
        old_exp_avg_sq = values_at(exp_avg_sq, grad)
        exp_avg_sq_update = (values * values - old_exp_avg_sq) * (1 - beta2)
        add_sparse_(exp_avg_sq, like_sparse(grad, exp_avg_sq_update))
        numerator = exp_avg_update + old_exp_avg
        denominator = (exp_avg_sq_update + old_exp_avg_sq).sqrt() + group["eps"]
        step = state["step"]
        step_size = scalar(group["lr"]) * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        add_sparse_(param, like_sparse(grad, numerator / denominator * -step_size))


__all__ = ["SparseAdam"]
