"""The rest of torch.cuda's memory API over agnostic's caching allocator (``memory``): a per-process cap, memory pools,
raw allocations, pinned host memory statistics, pluggable allocators, and the legacy CUDA storage classes."""

import contextlib
import ctypes
import itertools

from .. import _backend, _dtypes
from .._backends import pinned
from .._device import Device
from ..storage import legacy_storage_class
from . import memory
from ._devices import _index, is_initialized

__all__ = [
    "BFloat16Storage", "BoolStorage", "ByteStorage", "CUDAPluggableAllocator", "CharStorage", "ComplexDoubleStorage",
    "ComplexFloatStorage", "DeferredCudaCallError", "DoubleStorage", "FloatStorage", "HalfStorage", "IntStorage",
    "LongStorage", "MemPool", "ShortStorage", "caching_allocator_alloc", "caching_allocator_delete",
    "caching_allocator_disabled", "caching_allocator_enable", "change_current_allocator", "cudaStatus",
    "current_solver_handle", "get_allocator_backend", "get_per_process_memory_fraction", "has_half", "has_magma",
    "host_memory_stats", "host_memory_stats_as_nested_dict", "reset_accumulated_host_memory_stats",
    "reset_peak_host_memory_stats", "set_per_process_memory_fraction", "use_mem_pool",
]

has_half = True  # float16 works on every CUDA device (torch.cuda.has_half)
has_magma = False  # agnostic's linear algebra is cuSOLVER's, through CuPy; no MAGMA (torch.cuda.has_magma)


class cudaStatus:
    """The CUDA status codes ``torch.cuda.cudaStatus`` names.

        >>> agnostic.cuda.cudaStatus.SUCCESS, agnostic.cuda.cudaStatus.ERROR_NOT_READY
        (0, 34)
    """

    SUCCESS: int = 0
    ERROR_NOT_READY: int = 34


class DeferredCudaCallError(Exception):
    """A call queued to run when CUDA initializes failed (``torch.cuda.DeferredCudaCallError``).

        >>> issubclass(agnostic.cuda.DeferredCudaCallError, Exception)
        True
    """


def get_allocator_backend():
    """The CUDA allocator in use: always ``"native"``, agnostic's caching allocator (PyTorch also knows
    ``"cudaMallocAsync"``, which agnostic does not offer).

        >>> agnostic.cuda.get_allocator_backend()
        'native'
    """
    return "native"


def current_solver_handle():
    """The current device's cuSOLVER dense handle (``cusolverDnHandle_t``) as an int, the one CuPy uses.

        >>> agnostic.cuda.current_solver_handle() != 0  # doctest: +SKIP
        True
    """
    memory._require()
    return _backend.require_cupy().cuda.device.get_cusolver_handle()


# ----- the per-process cap ------------------------------------------------------------------------------------

def set_per_process_memory_fraction(fraction, device=None):
    """Cap what agnostic's allocator may reserve on ``device`` (None: the current one) at ``fraction`` of its total
    memory (a float from 0 to 1). An allocation that would pass the cap frees the cached blocks and tries again,
    then raises ``agnostic.cuda.OutOfMemoryError``, as when the device is full.

        >>> agnostic.cuda.set_per_process_memory_fraction(0.5)  # doctest: +SKIP
        >>> agnostic.cuda.get_per_process_memory_fraction()  # doctest: +SKIP
        0.5
    """
    allocator = memory._require()
    index = _index(device)
    if not isinstance(fraction, float):
        raise TypeError("Invalid type for fraction argument, must be `float`")
    if fraction < 0 or fraction > 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    total = memory.mem_get_info(index)[1]
    allocator.fractions[index] = fraction
    allocator.limits[index] = int(fraction * total)


def get_per_process_memory_fraction(device=None):
    """The fraction of ``device``'s memory agnostic's allocator may reserve (1.0 unless
    ``set_per_process_memory_fraction`` said otherwise).

        >>> agnostic.cuda.get_per_process_memory_fraction()  # doctest: +SKIP
        1.0
    """
    allocator = memory._require()
    return allocator.fractions.get(_index(device), 1.0)


# ----- raw allocations and caching ----------------------------------------------------------------------------

