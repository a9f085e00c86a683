"""Reductions (sum, mean, max with indices, var/std, norm, cumsum...) with PyTorch's dtypes and ``dim``/``keepdim``,
each declared once with its gradient.

Half-precision inputs accumulate in float32, as PyTorch does, so CPU and CUDA agree.
"""

import builtins
import math
from collections import namedtuple

import numpy

from .. import _autocast, _dtypes
from .._tensor import TensorBase, _check_writable, _normalize_dim
from ._dispatch import check_tensor, finish, operand_array, write_result
from ._registry import composite, in_place_of, public_names, tensor_method
from .creation import arange, ones, zeros_like
from .elementwise import maximum, minimum, where
from .shape import cat

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


# ----- gradient helpers -------------------------------------------------------------------------------------------
def _reduced_dims(input, dim):
    """The dims a reduction over ``dim`` removes (every dim for None or ``()``), as non-negative indices."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(input.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(d % input.ndim for d in dims) if input.ndim else ()


def _count(input, dim):
    """How many elements a reduction over ``dim`` takes in for each result element."""
    return math.prod(input.shape[d] for d in _reduced_dims(input, dim)) if input.ndim else 1


def _expand_back(grad, input, dim, keepdim):
    """A reduction's output (or its gradient) over ``dim`` broadcast back to ``input``'s shape."""
    if not keepdim:
        for d in sorted(_reduced_dims(input, dim)):
            grad = grad.unsqueeze(d)
    return grad.expand(input.shape)


def _evenly_to_extremes(grad, input, extremes, dim, keepdim):
    """The gradient of an amax/amin, shared evenly between tied extreme elements, as PyTorch does."""
    mask = (input == _expand_back(extremes, input, dim, keepdim)).to(grad.dtype)
    count = _expand_back(mask.sum(dim=_reduced_dims(input, dim), keepdim=keepdim), input, dim, keepdim)
    return _expand_back(grad, input, dim, keepdim) * mask / count


def _accumulating(name, input, dim, keepdim, dtype, backend_name):
    check_tensor(name, input)
    result = _dtypes.as_dtype(dtype) or (_dtypes.int64 if input.dtype.category <= _INTEGER else input.dtype)
    if result in _HALF and dtype is None and _autocast.runs_in_float32(name, input):
        result = _dtypes.float32  # autocast's float32 list, decided here so that sum's fast path pays nothing
    accumulate = _dtypes.float32 if result in _HALF else result
    array = operand_array(input, accumulate, input._device)
    xp = input._device.backend.xp
    out = input._device.backend.run(getattr(xp, backend_name), array, axis=_axes(dim, array.ndim), keepdims=keepdim)
    return finish(out, result, input._device)


_KEEPS_DTYPE = frozenset(numpy.dtype(n) for n in ("float32", "float64", "complex64", "complex128", "int64"))
_KEEPS_FLOATING = _KEEPS_DTYPE - {numpy.dtype(numpy.int64)}  # the dtypes whose mean PyTorch computes in them
# Real dtypes (bfloat16 aside: its NumPy dtype comes from ml_dtypes, imported on first use) keep their dtype in max/min.
_ORDERED = frozenset(numpy_dtype for numpy_dtype, dtype in _dtypes._BY_NUMPY.items() if not dtype.is_complex)


@composite(out="cast", shape_only=True, device_guard=False, gradients={
    "input": lambda grad, input, dim, keepdim: _expand_back(grad, input, dim, keepdim)})
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` (all elements by default); integer and bool inputs sum as int64.

        >>> agnostic.tensor([[1, 2], [3, 4]]).sum(0)
        tensor([4, 6])
    """
    if dim is None and dtype is None and type(input) is TensorBase.plain and input._data.dtype in _KEEPS_DTYPE:
        return _whole_reduction(input, "sum", keepdim)
    return _accumulating("sum", input, dim, keepdim, dtype, "sum")


_new_tensor = object.__new__


def _whole_reduction(input, name, keepdim):
    """Short path for reducing every element (of a nonempty tensor, for a mean, max or min) when the backend's result
    dtype already is PyTorch's: the backend's ``whole_reduction``, wrapped."""
    device = input._device
    backend = device.backend
    reduce = backend.ops.whole_reduction
    if backend.host or backend.is_current():
        array = reduce(input._data, name, keepdim)
    else:
        array = backend.run(reduce, input._data, name, keepdim)
    tensor = _new_tensor(TensorBase.plain)
    tensor._data = array
    tensor._device = device
    return tensor


