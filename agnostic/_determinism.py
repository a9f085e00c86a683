"""``use_deterministic_algorithms``: whether ops must give the same result on every run, as PyTorch's setting.

agnostic's ops are deterministic on the CPU and on CUDA except accumulating scatters on CUDA (``index_add``,
``scatter_add``, ``index_put(accumulate=True)``, and the gradients of indexing, ``gather`` and embeddings), whose
atomic additions of floating-point numbers land in a different order on each run. With the setting on, those raise
(or warn, with ``warn_only``), naming the operation, as PyTorch's ops without a deterministic implementation do.
"""

import warnings

_setting = {"enabled": False, "warn_only": False}


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Require deterministic algorithms (``mode=True``): an operation without one raises a RuntimeError, or warns
    with ``warn_only=True``, as ``torch.use_deterministic_algorithms``.

        >>> agnostic.use_deterministic_algorithms(True)
        >>> agnostic.are_deterministic_algorithms_enabled()
        True
        >>> agnostic.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise RuntimeError(f"use_deterministic_algorithms expects a bool, but got {type(mode).__name__}")
    _setting.update(enabled=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled():
    """Whether ``use_deterministic_algorithms(True)`` is in force.

        >>> agnostic.are_deterministic_algorithms_enabled()
        False
    """
    return _setting["enabled"]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether deterministic mode only warns (``warn_only=True``).

        >>> agnostic.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return _setting["enabled"] and _setting["warn_only"]


def alert_nondeterministic(operation):
    """Called by an operation with no deterministic implementation: raises (or warns) in deterministic mode."""
    if not _setting["enabled"]:
        return
    message = (f"{operation} does not have a deterministic implementation, but you set "
               "'agnostic.use_deterministic_algorithms(True)'. You can turn off determinism just for this operation, "
               "or you can use the 'warn_only=True' option, if that's acceptable for your application.")
    if _setting["warn_only"]:
        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(message)
