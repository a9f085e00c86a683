"""Reductions (sum, mean, max with indices, var/std, norm, cumsum...) with PyTorch's dtypes and ``dim``/``keepdim``.

Half-precision inputs accumulate in float32, as PyTorch does, so CPU and CUDA agree.
"""

import builtins
import math
from collections import namedtuple

import numpy

from .. import _backend, _dtypes
from .._device import CPU
from .._tensor import Tensor, _normalize_dim, wrap
from ._dispatch import call, finish, operand_array
from .elementwise import maximum, minimum

_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)
_HALF = (_dtypes.float16, _dtypes.bfloat16)



def _return_type(name):
    """A (values, indices) named tuple printed as PyTorch's ``torch.return_types.<name>``."""
    base = namedtuple(name, ["values", "indices"])
    base.__repr__ = lambda self: (f"agnostic.return_types.{name}(\nvalues={self.values!r},\n"
                                  f"indices={self.indices!r})")
    return base


max_result, min_result = _return_type("max"), _return_type("min")


def _axes(dim, ndim):
    """``dim`` (None, an int, or a sequence) as a backend ``axis`` argument."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return None
    if isinstance(dim, (tuple, list)):
        axes = tuple(_normalize_dim(d, ndim) for d in dim)
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {list(dim)} appears multiple times in the list of dims")
        return axes if ndim else None
    axis = _normalize_dim(dim, ndim)  # a 0-dim tensor accepts dim 0 and -1 only, as in PyTorch
    return axis if ndim else None


def _reduced(axes, ndim):
    """The dims an ``axes`` from ``_axes`` reduces, as a tuple."""
    return tuple(range(ndim)) if axes is None else axes if isinstance(axes, tuple) else (axes,)


def _require_tensor(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, got {type(input).__name__}")


def _accumulating(name, input, dim, keepdim, dtype, backend_name):
    _require_tensor(input, name)
    result = _dtypes.as_dtype(dtype) or (_dtypes.int64 if input.dtype.category <= _INTEGER else input.dtype)
    accumulate = _dtypes.float32 if result in _HALF else result
    array = operand_array(input, accumulate, input._device)
    xp = _backend.namespace(input._device)
    out = call(input._device, getattr(xp, backend_name), array, axis=_axes(dim, array.ndim), keepdims=keepdim)
    return finish(out, result, input._device)


_KEEPS_DTYPE = frozenset(numpy.dtype(n) for n in ("float32", "float64", "complex64", "complex128", "int64"))


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (all elements by default); integer and bool inputs sum as int64."""
    if dim is None and dtype is None and type(input) is Tensor and input._data.dtype in _KEEPS_DTYPE:
        return _whole_reduction(input, "sum", keepdim)
    return _accumulating("sum", input, dim, keepdim, dtype, "sum")


def _whole_reduction(input, method_name, keepdim):
    """Short path for reducing every element when the backend's result dtype already is PyTorch's."""
    device = input._device
    array = input._data
    if device is CPU:
        return wrap(numpy.asarray(getattr(array, method_name)(keepdims=keepdim)), CPU)
    with _backend.on(device):
        return wrap(getattr(array, method_name)(keepdims=keepdim), device)


def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim``; integer and bool inputs multiply as int64."""
    return _accumulating("prod", input, dim, keepdim, dtype, "prod")


def _floating_input(name, input, dtype):
    _require_tensor(input, name)
    result = _dtypes.as_dtype(dtype) or input.dtype
    if result.category < _FLOATING:
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {result.name}; convert with .float() or pass dtype=agnostic.float32"
        )
    accumulate = _dtypes.float32 if result in _HALF else result
    return result, operand_array(input, accumulate, input._device)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim``; needs a floating or complex input (or ``dtype=``), as in PyTorch."""
    result, array = _floating_input("mean", input, dtype)
    xp = _backend.namespace(input._device)
    with numpy.errstate(invalid="ignore", divide="ignore"):
        out = call(input._device, xp.mean, array, axis=_axes(dim, array.ndim), keepdims=keepdim)
    return finish(out, result, input._device)


