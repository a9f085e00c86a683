"""CPU tensors in shared memory: the sharing strategies, ``share_memory_``/``is_shared``, and the handles that let
another process map the same pages.

``file_descriptor`` (the default on Linux) backs a tensor with an unnamed memfd segment and sends its descriptor
(``multiprocessing.reduction.DupFd``): nothing ever appears in /dev/shm, and the kernel frees the pages when the
last process holding them exits, however it exits. ``file_system`` backs it with a named segment in /dev/shm and
sends the name: no descriptors are held, and a lock-protected header in the segment counts the messages in flight
and lists the processes that map it; the last one to let go (a dead process lets go by dying) removes the name.
"""

import os
import struct
import sys
import threading
import weakref
from multiprocessing import reduction, resource_tracker, util

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: segments cannot be made there anyway
    fcntl = None  # type: ignore[assignment]
try:
    # Loaded now, not half-way in a queue's feeder thread that a fork could copy mid-import (as PyTorch does).
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:  # pragma: no cover
    pass

import numpy

from . import _memory

if sys.platform.startswith("linux"):
    _ALL_STRATEGIES = frozenset({"file_descriptor", "file_system"})
    _strategy = "file_descriptor"
else:  # as PyTorch: descriptors can't identify shared memory elsewhere
    _ALL_STRATEGIES = frozenset({"file_system"})
    _strategy = "file_system"

_HEADER = 4096  # file_system header: in-flight count, holder count, holder pids; keeps the data page-aligned
_HEADER_FIELDS = struct.Struct("<qq")
_MAX_HOLDERS = (_HEADER - _HEADER_FIELDS.size) // 4
_lock = threading.Lock()
_mappings: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # segment key -> this process's Mapping of it
_named_made = False


def get_all_sharing_strategies():
    """The set of strategies for sharing CPU tensors this system supports.

        >>> import agnostic.multiprocessing as mp
        >>> sorted(mp.get_all_sharing_strategies())
        ['file_descriptor', 'file_system']
    """
    return set(_ALL_STRATEGIES)


def get_sharing_strategy():
    """The current strategy for sharing CPU tensors.

        >>> import agnostic.multiprocessing as mp
        >>> mp.get_sharing_strategy()
        'file_descriptor'
    """
    return _strategy


def set_sharing_strategy(new_strategy):
    """Set the strategy for sharing CPU tensors: one of ``get_all_sharing_strategies()``, as in PyTorch.

    ``'file_descriptor'`` (the default on Linux): the descriptor of an unnamed shared-memory segment travels over a
    socket. ``'file_system'``: a named segment, removed by the last process that lets go of it; for processes that
    hold very many tensors (each descriptor is an open file).

        >>> import agnostic.multiprocessing as mp
        >>> previous = mp.get_sharing_strategy()
        >>> mp.set_sharing_strategy("file_system")
        >>> mp.get_sharing_strategy()
        'file_system'
        >>> mp.set_sharing_strategy(previous)
    """
    global _strategy
    if new_strategy not in _ALL_STRATEGIES:
        raise ValueError(f"unknown sharing strategy {new_strategy!r}; expected one of {sorted(_ALL_STRATEGIES)}")
    _strategy = new_strategy


# ----- Tensor methods --------------------------------------------------------------------------------------------
def is_shared(tensor):
    """``Tensor.is_shared()``: True when the tensor's memory is shared memory (always for CUDA tensors)."""
    return not tensor._device.backend.host or mapping_of(tensor._data) is not None


def share_memory_(tensor):
    """``Tensor.share_memory_()``: move the tensor's data into shared memory (once; a no-op for CUDA tensors and
    tensors already there); returns ``tensor``.

    Only this tensor object moves: other tensors viewing its old memory keep the old memory, so call it before
    taking views that must stay shared.
    """
    if not tensor._device.backend.host:
        return tensor
    with _lock:
        array = tensor._data
        if mapping_of(array) is None:
            tensor._data = _copy_to_shared(array)
    return tensor


