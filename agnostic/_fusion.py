"""``agnostic.fuse``: a function of elementwise ops compiled into one kernel on CUDA, as ``cupy.fuse``.

The function is traced once per signature of its arguments (each tensor's dtype, device and whether it has
dimensions; each number's Python type): its ops are recorded with the dtypes PyTorch's promotion gives them
(``ops._tracing``). On CUDA the recorded ops, each the CuPy function the eager op calls, become one kernel through
CuPy's own fusion (``cupy.fuse``); on the CPU they run back to back on NumPy arrays, without agnostic's per-op
dispatch. Calls that need gradients run the function eagerly (fused kernels record no autograd graph), and so do
functions that can't be fused (after one warning saying why).
"""

import functools
import re
import warnings

import numpy

from ._tensor import TensorBase, wrap
from .autograd.tracking import needs_grad
from .ops._dispatch import check_same_device
from .ops._registry import _DECLARED, Elementwise
from .ops._tracing import NotFusable, Trace

_NUMBER_TYPES = (bool, int, float, complex)
_elementwise: dict = {}  # every elementwise op by each of its names, once the first function is traced


def fuse(function=None, *, kernel_name=None):
    """``function`` (of tensors and Python numbers, made of elementwise ops) fused into one kernel on CUDA, as
    ``cupy.fuse``; usable as ``@agnostic.fuse`` or ``@agnostic.fuse(kernel_name=...)``. It returns what
    ``function`` returns (a tensor or a tuple of them), with the same dtypes and values: each op is the one the
    eager function calls, in the same dtypes (on CUDA the compiler may contract a multiply and an add into one
    fused multiply-add, rounded once: a last-bit difference, as in PyTorch's compiled kernels). Operators, agnostic's elementwise functions (``agnostic.exp``,
    ``sigmoid``, ``maximum``...) and their methods, and casts (``.to(dtype)``, ``.float()``) can be fused; tensors
    must come in as arguments, on one device. Calls that need a gradient run eagerly.

        >>> @agnostic.fuse
        ... def gelu_tanh(x):
        ...     return 0.5 * x * (1 + agnostic.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
        >>> gelu_tanh(agnostic.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.1588,  0.0000,  1.9546])
    """
    if function is None:
        return functools.partial(fuse, kernel_name=kernel_name)
    compiled = {}  # signature -> the fused callable, or None where the function can't be fused
    warned = []

    @functools.wraps(function)
    def fused(*args):
        tensors = [a for a in args if isinstance(a, TensorBase)]
        if not tensors or needs_grad(tensors) or not all(
                isinstance(a, TensorBase) or type(a) in _NUMBER_TYPES for a in args):
            return function(*args)
        device = check_same_device(*tensors)
        key = (device, tuple((a.dtype, a.dim() > 0) if isinstance(a, TensorBase) else type(a) for a in args))
        run = compiled.get(key, 0)
        if run == 0:
            run = compiled[key] = _compiled(function, args, device, kernel_name, warned)
            if run is not None:
                try:  # the first call compiles the kernel (CUDA): a failure there falls back as well
                    return run(args)
                except Exception as error:  # the compiler's error, whatever its type
                    compiled[key] = None
                    _warn_once(warned, function, f"the fused kernel did not compile ({error})", stacklevel=3)
        if run is None:
            return function(*args)
        return run(args)

    return fused


def _warn_once(warned, function, why, stacklevel=4):
    """The warning that ``function`` runs unfused, and why (the first time only); ``stacklevel`` names the user's
    call."""
    if not warned:
        warned.append(True)
        warnings.warn(f"agnostic.fuse runs {function.__name__} unfused: {why}", stacklevel=stacklevel)


def _compiled(function, args, device, kernel_name, warned):
    """The callable running ``function``'s trace for arguments like ``args`` on ``device``, or None (with one
    warning) where it can't be fused."""
    if not _elementwise:
        _elementwise.update((name, op) for op in _DECLARED if isinstance(op, Elementwise)
                            for name in (op.name, *op.aliases))
    trace = Trace(_elementwise)
    try:
        traced = function(*(trace.argument(a) for a in args))
        single = not isinstance(traced, tuple)
        outputs = (traced,) if single else traced
        if not outputs or not all(getattr(o, "trace", None) is trace for o in outputs):
            raise NotFusable("a fused function returns what its elementwise ops compute (a tensor or a tuple)")
        backend = device.backend
        functions = [None if op is None else op.backend_function(device, compute)
                     for op, _, _, compute, _ in trace.nodes]
        kernel = backend.ops.fuse(trace, functions, outputs, _identifier(kernel_name or function.__name__))
    except NotFusable as error:
        _warn_once(warned, function, str(error))
        return None

    def run(values):
        arrays = [v._data if isinstance(v, TensorBase) else numpy.asarray(v)[()] for v in values]
        with backend.activate():
            results = kernel(*arrays)
        results = results if isinstance(results, tuple) else (results,)
        wrapped = tuple(wrap(array, device) for array in results)
        return wrapped[0] if single else wrapped

    return run


def _identifier(name):
    """``name`` as a C identifier, for the kernel's name (a lambda's ``<lambda>`` becomes ``_lambda_``)."""
    name = re.sub(r"\W", "_", name)
    return name if name[:1].isalpha() or name[:1] == "_" else f"fused_{name}"


__all__ = ["fuse"]
