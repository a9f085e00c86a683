"""The CUDA backend: CuPy arrays on one GPU, computed by CuPy and agnostic's kernels (``cuda_kernels``), with copies
between the host and devices: pinned memory, asynchronous (``non_blocking``) copies and what keeps them safe.

PyTorch's copy rules: a ``non_blocking`` host-to-device copy is asynchronous only from page-locked (pinned) memory
and degrades to a synchronous copy from pageable memory; a ``non_blocking`` device-to-host copy lands in pinned
memory and returns before the data is there. agnostic adds one guarantee: the host tensor such a copy fills waits
for the copy before anyone reads it (see ``_tensor.InFlightHostTensor``).
"""

import numpy

from .._determinism import alert_nondeterministic
from . import cuda_ops, sync_debug
from .cuda_ops import _as_matrices, _from_matrices
from .pinned import pinned_empty
from .cpu import NO_SWITCH
from .cupy_loader import cuda_device_count, require_cupy, state

_CUDA_MEMORY_TYPE_HOST = 1
# The dtypes CuPy's atomic add.at takes as they are.
_ATOMIC_ADD_DTYPES = frozenset(numpy.dtype(name) for name in ("int32", "uint32", "uint64", "float16", "float32",
                                                              "float64"))
_copies_in_flight: list = []  # (event, arrays kept alive until the copy that reads or writes them has finished)
_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
_peer_reachable: dict = {}  # (device, peer) -> whether device can reach peer's memory directly
_peer_enabled: set = set()  # (device, peer) pairs whose direct access this process has switched on


