"""agnostic.cuda's memory extras: the per-process cap, MemPool, raw allocations, caching on/off, host stats, legacy
CUDA storages. The allocator parts run anywhere through the stand-in for CuPy of ``test_cuda_memory``, and for real
on each CUDA device."""

import gc
import shutil
import subprocess
import warnings

import pytest

import agnostic
from agnostic import _backend
from agnostic._backends import pinned
from agnostic.cuda import _memory_extras as extras
from agnostic.cuda import memory
from test_cuda_memory import MiB, FakeCudaError, fake_cupy, stat

HAS_CUDA = agnostic.cuda.is_available()
no_cuda_only = pytest.mark.skipif(HAS_CUDA, reason="checks behaviour on machines without CUDA")


# ----- without CUDA -------------------------------------------------------------------------------------------

def test_constants_and_classes_are_pytorchs():
    assert agnostic.cuda.has_half is True and agnostic.cuda.has_magma is False
    assert (agnostic.cuda.cudaStatus.SUCCESS, agnostic.cuda.cudaStatus.ERROR_NOT_READY) == (0, 34)
    assert issubclass(agnostic.cuda.DeferredCudaCallError, Exception)
    assert agnostic.cuda.get_allocator_backend() == "native"
    first, second = agnostic.cuda.MemPool(), agnostic.cuda.MemPool()
    assert first.id[0] == second.id[0] == 0 and first.id != second.id and first.use_count() == 1


def test_cuda_legacy_storages_are_the_twins_of_the_cpu_ones():
    for name in ("FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage", "LongStorage", "IntStorage",
                 "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage", "ComplexFloatStorage",
                 "ComplexDoubleStorage"):
        cuda_class, cpu_class = getattr(agnostic.cuda, name), getattr(agnostic, name)
        assert cuda_class is not cpu_class and cuda_class.__module__ == "agnostic.cuda"
        assert cuda_class._legacy_dtype is cpu_class._legacy_dtype and cuda_class._legacy_device_type == "cuda"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not isinstance(agnostic.zeros(2).storage(), agnostic.cuda.FloatStorage)


@no_cuda_only
@pytest.mark.parametrize("call", [
    lambda: agnostic.cuda.set_per_process_memory_fraction(0.5), agnostic.cuda.get_per_process_memory_fraction,
    lambda: agnostic.cuda.caching_allocator_alloc(8), lambda: agnostic.cuda.caching_allocator_delete(0),
    agnostic.cuda.current_solver_handle,
    lambda: agnostic.cuda.use_mem_pool(agnostic.cuda.MemPool()).__enter__(),
])
def test_calls_raise_what_memory_allocated_raises_without_cuda(call):
    with pytest.raises(RuntimeError) as reference:
        agnostic.cuda.memory_allocated()
    with pytest.raises(type(reference.value), match="CuPy|CUDA") as caught:
        call()
    assert str(caught.value) == str(reference.value)


@no_cuda_only
def test_host_stats_are_empty_and_toggles_do_nothing_before_cuda():
    assert agnostic.cuda.host_memory_stats() == {} and agnostic.cuda.host_memory_stats_as_nested_dict() == {}
    agnostic.cuda.caching_allocator_enable(False)
    with agnostic.cuda.caching_allocator_disabled():
        pass


