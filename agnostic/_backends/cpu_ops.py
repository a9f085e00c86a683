"""The CPU's own implementations of agnostic's fused operations, on NumPy arrays: each function here has a
namesake in ``cuda_ops`` with the same arguments and results, and the ops reach them as ``device.backend.ops``.

>>> import numpy
>>> from agnostic._backends import cpu_ops
>>> cpu_ops.column_sums(numpy.ones((3, 2), numpy.float32))
array([3., 3.], dtype=float32)
"""

import numpy

from .. import _conversion
from ..ops import _division
from . import cpu_kernels
from .special import erf_numpy, library_function

MULTI_TENSOR_KERNELS = False  # no one-launch update of many tensors: optimizers update each host tensor in turn
_BLOCK = 1 << 16  # elements per relu_gradient block
_ONES: dict = {}  # dtype -> the vector of ones column_sums multiplies by
_FEW_CLASSES = 32  # with at most this many classes and at least _MANY_ROWS rows, reduce column by column
_MANY_ROWS = 256


def add_row(array, row):
    """``array += row`` in place, ``row`` added along the last axis (a linear layer's bias)."""
    if not cpu_kernels.add_row(array, row):
        array += row


def erf(array):
    """erf of a floating array, in its dtype (fdlibm's, computed in float64)."""
    return erf_numpy(array)


def relu_gradient(grad, input):
    """``grad where input > 0 else 0`` of two arrays of one float dtype and shape: the multi-core kernel
    (``cpu_kernels``), else bit masking, a cache-sized block at a time (``numpy.where`` is several times slower on a
    mask as unpredictable as a ReLU's)."""
    out = cpu_kernels.relu_gradient(grad, input)
    if out is not None:
        return out
    out = numpy.empty(grad.shape, grad.dtype)
    integers = numpy.dtype(f"i{grad.dtype.itemsize}")
    if input.size <= _BLOCK:
        _masked_bits(input, grad.view(integers), out.view(integers))
        return out
    # A block at a time, so that the mask is still in cache when it is applied.
    positive, grad_bits, out_bits = input.reshape(-1), grad.reshape(-1).view(integers), out.reshape(-1).view(integers)
    for start in range(0, positive.size, _BLOCK):
        stop = start + _BLOCK
        _masked_bits(positive[start:stop], grad_bits[start:stop], out_bits[start:stop])
    return out


def _masked_bits(positive, grad_bits, out_bits):
    """``out_bits = grad_bits where positive > 0 else 0``: -1 (all bits set) where the input is positive, 0
    elsewhere, then those bits of the gradient."""
    numpy.subtract(0, numpy.greater(positive, 0), out=out_bits, dtype=out_bits.dtype)
    numpy.bitwise_and(out_bits, grad_bits, out=out_bits)


def kept_or_zero(mask, array):
    """``where(mask, array, 0)`` of an integer or float array, by masking bits: exact, and several times faster than
    ``numpy.where`` when the mask is unpredictable (a ReLU's gradient)."""
    integers = numpy.dtype(f"i{array.dtype.itemsize}")
    return (array.view(integers) & -mask.astype(integers)).view(array.dtype)


def column_sums(array):
    """``array.sum(0)`` of a 2-D, C-contiguous float32/float64 array: ``ones @ rows``, since BLAS's
    matrix-vector product runs on its threads where NumPy's sum takes one core."""
    return numpy.matmul(_ones(array.shape[0], array.dtype), array)


def _ones(count, dtype):
    """A vector of ``count`` ones, shared (read only): sliced from the longest made so far."""
    vector = _ONES.get(dtype)
    if vector is None or len(vector) < count:
        vector = _ONES[dtype] = numpy.ones(max(count, 1), dtype)
        vector.flags.writeable = False
    return vector[:count]


def cross_entropy_forward(logits, labels, ignore_index, mean):
    """NumPy: ``(result, log_sum_exp per row, kept count, any bad label)`` (ufunc reductions called directly: the
    array methods cost several microseconds more each, and this runs every training step)."""
    rows, classes = logits.shape
    lowest, highest = numpy.minimum.reduce(labels), numpy.maximum.reduce(labels)
    every_row = 0 <= lowest and highest < classes and not lowest <= ignore_index <= highest
    if every_row:  # the common case: all labels valid, none ignored
        safe, kept = labels, None
    else:
        kept = labels != ignore_index
        safe = numpy.where(kept, labels, 0)
        if numpy.minimum.reduce(safe) < 0 or numpy.maximum.reduce(safe) >= classes:
            return None, None, None, True
    high = _across_row(numpy.maximum, logits)
    shifted = numpy.subtract(logits, high[:, None])
    log_sum_exp = high + numpy.log(_across_row(numpy.add, numpy.exp(shifted, out=shifted)))
    losses = log_sum_exp - logits[numpy.arange(rows), safe]
    if kept is None:
        count = logits.dtype.type(rows)
    else:
        losses = numpy.where(kept, losses, 0)
        count = numpy.add.reduce(kept, dtype=logits.dtype)
    total = numpy.add.reduce(losses, dtype=logits.dtype)
    return numpy.asarray(total / count if mean else total, logits.dtype), log_sum_exp, count, False


