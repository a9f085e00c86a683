"""The CUDA implementations of agnostic's fused operations, on CuPy arrays with their device current: each a
kernel or two from ``cuda_kernels``, where CuPy's generic functions would launch many or cost more host time. The
namesakes of ``cpu_ops``' functions, same arguments and results; the ops reach them as ``device.backend.ops``.
"""

import numpy

from .. import _conversion
from ..ops import _division
from . import cuda_kernels
from .cupy_loader import require_cupy
from .special import library_function

MULTI_TENSOR_KERNELS = True  # optimizers update every contiguous parameter of a dtype in one launch
_ROWS_PER_BLOCK = 8  # one warp per row
_WARPS = 32  # of the one block that takes up to _ONE_BLOCK_ROWS rows
_ONE_BLOCK_ROWS = 16384
_TOTAL_THREADS = cuda_kernels.CROSS_ENTROPY_TOTAL_THREADS  # the adding kernel's: its shared arrays fit them


def add_row(array, row):
    """``array += row`` in place, ``row`` added along the last axis (a linear layer's bias)."""
    array += row


def multi_tensor_apply(kernel_name, dtype, blocks, threads, arguments):
    """Launch the multi-tensor kernel ``kernel_name`` for parameters of ``dtype``: ``blocks`` blocks of ``threads``,
    the first argument being the device copy of its pointer table (see ``optim._fused``)."""
    cuda_kernels.kernel(kernel_name, dtype)((blocks,), (threads,), arguments)


def erf(array):
    """erf of a floating array, in its dtype (``cupyx.scipy.special.erf``; float16 computed in float32)."""
    import cupyx.scipy.special

    compute = array.astype(numpy.float32) if array.dtype == numpy.float16 else array
    return cupyx.scipy.special.erf(compute).astype(array.dtype, copy=False)


def relu_gradient(grad, input):
    """``grad where input > 0 else 0`` of two arrays of one float dtype and shape: one kernel."""
    return cuda_kernels.kernel("agnostic_relu_gradient")(input, grad)


def kept_or_zero(mask, array):
    """``where(mask, array, 0)`` of an integer or float array."""
    return require_cupy().where(mask, array, array.dtype.type(0))


