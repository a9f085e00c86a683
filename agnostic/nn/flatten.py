"""Flatten: merge a range of dimensions into one."""

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


__all__ = ["Flatten"]