def mapping_of(array):
    """The shared-memory Mapping a NumPy array views, or None."""
    base = array.base
    while isinstance(base, numpy.ndarray):
        base = base.base
    return base if isinstance(base, _memory.Mapping) else None


def _span(array):
    """``(low, high)``: the bytes an array touches, as offsets from its first element."""
    low = high = 0
    for size, stride in zip(array.shape, array.strides):
        if size == 0:
            return 0, 0
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    return low, high + array.itemsize


def _copy_to_shared(array):
    """A copy of ``array`` in a new segment: same strides when its memory is dense (or broadcast), else C order."""
    low, high = _span(array)
    keep_layout = high - low <= array.nbytes
    size = (high - low) if keep_layout else array.nbytes
    mapping = _new_segment(size)
    start = _HEADER if mapping.name is not None else 0
    if keep_layout:
        shared = _view(mapping, start - low, array.shape, array.strides, array.dtype)
    else:
        shared = _view(mapping, start, array.shape, None, array.dtype)
    numpy.copyto(shared, array, casting="no")
    if not array.flags.writeable:
        shared.flags.writeable = False
    return shared


def _new_segment(size):
    """A new segment of ``size`` data bytes for the current strategy, known to this process's cache."""
    if _strategy == "file_system":
        mapping = _memory.create_named(_HEADER + max(size, 1), _write_initial_header)
        _remember_named()
        _let_go_when_unmapped(mapping)
    else:
        mapping = _memory.create_unnamed(max(size, 1))
    _mappings[mapping.key] = mapping
    return mapping


def _view(mapping, offset, shape, strides, dtype):
    return numpy.ndarray(shape, dtype, buffer=mapping.bytes(), offset=offset, strides=strides)


# ----- handles: what travels between processes --------------------------------------------------------------
def export(tensor):
    """A picklable handle to a CPU tensor's memory, moving it to shared memory first (once)."""
    share_memory_(tensor)
    array = tensor._data
    mapping = mapping_of(array)
    view = (array.__array_interface__["data"][0] - mapping.address, array.shape, array.strides, array.dtype,
            array.flags.writeable)
    if mapping.name is not None:
        _update_header(mapping.name, _one_more_in_flight)
        return ("name", mapping.name, view)
    return ("fd", reduction.DupFd(mapping.fd), view)


def rebuild_array(handle):
    """The NumPy array a handle from ``export`` describes, viewing the same shared pages."""
    kind, source, (offset, shape, strides, dtype, writeable) = handle
    mapping = _receive_named(source) if kind == "name" else _receive_fd(source.detach())
    array = _view(mapping, offset, shape, strides, dtype)
    if not writeable:
        array.flags.writeable = False
    return array


def _receive_fd(fd):
    key = _memory.fd_key(fd)
    with _lock:
        mapping = _mappings.get(key)
        if mapping is not None:
            os.close(fd)
            return mapping
        mapping = _mappings[key] = _memory.open_unnamed(fd)
        return mapping


def _receive_named(name):
    with _lock:
        mapping = _mappings.get(("name", name))
        if mapping is not None:
            _update_header(name, _one_less_in_flight)
            return mapping
        # Map through a descriptor of its own: a mapping keeps its open file, and with it any flock on it.
        fd = _memory.open_name(name)
        try:
            mapping = _memory.map_fd(fd, name)
        finally:
            os.close(fd)
        _update_header(name, lambda in_flight, holders: (in_flight - 1, holders + [os.getpid()]))
        _mappings[("name", name)] = mapping
    _let_go_when_unmapped(mapping)
    return mapping


# ----- file_system: who still needs a name ------------------------------------------------------------------
def _let_go_when_unmapped(mapping):
    # multiprocessing's finalizers also run when a process exits, forked children included (which skip atexit),
    # and this priority runs after the queues' feeder threads have sent what they hold (-5).
    util.Finalize(mapping, _let_go, args=(mapping.name, os.getpid()), exitpriority=-10)