class CUDABackend:
    """Computing on CUDA device ``index`` (None: whichever device is current): CuPy as the array namespace, that
    device made current around calls, and work queued on its current stream.

    >>> from agnostic._backends.cuda import CUDABackend
    >>> CUDABackend(1)
    <agnostic CUDA backend, device 1>
    """

    __slots__ = ("index",)
    type = "cuda"
    host = False
    ops = cuda_ops  # the fused operations' CUDA implementations

    def __init__(self, index):
        self.index = index

    @property
    def xp(self):
        """The cupy module (CUDA initialized on first use)."""
        return require_cupy()

    @property
    def array_type(self):
        """``cupy.ndarray``."""
        return require_cupy().ndarray

    def activate(self):
        """A context in which this device is CuPy's current one (nothing to switch when it already is)."""
        return NO_SWITCH if self.is_current() else state.cupy.cuda.Device(self.index)

    def run(self, function, *args, **kwargs):
        """``function(*args, **kwargs)`` with this device current."""
        if self.index is None or state.current_device() == self.index:  # the usual case, no context: every op
            return function(*args, **kwargs)
        with state.cupy.cuda.Device(self.index):
            return function(*args, **kwargs)

    def is_current(self):
        """Whether this device is CuPy's current one, so that calls need no switch (``run`` does what's needed
        either way; the ops' direct plans ask first, to skip ``run``'s own call on the usual path)."""
        return self.index is None or state.current_device() == self.index

    def empty(self, shape, dtype):
        """An uninitialized array for a kernel's results, on the current device (CuPy's allocations start on
        256-byte boundaries)."""
        return require_cupy().empty(shape, dtype)

    def scatter_add(self, target, positions, values):
        """``target[positions] += values`` with repeated positions accumulating (CuPy's atomic ``cupy.add.at``:
        floating-point sums in no fixed order, refused in deterministic mode)."""
        if target.dtype.kind in "fc":
            alert_nondeterministic("an accumulating scatter on CUDA (index_add, scatter_add, index_put(accumulate="
                                   "True), or the gradient of indexing, gather or embedding)")
        cupy = state.cupy
        values = cupy.asarray(values, dtype=target.dtype)
        if target.dtype in _ATOMIC_ADD_DTYPES:
            cupy.add.at(target, positions, values)
        elif target.dtype.kind == "c":  # a complex sum is two real ones
            self.scatter_add(target.real, positions, values.real)
            self.scatter_add(target.imag, positions, values.imag)
        elif target.dtype == numpy.int64:  # two's-complement addition wraps alike in uint64
            cupy.add.at(target.view(numpy.uint64), positions, values.view(numpy.uint64))
        else:  # bool and the small integers: accumulate in int32, then wrap back as PyTorch's sums do
            wide = target.astype(numpy.int32)
            cupy.add.at(wide, positions, values.astype(numpy.int32))
            target[...] = wide.astype(target.dtype) if target.dtype != numpy.bool_ else wide != 0

    def scatter_multiply(self, target, positions, values):
        """``target[positions] *= values`` with repeated positions accumulating: CuPy has no multiplicative scatter,
        and products of logarithms would lose signs, so this goes through the host."""
        host = target.get()
        numpy.multiply.at(host, tuple(p.get() for p in positions), values.get())
        target.set(host)

    def stable_argsort(self, keys):
        """Indices that sort ``keys``, equal keys in their original order (CuPy's radix sort is stable)."""
        return keys.argsort()

    def as_strided(self, array, shape, strides):
        """A view of ``array``'s memory with ``shape`` and byte ``strides``."""
        return require_cupy().lib.stride_tricks.as_strided(array, shape, strides)

    def reshape(self, array, shape):
        """``array.reshape(shape)``: a view where the layout allows, else a copy."""
        return array.reshape(shape)

    def reshaped_view(self, array, shape):
        """``array`` in ``shape`` without a copy, or None where its layout needs one (or ``shape`` has another size).
        CuPy copies where it must (on this device), so the result's address tells."""
        try:
            with self.activate():
                result = array.reshape(shape)
        except ValueError:
            return None
        return result if array.size <= 1 or result.data.ptr == array.data.ptr else None

    def concatenate(self, arrays, axis):
        """``cupy.concatenate(arrays, axis)``."""
        return require_cupy().concatenate(arrays, axis=axis)

    def matmul(self, a, b):
        """``a @ b``: cuBLAS, or while the current stream captures a CUDA graph (where CuPy refuses cuBLAS),
        agnostic's own kernels (``cuda_ops.capturable_matmul``)."""
        cupy = require_cupy()
        if cupy.cuda.get_current_stream().is_capturing():
            return cuda_ops.capturable_matmul(a, b)
        if max(a.ndim, b.ndim) > 2 and a.dtype.name == "bfloat16":  # NumPy's dtype.name costs a microsecond
            return _batched_bfloat16_matmul(a, b)
        return cupy.matmul(a, b)

    def is_capturing(self):
        """Whether this device's current stream is capturing a CUDA graph (``agnostic.cuda.graph``): work queued
        now is recorded, not run, so nothing may wait for its results on the host."""
        with self.activate():
            return require_cupy().cuda.get_current_stream().is_capturing()

    def writable_scalar(self, value):
        """A NumPy scalar as CuPy should receive it in ``array[...] = value``: a negative zero as a 0-dim device
        array, since CuPy writes scalar zeros with a memset, which stores +0.0 (PyTorch keeps -0.0)."""
        if value.dtype.kind not in "fc" or value != 0:
            return value
        if not (numpy.signbit(value.real) or numpy.signbit(value.imag)):
            return value
        with self.activate():
            array = require_cupy().empty((), value.dtype)
            array.set(numpy.asarray(value))
        return array

    def receive(self, array, source, non_blocking=False):
        """An array of another device (``source``'s backend) copied here, on this device's current stream."""
        if source.host:
            return _to_device(array, self, non_blocking)
        return _between_devices(array, source, self)

    def to_host(self, array, non_blocking=False, out=None):
        """This device's array copied to the host; returns ``(host_array, event)``.

        With ``non_blocking`` the copy goes into pinned memory (``out`` when given and pinned) and is still running
        when this returns: ``event`` completes when it is done. Otherwise it is synchronous and ``event`` is None.
        """
        with self.activate():
            cupy = require_cupy()
            if cupy.cuda.get_current_stream().is_capturing():
                raise RuntimeError("a tensor can't be copied to the host while a CUDA graph captures (.item(), "
                                   ".cpu(), .numpy(), bool(), printing): the capture records GPU work without running "
                                   "it. Read the graph's output tensors after replay() instead")
            if not non_blocking:
                sync_debug.check_synchronizing("copy from cuda to cpu")
                return array.get(out=out) if out is not None else array.get(), None
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

    def __repr__(self):
        where = "the current device" if self.index is None else f"device {self.index}"
        return f"<agnostic CUDA backend, {where}>"


