"""agnostic.cuda.memory: PyTorch's memory statistics and controls over CuPy's pools, checked to the byte.

Three parts: behaviour without CUDA; the allocator's bookkeeping driven through a stand-in for CuPy's pool (runs
anywhere, with CuPy's own pointer classes where CuPy imports); and the real thing on each CUDA device (``cuda_device``), where every figure is
checked exactly: the ``fresh`` fixture gives each test a new CuPy stream, hence an empty pool arena, so every new
block needs its own cudaMalloc of exactly the request rounded up to 512 bytes.
"""

import gc
import subprocess
import sys
import types
import weakref
from pathlib import Path

import numpy
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import agnostic
from agnostic import _backend
from agnostic.cuda import memory

KiB, MiB = 1 << 10, 1 << 20
HAS_CUDA = agnostic.cuda.is_available()
no_cuda_only = pytest.mark.skipif(HAS_CUDA, reason="checks behaviour on machines without CUDA")
ROOT = Path(__file__).resolve().parents[1]

PUBLIC_CALLS = {
    "memory_allocated": memory.memory_allocated, "max_memory_allocated": memory.max_memory_allocated,
    "memory_reserved": memory.memory_reserved, "max_memory_reserved": memory.max_memory_reserved,
    "memory_stats": memory.memory_stats, "memory_stats_as_nested_dict": memory.memory_stats_as_nested_dict,
    "memory_summary": memory.memory_summary, "memory_snapshot": memory.memory_snapshot,
    "reset_peak_memory_stats": memory.reset_peak_memory_stats,
    "reset_accumulated_memory_stats": memory.reset_accumulated_memory_stats,
    "empty_cache": memory.empty_cache, "mem_get_info": memory.mem_get_info,
    "memory_allocated(0)": lambda: memory.memory_allocated(0),
    "memory_stats('cuda:0')": lambda: memory.memory_stats("cuda:0"),
    "mem_get_info(device('cuda'))": lambda: memory.mem_get_info(agnostic.device("cuda")),
}


# ----- without CUDA -------------------------------------------------------------------------------------------

@no_cuda_only
@pytest.mark.parametrize("name", sorted(PUBLIC_CALLS))
def test_calls_raise_the_backend_reason_without_cuda(name):
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        PUBLIC_CALLS[name]()


@pytest.mark.parametrize("alias, renamed", [
    (memory.memory_cached, "memory_reserved"), (memory.max_memory_cached, "max_memory_reserved"),
    (memory.reset_max_memory_allocated, "reset_peak_memory_stats"),
    (memory.reset_max_memory_cached, "reset_peak_memory_stats"),
])
def test_deprecated_aliases_warn(alias, renamed):
    with pytest.warns(FutureWarning, match=renamed):
        try:
            alias()
        except RuntimeError:
            if HAS_CUDA:
                raise


def test_record_stream_refuses_cpu_tensors():
    with pytest.raises(RuntimeError, match="CUDA tensor"):
        memory.record_stream(agnostic.zeros(3), object())


def test_out_of_memory_error_is_a_runtime_error():
    assert issubclass(memory.OutOfMemoryError, RuntimeError)


def test_importing_memory_does_not_import_cupy():
    code = "import sys, agnostic, agnostic.cuda.memory; print('cupy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize("size, text", [
    (0, "0 bytes"), (1024, "1024 bytes"), (1025, "1.00 KiB"), (MiB, "1024.00 KiB"), (MiB + 512, "1.00 MiB"),
    (3 << 30, "3.00 GiB"), (10 << 40, "10240.00 GiB"),
])
def test_sizes_are_written_as_pytorch_writes_them(size, text):
    assert memory._format_size(size) == text


# ----- the bookkeeping, through a stand-in for CuPy's pool ----------------------------------------------------

class FakeCudaError(RuntimeError):
    """cudaErrorMemoryAllocation from the fake cudaMalloc."""


class FakeOutOfMemory(MemoryError):
    """What CuPy's pool raises when cudaMalloc still fails after freeing its cache."""