def _product_of_others(input, axis):
    """For each element, the product of the others along ``axis`` (exact with zeros: exclusive cumprods)."""
    if input.ndim == 0:
        return ones(input.shape, dtype=input.dtype, device=input.device)
    ones_shape = list(input.shape)
    ones_shape[axis] = 1
    unit = ones(ones_shape, dtype=input.dtype, device=input.device)
    length = input.shape[axis]
    if length == 1:
        return unit
    before = cat([unit, cumprod(input.narrow(axis, 0, length - 1), axis)], axis)
    after = cat([unit, cumprod(input.flip(axis).narrow(axis, 0, length - 1), axis)], axis)
    return before * after.flip(axis)


def _prod_gradient(grad, input, dim, keepdim):
    if dim is None:
        return _product_of_others(input.reshape(-1), 0).reshape(input.shape) * grad
    return _expand_back(grad, input, dim, keepdim) * _product_of_others(input, dim % input.ndim if input.ndim else 0)


@composite(out="cast", gradients={"input": _prod_gradient})
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product over ``dim``; integer and bool inputs multiply as int64.

        >>> agnostic.tensor([[1, 2], [3, 4]]).prod(1)
        tensor([ 2, 12])
    """
    return _accumulating("prod", input, dim, keepdim, dtype, "prod")


def _floating_input(name, input, dtype):
    check_tensor(name, input)
    result = _dtypes.as_dtype(dtype) or input.dtype
    if result.category < _FLOATING:
        raise RuntimeError(
            f"{name}(): could not infer output dtype. Input dtype must be either a floating point or complex "
            f"dtype. Got: {result.name}; convert with .float() or pass dtype=agnostic.float32"
        )
    accumulate = _dtypes.float32 if result in _HALF else result
    return result, operand_array(input, accumulate, input._device)


@composite(out="cast", shape_only=True, device_guard=False, gradients={
    "input": lambda grad, input, dim, keepdim: _expand_back(grad, input, dim, keepdim) / _count(input, dim)})
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim``; needs a floating or complex input (or ``dtype=``), as in PyTorch.

        >>> agnostic.tensor([[1.0, 2.0], [3.0, 5.0]]).mean(1)
        tensor([1.5000, 4.0000])
    """
    if dim is None and dtype is None and type(input) is TensorBase.plain and input._data.dtype in _KEEPS_FLOATING \
            and input._data.size:
        return _whole_reduction(input, "mean", keepdim)
    result, array = _floating_input("mean", input, dtype)
    xp = input._device.backend.xp
    with numpy.errstate(invalid="ignore", divide="ignore"):
        out = input._device.backend.run(xp.mean, array, axis=_axes(dim, array.ndim), keepdims=keepdim)
    return finish(out, result, input._device)


def _var_arguments(dim, unbiased, keepdim, correction):
    if isinstance(dim, type(True)):  # var(input, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None:
        if correction is not None:
            raise TypeError("var(): pass either unbiased or correction, not both")
        correction = 1 if unbiased else 0
    return dim, keepdim, 1 if correction is None else correction


def _deviations(input, dim, unbiased, keepdim, correction):
    """What the gradients of var and std share: ``(input - mean, count - correction)``, with var's arguments read
    (``var(input, unbiased)`` included)."""
    dim, keepdim, correction = _var_arguments(dim, unbiased, keepdim, correction)
    mean_kept = input.mean(dim=_reduced_dims(input, dim), keepdim=True) if input.ndim else input
    return input - mean_kept, builtins.max(_count(input, dim) - correction, 0), dim, keepdim


def _var_gradient(grad, input, dim, unbiased, keepdim, correction):
    deviations, denominator, dim, keepdim = _deviations(input, dim, unbiased, keepdim, correction)
    return _expand_back(grad, input, dim, keepdim) * 2 * deviations / denominator


