"""agnostic.accelerator: PyTorch's ``torch.accelerator`` (the machine's accelerator, CUDA here) over agnostic.cuda."""

from . import _backend
from ._device import Device
from .cuda import _devices, streams

__all__ = [
    "current_accelerator", "current_device_index", "current_stream", "device_count", "device_index",
    "is_available", "set_device_index", "set_stream", "synchronize",
]


def is_available():
    """True when an accelerator (a usable CUDA GPU) is present; never raises.

        >>> accelerator = agnostic.accelerator.current_accelerator()
        >>> device = accelerator if agnostic.accelerator.is_available() else agnostic.device("cpu")
        >>> agnostic.ones(2, device=device).device.type == device.type
        True
    """
    return _devices.is_available()


def current_accelerator(check_available=False):
    """The accelerator's device type, ``device(type='cuda')`` (no index: see ``current_device_index``), or None on
    a machine without one. ``check_available`` is accepted for PyTorch compatibility: agnostic always checks.

        >>> agnostic.accelerator.current_accelerator() in (None, agnostic.device("cuda"))
        True
        >>> agnostic.accelerator.current_accelerator()  # doctest: +SKIP
        device(type='cuda')
    """
    return Device("cuda") if is_available() else None


def device_count():
    """How many accelerator devices are visible (0 without one).

        >>> agnostic.accelerator.device_count() == agnostic.cuda.device_count()
        True
    """
    return _devices.device_count()


def _require():
    if not is_available():
        reason = _backend.cuda_unavailable_reason()
        raise RuntimeError(f"Cannot access accelerator device when none is available. ({reason})")


def current_device_index():
    """Index of the current accelerator device.

        >>> agnostic.accelerator.current_device_index()  # doctest: +SKIP
        0
    """
    _require()
    return _devices.current_device()


def set_device_index(device, /):
    """Make ``device`` (an int, ``'cuda:N'`` or a Device) the current device; a negative index is a no-op.

        >>> agnostic.accelerator.set_device_index(-1)
        >>> agnostic.accelerator.set_device_index(1)  # doctest: +SKIP
        >>> agnostic.accelerator.current_device_index()  # doctest: +SKIP
        1
    """
    if isinstance(device, int) and device < 0:
        return
    _require()
    _devices.set_device(device)


def current_stream(device=None, /):
    """The current stream of ``device`` (default: the current device).

        >>> agnostic.accelerator.current_stream()  # doctest: +SKIP
        <agnostic.cuda.Stream device=cuda:0 cuda_stream=0x0>
    """
    _require()
    return streams.current_stream(device)


def set_stream(stream):
    """Make ``stream`` current; its device becomes the current device.

        >>> s = agnostic.Stream("cuda:0")  # doctest: +SKIP
        >>> agnostic.accelerator.set_stream(s)  # doctest: +SKIP
        >>> agnostic.accelerator.current_stream() == s  # doctest: +SKIP
        True
    """
    _require()
    streams.set_stream(stream)


def synchronize(device=None, /):
    """Wait for all work on ``device`` (default: the current device); a no-op while CUDA is not initialized.

        >>> x = agnostic.ones(4096, 4096, device="cuda")  # doctest: +SKIP
        >>> y = x @ x  # doctest: +SKIP
        >>> agnostic.accelerator.synchronize()  # doctest: +SKIP
    """
    _require()
    if _devices.is_initialized():
        _devices.synchronize(device)


class device_index:
    """Context manager making device ``device`` (an int) current inside it; ``None`` switches nothing.

        >>> with agnostic.accelerator.device_index(None):
        ...     agnostic.ones(1).device
        device(type='cpu')
        >>> with agnostic.accelerator.device_index(1):  # doctest: +SKIP
        ...     agnostic.accelerator.current_device_index()
        1
    """

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            if self.prev_idx != self.idx:
                set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx != self.idx:
            set_device_index(self.prev_idx)
        return False