# ----- host memory and copies --------------------------------------------------------------------------------------
def is_pinned(array):
    """True when a NumPy array's memory is page-locked; False on machines without CUDA."""
    if not isinstance(array, numpy.ndarray) or cuda_device_count() == 0 or array.size == 0:
        return False
    cupy = require_cupy()
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


def _to_device(array, target, non_blocking):
    """A host array copied to ``target`` (a CUDABackend), on its current stream; asynchronous only when
    ``non_blocking`` and the source is pinned (the source stays alive until the copy ends)."""
    cupy = require_cupy()
    with target.activate():
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


def can_access_peer(index, peer_index):
    """True when device ``index`` can read and write the memory of device ``peer_index`` directly (NVLink or PCIe
    peer-to-peer); False for a device and itself, as ``torch.cuda.can_device_access_peer``."""
    key = (index, peer_index)
    if key not in _peer_reachable:
        _peer_reachable[key] = index != peer_index and bool(
            require_cupy().cuda.runtime.deviceCanAccessPeer(index, peer_index))
    return _peer_reachable[key]


def _enable_peer_access(index, peer_index):
    """Let device ``index`` reach ``peer_index``'s memory directly, once per pair, where the hardware allows: without
    it a copy between two GPUs is staged through host memory at a fraction of the link's speed (PyTorch enables
    access the same way, on its first copy between two devices)."""
    if (index, peer_index) in _peer_enabled or not can_access_peer(index, peer_index):
        return
    cupy = require_cupy()
    with cupy.cuda.Device(index):
        try:
            cupy.cuda.runtime.deviceEnablePeerAccess(peer_index)
        except cupy.cuda.runtime.CUDARuntimeError as error:  # enabled before, by CuPy or another library
            if error.status != _CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
                raise
    _peer_enabled.add((index, peer_index))


def _between_devices(array, source, target):
    """A copy of a CUDA array on another CUDA device, ordered after the work queued on the source's stream; direct
    over the link between them where the devices are peers."""
    cupy = require_cupy()
    _enable_peer_access(target.index, source.index)
    _enable_peer_access(source.index, target.index)
    with source.activate():
        contiguous = array if array.flags.c_contiguous else cupy.ascontiguousarray(array)
        ready = cupy.cuda.get_current_stream().record()
    with target.activate():
        result = cupy.empty(array.shape, array.dtype)
        stream = cupy.cuda.get_current_stream()
        stream.wait_event(ready)
        cupy.cuda.runtime.memcpyPeerAsync(
            result.data.ptr, target.index, contiguous.data.ptr, source.index, contiguous.nbytes, stream.ptr
        )
        _keep_alive_until_done(stream, contiguous)
        return result


def _batched_bfloat16_matmul(a, b):
    """``a @ b`` of bfloat16 arrays with batch dimensions: CuPy takes bfloat16 to cuBLAS for one pair of matrices
    but not in its batched products, so each pair of the broadcast batch is one cuBLAS product, into its slice of
    the result."""
    cupy = require_cupy()
    a, b, vectors = _as_matrices(a, b)
    batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    rows, columns = a.shape[-2], b.shape[-1]
    count = int(numpy.prod(batch, dtype=numpy.int64))
    left = cupy.broadcast_to(a, (*batch, *a.shape[-2:])).reshape(count, *a.shape[-2:])
    right = cupy.broadcast_to(b, (*batch, *b.shape[-2:])).reshape(count, *b.shape[-2:])
    product = cupy.empty((count, rows, columns), a.dtype)
    for index in range(count):
        cupy.matmul(left[index], right[index], out=product[index])
    return _from_matrices(product.reshape(*batch, rows, columns), vectors)