class UnownedMemory:
    """What agnostic uses of CuPy's ``UnownedMemory``: an address range that keeps its owner alive."""

    def __init__(self, ptr, size, owner, device_id):
        self.ptr, self.size, self._owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    """What agnostic uses of CuPy's ``MemoryPointer``."""

    def __init__(self, mem, offset):
        self.mem, self.ptr = mem, mem.ptr + offset


def pointer_classes():
    """CuPy's ``cupy.cuda.memory`` where CuPy imports (GPU or not), else the stand-ins above."""
    try:
        import cupy.cuda.memory as real
    except Exception:  # not installed, or no CUDA runtime to load
        return types.SimpleNamespace(UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer)
    return real


def fake_cupy(capacity=64 * MiB):
    """The slice of CuPy that agnostic's allocator uses, with a pool that reuses cached blocks of the same size (no
    splitting, no streams) and a fake cudaMalloc with ``capacity`` bytes; CuPy's own pointer classes where CuPy
    imports."""
    real = pointer_classes()
    runtime = types.SimpleNamespace(capacity=capacity, used=0, next_ptr=1 << 32)
    runtime.getDeviceCount = lambda: 1
    runtime.memGetInfo = lambda: (runtime.capacity - runtime.used, runtime.capacity)

    class Memory:
        def __init__(self, size):
            self.size, self.device_id, self.ptr = size, 0, 0
            if size:
                if runtime.used + size > runtime.capacity:
                    raise FakeCudaError("cudaErrorMemoryAllocation")
                runtime.used += size
                self.ptr, runtime.next_ptr = runtime.next_ptr, runtime.next_ptr + size

        def __del__(self):
            runtime.used -= self.size

    class Pooled:
        def __init__(self, pool, segment, size):
            self.pool, self.segment, self.size = pool, segment, size

        def __del__(self):
            self.pool.cached.setdefault(self.size, []).append(self.segment)

    class Pool:
        def __init__(self, allocator):
            self.allocator, self.cached = allocator, {}

        def malloc(self, size):
            size = (size + 511) // 512 * 512
            if self.cached.get(size):
                segment = self.cached[size].pop()
            else:
                try:
                    segment = self.allocator(size)
                except FakeCudaError:
                    self.free_all_blocks()
                    try:
                        segment = self.allocator(size)
                    except FakeCudaError:
                        raise FakeOutOfMemory(size) from None
            return real.MemoryPointer(real.UnownedMemory(segment.ptr, size, Pooled(self, segment, size), 0), 0)

        def free_all_blocks(self, stream=None):
            self.cached.clear()

    class Stream:
        """Work is queued with launch() and completes with finish()."""

        def __init__(self):
            self.ptr, self.device_id, self.queued, self.completed = id(self), 0, 0, 0

        def launch(self):
            self.queued += 1

        def finish(self):
            self.completed = self.queued

        def record(self, event):
            event.stream, event.ticket = self, self.queued
            return event

    class Event:
        def __init__(self, block=False, disable_timing=False):
            self.stream = self.ticket = None

        @property
        def done(self):
            return self.stream.completed >= self.ticket

        def synchronize(self):
            self.stream.completed = max(self.stream.completed, self.ticket)

    class Device:
        def __init__(self, index):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            return False

    pools = types.SimpleNamespace(SingleDeviceMemoryPool=Pool, Memory=Memory, UnownedMemory=real.UnownedMemory,
                                  MemoryPointer=real.MemoryPointer, OutOfMemoryError=FakeOutOfMemory)
    cuda = types.SimpleNamespace(memory=pools, device=types.SimpleNamespace(get_device_id=lambda: 0),
                                 Device=Device, Event=Event, runtime=runtime, Stream=Stream)
    return types.SimpleNamespace(cuda=cuda)


def stat(nested, family, pool="all"):
    figures = nested[family][pool]
    return figures["current"], figures["peak"], figures["allocated"], figures["freed"]


