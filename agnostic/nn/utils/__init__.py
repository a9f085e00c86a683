"""agnostic.nn.utils: gradient clipping, parameter/vector conversion, packed sequences and parametrizations, as
torch.nn.utils."""

from . import parametrizations, rnn
from .clip_grad import *  # noqa: F401,F403
from .convert_parameters import *  # noqa: F401,F403
from . import clip_grad, convert_parameters

__all__ = sorted(clip_grad.__all__ + convert_parameters.__all__) + ["parametrizations", "rnn"]