def test_host_stats_count_blocks_and_requests():
    stats = pinned._HostStats()
    stats.change("allocations", "allocated_bytes", 1024, 1)
    stats.change("active_requests", "active_bytes", 1024, 1)
    stats.change("active_requests", "active_bytes", 1024, -1)
    stats.time("host_alloc_time", 3e-6)
    nested = stats.nested()
    assert nested["allocated_bytes"] == {"current": 1024, "peak": 1024, "allocated": 1024, "freed": 0}
    assert nested["active_requests"] == {"current": 0, "peak": 1, "allocated": 1, "freed": 1}
    assert (nested["num_host_alloc"], nested["num_host_free"]) == (1, 0)
    assert nested["host_alloc_time"]["count"] == 1 and nested["host_free_time"]["count"] == 0
    stats.reset_accumulated()
    stats.reset_peaks()
    nested = stats.nested()
    assert nested["active_requests"] == {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
    assert nested["allocations"]["current"] == 1 and nested["host_alloc_time"]["count"] == 0


def test_fraction_argument_errors_are_pytorchs(monkeypatch):
    monkeypatch.setattr(memory, "_require", lambda: memory._Allocator(fake_cupy()))
    monkeypatch.setattr(extras, "_index", lambda device: 0)
    with pytest.raises(TypeError, match="must be `float`"):
        agnostic.cuda.set_per_process_memory_fraction(1)
    with pytest.raises(ValueError, match="Allowed range: 0~1"):
        agnostic.cuda.set_per_process_memory_fraction(1.5)


def test_pluggable_allocator_loads_the_documented_signatures(tmp_path):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    source = tmp_path / "alloc.c"
    source.write_text("""
#include <stdlib.h>
#include <sys/types.h>
static long last_size; static int last_device; static void* last_stream;
void* my_alloc(ssize_t size, int device, void* stream) {
    last_size = size; last_device = device; last_stream = stream; return malloc(size);
}
void my_free(void* ptr, ssize_t size, int device, void* stream) { last_size = -size; free(ptr); }
long seen_size(void) { return last_size; }
int seen_device(void) { return last_device; }
""")
    library = tmp_path / "alloc.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    plugged = agnostic.cuda.CUDAPluggableAllocator(str(library), "my_alloc", "my_free")
    assert plugged.allocator() is plugged
    address = plugged._alloc(4096, 3, 1234)
    assert address and plugged._library.seen_size() == 4096 and plugged._library.seen_device() == 3
    owner = extras._PluggedBlock(plugged._free, address, 4096, 3, 1234)
    del owner
    assert plugged._library.seen_size() == -4096
    with pytest.raises(AttributeError):
        agnostic.cuda.CUDAPluggableAllocator(str(library), "missing", "my_free")
    with pytest.raises(TypeError, match="CUDAPluggableAllocator"):
        agnostic.cuda.change_current_allocator(object())


# ----- the allocator, through the stand-in for CuPy -----------------------------------------------------------

def capped_fake(capacity):
    """The stand-in CuPy with the runtime error the cap raises (the stand-in's cudaMalloc error, status 2)."""
    cupy = fake_cupy(capacity=capacity)
    cupy.cuda.runtime.CUDARuntimeError = FakeCudaError
    return cupy


@pytest.fixture
def memory_allocation_status(monkeypatch):
    monkeypatch.setattr(FakeCudaError, "status", 2, raising=False)


def test_fake_fraction_caps_what_the_pools_reserve(memory_allocation_status):
    allocator = memory._Allocator(capped_fake(capacity=64 * MiB))
    allocator.fractions[0], allocator.limits[0] = 0.25, 16 * MiB
    kept = allocator.malloc(12 * MiB)                        # below the cap
    with pytest.raises(memory.OutOfMemoryError) as caught:
        allocator.malloc(8 * MiB)                            # 12 + 8 MiB would pass 16 MiB
    assert "16.00 MiB allowed; Of the allocated memory" in str(caught.value)
    nested = allocator.state(0).nested()
    assert (nested["num_alloc_retries"], nested["num_ooms"]) == (1, 1)
    assert stat(nested, "reserved_bytes")[0] == 12 * MiB
    more = allocator.malloc(4 * MiB)                         # exactly up to the cap still fits
    del kept, more
    again = allocator.malloc(8 * MiB)                        # the retry frees the cached 12 MiB first
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 8 * MiB
    del again


def test_fake_mem_pool_blocks_come_from_its_own_segments_and_are_reused_there():
    allocator = memory._Allocator(fake_cupy())
    private = memory.PrivatePools()
    serving = allocator.serve_from(0, private)
    a = allocator.malloc(4 * MiB)
    a_ptr = a.ptr
    del a                                                    # back to the pool's cache
    b = allocator.malloc(4 * MiB)
    assert b.ptr == a_ptr                                    # reused inside the pool
    allocator.stop_serving_from(0, serving)
    c = allocator.malloc(4 * MiB)                            # outside: not the pool's block
    assert c.ptr != a_ptr
    (segment,) = allocator.pool_snapshot([private])
    assert segment["address"] == a_ptr and segment["allocated_size"] == 4 * MiB
    assert stat(allocator.state(0).nested(), "allocated_bytes")[0] == 8 * MiB    # counted as the device's
    del b
    allocator.empty_cache()                                  # the pool keeps its cache while it lives
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 8 * MiB
    del c, private
    gc.collect()


def test_fake_raw_alloc_and_delete_round_trip():
    allocator = memory._Allocator(fake_cupy())
    address = allocator.raw_alloc(1000)
    assert stat(allocator.state(0).nested(), "allocated_bytes")[0] == 1024
    allocator.raw_delete(address)
    assert stat(allocator.state(0).nested(), "allocated_bytes")[0] == 0
    with pytest.raises(RuntimeError, match=f"invalid device pointer: {address:#x}"):
        allocator.raw_delete(address)
    allocator.raw_delete(0)
    assert allocator.raw_alloc(0) == 0


def test_fake_disabled_caching_gives_each_freed_block_back(memory_allocation_status):
    cupy = capped_fake(capacity=64 * MiB)
    allocator = memory._Allocator(cupy)
    allocator.set_caching(False)
    a = allocator.malloc(2 * MiB)
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 2 * MiB and cupy.cuda.runtime.used == 2 * MiB
    del a
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 0 and cupy.cuda.runtime.used == 0
    with pytest.raises(memory.OutOfMemoryError):
        allocator.malloc(128 * MiB)
    allocator.set_caching(True)
    b = allocator.malloc(2 * MiB)
    del b
    assert stat(allocator.state(0).nested(), "reserved_bytes")[0] == 2 * MiB    # cached again


# ----- on CUDA ------------------------------------------------------------------------------------------------

@pytest.fixture
def quiet(cuda_device):
    memory.install()
    _backend.require_cupy()
    gc.collect()
    memory.empty_cache()
    yield cuda_device
    memory.empty_cache()


def test_fraction_cap_raises_past_it_and_not_below(quiet):
    index = quiet.index
    total = memory.mem_get_info(index)[1]
    # A cap 64 MiB above what this process reserves: the test holds little real memory, beside other test processes
    fraction = (memory.memory_reserved(index) + 64 * MiB) / total
    try:
        agnostic.cuda.set_per_process_memory_fraction(fraction, index)
        assert agnostic.cuda.get_per_process_memory_fraction(index) == fraction
        room = int(fraction * total) - memory.memory_reserved(index)
        kept = agnostic.empty(room // 2, dtype=agnostic.uint8, device=quiet)      # below the cap
        with pytest.raises(agnostic.cuda.OutOfMemoryError, match="allowed; "):
            agnostic.empty(room, dtype=agnostic.uint8, device=quiet)
        del kept
    finally:
        agnostic.cuda.set_per_process_memory_fraction(1.0, index)


def test_mem_pool_memory_is_reused_by_the_next_allocation_in_the_pool(quiet):
    pool = agnostic.cuda.MemPool()
    with agnostic.cuda.use_mem_pool(pool, quiet):
        assert pool.use_count() == 2
        x = agnostic.empty(MiB, dtype=agnostic.uint8, device=quiet)
        address = x.data_ptr()
        del x
        y = agnostic.empty(MiB, dtype=agnostic.uint8, device=quiet)
        assert y.data_ptr() == address
    assert pool.use_count() == 1
    z = agnostic.empty(MiB, dtype=agnostic.uint8, device=quiet)
    assert z.data_ptr() != address
    assert [segment["address"] for segment in pool.snapshot()] == [address]


def test_caching_allocator_alloc_and_delete_change_memory_allocated(quiet):
    before = agnostic.cuda.memory_allocated(quiet)
    address = agnostic.cuda.caching_allocator_alloc(1000, quiet)
    assert address != 0 and agnostic.cuda.memory_allocated(quiet) == before + 1024
    agnostic.cuda.caching_allocator_delete(address)
    assert agnostic.cuda.memory_allocated(quiet) == before
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        agnostic.cuda.caching_allocator_delete(address)
    stream = agnostic.cuda.Stream(quiet)
    address = agnostic.cuda.caching_allocator_alloc(512, quiet, stream)
    agnostic.cuda.caching_allocator_delete(address)
    with pytest.raises(TypeError, match="stream argument"):
        agnostic.cuda.caching_allocator_alloc(512, quiet, "stream")


def test_caching_disabled_gives_memory_back_at_once(quiet):
    with agnostic.cuda.caching_allocator_disabled():
        reserved = agnostic.cuda.memory_reserved(quiet)
        x = agnostic.empty(4 * MiB, dtype=agnostic.uint8, device=quiet)
        assert agnostic.cuda.memory_reserved(quiet) == reserved + 4 * MiB
        del x
        assert agnostic.cuda.memory_reserved(quiet) == reserved


def test_pinned_memory_is_counted_in_host_stats(quiet):
    gc.collect()
    pinned.free_cached_blocks()
    agnostic.cuda.reset_accumulated_host_memory_stats()
    before = agnostic.cuda.host_memory_stats()
    pinned_tensor = agnostic.ones(1000).pin_memory()                       # 4,000 bytes: a 4 KiB block
    assert pinned_tensor.is_pinned()
    stats = agnostic.cuda.host_memory_stats()
    assert stats["active_requests.current"] == before["active_requests.current"] + 1
    assert stats["active_bytes.current"] == before["active_bytes.current"] + 4096
    assert (stats["active_bytes.allocated"], stats["num_host_alloc"], stats["allocated_bytes.allocated"]) == (
        4096, 1, 4096)
    del pinned_tensor
    gc.collect()
    stats = agnostic.cuda.host_memory_stats()
    assert (stats["active_requests.freed"], stats["active_bytes.current"]) == (1, before["active_bytes.current"])
    assert stats["allocated_bytes.current"] == before["allocated_bytes.current"] + 4096     # cached by the pool
    pinned.free_cached_blocks()
    stats = agnostic.cuda.host_memory_stats()
    assert stats["num_host_free"] == 1 and stats["allocated_bytes.current"] == before["allocated_bytes.current"]


def test_current_solver_handle_is_cupys(quiet):
    with agnostic.cuda.device(quiet.index):
        assert agnostic.cuda.current_solver_handle() == _backend.require_cupy().cuda.device.get_cusolver_handle() != 0