def test_fake_blocks_and_segments_are_counted_exactly():
    allocator = memory._Allocator(fake_cupy())
    small = allocator.malloc(1000)        # 1024 bytes, small pool
    edge = allocator.malloc(MiB)          # exactly 1 MiB: still the small pool
    large = allocator.malloc(MiB + 1)     # 1 MiB + 512, large pool
    state = allocator.state(0)
    s, l = KiB + MiB, MiB + 512
    nested = allocator.state(0).nested()
    for family in ("allocated_bytes", "active_bytes", "reserved_bytes"):
        assert stat(nested, family, "small_pool") == (s, s, s, 0)
        assert stat(nested, family, "large_pool") == (l, l, l, 0)
        assert stat(nested, family) == (s + l, s + l, s + l, 0)
    assert stat(nested, "requested_bytes", "small_pool") == (1000 + MiB,) * 3 + (0,)
    assert stat(nested, "requested_bytes", "large_pool") == (MiB + 1,) * 3 + (0,)
    for family in ("allocation", "active", "segment"):
        assert stat(nested, family, "small_pool") == (2, 2, 2, 0)
        assert stat(nested, family) == (3, 3, 3, 0)
    assert (nested["num_device_alloc"], nested["num_device_free"]) == (3, 0)
    assert [small.mem.size, edge.mem.size, large.mem.size] == [KiB, MiB, MiB + 512]

    del small, edge, large
    nested = state.nested()
    assert stat(nested, "allocated_bytes") == (0, s + l, s + l, s + l)
    assert stat(nested, "active") == (0, 3, 3, 3)
    assert stat(nested, "reserved_bytes") == (s + l, s + l, s + l, 0)      # cached, not given back
    again = allocator.malloc(1000)                                          # reuses the cached 1 KiB block
    nested = state.nested()
    assert stat(nested, "segment") == (3, 3, 3, 0)
    assert stat(nested, "allocated_bytes", "small_pool") == (KiB, s, s + KiB, s)
    del again
    allocator.empty_cache()
    nested = state.nested()
    assert stat(nested, "reserved_bytes") == (0, s + l, s + l, s + l)
    assert stat(nested, "segment") == (0, 3, 3, 3)
    assert nested["num_device_free"] == 3

    state.reset_peaks()
    state.reset_accumulated()
    nested = state.nested()
    assert all(stat(nested, family, pool) == (0, 0, 0, 0) for family in memory._FAMILIES for pool in memory._POOL_KEYS)


def test_fake_zero_byte_allocations_count_nothing():
    allocator = memory._Allocator(fake_cupy())
    pointer = allocator.malloc(0)
    assert pointer.ptr == 0
    assert stat(allocator.state(0).nested(), "allocation") == (0, 0, 0, 0)


def test_fake_out_of_memory_retries_then_raises_with_the_figures():
    cupy = fake_cupy(capacity=4 * MiB)
    allocator = memory._Allocator(cupy)
    kept = allocator.malloc(MiB)
    with pytest.raises(memory.OutOfMemoryError) as caught:
        allocator.malloc(10 << 40)
    error = caught.value
    assert (error.requested, error.device, error.allocated, error.reserved) == (10 << 40, 0, MiB, MiB)
    assert (error.free, error.total) == (3 * MiB, 4 * MiB)
    assert str(error).startswith("CUDA out of memory. Tried to allocate 10240.00 GiB. GPU 0 has a total capacity "
                                 "of 4.00 MiB of which 3.00 MiB is free. Of the allocated memory 1024.00 KiB is "
                                 "allocated by agnostic, and 0 bytes is reserved by agnostic but unallocated.")
    nested = allocator.state(0).nested()
    assert (nested["num_alloc_retries"], nested["num_ooms"]) == (1, 1)
    assert stat(nested, "allocated_bytes")[0] == MiB
    del kept


def test_fake_out_of_memory_frees_the_other_pools_cache_and_succeeds():
    allocator = memory._Allocator(fake_cupy(capacity=4 * MiB))
    blocks = [allocator.malloc(MiB) for _ in range(3)]      # 3 MiB cached by the small pool once freed
    del blocks
    large = allocator.malloc(2 * MiB)                        # the large pool's own retry cannot free those
    nested = allocator.state(0).nested()
    assert (nested["num_alloc_retries"], nested["num_ooms"]) == (1, 0)
    assert stat(nested, "reserved_bytes") == (2 * MiB, 3 * MiB, 5 * MiB, 3 * MiB)
    del large


