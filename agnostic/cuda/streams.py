"""CUDA streams and events (``agnostic.cuda.Stream``, ``Event``, ``stream``, ``current_stream``...) over CuPy's."""

from .. import _backend
from .._device import CPU, Device
from .._streams import Event as _Event, Stream as _Stream
from ._devices import _index

_priority_ranges: dict = {}


def _stream_index(device):
    """A CUDA index for a stream query: None or a negative int mean the current device, as in PyTorch."""
    return _index(None if isinstance(device, int) and device < 0 else device)


class Stream(_Stream, device_type="cuda"):
    """A CUDA stream: work queued on it runs in order, concurrently with other streams of its device.

    ``Stream(device=None, priority=0)`` creates a non-blocking stream (it does not synchronize with the default
    stream) on ``device`` (the current device by default). A lower ``priority`` runs first; values outside
    ``priority_range()`` are clamped to it. Inside ``with agnostic.cuda.stream(s):`` every op, copy and allocation
    is queued on ``s``. ``cupy_stream`` is the underlying ``cupy.cuda.Stream``.

        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> x = agnostic.ones(1000, device="cuda")  # doctest: +SKIP
        >>> s.wait_stream(agnostic.cuda.current_stream())  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     y = x * 2
        >>> s.synchronize()  # doctest: +SKIP
        >>> y.sum()  # doctest: +SKIP
        tensor(2000., device='cuda:0')
    """

    def __new__(cls, device=None, priority=0):
        cupy = _backend.require_cupy()
        index = _stream_index(device)
        with cupy.cuda.Device(index):
            return cls._wrap(cupy.cuda.Stream(non_blocking=True, priority=priority), index)

    @classmethod
    def _current(cls, device):
        return current_stream(device)

    def _context(self):
        return StreamContext(self)

    @classmethod
    def _wrap(cls, cupy_stream, index):
        stream = object.__new__(cls)
        stream.cupy_stream = cupy_stream
        stream.device = Device("cuda", index)
        return stream

    @property
    def cuda_stream(self):
        """The raw ``cudaStream_t`` handle, as an int (0 for the legacy default stream)."""
        return self.cupy_stream.ptr

    @property
    def priority(self):
        """The stream's priority (lower runs first)."""
        with self.device.backend.activate():
            return self.cupy_stream.priority

    @staticmethod
    def priority_range():
        """``(least, greatest)`` stream priority on the current device: 0 and a negative number."""
        cupy = _backend.require_cupy()
        index = cupy.cuda.runtime.getDevice()
        if index not in _priority_ranges:
            # CuPy does not wrap cudaDeviceGetStreamPriorityRange; CUDA clamps out-of-range priorities to the
            # range, so two probe streams read its ends.
            with cupy.cuda.Device(index):
                ends = [cupy.cuda.Stream(non_blocking=True, priority=p).priority for p in (1 << 20, -(1 << 20))]
            _priority_ranges[index] = tuple(ends)
        return _priority_ranges[index]

    def query(self):
        """True when all work queued on this stream has finished."""
        with self.device.backend.activate():
            return self.cupy_stream.done

    def synchronize(self):
        """Block the host until all work queued on this stream has finished."""
        with self.device.backend.activate():
            self.cupy_stream.synchronize()

    def __eq__(self, other):
        return isinstance(other, Stream) and self.device is other.device and self.cuda_stream == other.cuda_stream

    def __hash__(self):
        return hash((self.cuda_stream, self.device))

    def __repr__(self):
        return f"<agnostic.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"


def current_stream(device=None):
    """The stream work is queued on for ``device`` (the current device by default).

        >>> agnostic.cuda.current_stream()  # doctest: +SKIP
        <agnostic.cuda.Stream device=cuda:0 cuda_stream=0x0>
        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     agnostic.cuda.current_stream() == s
        True
    """
    cupy = _backend.require_cupy()
    index = _stream_index(device)
    return Stream._wrap(cupy.cuda.get_current_stream(index), index)


