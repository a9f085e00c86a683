"""Padding layers (ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad in 1d/2d/3d) over ``F.pad``."""

from . import functional as F
from ._utils import _ntuple
from .module import Module

_PADDING_OF = {1: _ntuple(2, "_pair"), 2: _ntuple(4, "_quadruple"), 3: _ntuple(6, "_sextuple")}


class _PadNd(Module):
    """A fixed ``F.pad`` of the last ``_dims`` dimensions in ``_mode``; ``padding`` is an int (every side) or a
    tuple ``(left, right[, top, bottom[, front, back]])``."""

    _mode = "constant"
    _dims = 1

    def __init__(self, padding):
        super().__init__()
        self.padding = _PADDING_OF[self._dims](padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad:
    """Mixed in before a ConstantPadNd: value 0, so ``isinstance(ZeroPad2d(1), ConstantPad2d)`` as in PyTorch."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        if input.dim() not in (self._dims + 1, self._dims + 2):
            raise ValueError(f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with ``value``: ``padding`` is an int or ``(left, right)``.

        >>> agnostic.nn.ConstantPad1d((1, 2), 3.5)(agnostic.tensor([[1.0, 2.0]]))
        tensor([[3.5000, 1.0000, 2.0000, 3.5000, 3.5000]])
    """

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with ``value``: ``padding`` is an int or ``(left, right, top, bottom)``.

        >>> agnostic.nn.ConstantPad2d(1, -1.0)(agnostic.ones(1, 1, 2))
        tensor([[[-1., -1., -1., -1.],
                 [-1.,  1.,  1., -1.],
                 [-1., -1., -1., -1.]]])
    """

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with ``value``: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``.

        >>> agnostic.nn.ConstantPad3d((1, 0, 0, 0, 0, 1), 2.0)(agnostic.ones(1, 1, 1, 1)).flatten()
        tensor([2., 1., 2., 2.])
    """

    _dims = 3


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pad the last dimension with zeros: ``padding`` is an int or ``(left, right)``.

        >>> agnostic.nn.ZeroPad1d((2, 0))(agnostic.tensor([[1.0, 2.0]]))
        tensor([[0., 0., 1., 2.]])
    """

    _dims = 1


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pad the last two dimensions with zeros: ``padding`` is an int or ``(left, right, top, bottom)``.

        >>> agnostic.nn.ZeroPad2d((1, 0, 0, 1))(agnostic.tensor([[[1.0, 2.0]]]))
        tensor([[[0., 1., 2.],
                 [0., 0., 0.]]])
    """

    _dims = 2


class ZeroPad3d(_ZeroPad, ConstantPad3d):
    """Pad the last three dimensions with zeros: ``padding`` is an int or
    ``(left, right, top, bottom, front, back)``.

        >>> agnostic.nn.ZeroPad3d(1)(agnostic.ones(1, 1, 1, 1)).shape
        agnostic.Size([1, 3, 3, 3])
    """

    _dims = 3


class ReflectionPad1d(_ReflectionPadNd):
    """Pad the last dimension of a ``(C, W)`` or ``(N, C, W)`` input by mirroring it about its edge elements.

        >>> agnostic.nn.ReflectionPad1d(2)(agnostic.tensor([[1.0, 2.0, 3.0]]))
        tensor([[3., 2., 1., 2., 3., 2., 1.]])
    """

    _dims = 1


class ReflectionPad2d(_ReflectionPadNd):
    """Pad the last two dimensions of a ``(C, H, W)`` or ``(N, C, H, W)`` input by mirroring about the edges.

        >>> agnostic.nn.ReflectionPad2d((1, 1, 1, 0))(agnostic.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
        tensor([[[4., 3., 4., 3.],
                 [2., 1., 2., 1.],
                 [4., 3., 4., 3.]]])
    """

    _dims = 2


class ReflectionPad3d(_ReflectionPadNd):
    """Pad the last three dimensions of a ``(C, D, H, W)`` or ``(N, C, D, H, W)`` input by mirroring.

        >>> agnostic.nn.ReflectionPad3d(1)(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)).shape
        agnostic.Size([1, 1, 4, 4, 4])
    """

    _dims = 3


class ReplicationPad1d(_ReplicationPadNd):
    """Pad the last dimension of a ``(C, W)`` or ``(N, C, W)`` input by repeating its edge elements.

        >>> agnostic.nn.ReplicationPad1d((1, 2))(agnostic.tensor([[1.0, 2.0]]))
        tensor([[1., 1., 2., 2., 2.]])
    """

    _dims = 1


class ReplicationPad2d(_ReplicationPadNd):
    """Pad the last two dimensions of a ``(C, H, W)`` or ``(N, C, H, W)`` input by repeating the edges.

        >>> agnostic.nn.ReplicationPad2d(1)(agnostic.tensor([[[1.0, 2.0]]]))
        tensor([[[1., 1., 2., 2.],
                 [1., 1., 2., 2.],
                 [1., 1., 2., 2.]]])
    """

    _dims = 2


class ReplicationPad3d(_ReplicationPadNd):
    """Pad the last three dimensions of a ``(C, D, H, W)`` or ``(N, C, D, H, W)`` input by repeating the edges.

        >>> agnostic.nn.ReplicationPad3d((1, 1, 0, 0, 0, 0))(agnostic.ones(1, 1, 1, 2)).shape
        agnostic.Size([1, 1, 1, 4])
    """

    _dims = 3


class CircularPad1d(_CircularPadNd):
    """Pad the last dimension of a ``(C, W)`` or ``(N, C, W)`` input by wrapping around.

        >>> agnostic.nn.CircularPad1d((1, 2))(agnostic.tensor([[1.0, 2.0, 3.0]]))
        tensor([[3., 1., 2., 3., 1., 2.]])
    """

    _dims = 1


class CircularPad2d(_CircularPadNd):
    """Pad the last two dimensions of a ``(C, H, W)`` or ``(N, C, H, W)`` input by wrapping around.

        >>> agnostic.nn.CircularPad2d((1, 0, 1, 0))(agnostic.tensor([[[1.0, 2.0], [3.0, 4.0]]]))
        tensor([[[4., 3., 4.],
                 [2., 1., 2.],
                 [4., 3., 4.]]])
    """

    _dims = 2


class CircularPad3d(_CircularPadNd):
    """Pad the last three dimensions of a ``(C, D, H, W)`` or ``(N, C, D, H, W)`` input by wrapping around.

        >>> agnostic.nn.CircularPad3d(1)(agnostic.ones(1, 1, 2, 2, 2)).shape
        agnostic.Size([1, 1, 4, 4, 4])
    """

    _dims = 3


__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