def fake_tensor(pointer):
    return types.SimpleNamespace(device=agnostic.device("cuda:0"), _data=types.SimpleNamespace(data=pointer))


def test_fake_record_stream_parks_the_block_until_the_stream_catches_up():
    cupy = fake_cupy()
    allocator = memory._Allocator(cupy)
    side = cupy.cuda.Stream()
    a = allocator.malloc(4 * MiB)
    state = allocator.state(0)
    a_ptr = a.ptr
    side.launch()                                                    # work on A queued on the side stream
    memory.record_stream(fake_tensor(a), types.SimpleNamespace(cupy_stream=side))
    memory.record_stream(fake_tensor(a), side)                       # the same stream again: recorded once
    assert a.mem.streams == [side]
    del a
    nested = allocator.state(0).nested()
    assert stat(nested, "allocated_bytes") == (0, 4 * MiB, 4 * MiB, 4 * MiB)
    assert stat(nested, "active_bytes") == (4 * MiB, 4 * MiB, 4 * MiB, 0)
    assert [b["state"] for s in allocator.snapshot() for b in s["blocks"]] == ["active_pending_free"]

    b = allocator.malloc(4 * MiB)
    assert b.ptr != a_ptr                                            # A's block is not handed out
    assert stat(state.nested(), "active_bytes") == (8 * MiB, 8 * MiB, 8 * MiB, 0)
    side.launch()                                                    # later work does not delay A any more
    side.completed = 1
    c = allocator.malloc(4 * MiB)
    assert c.ptr == a_ptr and not allocator.pending
    nested = state.nested()
    assert stat(nested, "active_bytes") == (8 * MiB, 8 * MiB, 12 * MiB, 4 * MiB)
    assert stat(nested, "allocated_bytes") == (8 * MiB, 8 * MiB, 12 * MiB, 4 * MiB)
    del b, c


def test_fake_empty_cache_waits_for_parked_blocks():
    cupy = fake_cupy()
    allocator = memory._Allocator(cupy)
    side = cupy.cuda.Stream()
    a = allocator.malloc(2 * MiB)
    side.launch()
    memory.record_stream(fake_tensor(a), side)
    del a
    allocator.empty_cache()
    assert not allocator.pending and side.completed == 1
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 0
    assert cupy.cuda.runtime.used == 0


def test_fake_record_stream_ignores_memory_agnostic_did_not_allocate():
    real = pointer_classes()
    foreign = real.MemoryPointer(real.UnownedMemory(1 << 32, 512, object(), 0), 0)
    memory.record_stream(fake_tensor(foreign), fake_cupy().cuda.Stream())


def test_fake_snapshot_tiles_each_segment():
    allocator = memory._Allocator(fake_cupy())
    block = allocator.malloc(1000)
    (segment,) = allocator.snapshot()
    assert segment == {
        "device": 0, "address": block.ptr, "total_size": KiB, "allocated_size": KiB, "active_size": KiB,
        "requested_size": 1000, "segment_type": "small", "is_expandable": False,
        "blocks": [{"address": block.ptr, "size": KiB, "requested_size": 1000, "state": "active_allocated"}],
    }
    blocks = [{"address": 4096, "size": 1024, "requested_size": 1000, "state": "active_allocated"}]
    record = memory._segment_record(0, "large", 0, 8192, [(4096, 1024, 1000, "active_allocated")])
    assert [b["state"] for b in record["blocks"]] == ["inactive", "active_allocated", "inactive"]
    assert record["blocks"][1] == blocks[0] and sum(b["size"] for b in record["blocks"]) == 8192


def test_fake_snapshot_passes_over_dead_weak_proxies():
    class Referent:
        pass

    referent = Referent()
    dead = [weakref.proxy(referent)]  # kept in a container, as numba keeps some
    del referent
    with pytest.raises(ReferenceError):
        isinstance(dead[0], memory._Allocator)  # what a scan of the collector's objects must not do
    allocator = memory._Allocator(fake_cupy())
    block = allocator.malloc(1000)
    assert [b["address"] for segment in allocator.snapshot() for b in segment["blocks"]] == [block.ptr]


