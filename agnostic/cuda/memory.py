"""CUDA memory management as ``torch.cuda`` does it: PyTorch's caching-allocator statistics over CuPy's memory pools.

``install()`` makes agnostic's allocator CuPy's allocator once CUDA starts. Each device gets two CuPy
``SingleDeviceMemoryPool`` s, PyTorch's small pool (requests up to 1 MiB) and large pool, whose ``cudaMalloc`` goes
through agnostic so every segment is counted; every block handed to CuPy is a CuPy ``UnownedMemory`` of agnostic's
own class, which holds the pool's block and whose finalizer counts the free. CuPy still caches and reuses freed
blocks, and ``memory_stats`` reports PyTorch's figures exactly.
Importing this module never imports CuPy.

Every array CuPy creates passes through the allocator, so its work per block is one entry in the device's log: the
requested size, negated when the block is freed (parking a block for ``record_stream`` and releasing it are entries
too). The counters and peaks are brought up to date from the log, with NumPy, when they are read or the log grows
long: this costs a third of counting at each event (about 0.2 us instead of 0.8 per array).
"""

import array
import bisect
import collections
import gc
import threading
import warnings

import numpy

from .. import _backend
from ._devices import _index

_SMALL_SIZE = 1 << 20  # PyTorch's kSmallSize: requests up to 1 MiB are served by the small pool
_LOG_LIMIT = 1 << 16  # log entries kept before the counters are brought up to date anyway
_PARKED = 1 << 56  # a log entry for parking a freed block for its recorded streams (negated: releasing it)
_FAMILIES = (
    "allocation", "segment", "active", "allocated_bytes", "reserved_bytes", "active_bytes", "requested_bytes",
)
_POOL_KEYS = ("all", "large_pool", "small_pool")
_ERROR_MEMORY_ALLOCATION = 2  # cudaErrorMemoryAllocation, which CuPy's pools retry on (no Python name in CuPy 14.2)


class OutOfMemoryError(RuntimeError):
    """CUDA out of memory (``torch.cuda.OutOfMemoryError``): even after freeing the cache the request did not fit.

    Attributes: ``device``, ``requested`` (bytes, rounded as allocated), ``free`` and ``total`` (``cudaMemGetInfo``),
    ``allocated`` and ``reserved`` (by agnostic on that device).

        >>> issubclass(agnostic.cuda.OutOfMemoryError, RuntimeError)
        True
        >>> try:  # doctest: +SKIP
        ...     agnostic.empty(2 ** 50, dtype=agnostic.uint8, device="cuda")
        ... except agnostic.cuda.OutOfMemoryError as error:
        ...     print(error.requested)
        1125899906842624
    """


def _round(size):
    """Bytes a request occupies: CuPy, like cudaMalloc and PyTorch, rounds up to 512-byte units."""
    return (size + 511) & -512


class _Stats:
    """Counters of one pool of a device (or, with ``all`` None, of the whole device): blocks counted from the
    device's log (``absorb``), segments as they come and go. Active blocks are the blocks in use plus the freed ones
    parked for ``record_stream`` (``pn``, ``pb``)."""

    _COUNTERS = (
        "n", "n_peak", "n_total", "b", "b_peak", "b_total", "r", "r_peak", "r_total",  # blocks, bytes, requested
        "pn", "pb", "an_peak", "ab_peak",  # parked blocks and bytes; peaks of the active ones (used + parked)
        "sn", "sn_peak", "sn_total", "sb", "sb_peak", "sb_total",  # segments (cudaMalloc), reserved bytes
    )
    __slots__ = _COUNTERS + ("base", "all", "pool", "kind", "device", "allocator", "segments", "log")

    def __init__(self, kind, device, all=None, allocator=None):
        for name in self._COUNTERS:
            setattr(self, name, 0)
        self.kind, self.device, self.all, self.allocator = kind, device, all, allocator
        self.pool = self.log = None  # set by the _DeviceState
        self.segments = {}  # segment address -> bytes
        self.reset_accumulated()

    def absorb(self, entries):
        """Count this pool's part of the device's log (an int64 array, in order; see ``_DeviceState.log``)."""
        if not entries.size:
            return
        signs = numpy.sign(entries)
        magnitudes = numpy.abs(entries)
        requested = magnitudes & (_PARKED - 1)
        rounded = (requested + 511) & -512
        blocks = numpy.where(magnitudes >= _PARKED, 0, signs)  # parking a freed block leaves the blocks in use
        steps = numpy.stack((blocks, blocks * rounded, blocks * requested, signs, signs * rounded))
        start = numpy.array([[self.n], [self.b], [self.r], [self.n + self.pn], [self.b + self.pb]])
        running = start + numpy.cumsum(steps, axis=1)
        added = numpy.where(steps > 0, steps, 0).sum(axis=1).tolist()
        self.n, self.b, self.r, active_blocks, active_bytes = running[:, -1].tolist()
        self.pn, self.pb = active_blocks - self.n, active_bytes - self.b
        peaks = running.max(axis=1).tolist()
        self.n_peak, self.b_peak, self.r_peak, self.an_peak, self.ab_peak = map(
            max, (self.n_peak, self.b_peak, self.r_peak, self.an_peak, self.ab_peak), peaks)
        self.n_total += added[0]
        self.b_total += added[1]
        self.r_total += added[2]

    def add_segment(self, size):
        """Count a segment the pool got from cudaMalloc."""
        self.sn += 1
        self.sn_total += 1
        self.sb += size
        self.sb_total += size
        if self.sn > self.sn_peak:
            self.sn_peak = self.sn
        if self.sb > self.sb_peak:
            self.sb_peak = self.sb

    def remove_segment(self, size):
        """Count a segment given back with cudaFree."""
        self.sn -= 1
        self.sb -= size

    def currents(self):
        """Current value of each family, in ``_FAMILIES`` order."""
        return (self.n, self.sn, self.n + self.pn, self.b, self.sb, self.b + self.pb, self.r)

    def figures(self):
        """``{family: {"current", "peak", "allocated", "freed"}}`` (PyTorch's Stat; freed follows from the rest)."""
        peaks = (self.n_peak, self.sn_peak, self.an_peak, self.b_peak, self.sb_peak, self.ab_peak, self.r_peak)
        totals = (self.n_total, self.sn_total, self.n_total, self.b_total, self.sb_total, self.b_total, self.r_total)
        return {family: {"current": current, "peak": peak, "allocated": total,
                         "freed": total - current + self.base[family]}
                for family, current, peak, total in zip(_FAMILIES, self.currents(), peaks, totals)}

    def reset_peaks(self):
        """Peaks become the current values."""
        self.n_peak, self.b_peak, self.r_peak = self.n, self.b, self.r
        self.an_peak, self.ab_peak = self.n + self.pn, self.b + self.pb
        self.sn_peak, self.sb_peak = self.sn, self.sb

    def reset_accumulated(self):
        """Allocated and freed totals restart from zero."""
        self.n_total = self.b_total = self.r_total = self.sn_total = self.sb_total = 0
        self.base = dict(zip(_FAMILIES, self.currents()))


