"""torch.cuda.set_sync_debug_mode: warn or raise when an op synchronizes with the device."""

from .._backends import sync_debug

__all__ = ["get_sync_debug_mode", "set_sync_debug_mode"]

_MODES = {"default": 0, "warn": 1, "error": 2}


def set_sync_debug_mode(debug_mode):
    """Make operations that wait for a CUDA device (copies to the host, ``.item()``, ``nonzero``...) pass silently
    (``"default"`` or 0), warn (``"warn"`` or 1) or raise (``"error"`` or 2), as PyTorch's, to find hidden
    synchronizations. Not every synchronizing operation is covered, as in PyTorch. Unlike PyTorch, it does not
    start CUDA (the mode is this process's setting, kept on the host).

        >>> agnostic.cuda.set_sync_debug_mode("warn")
        >>> agnostic.cuda.get_sync_debug_mode()
        1
        >>> agnostic.cuda.set_sync_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"set_sync_debug_mode() expects an int (0, 1, 2) or a str ('default', 'warn', 'error'), "
                        f"got {type(debug_mode).__name__}")
    if not 0 <= debug_mode <= 2:
        raise RuntimeError(f"invalid value of debug_mode {debug_mode}, expected one of 0,1,2")
    sync_debug.mode[0] = debug_mode

def get_sync_debug_mode():
    """The current sync debug mode: 0 (default), 1 (warn) or 2 (error).

        >>> agnostic.cuda.get_sync_debug_mode()
        0
    """
    return sync_debug.mode[0]