class EagerCounts:
    """PyTorch's block figures of one pool, counted at each event (what the allocator's log must add up to)."""

    def __init__(self):
        self.n = self.b = self.r = self.parked = self.parked_bytes = 0
        self.peaks = [0, 0, 0, 0, 0]  # blocks, bytes, requested, active blocks, active bytes
        self.totals = [0, 0, 0]

    def allocate(self, size):
        self.n, self.b, self.r = self.n + 1, self.b + memory._round(size), self.r + size
        self.totals = [self.totals[0] + 1, self.totals[1] + memory._round(size), self.totals[2] + size]
        self.peaks = [max(p, c) for p, c in zip(self.peaks, self.currents())]

    def free(self, size, parked):
        self.n, self.b, self.r = self.n - 1, self.b - memory._round(size), self.r - size
        if parked:
            self.parked, self.parked_bytes = self.parked + 1, self.parked_bytes + memory._round(size)

    def unpark(self, size):
        self.parked, self.parked_bytes = self.parked - 1, self.parked_bytes - memory._round(size)

    def reset_peaks(self):
        self.peaks = list(self.currents())

    def currents(self):
        return self.n, self.b, self.r, self.n + self.parked, self.b + self.parked_bytes

    def figures(self):
        """``{family: (current, peak, allocated, freed)}`` for the block families."""
        families = ("allocation", "allocated_bytes", "requested_bytes", "active", "active_bytes")
        totals = self.totals + self.totals[:2]
        return {family: (current, peak, total, total - current)
                for family, current, peak, total in zip(families, self.currents(), self.peaks, totals)}


SIZES = st.sampled_from([1, 1000, 1536, MiB - 1, MiB, MiB + 1, 3 * MiB])
EVENTS = st.lists(st.one_of(
    st.tuples(st.just("allocate"), SIZES), st.tuples(st.sampled_from(["free", "free after stream"]), st.integers(0, 9)),
    st.tuples(st.sampled_from(["stream done", "read", "reset peaks"]), st.none()),
), max_size=60)


@settings(deadline=None)
@given(events=EVENTS, log_limit=st.sampled_from([1, 3, memory._LOG_LIMIT]))
@example(events=[("allocate", 1000), ("free after stream", 0), ("allocate", 1000), ("stream done", None)],
         log_limit=memory._LOG_LIMIT)  # the second block, counted late, was active beside the parked one
def test_fake_logged_figures_equal_counting_every_event(events, log_limit):
    """Allocations, frees, frees parked by ``record_stream``, their release, reads and peak resets in any order:
    the figures counted from the log (however often it is brought up to date) equal those counted at each event."""
    cupy = fake_cupy(capacity=1 << 40)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "_LOG_LIMIT", log_limit)  # read when the allocator is made
        allocator = memory._Allocator(cupy)
    side = cupy.cuda.Stream()
    model = {"small_pool": EagerCounts(), "large_pool": EagerCounts(), "all": EagerCounts()}
    live, parked = [], []

    def pools(size):
        return model["small_pool" if size <= MiB else "large_pool"], model["all"]

    for position, (event, value) in enumerate(events):
        if event == "allocate":
            live.append((allocator.malloc(value), value))
            for counts in pools(value):
                counts.allocate(value)
        elif event.startswith("free") and live:
            pointer, size = live.pop(value % len(live))
            after_stream = event == "free after stream"
            if after_stream:
                side.launch()
                memory.record_stream(fake_tensor(pointer), side)
                parked.append(size)
            del pointer
            for counts in pools(size):
                counts.free(size, parked=after_stream)
        elif event == "stream done":
            side.finish()
            allocator.release_completed()
            for size in parked:
                for counts in pools(size):
                    counts.unpark(size)
            parked.clear()
        elif event == "reset peaks":
            allocator.state(0).reset_peaks()
            for counts in model.values():
                counts.reset_peaks()
        if event == "read" or position == len(events) - 1:
            nested = allocator.state(0).nested()
            for pool, counts in model.items():
                for family, figures in counts.figures().items():
                    assert stat(nested, family, pool) == figures, (pool, family)
    del live


