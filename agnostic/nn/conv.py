"""Conv2d: 2-D convolution (cross-correlation) with stride, padding (ints, 'same', 'valid'), dilation, groups."""

import math

from .. import ops
from . import functional as F, init
from ._utils import _pair, _reverse_repeat_tuple
from .module import Module
from .parameter import Parameter

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class Conv2d(Module):
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

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _pair(kernel_size), _pair(stride), _pair(dilation)
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _pair(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.transposed, self.output_padding = False, (0, 0)
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
        self.weight = Parameter(ops.creation.empty(out_channels, in_channels // groups, *kernel_size, device=device,
                                                   dtype=dtype))
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

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return F.conv2d(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

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
