"""NVTX ranges and marks for profilers such as Nsight Systems (``agnostic.cuda.nvtx``), over ``cupy.cuda.nvtx``."""

import contextlib
import threading

from .._backends import cupy_loader

__all__ = ["mark", "range", "range_end", "range_pop", "range_push", "range_start"]

_UNSET = object()
_library = _UNSET
_depth = threading.local()  # NVTX's push/pop stack is per thread; CuPy's wrappers do not return its depth


def _nvtx():
    """``cupy.cuda.nvtx`` when CuPy and its NVTX library load, else None.

    NVTX needs no GPU (markers are recorded only while a profiler is attached), so this never initializes CUDA.
    Without the library every function here is a silent no-op returning what it would have, and none ever raises.
    """
    global _library
    if _library is _UNSET:
        try:
            cupy = cupy_loader.import_cupy()
            module = cupy.cuda.nvtx if cupy is not None else None
        except Exception:  # a broken CuPy install must not break code that only annotates
            module = None
        _library = module if getattr(module, "available", False) else None
    return _library


def mark(msg):
    """Mark an instantaneous event named ``msg``.

        >>> agnostic.cuda.nvtx.mark("checkpoint saved")
    """
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.Mark(msg)


def range_push(msg):
    """Open a nested range named ``msg``; returns its zero-based depth.

        >>> agnostic.cuda.nvtx.range_push("forward")
        0
        >>> agnostic.cuda.nvtx.range_push("attention")
        1
        >>> agnostic.cuda.nvtx.range_pop()
        1
        >>> agnostic.cuda.nvtx.range_pop()
        0
    """
    depth = getattr(_depth, "value", 0)
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePush(msg)
    _depth.value = depth + 1
    return depth


def range_pop():
    """Close the innermost range opened by ``range_push``; returns its zero-based depth (-1 if none is open).

        >>> agnostic.cuda.nvtx.range_push("step")
        0
        >>> agnostic.cuda.nvtx.range_pop()
        0
        >>> agnostic.cuda.nvtx.range_pop()
        -1
    """
    depth = getattr(_depth, "value", 0) - 1
    if depth < 0:
        return -1
    nvtx = _nvtx()
    if nvtx is not None:
        nvtx.RangePop()
    _depth.value = depth
    return depth


def range_start(msg):
    """Open a range named ``msg`` that may end on another thread; returns the handle to pass to ``range_end``.

        >>> handle = agnostic.cuda.nvtx.range_start("data loading")
        >>> agnostic.cuda.nvtx.range_end(handle)
    """
    nvtx = _nvtx()
    return 0 if nvtx is None else nvtx.RangeStart(msg, None)


def range_end(range_id):
    """Close the range ``range_start`` returned ``range_id`` for.

        >>> handle = agnostic.cuda.nvtx.range_start("epoch 1")
        >>> agnostic.cuda.nvtx.range_end(handle)
    """
    nvtx = _nvtx()
    if nvtx is not None and range_id:
        nvtx.RangeEnd(range_id)


@contextlib.contextmanager
def range(msg, *args, **kwargs):
    """Context manager and decorator: an NVTX range named ``msg.format(*args, **kwargs)`` around its body.

        >>> with agnostic.cuda.nvtx.range("step {}", 3):
        ...     loss = agnostic.ones(4).sum()
        >>> @agnostic.cuda.nvtx.range("forward")
        ... def forward(x):
        ...     return x * 2
        >>> forward(agnostic.ones(2))
        tensor([2., 2.])
    """
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
