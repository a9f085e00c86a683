"""The sync debug mode's state (``agnostic.cuda.set_sync_debug_mode``) and its check, which the CUDA backend calls
where the host waits for a device."""

import warnings

mode = [0]  # 0: silent, 1: warn, 2: raise


def check_synchronizing(what):
    """Called by an operation about to make the host wait for a CUDA device (``what`` names it, e.g.
    ``"copy from cuda to cpu"``): warns (``UserWarning``) or raises ``RuntimeError`` as the sync debug mode says.

        >>> from agnostic._backends.sync_debug import check_synchronizing
        >>> check_synchronizing("item()")
        >>> agnostic.cuda.set_sync_debug_mode("error")
        >>> check_synchronizing("item()")
        Traceback (most recent call last):
        ...
        RuntimeError: called a synchronizing CUDA operation: item()
        >>> agnostic.cuda.set_sync_debug_mode("default")
    """
    if mode[0] == 0:
        return
    message = f"called a synchronizing CUDA operation: {what}"
    if mode[0] == 1:
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(message)