class _DeviceState:
    """One device's pools and counters, and the log of its allocations and frees not counted yet."""

    __slots__ = ("index", "all", "small", "large", "serving_small", "serving_large", "retries", "ooms", "log",
                 "_counting")

    def __init__(self, index, allocator=None):
        self.index = index
        self.all = _Stats("all", index)
        self.small = _Stats("small", index, self.all, allocator)
        self.large = _Stats("large", index, self.all, allocator)
        # The pools new blocks come from: the device's own, or a CUDA graph's private ones while it captures.
        self.serving_small, self.serving_large = self.small, self.large
        self.retries = self.ooms = 0
        # Requested sizes, in order: positive for a block handed out, negative for one given back; plus _PARKED for
        # a freed block parked by record_stream (negative: released to the pool). Only appended to in between.
        self.log = array.array("q")
        self._counting = threading.Lock()
        for stats in (self.all, self.small, self.large):
            stats.log = self.log

    def count(self):
        """Bring the counters up to date with the log (appends from other threads meanwhile stay logged)."""
        with self._counting:
            logged = len(self.log)
            if not logged:
                return
            sizes = numpy.frombuffer(self.log[:logged], numpy.int64)
            del self.log[:logged]
            small = numpy.abs(sizes) & (_PARKED - 1) <= _SMALL_SIZE
            self.small.absorb(sizes[small])
            self.large.absorb(sizes[~small])
            self.all.absorb(sizes)

    def nested(self):
        """PyTorch's nested statistics dict."""
        self.count()
        by_pool = {"all": self.all.figures(), "large_pool": self.large.figures(), "small_pool": self.small.figures()}
        result = {family: {pool: by_pool[pool][family] for pool in _POOL_KEYS} for family in _FAMILIES}
        segments = result["segment"]["all"]
        zero = {"current": 0, "peak": 0, "allocated": 0, "freed": 0}
        result.update(
            num_alloc_retries=self.retries, num_ooms=self.ooms, num_sync_all_streams=0,
            num_device_alloc=segments["allocated"], num_device_free=segments["freed"], max_split_size=-1,
            oversize_allocations=dict(zero), oversize_segments=dict(zero),
        )
        return result

    def reset_peaks(self):
        """Every peak becomes its current value."""
        self.count()
        for stats in (self.all, self.small, self.large):
            stats.reset_peaks()

    def reset_accumulated(self):
        """Totals, retries and OOMs restart from zero."""
        self.count()
        for stats in (self.all, self.small, self.large):
            stats.reset_accumulated()
        self.retries = self.ooms = 0


class _AllocatedBlock:
    """What every block agnostic's allocators hand out is (``isinstance``), whichever CuPy module made its class."""

    __slots__ = ()
    stream_class: type  # the block's class once ``record_stream`` has marked it


