"""Large CPU result buffers, reused.

glibc serves allocations of a few MiB straight from the OS and gives them back when freed, so every new large NumPy
array pays a page fault per page on its first write: milliseconds per training step on a virtual machine. Results
of the hot ops (matmul, large elementwise ops) come from here instead: a freed buffer of the same size is handed out
again, as PyTorch's CUDA caching allocator does on the device. A buffer counts as free once no array refers to it
(every NumPy view holds a reference to the array that owns its memory), so reuse is as safe as ``free``.
"""

import math
import sys
import threading

import numpy

MIN_BYTES = 1 << 18  # smaller arrays come from the malloc heap without page faults
_PER_SIZE = 16  # buffers kept per size: a training step has several of each size alive at once
_LIMIT_BYTES = 256 << 20  # all kept buffers together; beyond this, plain numpy.empty

_buffers: dict = {}  # nbytes -> [uint8 arrays owning their memory]
_kept_bytes = 0
_lock = threading.Lock()


def _unused_count():
    """sys.getrefcount of a kept buffer that no array uses, as seen from ``empty``'s loop."""
    probe = [numpy.empty(0, numpy.uint8)]
    for buffer in probe:
        return sys.getrefcount(buffer)


_UNUSED = _unused_count()


def empty(shape, dtype):
    """An uninitialized C-contiguous array, from a reused buffer when it is large."""
    if not isinstance(dtype, numpy.dtype):
        dtype = numpy.dtype(dtype)
    nbytes = dtype.itemsize * math.prod(shape)
    if nbytes < MIN_BYTES or dtype.hasobject:
        return numpy.empty(shape, dtype)
    global _kept_bytes
    with _lock:
        kept = _buffers.setdefault(nbytes, [])
        for buffer in kept:
            if sys.getrefcount(buffer) == _UNUSED:
                return buffer.view(dtype).reshape(shape)
        buffer = numpy.empty(nbytes, numpy.uint8)
        if len(kept) < _PER_SIZE and _kept_bytes + nbytes <= _LIMIT_BYTES:
            kept.append(buffer)
            _kept_bytes += nbytes
    return buffer.view(dtype).reshape(shape)


def is_large(array):
    """Whether a result shaped like ``array`` would come from the cache (callers check before anything slower)."""
    return array.nbytes >= MIN_BYTES


def apply(ufunc, *operands):
    """``ufunc(*operands)`` written into an array from ``empty`` (``operands``: arrays, or Python/NumPy scalars)."""
    probes = [operand.flat[:0] if type(operand) is numpy.ndarray else operand for operand in operands]
    dtype = ufunc(*probes).dtype  # the very dtype rule of the full call (weak Python scalars included)
    shape = numpy.broadcast_shapes(*(operand.shape for operand in operands if type(operand) is numpy.ndarray))
    return ufunc(*operands, out=empty(shape, dtype))
