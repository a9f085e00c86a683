"""linear: ``y = x W^T + b``, one recorded operation (as PyTorch's addmm) rather than three. For float32/float64
tensors on one device the forward and (unrecorded) backward work on the backend arrays directly: a training step
runs a dozen of these, and each agnostic op they would otherwise call checks and wraps again what is known here.
bilinear: ``y = x1^T A x2 + b``, composed of differentiable agnostic ops."""

import numpy

import agnostic
from agnostic.autograd import Function

from ... import _autocast
from ..._tensor import wrap
from ...ops._dispatch import check_tensor
from ...ops.linalg import matmul_arrays
from . import _column_sums

_DIRECT_DTYPES = frozenset(numpy.dtype(name) for name in ("float32", "float64"))


def _direct(*tensors):
    """Whether all tensors (None skipped) share one device and one dtype that the direct path handles."""
    first = tensors[0]
    dtype = first._data.dtype
    if dtype not in _DIRECT_DTYPES:
        return False
    device = first._device
    for t in tensors:
        if t is not None and (t._device is not device or t._data.dtype is not dtype):
            return False
    return True


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
        return tuple([None if array is None else wrap(array, device) for array in (grad_input, grad_weight, grad_bias)])


@_autocast.policy
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions).

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[1.0, 2.0]])
        >>> weight = agnostic.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
        >>> F.linear(x, weight, bias=agnostic.tensor([0.0, 0.5, -1.0]))
        tensor([[1.0000, 3.5000, 3.0000]])
    """
    # The arrays' shapes, not the tensors' (each ``.shape`` makes an agnostic.Size): this runs for every layer.
    try:
        input_shape, weight_shape = input._data.shape, weight._data.shape
        bias_shape = None if bias is None else bias._data.shape
    except AttributeError:
        _not_a_tensor(input=input, weight=weight, bias=bias)
        raise
    if not input_shape or len(weight_shape) not in (1, 2):
        raise RuntimeError(f"linear(): expected input with at least 1 dimension and a 1-D or 2-D weight, got "
                           f"{len(input_shape)}-D input and {len(weight_shape)}-D weight")
    if len(weight_shape) == 1:
        output = agnostic.matmul(input, weight)
        return output if bias is None else agnostic.add(output, bias)
    if input_shape[-1] != weight_shape[1]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({'x'.join(map(str, input.reshape(-1, input_shape[-1]).shape))} and "
                           f"{weight_shape[1]}x{weight_shape[0]})")
    if bias is not None and bias_shape != weight_shape[:1]:
        return agnostic.matmul(input, weight.t()) + bias  # a broadcast bias (or PyTorch's error for a bad one)
    return _Linear.apply(input, weight, bias)


def _not_a_tensor(**arguments):
    """Raise PyTorch's TypeError for the first argument that is neither a tensor nor None."""
    for position, (name, value) in enumerate(arguments.items(), start=1):
        if value is not None:
            check_tensor("linear", value, position, name)


def bilinear(input1, input2, weight, bias=None):
    """``y_k = input1^T weight[k] input2 + bias[k]`` over the last dimensions of ``input1`` (``in1``) and ``input2``
    (``in2``), with the same leading dimensions; ``weight`` is ``(out, in1, in2)``, as
    ``torch.nn.functional.bilinear``.

        >>> import agnostic.nn.functional as F
        >>> weight = agnostic.tensor([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 2.0], [0.0, 0.0]]])
        >>> x1, x2 = agnostic.tensor([[1.0, 2.0]]), agnostic.tensor([[3.0, 4.0]])
        >>> F.bilinear(x1, x2, weight, agnostic.tensor([0.5, 0.0]))
        tensor([[11.5000,  8.0000]])
    """
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} and {input2.dim()}")
    for dim in range(input1.dim() - 1):
        if input1.shape[dim] != input2.shape[dim]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {dim}: got "
                               f"{input1.shape[dim]} and {input2.shape[dim]}")
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-dimensional (out_features, in1_features, in2_features), "
                           f"got {weight.dim()} dimensions")
    out_features, in1_features, in2_features = weight.shape
    if input1.shape[-1] != in1_features:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {in1_features}")
    if input2.shape[-1] != in2_features:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {in2_features}")
    if bias is not None and tuple(bias.shape) != (out_features,):
        got = bias.shape[-1] if bias.dim() else 0
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {got} but expected "
                           f"{out_features}")
    # one matmul: input1 (*, in1) times weight seen as (in1, out * in2), then the in2 sum against input2
    stacked = weight.permute(1, 0, 2).reshape(in1_features, out_features * in2_features)
    left = agnostic.matmul(input1, stacked).reshape(*input1.shape[:-1], out_features, in2_features)
    output = (left * input2.unsqueeze(-2)).sum(-1)
    return output if bias is None else output + bias


__all__ = ["bilinear", "linear"]
