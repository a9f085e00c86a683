"""PixelShuffle, PixelUnshuffle and ChannelShuffle layers, as torch.nn's."""

from . import functional as F
from .module import Module


class PixelShuffle(Module):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r), as ``torch.nn.PixelShuffle``.

        >>> shuffle = agnostic.nn.PixelShuffle(2)
        >>> shuffle
        PixelShuffle(upscale_factor=2)
        >>> shuffle(agnostic.zeros(1, 8, 3, 3)).shape
        agnostic.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W), as ``torch.nn.PixelUnshuffle``.

        >>> agnostic.nn.PixelUnshuffle(2)(agnostic.zeros(1, 2, 6, 6)).shape
        agnostic.Size([1, 8, 3, 3])
    """

    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """(N, g * k, *) -> (N, k * g, *): interleave ``groups`` groups of channels, as ``torch.nn.ChannelShuffle``.

        >>> shuffle = agnostic.nn.ChannelShuffle(2)
        >>> shuffle
        ChannelShuffle(groups=2)
        >>> shuffle(agnostic.arange(4.0).reshape(1, 4, 1, 1)).flatten()
        tensor([0., 2., 1., 3.])
    """

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]
