"""A forked child of a process that had started CUDA cannot use CUDA: say so, and how to fix it.

The child inherits the parent's CUDA state, which the driver does not support after ``fork()``; any CUDA call
would fail with an obscure error or hang. ``os.register_at_fork`` marks such a child: agnostic's CuPy handle is
replaced by one that raises a clear error on any use (``isinstance`` checks against ``cupy.ndarray`` still work).
"""

import os

from ._backends import cupy_loader

FORKED_CUDA_ERROR = (
    "Cannot re-initialize CUDA in forked subprocess: CUDA was initialized in the parent process before it forked. "
    "To use CUDA with multiprocessing, you must use the 'spawn' or 'forkserver' start method: call "
    "agnostic.multiprocessing.set_start_method('spawn') before starting processes (or use "
    "agnostic.multiprocessing.get_context('spawn'))"
)


class _ForkedCupy:
    """Stands for CuPy in a forked child: every use raises FORKED_CUDA_ERROR."""

    def __init__(self, cupy):
        self.ndarray = cupy.ndarray

    def __getattr__(self, name):
        raise RuntimeError(FORKED_CUDA_ERROR)


def _refuse_cuda():
    raise RuntimeError(FORKED_CUDA_ERROR)


def _mark_child():
    state = cupy_loader.state
    if state.initialized and not isinstance(state.cupy, _ForkedCupy):
        state.cupy = _ForkedCupy(state.cupy)
        state.current_device = _refuse_cuda  # the CUDA state keeps CuPy's getDevice itself once CUDA starts


def install():
    """Mark the children forked from now on (at ``import agnostic``; cheap, and CUDA is only checked at a fork)."""
    if hasattr(os, "register_at_fork") and not getattr(install, "done", False):
        os.register_at_fork(after_in_child=_mark_child)
        install.done = True
