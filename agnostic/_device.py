"""Device objects, parsed the way PyTorch parses them, and the per-thread default device and dtype."""

import re
import threading

from ._backends.cpu import BACKEND as _CPU_BACKEND
from ._backends.cuda import CUDABackend

_DEVICE_TYPES = ("cpu", "cuda")
_VALID_FORMS = (
    "valid forms: 'cpu', 'cpu:0', 'cuda', 'cuda:1', device('cuda', 1), an int N for cuda:N, or a Device"
)


class Device:
    """Where a tensor lives: ``device(type='cuda', index=1)``.

    Construct it as ``agnostic.device(...)``: from ``"cpu"``, ``"cuda:1"``, ``("cuda", 1)``, an int (``cuda:N``) or
    another Device. As in PyTorch, ``cuda`` (no index, meaning the current CUDA device) differs from ``cuda:0``.
    Used in a ``with`` block it becomes the default device of the factory functions, per thread.

        >>> agnostic.device("cuda:1"), agnostic.device("cuda", 0), agnostic.device("cpu")
        (device(type='cuda', index=1), device(type='cuda', index=0), device(type='cpu'))
        >>> d = agnostic.device("cuda:1")
        >>> d.type, d.index, d is agnostic.device(1)
        ('cuda', 1, True)
        >>> with agnostic.device("cpu"):
        ...     agnostic.zeros(2).device
        device(type='cpu')
    """

    __slots__ = ("type", "index", "backend", "_str", "__weakref__")
    _interned: dict = {}

    def __new__(cls, type_or_spec=None, index=None, *, type=None):
        if type is not None:
            if type_or_spec is not None:
                raise TypeError("device(): got the device type both positionally and as type=")
            type_or_spec = type
        key = (type_or_spec, index) if builtin_type(type_or_spec) in (str, int) else None
        if key is not None:
            cached = cls._interned.get(key)
            if cached is not None:
                return cached
        device_type, device_index = _parse(type_or_spec, index)
        canonical = cls._interned.get((device_type, device_index))
        if canonical is None:
            canonical = object.__new__(cls)
            object.__setattr__(canonical, "type", device_type)
            object.__setattr__(canonical, "index", device_index)
            # What computing here means (array module, device switching, copies): the only place that looks at
            # the device type to choose one.
            backend = _CPU_BACKEND if device_type == "cpu" else CUDABackend(device_index)
            object.__setattr__(canonical, "backend", backend)
            text = device_type if device_index is None else f"{device_type}:{device_index}"
            object.__setattr__(canonical, "_str", text)
            cls._interned[(device_type, device_index)] = canonical
        if key is not None:
            cls._interned[key] = canonical
        return canonical

    def __setattr__(self, name, value):
        raise AttributeError("Device objects are immutable")

    def __str__(self):
        return self._str

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    # Equality and hashing are identity's (object's own, in C): devices are interned, one object per device.

    def __reduce__(self):
        return (Device, (self.type, self.index))

    def __enter__(self):
        _state().device_stack.append(self)
        return self

    def __exit__(self, *exc_info):
        _state().device_stack.pop()
        return False


device = Device
builtin_type = type
_DEVICE_STRING = re.compile(r"(cpu|cuda)(?::(0|[1-9][0-9]*))?")


def _parse(spec, index):
    if isinstance(spec, Device):
        if index is not None:
            raise RuntimeError(f"device(): got a Device and an index; pass one or the other ({_VALID_FORMS})")
        return spec.type, spec.index
    if isinstance(spec, bool):
        raise TypeError(f"device(): {spec!r} is not a device; {_VALID_FORMS}")
    if isinstance(spec, int):
        if index is not None:
            raise RuntimeError(f"device(): got an int device and an index; {_VALID_FORMS}")
        return "cuda", _check_index(spec, spec)
    if isinstance(spec, tuple) and len(spec) == 2 and index is None:
        return _parse(*spec)
    if not isinstance(spec, str):
        raise TypeError(f"device(): expected a str, int or Device, got {builtin_type(spec).__name__}; {_VALID_FORMS}")
    match = _DEVICE_STRING.fullmatch(spec)
    if match is None:
        known = spec.partition(":")[0]
        problem = "unknown device type" if known not in _DEVICE_TYPES else "invalid device string"
        raise RuntimeError(f"device(): {problem} {spec!r}; {_VALID_FORMS}")
    text, index_text = match.groups()
    if index_text is not None:
        if index is not None:
            raise RuntimeError(f"device(): type {spec!r} already has an index and index={index} was also given")
        index = int(index_text)
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"device(): index must be an int, got {builtin_type(index).__name__}")
        _check_index(index, spec)
    return text, index


def _check_index(index, spec):
    if index < 0:
        raise RuntimeError(f"device(): device index must be non-negative, got {index} in {spec!r}; {_VALID_FORMS}")
    return index


CPU = Device("cpu")


class _ThreadState(threading.local):
    def __init__(self):
        self.device_stack = []


_thread_state = _ThreadState()
_global_default = {"device": CPU}


def _state():
    return _thread_state


def as_device(spec):
    """The Device for ``spec`` (a Device, str, int or None for the default device)."""
    if spec is None:
        return get_default_device()
    if type(spec) is Device:
        return spec
    return Device(spec)


def get_default_device():
    """The device factory functions use when no ``device=`` is given (innermost ``with device(...)`` first).

        >>> agnostic.get_default_device()
        device(type='cpu')
        >>> with agnostic.device("cuda:0"):
        ...     agnostic.get_default_device()
        device(type='cuda', index=0)
    """
    stack = _thread_state.device_stack
    return stack[-1] if stack else _global_default["device"]


def set_default_device(spec):
    """Set the default device of factory functions (``None`` restores the CPU), as ``torch.set_default_device``.

        >>> agnostic.set_default_device("cpu")
        >>> agnostic.ones(1).device
        device(type='cpu')
        >>> agnostic.set_default_device(None)
    """
    _global_default["device"] = CPU if spec is None else Device(spec)
