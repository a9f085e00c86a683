"""Dropout, the channel-wise Dropout1d/2d/3d and SELU's AlphaDropout/FeatureAlphaDropout: random dropping in training
mode, the identity in eval mode."""

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

    _function = staticmethod(F.dropout)

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return self._function(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` inputs while training (``F.dropout1d``).

        >>> agnostic.nn.Dropout1d(0.5).eval()(agnostic.ones(1, 2, 3)).sum()
        tensor(6.)
    """

    _function = staticmethod(F.dropout1d)


class Dropout2d(Dropout):
    """Zero whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` inputs while training (``F.dropout2d``).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.nn.Dropout2d(0.5)(agnostic.ones(1, 4, 2, 2)).sum(dim=(2, 3))
        tensor([[8., 8., 0., 8.]])
    """

    _function = staticmethod(F.dropout2d)


class Dropout3d(Dropout):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs while training (``F.dropout3d``).

        >>> agnostic.nn.Dropout3d(0.5).eval()(agnostic.ones(1, 2, 1, 1, 1)).sum()
        tensor(2.)
    """

    _function = staticmethod(F.dropout3d)


class AlphaDropout(Dropout):
    """Alpha dropout for SELU networks while training (``F.alpha_dropout``): dropped elements take SELU's
    saturation value and an affine map keeps a unit normal input's mean 0 and variance 1.

        >>> _ = agnostic.manual_seed(0)
        >>> round(agnostic.nn.AlphaDropout(0.2)(agnostic.randn(100000)).std().item(), 1)
        1.0
        >>> agnostic.nn.AlphaDropout(0.2).eval()(agnostic.ones(2))
        tensor([1., 1.])
    """

    _function = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(Dropout):
    """Alpha dropout of whole channels of an ``(N, C, ...)`` input while training (``F.feature_alpha_dropout``).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.nn.FeatureAlphaDropout(0.5)(agnostic.zeros(1, 2, 2))
        tensor([[[0.7792, 0.7792],
                 [0.7792, 0.7792]]])
    """

    _function = staticmethod(F.feature_alpha_dropout)


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