def column_sums(array):
    """``array.sum(0)`` of a 2-D, C-contiguous float32/float64 array: one small kernel (CuPy's generic reduction
    costs several times more host time per call); each column is summed in a fixed order."""
    cupy = require_cupy()
    n_rows, n_cols = array.shape
    out = cupy.empty(n_cols, array.dtype)
    if n_cols:
        cuda_kernels.kernel("agnostic_column_sums", array.dtype)(
            ((n_cols + 31) // 32,), (32, 32), (array, out, numpy.int64(n_rows), numpy.int64(n_cols)))
    return out


def cross_entropy_forward(logits, labels, ignore_index, mean):
    """CuPy, on the current device: the same, from one kernel (two for many rows) and one read-back."""
    cupy = require_cupy()
    rows, classes = logits.shape
    logits = cupy.ascontiguousarray(logits)
    labels = cupy.ascontiguousarray(labels)
    log_sum_exp = cupy.empty(rows, logits.dtype)
    totals = cupy.empty(3, logits.dtype)  # the loss, the kept count, whether any label is out of bounds
    shape = (numpy.int64(rows), numpy.int64(classes), numpy.int64(ignore_index))
    if rows <= _ONE_BLOCK_ROWS:
        cuda_kernels.kernel("agnostic_cross_entropy_block", logits.dtype)(
            (1,), (32 * _WARPS,), (logits, labels) + shape + (numpy.int32(mean), log_sum_exp, totals))
    else:
        losses = cupy.empty(rows, logits.dtype)
        flags = cupy.empty(rows, numpy.int32)
        blocks = (rows + _ROWS_PER_BLOCK - 1) // _ROWS_PER_BLOCK
        cuda_kernels.kernel("agnostic_cross_entropy_rows", logits.dtype)(
            (blocks,), (32 * _ROWS_PER_BLOCK,), (logits, labels) + shape + (log_sum_exp, losses, flags))
        cuda_kernels.kernel("agnostic_cross_entropy_total", logits.dtype)(
            (1,), (_TOTAL_THREADS,), (losses, flags, numpy.int64(rows), numpy.int32(mean), totals))
    bad = bool(totals[2].get())  # the one read-back: PyTorch's target check
    return totals[0], log_sum_exp, totals[1], bad


def cross_entropy_backward(logits, labels, log_sum_exp, count, scale, ignore_index, mean):
    """The gradient ``(softmax(logits) - one_hot(labels)) * scale`` (divided by ``count`` for ``mean``), rows of
    ignored labels zero: one kernel."""
    return cuda_kernels.kernel("agnostic_cross_entropy_backward")(
        logits, labels[:, None], log_sum_exp[:, None], scale, count, logits.shape[1], ignore_index, int(mean))


_KERNEL_SOURCES = frozenset(numpy.dtype(name) for name in ("float16", "float32", "float64"))


def convert(array, dtype):
    """``array`` as NumPy dtype ``dtype``, as PyTorch converts it (``agnostic._conversion``): one kernel where
    CuPy's astype differs (the formula for bfloat16), CuPy's astype elsewhere."""
    kind = _conversion.kind(array.dtype, dtype)
    if kind == "float_to_integer" and array.dtype in _KERNEL_SOURCES:
        return cuda_kernels.kernel("agnostic_float_to_integer", dtype)(array)
    if kind == "float64_to_float16":
        return cuda_kernels.kernel("agnostic_float64_to_float16")(array)
    return _conversion.convert(require_cupy(), array, dtype)


def _one_kernel(name):
    """A ``_division`` function on CuPy arrays: its one kernel (``cuda_kernels``, the formula's bits in one pass)
    for the dtypes it is declared for, the formula itself for the others (bfloat16)."""
    kernel_name = f"agnostic_{name}"
    declared = frozenset(dtype for kernel, dtype in cuda_kernels.declared_kernels() if kernel == kernel_name)
    formula = getattr(_division, name)

    def compute(a, b):
        dtype = a.dtype
        if dtype in declared:
            return cuda_kernels.kernel(kernel_name, dtype)(a, b)
        return formula(require_cupy(), a, b)
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = f"PyTorch's {name} of two arrays (or an array and a NumPy scalar) of one dtype (``_division``)."
    return compute


floor_divide = _one_kernel("floor_divide")
remainder = _one_kernel("remainder")
fmod = _one_kernel("fmod")
trunc_divide = _one_kernel("trunc_divide")
complex_divide = _one_kernel("complex_divide")


def linalg(name, *arrays, **kwargs):
    """``cupy.linalg.<name>(*arrays, **kwargs)``, raising ``numpy.linalg.LinAlgError`` as NumPy does (CuPy ignores
    a singular or non positive-definite matrix unless asked to check); ``eig``/``eigvals``, where this CuPy lacks
    them, run on the host (NumPy's LAPACK) and come back."""
    cupy = require_cupy()
    import cupyx

    function = getattr(cupy.linalg, name, None)
    if function is None:
        host = getattr(numpy.linalg, name)(*[cupy.asnumpy(array) for array in arrays], **kwargs)
        return tuple(cupy.asarray(part) for part in host) if isinstance(host, tuple) else cupy.asarray(host)
    if name not in _CHECKED_LINALG:  # singular input is a valid answer there (det 0, slogdet sign 0)
        return function(*arrays, **kwargs)
    with cupyx.errstate(linalg="raise"):
        return function(*arrays, **kwargs)


_CHECKED_LINALG = frozenset(("inv", "solve", "cholesky"))


def _cupyx_special():
    import cupyx.scipy.special

    return cupyx.scipy.special


def special_function(name, adjust=None):
    """``f(*arguments)``: CuPy's ``cupyx.scipy.special.<name>`` of CuPy arrays, in the first array's dtype (see
    ``special.library_function``; CuPy is imported on the first call)."""
    return library_function(_cupyx_special, require_cupy, name, adjust)


# The dtypes cupyx's atomic scatter_max/scatter_min take (CuPy's ``_scatter_op``); others are mapped onto them.
_ATOMIC_EXTREMES = frozenset(numpy.dtype(name) for name in ("int32", "uint32", "uint64", "float32", "float64"))
_SIGN_BIT = numpy.uint64(1 << 63)


def _scatter_extreme(name, target, positions, values):
    """``positions``: a tuple of integer arrays broadcasting with ``values``."""
    cupy = require_cupy()
    import cupyx

    scatter = getattr(cupyx, name)
    values = values.astype(target.dtype)
    floating = target.dtype.kind == "f"
    was_nan = cupy.isnan(target) if floating else None
    if target.dtype in _ATOMIC_EXTREMES:
        scatter(target, positions, values)
    elif target.dtype == numpy.int64:
        # Flipping the sign bit maps int64 onto uint64 in the same order.
        shifted = target.view(numpy.uint64) ^ _SIGN_BIT
        scatter(shifted, positions, values.view(numpy.uint64) ^ _SIGN_BIT)
        target[...] = (shifted ^ _SIGN_BIT).view(numpy.int64)
    else:  # float16 in float32; bool and the 8- and 16-bit integers in int32: exact
        wide = numpy.float32 if target.dtype.kind == "f" else numpy.int32
        widened = target.astype(wide)
        scatter(widened, positions, values.astype(wide))
        target[...] = widened.astype(target.dtype)
    if floating:
        # PyTorch's amax/amin propagate NaN; the atomic compare-and-swap doesn't promise to.
        target[was_nan] = numpy.nan
        nan = cupy.isnan(values)
        *spread, nan = cupy.broadcast_arrays(*positions, nan)
        target[tuple(position[nan] for position in spread)] = numpy.nan


def scatter_maximum(target, positions, values):
    """``target[positions] = maximum(target[positions], values)`` in place, every repeated position taken into
    account (``cupyx.scatter_max``, atomic)."""
    _scatter_extreme("scatter_max", target, positions, values)


def scatter_minimum(target, positions, values):
    """``target[positions] = minimum(target[positions], values)`` in place, every repeated position taken into
    account (``cupyx.scatter_min``, atomic)."""
    _scatter_extreme("scatter_min", target, positions, values)