def _cupy_stream(cupy, stream, index):
    """The CuPy stream that ``caching_allocator_alloc``'s ``stream`` names (None: the device's current one)."""
    if stream is None:
        with cupy.cuda.Device(index):
            return cupy.cuda.get_current_stream()
    if hasattr(stream, "cupy_stream"):
        return stream.cupy_stream
    if not isinstance(stream, int) or isinstance(stream, bool):
        raise TypeError("Invalid type for stream argument, must be `agnostic.cuda.Stream` or `int` representing a "
                        "pointer to an existing stream")
    return cupy.cuda.ExternalStream(stream, index)


def caching_allocator_alloc(size, device=None, stream=None):
    """Allocate ``size`` bytes with agnostic's caching allocator on ``device`` and ``stream`` (an
    ``agnostic.cuda.Stream`` or a ``cudaStream_t`` as an int; None: the current ones) and return the address as an
    int, for other libraries; counted in ``memory_allocated`` until ``caching_allocator_delete(address)``.

        >>> address = agnostic.cuda.caching_allocator_alloc(1024)  # doctest: +SKIP
        >>> agnostic.cuda.caching_allocator_delete(address)  # doctest: +SKIP
    """
    allocator = memory._require()
    cupy = _backend.require_cupy()
    index = _index(device)
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError(f"caching_allocator_alloc(): size must be a non-negative int (bytes), got {size!r}")
    with cupy.cuda.Device(index), _cupy_stream(cupy, stream, index):
        return allocator.raw_alloc(size)


def caching_allocator_delete(mem_ptr):
    """Free memory that ``caching_allocator_alloc`` returned (0 is ignored); any other address raises
    ``RuntimeError: invalid device pointer``.

        >>> agnostic.cuda.caching_allocator_delete(agnostic.cuda.caching_allocator_alloc(64))  # doctest: +SKIP
    """
    memory._require().raw_delete(int(mem_ptr))


def caching_allocator_enable(value=True):
    """Turn agnostic's caching of freed blocks on (the default) or off: while off, each block has a segment of its
    own from ``cudaMalloc``, given back with ``cudaFree`` as soon as the block is freed. As PyTorch, it does nothing
    before CUDA has started.

        >>> agnostic.cuda.caching_allocator_enable(True)
    """
    if is_initialized():
        memory._require().set_caching(value)


@contextlib.contextmanager
def caching_allocator_disabled():
    """A context in which agnostic's allocator caches nothing (see ``caching_allocator_enable``).

        >>> with agnostic.cuda.caching_allocator_disabled():
        ...     pass
    """
    before = memory._require().caching if is_initialized() else True
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(before)


# ----- memory pools -------------------------------------------------------------------------------------------

_pool_ids = itertools.count(1)


class MemPool:
    """A memory pool of agnostic's caching allocator (``torch.cuda.MemPool``): blocks allocated inside
    ``use_mem_pool(pool)`` come from segments of the pool's own, and go back to it when freed, so they are reused
    only by later allocations in the same pool. The pool's cached segments are given back to the driver when the
    pool is garbage. ``allocator`` (a ``CUDAPluggableAllocator``), ``use_on_oom`` and ``no_split`` are not
    supported: only their defaults are accepted.

        >>> pool = agnostic.cuda.MemPool()
        >>> pool.id[0], pool.use_count()
        (0, 1)
    """

    def __init__(self, allocator=None, use_on_oom=False, no_split=False):
        if allocator is not None or use_on_oom or no_split:
            raise NotImplementedError("agnostic.cuda.MemPool supports only its defaults: allocator=None, "
                                      "use_on_oom=False, no_split=False")
        self._id = (0, next(_pool_ids))  # PyTorch numbers user pools (0, n) and graph pools (n, 0)
        self._pools = {}  # device index -> memory.PrivatePools
        self._uses = 0

    @property
    def id(self):
        """The pool's id, a tuple of two ints.

            >>> agnostic.cuda.MemPool().id[0]
            0
        """
        return self._id

    @property
    def allocator(self):
        """The pool's allocator: None, agnostic's own.

            >>> agnostic.cuda.MemPool().allocator is None
            True
        """
        return None

    def use_count(self):
        """How many users hold the pool: the pool itself, plus each ``use_mem_pool`` context open on it.

            >>> agnostic.cuda.MemPool().use_count()
            1
        """
        return 1 + self._uses

    def snapshot(self, include_traces=True):
        """``memory_snapshot()``'s records of this pool's segments only, on every device.

            >>> agnostic.cuda.MemPool().snapshot()
            []
        """
        if not self._pools:
            return []
        return memory._require().pool_snapshot(list(self._pools.values()))

    def __repr__(self):
        return f"<agnostic.cuda.MemPool id={self._id}>"


