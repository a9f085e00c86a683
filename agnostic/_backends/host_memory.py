"""Large CPU arrays without page faults: glibc's malloc keeps freed large blocks for the next array.

glibc serves a block above its mmap threshold (a dynamic one, capped at 32 MiB on 64-bit systems) straight from the
kernel and returns it when freed, so each new large array pays a page fault per page on its first write: a 16M-element
float32 ``a + b`` took 20 ms instead of 16 ms on a 16-core host, 12 ms instead of 6 ms on a 2-core VM. Raising the
mmap and trim thresholds, the tunable parameters glibc documents for ``mallopt`` (``<malloc.h>``), keeps such blocks
in the heap, where the next array of that size finds its pages already mapped; nothing else changes, and freed
memory above ``TRIM_THRESHOLD`` still goes back to the system.

``import agnostic`` sets them once, on glibc only (musl, macOS and Windows keep their allocator as it is), and not
when the environment sets ``AGNOSTIC_MALLOC_TUNING=0`` or tunes malloc itself (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``GLIBC_TUNABLES``).
"""

import ctypes
import os

MMAP_THRESHOLD = 256 << 20  # blocks up to this size come from the heap (a 64M-element float32 array)
TRIM_THRESHOLD = 512 << 20  # free memory at the heap's top kept for reuse before it goes back to the system
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # <malloc.h>
_OWN_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")

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
