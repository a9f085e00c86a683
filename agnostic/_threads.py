"""``set_num_threads`` / ``get_num_threads``: the threads of CPU ops, as in PyTorch. On the CPU there are two pools:
BLAS's (matmul), which ``threadpoolctl`` finds and sets in whatever BLAS the loaded libraries use (OpenBLAS, MKL,
BLIS), NumPy's included; and numba's, for the multi-core elementwise kernels (``_backends.cpu_kernels``). NumPy's
own ufuncs run on one."""

import numbers
import os
import warnings

from threadpoolctl import ThreadpoolController

from ._backends import cpu_kernels

_requested = None  # the count asked for, where no BLAS could be told


def _blas_pools():
    # Looked up on each call (a fraction of a millisecond): libraries loaded since, as PyTorch's, count too.
    return ThreadpoolController().select(user_api="blas")


def get_num_threads():
    """The number of threads CPU ops use: BLAS's (matmul), and the multi-core elementwise kernels' (set together by
    ``set_num_threads``).

        >>> agnostic.get_num_threads() >= 1
        True
    """
    counts = [pool["num_threads"] for pool in _blas_pools().info()]
    return max(counts) if counts else _requested or os.cpu_count() or 1


def set_num_threads(count):
    """Use ``count`` threads for CPU ops: BLAS's, in every BLAS library loaded (and in SciPy's, when numba's kernels
    or a linear-algebra op load it later), and the multi-core elementwise kernels' (for the calling thread, as
    OpenMP's and PyTorch's count). ``set_num_threads(1)`` in each of several processes keeps them from competing for
    the cores, as PyTorch's DataLoader workers do (agnostic's use one thread each). Where no BLAS library is found,
    this warns that only ``OMP_NUM_THREADS`` (set before Python starts) can change BLAS's.

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
    cpu_kernels.set_num_threads(count)
    pools = _blas_pools()
    if pools.info():
        pools.limit(limits=count)
        return
    global _requested
    _requested = count
    warnings.warn("set_num_threads: found no BLAS library whose threads can be set from Python; set OMP_NUM_THREADS "
                  "(or OPENBLAS_NUM_THREADS / MKL_NUM_THREADS) before starting Python instead", RuntimeWarning,
                  stacklevel=2)