@contextlib.contextmanager
def use_mem_pool(pool, device=None):
    """A context in which allocations on ``device`` (None: the current one) come from ``pool``, a ``MemPool``.
    Unlike PyTorch, which routes only the current thread's allocations, every thread's allocations on that device
    go to the pool while the context is open.

        >>> pool = agnostic.cuda.MemPool()  # doctest: +SKIP
        >>> with agnostic.cuda.use_mem_pool(pool):  # doctest: +SKIP
        ...     x = agnostic.empty(1024, device="cuda")
        >>> len(pool.snapshot())  # doctest: +SKIP
        1
    """
    if not isinstance(pool, MemPool):
        raise TypeError(f"use_mem_pool() expects an agnostic.cuda.MemPool, got {type(pool).__name__}")
    allocator = memory._require()
    cupy = _backend.require_cupy()
    index = _index(device)
    private = pool._pools.get(index)
    if private is None:
        private = pool._pools[index] = memory.PrivatePools()
        private.device = index
    with cupy.cuda.Device(index):
        serving = allocator.serve_from(index, private)
    pool._uses += 1
    try:
        yield
    finally:
        pool._uses -= 1
        allocator.stop_serving_from(index, serving)


# ----- pinned host memory -------------------------------------------------------------------------------------

def host_memory_stats_as_nested_dict():
    """``host_memory_stats()`` as nested dicts (``{}`` before CUDA has started, as PyTorch).

        >>> stats = agnostic.cuda.host_memory_stats_as_nested_dict()
        >>> stats == {} or stats["active_bytes"]["current"] >= 0
        True
    """
    if not is_initialized():
        return {}
    return pinned.stats.nested()


def host_memory_stats():
    """Statistics of agnostic's pinned (page-locked) host memory, with PyTorch's flat dotted keys, sorted:
    ``allocations`` and ``allocated_bytes`` (blocks the pool holds from ``cudaHostAlloc``, in use or cached),
    ``active_requests`` and ``active_bytes`` (blocks handed out), each ``.current``, ``.peak``, ``.allocated``,
    ``.freed``; ``num_host_alloc``, ``num_host_free``; ``host_alloc_time`` and ``host_free_time`` (``.total``,
    ``.max``, ``.min``, ``.count``, ``.avg``, in microseconds). Blocks are rounded up to 512 bytes (PyTorch: to a
    power of two). Empty before CUDA has started.

        >>> x = agnostic.ones(1000).pin_memory()  # doctest: +SKIP
        >>> agnostic.cuda.host_memory_stats()["active_bytes.current"] >= 4000  # doctest: +SKIP
        True
    """
    return memory._flatten(host_memory_stats_as_nested_dict())


def reset_accumulated_host_memory_stats():
    """Restart the ``allocated``/``freed`` totals, the alloc/free counts and timings of ``host_memory_stats``.

        >>> agnostic.cuda.reset_accumulated_host_memory_stats()
    """
    pinned.stats.reset_accumulated()


def reset_peak_host_memory_stats():
    """Make every ``peak`` of ``host_memory_stats`` its current value.

        >>> agnostic.cuda.reset_peak_host_memory_stats()
    """
    pinned.stats.reset_peaks()


# ----- pluggable allocators -----------------------------------------------------------------------------------

