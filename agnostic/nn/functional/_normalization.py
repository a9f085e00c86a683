"""batch_norm and instance_norm (with running statistics), layer_norm, rms_norm, group_norm and local_response_norm."""

import math

import agnostic

from ... import _autocast
from ..._tensor import wrap
from ...autograd import Function, no_grad
from ...autograd.functions import recomputed_gradients


def _normalized(input, mean, var, eps, weight, bias, shape):
    out = agnostic.mul(agnostic.sub(input, mean), agnostic.rsqrt(agnostic.add(var, eps)))
    if weight is not None:
        out = agnostic.mul(out, weight.reshape(shape))
    if bias is not None:
        out = agnostic.add(out, bias.reshape(shape))
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalize each channel (dim 1) by the batch's mean and biased variance when ``training`` (then also update
    the running statistics in place: ``running = (1 - momentum) * running + momentum * batch``, with the unbiased
    variance), else by the running statistics.

        >>> import agnostic.nn.functional as F
        >>> running_mean, running_var = agnostic.zeros(2), agnostic.ones(2)
        >>> F.batch_norm(agnostic.tensor([[1.0, 10.0], [3.0, 30.0]]), running_mean, running_var, training=True)
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]])
        >>> running_mean, running_var
        (tensor([0.2000, 2.0000]), tensor([ 1.1000, 20.9000]))
    """
    size = input.shape
    if input.dim() < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.dim()}D input)")
    channels = size[1]
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        return _normalized(input, running_mean.reshape(shape), running_var.reshape(shape), eps, weight, bias, shape)
    count = size[0] * math.prod(size[2:])
    if count == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    dims = (0,) + tuple(range(2, input.dim()))
    mean = agnostic.mean(input, dims, keepdim=True)
    var = agnostic.var(input, dims, keepdim=True, correction=0)
    if running_mean is not None or running_var is not None:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(momentum * mean.detach().reshape(channels) + (1 - momentum) * running_mean)
            if running_var is not None:
                unbiased = var.detach().reshape(channels) * (count / (count - 1))
                running_var.copy_(momentum * unbiased + (1 - momentum) * running_var)
    return _normalized(input, mean, var, eps, weight, bias, shape)


@_autocast.policy
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dimensions (biased variance), then scale and shift.

        >>> import agnostic.nn.functional as F
        >>> F.layer_norm(agnostic.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 6.0]]), normalized_shape=(3,))
        tensor([[-1.2247,  0.0000,  1.2247],
                [-0.7071, -0.7071,  1.4142]])
    """
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if count == 0 or tuple(input.shape[input.dim() - count:]) != normalized_shape or input.dim() < count:
        expected = ", ".join(str(s) for s in normalized_shape)
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {expected}], but got input of size{list(input.shape)}")
    if _fused_layer_norm_applies(input, weight, bias):
        return _FusedLayerNorm.apply(input, weight, bias, normalized_shape, eps)
    return _composed_layer_norm(input, weight, bias, normalized_shape, eps)


def _composed_layer_norm(input, weight, bias, normalized_shape, eps):
    dims = tuple(range(-len(normalized_shape), 0))
    mean = agnostic.mean(input, dims, keepdim=True)
    var = agnostic.var(input, dims, keepdim=True, correction=0)
    return _normalized(input, mean, var, eps, weight, bias, normalized_shape)


def _fused_layer_norm_applies(input, weight, bias):
    """Whether the backend's row kernels (``ROW_KERNELS``) take this layer_norm: float32/float64 input with some
    elements, weight and bias (where given) of its dtype and device."""
    return (input._device.backend.ops.ROW_KERNELS and input.dtype.name in ("float32", "float64")
            and input.numel() > 0
            and all(p is None or (p.dtype == input.dtype and p.device == input.device) for p in (weight, bias)))


