"""agnostic.cuda.profiler: start and stop the CUDA profiler (Nsight), as torch.cuda.profiler."""

import contextlib

from ._errors import check_error, cudart

__all__ = ["init", "profile", "start", "stop"]


def init(output_file=None, flags=None, output_mode="key_value"):
    """Older PyTorch's ``cudaProfilerInitialize`` wrapper. CUDA 12 removed that call (agnostic's CuPy needs CUDA 12
    or later), so this raises as PyTorch does on CUDA 12: start collection with ``start()`` or ``profile()``.

        >>> agnostic.cuda.profiler.init("trace.prof")
        Traceback (most recent call last):
        ...
        AssertionError: CUDA12+ does not need profiler initialization! Use start() and stop(), or profile()
    """
    raise AssertionError("CUDA12+ does not need profiler initialization! Use start() and stop(), or profile()")


def start():
    """Start the profiler's data collection (for ``nsys profile --capture-range=cudaProfilerApi``); raises
    ``CudaError`` when CUDA refuses.

        >>> agnostic.cuda.profiler.start()  # doctest: +SKIP
        >>> y = agnostic.ones(1024, device="cuda") * 2  # doctest: +SKIP
        >>> agnostic.cuda.profiler.stop()  # doctest: +SKIP
    """
    check_error(cudart().cudaProfilerStart())


def stop():
    """Stop the profiler's data collection; raises ``CudaError`` when CUDA refuses.

        >>> agnostic.cuda.profiler.stop()  # doctest: +SKIP
    """
    check_error(cudart().cudaProfilerStop())


@contextlib.contextmanager
def profile():
    """Collect profiler data inside the ``with`` block (``start()`` on entry, ``stop()`` on exit, even on error).

        >>> with agnostic.cuda.profiler.profile():  # doctest: +SKIP
        ...     y = agnostic.ones(1024, device="cuda") * 2
    """
    try:
        start()
        yield
    finally:
        stop()