def _across_row(ufunc, array):
    """``ufunc.reduce(array, axis=1)``; for a few classes, a column at a time: NumPy reduces a short inner axis ten
    times slower than it combines whole columns."""
    rows, classes = array.shape
    if classes > _FEW_CLASSES or rows < _MANY_ROWS:
        return ufunc.reduce(array, axis=1)
    result = array[:, 0].copy()
    for column in range(1, classes):
        ufunc(result, array[:, column], out=result)
    return result


def cross_entropy_backward(logits, labels, log_sum_exp, count, scale, ignore_index, mean):
    """The gradient ``(softmax(logits) - one_hot(labels)) * scale`` (divided by ``count`` for ``mean``), rows of
    ignored labels zero."""
    gradient = numpy.subtract(logits, log_sum_exp[:, None])
    numpy.exp(gradient, out=gradient)
    weight = scale / count if mean else scale
    if count == len(labels):  # no row ignored
        gradient[numpy.arange(len(labels)), labels] -= 1
        gradient *= weight
    else:
        kept = labels != ignore_index
        gradient[numpy.arange(len(labels)), numpy.where(kept, labels, 0)] -= 1
        gradient *= (kept * weight)[:, None]
    return gradient


def convert(array, dtype):
    """``array`` as NumPy dtype ``dtype``, as PyTorch converts it (``agnostic._conversion``): a float array whose
    values are all inside the range of the intermediate integer goes through it by two casts that are exact on every
    machine; others take the formula."""
    if _conversion.kind(array.dtype, dtype) == "float_to_integer" and array.size:
        wide, low, high = _conversion.integer_range(dtype)
        if low <= array.min() and array.max() < high:  # False for NaN
            return array.astype(wide).astype(dtype, copy=False)
    return _conversion.convert(numpy, array, dtype)


def _numpy_where_identical(name):
    """A ``_division`` function on NumPy arrays: NumPy's own ufunc for the dtypes where it gives the same bits
    (``_division.NUMPY_EQUIVALENTS``; faster), the formula for the others."""
    ufunc = getattr(numpy, name, None)
    formula = getattr(_division, name)
    identical = frozenset(numpy.dtype(dtype) for dtype in _division.NUMPY_EQUIVALENTS.get(name, ()))

    def compute(a, b):
        return ufunc(a, b) if a.dtype in identical else formula(numpy, a, b)
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = f"PyTorch's {name} of two arrays (or an array and a NumPy scalar) of one dtype (``_division``)."
    return compute


floor_divide = _numpy_where_identical("floor_divide")
remainder = _numpy_where_identical("remainder")
fmod = _numpy_where_identical("fmod")
trunc_divide = _numpy_where_identical("trunc_divide")
complex_divide = _numpy_where_identical("complex_divide")


def linalg(name, *arrays, **kwargs):
    """``numpy.linalg.<name>(*arrays, **kwargs)``, which raises ``numpy.linalg.LinAlgError`` for a singular matrix
    (``inv``, ``solve``) or one that is not positive-definite (``cholesky``); the same in ``cuda_ops``."""
    return getattr(numpy.linalg, name)(*arrays, **kwargs)


def _scipy_special():
    import scipy.special

    return scipy.special


def special_function(name, adjust=None):
    """``f(*arguments)``: SciPy's ``scipy.special.<name>`` of NumPy arrays, in the first array's dtype (see
    ``special.library_function``; SciPy is imported on the first call)."""
    return library_function(_scipy_special, lambda: numpy, name, adjust)


def scatter_maximum(target, positions, values):
    """``target[positions] = maximum(target[positions], values)`` in place, every repeated position taken into
    account (a NaN wins, as in PyTorch's ``scatter_reduce(reduce="amax")``)."""
    numpy.maximum.at(target, positions, values)


def scatter_minimum(target, positions, values):
    """``target[positions] = minimum(target[positions], values)`` in place, every repeated position taken into
    account (a NaN wins)."""
    numpy.minimum.at(target, positions, values)