def _block_classes(unowned_memory):
    """The memory of the blocks handed to CuPy: CuPy's ``UnownedMemory`` (the block's address range, for
    CuPy's ``MemoryPointer``) holding the pool's block, with a finalizer that logs the free. One object per array,
    since this runs for every array CuPy creates; made per allocator for the CuPy it is given (tests give a fake)."""

    class Block(unowned_memory, _AllocatedBlock):
        """A block agnostic handed out (``inner``: the pool's, kept alive until this is freed)."""

        __slots__ = ("inner", "stats", "requested", "streams")

        def __del__(self):
            self.stats.log.append(-self.requested)

    class StreamBlock(Block):
        """A block used on other streams (``record_stream``): freed, it waits for them before the pool reuses it."""

        __slots__ = ()

        def __del__(self):
            self.stats.log.append(-self.requested)
            try:
                self.stats.allocator.park(self)
            except Exception:  # no event can be recorded (CUDA shut down or broken): back to the pool now
                pass

    Block.stream_class = StreamBlock
    return Block, StreamBlock


class _Pending:
    """A freed block waiting for the events recorded on its streams."""

    __slots__ = ("events", "inner", "stats", "size", "requested", "ptr")


class _Segment:
    """Owner of one cudaMalloc'ed segment lent to a CuPy pool; its finalizer counts the cudaFree."""

    __slots__ = ("memory", "stats", "size", "ptr", "owner")

    def __del__(self):
        stats = self.stats
        stats.remove_segment(self.size)
        stats.all.remove_segment(self.size)
        del stats.segments[self.ptr]
        if self.owner is not None:
            self.owner.segments.pop(self.ptr, None)


