"""lp_pool1d, lp_pool2d and lp_pool3d: power-average pooling, ``(sum over the window of x^p)^(1/p)``, as PyTorch's."""

import math

import agnostic

from .._utils import _pair, _triple
from ._pooling import avg_pool1d, avg_pool2d, avg_pool3d, max_pool1d, max_pool2d, max_pool3d


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, window_size, average, maximum):
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == math.inf:
            return maximum(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -math.inf:
            return -maximum(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = average(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign * relu(abs) is the window sum's own value, with PyTorch's zero gradient where that sum is zero
    return (agnostic.sign(out) * agnostic.relu(agnostic.abs(out))).mul(window_size).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a ``(N, C, L)`` or ``(C, L)`` input, ``(sum x^p)^(1/p)`` with ``p = norm_type``
    (``inf`` gives max pooling of ``|x|``), as ``torch.nn.functional.lp_pool1d``.

        >>> import agnostic.nn.functional as F
        >>> F.lp_pool1d(agnostic.tensor([[[3.0, 4.0, 1.0, 0.0]]]), 2, kernel_size=2)
        tensor([[[5., 1.]]])
    """
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, kernel_size, avg_pool1d, max_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a ``(N, C, H, W)`` or ``(C, H, W)`` input, ``(sum x^p)^(1/p)`` with
    ``p = norm_type``, as ``torch.nn.functional.lp_pool2d``.

        >>> import agnostic.nn.functional as F
        >>> F.lp_pool2d(agnostic.tensor([[[[1.0, 2.0], [2.0, 4.0]]]]), 2, kernel_size=2)
        tensor([[[[5.]]]])
    """
    width, height = _pair(kernel_size)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, width * height, avg_pool2d, max_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of each window of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input, ``(sum x^p)^(1/p)`` with
    ``p = norm_type``, as ``torch.nn.functional.lp_pool3d``.

        >>> import agnostic.nn.functional as F
        >>> F.lp_pool3d(agnostic.ones(1, 1, 2, 2, 2), 2, kernel_size=2)
        tensor([[[[[2.8284]]]]])
    """
    depth, height, width = _triple(kernel_size)
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, depth * height * width, avg_pool3d,
                    max_pool3d)


__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]
