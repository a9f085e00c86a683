"""agnostic: write tensor code once, run it on a CPU (NumPy) or an NVIDIA GPU (CuPy), in PyTorch's device language.

Importing agnostic never imports CuPy or touches a GPU; CUDA starts on first use.
"""

import math as _math
import warnings as _warnings

from ._backends import openblas_wait as _openblas_wait

_openblas_wait.shorten_while_numpy_loads()  # before any module below imports NumPy

# PyTorch computes 1/0, log(-1) and overflow silently (inf/nan); NumPy warns. Silence those warnings only where
# agnostic's own modules issue them, at no per-op cost.
_warnings.filterwarnings("ignore", r"(divide by zero|invalid value|overflow) encountered", RuntimeWarning,
                         r"agnostic\.")
from ._device import Device, device, get_default_device, set_default_device
from ._dtypes import (
    bfloat16, bool, complex64, complex128, dtype, finfo, float16, float32, float64, get_default_dtype, iinfo, int8,
    int16, int32, int64, promote_types, set_default_dtype, uint8,
)
from ._legacy_types import cpu_types as _cpu_types
from ._size import Size
from ._layout import channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided
from . import _coverage, _fork_guard
from ._backends import host_memory as _host_memory
from .ops.creation import (
    arange, as_tensor, asarray, empty, empty_like, eye, from_dlpack, from_numpy, full, full_like, linspace, logspace,
    ones, ones_like, scalar_tensor, tensor, zeros, zeros_like,
)
from .ops.random import (
    Generator, bernoulli, get_rng_state, initial_seed, manual_seed, multinomial, normal, rand, rand_like, randint,
    randint_like, randn, randn_like, randperm, seed, set_rng_state,
)
from .ops.shape import broadcast_shapes
from ._tensor_classes import Tensor
# Every declared op and alias (agnostic.add, agnostic.sum, agnostic.cat...): each ops module's __all__ lists its ops.
from .ops.elementwise import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .ops.shape import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.statistics import *  # noqa: F401,F403
from .ops.complex import *  # noqa: F401,F403
from .ops.dtype_queries import (
    can_cast, is_complex, is_conj, is_floating_point, is_inference, is_neg, is_nonzero, is_same_size, is_signed,
    is_tensor, numel, result_type,
)
from .ops.windows import *  # noqa: F401,F403
from .ops.numerical import *  # noqa: F401,F403
from .ops.spectral import *  # noqa: F401,F403
from .ops.strided import *  # noqa: F401,F403
from .ops.sparse import *  # noqa: F401,F403
from .ops.storage import *  # noqa: F401,F403
from .ops.factorizations import *  # noqa: F401,F403
from .ops.activations import *  # noqa: F401,F403
from . import autograd, cuda
from . import accelerator
from . import amp, fft, linalg, special
from .amp import autocast, get_autocast_dtype, is_autocast_enabled
from .cuda import amp as _cuda_amp  # noqa: F401  (agnostic.cuda.amp)
from . import nn, optim, utils
from . import func
from .func import vmap
from ._torch_level import *  # noqa: F401,F403
from ._autocast_legacy import *  # noqa: F401,F403
from ._sampling import *  # noqa: F401,F403
from ._aten_extras import *  # noqa: F401,F403
from ._rnn_functions import *  # noqa: F401,F403
from ._batch_norm_functions import *  # noqa: F401,F403
from .storage import *  # noqa: F401,F403
from . import sparse, storage
from . import backends, distributed
from .backends import get_float32_matmul_precision, set_float32_matmul_precision
from .serialization import load, save
from ._threads import get_num_threads, set_num_threads
from ._compile import compile
from ._fusion import fuse
from ._printing import get_printoptions, set_printoptions
from ._determinism import (
    are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled, use_deterministic_algorithms,
)
from ._streams import Event, Stream, current_stream, stream
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled, set_anomaly_enabled

half, float, double = float16, float32, float64
# PyTorch's constants: torch.pi, torch.e, torch.inf, torch.nan, and torch.newaxis (None, for indexing).
pi, e, inf, nan, newaxis = _math.pi, _math.e, _math.inf, _math.nan, None
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128

_fork_guard.install()
_host_memory.keep_large_blocks()
_openblas_wait.loaded()

# Every public name: the imports above, the declared ops and the legacy types (computed, never listed by hand).
__all__ = sorted([name for name, value in globals().items()
                  if not name.startswith("_") and not isinstance(value, type(_warnings))] + list(_cpu_types))


def __getattr__(name):
    """The legacy tensor types (``agnostic.FloatTensor``...), and ``agnostic.__version__``: the installed
    distribution's version, read from its metadata on first use (so that ``import agnostic`` doesn't pay for
    ``importlib.metadata``). Other names raise an AttributeError that says when PyTorch has the name and agnostic
    doesn't (``agnostic.jit``)."""
    if name in _cpu_types:
        return _cpu_types[name]
    if name == "__version__":
        from importlib import metadata

        distributions = metadata.packages_distributions().get(__name__, [])
        try:
            return metadata.version(distributions[0] if distributions else __name__)
        except metadata.PackageNotFoundError:
            return "0+unknown"  # run from a source tree that was never installed
    raise _coverage.missing_name_error(__name__, name)


def __dir__():
    return sorted(set(globals()) | set(_cpu_types) | {"__version__"})