def _var_arguments(dim, unbiased, keepdim, correction):
    if isinstance(dim, type(True)):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError("var(): pass either unbiased or correction, not both")
        correction = 1 if unbiased else 0
    return dim, keepdim, 1 if correction is None else correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default); NaN when too few elements, as PyTorch."""
    dim, keepdim, correction = _var_arguments(dim, unbiased, keepdim, correction)
    result, array = _floating_input("var", input, None)
    device = input._device
    axes = _axes(dim, array.ndim)
    with _backend.on(device), numpy.errstate(invalid="ignore", divide="ignore"):
        count = math.prod(array.shape[a] for a in _reduced(axes, array.ndim))
        deviations = array - array.mean(axis=axes, keepdims=True)
        squared = (deviations * deviations.conj()).real if result.is_complex else deviations * deviations
        total = squared.sum(axis=axes, keepdims=keepdim)
        out = total / builtins.max(count - correction, 0)
        if count <= correction:  # x / 0: inf where values differ, also when their tiny squares underflow (PyTorch)
            spread = (deviations != 0).any(axis=axes, keepdims=keepdim)
            out = _backend.namespace(device).where((total == 0) & spread, numpy.inf, out).astype(out.dtype)
    return finish(out, result.to_real(), device)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of ``var`` with the same arguments."""
    variance = var(input, dim, unbiased, keepdim, correction=correction)
    xp = _backend.namespace(input._device)
    return finish(call(input._device, xp.sqrt, variance._data), variance.dtype, input._device)


def _ordered_input(name, input):
    _require_tensor(input, name)
    if input.dtype.is_complex:
        raise RuntimeError(f"{name}(): not implemented for complex tensors: complex numbers have no order")


def _check_nonempty(name, input, dim):
    if input._data.size == 0:
        if dim is None:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument.")
        axis = _normalize_dim(dim, input._data.ndim)
        if input._data.shape[axis] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")


def _extreme(name, backend_name, arg_name, elementwise, input, dim, keepdim):
    values_indices = max_result if name == "max" else min_result
    if isinstance(dim, Tensor):
        return elementwise(input, dim)
    _ordered_input(name, input)
    _check_nonempty(name, input, dim)
    device = input._device
    xp = _backend.namespace(device)
    array = input._data
    if dim is None:
        return _whole_reduction(input, backend_name, False)
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return values_indices(input.clone(), finish(call(device, xp.zeros, (), numpy.int64), _dtypes.int64, device))
    with _backend.on(device):
        values = getattr(xp, backend_name)(array, axis=axis, keepdims=keepdim)
        indices = getattr(xp, arg_name)(array, axis=axis, keepdims=keepdim)
    return values_indices(finish(values, input.dtype, device), finish(indices, _dtypes.int64, device))


def max(input, dim=None, keepdim=False):
    """Largest element; with ``dim``, a ``(values, indices)`` pair; with a Tensor, the elementwise maximum."""
    return _extreme("max", "max", "argmax", maximum, input, dim, keepdim)


def min(input, dim=None, keepdim=False):
    """Smallest element; with ``dim``, a ``(values, indices)`` pair; with a Tensor, the elementwise minimum."""
    return _extreme("min", "min", "argmin", minimum, input, dim, keepdim)


def _extreme_values(name, backend_name, input, dim, keepdim):
    _ordered_input(name, input)
    axes = _axes(dim, input._data.ndim)
    if input._data.size == 0:
        _check_nonempty(name, input, None if axes is None or isinstance(axes, tuple) else axes)
    xp = _backend.namespace(input._device)
    out = call(input._device, getattr(xp, backend_name), input._data, axis=axes, keepdims=keepdim)
    return finish(out, input.dtype, input._device)


def amax(input, dim=(), keepdim=False):
    """Largest values over ``dim`` (all dims by default), without indices."""
    return _extreme_values("amax", "max", input, dim, keepdim)


def amin(input, dim=(), keepdim=False):
    """Smallest values over ``dim`` (all dims by default), without indices."""
    return _extreme_values("amin", "min", input, dim, keepdim)


def _arg_extreme(name, backend_name, input, dim, keepdim):
    _require_tensor(input, name)
    if input._data.size == 0 and dim is None:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
    _check_nonempty(name, input, dim)
    _ordered_input(name, input)
    if input.dtype is _dtypes.bool:
        raise NotImplementedError(f'"{name}" is not implemented for bool tensors; convert with .int() first')
    device = input._device
    xp = _backend.namespace(device)
    array = input._data
    if dim is None:
        out = call(device, getattr(xp, backend_name), array.reshape(-1) if array.ndim else array.reshape(1))
        if keepdim:
            out = out.reshape((1,) * array.ndim)
        return finish(out, _dtypes.int64, device)
    if array.ndim == 0:
        _normalize_dim(dim, 0)
        return finish(call(device, xp.zeros, (), numpy.int64), _dtypes.int64, device)
    axis = _normalize_dim(dim, array.ndim)
    out = call(device, getattr(xp, backend_name), array, axis=axis, keepdims=keepdim)
    return finish(out, _dtypes.int64, device)


