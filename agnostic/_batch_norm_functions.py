"""PyTorch's top-level batch-norm building blocks (batch_norm_stats, batch_norm_elemt, ...), used by SyncBatchNorm.

PyTorch has them on CUDA only; here they run on every device. Statistics come out in the accumulation dtype
(float32 for float16/bfloat16 inputs, as PyTorch's CUDA kernels give), per channel (dimension 1).
"""

import agnostic as _agnostic

from . import _dtypes

_HALVES = ("float16", "bfloat16")


def _accumulation(tensor):
    """``tensor`` in the dtype its statistics accumulate in."""
    return tensor.to(_dtypes.float32) if tensor.dtype.name in _HALVES else tensor


def _reduced_dims(input):
    if input.dim() < 2:
        raise ValueError(f"batch norm expects an input of at least 2 dimensions (N, C, ...), got {input.dim()}D; "
                         "add the batch dimension with unsqueeze(0)")
    return [0] + list(range(2, input.dim()))


def _per_channel(vector, input):
    """A (C,) vector shaped to broadcast against ``input`` (N, C, ...)."""
    return vector.reshape([1, -1] + [1] * (input.dim() - 2))


def batch_norm_stats(input, eps):
    """``(mean, invstd)`` of each channel of ``input`` (N, C, ...), ``invstd = 1 / sqrt(biased var + eps)``, as
    ``torch.batch_norm_stats``.

        >>> agnostic.batch_norm_stats(agnostic.tensor([[1.0, 2.0], [3.0, 6.0]]), 0.0)
        (tensor([2., 4.]), tensor([1.0000, 0.5000]))
    """
    dims = _reduced_dims(input)
    values = _accumulation(input)
    mean = values.mean(dims)
    variance = ((values - _per_channel(mean, values)) ** 2).mean(dims)
    return mean, (variance + eps).rsqrt()


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts):
    """The global ``(mean, invstd)`` from each process's ``mean`` and ``invstd`` (W, C) over ``counts`` (W,)
    elements per channel (merged as Chan's parallel variance), updating ``running_mean`` and ``running_var`` (the
    unbiased variance) in place with ``momentum`` where given, as ``torch.batch_norm_gather_stats_with_counts``.

        >>> mean, invstd = agnostic.batch_norm_gather_stats_with_counts(
        ...     agnostic.zeros(2, 1), agnostic.tensor([[0.0], [2.0]]), agnostic.tensor([[1.0], [1.0]]), None, None,
        ...     0.1, 0.0, agnostic.tensor([2.0, 2.0]))
        >>> mean, invstd
        (tensor([1.]), tensor([0.7071]))
    """
    counts = counts.to(mean.dtype).reshape(-1, 1)
    total = counts.sum(0)
    global_mean = (counts * mean).sum(0) / total
    # each process's sum of squared deviations about its own mean, then about the global mean
    squares = counts * ((1.0 / (invstd * invstd) - eps) + (mean - global_mean) ** 2)
    variance = squares.sum(0) / total
    _update_running(running_mean, running_var, global_mean, variance, total / (total - 1).clamp(min=1), momentum)
    return global_mean, (variance + eps).rsqrt()


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum, eps, count):
    """``batch_norm_gather_stats_with_counts`` with the same ``count`` elements per channel on every process, as
    ``torch.batch_norm_gather_stats``.

        >>> agnostic.batch_norm_gather_stats(agnostic.zeros(2, 1), agnostic.tensor([[0.0], [2.0]]),
        ...                                  agnostic.tensor([[1.0], [1.0]]), None, None, 0.1, 0.0, 2)
        (tensor([1.]), tensor([0.7071]))
    """
    counts = _agnostic.full((mean.shape[0],), float(count), dtype=mean.dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var, momentum, eps, counts)


def _update_running(running_mean, running_var, mean, variance, bessel, momentum):
    """``running = (1 - momentum) * running + momentum * batch`` (for ``running_var``, the unbiased variance:
    ``variance * bessel``)."""
    with _agnostic.no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_((mean * momentum).to(running_mean.dtype))
        if running_var is not None:
            unbiased = variance * bessel
            running_var.mul_(1 - momentum).add_((unbiased * momentum).to(running_var.dtype))


