"""PyTorch's older functions over autocast's state (``torch.set_autocast_enabled``, ``get_autocast_gpu_dtype``,
``autocast_increment_nesting``...), kept for programs written against them; ``agnostic.autocast`` is the way in."""

import threading
import warnings

from . import _autocast, _dtypes


def _deprecated(old, new):
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.", DeprecationWarning, stacklevel=3)


class _AutocastSettings(threading.local):
    """This thread's autocast nesting count, as PyTorch keeps it."""

    def __init__(self):
        self.nesting = 0
        self.opened = False  # whether set_autocast_enabled counts this thread in OPEN_REGIONS


_settings = _AutocastSettings()
_regions_lock = threading.Lock()


def _check_device_type(device_type):
    if device_type not in _autocast.DEFAULT_DTYPES:
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}': agnostic autocasts "
                           "on 'cuda' and 'cpu'")


def _set_enabled(device_type, enabled):
    _check_device_type(device_type)
    state = _autocast.STATE
    regions = dict(state.enabled)
    if enabled:
        regions[device_type] = _autocast.configured_dtype(device_type)
    else:
        regions.pop(device_type, None)
    state.enabled = regions
    # Wrapped ops look at autocast's state only while some region is open: count this thread as one while it
    # has autocast on through these functions.
    with _regions_lock:
        if regions and not _settings.opened:
            _autocast.OPEN_REGIONS[0] += 1
            _settings.opened = True
        elif not regions and _settings.opened:
            _autocast.OPEN_REGIONS[0] -= 1
            _settings.opened = False


def _set_dtype(device_type, dtype):
    _check_device_type(device_type)
    dtype = _dtypes.as_dtype(dtype)
    _autocast.STATE.configured[device_type] = dtype
    state = _autocast.STATE
    if device_type in state.enabled:
        state.enabled = {**state.enabled, device_type: dtype}


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for ``device_type`` in this thread, outside any ``with autocast`` block, as
    ``torch.set_autocast_enabled`` (``set_autocast_enabled(enabled)`` alone means CUDA, as PyTorch's older form).

        >>> agnostic.set_autocast_enabled("cpu", True)
        >>> agnostic.is_autocast_enabled("cpu")
        True
        >>> agnostic.set_autocast_enabled("cpu", False)
    """
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _set_enabled(device_type, bool(enabled))


def set_autocast_cpu_enabled(enabled):
    """Deprecated ``set_autocast_enabled("cpu", enabled)``, as ``torch.set_autocast_cpu_enabled``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.set_autocast_cpu_enabled(False)
    """
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    _set_enabled("cpu", bool(enabled))


def is_autocast_cpu_enabled():
    """Deprecated ``is_autocast_enabled("cpu")``, as ``torch.is_autocast_cpu_enabled``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.is_autocast_cpu_enabled()
        False
    """
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return "cpu" in _autocast.STATE.enabled


def set_autocast_dtype(device_type, dtype):
    """The dtype autocast uses for ``device_type`` in this thread (now, if it is on, and when it is next turned on
    by ``set_autocast_enabled``), as ``torch.set_autocast_dtype``.

        >>> agnostic.set_autocast_dtype("cpu", agnostic.float16)
        >>> agnostic.get_autocast_dtype("cpu")
        agnostic.float16
        >>> agnostic.set_autocast_dtype("cpu", agnostic.bfloat16)
    """
    _set_dtype(device_type, dtype)


def get_autocast_cpu_dtype():
    """Deprecated ``get_autocast_dtype("cpu")``, as ``torch.get_autocast_cpu_dtype``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.get_autocast_cpu_dtype()
        agnostic.bfloat16
    """
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return _autocast.configured_dtype("cpu")


def get_autocast_gpu_dtype():
    """Deprecated ``get_autocast_dtype("cuda")``, as ``torch.get_autocast_gpu_dtype``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.get_autocast_gpu_dtype()
        agnostic.float16
    """
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return _autocast.configured_dtype("cuda")


def set_autocast_cpu_dtype(dtype):
    """Deprecated ``set_autocast_dtype("cpu", dtype)``, as ``torch.set_autocast_cpu_dtype``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.set_autocast_cpu_dtype(agnostic.bfloat16)
    """
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    _set_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype):
    """Deprecated ``set_autocast_dtype("cuda", dtype)``, as ``torch.set_autocast_gpu_dtype``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.set_autocast_gpu_dtype(agnostic.float16)
    """
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    _set_dtype("cuda", dtype)


def autocast_increment_nesting():
    """Count one more autocast region entered in this thread; returns the count, as
    ``torch.autocast_increment_nesting`` (``torch.autocast`` calls it on entry).

        >>> agnostic.autocast_increment_nesting(), agnostic.autocast_decrement_nesting()
        (1, 0)
    """
    _settings.nesting += 1
    return _settings.nesting


def autocast_decrement_nesting():
    """Count one autocast region left in this thread; returns the count (at 0, the caller clears the cache with
    ``clear_autocast_cache``), as ``torch.autocast_decrement_nesting``.

        >>> agnostic.autocast_increment_nesting(), agnostic.autocast_decrement_nesting()
        (1, 0)
    """
    _settings.nesting -= 1
    return _settings.nesting


def clear_autocast_cache():
    """Drop this thread's autocast casts of leaf tensors (weights), as ``torch.clear_autocast_cache``.

        >>> agnostic.clear_autocast_cache()
    """
    _autocast.STATE.cache.clear()


def is_autocast_cache_enabled():
    """Whether autocast keeps its casts of leaf tensors for reuse in this thread, as
    ``torch.is_autocast_cache_enabled``.

        >>> agnostic.is_autocast_cache_enabled()
        True
    """
    return _autocast.STATE.cache_enabled


def set_autocast_cache_enabled(enabled):
    """Keep (or not) autocast's casts of leaf tensors for reuse in this thread, as
    ``torch.set_autocast_cache_enabled``.

        >>> agnostic.set_autocast_cache_enabled(False)
        >>> agnostic.is_autocast_cache_enabled()
        False
        >>> agnostic.set_autocast_cache_enabled(True)
    """
    _autocast.STATE.cache_enabled = bool(enabled)


__all__ = [
    "set_autocast_enabled", "set_autocast_cpu_enabled", "is_autocast_cpu_enabled", "set_autocast_dtype",
    "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_cpu_dtype", "set_autocast_gpu_dtype",
    "autocast_increment_nesting", "autocast_decrement_nesting", "clear_autocast_cache", "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
]
