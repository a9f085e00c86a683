"""Dropout: random zeroing in training mode, the identity in eval mode."""

from . import functional as F
from .module import Module


class Dropout(Module):
    """Zero each element with probability ``p`` while training and scale the rest by ``1 / (1 - p)``; the
    identity in eval mode. Masks come from agnostic's generator (``agnostic.manual_seed`` reproduces them).

        >>> _ = agnostic.manual_seed(0)
        >>> dropout = agnostic.nn.Dropout(p=0.5)
        >>> dropout(agnostic.ones(8))
        tensor([2., 2., 0., 2., 2., 2., 2., 0.])
        >>> dropout.eval()(agnostic.ones(8))
        tensor([1., 1., 1., 1., 1., 1., 1., 1.])
    """

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