class _Allocator:
    """CuPy allocator over two CuPy pools per device, keeping PyTorch's memory statistics."""

    def __init__(self, cupy):
        cuda = cupy.cuda
        memory = cuda.memory
        self._Pool = memory.SingleDeviceMemoryPool
        self._Memory = memory.Memory
        self._Unowned = memory.UnownedMemory
        self._Pointer = memory.MemoryPointer
        self._PoolOutOfMemory = memory.OutOfMemoryError
        self.Block, self.StreamBlock = _block_classes(memory.UnownedMemory)
        self._device_id = cuda.device.get_device_id
        self._Device = cuda.Device
        self._Event = cuda.Event
        self._runtime = cuda.runtime
        self.devices = [None] * cuda.runtime.getDeviceCount()
        self.pending = []
        self.caching = True  # caching_allocator_enable
        self.direct = {}  # device index -> its (small, large) pools that cache nothing, made when caching is off
        self.fractions = {}  # device index -> set_per_process_memory_fraction's fraction
        self.limits = {}  # device index -> bytes its pools may reserve (set_per_process_memory_fraction)
        self.raw = {}  # address -> block handed out by caching_allocator_alloc, kept until caching_allocator_delete
        self.malloc = self._make_malloc()

    def _make_malloc(self):
        """The allocator function handed to CuPy (a closure: this runs for every array CuPy creates)."""
        devices, pending, device_id, open_device = self.devices, self.pending, self._device_id, self._open
        pointer, unowned, pool_out_of_memory = self._Pointer, self._Unowned, self._PoolOutOfMemory
        release_completed, retry, block_memory, log_limit = self.release_completed, self._retry, self.Block, _LOG_LIMIT

        def malloc(size):
            """Allocate ``size`` bytes on the current device and stream (CuPy's allocator interface)."""
            if pending:
                release_completed()
            if not size:  # CuPy's pools hand out a null pointer here; PyTorch counts nothing either
                return pointer(unowned(0, 0, None, device_id()), 0)
            index = device_id()
            device = devices[index] or open_device(index)
            pool = device.serving_small if size <= _SMALL_SIZE else device.serving_large
            try:
                inner = pool.pool.malloc(size)
            except pool_out_of_memory:
                inner = retry(device, pool, size)
            block = block_memory(inner.ptr, (size + 511) & -512, None, index)
            block.inner, block.stats, block.requested = inner, pool, size
            log = device.log
            log.append(size)
            if len(log) >= log_limit:
                device.count()
            return pointer(block, 0)

        return malloc

    def _open(self, index):
        """Create the current device's pools on its first allocation."""
        device = _DeviceState(index, self)
        for stats in (device.small, device.large):
            stats.pool = self._Pool(lambda size, stats=stats: self._segment(stats, size))
        self.devices[index] = device
        if not self.caching:
            device.serving_small, device.serving_large = self._home(device)
        return device

    def _home(self, device):
        """The pools that serve ``device`` outside graph captures and memory pools: its own, or while caching is
        off (``caching_allocator_enable(False)``) pools that give each block its own segment."""
        if self.caching:
            return device.small, device.large
        if device.index not in self.direct:
            self.direct[device.index] = tuple(self._direct_stats(device, stats) for stats in (device.small,
                                                                                               device.large))
        return self.direct[device.index]

    def _direct_stats(self, device, stats):
        direct = _Stats(stats.kind, device.index, device.all, self)
        direct.log = device.log
        direct.pool = _DirectPool(self, stats)
        return direct

    def set_caching(self, enabled):
        """Cache freed blocks for reuse (PyTorch's default), or give each one back to the driver when it is freed."""
        self.caching = bool(enabled)
        for device in self.devices:
            if device is not None and (device.serving_small, device.serving_large) in (
                    (device.small, device.large), self.direct.get(device.index)):
                device.serving_small, device.serving_large = self._home(device)
        if not self.caching:
            self.empty_cache()

    def serve_from(self, index, private):
        """Serve device ``index``'s new blocks from ``private`` (a ``PrivatePools``, made on the current device,
        which must be ``index``); returns the pools that served them, for ``stop_serving_from``."""
        device = self.devices[index] or self._open(index)
        if private.small is None:
            private.small, private.large = (self._private_stats(device, stats)
                                            for stats in (device.small, device.large))
        serving = device.serving_small, device.serving_large
        device.serving_small, device.serving_large = private.small, private.large
        return serving

    def stop_serving_from(self, index, serving):
        """Serve device ``index``'s new blocks from ``serving`` again (what ``serve_from`` returned)."""
        device = self.devices[index]
        device.serving_small, device.serving_large = serving

    def begin_capture(self, index, private):
        """Serve device ``index``'s new blocks from ``private`` (a ``PrivatePools``) while a CUDA graph captures, so
        that memory the graph uses is never handed to work outside it, even once freed (PyTorch's graph pools)."""
        self.serve_from(index, private)

    def end_capture(self, index):
        """Serve device ``index``'s new blocks from its own pools again."""
        device = self.devices[index]
        device.serving_small, device.serving_large = self._home(device)

    def _private_stats(self, device, stats):
        """A CuPy pool of its own, counted in ``stats``' figures: its segments are ``stats``' segments (listed in its
        own ``segments`` too, for ``MemPool.snapshot``) and its blocks' frees go to the device's log."""
        private = _Stats(stats.kind, device.index, device.all, self)
        private.log = device.log
        private.pool = self._Pool(lambda size: self._segment(stats, size, private))
        return private

    def _segment(self, stats, size, owner=None):
        """cudaMalloc a segment for a pool, owned by a counting _Segment (CuPy's pool handles a failure). Past the
        device's ``set_per_process_memory_fraction`` cap it fails as cudaMalloc does, so the pools' retry (free the
        cache, try again) and OutOfMemoryError follow as for a full device."""
        limit = self.limits.get(stats.device)
        if limit is not None and stats.all.sb + size > limit:
            raise self._runtime.CUDARuntimeError(_ERROR_MEMORY_ALLOCATION)
        memory = self._Memory(size)
        segment = _Segment()
        segment.memory, segment.stats, segment.size, segment.ptr = memory, stats, size, memory.ptr
        segment.owner = owner
        if owner is not None:
            owner.segments[memory.ptr] = size
        stats.segments[memory.ptr] = size
        stats.add_segment(size)
        stats.all.add_segment(size)
        return self._Pointer(self._Unowned(memory.ptr, size, segment, memory.device_id), 0)

    def _retry(self, device, stats, size):
        """Out of memory: give every cached block back to the driver, try once more, else raise OutOfMemoryError."""
        device.retries += 1
        self.release_completed(wait=True)
        device.small.pool.free_all_blocks()
        device.large.pool.free_all_blocks()
        try:
            return stats.pool.malloc(size)
        except self._PoolOutOfMemory as again:
            device.ooms += 1
            raise self._out_of_memory(device, _round(size)) from again

    def _out_of_memory(self, device, size):
        """PyTorch's out-of-memory error, with the request, the free memory and agnostic's share."""
        free, total = self._runtime.memGetInfo()
        device.count()
        allocated, reserved = device.all.b, device.all.sb
        limit = self.limits.get(device.index)
        allowed = "" if limit is None else f"{_format_size(limit)} allowed; "
        error = OutOfMemoryError(
            f"CUDA out of memory. Tried to allocate {_format_size(size)}. GPU {device.index} has a total capacity of "
            f"{_format_size(total)} of which {_format_size(free)} is free. {allowed}Of the allocated memory "
            f"{_format_size(allocated)} is allocated by agnostic, and {_format_size(reserved - allocated)} is "
            "reserved by agnostic but unallocated. If reserved but unallocated memory is large, free tensors you no "
            "longer need or split large allocations."
        )
        error.device, error.requested, error.free, error.total = device.index, size, free, total
        error.allocated, error.reserved = allocated, reserved
        return error

    def park(self, block):
        """Keep a freed block from the pool until the work queued now on its recorded streams has completed."""
        events = []
        for stream in block.streams:
            with self._Device(stream.device_id if stream.device_id >= 0 else block.stats.device):
                events.append(stream.record(self._Event(disable_timing=True)))
        entry = _Pending()
        entry.events, entry.inner, entry.stats = events, block.inner, block.stats
        entry.size, entry.requested, entry.ptr = _round(block.requested), block.requested, block.ptr
        self.pending.append(entry)
        block.stats.log.append(_PARKED | block.requested)

    def release_completed(self, wait=False):
        """Return to the pools the parked blocks whose streams have caught up (waiting for all when ``wait``)."""
        for entry in tuple(self.pending):
            if wait:
                for event in entry.events:
                    event.synchronize()
            elif not all(event.done for event in entry.events):
                continue
            try:
                self.pending.remove(entry)
            except ValueError:  # another thread released it meanwhile
                continue
            entry.stats.log.append(-(_PARKED | entry.requested))
            entry.inner = None

    def state(self, index):
        """The counters of device ``index``, up to date (zeros before its first allocation)."""
        device = self.devices[index]
        if device is None:
            return _DeviceState(index)
        device.count()
        return device

    def blocks_in_use(self):
        """The blocks handed out and not freed yet. Snapshots are for debugging, so they are found among the objects
        the garbage collector tracks, rather than by keeping a table that every allocation and free would update.
        Their types are compared, not ``isinstance``: that reads ``__class__``, which a dead weak proxy among them
        (numba keeps some) answers with ReferenceError."""
        block = self.Block
        return [candidate for candidate in gc.get_objects() if issubclass(type(candidate), block)]

    def empty_cache(self):
        """Give every cached, unused block of every device back to the driver."""
        self.release_completed(wait=True)
        for device in self.devices:
            if device is not None:
                with self._Device(device.index):
                    device.small.pool.free_all_blocks()
                    device.large.pool.free_all_blocks()

    def snapshot(self):
        """PyTorch's ``memory_snapshot()``: every segment with the blocks that tile it."""
        # A graph's or a MemPool's private pool's blocks lie in the device's segments: matched by device and kind.
        return self._segment_records(
            [stats for device in self.devices if device is not None for stats in (device.large, device.small)],
            lambda block, stats: block.stats.device == stats.device and block.stats.kind == stats.kind)

    def pool_snapshot(self, private_pools):
        """``memory_snapshot()``'s records of the segments of ``private_pools`` (``PrivatePools``) only."""
        return self._segment_records([stats for private in private_pools for stats in (private.large, private.small)],
                                     lambda block, stats: block.stats is stats)

    def _segment_records(self, pools, holds):
        """The segment records of ``pools`` (``_Stats``), each with the blocks in use that ``holds(block, stats)``
        places in it and its pending frees."""
        in_use = self.blocks_in_use()
        segments = []
        for stats in pools:
            blocks = [(block.ptr, _round(block.requested), block.requested, "active_allocated")
                      for block in in_use if holds(block, stats)]
            blocks += [(entry.ptr, entry.size, entry.requested, "active_pending_free")
                       for entry in self.pending if entry.stats is stats]
            blocks.sort()
            for address, size in sorted(stats.segments.items()):
                segments.append(_segment_record(stats.device, stats.kind, address, size, blocks))
        return segments

    def raw_alloc(self, size):
        """A block of ``size`` bytes on the current device and stream, kept until ``raw_delete`` of its address."""
        pointer = self.malloc(size)
        if pointer.ptr:
            self.raw[pointer.ptr] = pointer
        return pointer.ptr

    def raw_delete(self, address):
        """Free the block ``raw_alloc`` returned at ``address`` (0: nothing, as ``cudaFree(nullptr)``)."""
        if address and self.raw.pop(address, None) is None:
            raise RuntimeError(f"invalid device pointer: {address:#x}")


