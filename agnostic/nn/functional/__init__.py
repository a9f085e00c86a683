"""agnostic.nn.functional: the stateless forms of the layers, activations and losses, as torch.nn.functional.

Each private module of this package lists its public names in ``__all__``; this namespace is their union.
"""

from ... import _coverage
from ._activation import *  # noqa: F401,F403
from ._attention import *  # noqa: F401,F403
from ._conv import *  # noqa: F401,F403
from ._dropout import *  # noqa: F401,F403
from ._fractional_pooling import *  # noqa: F401,F403
from ._grid_sample import *  # noqa: F401,F403
from ._linear import *  # noqa: F401,F403
from ._linear_cross_entropy import *  # noqa: F401,F403
from ._loss import *  # noqa: F401,F403
from ._lp_pooling import *  # noqa: F401,F403
from ._normalization import *  # noqa: F401,F403
from ._padding import *  # noqa: F401,F403
from ._pooling import *  # noqa: F401,F403
from ._sparse import *  # noqa: F401,F403
from ._unpooling import *  # noqa: F401,F403
from ._upsampling import *  # noqa: F401,F403
from . import _activation, _attention, _conv, _dropout, _fractional_pooling, _grid_sample, _linear, \
    _linear_cross_entropy, _loss, _lp_pooling, \
    _normalization, _padding, _pooling, _sparse, _unpooling, _upsampling

__all__ = sorted(name for part in (_activation, _attention, _conv, _dropout, _fractional_pooling, _grid_sample, _linear,
                                   _linear_cross_entropy, _loss, _lp_pooling,
                                   _normalization, _padding, _pooling, _sparse, _unpooling, _upsampling)
                 for name in part.__all__)


def __getattr__(name):
    """A PyTorch name this module lacks raises an AttributeError saying so, and where the supported ones are."""
    raise _coverage.missing_name_error(__name__, name)