def _std_gradient(grad, input, dim, unbiased, keepdim, correction, result):
    deviations, denominator, dim, keepdim = _deviations(input, dim, unbiased, keepdim, correction)
    return _expand_back(grad / result, input, dim, keepdim) * deviations / denominator


@composite(out="cast", gradients={"input": _var_gradient})
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance over ``dim`` with Bessel's ``correction`` (1 by default); NaN when too few elements, as PyTorch.

        >>> agnostic.tensor([1.0, 2.0, 3.0, 4.0]).var()
        tensor(1.6667)
    """
    dim, keepdim, correction = _var_arguments(dim, unbiased, keepdim, correction)
    result, array = _floating_input("var", input, None)
    device = input._device
    axes = _axes(dim, array.ndim)
    with device.backend.activate(), numpy.errstate(invalid="ignore", divide="ignore"):
        count = math.prod(array.shape[a] for a in _reduced(axes, array.ndim))
        deviations = array - array.mean(axis=axes, keepdims=True)
        squared = (deviations * deviations.conj()).real if result.is_complex else deviations * deviations
        total = squared.sum(axis=axes, keepdims=keepdim)
        out = total / builtins.max(count - correction, 0)
        if count <= correction:  # x / 0: inf where values differ, also when their tiny squares underflow (PyTorch)
            spread = (deviations != 0).any(axis=axes, keepdims=keepdim)
            out = device.backend.xp.where((total == 0) & spread, numpy.inf, out).astype(out.dtype)
    return finish(out, result.to_real(), device)


@composite(out="cast", gradients={"input": _std_gradient})
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation: the square root of ``var`` with the same arguments.

        >>> agnostic.tensor([1.0, 2.0, 3.0, 4.0]).std(correction=0)
        tensor(1.1180)
    """
    variance = var(input, dim, unbiased, keepdim, correction=correction)
    xp = input._device.backend.xp
    return finish(input._device.backend.run(xp.sqrt, variance._data), variance.dtype, input._device)


def _ordered_input(name, input):
    check_tensor(name, input)
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
    if isinstance(dim, TensorBase):
        return elementwise(input, dim)
    _ordered_input(name, input)
    _check_nonempty(name, input, dim)
    device = input._device
    xp = device.backend.xp
    array = input._data
    if dim is None:
        return _whole_reduction(input, backend_name, False)
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        zero = device.backend.run(xp.zeros, (), numpy.int64)
        return values_indices(input.clone(), finish(zero, _dtypes.int64, device))
    with device.backend.activate():
        values = getattr(xp, backend_name)(array, axis=axis, keepdims=keepdim)
        indices = getattr(xp, arg_name)(array, axis=axis, keepdims=keepdim)
    return values_indices(finish(values, input.dtype, device), finish(indices, _dtypes.int64, device))


def _extreme_gradients(picks_input):
    """The gradients of max/min: a reduction's go to the extreme elements (the one whose index was returned, or
    shared evenly between ties when reducing every element); ``max(input, other)``'s are ``maximum``'s, shared
    evenly between equal operands."""
    def share_of_input(grad, input, other):
        return picks_input(input, other).to(grad.dtype) - (input == other).to(grad.dtype) * 0.5

    def input_gradient(grad, input, dim, keepdim, result):
        if isinstance(dim, TensorBase):
            return grad * share_of_input(grad, input, dim)
        if dim is None:
            return _evenly_to_extremes(grad, input, result, None, False)
        if input.ndim == 0:
            return grad
        axis = dim % input.ndim
        indices = result[1] if keepdim else result[1].unsqueeze(axis)
        return zeros_like(input, dtype=grad.dtype).scatter(axis, indices, grad if keepdim else grad.unsqueeze(axis))

    return {"input": input_gradient,
            "dim": lambda grad, input, dim: grad * (1 - share_of_input(grad, input, dim))}


@composite(out="cast", device_guard=False, gradients=_extreme_gradients(lambda input, other: input >= other))
def max(input, dim=None, keepdim=False):
    """Largest element; with ``dim``, a ``(values, indices)`` pair; with a Tensor, the elementwise maximum.

        >>> agnostic.tensor([[1, 5], [3, 2]]).max(1).indices
        tensor([1, 0])
    """
    if dim is None and type(input) is TensorBase.plain and input._data.dtype in _ORDERED and input._data.size:
        return _whole_reduction(input, "max", False)
    return _extreme("max", "max", "argmax", maximum, input, dim, keepdim)