class CUDAPluggableAllocator:
    """A CUDA allocator loaded from a shared library (``torch.cuda.CUDAPluggableAllocator``): ``alloc_fn_name`` is
    ``void* alloc(ssize_t size, int device, cudaStream_t stream)`` and ``free_fn_name`` is
    ``void free(void* ptr, ssize_t size, int device, cudaStream_t stream)``. Make it CuPy's allocator with
    ``change_current_allocator`` before agnostic has allocated anything. ``memory_stats`` and friends do not see
    what it allocates (PyTorch's do not either).

        >>> agnostic.cuda.CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free")  # doctest: +SKIP
        <agnostic.cuda.CUDAPluggableAllocator from alloc.so>
    """

    def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
        library = ctypes.CDLL(path_to_so_file)
        self._alloc = getattr(library, alloc_fn_name)
        self._alloc.argtypes = (ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
        self._alloc.restype = ctypes.c_void_p
        self._free = getattr(library, free_fn_name)
        self._free.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
        self._free.restype = None
        self._library, self._path = library, path_to_so_file

    def allocator(self):
        """Itself (PyTorch returns the C++ allocator object here).

            >>> agnostic.cuda.CUDAPluggableAllocator.allocator.__name__
            'allocator'
        """
        return self

    def _malloc(self, size):
        """CuPy's allocator interface: ``size`` bytes on the current device and stream from the library."""
        cupy = _backend.require_cupy()
        if not size:
            return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(0, 0, None, cupy.cuda.runtime.getDevice()), 0)
        index = cupy.cuda.runtime.getDevice()
        stream = cupy.cuda.get_current_stream().ptr
        address = self._alloc(size, index, stream)
        if not address:
            raise memory.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {memory._format_size(size)} with "
                                          f"the allocator of {self._path} on GPU {index}, which returned NULL.")
        owner = _PluggedBlock(self._free, address, size, index, stream)
        return cupy.cuda.MemoryPointer(cupy.cuda.UnownedMemory(address, size, owner, index), 0)

    def __repr__(self):
        return f"<agnostic.cuda.CUDAPluggableAllocator from {self._path}>"


class _PluggedBlock:
    """Owner of memory from a pluggable allocator: its finalizer calls the library's free function."""

    __slots__ = ("free", "address", "size", "device", "stream")

    def __init__(self, free, address, size, device, stream):
        self.free, self.address, self.size, self.device, self.stream = free, address, size, device, stream

    def __del__(self):
        self.free(self.address, self.size, self.device, self.stream)


def change_current_allocator(allocator):
    """Make ``allocator`` (a ``CUDAPluggableAllocator``) the allocator of every CUDA array from now on. As PyTorch,
    refused once agnostic's allocator has allocated memory.

        >>> plugged = agnostic.cuda.CUDAPluggableAllocator("alloc.so", "my_malloc", "my_free")  # doctest: +SKIP
        >>> agnostic.cuda.change_current_allocator(plugged)  # doctest: +SKIP
    """
    if not isinstance(allocator, CUDAPluggableAllocator):
        raise TypeError(f"change_current_allocator() expects a CUDAPluggableAllocator, got {type(allocator).__name__}")
    current = memory._require()
    if any(device is not None for device in current.devices):
        raise RuntimeError("Can't swap an already initialized allocator")
    _backend.require_cupy().cuda.set_allocator(allocator._malloc)


# ----- legacy storages ----------------------------------------------------------------------------------------

_CUDA = Device("cuda")
FloatStorage = legacy_storage_class(_dtypes.float32, _CUDA)
DoubleStorage = legacy_storage_class(_dtypes.float64, _CUDA)
HalfStorage = legacy_storage_class(_dtypes.float16, _CUDA)
BFloat16Storage = legacy_storage_class(_dtypes.bfloat16, _CUDA)
LongStorage = legacy_storage_class(_dtypes.int64, _CUDA)
IntStorage = legacy_storage_class(_dtypes.int32, _CUDA)
ShortStorage = legacy_storage_class(_dtypes.int16, _CUDA)
CharStorage = legacy_storage_class(_dtypes.int8, _CUDA)
ByteStorage = legacy_storage_class(_dtypes.uint8, _CUDA)
BoolStorage = legacy_storage_class(_dtypes.bool, _CUDA)
ComplexFloatStorage = legacy_storage_class(_dtypes.complex64, _CUDA)
ComplexDoubleStorage = legacy_storage_class(_dtypes.complex128, _CUDA)