def test_fake_flat_statistics_use_pytorchs_keys():
    allocator = memory._Allocator(fake_cupy())
    kept = allocator.malloc(3000)
    flat = memory._flatten(allocator.state(0).nested())
    assert list(flat) == sorted(flat)
    expected = {f"{family}.{pool}.{figure}" for family in memory._FAMILIES for pool in memory._POOL_KEYS
                for figure in ("current", "peak", "allocated", "freed")}
    expected |= {f"{family}.{figure}" for family in ("oversize_allocations", "oversize_segments")
                 for figure in ("current", "peak", "allocated", "freed")}
    expected |= {"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free",
                 "max_split_size"}
    assert set(flat) == expected
    assert flat["allocated_bytes.small_pool.current"] == 3072 and flat["requested_bytes.all.peak"] == 3000
    del kept


def test_fake_summary_is_pytorchs_table():
    allocator = memory._Allocator(fake_cupy(capacity=1 << 40))
    kept = [allocator.malloc(3 * MiB) for _ in range(300)]
    table = memory._summary_table(0, memory._flatten(allocator.state(0).nested()), abbreviated=False)
    lines = table.splitlines()
    assert all(len(line) == 77 and line[0] == line[-1] == "|" for line in lines)
    assert "agnostic CUDA memory summary, device ID 0" in lines[1]
    assert "| Allocated memory      |    900 MiB |    900 MiB |    900 MiB |      0 B   |" in table
    assert "|       from small pool |      0 MiB |      0 MiB |      0 MiB |      0 B   |" in table
    assert "| Allocations           |     300    |     300    |     300    |       0    |" in table
    short = memory._summary_table(0, memory._flatten(allocator.state(0).nested()), abbreviated=True)
    assert len(short.splitlines()) == len(lines) - 2 * len(memory._SUMMARY_ROWS)
    del kept


# ----- on CUDA ------------------------------------------------------------------------------------------------

@pytest.fixture
def fresh(cuda_device):
    """``cuda_device`` with a quiet allocator: cache emptied, totals and peaks reset, a new CuPy stream (so a new,
    empty pool arena) current, and no garbage collection to free tensors behind the test's back."""
    cupy = _backend.require_cupy()
    memory.install()
    index = cuda_device.index
    gc.collect()
    gc.disable()
    try:
        with agnostic.cuda.device(index):
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                memory.empty_cache()
                memory.reset_accumulated_memory_stats(index)
                memory.reset_peak_memory_stats(index)
                yield cuda_device
            stream.synchronize()
    finally:
        gc.enable()
        memory.empty_cache()


def check(device, base, family, small=(0, 0, 0, 0), large=(0, 0, 0, 0), all=None):
    """``memory_stats(device)`` for ``family`` against ``base`` (taken after the fixture's resets): per pool,
    (current, peak) are deltas from base's current, (allocated, freed) are totals; ``all`` defaults to their sum."""
    stats = memory.memory_stats(device)
    all = all or tuple(x + y for x, y in zip(small, large))
    for pool, (current, peak, allocated, freed) in (("small_pool", small), ("large_pool", large), ("all", all)):
        start = base[f"{family}.{pool}.current"]
        got = tuple(stats[f"{family}.{pool}.{figure}"] for figure in ("current", "peak", "allocated", "freed"))
        assert got == (start + current, start + peak, allocated, freed), f"{family}.{pool}"
    return stats


def uint8(count, device):
    return agnostic.empty(count, dtype=agnostic.uint8, device=device)


