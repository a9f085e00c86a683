"""agnostic.cuda: PyTorch's torch.cuda API over CuPy. Importing it never touches the GPU; CUDA starts on first use."""

from .._legacy_types import cuda_types as _cuda_types
from ._devices import (
    can_device_access_peer, current_device, device, device_count, device_of, get_device_capability, get_device_name,
    get_device_properties, init, is_available, is_initialized, set_device, synchronize,
)
from ._random import (
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all, set_rng_state,
    set_rng_state_all,
)
from . import comm, graphs, jiterator, memory, nccl, nvtx, profiler, random, streams
from . import _capabilities, _errors, _memory_extras, _nvml, _sync_debug
from ._capabilities import *  # noqa: F401,F403
from ._errors import *  # noqa: F401,F403
from ._memory_extras import *  # noqa: F401,F403
from ._nvml import *  # noqa: F401,F403
from ._sync_debug import *  # noqa: F401,F403
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables
from .memory import (
    OutOfMemoryError, empty_cache, list_gpu_processes, max_memory_allocated, max_memory_cached, max_memory_reserved,
    mem_get_info, memory_allocated, memory_cached, memory_reserved, memory_snapshot, memory_stats,
    memory_stats_as_nested_dict, memory_summary, reset_accumulated_memory_stats, reset_max_memory_allocated,
    reset_max_memory_cached, reset_peak_memory_stats,
)
from .streams import (
    Event, ExternalStream, Stream, StreamContext, current_blas_handle, current_stream, default_stream,
    get_stream_from_external, ipc_collect, set_stream, stream,
)

memory.install()

__all__ = [
    "CUDAGraph", "Event", "ExternalStream", "Stream", "StreamContext", "comm", "get_stream_from_external", "graph",
    "graph_pool_handle", "graphs",
    "is_current_stream_capturing", "make_graphed_callables", "current_blas_handle", "current_stream", "default_stream",
    "ipc_collect", "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "nvtx", "set_stream",
    "stream", "streams", "memory", "OutOfMemoryError", "empty_cache",
    "list_gpu_processes", "max_memory_allocated", "max_memory_cached", "max_memory_reserved", "mem_get_info",
    "memory_allocated", "memory_cached", "memory_reserved", "memory_snapshot", "memory_stats",
    "memory_stats_as_nested_dict", "memory_summary", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "reset_max_memory_cached", "reset_peak_memory_stats",
    "can_device_access_peer", "current_device", "device", "device_count", "device_of", "get_device_capability",
    "get_device_name", "get_device_properties", "init", "initial_seed", "is_available", "is_initialized", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "set_device", "synchronize", *sorted(_cuda_types),
    "jiterator", "nccl", "profiler", "random",
    *_capabilities.__all__, *_errors.__all__, *_memory_extras.__all__, *_nvml.__all__, *_sync_debug.__all__,
]


def __getattr__(name):
    """The legacy CUDA tensor types (``agnostic.cuda.FloatTensor``...)."""
    if name in _cuda_types:
        return _cuda_types[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_cuda_types))
