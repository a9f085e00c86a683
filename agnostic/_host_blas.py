"""NumPy's bundled OpenBLAS, called directly: ``y += a * x`` and ``matrix += row`` on large arrays, and the task
dispatcher of its threads for ``_host_kernels`` (their count is set through threadpoolctl: ``agnostic._threads``).

A NumPy ufunc runs on one core. OpenBLAS spreads axpy (``y += a x``) and ger (``A += x y^T``) over its threads, the
very threads NumPy's matmul keeps awake during a training step, so the bias add and the optimizers' updates of large
float32/float64 arrays go through them. The library is found the way threadpoolctl finds it (NumPy's config names
it, its file lies beside NumPy); where NumPy links another BLAS, or the file or its symbols are missing, every call
here returns False (or None) and the caller uses ufuncs. Results equal the ufuncs' up to the rounding of a fused
multiply-add.
"""

import ctypes
import glob
import os
import threading

import numpy

MIN_ELEMENTS = 1 << 15  # below this, the ufunc is as fast (measured on 2 and 16 cores)
_ROW_MAJOR = 101
_CTYPES = {numpy.dtype(numpy.float32): ctypes.c_float, numpy.dtype(numpy.float64): ctypes.c_double}
_LETTERS = {numpy.dtype(numpy.float32): "s", numpy.dtype(numpy.float64): "d"}

_routines = None  # dtype -> (axpy, ger); {} when unavailable; None until looked up
_dispatcher = ()  # addresses of OpenBLAS's level-1 task dispatcher and of its thread-count getter, or ()
_ones: dict = {}  # dtype -> a vector of ones, as long as the most rows seen
_lock = threading.Lock()


def axpy(alpha, x, y):
    """``y += alpha * x`` through BLAS when it applies (same dtype, float32/float64, C-contiguous, large, no
    overlap, ``alpha`` nonzero: BLAS skips the work for 0, ufuncs would still spread inf and nan); False when not
    done."""
    routines = _usable(y, alpha)
    if routines is None or type(x) is not numpy.ndarray or x.dtype != y.dtype or x.size != y.size \
            or not x.flags.c_contiguous or (x is not y and numpy.may_share_memory(x, y)):
        return False
    c_type = _CTYPES[y.dtype]
    routines[0](y.size, c_type(alpha), x.ctypes.data, 1, y.ctypes.data, 1)
    return True


def add_row(array, row):
    """``array += row`` (``row`` added along the last axis of a C-contiguous array) through BLAS's rank-one update,
    when it applies; False when not done. Exact: each element gets ``1 * 1 * row[j]`` added."""
    routines = _usable(array, 1)
    if routines is None or type(row) is not numpy.ndarray or row.dtype != array.dtype \
            or row.shape != array.shape[-1:] or not row.flags.c_contiguous or numpy.may_share_memory(row, array):
        return False
    columns = array.shape[-1]
    rows = array.size // columns
    routines[1](_ROW_MAJOR, rows, columns, _CTYPES[array.dtype](1), ones(rows, array.dtype).ctypes.data, 1,
                row.ctypes.data, 1, array.ctypes.data, columns)
    return True


def ones(count, dtype):
    """A read-only-by-convention float vector of ``count`` ones (shared; callers must not write to it)."""
    vector = _ones.get(dtype)
    if vector is None or len(vector) < count:
        vector = _ones[dtype] = numpy.ones(max(count, 1), dtype)
    return vector[:count]


def thread_dispatcher():
    """``(dispatcher, thread_count)``: the addresses of OpenBLAS's ``blas_level1_thread_with_return_value`` (which
    splits a task across its threads) and of its thread-count getter, for ``_host_kernels``; () where unavailable."""
    if _routines is None:
        _load()
    return _dispatcher


def _usable(y, alpha):
    """The routines for ``y``'s dtype when ``y`` is a large, writeable, C-contiguous float array and ``alpha`` is
    nonzero; else None."""
    if type(y) is not numpy.ndarray or y.size < MIN_ELEMENTS or alpha == 0 or not y.flags.c_contiguous \
            or not y.flags.writeable:
        return None
    routines = _routines if _routines is not None else _load()
    return routines.get(y.dtype)


def _load():
    """Look the library up (once); returns the routines by dtype."""
    global _routines, _dispatcher
    with _lock:
        if _routines is None:
            routines, _dispatcher = _find_library()
            _routines = routines  # last: a thread that sees it set sees the others too
    return _routines


def _find_library():
    """``(routines by dtype, dispatcher addresses)``, or ``({}, ())``."""
    try:
        blas = numpy.__config__.CONFIG["Build Dependencies"]["blas"]
    except (AttributeError, KeyError, TypeError):
        return {}, ()
    if blas.get("name") != "scipy-openblas":
        return {}, ()
    package = os.path.dirname(numpy.__file__)
    files = [path for folder in (os.path.join(os.path.dirname(package), "numpy.libs"), os.path.join(package, ".dylibs"))
             for path in sorted(glob.glob(os.path.join(folder, "*scipy_openblas*")))]
    for path in files:
        try:
            library = ctypes.CDLL(path)  # already loaded by NumPy: the same copy, and its threads
        except OSError:
            continue
        for suffix, integer in (("64_", ctypes.c_int64), ("", ctypes.c_int)):  # ILP64 wheels, then LP64 ones
            try:
                routines = {dtype: _bind(library, letter, suffix, integer, _CTYPES[dtype])
                            for dtype, letter in _LETTERS.items()}
                get_threads = getattr(library, f"scipy_openblas_get_num_threads{suffix}")
            except AttributeError:
                continue
            dispatcher = getattr(library, "blas_level1_thread_with_return_value", None)
            addresses = () if dispatcher is None else tuple(
                ctypes.cast(function, ctypes.c_void_p).value for function in (dispatcher, get_threads))
            return routines, addresses
    return {}, ()


def _bind(library, letter, suffix, integer, scalar):
    pointer = ctypes.c_void_p
    axpy = getattr(library, f"scipy_cblas_{letter}axpy{suffix}")
    axpy.argtypes = [integer, scalar, pointer, integer, pointer, integer]
    axpy.restype = None
    ger = getattr(library, f"scipy_cblas_{letter}ger{suffix}")
    ger.argtypes = [ctypes.c_int, integer, integer, scalar, pointer, integer, pointer, integer, pointer, integer]
    ger.restype = None
    return axpy, ger
