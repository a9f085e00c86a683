"""agnostic.nn.utils: gradient clipping, parameter/vector conversion, packed sequences, parametrizations, weight and
spectral normalization, batch-norm fusion and functional calls, as torch.nn.utils."""

from . import parametrizations, parametrize, rnn, stateless
from ._spectral_norm import *  # noqa: F401,F403
from ._weight_norm import *  # noqa: F401,F403
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from .fusion import *  # noqa: F401,F403
from .init import *  # noqa: F401,F403
from .memory_format import *  # noqa: F401,F403
from . import _spectral_norm, _weight_norm, clip_grad, convert_parameters, fusion, init, memory_format

__all__ = sorted(name for part in (_spectral_norm, _weight_norm, clip_grad, convert_parameters, fusion, init,
                                   memory_format)
                 for name in part.__all__) + ["parametrizations", "parametrize", "rnn", "stateless"]
