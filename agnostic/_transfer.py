"""Copies between host and devices: pinned memory, asynchronous (non_blocking) copies and what keeps them safe.

PyTorch's rules: a ``non_blocking`` host-to-device copy is asynchronous only from page-locked (pinned) memory and
degrades to a synchronous copy from pageable memory; a ``non_blocking`` device-to-host copy lands in pinned memory
and returns before the data is there. agnostic adds one guarantee: the host tensor such a copy fills waits for the
copy before anyone reads it (see ``_tensor.InFlightHostTensor``).
"""

import numpy

from . import _backend
from ._device import CPU

_CUDA_MEMORY_TYPE_HOST = 1
_copies_in_flight = []  # (event, arrays kept alive until the copy that reads or writes them has finished)


def pinned_empty(shape, numpy_dtype):
    """An uninitialized NumPy array in page-locked memory from CuPy's pinned memory pool."""
    cupy = _backend.require_cupy()
    count = int(numpy.prod(shape, dtype=numpy.int64))
    memory = cupy.cuda.alloc_pinned_memory(max(count, 1) * numpy_dtype.itemsize)
    return numpy.frombuffer(memory, numpy_dtype, count).reshape(shape)


def pinned_copy(array):
    """A copy of a NumPy array in pinned memory."""
    pinned = pinned_empty(array.shape, array.dtype)
    numpy.copyto(pinned, array)
    return pinned


def is_pinned(array):
    """True when a NumPy array's memory is page-locked; False on machines without CUDA."""
    if not isinstance(array, numpy.ndarray) or _backend.cuda_device_count() == 0 or array.size == 0:
        return False
    cupy = _backend.require_cupy()
    try:
        attributes = cupy.cuda.runtime.pointerGetAttributes(array.ctypes.data)
    except cupy.cuda.runtime.CUDARuntimeError:
        return False
    return attributes.type == _CUDA_MEMORY_TYPE_HOST


def _forget_finished_copies():
    _copies_in_flight[:] = [entry for entry in _copies_in_flight if not entry[0].done]


def _keep_alive_until_done(stream, *arrays):
    _forget_finished_copies()
    _copies_in_flight.append((stream.record(), arrays))


def to_device(array, target, non_blocking=False):
    """A host array copied to the CUDA device ``target``, on its current stream.

    Asynchronous only when ``non_blocking`` and the source is pinned; the source stays alive until the copy ends.
    """
    cupy = _backend.require_cupy()
    with _backend.on(target):
        stream = cupy.cuda.get_current_stream()
        if not (non_blocking and array.flags.c_contiguous and is_pinned(array)):
            # A blocking copy is complete on return, as PyTorch's is (copy, then synchronize the stream).
            if array.ndim:
                result = cupy.asarray(array)
            else:  # cupy.asarray fills 0-dim arrays, by a memset for zeros, so -0.0 would become +0.0
                result = cupy.empty((), array.dtype)
                result.set(array)
            stream.synchronize()
            return result
        result = cupy.empty(array.shape, array.dtype)
        result.set(array, stream=stream)
        _keep_alive_until_done(stream, array)
        return result


def to_host(array, source, non_blocking=False, out=None):
    """A device array copied to the host; returns ``(host_array, event)``.

    With ``non_blocking`` the copy goes into pinned memory (``out`` when given and pinned) and is still running
    when this returns: ``event`` completes when it is done. Otherwise it is synchronous and ``event`` is None.
    """
    with _backend.on(source):
        if not non_blocking:
            return array.get(out=out) if out is not None else array.get(), None
        cupy = _backend.require_cupy()
        if out is None or not is_pinned(out):
            destination = pinned_empty(array.shape, array.dtype)
        else:
            destination = out
        contiguous = array if array.flags.c_contiguous else cupy.ascontiguousarray(array)
        stream = cupy.cuda.get_current_stream()
        contiguous.get(stream=stream, out=destination, blocking=False)
        event = stream.record()
        _copies_in_flight.append((event, (contiguous,)))
        return destination, event


def between_devices(array, source, target):
    """A copy of a CUDA array on another CUDA device, ordered after the work queued on the source's stream."""
    cupy = _backend.require_cupy()
    with _backend.on(source):
        contiguous = array if array.flags.c_contiguous else cupy.ascontiguousarray(array)
        ready = cupy.cuda.get_current_stream().record()
    with _backend.on(target):
        result = cupy.empty(array.shape, array.dtype)
        stream = cupy.cuda.get_current_stream()
        stream.wait_event(ready)
        cupy.cuda.runtime.memcpyPeerAsync(
            result.data.ptr, target.index, contiguous.data.ptr, source.index, contiguous.nbytes, stream.ptr
        )
        _keep_alive_until_done(stream, contiguous)
        return result


def move(array, source, target, non_blocking=False):
    """``array`` as an array on ``target``: itself when ``source`` is ``target``, else a copy (synchronous to the
    host; from pinned memory asynchronous to a device when ``non_blocking``)."""
    if source is target:
        return array
    if source is CPU:
        return to_device(array, target, non_blocking)
    if target is CPU:
        return to_host(array, source)[0]
    return between_devices(array, source, target)