def argmax(input, dim=None, keepdim=False):
    """Index of the largest element (of the flattened tensor when ``dim`` is None); the first one on ties."""
    return _arg_extreme("argmax", "argmax", input, dim, keepdim)


def argmin(input, dim=None, keepdim=False):
    """Index of the smallest element (of the flattened tensor when ``dim`` is None); the first one on ties."""
    return _arg_extreme("argmin", "argmin", input, dim, keepdim)


def _logical_reduction(name, input, dim, keepdim):
    _require_tensor(input, name)
    xp = _backend.namespace(input._device)
    out = call(input._device, getattr(xp, name), input._data, axis=_axes(dim, input._data.ndim), keepdims=keepdim)
    return finish(out, _dtypes.uint8 if input.dtype is _dtypes.uint8 else _dtypes.bool, input._device)


def all(input, dim=None, keepdim=False):
    """True where every element over ``dim`` is nonzero."""
    return _logical_reduction("all", input, dim, keepdim)


def any(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero."""
    return _logical_reduction("any", input, dim, keepdim)


def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim``."""
    return sum(input.ne(0), dim)


def _cumulative(name, backend_name, input, dim, dtype):
    _require_tensor(input, name)
    result = _dtypes.as_dtype(dtype) or (_dtypes.int64 if input.dtype.category <= _INTEGER else input.dtype)
    accumulate = _dtypes.float32 if result in _HALF else result
    array = operand_array(input, accumulate, input._device)
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return finish(call(input._device, array.copy), result, input._device)
    xp = _backend.namespace(input._device)
    return finish(call(input._device, getattr(xp, backend_name), array, axis=axis), result, input._device)


def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``; integer and bool inputs accumulate as int64."""
    return _cumulative("cumsum", "cumsum", input, dim, dtype)


def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``; integer and bool inputs accumulate as int64."""
    return _cumulative("cumprod", "cumprod", input, dim, dtype)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over ``dim`` (all elements by default): ``p`` in 'fro', 2, 1, inf, -inf, 0 or any float."""
    result, array = _floating_input("norm", input, dtype)
    device = input._device
    xp = _backend.namespace(device)
    axes = _axes(dim, array.ndim)
    if p in (math.inf, -math.inf) and builtins.any(array.shape[a] == 0 for a in _reduced(axes, array.ndim)):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation "
                           "does not have an identity")
    with _backend.on(device), numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
        magnitude = xp.abs(array)
        if p in ("fro", 2, 2.0):
            out = xp.sqrt((magnitude * magnitude).sum(axis=axes, keepdims=keepdim))
        elif p == math.inf:
            out = magnitude.max(axis=axes, keepdims=keepdim)
        elif p == -math.inf:
            out = magnitude.min(axis=axes, keepdims=keepdim)
        elif p == 0:
            out = (magnitude != 0).sum(axis=axes, keepdims=keepdim)
        elif p == 1:
            out = magnitude.sum(axis=axes, keepdims=keepdim)
        elif isinstance(p, (int, float)):
            out = (magnitude ** p).sum(axis=axes, keepdims=keepdim) ** (1.0 / p)
        else:
            raise ValueError(f"norm(): unsupported p={p!r}; use 'fro', a number, inf or -inf")
    return finish(out, result.to_real(), device)


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, computed stably."""
    result, array = _floating_input("logsumexp", input, None)
    device = input._device
    xp = _backend.namespace(device)
    axes = _axes(dim, array.ndim)
    with _backend.on(device), numpy.errstate(invalid="ignore", over="ignore"):
        peak = array.max(axis=axes, keepdims=True) if array.size else xp.zeros((1,) * array.ndim, array.dtype)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        out = xp.log(xp.exp(array - peak).sum(axis=axes, keepdims=True)) + peak
        if not keepdim:
            reduced = _reduced(axes, array.ndim)
            out = out.reshape([n for i, n in enumerate(out.shape) if i not in reduced])
    return finish(out, result, device)
