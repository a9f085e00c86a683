"""agnostic.nn.modules: PyTorch's ``torch.nn.modules`` import paths for agnostic's layers.

Programs written for PyTorch import layers through their defining modules (``from torch.nn.modules.loss import
_Loss``, ``torch.nn.modules.rnn.LSTM``, ``torch.nn.modules.utils._pair``). Each submodule here holds the same objects
as ``agnostic.nn`` (``agnostic.nn.modules.rnn.LSTM is agnostic.nn.LSTM``, not a copy), the private bases PyTorch
code subclasses where agnostic has them (``_Loss``, ``_WeightedLoss``, ``_ConvNd``, ``_BatchNorm``, ``_NormBase``,
``_DropoutNd``, ``_MaxPoolNd``...), and for a PyTorch name agnostic lacks, the AttributeError ``agnostic.nn`` gives.
"""

from ... import _coverage
from . import activation, adaptive, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold, \
    instancenorm, lazy, linear, loss, module, normalization, padding, pixelshuffle, pooling, rnn, sparse, \
    transformer, upsampling, utils
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .channelshuffle import *  # noqa: F401,F403
from .container import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403

_PARTS = (activation, adaptive, batchnorm, channelshuffle, container, conv, distance, dropout, flatten, fold,
          instancenorm, lazy, linear, loss, module, normalization, padding, pixelshuffle, pooling, rnn, sparse,
          transformer, upsampling)
__all__ = sorted({name for part in _PARTS for name in part.__all__})


def __getattr__(name):
    """A PyTorch layer this package lacks raises the AttributeError ``agnostic.nn`` gives for it."""
    error = _coverage.missing_name_error("agnostic.nn", name)
    raise AttributeError(str(error).replace("module 'agnostic.nn'", f"module {__name__!r}", 1))
