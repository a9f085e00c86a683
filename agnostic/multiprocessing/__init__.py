"""agnostic.multiprocessing: the standard ``multiprocessing`` module, with tensors shared between processes.

A drop-in for ``multiprocessing`` (everything it has is here) that registers reducers for ``Tensor`` (every
subclass, ``nn.Parameter`` included): a CPU tensor sent through a ``Queue``, a ``Pool`` or a ``Process``'s arguments
is moved to shared memory once and the receiver maps the same pages; a CUDA tensor travels as a CUDA IPC handle
(``spawn`` or ``forkserver`` start methods only) and the receiver views the same GPU memory, and an interprocess
``agnostic.cuda.Event`` as its IPC handle. In-place writes on either side are seen by the other. ``spawn`` starts
processes running a function, as ``torch.multiprocessing.spawn``. ``import agnostic`` doesn't load this module (nor
the standard one): ``share_memory_``, the DataLoader's workers and ``cuda.ipc_collect`` import it on first use.
"""

import importlib as _importlib
import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F401,F403

from . import cuda_ipc, sharing
from .reductions import init_reductions as _init_reductions, register_tensor_class
from .sharing import get_all_sharing_strategies, get_sharing_strategy, set_sharing_strategy
from .spawn import (
    ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException, spawn, start_processes,
)

__all__ = [
    "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException",
    "register_tensor_class", *_multiprocessing.__all__,
]


def __getattr__(name):
    """Anything else of the standard module (``connection``, ``pool``, ``shared_memory``...)."""
    try:
        return getattr(_multiprocessing, name)
    except AttributeError:
        pass
    try:
        return _importlib.import_module(f"multiprocessing.{name}")
    except ImportError:
        raise AttributeError(f"module 'agnostic.multiprocessing' has no attribute {name!r}") from None


_init_reductions()