class _FusedLayerNorm(Function):
    """layer_norm as one recorded operation: a kernel going forward, one (and a column sum per parameter) going
    back, where the composed form launches a dozen kernels each way. A recorded backward (``create_graph=True``)
    differentiates the composed form instead."""

    @staticmethod
    def forward(ctx, input, weight, bias, normalized_shape, eps):
        device = input._device
        backend = device.backend
        xp = backend.xp
        with backend.activate():
            rows = xp.ascontiguousarray(input._data).reshape(-1, math.prod(normalized_shape))
            weight_row = None if weight is None else xp.ascontiguousarray(weight._data).reshape(-1)
            bias_row = None if bias is None else xp.ascontiguousarray(bias._data).reshape(-1)
            out, mean, rstd = backend.ops.layer_norm_rows(rows, weight_row, bias_row, eps)
        ctx.arrays = rows, weight_row, mean, rstd
        ctx.tensors, ctx.normalized_shape, ctx.eps = (input, weight, bias), normalized_shape, eps
        return wrap(out.reshape(input._data.shape), device)

    @staticmethod
    def backward(ctx, grad):
        input, weight, bias = ctx.tensors
        if agnostic.is_grad_enabled():  # create_graph=True: differentiate the composed form
            return recomputed_gradients(
                lambda *tensors: _composed_layer_norm(*tensors, ctx.normalized_shape, ctx.eps), ctx.tensors,
                (grad,)) + (None, None)
        rows, weight_row, mean, rstd = ctx.arrays
        device = input._device
        backend = device.backend
        with backend.activate():
            grad_rows = backend.xp.ascontiguousarray(grad._data, rows.dtype).reshape(rows.shape)
            grad_input, grad_weight, grad_bias = backend.ops.layer_norm_backward_rows(grad_rows, rows, weight_row,
                                                                                      mean, rstd)
        shape = ctx.normalized_shape
        return (wrap(grad_input.reshape(input._data.shape), device),
                None if weight is None else wrap(grad_weight.reshape(shape), device),
                None if bias is None else wrap(grad_bias.reshape(shape), device), None, None)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) plane over its spatial dimensions (biased variance). With running
    statistics and ``use_input_stats``, they move towards the batch-averaged instance statistics (unbiased
    variance); without ``use_input_stats`` they normalize instead.

        >>> import agnostic.nn.functional as F
        >>> F.instance_norm(agnostic.tensor([[[1.0, 3.0], [0.0, 10.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """
    if input.dim() < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (batch, channels, spatial...), got "
                         f"{input.dim()}D input; unsqueeze a batch dimension first")
    channels = input.shape[1]
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return _normalized(input, running_mean.reshape(shape), running_var.reshape(shape), eps, weight, bias, shape)
    count = math.prod(input.shape[2:])
    if count <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    dims = tuple(range(2, input.dim()))
    mean = agnostic.mean(input, dims, keepdim=True)
    var = agnostic.var(input, dims, keepdim=True, correction=0)
    with no_grad():
        if running_mean is not None:
            batch_mean = mean.detach().reshape(input.shape[0], channels).mean(0)
            running_mean.copy_(momentum * batch_mean + (1 - momentum) * running_mean)
        if running_var is not None:
            unbiased = var.detach().reshape(input.shape[0], channels).mean(0) * (count / (count - 1))
            running_var.copy_(momentum * unbiased + (1 - momentum) * running_var)
    return _normalized(input, mean, var, eps, weight, bias, shape)


@_autocast.policy
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalize each sample's channels in ``num_groups`` groups (over the group's channels and spatial
    dimensions, biased variance), then scale and shift per channel.

        >>> import agnostic.nn.functional as F
        >>> F.group_norm(agnostic.tensor([[1.0, 3.0, 0.0, 10.0]]), num_groups=2)
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]])
    """
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, channels = input.shape[:2]
    if channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    mean = agnostic.mean(grouped, -1, keepdim=True)
    var = agnostic.var(grouped, -1, keepdim=True, correction=0)
    out = agnostic.mul(agnostic.sub(grouped, mean), agnostic.rsqrt(agnostic.add(var, eps))).reshape(input.shape)
    shape = (1, channels) + (1,) * (input.dim() - 2)
    if weight is not None:
        out = agnostic.mul(out, weight.reshape(shape))
    if bias is not None:
        out = agnostic.add(out, bias.reshape(shape))
    return out


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Divide each value by ``(k + alpha / size * sum of squares over size neighbouring channels) ** beta``,
    as ``torch.nn.functional.local_response_norm`` (the window is zero-padded at the channel edges).

        >>> import agnostic.nn.functional as F
        >>> F.local_response_norm(agnostic.tensor([[1.0, 2.0]]).reshape(1, 2, 1), size=2, alpha=1.0, beta=1.0)
        tensor([[[0.6667],
                 [0.5714]]])
    """
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    channels = input.shape[1]
    squares = agnostic.mul(input, input)
    before, after = size // 2, (size - 1) // 2
    zeros_before = agnostic.zeros((input.shape[0], before) + tuple(input.shape[2:]), dtype=input.dtype,
                                  device=input.device)
    zeros_after = agnostic.zeros((input.shape[0], after) + tuple(input.shape[2:]), dtype=input.dtype,
                                 device=input.device)
    padded = agnostic.cat([zeros_before, squares, zeros_after], dim=1)
    total = padded[:, 0:channels]
    for offset in range(1, size):
        total = agnostic.add(total, padded[:, offset:offset + channels])
    div = agnostic.pow(agnostic.add(agnostic.mul(total, alpha / size), k), beta)
    return agnostic.div(input, div)


_HALF_DTYPES = (agnostic.float16, agnostic.bfloat16)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the trailing ``normalized_shape`` dimensions (plus ``eps``, by default
    the machine epsilon of the computing dtype), then scale by ``weight``; float16/bfloat16 are computed in float32
    and returned in their own dtype, as ``torch.nn.functional.rms_norm``.

        >>> import agnostic.nn.functional as F
        >>> F.rms_norm(agnostic.tensor([[1.0, 2.0, 3.0]]), normalized_shape=(3,))
        tensor([[0.4629, 0.9258, 1.3887]])
    """
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    count = len(normalized_shape)
    if count == 0 or input.dim() < count or tuple(input.shape[input.dim() - count:]) != normalized_shape:
        expected = ", ".join(str(s) for s in normalized_shape)
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {expected}], but got input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got weight of shape "
                           f"{list(weight.shape)} and normalized_shape = {list(normalized_shape)}")
    computed = input.float() if input.dtype in _HALF_DTYPES else input
    if eps is None:
        eps = agnostic.finfo(computed.dtype).eps
    dims = tuple(range(input.dim() - count, input.dim()))
    output = (computed * agnostic.rsqrt(computed.pow(2).mean(dims, keepdim=True) + eps)).to(input.dtype)
    return output if weight is None else (output * weight).to(input.dtype)


__all__ = ["batch_norm", "group_norm", "instance_norm", "layer_norm", "local_response_norm", "rms_norm"]