@composite(out="cast", device_guard=False, gradients=_extreme_gradients(lambda input, other: input <= other))
def min(input, dim=None, keepdim=False):
    """Smallest element; with ``dim``, a ``(values, indices)`` pair; with a Tensor, the elementwise minimum.

        >>> agnostic.tensor([[1, 5], [3, 2]]).min()
        tensor(1)
    """
    if dim is None and type(input) is TensorBase.plain and input._data.dtype in _ORDERED and input._data.size:
        return _whole_reduction(input, "min", False)
    return _extreme("min", "min", "argmin", minimum, input, dim, keepdim)


def _extreme_values(name, backend_name, input, dim, keepdim):
    _ordered_input(name, input)
    axes = _axes(dim, input._data.ndim)
    if input._data.size == 0:
        _check_nonempty(name, input, None if axes is None or isinstance(axes, tuple) else axes)
    xp = input._device.backend.xp
    out = input._device.backend.run(getattr(xp, backend_name), input._data, axis=axes, keepdims=keepdim)
    return finish(out, input.dtype, input._device)


_TO_EXTREMES = {"input": lambda grad, input, dim, keepdim, result: _evenly_to_extremes(grad, input, result, dim,
                                                                                         keepdim)}


@composite(out=True, gradients=_TO_EXTREMES)
def amax(input, dim=(), keepdim=False):
    """Largest values over ``dim`` (all dims by default), without indices; ties share the gradient evenly.

        >>> agnostic.tensor([[1, 5], [3, 2]]).amax(0)
        tensor([3, 5])
    """
    return _extreme_values("amax", "max", input, dim, keepdim)


@composite(out=True, gradients=_TO_EXTREMES)
def amin(input, dim=(), keepdim=False):
    """Smallest values over ``dim`` (all dims by default), without indices; ties share the gradient evenly.

        >>> agnostic.tensor([[1, 5], [3, 2]]).amin(1)
        tensor([1, 2])
    """
    return _extreme_values("amin", "min", input, dim, keepdim)


def _arg_extreme(name, backend_name, input, dim, keepdim):
    check_tensor(name, input)
    if input._data.size == 0 and dim is None:
        raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
    _check_nonempty(name, input, dim)
    _ordered_input(name, input)
    if input.dtype is _dtypes.bool:
        raise NotImplementedError(f'"{name}" is not implemented for bool tensors; convert with .int() first')
    device = input._device
    xp = device.backend.xp
    array = input._data
    if dim is None:
        out = device.backend.run(getattr(xp, backend_name), array.reshape(-1) if array.ndim else array.reshape(1))
        if keepdim:
            out = out.reshape((1,) * array.ndim)
        return finish(out, _dtypes.int64, device)
    if array.ndim == 0:
        _normalize_dim(dim, 0)
        return finish(device.backend.run(xp.zeros, (), numpy.int64), _dtypes.int64, device)
    axis = _normalize_dim(dim, array.ndim)
    out = device.backend.run(getattr(xp, backend_name), array, axis=axis, keepdims=keepdim)
    return finish(out, _dtypes.int64, device)


@composite(out=True)
def argmax(input, dim=None, keepdim=False):
    """Index of the largest element (of the flattened tensor when ``dim`` is None); the first one on ties.

        >>> agnostic.tensor([[1, 5], [3, 2]]).argmax()
        tensor(1)
    """
    return _arg_extreme("argmax", "argmax", input, dim, keepdim)


@composite(out=True)
def argmin(input, dim=None, keepdim=False):
    """Index of the smallest element (of the flattened tensor when ``dim`` is None); the first one on ties.

        >>> agnostic.tensor([[1, 5], [3, 2]]).argmin(dim=1)
        tensor([0, 1])
    """
    return _arg_extreme("argmin", "argmin", input, dim, keepdim)


def _logical_reduction(name, input, dim, keepdim):
    check_tensor(name, input)
    xp = input._device.backend.xp
    out = input._device.backend.run(getattr(xp, name), input._data, axis=_axes(dim, input._data.ndim), keepdims=keepdim)
    return finish(out, _dtypes.uint8 if input.dtype is _dtypes.uint8 else _dtypes.bool, input._device)


