"""agnostic.cuda: PyTorch's torch.cuda API over CuPy. Importing it never touches the GPU; CUDA starts on first use."""

from .._legacy_types import cuda_types as _cuda_types
from ._devices import (
    current_device, device, device_count, device_of, get_device_capability, get_device_name, get_device_properties,
    init, is_available, is_initialized, set_device, synchronize,
)
from ._random import initial_seed, manual_seed, manual_seed_all, seed, seed_all
from . import comm, nvtx, streams
from .streams import (
    Event, Stream, StreamContext, current_blas_handle, current_stream, default_stream, ipc_collect, set_stream, stream,
)

globals().update(_cuda_types)

__all__ = [
    "Event", "Stream", "StreamContext", "comm", "current_blas_handle", "current_stream", "default_stream",
    "ipc_collect", "nvtx", "set_stream", "stream", "streams",
    "current_device", "device", "device_count", "device_of", "get_device_capability", "get_device_name",
    "get_device_properties", "init", "initial_seed", "is_available", "is_initialized", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "set_device", "synchronize", *sorted(_cuda_types),
]
