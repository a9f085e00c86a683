"""linear: ``y = x W^T + b``, one recorded operation (as PyTorch's addmm) rather than three. For float32/float64
tensors on one device the forward and (unrecorded) backward work on the backend arrays directly: a training step
runs a dozen of these, and each agnostic op they would otherwise call checks and wraps again what is known here."""

import numpy

import agnostic
from agnostic.autograd import Function

from ... import _autocast
from ..._tensor import wrap
from ...ops.linalg import matmul_arrays
from . import _column_sums

_DIRECT_DTYPES = frozenset(numpy.dtype(name) for name in ("float32", "float64"))


def _direct(*tensors):
    """Whether all tensors (None skipped) share one device and one dtype that the direct path handles."""
    first = tensors[0]
    dtype = first._data.dtype
    return dtype in _DIRECT_DTYPES and all(
        t is None or (t._device is first._device and t._data.dtype is dtype) for t in tensors[1:])


class _Linear(Function):
    """``input @ weight.T + bias`` with its gradients computed directly: ``g @ W``, ``g^T x``, ``sum(g)``."""

    @staticmethod
    def forward(ctx, input, weight, bias):
        ctx.save_for_backward(input, weight)
        ctx.has_bias = bias is not None
        if not _direct(input, weight, bias):
            output = agnostic.matmul(input, weight.t())
            return output if bias is None else output.add_(bias)
        device = input._device
        with device.backend.activate():
            output = matmul_arrays(device, input._data, weight._data.T)
            if bias is not None:
                device.backend.ops.add_row(output, bias._data)
        return wrap(output, device)

    @staticmethod
    def backward(ctx, grad):
        input, weight = ctx.saved_tensors
        needs_input, needs_weight, needs_bias = (list(ctx.needs_input_grad) + [False])[:3]
        needs_bias = needs_bias and ctx.has_bias
        if agnostic.is_grad_enabled() or not _direct(grad, input, weight):
            # Recorded (create_graph=True: the gradient is differentiated later) or mixed dtypes: agnostic ops.
            rows = grad.reshape(-1, grad.shape[-1])
            return (agnostic.matmul(grad, weight) if needs_input else None,
                    agnostic.matmul(rows.t(), input.reshape(-1, input.shape[-1])) if needs_weight else None,
                    rows.sum(0) if needs_bias else None)
        device = grad._device
        g = grad._data
        with device.backend.activate():
            rows = g.reshape(-1, g.shape[-1])
            grad_input = matmul_arrays(device, g, weight._data) if needs_input else None
            x = input._data
            grad_weight = matmul_arrays(device, rows.T, x.reshape(-1, x.shape[-1])) if needs_weight else None
            grad_bias = None
            if needs_bias:
                grad_bias = _column_sums.column_sums(rows, device) if _column_sums.supports(rows) else rows.sum(0)
        return tuple(None if array is None else wrap(array, device) for array in (grad_input, grad_weight, grad_bias))


@_autocast.policy
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions).

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[1.0, 2.0]])
        >>> weight = agnostic.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
        >>> F.linear(x, weight, bias=agnostic.tensor([0.0, 0.5, -1.0]))
        tensor([[1.0000, 3.5000, 3.0000]])
    """
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
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        return agnostic.matmul(input, weight.t()) + bias  # a broadcast bias (or PyTorch's error for a bad one)
    return _Linear.apply(input, weight, bias)


__all__ = ["linear"]
