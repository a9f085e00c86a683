"""The CUDA IPC bookkeeping of agnostic.multiprocessing.cuda_ipc, on any machine: a fake CuPy whose "device memory"
is named host shared memory and whose IPC handles are segment names.

What this checks without a GPU: one ``ipcOpenMemHandle`` per allocation and process, blocks of a suballocated
segment found by offset, the producer keeping each block until its consumer lets go or dies, a tensor coming back to
its producer, forwarding to a third process, counter files removed, nothing left in /dev/shm. The real CUDA calls are
checked by the CUDA tests of test_multiprocessing.py.
"""

import contextlib
import ctypes
import gc
import os
import time
import types

import numpy
import pytest

from agnostic._backends import cupy_loader
from agnostic.multiprocessing import _memory, cuda_ipc
import agnostic.multiprocessing as mp

TIMEOUT = 30


class FakeCudaError(RuntimeError):
    pass


class FakeRuntime:
    """The runtime calls cuda_ipc makes; handles are segment names."""

    cudaIpcMemLazyEnablePeerAccess = 1
    CUDARuntimeError = FakeCudaError
    allocations = {}  # base -> Mapping: this process's "cudaMalloc"s
    opened = {}  # base -> Mapping: handles opened here
    calls = {"open": 0, "close": 0, "sync": 0}

    @classmethod
    def deviceSynchronize(cls):
        cls.calls["sync"] += 1

    @classmethod
    def ipcGetMemHandle(cls, pointer):
        mapping = cls.allocations.get(pointer)
        if mapping is None:
            raise FakeCudaError("cudaErrorInvalidValue: not the start of an allocation")
        return mapping.name.encode().ljust(64, b"\0")

    @classmethod
    def ipcOpenMemHandle(cls, handle, flags):
        name = handle.rstrip(b"\0").decode()
        if name.split("_")[1] == str(os.getpid()):
            raise FakeCudaError("cudaErrorInvalidContext: a process cannot open its own handle")
        if any(mapping.name == name for mapping in cls.opened.values()):
            raise FakeCudaError("cudaErrorAlreadyMapped: opened twice in one process")
        fd = _memory.open_name(name)
        mapping = _memory.map_fd(fd, name)
        os.close(fd)
        cls.opened[mapping.address] = mapping
        cls.calls["open"] += 1
        return mapping.address

    @classmethod
    def ipcCloseMemHandle(cls, pointer):
        del cls.opened[pointer]
        cls.calls["close"] += 1


class Segment:
    """A fake cudaMalloc: a named segment (unlinked when this object goes)."""

    def __init__(self, size):
        self.mapping = _memory.create_named(size)
        self.ptr, self.size, self.device_id = self.mapping.address, size, 0
        FakeRuntime.allocations[self.ptr] = self.mapping

    def __del__(self):
        FakeRuntime.allocations.pop(self.ptr, None)
        _memory.unlink(self.mapping.name)


class Block:
    """A fake pool block: part of a Segment, as CuPy's PooledMemory (no ``_owner``)."""

    def __init__(self, segment, offset, size):
        self.segment, self.ptr, self.size, self.device_id = segment, segment.ptr + offset, size, 0


class UnownedMemory:
    def __init__(self, ptr, size, owner, device_id=-1):
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset


class FakeArray:
    """What cuda_ipc reads of a cupy.ndarray, plus ``host()``: a NumPy view of the same bytes."""

    def __init__(self, shape, dtype, memptr, strides=None):
        self.dtype = numpy.dtype(dtype)
        self.shape = tuple(shape)
        self.strides = tuple(strides) if strides is not None else numpy.empty(shape, self.dtype).strides
        self.data = memptr
        self.device = types.SimpleNamespace(id=0)
        self.size = int(numpy.prod(self.shape))

    def host(self):
        reaches = [(n - 1) * s for n, s in zip(self.shape, self.strides)]
        low = sum(r for r in reaches if r < 0)
        high = sum(r for r in reaches if r > 0) + self.dtype.itemsize
        raw = (ctypes.c_char * (high - low)).from_address(self.data.ptr + low)
        return numpy.ndarray(self.shape, self.dtype, buffer=raw, offset=-low, strides=self.strides)


@contextlib.contextmanager
def _device(index):
    yield


FAKE_CUPY = types.SimpleNamespace(
    ndarray=FakeArray,
    empty=lambda shape, dtype: FakeArray(shape, dtype, MemoryPointer(UnownedMemory(0, 0, None, 0), 0)),
    cuda=types.SimpleNamespace(runtime=FakeRuntime, Device=_device,
                               memory=types.SimpleNamespace(UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer)),
)


def _allocation_base(pointer):
    for base, mapping in [*FakeRuntime.allocations.items(), *FakeRuntime.opened.items()]:
        if base <= pointer < base + mapping.size:
            return base
    raise RuntimeError(f"{pointer:#x} is not fake device memory")


def install_fake_cupy():
    cupy_loader.state.cupy, cupy_loader.state.initialized = FAKE_CUPY, True
    cuda_ipc._allocation_base = _allocation_base


def array_in(memory, offset, shape, strides=None):
    return FakeArray(shape, "float32", MemoryPointer(memory, offset), strides)