def test_every_figure_is_exact(fresh):
    base = memory.memory_stats(fresh)
    small, edge, large = uint8(1000, fresh), uint8(MiB, fresh), uint8(MiB + 1, fresh)
    s, l = KiB + MiB, MiB + 512        # CuPy rounds each request up to 512 bytes; 1 MiB is still the small pool
    for family in ("allocated_bytes", "active_bytes", "reserved_bytes"):
        check(fresh, base, family, small=(s, s, s, 0), large=(l, l, l, 0))
    check(fresh, base, "requested_bytes", small=(1000 + MiB,) * 3 + (0,), large=(MiB + 1,) * 3 + (0,))
    for family in ("allocation", "active", "segment"):
        stats = check(fresh, base, family, small=(2, 2, 2, 0), large=(1, 1, 1, 0))
    assert (stats["num_device_alloc"], stats["num_device_free"], stats["num_alloc_retries"], stats["num_ooms"]) == (
        3, 0, 0, 0)
    assert memory.memory_allocated(fresh) == base["allocated_bytes.all.current"] + s + l
    assert memory.max_memory_allocated(fresh) == base["allocated_bytes.all.current"] + s + l
    assert memory.memory_reserved(fresh) == base["reserved_bytes.all.current"] + s + l

    del small, edge, large
    check(fresh, base, "allocated_bytes", small=(0, s, s, s), large=(0, l, l, l))
    check(fresh, base, "active", small=(0, 2, 2, 2), large=(0, 1, 1, 1))
    check(fresh, base, "reserved_bytes", small=(s, s, s, 0), large=(l, l, l, 0))    # cached
    again = uint8(1000, fresh)                                                          # reuses the cached block
    check(fresh, base, "segment", small=(2, 2, 2, 0), large=(1, 1, 1, 0))
    check(fresh, base, "allocated_bytes", small=(KiB, s, s + KiB, s), large=(0, l, l, l))
    del again
    memory.empty_cache()
    check(fresh, base, "reserved_bytes", small=(0, s, s, s), large=(0, l, l, l))
    stats = check(fresh, base, "segment", small=(0, 2, 2, 2), large=(0, 1, 1, 1))
    assert stats["num_device_free"] == 3


def test_device_argument_forms_agree(fresh):
    kept = uint8(3 * MiB, fresh)
    index = fresh.index
    with agnostic.cuda.device(index):
        current = memory.memory_allocated()
    assert memory.memory_allocated(index) == memory.memory_allocated(f"cuda:{index}") == current
    assert memory.memory_allocated(fresh) == memory.memory_allocated(agnostic.device("cuda", index)) == current
    del kept


def test_reset_peak_and_accumulated(fresh):
    base = memory.memory_stats(fresh)
    a, b = uint8(4 * MiB, fresh), uint8(2 * MiB, fresh)
    del a, b
    assert memory.max_memory_allocated(fresh) == base["allocated_bytes.all.current"] + 6 * MiB
    assert memory.max_memory_reserved(fresh) == base["reserved_bytes.all.current"] + 6 * MiB
    memory.reset_peak_memory_stats(fresh)
    stats = memory.memory_stats(fresh)
    assert all(stats[key] == stats[key[:-len("peak")] + "current"] for key in stats if key.endswith(".peak"))
    assert memory.max_memory_allocated(fresh) == memory.memory_allocated(fresh)
    with pytest.warns(FutureWarning):
        memory.reset_max_memory_allocated(fresh)
    with pytest.warns(FutureWarning):
        assert memory.max_memory_cached(fresh) == memory.max_memory_reserved(fresh)
    memory.reset_accumulated_memory_stats(fresh)
    stats = memory.memory_stats(fresh)
    assert all(stats[key] == 0 for key in stats if key.endswith((".allocated", ".freed")))
    assert stats["num_device_alloc"] == stats["num_device_free"] == 0


def test_empty_cache_gives_memory_back_to_the_driver(fresh):
    size = 256 * MiB
    x = uint8(size, fresh)
    reserved = memory.memory_reserved(fresh)
    del x
    assert memory.memory_reserved(fresh) == reserved                       # cached
    free_before, total = memory.mem_get_info(fresh)
    memory.empty_cache()
    assert memory.memory_reserved(fresh) == reserved - size
    free_after, total_after = memory.mem_get_info(fresh)
    assert total_after == total
    assert free_after - free_before >= size - 2 * MiB                      # the driver counts in 2 MiB pages


