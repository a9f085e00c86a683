"""Pooling layers: max and average pooling over 1-D to 3-D windows, and their adaptive forms."""

from typing import Any, Callable

from . import functional as F
from ._utils import _single
from .module import Module


class _MaxPoolNd(Module):
    _function: Callable[..., Any] | None = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return type(self)._function(input, self.kernel_size, self.stride, self.padding, self.dilation,
                                    ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, L) inputs (stride defaults to the kernel size), as
    ``torch.nn.MaxPool1d``.

        >>> agnostic.nn.MaxPool1d(2)(agnostic.tensor([[[1.0, 5.0, 2.0, 0.0]]]))
        tensor([[[5., 2.]]])
    """

    _function = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows (stride defaults to the kernel size), as ``torch.nn.MaxPool2d``.

        >>> x = agnostic.arange(16.0).reshape(1, 1, 4, 4)
        >>> agnostic.nn.MaxPool2d(2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """

    _function = staticmethod(F.max_pool2d)


class MaxPool3d(_MaxPoolNd):
    """Maximum over sliding windows of (N, C, D, H, W) inputs, as ``torch.nn.MaxPool3d``.

        >>> pool = agnostic.nn.MaxPool3d(2, return_indices=True)
        >>> pool
        MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
        >>> pool(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2))[1].flatten()
        tensor([7])
    """

    _function = staticmethod(F.max_pool3d)


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) inputs (stride defaults to the kernel size), as
    ``torch.nn.AvgPool1d``.

        >>> pool = agnostic.nn.AvgPool1d(2)
        >>> pool
        AvgPool1d(kernel_size=(2,), stride=(2,), padding=(0,))
        >>> pool(agnostic.tensor([[[1.0, 5.0, 2.0, 0.0]]]))
        tensor([[[3., 1.]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding, self.ceil_mode, self.count_include_pad = _single(padding), ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolNd(Module):
    _function: Callable[..., Any] | None = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return type(self)._function(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                                    self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows (stride defaults to the kernel size), as ``torch.nn.AvgPool2d``.

        >>> x = agnostic.arange(16.0).reshape(1, 1, 4, 4)
        >>> agnostic.nn.AvgPool2d(2)(x)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """

    _function = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """Mean over sliding windows of (N, C, D, H, W) inputs, as ``torch.nn.AvgPool3d``.

        >>> agnostic.nn.AvgPool3d(2)(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten()
        tensor([3.5000])
    """

    _function = staticmethod(F.avg_pool3d)


class _AdaptivePool(Module):
    _function: Callable[..., Any] | None = None

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return type(self)._function(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input):
        return type(self)._function(input, self.output_size, self.return_indices)


class AdaptiveAvgPool1d(_AdaptivePool):
    """Mean over nearly equal windows giving ``output_size`` positions, as ``torch.nn.AdaptiveAvgPool1d``.

        >>> agnostic.nn.AdaptiveAvgPool1d(2)(agnostic.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]))
        tensor([[[2., 4.]]])
    """

    _function = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Mean over nearly equal windows giving an ``output_size`` plane, as ``torch.nn.AdaptiveAvgPool2d``.

        >>> pool = agnostic.nn.AdaptiveAvgPool2d((1, 1))
        >>> pool
        AdaptiveAvgPool2d(output_size=(1, 1))
        >>> pool(agnostic.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[7.5000]]]])
    """

    _function = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptivePool):
    """Mean over nearly equal windows giving an ``output_size`` volume, as ``torch.nn.AdaptiveAvgPool3d``.

        >>> agnostic.nn.AdaptiveAvgPool3d(1)(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten()
        tensor([3.5000])
    """

    _function = staticmethod(F.adaptive_avg_pool3d)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Maximum over nearly equal windows giving ``output_size`` positions, as ``torch.nn.AdaptiveMaxPool1d``.

        >>> agnostic.nn.AdaptiveMaxPool1d(2)(agnostic.tensor([[[1.0, 7.0, 3.0, 4.0, 5.0]]]))
        tensor([[[7., 5.]]])
    """

    _function = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Maximum over nearly equal windows giving an ``output_size`` plane, as ``torch.nn.AdaptiveMaxPool2d``.

        >>> agnostic.nn.AdaptiveMaxPool2d(1)(agnostic.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[15.]]]])
    """

    _function = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Maximum over nearly equal windows giving an ``output_size`` volume, as ``torch.nn.AdaptiveMaxPool3d``.

        >>> agnostic.nn.AdaptiveMaxPool3d(1)(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)).flatten()
        tensor([7.])
    """

    _function = staticmethod(F.adaptive_max_pool3d)


__all__ = ["AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
           "AdaptiveMaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "MaxPool1d", "MaxPool2d", "MaxPool3d"]
