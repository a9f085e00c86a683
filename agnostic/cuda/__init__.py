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
from . import comm, graphs, memory, nvtx, streams
from .graphs import CUDAGraph, graph, graph_pool_handle, is_current_stream_capturing, make_graphed_callables
from .memory import (
    OutOfMemoryError, empty_cache, list_gpu_processes, max_memory_allocated, max_memory_cached, max_memory_reserved,
    mem_get_info, memory_allocated, memory_cached, memory_reserved, memory_snapshot, memory_stats,
    memory_stats_as_nested_dict, memory_summary, reset_accumulated_memory_stats, reset_max_memory_allocated,
    reset_max_memory_cached, reset_peak_memory_stats,
)
from .streams import (
    Event, Stream, StreamContext, current_blas_handle, current_stream, default_stream, ipc_collect, set_stream, stream,
)

memory.install()

__all__ = [
    "CUDAGraph", "Event", "Stream", "StreamContext", "comm", "graph", "graph_pool_handle", "graphs",
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
]


def __getattr__(name):
    """The legacy CUDA tensor types (``agnostic.cuda.FloatTensor``...)."""
    if name in _cuda_types:
        return _cuda_types[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_cuda_types))