def consumer(inbox, outbox):
    """A child process: rebuild, write, drop, export what it holds, or hang, as told."""
    install_fake_cupy()
    held = {}
    while True:
        command, argument = inbox.get(timeout=TIMEOUT)
        if command == "take":
            name, handle = argument
            held[name] = cuda_ipc.rebuild_array(handle)[0]
            outbox.put((held[name].host().tolist(), dict(FakeRuntime.calls)))
        elif command == "write":
            name, value = argument
            held[name].host()[...] = value
            outbox.put("written")
        elif command == "drop":
            del held[argument]
            gc.collect()
            outbox.put(dict(FakeRuntime.calls))
        elif command == "drop all":
            held.clear()
            outbox.put(dict(FakeRuntime.calls))
        elif command == "export":
            outbox.put(cuda_ipc.export(held[argument]))
        elif command == "hang":
            outbox.put("hanging")
            time.sleep(TIMEOUT)
        else:
            return


@pytest.fixture
def fake_cupy(monkeypatch):
    monkeypatch.setattr(cupy_loader.state, "cupy", FAKE_CUPY)
    monkeypatch.setattr(cupy_loader.state, "initialized", True)
    monkeypatch.setattr(cuda_ipc, "_allocation_base", _allocation_base)
    yield
    for child in mp.active_children():
        child.kill()
        child.join(TIMEOUT)


def ask(inbox, outbox, command, argument=None):
    inbox.put((command, argument))
    return outbox.get(timeout=TIMEOUT)


def test_ipc_bookkeeping_across_processes(fake_cupy):
    before = set(os.listdir("/dev/shm"))
    context = mp.get_context("spawn")
    in1, out1, in2, out2 = (context.Queue() for _ in range(4))
    first = context.Process(target=consumer, args=(in1, out1), daemon=True)
    second = context.Process(target=consumer, args=(in2, out2), daemon=True)
    first.start()
    second.start()
    segment = Segment(1 << 20)
    block_a, block_b = Block(segment, 0, 4096), Block(segment, 4096, 4096)
    a = array_in(block_a, 0, (4,))
    a.host()[:] = [1, 2, 3, 4]
    a_view = array_in(block_a, 8, (2,))
    flipped = array_in(block_a, 12, (4,), strides=(-4,))
    b = array_in(block_b, 0, (2, 3), strides=(4, 8))
    b.host()[...] = 7

    seen = [ask(in1, out1, "take", (name, cuda_ipc.export(array)))
            for name, array in (("a", a), ("a_view", a_view), ("flipped", flipped), ("b", b))]
    assert [values for values, _ in seen] == [[1, 2, 3, 4], [3, 4], [4, 3, 2, 1], [[7] * 3] * 2]
    assert seen[-1][1]["open"] == 1  # one segment, opened once, whatever the blocks and views
    ask(in1, out1, "write", ("a_view", 9.0))
    assert a.host().tolist() == [1, 2, 9, 9]

    cuda_ipc.ipc_collect()
    assert len(cuda_ipc._sent) == 2  # block A (held under the first message) and block B
    ask(in1, out1, "drop", "a")
    cuda_ipc.ipc_collect()
    assert len(cuda_ipc._sent) == 2  # the views still hold block A
    ask(in1, out1, "drop", "a_view")
    calls = ask(in1, out1, "drop", "flipped")
    assert calls["sync"] == 1 and calls["close"] == 0  # block A let go after syncing; the segment still open (B)
    cuda_ipc.ipc_collect()
    assert len(cuda_ipc._sent) == 1

    back, _ = cuda_ipc.rebuild_array(ask(in1, out1, "export", "b"))
    assert back.data.ptr == b.data.ptr and back.strides == b.strides  # home again: the producer's own memory

    values, calls = ask(in2, out2, "take", ("b", ask(in1, out1, "export", "b")))  # forwarded to a third process
    assert values == [[7] * 3] * 2 and calls["open"] == 1
    ask(in2, out2, "write", ("b", 5.0))
    assert b.host().tolist() == [[5] * 3] * 2
    assert ask(in2, out2, "drop", "b")["close"] == 1

    assert ask(in1, out1, "hang") == "hanging"
    first.kill()  # holding block B, with a counter file of its own (it forwarded b)
    first.join(TIMEOUT)
    del back
    gc.collect()
    cuda_ipc.ipc_collect()
    assert not cuda_ipc._sent and not cuda_ipc._counters
    in2.put(("exit", None))
    second.join(TIMEOUT)
    del a, a_view, flipped, b, block_a, block_b, segment
    for queue in (in1, out1, in2, out2):
        queue.close()
        queue.join_thread()
    del in1, out1, in2, out2, queue
    deadline = time.monotonic() + TIMEOUT
    while set(os.listdir("/dev/shm")) != before and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    assert set(os.listdir("/dev/shm")) == before


def test_more_messages_than_one_counter_file_holds(fake_cupy):
    count = 600
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = context.Process(target=consumer, args=(inbox, outbox), daemon=True)
    child.start()
    segment = Segment(count * 512)
    arrays = [array_in(Block(segment, 512 * i, 512), 0, (2,)) for i in range(count)]
    for i, array in enumerate(arrays):
        inbox.put(("take", (i, cuda_ipc.export(array))))
    assert len(cuda_ipc._counters) == 2  # 512 slots a file
    for _ in range(count):
        outbox.get(timeout=TIMEOUT)
    assert ask(inbox, outbox, "drop all")["sync"] == count
    cuda_ipc.ipc_collect()
    assert not cuda_ipc._sent and not cuda_ipc._counters
    inbox.put(("exit", None))
    child.join(TIMEOUT)
    assert child.exitcode == 0


def test_ipc_collect_without_cuda_is_a_no_op():
    assert cuda_ipc.ipc_collect() is None
