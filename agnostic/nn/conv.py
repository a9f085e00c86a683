"""Convolution layers, 1-D to 3-D, plain and transposed: stride, padding (ints, 'same', 'valid', padding modes),
dilation, groups, output_padding."""

from typing import Any, Callable

import math

from .. import ops
from . import functional as F, init
from ._utils import _ntuple, _reverse_repeat_tuple
from .module import Module
from .parameter import Parameter

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    """Shared convolution machinery: argument checks, ``weight`` (out, in / groups, *kernel) or, transposed,
    (in, out / groups, *kernel), and ``bias`` (out), both initialized as PyTorch's."""

    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        ntuple = _ntuple(self._dims, "_ntuple")
        kernel_size, stride, dilation = ntuple(kernel_size), ntuple(stride), ntuple(dilation)
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = ntuple(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = transposed, ntuple(output_padding)
        self.groups, self.padding_mode = groups, padding_mode
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total = d * (k - 1)
                    self._reversed_padding_repeated_twice[2 * i] = total // 2
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - total // 2
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(padding, 2)
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(ops.creation.empty(*shape, *kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(ops.creation.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw the weights and bias with the default initialization."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        text = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            text += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            text += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            text += ", output_padding={output_padding}"
        if self.groups != 1:
            text += ", groups={groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += ", padding_mode={padding_mode}"
        return text.format(**self.__dict__)


class _Conv(_ConvNd):
    _function: Callable[..., Any] | None = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        convolve = type(self)._function
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return convolve(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return convolve(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) (or unbatched (C_in, L)) inputs, as ``torch.nn.Conv1d``.

        >>> _ = agnostic.manual_seed(0)
        >>> conv = agnostic.nn.Conv1d(4, 8, kernel_size=3, padding="same", padding_mode="circular")
        >>> conv
        Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same, padding_mode=circular)
        >>> conv(agnostic.randn(2, 4, 10)).shape
        agnostic.Size([2, 8, 10])
    """

    _dims = 1
    _function = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) (or unbatched (C_in, H, W)) inputs, as ``torch.nn.Conv2d``.

    ``weight`` is (out_channels, in_channels / groups, kh, kw); both it and ``bias`` start as PyTorch's:
    ``kaiming_uniform_(a=sqrt(5))`` and U(-1/sqrt(fan_in), 1/sqrt(fan_in)). ``padding_mode`` other than
    ``'zeros'`` pads with ``F.pad`` first.

        >>> _ = agnostic.manual_seed(0)
        >>> conv = agnostic.nn.Conv2d(3, 8, kernel_size=3, padding=1)
        >>> conv
        Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
        >>> conv(agnostic.randn(2, 3, 16, 16)).shape
        agnostic.Size([2, 8, 16, 16])
        >>> agnostic.nn.Conv2d(3, 8, 3, stride=2)(agnostic.randn(2, 3, 16, 16)).shape
        agnostic.Size([2, 8, 7, 7])
    """

    _dims = 2
    _function = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) (or unbatched (C_in, D, H, W)) inputs, as ``torch.nn.Conv3d``.

        >>> _ = agnostic.manual_seed(0)
        >>> conv = agnostic.nn.Conv3d(2, 4, kernel_size=(1, 3, 3), stride=(1, 2, 2))
        >>> conv
        Conv3d(2, 4, kernel_size=(1, 3, 3), stride=(1, 2, 2))
        >>> conv(agnostic.randn(1, 2, 3, 9, 9)).shape
        agnostic.Size([1, 4, 3, 4, 4])
    """

    _dims = 3
    _function = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _function: Callable[..., Any] | None = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__} takes int or tuple padding, not the string {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """The ``output_padding`` that makes the output ``output_size`` (its trailing spatial sizes), as PyTorch."""
        if output_size is None:
            return self.output_padding
        dims = self._dims
        output_size = list(output_size)[-dims:]
        if len(output_size) != dims:
            raise ValueError(f"ConvTranspose{dims}D: for {input.dim()}D input, output_size must have {dims} or "
                             f"{dims + 2} elements (got {len(output_size) + 0})")
        spatial = input.shape[-dims:]
        extra = []
        for i in range(dims):
            smallest = ((spatial[i] - 1) * self.stride[i] - 2 * self.padding[i]
                        + self.dilation[i] * (self.kernel_size[i] - 1) + 1)
            largest = smallest + self.stride[i] - 1
            if not smallest <= output_size[i] <= largest:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from {smallest} "
                                 f"to {largest} (for an input of {list(spatial)})")
            extra.append(output_size[i] - smallest)
        return tuple(extra)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return type(self)._function(input, self.weight, self.bias, self.stride, self.padding, output_padding,
                                    self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-D transposed convolution (the input-gradient of a convolution), as ``torch.nn.ConvTranspose1d``; ``weight``
    is (in_channels, out_channels / groups, k).

        >>> _ = agnostic.manual_seed(0)
        >>> up = agnostic.nn.ConvTranspose1d(4, 2, kernel_size=4, stride=2, padding=1)
        >>> up
        ConvTranspose1d(4, 2, kernel_size=(4,), stride=(2,), padding=(1,))
        >>> up(agnostic.randn(3, 4, 8)).shape
        agnostic.Size([3, 2, 16])
    """

    _dims = 1
    _function = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-D transposed convolution (the input-gradient of a convolution), as ``torch.nn.ConvTranspose2d``; ``weight``
    is (in_channels, out_channels / groups, kh, kw). ``forward(input, output_size=...)`` picks the output_padding.

        >>> _ = agnostic.manual_seed(0)
        >>> up = agnostic.nn.ConvTranspose2d(4, 2, kernel_size=3, stride=2, padding=1)
        >>> up(agnostic.randn(1, 4, 5, 5)).shape
        agnostic.Size([1, 2, 9, 9])
        >>> up(agnostic.randn(1, 4, 5, 5), output_size=(10, 10)).shape
        agnostic.Size([1, 2, 10, 10])
    """

    _dims = 2
    _function = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-D transposed convolution (the input-gradient of a convolution), as ``torch.nn.ConvTranspose3d``; ``weight``
    is (in_channels, out_channels / groups, kd, kh, kw).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.nn.ConvTranspose3d(2, 1, kernel_size=2, stride=2)(agnostic.randn(1, 2, 2, 3, 3)).shape
        agnostic.Size([1, 1, 4, 6, 6])
    """

    _dims = 3
    _function = staticmethod(F.conv_transpose3d)


__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
