"""LPPool1d, LPPool2d and LPPool3d: power-average pooling layers over ``F.lp_pool1d``/2d/3d."""

from collections.abc import Callable

from .functional import _lp_pooling
from .module import Module


class _LPPoolNd(Module):
    _function: Callable  # F.lp_pool1d, 2d or 3d, set by each subclass

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, input):
        return type(self)._function(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """The p-norm ``(sum x^p)^(1/p)`` of each window of a ``(N, C, L)`` or ``(C, L)`` input (``p = norm_type``;
    ``stride`` defaults to ``kernel_size``), as ``torch.nn.LPPool1d``.

        >>> layer = agnostic.nn.LPPool1d(2, 2)
        >>> layer
        LPPool1d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)
        >>> layer(agnostic.tensor([[[3.0, 4.0, 1.0, 0.0]]]))
        tensor([[[5., 1.]]])
    """

    _function = staticmethod(_lp_pooling.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """The p-norm ``(sum x^p)^(1/p)`` of each window of a ``(N, C, H, W)`` or ``(C, H, W)`` input, as
    ``torch.nn.LPPool2d``.

        >>> agnostic.nn.LPPool2d(1, (1, 2))(agnostic.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]))
        tensor([[[[3.],
                  [7.]]]])
    """

    _function = staticmethod(_lp_pooling.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """The p-norm ``(sum x^p)^(1/p)`` of each window of a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input, as
    ``torch.nn.LPPool3d``.

        >>> agnostic.nn.LPPool3d(2, 2)(agnostic.ones(1, 1, 2, 2, 2))
        tensor([[[[[2.8284]]]]])
    """

    _function = staticmethod(_lp_pooling.lp_pool3d)


__all__ = ["LPPool1d", "LPPool2d", "LPPool3d"]