class _DirectPool:
    """A pool that caches nothing, used while ``caching_allocator_enable(False)``: each block is a segment of its
    own (counted in ``stats``), given back to the driver as soon as the block is freed."""

    __slots__ = ("allocator", "stats")

    def __init__(self, allocator, stats):
        self.allocator, self.stats = allocator, stats

    def malloc(self, size):
        allocator = self.allocator
        try:
            return allocator._segment(self.stats, _round(size))
        except allocator._runtime.CUDARuntimeError as error:
            if error.status != _ERROR_MEMORY_ALLOCATION:
                raise
            raise allocator._PoolOutOfMemory(size, 0) from error

    def free_all_blocks(self, stream=None):
        """Nothing is cached."""


def _segment_record(device, kind, address, size, blocks):
    """One segment of ``memory_snapshot()``; free gaps between its blocks are listed as inactive blocks."""
    start = bisect.bisect_left(blocks, (address,))
    end = address + size
    records, cursor = [], address
    for ptr, rounded, requested, state in blocks[start:]:
        if ptr >= end:
            break
        if ptr > cursor:
            records.append({"address": cursor, "size": ptr - cursor, "requested_size": 0, "state": "inactive"})
        records.append({"address": ptr, "size": rounded, "requested_size": requested, "state": state})
        cursor = ptr + rounded
    if cursor < end:
        records.append({"address": cursor, "size": end - cursor, "requested_size": 0, "state": "inactive"})
    allocated = sum(b["size"] for b in records if b["state"] == "active_allocated")
    return {
        "device": device, "address": address, "total_size": size, "allocated_size": allocated,
        "active_size": sum(b["size"] for b in records if b["state"] != "inactive"),
        "requested_size": sum(b["requested_size"] for b in records), "segment_type": kind,
        "is_expandable": False, "blocks": records,
    }


