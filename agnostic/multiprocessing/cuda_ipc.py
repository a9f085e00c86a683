"""CUDA tensors between processes through CUDA IPC, with the producer's memory kept alive while consumers use it.

The producer sends the IPC handle of the cudaMalloc allocation that holds the tensor (CuPy's pools suballocate, so
also the offset and size of the tensor's block in it) and a slot of a small shared counter file. The slot reads
PENDING until a consumer opens the message, then the consumer's pid while it holds the block, then RELEASED. The
producer keeps every block it sent until its slot is released or its consumer has died; ``ipc_collect()`` lets go of
those (as PyTorch's CudaIPCSentData and ``torch.cuda.ipc_collect``). A consumer maps each allocation once
(``cudaIpcOpenMemHandle``) and closes it when its last tensor on it is gone.
"""

import atexit
import ctypes
import os
import threading
import weakref

import numpy

from .. import _backend
from .._backends import cupy_loader
from . import _memory

PENDING, RELEASED = -1, 0
_PREFIX = "agnostic_ipc"  # counter files: /agnostic_ipc_<producer pid>_<random>
_SLOTS = 512  # int64 slots per counter file: one page
_lock = threading.RLock()


# ----- producer side ---------------------------------------------------------------------------------------------
class _CounterFile:
    """A named page of int64 slots, one per message. Unlinked (``linked`` False) once no message waits on it,
    after which its slots are not reused: late consumers could no longer open it."""

    def __init__(self):
        self.mapping = _memory.create_named(_SLOTS * 8, prefix=_PREFIX)
        self.name = self.mapping.name
        self.slots = self.mapping.bytes().view(numpy.int64)
        self.free = list(range(_SLOTS - 1, -1, -1))
        self.used = 0
        self.linked = True

    def take(self):
        slot = self.free.pop()
        self.slots[slot] = PENDING
        self.used += 1
        return slot

    def give_back(self, slot):
        self.used -= 1
        if self.linked:
            self.free.append(slot)

    def unlink(self):
        if self.linked:
            self.linked = False
            self.free.clear()
            _memory.unlink(self.name)


class _Sent:
    """A block sent to another process: kept (with its memory) until the consumer releases its slot or dies."""

    __slots__ = ("counter", "slot", "memory", "key")

    def __init__(self, counter, slot, memory, key):
        self.counter, self.slot, self.memory, self.key = counter, slot, memory, key

    def finished(self):
        value = int(self.counter.slots[self.slot])
        return value == RELEASED or (value > 0 and not _memory.is_alive(value))


_counters: list = []
_sent: dict = {}  # (counter name, slot) -> _Sent
_sweep_at = 128  # sends held before the next send looks for finished ones (doubles with the live ones)


def export(array):
    """A picklable handle to a CuPy array's memory for another process (sharing it, not copying it)."""
    cupy = _backend.require_cupy()
    device = array.device.id
    if array.size == 0:
        return ("empty", device, array.shape, array.dtype)
    memory = array.data.mem
    owner = getattr(memory, "_owner", None)
    runtime = cupy.cuda.runtime
    with cupy.cuda.Device(device):
        # The consumer reads what the producer queued before sending, on whatever stream it was queued.
        runtime.deviceSynchronize()
        if isinstance(owner, _Storage):  # forwarding what this process received: the original allocation
            handle, offset, origin = owner.key[0], owner.key[1], owner.origin
        else:
            base = _allocation_base(memory.ptr)
            handle, offset, origin = _ipc_handle(runtime, base), memory.ptr - base, os.getpid()
    key = (handle, offset, memory.size)
    with _lock:
        counter, slot = _take_slot()
        _sent[(counter.name, slot)] = _Sent(counter, slot, memory, key)
    view = (array.data.ptr - memory.ptr, array.shape, array.strides, array.dtype)
    return ("ipc", device, key, origin, counter.name, slot, view)


def _ipc_handle(runtime, base):
    try:
        return runtime.ipcGetMemHandle(base)
    except runtime.CUDARuntimeError as error:
        raise RuntimeError(
            f"cannot share this CUDA tensor between processes ({error}): CUDA IPC needs memory from cudaMalloc, as "
            "agnostic's and CuPy's default pools use (not managed or stream-ordered cudaMallocAsync memory)"
        ) from None


def _take_slot():
    global _sweep_at
    if len(_sent) >= _sweep_at:
        _release_finished()
        _sweep_at = max(128, 2 * len(_sent))
    counter = _counters[-1] if _counters else None
    if counter is None or not counter.free:
        counter = _CounterFile()
        _counters.append(counter)
    return counter, counter.take()


def _release_finished():
    for key, sent in list(_sent.items()):
        if sent.finished():
            del _sent[key]
            sent.counter.give_back(sent.slot)
    _counters[:] = [counter for counter in _counters if counter.linked or counter.used]


def ipc_collect():
    """``agnostic.cuda.ipc_collect()``: free the GPU memory this process sent to others and they no longer use
    (released, or their process died), and remove the counter files no message waits on."""
    with _lock:
        _release_finished()
        waiting = {sent.counter.name for sent in _sent.values() if sent.counter.slots[sent.slot] == PENDING}
        for counter in _counters:
            if counter.name not in waiting:
                counter.unlink()
        _counters[:] = [counter for counter in _counters if counter.linked or counter.used]
    _remove_counter_files_of_dead_producers()