@composite(out="cast")
def all(input, dim=None, keepdim=False):
    """True where every element over ``dim`` is nonzero.

        >>> agnostic.tensor([[1, 0], [2, 3]]).all(1)
        tensor([False,  True])
    """
    return _logical_reduction("all", input, dim, keepdim)


@composite(out="cast")
def any(input, dim=None, keepdim=False):
    """True where some element over ``dim`` is nonzero.

        >>> agnostic.tensor([[0, 0], [2, 0]]).any(1)
        tensor([False,  True])
    """
    return _logical_reduction("any", input, dim, keepdim)


@composite()
def count_nonzero(input, dim=None):
    """Number of nonzero elements over ``dim``.

        >>> agnostic.tensor([[0, 1], [2, 3]]).count_nonzero(0)
        tensor([1, 2])
    """
    return sum(input.ne(0), dim)


def _cumulative(name, backend_name, input, dim, dtype):
    check_tensor(name, input)
    result = _dtypes.as_dtype(dtype) or (_dtypes.int64 if input.dtype.category <= _INTEGER else input.dtype)
    accumulate = _dtypes.float32 if result in _HALF else result
    array = operand_array(input, accumulate, input._device)
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return finish(input._device.backend.run(array.copy), result, input._device)
    xp = input._device.backend.xp
    return finish(input._device.backend.run(getattr(xp, backend_name), array, axis=axis), result, input._device)


@composite(out="cast", shape_only=True, gradients={
    "input": lambda grad, input, dim: grad.flip(dim).cumsum(dim).flip(dim) if input.ndim else grad})
def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``; integer and bool inputs accumulate as int64.

        >>> agnostic.tensor([1, 2, 3]).cumsum(0)
        tensor([1, 3, 6])
    """
    return _cumulative("cumsum", "cumsum", input, dim, dtype)


def _cumprod_gradient(grad, input, dim):
    """``grad_i = sum over j >= i of grad_j * prod over k <= j, k != i of input_k``: exact with zeros (and
    quadratic in the dimension's length)."""
    if input.ndim == 0:
        return grad
    axis = dim % input.ndim
    moved = input.movedim(axis, -1)
    index = arange(input.shape[axis], device=input.device)
    others = index.unsqueeze(0) != index.unsqueeze(1)  # [i, k]: k != i
    up_to = index.unsqueeze(0) <= index.unsqueeze(1)  # [j, k]: k <= j
    products = where(others.unsqueeze(1) & up_to.unsqueeze(0), moved.unsqueeze(-2).unsqueeze(-2), 1.0).prod(-1)
    later = (index.unsqueeze(0) >= index.unsqueeze(1)).to(input.dtype)  # [i, j]: j >= i
    return (products * later * grad.movedim(axis, -1).unsqueeze(-2)).sum(-1).movedim(-1, axis)


@composite(out="cast", gradients={"input": _cumprod_gradient})
def cumprod(input, dim, *, dtype=None):
    """Running product along ``dim``; integer and bool inputs accumulate as int64.

        >>> agnostic.tensor([1, 2, 3]).cumprod(0)
        tensor([1, 2, 6])
    """
    return _cumulative("cumprod", "cumprod", input, dim, dtype)


def _norm_gradient(grad, input, p, dim, keepdim, result):
    norms = _expand_back(result, input, dim, keepdim)
    if p in ("fro", 2, 2.0):
        local = where(norms == 0, 0.0, input / norms)
    elif p == 1:
        local = input.sign()
    elif p in (math.inf, -math.inf):
        at_norm = (input.abs() == norms).to(input.dtype)
        count = _expand_back(at_norm.sum(dim=_reduced_dims(input, dim), keepdim=keepdim), input, dim, keepdim)
        local = input.sign() * at_norm / count
    elif p == 0:
        local = input * 0
    else:
        local = where(norms == 0, 0.0, input * input.abs() ** (p - 2) / norms ** (p - 1))
    return _expand_back(grad, input, dim, keepdim) * local


@composite(gradients={"input": _norm_gradient})
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over ``dim`` (all elements by default): ``p`` in 'fro', 2, 1, inf, -inf, 0 or any float.

        >>> agnostic.tensor([3.0, -4.0]).norm()
        tensor(5.)
    """
    result, array = _floating_input("norm", input, dtype)
    device = input._device
    xp = device.backend.xp
    axes = _axes(dim, array.ndim)
    if p in (math.inf, -math.inf) and builtins.any(array.shape[a] == 0 for a in _reduced(axes, array.ndim)):
        raise RuntimeError("linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation "
                           "does not have an identity")
    with device.backend.activate(), numpy.errstate(divide="ignore", invalid="ignore", over="ignore"):
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


@composite(out="cast", gradients={
    "input": lambda grad, input, dim, keepdim, result: _expand_back(grad, input, dim, keepdim) * (
        input - _expand_back(result, input, dim, keepdim)).exp()})
def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, computed stably.

        >>> agnostic.tensor([0.0, 0.0]).logsumexp(0)
        tensor(0.6931)
    """
    result, array = _floating_input("logsumexp", input, None)
    device = input._device
    xp = device.backend.xp
    axes = _axes(dim, array.ndim)
    with device.backend.activate(), numpy.errstate(invalid="ignore", over="ignore"):
        peak = array.max(axis=axes, keepdims=True) if array.size else xp.zeros((1,) * array.ndim, array.dtype)
        peak = xp.where(xp.isfinite(peak), peak, 0)
        out = xp.log(xp.exp(array - peak).sum(axis=axes, keepdims=True)) + peak
        if not keepdim:
            reduced = _reduced(axes, array.ndim)
            out = out.reshape([n for i, n in enumerate(out.shape) if i not in reduced])
    return finish(out, result, device)



# ----- distances and dot products ---------------------------------------------------------------------------------
@composite()
def dist(input, other, p=2):
    """The ``p``-norm of ``input - other``, broadcast (``torch.dist``).

        >>> agnostic.dist(agnostic.tensor([0.0, 0.0]), agnostic.tensor([3.0, 4.0]))
        tensor(5.)
    """
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"dist(): expected a floating point or complex tensor as input, got {input.dtype}")
    return (input - other).norm(p)


