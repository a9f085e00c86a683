"""How agnostic lays out host memory: large arrays without page faults, and arrays aligned to cache lines.

Large arrays: glibc's malloc keeps freed large blocks for the next array.

glibc serves a block above its mmap threshold (a dynamic one, capped at 32 MiB on 64-bit systems) straight from the
kernel and returns it when freed, so each new large array pays a page fault per page on its first write: a 16M-element
float32 ``a + b`` took 20 ms instead of 16 ms on a 16-core host, 12 ms instead of 6 ms on a 2-core VM. Raising the
mmap and trim thresholds, the tunable parameters glibc documents for ``mallopt`` (``<malloc.h>``), keeps such blocks
in the heap, where the next array of that size finds its pages already mapped; nothing else changes, and freed
memory above ``TRIM_THRESHOLD`` still goes back to the system.

``import agnostic`` sets them once, on glibc only (musl, macOS and Windows keep their allocator as it is), and not
when the environment sets ``AGNOSTIC_MALLOC_TUNING=0`` or tunes malloc itself (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``GLIBC_TUNABLES``).

Aligned arrays: NumPy aligns its arrays to 16 bytes, PyTorch's CPU allocator to 64, a cache line. The multi-core
kernels that give each thread a slice of every row (the LSTM layer's) take 64-byte aligned arrays
(``empty_aligned``; ``cpu_kernels.aligned`` copies others): else a slice's ends share a line with the next
thread's, which the two threads then take from each other on every write, and vector loads straddle lines. On a
2-core VM, an LSTM layer's steps (batch 64, 256 hidden) ran 1.3x faster forward and backward on aligned arrays.
"""

import ctypes
import os

import numpy

MMAP_THRESHOLD = 256 << 20  # blocks up to this size come from the heap (a 64M-element float32 array)
TRIM_THRESHOLD = 512 << 20  # free memory at the heap's top kept for reuse before it goes back to the system
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
_OWN_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

CACHE_LINE = 64  # bytes: x86-64's and most ARM64 cores' line; PyTorch's CPU alignment

tuned = False  # whether keep_large_blocks() changed malloc's thresholds


def keep_large_blocks():
    """Raise glibc's mmap and trim thresholds (see the module's docstring); True when done."""
    global tuned
    if tuned or os.environ.get("AGNOSTIC_MALLOC_TUNING") == "0" or any(name in os.environ for name in _OWN_SETTINGS):
        return tuned
    if not _on_glibc():
        return False
    mallopt = ctypes.CDLL(None).mallopt
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    tuned = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    return tuned


def _on_glibc():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr (Windows), or not a glibc name
        return False


def empty_aligned(shape, dtype):
    """An uninitialized C-contiguous array whose data starts on a cache line (``CACHE_LINE`` bytes): a view of a
    slightly larger byte buffer, which it keeps alive.

        >>> array = empty_aligned((3, 5), numpy.float32)
        >>> array.ctypes.data % CACHE_LINE, array.shape, array.flags.c_contiguous
        (0, (3, 5), True)
    """
    dtype = numpy.dtype(dtype)
    size = int(numpy.prod(shape, dtype=numpy.int64)) * dtype.itemsize
    buffer = numpy.empty(size + CACHE_LINE, numpy.uint8)
    start = -buffer.ctypes.data % CACHE_LINE
    return buffer[start:start + size].view(dtype).reshape(shape)


def is_aligned(array):
    """Whether ``array`` is C-contiguous and starts on a cache line.

        >>> is_aligned(empty_aligned((4, 16), numpy.float32)), is_aligned(numpy.arange(6, dtype=numpy.float32)[1:])
        (True, False)
    """
    return array.flags.c_contiguous and array.__array_interface__["data"][0] % CACHE_LINE == 0
