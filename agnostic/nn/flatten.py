"""Flatten (merge a range of dimensions into one) and Unflatten (split one dimension into several)."""

from .module import Module


class Flatten(Module):
    """Flatten dimensions ``start_dim..end_dim`` (by default all but the batch dimension).

        >>> agnostic.nn.Flatten()(agnostic.zeros(2, 3, 4, 5)).shape
        agnostic.Size([2, 60])
        >>> agnostic.nn.Flatten(0, 1)(agnostic.zeros(2, 3, 4)).shape
        agnostic.Size([6, 4])
    """

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dimension ``dim`` into ``unflattened_size`` (a tuple or list of ints; one of them may be -1).

        >>> layer = agnostic.nn.Unflatten(1, (2, 5))
        >>> layer
        Unflatten(dim=1, unflattened_size=(2, 5))
        >>> layer(agnostic.zeros(3, 10)).shape
        agnostic.Size([3, 2, 5])
    """

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for position, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(f"unflattened_size must be tuple of ints, but found element of type "
                                f"{type(size).__name__} at pos {position}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = ["Flatten", "Unflatten"]