@composite()
def vdot(input, other, *, out=None):
    """The dot product of two 1-D tensors of one dtype, ``input`` conjugated first (``torch.vdot``).

        >>> agnostic.vdot(agnostic.tensor([1 + 1j, 2]), agnostic.tensor([1j, 1]))
        tensor(3.+1.j)
    """
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype} and "
                           f"{other.dtype}; convert one with .to()")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           "to have the same number of elements, but got "
                           f"{input.shape[0]} and {other.shape[0]} elements respectively")
    result = (input.conj() * other).sum()
    return result if out is None else write_result(out, result, "vdot")



@in_place_of(cumsum)
def cumsum_(self, dim, *, dtype=None):
    """In-place ``cumsum``: the running sum along ``dim`` written into ``self``.

        >>> agnostic.tensor([1.0, 2.0, 3.0]).cumsum_(0)
        tensor([1., 3., 6.])
    """
    _check_writable(self)
    return write_result(self, cumsum(self, dim, dtype=dtype), "cumsum_")


@in_place_of(cumprod)
def cumprod_(self, dim, *, dtype=None):
    """In-place ``cumprod``: the running product along ``dim`` written into ``self``.

        >>> agnostic.tensor([1.0, 2.0, 3.0]).cumprod_(0)
        tensor([1., 2., 6.])
    """
    _check_writable(self)
    return write_result(self, cumprod(self, dim, dtype=dtype), "cumprod_")