def _write_initial_header(fd):
    _write_header(fd, 0, [os.getpid()])


def _lock_header(fd):
    fcntl.flock(fd, fcntl.LOCK_EX)  # released by _unlock_header, or when the process dies


def _unlock_header(fd):
    # Explicitly, not by closing fd: a child forked while this process held the lock has a copy of fd, which would
    # keep the lock held after our close, and then wait forever for it at its own first update of this header.
    fcntl.flock(fd, fcntl.LOCK_UN)


def _read_header(fd):
    raw = os.pread(fd, _HEADER, 0)
    in_flight, count = _HEADER_FIELDS.unpack_from(raw)
    return in_flight, list(struct.unpack_from(f"<{count}i", raw, _HEADER_FIELDS.size))


def _write_header(fd, in_flight, holders):
    if len(holders) > _MAX_HOLDERS:
        raise RuntimeError(f"a file_system shared segment can be mapped by at most {_MAX_HOLDERS} processes")
    os.pwrite(fd, _HEADER_FIELDS.pack(in_flight, len(holders)) + struct.pack(f"<{len(holders)}i", *holders), 0)


def _live(holders):
    return [pid for pid in holders if _memory.is_alive(pid)]


def _one_more_in_flight(in_flight, holders):
    return in_flight + 1, holders


def _one_less_in_flight(in_flight, holders):
    return in_flight - 1, holders


def _update_header(name, change):
    """Apply ``change(in_flight, holders)`` under the segment's lock, forget dead holders, and remove the name
    when no message is in flight and no live process maps it."""
    try:
        fd = _memory.open_name(name)
    except FileNotFoundError:
        raise RuntimeError(f"shared memory segment {name} is gone: every process that mapped it has let it go "
                           "(a forked child cannot send shared tensors its parent no longer holds)") from None
    _updating.active = True
    try:
        _lock_header(fd)
        try:
            in_flight, holders = change(*_read_header(fd))
            holders = _live(holders)
            if in_flight <= 0 and not holders:
                _memory.unlink(name)
            else:
                _write_header(fd, in_flight, holders)
        finally:
            _unlock_header(fd)
    finally:
        os.close(fd)
        _updating.active = False
    while _deferred:
        try:
            deferred = _deferred.pop()
        except IndexError:  # another thread took the last one
            break
        _let_go(*deferred)


_updating = threading.local()
_deferred: list = []


def _let_go(name, pid):
    """Finalizer of a named mapping: this process no longer maps the segment."""
    if os.getpid() != pid:  # a forked child inherited the mapping, not the parent's place in the header
        return
    if getattr(_updating, "active", False):
        # A collection ran this finalizer while this thread holds a header lock, maybe this very one.
        _deferred.append((name, pid))
        return
    try:
        _update_header(name, lambda in_flight, holders: (in_flight, _without(holders, pid)))
    except Exception:  # already removed, or the interpreter is shutting down
        pass


def _without(holders, pid):
    holders = list(holders)
    if pid in holders:
        holders.remove(pid)
    return holders


# ----- fork ------------------------------------------------------------------------------------------------------
def _before_fork():
    # A forked child must register its named segments with the parent's resource tracker, not start its own: a
    # tracker unlinks what is still registered with it when its processes are gone, and only the tracker a
    # segment was registered with accepts its unregistration. Spawned children get the parent's anyway.
    if _strategy == "file_system" or _named_made:
        try:
            resource_tracker.ensure_running()
        except Exception:  # the fork goes on; the child starts a tracker of its own
            pass


def _remember_named():
    global _named_made
    _named_made = True


def _reset_lock_in_child():
    global _lock
    _lock = threading.Lock()  # another thread may have held it at fork time


os.register_at_fork(before=_before_fork, after_in_child=_reset_lock_in_child)
