"""linear: ``y = x W^T + b``, one recorded operation (as PyTorch's addmm) rather than three."""

import agnostic
from agnostic.autograd import Function

from . import _column_sums


class _Linear(Function):
    """``input @ weight.T + bias`` with its gradients computed directly: ``g @ W``, ``g^T x``, ``sum(g)``."""

    @staticmethod
    def forward(ctx, input, weight, bias):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        output = agnostic.matmul(input, weight.t())
        return output if bias is None else output.add_(bias)

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        needs_input, needs_weight, needs_bias = (list(ctx.needs_input_grad) + [False])[:3]
        rows = grad.reshape(-1, grad.shape[-1])
        grad_input = agnostic.matmul(grad, weight) if needs_input else None
        grad_weight = agnostic.matmul(rows.t(), input.reshape(-1, input.shape[-1])) if needs_weight else None
        grad_bias = None
        if ctx.has_bias and needs_bias:
            recorded = agnostic.is_grad_enabled()  # create_graph=True: the gradient itself is differentiated later
            grad_bias = rows.sum(0) if recorded or not _column_sums.supports(rows) else _column_sums.column_sums(rows)
        return grad_input, grad_weight, grad_bias


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions)."""
    if input.dim() == 0 or weight.dim() not in (1, 2):
        raise RuntimeError(f"linear(): expected input with at least 1 dimension and a 1-D or 2-D weight, got "
                           f"{input.dim()}-D input and {weight.dim()}-D weight")
    if weight.dim() == 1:
        output = agnostic.matmul(input, weight)
        return output if bias is None else agnostic.add(output, bias)
    if input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, input.reshape(-1, input.shape[-1]).shape))} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    return _Linear.apply(input, weight, bias)
