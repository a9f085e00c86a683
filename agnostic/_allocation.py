"""Allocation requests checked before any memory is asked for: a shape whose size overflows int64, or whose bytes
exceed what the device could ever hold, is refused with PyTorch's ``RuntimeError`` naming the shape and the bytes.

NumPy would answer the same requests with ``ValueError: array is too big`` or ``MemoryError``, and CuPy with its
allocator's error after trying; on a GPU a request that fits the device but not its free memory still reaches the
allocator, whose ``OutOfMemoryError`` is PyTorch's too.
"""

import math

import numpy

_INT64_MAX = 2 ** 63 - 1
_ALWAYS_FITS = 1 << 30  # bytes below which no device is asked for its capacity (the common case stays cheap)


def check_allocation(shape, dtype, device):
    """Refuse, before allocating, a tensor of ``shape`` and ``dtype`` (an agnostic or NumPy dtype) on ``device``
    that could never exist there.

        >>> from agnostic._allocation import check_allocation
        >>> check_allocation((2, 3), agnostic.float32, agnostic.device("cpu"))
        >>> check_allocation((2 ** 62,), agnostic.float32, agnostic.device("cpu"))
        Traceback (most recent call last):
        ...
        RuntimeError: Storage size calculation overflowed with sizes=[4611686018427387904]: ...
    """
    count = math.prod(shape)
    itemsize = numpy.dtype(getattr(dtype, "numpy_dtype", dtype)).itemsize
    nbytes = count * itemsize
    if nbytes < _ALWAYS_FITS and math.prod(size for size in shape if size) * itemsize < _ALWAYS_FITS:
        return
    request = f"a tensor of shape {list(shape)} and dtype {_dtype_name(dtype)}"
    if count == 0:
        if math.prod(size for size in shape if size) * itemsize > _INT64_MAX:
            raise RuntimeError(f"Stride calculation overflowed with sizes={list(shape)}: the strides of {request} "
                               "don't fit in int64, even with no elements")
        return
    if nbytes > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}: {request} needs "
                           f"{nbytes} bytes, more than int64 can count")
    with device.backend.activate():
        capacity = device.backend.ops.memory_capacity()
    if capacity is not None and nbytes > capacity:
        raise RuntimeError(f"can't allocate memory: you tried to allocate {nbytes} bytes for {request}, more than "
                           f"{device} could ever hold ({capacity} bytes in all); make the tensor smaller")


def _dtype_name(dtype):
    numpy_dtype = getattr(dtype, "numpy_dtype", None)
    return str(dtype).removeprefix("agnostic.") if numpy_dtype is not None else numpy.dtype(dtype).name