def default_stream(device=None):
    """The default stream of ``device`` (the current device by default): the legacy NULL stream, or the
    per-thread default stream when CuPy runs with ``CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1``.

        >>> agnostic.cuda.default_stream().cuda_stream  # doctest: +SKIP
        0
    """
    cupy = _backend.require_cupy()
    from cupy_backends.cuda import stream as backend_stream

    per_thread = cupy.cuda.Stream.ptds
    default = per_thread if backend_stream.get_default_stream_ptr() == per_thread.ptr else cupy.cuda.Stream.null
    return Stream._wrap(default, _stream_index(device))


def _check_cuda_stream(stream, what):
    if not isinstance(stream, Stream):
        raise TypeError(f"{what} expects an agnostic.cuda.Stream, got {stream!r}")


def set_stream(stream):
    """Make ``stream`` the current stream, and its device the current device (``None``: no-op). Prefer the
    ``stream()`` context manager, which restores both.

        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> agnostic.cuda.set_stream(s)  # doctest: +SKIP
        >>> agnostic.cuda.current_stream() == s  # doctest: +SKIP
        True
        >>> agnostic.cuda.set_stream(agnostic.cuda.default_stream())  # doctest: +SKIP
    """
    if stream is None:
        return
    _check_cuda_stream(stream, "set_stream()")
    cupy = _backend.require_cupy()
    if cupy.cuda.runtime.getDevice() != stream.device.index:
        cupy.cuda.Device(stream.device.index).use()
    stream.cupy_stream.use()


class StreamContext:
    """Context manager that makes ``stream`` current inside it, switching to its device when it lives on another
    one; on exit the previous streams of both devices and the previous device are restored. ``None``: no-op.

        >>> with agnostic.cuda.StreamContext(None):
        ...     agnostic.ones(2).sum()
        tensor(2.)
        >>> s = agnostic.cuda.Stream(device="cuda:1")  # doctest: +SKIP
        >>> with agnostic.cuda.StreamContext(s):  # doctest: +SKIP
        ...     agnostic.cuda.current_device()
        1
    """

    def __init__(self, stream):
        if stream is not None:
            _check_cuda_stream(stream, "stream()")
        self.stream = stream
        self.src_prev_stream = None
        self.dst_prev_stream = None

    def __enter__(self):
        stream = self.stream
        if stream is None:
            return
        self.src_prev_stream = current_stream()
        if self.src_prev_stream.device is not stream.device:
            self.dst_prev_stream = current_stream(stream.device)
        set_stream(stream)

    def __exit__(self, *exc_info):
        stream = self.stream
        if stream is None:
            return
        if self.src_prev_stream.device is not stream.device:
            set_stream(self.dst_prev_stream)
        set_stream(self.src_prev_stream)


def stream(stream):
    """``with agnostic.cuda.stream(s):`` queues every op, copy and allocation inside on ``s`` (see StreamContext).

        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     y = agnostic.ones(3, device="cuda") + 1
        >>> agnostic.cuda.current_stream().wait_stream(s)  # doctest: +SKIP
        >>> y  # doctest: +SKIP
        tensor([2., 2., 2.], device='cuda:0')
    """
    return StreamContext(stream)