def _format_size(size):
    """Bytes as PyTorch's out-of-memory message writes them (``2.00 MiB``, ``10240.00 GiB``)."""
    if size <= 1024:
        return f"{size} bytes"
    for unit, scale in (("KiB", 1 << 10), ("MiB", 1 << 20)):
        if size <= scale << 10:
            return f"{size / scale:.2f} {unit}"
    return f"{size / (1 << 30):.2f} GiB"


class PrivatePools:
    """The memory pools of the CUDA graphs captured with one handle (``agnostic.cuda.graph_pool_handle()``): blocks
    allocated while they capture come from these pools, and blocks freed go back to them, never to the device's
    pools, so later work outside the graphs cannot overwrite memory that a replay reads or writes.

        >>> handle = agnostic.cuda.graph_pool_handle()
        >>> handle.device is None  # bound to a device at its first capture
        True
    """

    __slots__ = ("small", "large", "device")

    def __init__(self):
        self.small = self.large = self.device = None

    def __repr__(self):
        return f"<agnostic CUDA graph memory pool, device {self.device}>"


# ----- installation -------------------------------------------------------------------------------------------

_allocator = None
_installed = False


def install():
    """Make agnostic's allocator CuPy's allocator when CUDA starts (at once if it already has); idempotent.

        >>> agnostic.cuda.memory.install()
    """
    global _installed
    if not _installed:
        _installed = True
        _backend.on_cuda_init(_attach)


def _attach(cupy):
    global _allocator
    _allocator = _Allocator(cupy)
    cupy.cuda.set_allocator(_allocator.malloc)


def _require():
    """The installed allocator, CUDA initialized; or the RuntimeError saying why CUDA cannot be used."""
    install()
    _backend.require_cupy()
    return _allocator


def _state(device):
    allocator = _require()
    return allocator.state(_index(device))


# ----- statistics ---------------------------------------------------------------------------------------------

def memory_stats_as_nested_dict(device=None):
    """The allocator statistics of ``device`` (None: the current device) as nested dicts.

        >>> stats = agnostic.cuda.memory_stats_as_nested_dict()  # doctest: +SKIP
        >>> stats["allocated_bytes"]["all"]["current"] == agnostic.cuda.memory_allocated()  # doctest: +SKIP
        True
    """
    return _state(device).nested()


def memory_stats(device=None):
    """The allocator statistics of ``device`` as an OrderedDict with PyTorch's flat dotted keys, sorted
    (``allocated_bytes.all.current``, ``reserved_bytes.large_pool.peak``, ``num_ooms``...).

        >>> x = agnostic.empty(1000, device="cuda")  # doctest: +SKIP
        >>> stats = agnostic.cuda.memory_stats()  # doctest: +SKIP
        >>> stats["allocated_bytes.all.current"] == agnostic.cuda.memory_allocated()  # doctest: +SKIP
        True
        >>> stats["num_ooms"]  # doctest: +SKIP
        0
    """
    return _flatten(memory_stats_as_nested_dict(device))


def _flatten(nested, prefix=""):
    """Nested statistics as a sorted OrderedDict of dotted keys."""
    flat = []
    for key, value in nested.items():
        name = f"{prefix}{key}"
        flat.extend(_flatten(value, name + ".").items() if isinstance(value, dict) else [(name, value)])
    return collections.OrderedDict(sorted(flat))


def memory_allocated(device=None):
    """Bytes currently held by tensors on ``device`` (blocks rounded up to 512 bytes).

        >>> before = agnostic.cuda.memory_allocated()  # doctest: +SKIP
        >>> x = agnostic.empty(1000, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.memory_allocated() - before  # 4,000 bytes rounded up to 512  # doctest: +SKIP
        4096
        >>> del x  # doctest: +SKIP
        >>> agnostic.cuda.memory_allocated() - before  # doctest: +SKIP
        0
    """
    return _state(device).all.b


def max_memory_allocated(device=None):
    """Peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``.

        >>> agnostic.cuda.reset_peak_memory_stats()  # doctest: +SKIP
        >>> base = agnostic.cuda.memory_allocated()  # doctest: +SKIP
        >>> x = agnostic.empty(1024, device="cuda"); del x  # doctest: +SKIP
        >>> agnostic.cuda.max_memory_allocated() - base  # doctest: +SKIP
        4096
    """
    return _state(device).all.b_peak


def memory_reserved(device=None):
    """Bytes the allocator holds from the driver on ``device`` (in use or cached).

        >>> x = agnostic.empty(1000, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.memory_reserved() >= agnostic.cuda.memory_allocated()  # doctest: +SKIP
        True
    """
    return _state(device).all.sb


def max_memory_reserved(device=None):
    """Peak of ``memory_reserved`` since the start or the last ``reset_peak_memory_stats``.

        >>> agnostic.cuda.max_memory_reserved() >= agnostic.cuda.memory_reserved()  # doctest: +SKIP
        True
    """
    return _state(device).all.sb_peak