def _remove_counter_files_of_dead_producers():
    """Unlink the counter files of the producers we heard from that were killed before they could."""
    for name in list(_heard_from):
        if not _memory.is_alive(int(name[len(_PREFIX) + 2:].partition("_")[0])):
            _heard_from.discard(name)
            _memory.unlink(name)
        elif not _memory.exists(name):  # its producer removed it
            _heard_from.discard(name)


def _sent_memory(key):
    """This process's own memory behind ``key``, which came back to it."""
    with _lock:
        for sent in _sent.values():
            if sent.key == key:
                return sent.memory
    raise RuntimeError("a CUDA tensor came back to the process that shared it, which no longer holds its memory")


@atexit.register
def _unlink_counter_files():
    for counter in _counters:
        try:
            counter.unlink()
        except Exception:
            pass


# ----- consumer side ---------------------------------------------------------------------------------------------
class _Allocation:
    """Another process's cudaMalloc allocation, opened here; closed when the last tensor on it is gone."""

    __slots__ = ("device", "base", "pid", "__weakref__")

    def __init__(self, cupy, device, handle):
        self.device, self.pid = device, os.getpid()
        with cupy.cuda.Device(device):
            self.base = cupy.cuda.runtime.ipcOpenMemHandle(handle, cupy.cuda.runtime.cudaIpcMemLazyEnablePeerAccess)

    def __del__(self):
        if os.getpid() != self.pid:  # a forked child's copy: the mapping is the parent's
            return
        try:
            cupy = cupy_loader.state.cupy
            with cupy.cuda.Device(self.device):
                cupy.cuda.runtime.ipcCloseMemHandle(self.base)
        except Exception:  # interpreter or CUDA shutting down: the driver releases it with the process
            pass


class _Storage:
    """The block of another process's allocation that a message pointed at: the owner of the CuPy memory the
    rebuilt arrays view. Gone, it waits for this process's work and marks its counter slot released."""

    __slots__ = ("allocation", "key", "origin", "counter", "slot", "pid", "__weakref__")

    def __del__(self):
        if os.getpid() != self.pid:  # a forked child's copy: the parent still holds the block
            return
        try:
            cupy = cupy_loader.state.cupy
            with cupy.cuda.Device(self.allocation.device):
                cupy.cuda.runtime.deviceSynchronize()  # our kernels on the block end before the producer reuses it
        except Exception:  # CUDA shutting down with the interpreter
            pass
        try:
            _set_slot(self.counter, self.slot, RELEASED)
        except Exception:
            pass


_allocations: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # handle -> _Allocation
_storages: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (handle, offset, size) -> _Storage
_counter_mappings: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # counter file name -> Mapping
_heard_from: set = set()  # names of the counter files of the producers that sent to this process


def rebuild_array(handle):
    """``(cupy_array, device_index)`` for a handle from ``export``, viewing the producer's memory."""
    cupy = _backend.require_cupy()
    if handle[0] == "empty":
        _, device, shape, dtype = handle
        with cupy.cuda.Device(device):
            return cupy.empty(shape, dtype), device
    _, device, key, origin, counter_name, slot, (offset, shape, strides, dtype) = handle
    memory_module = cupy.cuda.memory
    with _lock:
        counter = _counter_mapping(counter_name)
        if origin == os.getpid():
            memory = _sent_memory(key)
            _set_slot(counter, slot, RELEASED)
        else:
            storage = _storages.get(key)
            if storage is None:
                storage = _storages[key] = _open_storage(cupy, device, key, origin, counter, slot)
            else:
                _set_slot(counter, slot, RELEASED)  # this process already holds the block under an earlier slot
            address = storage.allocation.base + key[1]
            memory = memory_module.UnownedMemory(address, key[2], storage, device)
    pointer = memory_module.MemoryPointer(memory, offset)
    with cupy.cuda.Device(device):
        return cupy.ndarray(shape, dtype, pointer, strides), device


def _open_storage(cupy, device, key, origin, counter, slot):
    allocation = _allocations.get(key[0])
    if allocation is None:
        allocation = _allocations[key[0]] = _Allocation(cupy, device, key[0])
    storage = _Storage()
    storage.allocation, storage.key, storage.origin, storage.counter, storage.slot, storage.pid = (
        allocation, key, origin, counter, slot, os.getpid())
    _set_slot(counter, slot, os.getpid())
    return storage


def _counter_mapping(name):
    mapping = _counter_mappings.get(name)
    if mapping is None:
        fd = _memory.open_name(name)
        try:
            mapping = _counter_mappings[name] = _memory.map_fd(fd, name)
        finally:
            os.close(fd)
        _heard_from.add(name)
    return mapping


def _set_slot(mapping, slot, value):
    ctypes.c_int64.from_address(mapping.address + 8 * slot).value = value


# ----- the CUDA driver: where an allocation starts -------------------------------------------------------------
_driver: list = []


def _allocation_base(pointer):
    """The start of the cudaMalloc allocation containing ``pointer`` (``cuMemGetAddressRange``; CuPy wraps no
    call that tells it). Needs the device's context current, as after any runtime call on it."""
    if not _driver:
        library = ctypes.CDLL("libcuda.so.1")
        function = library.cuMemGetAddressRange_v2
        function.argtypes = (ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64)
        function.restype = ctypes.c_int
        _driver.append(function)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    status = _driver[0](ctypes.byref(base), ctypes.byref(size), pointer)
    if status != 0:
        raise RuntimeError(f"cuMemGetAddressRange failed for pointer {pointer:#x} (CUresult {status})")
    return base.value
