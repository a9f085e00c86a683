"""Gradient clipping: clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_, as torch.nn.utils'.

``foreach`` is accepted for PyTorch's signature and changes nothing: every device takes the same (per-tensor) path.
"""

import functools
import types
import warnings

from ... import _tensor
from ...autograd import no_grad
from ...ops.creation import tensor
from ...ops.elementwise import clamp
from ...ops.shape import stack

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _without_grad(function):
    """``function`` run under ``no_grad``, as PyTorch runs these: the clipping is no part of any graph."""
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with no_grad():
            return function(*args, **kwargs)
    return wrapper


def _as_list(tensors):
    return [tensors] if isinstance(tensors, _tensor.TensorBase) else list(tensors)


def _dense_or_values(tensor):
    """A tensor whose norm is ``tensor``'s: itself, or a sparse gradient's values once repeated indices are added
    up (``nn.Embedding(sparse=True)``'s gradient repeats the rows looked up more than once)."""
    return tensor.coalesce().values() if tensor.is_sparse else tensor


@_without_grad
def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of ``tensors`` (a tensor or an iterable) taken together as one vector: the norm of
    their norms, on the first tensor's device; ``tensor(0.)`` for none.

        >>> agnostic.nn.utils.get_total_norm([agnostic.tensor([3.0]), agnostic.tensor([4.0])])
        tensor(5.)
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    first_device = tensors[0].device
    norms = [_dense_or_values(each).norm(norm_type).to(first_device) for each in tensors]
    total_norm = stack(norms).norm(norm_type)
    if error_if_nonfinite and not bool(total_norm.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return total_norm


@_without_grad
def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by ``min(max_norm / (total_norm + 1e-6), 1)``.

        >>> weight = agnostic.nn.Parameter(agnostic.zeros(2))
        >>> weight.grad = agnostic.tensor([3.0, 4.0])
        >>> agnostic.nn.utils.clip_grads_with_norm_([weight], 1.0, agnostic.tensor(5.0))
        >>> weight.grad
        tensor([0.6000, 0.8000])
    """
    grads = [parameter.grad for parameter in _as_list(parameters) if parameter.grad is not None]
    max_norm = float(max_norm)
    if not grads:
        return
    scale = clamp(max_norm / (total_norm + 1e-6), max=1.0)
    by_device = {}
    for grad in grads:
        device_scale = by_device.get(grad.device)
        if device_scale is None:
            device_scale = by_device[grad.device] = scale.to(grad.device)
        grad.mul_(device_scale)


@_without_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scale the gradients of ``parameters`` (a tensor or an iterable) in place so that their total
    ``norm_type``-norm (``inf`` for the largest magnitude) is at most ``max_norm``; returns the total norm before
    clipping.

        >>> weight = agnostic.nn.Parameter(agnostic.zeros(3))
        >>> weight.grad = agnostic.tensor([3.0, 4.0, 0.0])
        >>> agnostic.nn.utils.clip_grad_norm_(weight, max_norm=1.0)
        tensor(5.)
        >>> weight.grad
        tensor([0.6000, 0.8000, 0.0000])
    """
    if isinstance(parameters, _tensor.TensorBase):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [parameter.grad for parameter in parameters if parameter.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated name of ``clip_grad_norm_`` (a FutureWarning says so, as in PyTorch).

        >>> import warnings
        >>> weight = agnostic.nn.Parameter(agnostic.zeros(1))
        >>> weight.grad = agnostic.tensor([2.0])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.nn.utils.clip_grad_norm(weight, 1.0)
        tensor(2.)
    """
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_without_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp the gradients of ``parameters`` (a tensor or an iterable) in place to ``[-clip_value, clip_value]``.

        >>> weight = agnostic.nn.Parameter(agnostic.zeros(3))
        >>> weight.grad = agnostic.tensor([-3.0, 0.5, 2.0])
        >>> agnostic.nn.utils.clip_grad_value_(weight, 1.0)
        >>> weight.grad
        tensor([-1.0000,  0.5000,  1.0000])
    """
    clip_value = float(clip_value)
    for parameter in _as_list(parameters):
        if parameter.grad is not None:
            parameter.grad.clamp_(min=-clip_value, max=clip_value)
