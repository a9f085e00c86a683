"""batch_norm (with running statistics) and layer_norm."""

import math

import agnostic

from ...autograd import no_grad


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
    dims = tuple(range(-count, 0))
    mean = agnostic.mean(input, dims, keepdim=True)
    var = agnostic.var(input, dims, keepdim=True, correction=0)
    return _normalized(input, mean, var, eps, weight, bias, normalized_shape)