def test_out_of_memory_raises_with_the_figures(fresh):
    base = memory.memory_stats(fresh)
    request = 10 << 40
    with pytest.raises(memory.OutOfMemoryError) as caught:
        uint8(request, fresh)
    error = caught.value
    assert isinstance(error, RuntimeError)
    assert (error.requested, error.device) == (request, fresh.index)
    assert error.total == memory.mem_get_info(fresh)[1] and 0 <= error.free <= error.total
    assert error.allocated == memory.memory_allocated(fresh)
    text = str(error)
    assert text.startswith(f"CUDA out of memory. Tried to allocate 10240.00 GiB. GPU {fresh.index} has a total "
                           f"capacity of {memory._format_size(error.total)} of which ")
    assert f"Of the allocated memory {memory._format_size(error.allocated)} is allocated by agnostic" in text
    stats = memory.memory_stats(fresh)
    assert (stats["num_ooms"], stats["num_alloc_retries"]) == (1, 1)
    assert stats["allocated_bytes.all.current"] == base["allocated_bytes.all.current"]
    assert "CUDA OOMs: 1 " in memory.memory_summary(fresh)
    assert agnostic.ones(4, device=fresh).sum().item() == 4                 # the device still works


def test_summary_and_snapshot(fresh):
    x = uint8(1000, fresh)
    summary = memory.memory_summary(fresh)
    lines = summary.splitlines()
    assert all(len(line) == 77 for line in lines)
    assert f"device ID {fresh.index}" in summary and "from small pool" in summary
    assert "from large pool" not in memory.memory_summary(fresh, abbreviated=True)
    (segment,) = [s for s in memory.memory_snapshot() if s["address"] == x.data_ptr()]
    assert segment["device"] == fresh.index and segment["segment_type"] == "small"
    assert (segment["total_size"], segment["allocated_size"], segment["requested_size"]) == (KiB, KiB, 1000)
    assert segment["blocks"] == [{"address": x.data_ptr(), "size": KiB, "requested_size": 1000,
                                  "state": "active_allocated"}]


# Spins about half a second at H100 clocks, then writes ones all over its array: a long use of it on a side stream.
_SPIN = r"""
extern "C" __global__ void spin_then_write(unsigned char* data, long long n, long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x) {
        data[i] = 1;
    }
}
"""
SPIN_CYCLES = 1_000_000_000


def test_record_stream_keeps_a_block_from_reuse_until_the_side_stream_is_done(fresh):
    cupy = _backend.require_cupy()
    kernel = cupy.RawKernel(_SPIN, "spin_then_write")
    side = cupy.cuda.Stream(non_blocking=True)
    size = 4 * MiB

    def spin_on_side(tensor, cycles=SPIN_CYCLES):
        with side:
            kernel((1,), (256,), (tensor._data, numpy.int64(size), numpy.int64(cycles)))

    spin_on_side(uint8(size, fresh), cycles=0)     # compile and warm up
    uint8(16, fresh)._data.fill(2)                 # loading a kernel's module synchronizes the device: do it now
    int(uint8(16, fresh)._data.max())
    side.synchronize()

    # Without record_stream, CuPy hands A's block out at once, while the side stream is still to write into it.
    a = uint8(size, fresh)
    a_ptr = a.data_ptr()
    spin_on_side(a)
    del a
    b = uint8(size, fresh)
    assert b.data_ptr() == a_ptr
    b._data.fill(2)
    assert not side.done
    side.synchronize()
    assert int(b._data.max()) == 1                 # the side stream overwrote B
    del b

    # With record_stream, A's block waits for the side stream.
    a = uint8(size, fresh)
    a_ptr = a.data_ptr()
    spin_on_side(a)
    memory.record_stream(a, types.SimpleNamespace(cupy_stream=side))
    before = memory.memory_stats(fresh)
    del a
    stats = memory.memory_stats(fresh)
    assert stats["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] - size
    assert stats["active_bytes.all.current"] == before["active_bytes.all.current"]
    assert any(block["state"] == "active_pending_free" and block["address"] == a_ptr
               for segment in memory.memory_snapshot() for block in segment["blocks"])
    b = uint8(size, fresh)
    assert b.data_ptr() != a_ptr
    b._data.fill(2)
    assert not side.done                           # the side stream was still busy when B was allocated
    side.synchronize()
    assert int(b._data.min()) == int(b._data.max()) == 2
    c = uint8(size, fresh)                         # the side stream is done: A's block is reused
    assert c.data_ptr() == a_ptr
    stats = memory.memory_stats(fresh)
    assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"]
    del b, c