def batch_norm_elemt(input, weight, bias, mean, invstd, eps, *, out=None):
    """``(input - mean) * invstd * weight + bias`` per channel (``weight``, ``bias``: None for 1 and 0), in
    ``input``'s dtype, as ``torch.batch_norm_elemt``.

        >>> agnostic.batch_norm_elemt(agnostic.tensor([[1.0, 2.0], [3.0, 6.0]]), None, agnostic.tensor([0.0, 1.0]),
        ...                           agnostic.tensor([2.0, 4.0]), agnostic.tensor([1.0, 0.5]), 0.0)
        tensor([[-1.,  0.],
                [ 1.,  2.]])
    """
    scale = invstd if weight is None else invstd * weight
    result = (_accumulation(input) - _per_channel(mean, input)) * _per_channel(scale, input)
    if bias is not None:
        result = result + _per_channel(bias, input)
    result = result.to(input.dtype)
    if out is not None:
        return out.copy_(result)
    return result


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g, weight_g, bias_g):
    """``(sum_dy, sum_dy_xmu, grad_weight, grad_bias)`` per channel: the sums of ``grad_out`` and of
    ``grad_out * (input - mean)`` (None unless ``input_g``), the weight's gradient ``sum_dy_xmu * invstd`` (None
    unless ``weight_g``) and the bias's ``sum_dy`` (None unless ``bias_g``), as ``torch.batch_norm_backward_reduce``.

        >>> agnostic.batch_norm_backward_reduce(agnostic.ones(2, 1), agnostic.tensor([[1.0], [3.0]]),
        ...                                     agnostic.tensor([2.0]), agnostic.tensor([1.0]), None, True, True, True)
        (tensor([2.]), tensor([0.]), tensor([0.]), tensor([2.]))
    """
    dims = _reduced_dims(input)
    grads = _accumulation(grad_out)
    sum_dy = grads.sum(dims)
    sum_dy_xmu = (grads * (_accumulation(input) - _per_channel(mean, input))).sum(dims)
    dtype = input.dtype if weight is None else weight.dtype
    return (sum_dy if input_g else None, sum_dy_xmu if input_g else None,
            (sum_dy_xmu * invstd).to(dtype) if weight_g else None, sum_dy.to(dtype) if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu, count):
    """The input's gradient of batch norm from the global ``sum_dy`` and ``sum_dy_xmu`` over ``count`` (each
    process's element count per channel; their sum is the total): ``(grad_out - mean_dy - (input - mean) *
    invstd**2 * mean_dy_xmu) * invstd * weight``, as ``torch.batch_norm_backward_elemt``.

        >>> agnostic.batch_norm_backward_elemt(agnostic.tensor([[1.0], [0.0]]), agnostic.tensor([[1.0], [3.0]]),
        ...                                    agnostic.tensor([2.0]), agnostic.tensor([1.0]), None,
        ...                                    agnostic.tensor([1.0]), agnostic.tensor([-1.0]),
        ...                                    agnostic.tensor([2], dtype=agnostic.int32))
        tensor([[0.],
                [0.]])
    """
    total = count.sum().to(sum_dy.dtype)
    mean_dy, mean_dy_xmu = sum_dy / total, sum_dy_xmu / total
    centered = _accumulation(input) - _per_channel(mean, input)
    scale = invstd if weight is None else invstd * weight.to(invstd.dtype)
    result = (_accumulation(grad_out) - _per_channel(mean_dy, input)
              - centered * _per_channel(invstd * invstd * mean_dy_xmu, input)) * _per_channel(scale, input)
    return result.to(input.dtype)


def batch_norm_update_stats(input, running_mean, running_var, momentum):
    """``(mean, biased variance)`` of each channel of ``input``, updating ``running_mean`` and ``running_var``
    (with the unbiased variance) in place by ``momentum``, as ``torch.batch_norm_update_stats``.

        >>> running_mean, running_var = agnostic.zeros(2), agnostic.ones(2)
        >>> agnostic.batch_norm_update_stats(agnostic.tensor([[1.0, 2.0], [3.0, 6.0]]), running_mean, running_var,
        ...                                  0.5)
        (tensor([2., 4.]), tensor([1., 4.]))
        >>> running_mean, running_var
        (tensor([1., 2.]), tensor([1.5000, 4.5000]))
    """
    dims = _reduced_dims(input)
    values = _accumulation(input)
    mean = values.mean(dims)
    variance = ((values - _per_channel(mean, values)) ** 2).mean(dims)
    count = input.numel() // max(input.shape[1], 1)
    _update_running(running_mean, running_var, mean, variance, count / max(count - 1, 1), momentum)
    return mean, variance


__all__ = ["batch_norm_backward_elemt", "batch_norm_backward_reduce", "batch_norm_elemt", "batch_norm_gather_stats",
           "batch_norm_gather_stats_with_counts", "batch_norm_stats", "batch_norm_update_stats"]