def memory_cached(device=None):
    """Deprecated; see ``memory_reserved``.

        >>> agnostic.cuda.memory_cached() == agnostic.cuda.memory_reserved()  # warns: deprecated  # doctest: +SKIP
        True
    """
    warnings.warn("agnostic.cuda.memory_cached has been renamed to agnostic.cuda.memory_reserved", FutureWarning,
                  stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None):
    """Deprecated; see ``max_memory_reserved``.

        >>> agnostic.cuda.max_memory_cached() == agnostic.cuda.max_memory_reserved()  # warns  # doctest: +SKIP
        True
    """
    warnings.warn("agnostic.cuda.max_memory_cached has been renamed to agnostic.cuda.max_memory_reserved",
                  FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def reset_peak_memory_stats(device=None):
    """Make every ``peak`` statistic of ``device`` its current value.

        >>> x = agnostic.empty(2 ** 20, device="cuda"); del x  # doctest: +SKIP
        >>> agnostic.cuda.reset_peak_memory_stats()  # doctest: +SKIP
        >>> agnostic.cuda.max_memory_allocated() == agnostic.cuda.memory_allocated()  # doctest: +SKIP
        True
    """
    _state_to_reset(device).reset_peaks()


def reset_accumulated_memory_stats(device=None):
    """Restart every ``allocated``/``freed`` total (and the retry, OOM, cudaMalloc counts) of ``device`` from 0.

        >>> agnostic.cuda.reset_accumulated_memory_stats()  # doctest: +SKIP
        >>> agnostic.cuda.memory_stats()["allocated_bytes.all.allocated"]  # doctest: +SKIP
        0
    """
    _state_to_reset(device).reset_accumulated()


def reset_max_memory_allocated(device=None):
    """Deprecated: resets every peak, as ``reset_peak_memory_stats``.

        >>> agnostic.cuda.reset_max_memory_allocated()  # warns: use reset_peak_memory_stats  # doctest: +SKIP
        >>> agnostic.cuda.max_memory_allocated() == agnostic.cuda.memory_allocated()  # doctest: +SKIP
        True
    """
    warnings.warn("agnostic.cuda.reset_max_memory_allocated now calls agnostic.cuda.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None):
    """Deprecated: resets every peak, as ``reset_peak_memory_stats``.

        >>> agnostic.cuda.reset_max_memory_cached()  # warns: use reset_peak_memory_stats  # doctest: +SKIP
        >>> agnostic.cuda.max_memory_reserved() == agnostic.cuda.memory_reserved()  # doctest: +SKIP
        True
    """
    warnings.warn("agnostic.cuda.reset_max_memory_cached now calls agnostic.cuda.reset_peak_memory_stats, which "
                  "resets /all/ peak memory stats.", FutureWarning, stacklevel=2)
    reset_peak_memory_stats(device)


def _state_to_reset(device):
    allocator = _require()
    index = _index(device)
    return allocator.devices[index] or _DeviceState(index)


def _size_cell(value, reference):
    unit = "B  "
    for bigger in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if reference < 768 * 1024:
            break
        unit, value, reference = bigger, value // 1024, reference / 1024
    return f"{value:6d} {unit}"


def _count_cell(value, reference):
    unit = " "
    for bigger in ("K", "M"):
        if reference < 750 * 1000:
            break
        unit, value, reference = bigger, value // 1000, reference / 1000
    return f"{value:7d} {unit} "


_SUMMARY_ROWS = (
    ("allocated_bytes", "Allocated memory", _size_cell),
    ("active_bytes", "Active memory", _size_cell),
    ("requested_bytes", "Requested memory", _size_cell),
    ("reserved_bytes", "GPU reserved memory", _size_cell),
    ("allocation", "Allocations", _count_cell),
    ("active", "Active allocs", _count_cell),
    ("segment", "GPU reserved segments", _count_cell),
)


def memory_summary(device=None, abbreviated=False):
    """A table of ``memory_stats(device)`` as PyTorch prints it (``abbreviated``: without the pool split).

        >>> print(agnostic.cuda.memory_summary(abbreviated=True))  # doctest: +SKIP
        |===========================================================================|
        |                  agnostic CUDA memory summary, device ID 0                |
        |---------------------------------------------------------------------------|
        ...
    """
    _require()
    index = _index(device)
    return _summary_table(index, memory_stats(index), abbreviated)


def _summary_table(index, stats, abbreviated):
    rule, double = "-" * 75, "=" * 75
    lines = [
        double, f" {'':16} agnostic CUDA memory summary, device ID {index:<16d} ", rule,
        f"  {'':9} CUDA OOMs: {stats['num_ooms']:<12d} | {'':6} cudaMalloc retries: {stats['num_alloc_retries']:<8d}  ",
        double, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ",
    ]
    pools = [("all", None)] + ([] if abbreviated else [("large_pool", "      from large pool"),
                                                        ("small_pool", "      from small pool")])
    for family, title, cell in _SUMMARY_ROWS:
        lines.append(rule)
        columns = ("current", "peak", "allocated", "freed")
        references = [stats[f"{family}.all.{column}"] for column in columns]
        for pool, name in pools:
            cells = " | ".join(cell(stats[f"{family}.{pool}.{column}"], reference)
                               for column, reference in zip(columns, references))
            lines.append(f" {name or title:<21} | {cells} ")
    lines.append(double)
    return "|" + "|\n|".join(lines) + "|\n"


def memory_snapshot():
    """Every segment the allocator holds on every device: ``device``, ``address``, ``total_size``,
    ``allocated_size``, ``active_size``, ``requested_size``, ``segment_type`` and ``blocks`` (``address``, ``size``,
    ``requested_size``, ``state``: active_allocated, active_pending_free or inactive).

        >>> x = agnostic.empty(1000, device="cuda")  # doctest: +SKIP
        >>> segment = agnostic.cuda.memory_snapshot()[0]  # doctest: +SKIP
        >>> sorted(segment)  # doctest: +SKIP
        ['active_size', 'address', 'allocated_size', 'blocks', 'device', 'requested_size', 'segment_type', 'total_size']
    """
    return _require().snapshot()


# ----- the driver's view --------------------------------------------------------------------------------------

def empty_cache():
    """Give every cached, unused block back to the driver, so other processes (and ``mem_get_info``) see it free.
    Blocks still split around tensors in use stay reserved.

        >>> x = agnostic.empty(2 ** 20, device="cuda"); del x  # doctest: +SKIP
        >>> cached = agnostic.cuda.memory_reserved() - agnostic.cuda.memory_allocated()  # doctest: +SKIP
        >>> agnostic.cuda.empty_cache()  # doctest: +SKIP
        >>> agnostic.cuda.memory_reserved() - agnostic.cuda.memory_allocated() < cached  # doctest: +SKIP
        True
    """
    _require().empty_cache()


def mem_get_info(device=None):
    """``(free, total)`` bytes of ``device`` according to the driver (``cudaMemGetInfo``).

        >>> free, total = agnostic.cuda.mem_get_info()  # doctest: +SKIP
        >>> 0 < free <= total  # doctest: +SKIP
        True
    """
    cupy = _backend.require_cupy()
    with cupy.cuda.Device(_index(device)):
        return cupy.cuda.runtime.memGetInfo()


def list_gpu_processes(device=None):
    """The processes using ``device`` and their GPU memory, from NVML (needs the ``pynvml`` package).

        >>> print(agnostic.cuda.list_gpu_processes())  # doctest: +SKIP
        GPU:0
        process       1234 uses      512.000 MB GPU memory
    """
    cupy = _backend.require_cupy()
    index = _index(device)
    try:
        import pynvml
    except ModuleNotFoundError:
        return "pynvml module not found, please install pynvml"
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByPciBusId(cupy.cuda.Device(index).pci_bus_id.encode())
    processes = pynvml.nvmlDeviceGetComputeRunningProcesses(handle)
    lines = [f"GPU:{index}"] + [f"process {p.pid:>10d} uses {p.usedGpuMemory / 2 ** 20:>12.3f} MB GPU memory"
                                for p in processes]
    return "\n".join(lines if processes else lines + ["no processes are running"])


# ----- streams ------------------------------------------------------------------------------------------------

def record_stream(tensor, stream):
    """Mark ``tensor``'s memory as used by ``stream`` (``Tensor.record_stream``): once the tensor is freed, its block
    is not reused until the work queued on ``stream`` by then has completed. ``stream`` is an agnostic.cuda.Stream
    (anything with a ``cupy_stream``) or a cupy Stream.

        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> x = agnostic.ones(1000, device="cuda")  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     y = x * 2
        >>> agnostic.cuda.memory.record_stream(x, s)  # the same as x.record_stream(s)  # doctest: +SKIP
        >>> del x  # its block waits for s's work before it is reused  # doctest: +SKIP
    """
    if tensor.device.type != "cuda":
        raise RuntimeError(f"record_stream expects a CUDA tensor, got one on {tensor.device}")
    raw = getattr(stream, "cupy_stream", stream)
    if not hasattr(raw, "ptr") or not hasattr(raw, "record"):
        raise TypeError(f"record_stream expects an agnostic.cuda.Stream or a cupy Stream, got {type(stream).__name__}")
    block = tensor._data.data.mem
    if not isinstance(block, _AllocatedBlock):  # memory agnostic did not allocate (DLPack, CuPy's pool): no delay
        return
    if type(block) is not block.stream_class:
        block.streams = []
        block.__class__ = block.stream_class
    if raw not in block.streams:  # cupy streams compare by handle
        block.streams.append(raw)


def release_completed_blocks():
    """Return to the pools the freed ``record_stream`` blocks whose streams have caught up (done on every
    allocation anyway; cheap, for synchronize points).

        >>> agnostic.cuda.memory.release_completed_blocks()
    """
    if _allocator is not None and _allocator.pending:
        _allocator.release_completed()
