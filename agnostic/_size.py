"""Size: the tuple subclass that ``Tensor.shape`` returns, printed as PyTorch prints ``torch.Size``."""

import math


class Size(tuple):
    """A tuple of dimension sizes: ``agnostic.Size([2, 3])``.

        >>> agnostic.zeros(2, 3).shape
        agnostic.Size([2, 3])
        >>> s = agnostic.Size([2, 3, 4])
        >>> s[1:], s.numel(), s == (2, 3, 4)
        (agnostic.Size([3, 4]), 24, True)
    """

    __slots__ = ()

    def __new__(cls, sizes=()):
        return tuple.__new__(cls, (int(s) for s in sizes))

    def numel(self):
        """The number of elements a tensor of this shape holds."""
        return math.prod(self)

    def __repr__(self):
        return f"agnostic.Size({list(self)})"

    def __getitem__(self, key):
        result = tuple.__getitem__(self, key)
        return Size(result) if isinstance(key, slice) else result

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))
