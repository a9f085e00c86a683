"""agnostic.nn: neural-network modules, layers, losses, initializers and functional ops, as torch.nn.

Everything is written with agnostic ops, so the same model runs on NumPy (CPU) and CuPy (CUDA). Each module of this
package lists its public names in ``__all__``; this namespace is their union.
"""

from .. import _coverage
from . import functional, grad, init, parallel, utils
from .parallel import DataParallel
from .activation import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .containers import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .fractional_pooling import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .linear_cross_entropy import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .lp_pooling import *  # noqa: F401,F403
from .module import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .parameter import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .sync_batchnorm import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .unpooling import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from . import activation, adaptive, attention, containers, conv, dropout, flatten, fold, fractional_pooling, lazy, \
    linear, linear_cross_entropy, loss, lp_pooling, module, normalization, padding, parameter, pixelshuffle, pooling, rnn, sparse, \
    sync_batchnorm, transformer, unpooling, upsampling

__all__ = sorted(name for part in (activation, adaptive, attention, containers, conv, dropout, flatten, fold,
                                   fractional_pooling, lazy, linear, linear_cross_entropy, loss, lp_pooling, module, normalization, padding,
                                   parameter, pixelshuffle, pooling, rnn, sparse, sync_batchnorm, transformer,
                                   unpooling, upsampling)
                 for name in part.__all__) + ["DataParallel", "functional", "grad", "init", "modules", "parallel", "utils"]

from . import modules  # last: PyTorch's torch.nn.modules.* paths, over the layers above  # noqa: E402


def __getattr__(name):
    """A PyTorch name this module lacks raises an AttributeError saying so, and where the supported ones are."""
    raise _coverage.missing_name_error(__name__, name)
