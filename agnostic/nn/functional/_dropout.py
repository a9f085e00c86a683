"""dropout and its channel-wise forms (dropout1d/2d/3d): zero elements, or whole channels, with probability p and
scale the rest by 1/(1-p), using agnostic's RNG (float32 and float64 dropout in one pass, ``DropoutDraw``);
alpha_dropout and feature_alpha_dropout, SELU's dropout that keeps the mean and variance."""

import warnings

import numpy

import agnostic

from ...autograd import Function
from ...ops import random as _random


def dropout(input, p=0.5, training=True, inplace=False):
    """In training, each element is zeroed with probability ``p`` (a Bernoulli mask from agnostic's generator, so
    seeding with ``agnostic.manual_seed`` reproduces it) and the survivors are scaled by ``1 / (1 - p)``; outside
    training, ``input`` is returned as is.

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.dropout(agnostic.ones(6), p=0.5)
        tensor([2., 2., 0., 2., 2., 2.])
        >>> F.dropout(agnostic.ones(6), p=0.5, training=False)
        tensor([1., 1., 1., 1., 1., 1.])
    """
    return _dropped(input, p, training, inplace, input.shape)


def _dropped(input, p, training, inplace, mask_shape):
    """``input`` times a mask of ``mask_shape`` (broadcast over the rest) of zeros (probability ``p``) and
    ``1 / (1 - p)``."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if not inplace and p < 1.0 and tuple(mask_shape) == tuple(input.shape) and input._data.dtype in _DRAWN_DTYPES:
        numpy_dtype = input._data.dtype
        seed, start = _random.uniform_stream(input._device, input.numel(), numpy_dtype)
        return DropoutDraw.apply(input, (seed, start, float(numpy_dtype.type(1.0 - p))))
    if p == 1.0:
        scale = agnostic.zeros(mask_shape, dtype=input.dtype, device=input.device)
    else:
        # the probability stays a scalar at full precision; the mask has the input's dtype and device
        scale = agnostic.bernoulli(agnostic.empty(mask_shape, dtype=input.dtype, device=input.device), 1.0 - p)
        scale.div_(1.0 - p)
    return input.mul_(scale) if inplace else agnostic.mul(input, scale)


def _channel_dropout(name, spatial, input, p, training, inplace):
    """Dropout of whole channels of a batched ``(N, C, *spatial)`` or unbatched ``(C, *spatial)`` input. As in
    PyTorch, dropout2d and dropout3d take other ranks with a deprecation warning, as unbatched (each entry of the
    first dimension a channel); dropout1d refuses them."""
    if input.ndim not in (spatial + 1, spatial + 2):
        message = (f"{name}: Received a {input.ndim}-D input to {name}, which is deprecated and will result in an "
                   f"error in a future release. To retain the behavior and silence this warning, please use dropout "
                   f"instead. Note that {name} exists to provide channel-wise dropout on inputs with {spatial} "
                   f"spatial dimension{'s' if spatial > 1 else ''}, a channel dimension, and an optional batch "
                   f"dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).")
        if spatial == 1:
            raise RuntimeError(message.split(", which is deprecated")[0].replace("Received", "Expected 2D or 3D "
                                                                                 "input, but received") + ".")
        warnings.warn(message, UserWarning, stacklevel=3)
    channels = 2 if input.ndim == spatial + 2 else 1
    return _dropped(input, p, training, inplace, tuple(input.shape[:channels]) + (1,) * (input.ndim - channels))


_DRAWN_DTYPES = frozenset(numpy.dtype(name) for name in ("float32", "float64"))


class DropoutDraw(Function):
    """``input`` times the scales of the dropout draw ``(seed, start, keep)`` (``ops.random.scaled_by_dropout``:
    ``1 / keep`` where the Philox stream's uniform at the element's place is below ``keep``, else 0), in one pass:
    the numbers of the composed ``bernoulli`` mask, divided and multiplied in. The gradient is the same op on the
    gradient (recorded too under ``create_graph=True``)."""

    @staticmethod
    def forward(ctx, input, draw):
        ctx.draw = draw
        return _random.scaled_by_dropout(input, *draw)

    @staticmethod
    def backward(ctx, grad):
        return DropoutDraw.apply(grad, ctx.draw), None


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a ``(N, C, L)`` or ``(C, L)`` input with probability ``p`` in training, scaling the
    rest by ``1 / (1 - p)``, as ``torch.nn.functional.dropout1d``.

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.dropout1d(agnostic.ones(1, 4, 2), p=0.5)
        tensor([[[2., 2.],
                 [2., 2.],
                 [0., 0.],
                 [2., 2.]]])
    """
    return _channel_dropout("dropout1d", 1, input, p, training, inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input with probability ``p`` in training, scaling
    the rest by ``1 / (1 - p)``, as ``torch.nn.functional.dropout2d``.

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.dropout2d(agnostic.ones(1, 3, 1, 2), p=0.5)
        tensor([[[[2., 2.]],
        <BLANKLINE>
                 [[2., 2.]],
        <BLANKLINE>
                 [[0., 0.]]]])
    """
    return _channel_dropout("dropout2d", 2, input, p, training, inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p`` in training,
    scaling the rest by ``1 / (1 - p)``, as ``torch.nn.functional.dropout3d``.

        >>> import agnostic.nn.functional as F
        >>> F.dropout3d(agnostic.ones(1, 2, 1, 1, 1), p=0.5, training=False).flatten()
        tensor([1., 1.])
    """
    return _channel_dropout("dropout3d", 3, input, p, training, inplace)


# SELU's negative saturation value, -scale * alpha: where alpha dropout sends the dropped elements before rescaling
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropped(input, p, training, inplace, mask_shape):
    """``input * a * mask + b``: dropped elements become SELU's saturation value, and the affine map ``a``, ``b``
    brings the mean and variance of a unit normal input back to 0 and 1 (PyTorch's formula)."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        zero = agnostic.zeros((), dtype=input.dtype, device=input.device)
        return input.mul_(zero) if inplace else agnostic.mul(input, zero)
    keep = agnostic.bernoulli(agnostic.empty(mask_shape, dtype=input.dtype, device=input.device), 1.0 - p)
    scale = 1.0 / ((_SELU_SATURATION ** 2 * p + 1) * (1 - p)) ** 0.5
    shift = (keep - 1) * (_SELU_SATURATION * scale) + _SELU_SATURATION * scale * p
    keep = keep * scale
    return input.mul_(keep).add_(shift) if inplace else agnostic.mul(input, keep) + shift


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout for self-normalizing (SELU) networks, as ``torch.nn.functional.alpha_dropout``: in training
    each element is set with probability ``p`` to SELU's saturation value, then all are scaled and shifted so that
    a zero-mean, unit-variance input keeps its mean and variance. Note ``training`` defaults to False, as PyTorch's.

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.alpha_dropout(agnostic.zeros(4), p=0.5, training=True)
        tensor([ 0.7792,  0.7792, -0.7792,  0.7792])
        >>> F.alpha_dropout(agnostic.zeros(4), p=0.5)
        tensor([0., 0., 0., 0.])
    """
    return _alpha_dropped(input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: one draw per ``(N, C)`` entry of an input of at least 2 dimensions, as
    ``torch.nn.functional.feature_alpha_dropout`` (``training`` defaults to False).

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.feature_alpha_dropout(agnostic.zeros(1, 3, 2), p=0.5, training=True)
        tensor([[[ 0.7792,  0.7792],
                 [ 0.7792,  0.7792],
                 [-0.7792, -0.7792]]])
    """
    if training and 0.0 < p <= 1.0 and input.numel() and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    mask_shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    return _alpha_dropped(input, p, training, inplace, mask_shape)


__all__ = ["alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout"]
