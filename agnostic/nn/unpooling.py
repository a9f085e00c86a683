"""MaxUnpool1d, MaxUnpool2d and MaxUnpool3d: max pooling's partial inverse, over ``F.max_unpool1d``/2d/3d."""

from collections.abc import Callable

from ._utils import _pair, _single, _triple
from .functional import _unpooling
from .module import Module


class _MaxUnpoolNd(Module):
    _tuple = staticmethod(_single)
    _function: Callable  # F.max_unpool1d, 2d or 3d, set by each subclass

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = self._tuple(kernel_size)
        self.stride = self._tuple(stride if stride is not None else kernel_size)
        self.padding = self._tuple(padding)

    def forward(self, input, indices, output_size=None):
        return type(self)._function(input, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Put the values of ``MaxPool1d(..., return_indices=True)`` back at their positions, zeros elsewhere;
    ``output_size`` picks among the sizes that pool to the input's.

        >>> pool, unpool = agnostic.nn.MaxPool1d(2, return_indices=True), agnostic.nn.MaxUnpool1d(2)
        >>> unpool
        MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))
        >>> unpool(*pool(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0, 5.0]]])), output_size=[1, 1, 5])
        tensor([[[0., 3., 2., 0., 0.]]])
    """

    _function = staticmethod(_unpooling.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Put the values of ``MaxPool2d(..., return_indices=True)`` back at their positions, zeros elsewhere.

        >>> pool, unpool = agnostic.nn.MaxPool2d(2, return_indices=True), agnostic.nn.MaxUnpool2d(2)
        >>> unpool(*pool(agnostic.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])))
        tensor([[[[0., 0.],
                  [4., 0.]]]])
    """

    _tuple = staticmethod(_pair)
    _function = staticmethod(_unpooling.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Put the values of ``MaxPool3d(..., return_indices=True)`` back at their positions, zeros elsewhere, as
    ``torch.nn.MaxUnpool3d``.

        >>> pool, unpool = agnostic.nn.MaxPool3d(2, return_indices=True), agnostic.nn.MaxUnpool3d(2)
        >>> unpool
        MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))
        >>> unpool(*pool(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2))).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """

    _tuple = staticmethod(_triple)
    _function = staticmethod(_unpooling.max_unpool3d)


__all__ = ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]