class Event(_Event, device_type="cuda"):
    """A CUDA event: a marker in a stream, to wait for, synchronize on, or time work between.

    ``Event(enable_timing=False, blocking=False, interprocess=False)``. The CUDA event is created on first
    ``record`` (on the stream's device), after which only streams of that device may record it; streams of any
    device may wait on it. ``blocking`` makes ``synchronize`` sleep instead of spin. ``interprocess`` events can be
    shared with ``ipc_handle``/``from_ipc_handle`` and never time (CUDA forbids both). ``cupy_event`` is the
    underlying ``cupy.cuda.Event`` (None until created).

        >>> start = agnostic.cuda.Event(enable_timing=True)
        >>> end = agnostic.cuda.Event(enable_timing=True)
        >>> start.query()
        True
        >>> x = agnostic.ones(2048, 2048, device="cuda")  # doctest: +SKIP
        >>> start.record()  # doctest: +SKIP
        >>> y = x @ x  # doctest: +SKIP
        >>> end.record()  # doctest: +SKIP
        >>> end.synchronize()  # doctest: +SKIP
        >>> start.elapsed_time(end) > 0  # milliseconds  # doctest: +SKIP
        True
    """

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        event = object.__new__(cls)
        event._timing = bool(enable_timing) and not interprocess
        event._blocking = bool(blocking)
        event._interprocess = bool(interprocess)
        event._device = None
        event._imported = False  # opened with from_ipc_handle
        event.cupy_event = None
        return event

    @classmethod
    def _on(cls, device, enable_timing, blocking, interprocess):
        event = cls(enable_timing, blocking, interprocess)
        event._device = device
        return event

    @property
    def device(self):
        """The device the event lives on, or None before it is first recorded."""
        return self._device

    @property
    def cuda_event(self):
        """The raw ``cudaEvent_t`` handle as an int (0 before the event is created)."""
        return 0 if self.cupy_event is None else self.cupy_event.ptr

    def _create(self, device):
        cupy = _backend.require_cupy()
        with cupy.cuda.Device(device.index):
            self.cupy_event = cupy.cuda.Event(
                block=self._blocking, disable_timing=not self._timing, interprocess=self._interprocess
            )
        self._device = device

    def record(self, stream=None):
        """Record the event on ``stream`` (the current stream of the event's device, or of the current device
        before it has one); the stream's device must be the event's."""
        if stream is None:
            stream = current_stream(self._device)
        _check_cuda_stream(stream, "Event.record()")
        if self._device is not None and self._device is not stream.device:
            raise RuntimeError(f"Event device {self._device} does not match recording stream's device {stream.device}.")
        if self.cupy_event is None:
            self._create(stream.device)
        with stream.device.backend.activate():
            self.cupy_event.record(stream.cupy_stream)

    def wait(self, stream=None):
        """Make all future work on ``stream`` (the current stream by default) wait for this event, without
        blocking the host; a CPU stream, whose work runs on the host, blocks until the event completes, and so does
        a stream of another device than an event from another process (CUDA cannot wait on that one)."""
        if self.cupy_event is None:
            return
        if stream is None:
            stream = current_stream()
        if getattr(stream, "device", None) is CPU:
            self.synchronize()
            return
        _check_cuda_stream(stream, "Event.wait()")
        if self._imported and stream.device is not self._device:
            # CUDA crashes (a segfault, in PyTorch too) making a stream wait on another device's event opened from
            # another process; blocking the host until the event completes orders the stream's later work as well.
            self.synchronize()
            return
        with stream.device.backend.activate():
            stream.cupy_stream.wait_event(self.cupy_event)

    def query(self):
        """True when the work captured by the event has completed (or it was never recorded)."""
        return self.cupy_event is None or self.cupy_event.done

    def synchronize(self):
        """Block the host until the work captured by the event has completed."""
        if self.cupy_event is not None:
            self.cupy_event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and ``end_event``'s; both must be timing events, recorded,
        and complete (CUDA raises cudaErrorNotReady otherwise)."""
        if not (self._timing and getattr(end_event, "_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self.cupy_event is None or getattr(end_event, "cupy_event", None) is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        cupy = _backend.require_cupy()
        with self._device.backend.activate():
            return cupy.cuda.get_elapsed_time(self.cupy_event, end_event.cupy_event)

    def ipc_handle(self):
        """A handle (bytes) another process can open with ``Event.from_ipc_handle``; needs ``interprocess=True``.
        An event never recorded is created on the current device."""
        if not self._interprocess:
            raise RuntimeError("ipc_handle() needs an event created with Event(interprocess=True)")
        cupy = _backend.require_cupy()
        if self.cupy_event is None:
            self._create(Device("cuda", cupy.cuda.runtime.getDevice()))
        with self._device.backend.activate():  # CUDA crashes exporting an event of a device that is not current
            return cupy.cuda.runtime.ipcGetEventHandle(self.cupy_event.ptr)

    @classmethod
    def from_ipc_handle(cls, device, handle):
        """The event another process exported with ``ipc_handle()``, opened on ``device``."""
        cupy = _backend.require_cupy()
        index = _index(device)
        with cupy.cuda.Device(index):
            pointer = cupy.cuda.runtime.ipcOpenEventHandle(bytes(handle))
        opened = cupy.cuda.Event.__new__(cupy.cuda.Event)
        opened.ptr = pointer  # CuPy's Event destroys it with cudaEventDestroy, which is how CUDA releases it
        event = cls(interprocess=True)
        event.cupy_event = opened
        event._device = Device("cuda", index)
        event._imported = True
        return event

    def __reduce__(self):
        """An interprocess event pickles as its IPC handle (how it reaches other processes through
        ``agnostic.multiprocessing``), as PyTorch's does; other events can't be sent."""
        handle = self.ipc_handle()  # first: it creates an event never recorded, on the current device
        return type(self).from_ipc_handle, (self.device, handle)

    def __repr__(self):
        if self.cupy_event is None:
            return "<agnostic.cuda.Event uninitialized>"
        return f"<agnostic.cuda.Event {self.cuda_event:#x}>"


def current_blas_handle():
    """The cuBLAS handle (``cublasHandle_t`` as an int) CuPy uses on the current device.

        >>> agnostic.cuda.current_blas_handle() != 0  # doctest: +SKIP
        True
    """
    return _backend.require_cupy().cuda.device.get_cublas_handle()


def ipc_collect():
    """Free the GPU memory this process sent to other processes over CUDA IPC that they no longer use, as
    ``torch.cuda.ipc_collect``.

        >>> agnostic.cuda.ipc_collect()
    """
    from ..multiprocessing import cuda_ipc  # lazily: import agnostic doesn't load multiprocessing

    return cuda_ipc.ipc_collect()


class ExternalStream(Stream):
    """A stream another library created (a ``cudaStream_t`` given as an int), to queue agnostic's work on it.

    ``ExternalStream(stream_ptr, device=None)``: ``device`` is the device the stream was created on (the current
    device by default); a wrong one makes later launches fail. agnostic never destroys the stream: its owner must
    keep it alive while it is in use.

        >>> import cupy  # doctest: +SKIP
        >>> theirs = cupy.cuda.Stream(non_blocking=True)  # doctest: +SKIP
        >>> s = agnostic.cuda.ExternalStream(theirs.ptr)  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     y = agnostic.ones(3, device="cuda") * 2
        >>> s.cuda_stream == theirs.ptr  # doctest: +SKIP
        True
    """

    def __new__(cls, stream_ptr, device=None):
        cupy = _backend.require_cupy()
        index = _stream_index(device)
        with cupy.cuda.Device(index):
            if hasattr(cupy.cuda.Stream, "from_external"):  # CuPy 14 (its ExternalStream is deprecated there)
                foreign = cupy.cuda.Stream.from_external(_ForeignStream(int(stream_ptr)))
            else:
                foreign = cupy.cuda.ExternalStream(int(stream_ptr), index)
            return cls._wrap(foreign, index)


class _ForeignStream:
    """A ``cudaStream_t`` given as an int, under the CUDA stream protocol that CuPy's ``Stream.from_external``
    takes."""

    def __init__(self, pointer):
        self.pointer = pointer

    def __cuda_stream__(self):
        return 0, self.pointer


def get_stream_from_external(data_ptr, device=None):
    """A ``Stream`` over a ``cudaStream_t`` another library created (``data_ptr``, an int), on ``device`` (the
    current device by default), as ``torch.cuda.get_stream_from_external``; its owner keeps it alive.

        >>> import cupy  # doctest: +SKIP
        >>> theirs = cupy.cuda.Stream()  # doctest: +SKIP
        >>> agnostic.cuda.get_stream_from_external(theirs.ptr).cuda_stream == theirs.ptr  # doctest: +SKIP
        True
    """
    return ExternalStream(data_ptr, device)
