"""agnostic.optim: PyTorch's optimizers and learning-rate schedulers, on every device.

Each optimizer's module lists its public names in ``__all__``; this namespace is their union.
"""

from .. import _coverage
from . import lr_scheduler, swa_utils
from .adafactor import *  # noqa: F401,F403
from .adadelta import *  # noqa: F401,F403
from .adagrad import *  # noqa: F401,F403
from .adam import *  # noqa: F401,F403
from .adamax import *  # noqa: F401,F403
from .adamw import *  # noqa: F401,F403
from .asgd import *  # noqa: F401,F403
from .lbfgs import *  # noqa: F401,F403
from .muon import *  # noqa: F401,F403
from .nadam import *  # noqa: F401,F403
from .optimizer import *  # noqa: F401,F403
from .radam import *  # noqa: F401,F403
from .rmsprop import *  # noqa: F401,F403
from .rprop import *  # noqa: F401,F403
from .sgd import *  # noqa: F401,F403
from .sparse_adam import *  # noqa: F401,F403
from . import adadelta, adafactor, adagrad, adam, adamax, adamw, asgd, lbfgs, muon, nadam, optimizer, radam, \
    rmsprop, rprop, sgd, sparse_adam

__all__ = sorted(name for part in (adadelta, adafactor, adagrad, adam, adamax, adamw, asgd, lbfgs, muon, nadam,
                                   optimizer, radam, rmsprop, rprop, sgd, sparse_adam)
                 for name in part.__all__) + ["lr_scheduler", "swa_utils"]


def __getattr__(name):
    """A PyTorch name this module lacks raises an AttributeError saying so, and where the supported ones are."""
    raise _coverage.missing_name_error(__name__, name)
