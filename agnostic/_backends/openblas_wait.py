"""OpenBLAS's idle threads poll for about 0.1 ms instead of 0.1 s, where agnostic loads NumPy (and so its OpenBLAS).

After each matrix product, OpenBLAS's threads (NumPy's wheels use its pthreads build) keep polling for more work for
``2 ** OPENBLAS_THREAD_TIMEOUT`` processor cycles, 2 ** 28 by default: about 0.1 s, in which they hold every core.
A training step alternates matrix products with the multi-core elementwise kernels (``cpu_kernels``), whose threads
then share each core with a polling one: on a 16-core host a softmax right after a product took 1.9 ms instead of
0.45 ms, and a Transformer layer's training step 54 ms instead of 26 to 30 ms. ``OPENBLAS_THREAD_TIMEOUT``, which
OpenBLAS reads once, when it loads, sets that wait (log2 of the cycles, 4 to 30). agnostic sets 18 (about 0.1 ms):
the Transformer step is as fast as with the shortest wait (4), and a product that follows soon after the last, as
in an LSTM's time steps, still finds the threads awake (with the shortest wait, a 2-core LSTM step took 78 ms
instead of 70).

So, where NumPy isn't imported yet and the environment doesn't set the variable, ``import agnostic`` sets it while
it imports NumPy, then removes it (child processes don't inherit it). Where NumPy was imported first, its OpenBLAS
keeps its default: set ``OPENBLAS_THREAD_TIMEOUT=18`` in the environment, or import agnostic before NumPy. PyTorch's
CPU ops don't use OpenBLAS, so a process that runs both is unaffected on PyTorch's side. ``AGNOSTIC_OPENBLAS_TUNING=0``
in the environment leaves OpenBLAS's default.
"""

import os
import sys

SHORT_WAIT = "18"  # log2 of the cycles OpenBLAS's threads poll before sleeping (about 0.1 ms)
VARIABLE = "OPENBLAS_THREAD_TIMEOUT"

shortened = False  # whether agnostic set the variable when NumPy loaded


def shorten_while_numpy_loads():
    """Set ``OPENBLAS_THREAD_TIMEOUT`` for NumPy's OpenBLAS, where NumPy isn't loaded yet and the user hasn't set
    it; call ``loaded()`` once NumPy is imported."""
    global shortened
    if "numpy" in sys.modules or VARIABLE in os.environ or os.environ.get("AGNOSTIC_OPENBLAS_TUNING") == "0":
        return
    os.environ[VARIABLE] = SHORT_WAIT
    shortened = True


def loaded():
    """NumPy (and its OpenBLAS, which has read the variable) is loaded: remove the variable if agnostic set it."""
    if shortened and os.environ.get(VARIABLE) == SHORT_WAIT:
        del os.environ[VARIABLE]
