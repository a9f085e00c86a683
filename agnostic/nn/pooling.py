"""MaxPool2d and AvgPool2d layers."""

from . import functional as F
from .module import Module


class MaxPool2d(Module):
    """Maximum over sliding windows (stride defaults to the kernel size), as ``torch.nn.MaxPool2d``.

        >>> x = agnostic.arange(16.0).reshape(1, 1, 4, 4)
        >>> agnostic.nn.MaxPool2d(2)(x)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over sliding windows (stride defaults to the kernel size), as ``torch.nn.AvgPool2d``.

        >>> x = agnostic.arange(16.0).reshape(1, 1, 4, 4)
        >>> agnostic.nn.AvgPool2d(2)(x)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
