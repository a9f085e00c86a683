"""Page-locked (pinned) host memory from a CuPy pinned memory pool: what asynchronous copies between the host and a
GPU go through; with PyTorch's host allocator statistics (``torch.cuda.host_memory_stats``).

agnostic keeps a pool of its own (a ``cupy.cuda.PinnedMemoryPool`` whose blocks come from ``_new_block``), so it sees
each block the pool gets from ``cudaHostAlloc`` and gives back (``allocations``, ``allocated_bytes``) and each
request handed out and returned (``active_requests``, ``active_bytes``). Counting costs one small object per pinned
array, next to the copy it is made for.
"""

import threading
import time

import numpy

from .cupy_loader import require_cupy

_FAMILIES = ("allocations", "allocated_bytes", "active_requests", "active_bytes")
_FIGURES = ("current", "peak", "allocated", "freed")


class _HostStats:
    """PyTorch's host allocator figures: per family current, peak and the totals added and removed; and the time
    spent in ``cudaHostAlloc`` and ``cudaFreeHost`` (microseconds)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.figures = {family: dict.fromkeys(_FIGURES, 0) for family in _FAMILIES}
        self.timings = {"host_alloc_time": [], "host_free_time": []}

    def change(self, count_family, bytes_family, size, sign):
        with self.lock:
            for family, amount in ((count_family, sign), (bytes_family, sign * size)):
                figures = self.figures[family]
                figures["current"] += amount
                figures["allocated" if amount > 0 else "freed"] += abs(amount)
                figures["peak"] = max(figures["peak"], figures["current"])

    def time(self, name, seconds):
        with self.lock:
            self.timings[name].append(int(seconds * 1e6))

    def nested(self):
        with self.lock:
            result = {family: dict(figures) for family, figures in self.figures.items()}
            result["num_host_alloc"] = result["allocations"]["allocated"]
            result["num_host_free"] = result["allocations"]["freed"]
            for name, samples in self.timings.items():
                total, count = sum(samples), len(samples)
                result[name] = {"total": total, "max": max(samples, default=0), "min": min(samples, default=0),
                                "count": count, "avg": total // count if count else 0}
        return result

    def reset_peaks(self):
        with self.lock:
            for figures in self.figures.values():
                figures["peak"] = figures["current"]

    def reset_accumulated(self):
        with self.lock:
            for figures in self.figures.values():
                figures["allocated"] = figures["freed"] = 0
            for samples in self.timings.values():
                samples.clear()


stats = _HostStats()


class _HostBlock:
    """A block the pool got from ``cudaHostAlloc`` (``memory``, CuPy's PinnedMemory); freed, it is counted."""

    __slots__ = ("memory", "ptr", "size")

    def __init__(self, memory):
        self.memory, self.ptr, self.size = memory, memory.ptr, memory.size

    def __del__(self):
        start = time.perf_counter()
        self.memory = None  # CuPy's PinnedMemory calls cudaFreeHost as it goes
        stats.time("host_free_time", time.perf_counter() - start)
        stats.change("allocations", "allocated_bytes", self.size, -1)


class _Request:
    """A pinned block handed out by the pool (``pooled``: the pool's pointer, holding it); freed, it is counted."""

    __slots__ = ("pooled", "ptr", "size")

    def __init__(self, pooled):
        self.pooled, self.ptr, self.size = pooled, pooled.ptr, pooled.size()
        stats.change("active_requests", "active_bytes", self.size, 1)

    def __del__(self):
        stats.change("active_requests", "active_bytes", self.size, -1)


def _new_block(size):
    """The pool's allocator: ``size`` bytes from ``cudaHostAlloc`` (portable, as CuPy's default), counted."""
    cupy = require_cupy()
    start = time.perf_counter()
    memory = cupy.cuda.PinnedMemory(size, cupy.cuda.runtime.hostAllocPortable)
    stats.time("host_alloc_time", time.perf_counter() - start)
    stats.change("allocations", "allocated_bytes", size, 1)
    return cupy.cuda.PinnedMemoryPointer(_HostBlock(memory), 0)


_pool: list = []  # agnostic's pinned memory pool, made on first use


def _pinned_pool(cupy):
    if not _pool:
        _pool.append(cupy.cuda.PinnedMemoryPool(_new_block))
    return _pool[0]


def pinned_empty(shape, numpy_dtype):
    """An uninitialized NumPy array in page-locked memory from agnostic's pinned memory pool."""
    cupy = require_cupy()
    count = int(numpy.prod(shape, dtype=numpy.int64))
    pooled = _pinned_pool(cupy).malloc(max(count, 1) * numpy_dtype.itemsize)
    memory = cupy.cuda.PinnedMemoryPointer(_Request(pooled), 0)
    return numpy.frombuffer(memory, numpy_dtype, count).reshape(shape)


def pinned_copy(array):
    """A copy of a NumPy array in pinned memory."""
    pinned = pinned_empty(array.shape, array.dtype)
    numpy.copyto(pinned, array)
    return pinned


def free_cached_blocks():
    """Give the pinned blocks cached by agnostic's pool back to the driver (``cudaFreeHost``)."""
    if _pool:
        _pool[0].free_all_blocks()
