"""``set_num_threads`` / ``get_num_threads``: the threads of CPU ops, as in PyTorch. On the CPU they are BLAS's:
matmul, the bias adds and optimizer updates that go through it, and the ReLU and Adam kernels that run on its threads
(``_host_kernels``); NumPy's ufuncs run on one."""

import numbers
import os
import warnings

from . import _host_blas

_requested = None  # the count asked for, where BLAS could not be told


def get_num_threads():
    """The number of threads CPU ops use: NumPy's BLAS threads (matmul, the bias adds and optimizer updates that go
    through BLAS, and the ReLU and Adam kernels, which run on BLAS's threads); other ufuncs run on one thread.

        >>> agnostic.get_num_threads() >= 1
        True
    """
    count = _host_blas.blas_threads()
    if count is not None:
        return count
    return _requested or os.cpu_count() or 1


def set_num_threads(count):
    """Use ``count`` threads for CPU ops (BLAS's): ``set_num_threads(1)`` in each of several processes keeps them
    from competing for the cores, as PyTorch's DataLoader workers do (agnostic's use one thread each). Where
    NumPy's BLAS is not the OpenBLAS its wheels bundle, this warns that only ``OMP_NUM_THREADS`` (set before Python
    starts) can change it.

        >>> previous = agnostic.get_num_threads()
        >>> agnostic.set_num_threads(1)
        >>> agnostic.get_num_threads()
        1
        >>> agnostic.set_num_threads(previous)
    """
    if isinstance(count, bool) or not isinstance(count, numbers.Integral):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(count).__name__}")
    count = int(count)
    if count < 1:
        raise RuntimeError("set_num_threads expects a positive integer")
    global _requested
    if _host_blas.set_blas_threads(count):
        return
    _requested = count
    warnings.warn("set_num_threads: NumPy's BLAS is not the OpenBLAS its wheels bundle, so its thread count can't "
                  "be changed from Python; set OMP_NUM_THREADS (or OPENBLAS_NUM_THREADS / MKL_NUM_THREADS) before "
                  "starting Python instead", RuntimeWarning, stacklevel=2)
