"""ReLU, its gradient and Adam's update on CPU arrays, in C (``_host_kernels.c``) on OpenBLAS's threads, as
PyTorch runs them on its matrix products' threads.

NumPy's ufuncs run on one core and one operation per pass, which made a CPU training step's ReLU passes cost as
much as its matrix products, and Adam's update a dozen passes. The C file is built when agnostic is installed
(``pip install``) and loaded through ctypes on first use; it splits a task across the threads of NumPy's bundled
OpenBLAS (``_host_blas.thread_dispatcher``) or, with another BLAS, runs it in the calling thread. Where it was not
built (no C compiler), or the arrays are strided or not float32/float64 (or small, for ReLU), every function here
returns False and the caller uses NumPy. Results are NumPy's: ReLU's a comparison and a choice per element, Adam's
the same operations in the same order and dtype.
"""

import ctypes
import importlib.util
import os
import threading

import numpy

from . import _host_blas

MIN_ELEMENTS = 1 << 15  # ReLU below this: one NumPy call is as fast as a C call
_DOUBLE = {numpy.dtype(numpy.float32): 0, numpy.dtype(numpy.float64): 1}
_ADAM_SCALARS = ("weight_decay", "decay", "one_minus_beta1", "beta1_complement", "beta2", "one_minus_beta2",
                 "bias_correction2_sqrt", "eps", "neg_step_size")  # the order of the C enum adam_scalar
_ADAM_FLAGS = {"maximize": 1, "decoupled": 2, "amsgrad": 4}  # the C enum adam_flag

_library = None  # the loaded library; False when unavailable; None until looked up
_lock = threading.Lock()


def relu(input, out):
    """``out = max(input, 0)`` (nan stays nan, as NumPy's ``maximum``); False when not done here."""
    library = _usable(out, input)
    if library is None:
        return False
    library.agnostic_relu(_DOUBLE[out.dtype], input.ctypes.data, out.ctypes.data, out.size)
    return True


def relu_gradient(grad, input, out):
    """``out = grad where input > 0 else 0``; False when not done here."""
    library = _usable(out, input, grad)
    if library is None:
        return False
    library.agnostic_relu_gradient(_DOUBLE[out.dtype], grad.ctypes.data, input.ctypes.data, out.ctypes.data,
                                   out.size)
    return True


def adam(arrays, s):
    """One Adam step in place, as ``optim._fused._adam_host`` computes it: ``arrays`` are (param, grad, exp_avg,
    exp_avg_sq, max_exp_avg_sq or None), ``s`` its scalars and flags; False when not done here."""
    param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq = arrays
    written = (param, exp_avg, exp_avg_sq) if max_exp_avg_sq is None else (param, exp_avg, exp_avg_sq, max_exp_avg_sq)
    library = _usable(param, *written[1:], grad, minimum=1)
    every = written + (grad,)
    if library is None or not all(a.flags.writeable for a in written) \
            or any(numpy.may_share_memory(a, b) for i, a in enumerate(every) for b in every[i + 1:]):
        return False
    scalars = (ctypes.c_double * len(_ADAM_SCALARS))(*(float(getattr(s, name)) for name in _ADAM_SCALARS))
    flags = sum(bit for name, bit in _ADAM_FLAGS.items() if getattr(s, name))
    library.agnostic_adam(_DOUBLE[param.dtype], param.ctypes.data, grad.ctypes.data, exp_avg.ctypes.data,
                          exp_avg_sq.ctypes.data, None if max_exp_avg_sq is None else max_exp_avg_sq.ctypes.data,
                          param.size, scalars, flags)
    return True


def available():
    """Whether the compiled kernels are there."""
    return bool(_load())


def uses_threads():
    """Whether large tasks are split across OpenBLAS's threads (known once one was: the dispatcher is checked on
    first use)."""
    library = _load()
    return bool(library) and bool(library.agnostic_uses_threads())


def _usable(out, *inputs, minimum=MIN_ELEMENTS):
    """The library when ``out`` and ``inputs`` are C-contiguous, aligned arrays of one float dtype and shape, of
    ``minimum`` elements or more, ``out`` writeable and each input either ``out`` itself or apart from it; else
    None (inputs that are written too must be writeable: the caller checks)."""
    if type(out) is not numpy.ndarray or out.size < minimum or out.dtype not in _DOUBLE \
            or not (out.flags.c_contiguous and out.flags.aligned and out.flags.writeable):
        return None
    for array in inputs:
        if type(array) is not numpy.ndarray or array.dtype != out.dtype or array.shape != out.shape \
                or not (array.flags.c_contiguous and array.flags.aligned):
            return None
        if array.ctypes.data != out.ctypes.data and numpy.may_share_memory(array, out):
            return None  # a partial overlap: the threads' chunks would race
    return _library or _load() or None


def _load():
    """Load the library once and hand it OpenBLAS's dispatcher; False when it is not built."""
    global _library
    if _library is None:
        with _lock:
            if _library is None:
                _library = _open()
    return _library


def _cpu_count():
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _open():
    spec = importlib.util.find_spec("agnostic._host_kernels_c")
    if spec is None or not spec.origin:
        return False
    try:
        library = ctypes.CDLL(spec.origin)
    except OSError:
        return False
    pointer, count = ctypes.c_void_p, ctypes.c_int64
    library.agnostic_relu.argtypes = [ctypes.c_int, pointer, pointer, count]
    library.agnostic_relu_gradient.argtypes = [ctypes.c_int, pointer, pointer, pointer, count]
    library.agnostic_adam.argtypes = [ctypes.c_int, pointer, pointer, pointer, pointer, pointer, count,
                                      ctypes.POINTER(ctypes.c_double), ctypes.c_int]
    library.agnostic_use_blas_threads.argtypes = [pointer, pointer, ctypes.c_int]
    library.agnostic_uses_threads.restype = ctypes.c_int
    for function in (library.agnostic_relu, library.agnostic_relu_gradient, library.agnostic_adam,
                     library.agnostic_use_blas_threads):
        function.restype = None
    library.agnostic_use_blas_threads(*(_host_blas.thread_dispatcher() or (None, None)), _cpu_count())
    return library
