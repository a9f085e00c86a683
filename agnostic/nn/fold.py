"""Fold and Unfold: sliding local blocks to and from columns, as torch.nn.Fold and torch.nn.Unfold."""

from . import functional as F
from .module import Module


class Fold(Module):
    """col2im: sum (N, C * prod(kernel_size), L) columns of sliding blocks back into an (N, C, *output_size)
    tensor (an unbatched (C * prod(kernel_size), L) input gives (C, *output_size)), overlapping values added, as
    ``torch.nn.Fold``.

        >>> fold = agnostic.nn.Fold(output_size=(3, 3), kernel_size=2)
        >>> fold
        Fold(output_size=(3, 3), kernel_size=2, dilation=1, padding=0, stride=1)
        >>> fold(agnostic.ones(1, 4, 4))
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """im2col: each sliding ``kernel_size`` block of an (N, C, H, W) input as a column of an
    (N, C * prod(kernel_size), L) tensor (unbatched (C, H, W) gives (C * prod(kernel_size), L)), as
    ``torch.nn.Unfold``.

        >>> unfold = agnostic.nn.Unfold(kernel_size=2)
        >>> unfold
        Unfold(kernel_size=2, dilation=1, padding=0, stride=1)
        >>> unfold(agnostic.arange(9.0).reshape(1, 1, 3, 3))
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """

    __constants__ = ["kernel_size", "dilation", "padding", "stride"]

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


__all__ = ["Fold", "Unfold"]
