"""Shared-memory segments: creating them (unnamed memfd, or named in /dev/shm), mapping them into this process, and
removing names.

A ``Mapping`` owns the pages it maps: NumPy arrays view it through ``__array_interface__`` (so it is their
``base``), and the pages are unmapped when the last of them is gone. Mappings come from ``mmap(2)`` through ctypes
rather than Python's ``mmap`` module, which would hold one more file descriptor per segment.
"""

import ctypes
import mmap
import os
import secrets
import sys
import threading
from multiprocessing import resource_tracker

import numpy

try:
    import _posixshmem
except ImportError:  # pragma: no cover - Windows has no POSIX shared memory
    _posixshmem = None

if os.name == "posix":
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64)
    _libc.munmap.restype = ctypes.c_int
    _libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
else:  # pragma: no cover
    _libc = None  # type: ignore[assignment]  # mmap is POSIX: no shared segments elsewhere
_MAP_FAILED = ctypes.c_void_p(-1).value
_TRACKED = "shared_memory"  # the resource tracker unlinks what is still registered when the process tree ends
# Held around every message to the resource tracker, and across fork(): a child forked while one of our threads (a
# queue's feeder, pickling tensors) was talking to the tracker would inherit the tracker's lock held, and hang at
# its own first message.
_tracker_lock = threading.Lock()


def _tracked(message, name):
    with _tracker_lock:
        message(name, _TRACKED)


def _new_tracker_lock_in_child():
    global _tracker_lock
    _tracker_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=lambda: _tracker_lock.acquire(), after_in_parent=lambda: _tracker_lock.release(),
                        after_in_child=_new_tracker_lock_in_child)


class Mapping:
    """``size`` bytes of a shared-memory object, mapped read-write at ``address``.

    ``fd`` (or -1) is kept open so the segment can be sent again by descriptor; ``name`` is the segment's name
    for named ones; ``key`` identifies the segment across processes (for the receivers' caches).
    """

    __slots__ = ("address", "size", "fd", "name", "key", "__weakref__")

    def __init__(self, fd, size, keep_fd):
        if _libc is None:  # pragma: no cover
            raise RuntimeError("sharing tensors between processes needs a POSIX system (Linux or macOS)")
        address = _libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if address is None or address == _MAP_FAILED:
            error = ctypes.get_errno()
            raise OSError(error, f"mmap of a {size}-byte shared-memory segment failed: {os.strerror(error)}")
        self.address, self.size = address, size
        self.fd = fd if keep_fd else -1
        self.name = None
        self.key = None

    @property
    def __array_interface__(self):
        return {"data": (self.address, False), "shape": (self.size,), "typestr": "|u1", "version": 3}

    def bytes(self):
        """All mapped bytes as a uint8 NumPy array (whose base is this mapping)."""
        return numpy.asarray(self)

    def __del__(self):
        try:
            _libc.munmap(self.address, self.size)
            if self.fd >= 0:
                os.close(self.fd)
        except Exception:  # interpreter shutdown: the process is going away with its mappings
            pass


def fd_key(fd):
    """What identifies the file behind ``fd`` in any process: ``(device, inode)``."""
    stat = os.fstat(fd)
    return ("fd", stat.st_dev, stat.st_ino)


def create_unnamed(size):
    """A new segment nothing can open by name: shared only by passing its descriptor (kept in the mapping)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("agnostic-shared", os.MFD_CLOEXEC)
    else:  # pragma: no cover - systems without memfd: a named segment whose name is removed at once
        name, fd = _create("agnostic")
        _posixshmem.shm_unlink(name)
    try:
        os.ftruncate(fd, size)
        mapping = Mapping(fd, size, keep_fd=True)
    except BaseException:
        os.close(fd)
        raise
    mapping.key = fd_key(fd)
    return mapping


def open_unnamed(fd):
    """Map the whole segment behind a received descriptor (the mapping takes ownership of ``fd``)."""
    try:
        mapping = Mapping(fd, os.fstat(fd).st_size, keep_fd=True)
    except BaseException:
        os.close(fd)
        raise
    mapping.key = fd_key(fd)
    return mapping


def new_name(prefix="agnostic"):
    """A fresh segment name, ``/<prefix>_<pid>_<random>`` (within macOS's 31 characters)."""
    return f"/{prefix}_{os.getpid()}_{secrets.token_hex(4)}"


def _create(prefix):
    """``(name, fd)`` of a new named segment, under a name nobody uses."""
    while True:
        name = new_name(prefix)
        try:
            return name, _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        except FileExistsError:
            continue


def create_named(size, initialize=None, prefix="agnostic"):
    """A new named segment of ``size`` bytes, registered with the resource tracker.

    ``initialize(fd)`` runs before the segment is mapped (to write a header); on any failure the name is removed.
    """
    name, fd = _create(prefix)
    try:
        os.ftruncate(fd, size)
        if initialize is not None:
            initialize(fd)
        mapping = Mapping(fd, size, keep_fd=False)
        _tracked(resource_tracker.register, name)
    except BaseException:
        _posixshmem.shm_unlink(name)
        raise
    finally:
        os.close(fd)
    mapping.name = name
    mapping.key = ("name", name)
    return mapping


def open_name(name):
    """A descriptor of the named segment (FileNotFoundError once it is unlinked)."""
    return _posixshmem.shm_open(name, os.O_RDWR, 0o600)


def exists(name):
    """Whether a named segment still exists."""
    try:
        os.close(open_name(name))
    except FileNotFoundError:
        return False
    return True


def map_fd(fd, name):
    """Map the whole named segment behind ``fd`` (the caller keeps and closes ``fd``)."""
    mapping = Mapping(fd, os.fstat(fd).st_size, keep_fd=False)
    mapping.name = name
    mapping.key = ("name", name)
    return mapping


def unlink(name):
    """Remove a segment's name (mappings stay valid) and tell the resource tracker it is handled."""
    try:
        _posixshmem.shm_unlink(name)
    except FileNotFoundError:
        return
    _tracked(resource_tracker.unregister, name)


def is_alive(pid):
    """False when process ``pid`` has exited (a zombie not yet reaped counts as exited)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                state = stat.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            return True
        return state not in (b"Z", b"X")
    return True