# ----- renorm, sum_to_size ---------------------------------------------------------------------------------------
@composite(out=True, inplace=True)
def renorm(input, p, dim, maxnorm):
    """Each slice of ``input`` along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``
    (``maxnorm / (norm + 1e-7)``, as ``torch.renorm``); the other slices are kept.

        >>> agnostic.renorm(agnostic.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    if input.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dtype.category < _FLOATING:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{input.dtype}; convert it with .float()")
    axis = _normalize_dim(dim, input.ndim)
    norms = norm(input, p, tuple(d for d in range(input.ndim) if d != axis), keepdim=True)
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor.to(input.dtype.to_real())


@tensor_method()
def sum_to_size(input, *size):
    """``input`` summed down to ``size``, which must broadcast to ``input``'s shape (the gradient of a broadcast).

        >>> agnostic.tensor([[1, 2, 3], [4, 5, 6]]).sum_to_size(1, 3)
        tensor([[5, 7, 9]])
    """
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(input.shape)
    lead = len(shape) - len(size)
    if lead < 0 or builtins.any(want not in (1, have) for want, have in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, want in enumerate(size) if want == 1 and shape[lead + i] != 1)
    if not dims:
        return input
    return sum(input, dims, keepdim=True).reshape(size)


# ----- the trapezoidal rule --------------------------------------------------------------------------------------
def _integration_axis(name, y, x, dx, dim):
    if not isinstance(y, TensorBase):
        raise TypeError(f"{name}(): argument 'y' must be a Tensor, not {type(y).__name__}")
    if x is not None and dx is not None:
        raise TypeError(f"{name}(): pass either the sample points x or the spacing dx, not both")
    if x is not None and not isinstance(x, TensorBase):
        raise TypeError(f"{name}(): argument 'x' must be a Tensor, not {type(x).__name__}; give a constant "
                        "spacing as dx=")
    if y.dtype is _dtypes.bool or (x is not None and x.dtype is _dtypes.bool):
        raise NotImplementedError(f"{name}: received a bool input for `{'y' if x is None else 'x` or `y'}`, but bool "
                                  "is not supported")
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _normalize_dim(dim, y.ndim)


def _along(tensor, axis, part):
    return tensor[(slice(None),) * axis + (part,)]


def _spacings(name, y, x, axis):
    """``x[1:] - x[:-1]`` along ``axis``, a 1-D ``x`` laid along ``axis`` and fewer dimensions broadcast first."""
    if x.ndim == 1:
        if x.shape[0] != y.shape[axis]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        x = x.reshape(tuple(x.shape[0] if d == axis else 1 for d in range(y.ndim)))
    elif x.ndim < y.ndim:
        x = x.reshape((1,) * (y.ndim - x.ndim) + tuple(x.shape))
    return _along(x, axis, slice(1, None)) - _along(x, axis, slice(None, -1))


def _pair_sums(y, axis):
    return _along(y, axis, slice(1, None)) + _along(y, axis, slice(None, -1))


@composite(method=False, aliases=("trapz",))
def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of ``y`` along ``dim`` by the trapezoidal rule, at sample points ``x`` (a tensor, 1-D along
    ``dim`` or broadcasting with ``y``) or a constant spacing ``dx`` (1 by default); integer samples give the default
    float dtype (``torch.trapezoid``, alias ``trapz``).

        >>> agnostic.trapezoid(agnostic.tensor([1.0, 2.0, 4.0]))
        tensor(4.5000)
        >>> agnostic.trapezoid(agnostic.tensor([1.0, 2.0, 4.0]), agnostic.tensor([0.0, 1.0, 3.0]))
        tensor(7.5000)
    """
    axis = _integration_axis("trapezoid", y, x, dx, dim)
    if y.shape[axis] == 0:
        return zeros_like(sum(y, axis))
    if x is not None:
        return sum(_pair_sums(y, axis) * _spacings("trapezoid", y, x, axis), axis) / 2
    ends = _along(y, axis, 0) + _along(y, axis, -1)
    return (sum(y, axis) - ends * 0.5) * (1 if dx is None else dx)


trapz = trapezoid


@composite(method=False)
def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral of ``y`` along ``dim`` by the trapezoidal rule (one value fewer than ``y`` there), at
    sample points ``x`` or a constant spacing ``dx`` as in :func:`trapezoid` (``torch.cumulative_trapezoid``).

        >>> agnostic.cumulative_trapezoid(agnostic.tensor([1.0, 2.0, 4.0]))
        tensor([1.5000, 4.5000])
    """
    axis = _integration_axis("cumulative_trapezoid", y, x, dx, dim)
    if x is not None:
        return cumsum(_spacings("cumulative_trapezoid", y, x, axis) * _pair_sums(y, axis) / 2, axis)
    return cumsum(_pair_sums(y, axis) * ((1 if dx is None else dx) / 2), axis)

__all__ = public_names(globals())
