"""Streams and events for any device (``agnostic.Stream``, ``Event``, ``stream``): CUDA's, or synchronous CPU ones.

Each device type's stream and event classes name themselves when they are defined (``class Stream(_streams.Stream,
device_type="cuda")``, in ``agnostic.cuda.streams``), and ``Stream(device)``, ``Event(device)``,
``current_stream(device)`` and ``stream(s)`` use the class of the device's type.
"""

import contextlib
import time

from . import _backend
from ._device import CPU, Device


def _concrete_device(device):
    """``device`` resolved; None is the current accelerator's current device, or the CPU without one."""
    if device is None:
        if _backend.cuda_device_count() == 0:
            return CPU
        return Device("cuda", _backend.current_cuda_index())
    return _backend.resolve(device if isinstance(device, Device) else Device(device))


class Stream:
    """A queue of work on one device: ``Stream(device=None, priority=0)``.

    A CUDA device gives an ``agnostic.cuda.Stream``; the CPU gives a stream whose work is already done when issued
    (``query()`` is True, ``synchronize()`` returns at once). ``None`` means the current accelerator device, or
    the CPU on machines without one, as ``torch.Stream``.

        >>> s = agnostic.Stream("cpu")
        >>> with agnostic.stream(s):
        ...     y = agnostic.ones(3) * 2
        >>> s.synchronize()
        >>> s.query()
        True
    """

    _by_device_type: dict = {}  # device type -> its Stream class

    def __init_subclass__(cls, device_type=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if device_type is not None:
            Stream._by_device_type[device_type] = cls

    def __new__(cls, device=None, priority=0):
        target = _concrete_device(device)
        return Stream._by_device_type[target.type](target, priority)

    def wait_event(self, event):
        """Make all future work on this stream wait for ``event`` (returns without waiting on a GPU)."""
        event.wait(self)

    def wait_stream(self, stream):
        """Make all future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new one by default) on this stream and return it."""
        if event is None:
            event = Event(self.device)
        event.record(self)
        return event


class CpuStream(Stream, device_type="cpu"):
    """The CPU's stream: work runs synchronously as it is issued, so there is never anything to wait for."""

    device = CPU
    priority = 0

    def __new__(cls, device=None, priority=0):
        return object.__new__(cls)

    @classmethod
    def _current(cls, device):
        return cls()

    def _context(self):
        return contextlib.nullcontext()

    def query(self):
        """Always True: CPU work is complete when its call returns."""
        return True

    def synchronize(self):
        """Nothing to wait for."""

    def __eq__(self, other):
        return isinstance(other, CpuStream)

    def __hash__(self):
        return hash(CPU)

    def __repr__(self):
        return "<agnostic.Stream device=cpu>"


class Event:
    """A marker in a stream: ``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``.

    A CUDA device gives an ``agnostic.cuda.Event`` bound to that device; the CPU gives an event that is complete
    as soon as it is recorded and times with ``time.perf_counter``.

        >>> start, end = agnostic.Event("cpu", enable_timing=True), agnostic.Event("cpu", enable_timing=True)
        >>> start.record()
        >>> y = agnostic.ones(1000).sum()
        >>> end.record()
        >>> end.synchronize()
        >>> start.elapsed_time(end) >= 0, end.query()
        (True, True)
    """

    _by_device_type: dict = {}  # device type -> its Event class

    def __init_subclass__(cls, device_type=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if device_type is not None:
            Event._by_device_type[device_type] = cls

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        target = _concrete_device(device)
        return Event._by_device_type[target.type]._on(target, enable_timing, blocking, interprocess)


class CpuEvent(Event, device_type="cpu"):
    """An event on the CPU: recording it notes the time; it is always complete."""

    device = CPU

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        event = object.__new__(cls)
        event._timing = bool(enable_timing)
        event._recorded_at = None
        return event

    @classmethod
    def _on(cls, device, enable_timing, blocking, interprocess):
        return cls(enable_timing, blocking, interprocess)

    def record(self, stream=None):
        """Note the time (``stream``, if given, must be a CPU stream)."""
        if stream is not None and not stream.device.backend.host:
            raise RuntimeError(f"Event device cpu does not match recording stream's device {stream.device}.")
        self._recorded_at = time.perf_counter()

    def wait(self, stream=None):
        """Nothing to wait for: the work before the record has already run."""

    def query(self):
        """Always True."""
        return True

    def synchronize(self):
        """Nothing to wait for."""

    def elapsed_time(self, end_event):
        """Milliseconds between this event's record and ``end_event``'s (both need ``enable_timing=True``)."""
        if not (self._timing and getattr(end_event, "_timing", False)) or not isinstance(end_event, CpuEvent):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._recorded_at is None or end_event._recorded_at is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        return (end_event._recorded_at - self._recorded_at) * 1000.0

    def ipc_handle(self):
        """CPU events cannot be shared between processes."""
        raise RuntimeError("ipc_handle() is only supported for CUDA events; this event is on the CPU")

    def __repr__(self):
        return "<agnostic.Event device=cpu>"


def current_stream(device=None):
    """The stream work is queued on for ``device`` (default: the current accelerator device, or the CPU).

        >>> agnostic.current_stream("cpu")
        <agnostic.Stream device=cpu>
        >>> agnostic.current_stream("cpu").query()
        True
    """
    target = _concrete_device(device)
    return Stream._by_device_type[target.type]._current(target)


def stream(s):
    """Context manager queueing the work inside on ``s``: ``agnostic.cuda.stream(s)`` for a CUDA stream, nothing
    to do for a CPU stream or ``None``.

        >>> device = agnostic.device("cpu")
        >>> side = agnostic.Stream(device)
        >>> with agnostic.stream(side):
        ...     total = agnostic.arange(4).sum()
        >>> agnostic.current_stream(device).wait_stream(side)
        >>> total
        tensor(6)
    """
    return contextlib.nullcontext() if s is None else s._context()
