"""Statistics and scans (median, quantile, mode, var_mean, histc, bincount, cummax, logcumsumexp, nansum...), each
declared once with its gradient.

Order statistics use ``sorting``'s stable order (NaN last, -0.0 equal to 0.0), so ties and NaNs resolve the same way
on every device; the running scans (cummax, logcumsumexp) double their reach each step (Hillis-Steele), which needs only
elementwise ops that NumPy and CuPy share.
"""

import builtins
import math
from collections import namedtuple

import numpy

from .. import _dtypes
from .._tensor import TensorBase, _normalize_dim, wrap
from ._dispatch import check_tensor, finish, operand_array
from ._registry import composite, public_names
from .creation import linspace, tensor, zeros_like
from .elementwise import isnan, lerp, where
from .reduction import amax, amin, mean, std, sum, var
from .sorting import _stable_order

_INTEGER, _FLOATING = 1, 2
_HALF = (_dtypes.float16, _dtypes.bfloat16)


def _return_type(name, fields=("values", "indices")):
    """A named tuple printed as PyTorch's ``torch.return_types.<name>``."""
    base = namedtuple(name, fields)
    base.__repr__ = lambda self: (f"agnostic.return_types.{name}(\n"
                                  + ",\n".join(f"{field}={value!r}" for field, value in zip(fields, self)) + ")")
    return base


median_result, nanmedian_result, mode_result = (_return_type(name) for name in ("median", "nanmedian", "mode"))
cummax_result, cummin_result = _return_type("cummax"), _return_type("cummin")
aminmax_result = _return_type("aminmax", ("min", "max"))


def _ordered_input(name, input):
    check_tensor(name, input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{name}(): not implemented for complex tensors: complex numbers have no order; "
                           "take .real or .abs() first")


def _check_nonempty_dim(name, input, axis):
    if input.ndim and input.shape[axis] == 0:
        raise IndexError(f"{name}(): Expected reduction dim {axis} to have non-zero size.")


# ----- var_mean, std_mean, nansum, nanmean, aminmax ---------------------------------------------------------------
def _moments(name, spread, input, dim, unbiased, keepdim, correction):
    check_tensor(name, input)
    if isinstance(dim, bool):  # var_mean(input, unbiased)
        dim, unbiased = None, dim
    reduced = () if dim is None else dim
    return spread(input, dim, unbiased, keepdim, correction=correction), mean(input, reduced, keepdim)


@composite(method=False)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` in one call, with ``var``'s ``correction`` (1 by default) or ``unbiased``.

        >>> agnostic.var_mean(agnostic.tensor([1.0, 2.0, 3.0, 4.0]))
        (tensor(1.6667), tensor(2.5000))
    """
    return _moments("var_mean", var, input, dim, unbiased, keepdim, correction)


@composite(method=False)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` in one call, with ``std``'s ``correction`` (1 by default) or ``unbiased``.

        >>> agnostic.std_mean(agnostic.tensor([[1.0, 3.0], [2.0, 2.0]]), dim=1, correction=0)
        (tensor([1., 0.]), tensor([2., 2.]))
    """
    return _moments("std_mean", std, input, dim, unbiased, keepdim, correction)


def _without_nans(name, input):
    check_tensor(name, input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{name}() does not support complex inputs; take .real and .imag separately")
    if input.dtype.category < _FLOATING:
        return input
    return where(isnan(input), 0, input)


@composite(out="cast")
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum over ``dim`` treating NaN as zero; integer and bool inputs sum as int64.

        >>> agnostic.tensor([1.0, float("nan"), 2.0]).nansum()
        tensor(3.)
    """
    return sum(_without_nans("nansum", input), dim, keepdim, dtype=dtype)


@composite(out="cast")
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean over ``dim`` of the elements that are not NaN (NaN where all are).

        >>> agnostic.tensor([[1.0, float("nan")], [2.0, 4.0]]).nanmean(1)
        tensor([1., 3.])
    """
    check_tensor("nanmean", input)
    if input.dtype.category < _FLOATING:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{input.dtype.name}; convert with .float() first")
    present = sum(isnan(input).logical_not(), dim, keepdim)
    return nansum(input, dim, keepdim, dtype=dtype) / present


@composite(out=True)
def aminmax(input, *, dim=None, keepdim=False):
    """``(min, max)`` over ``dim`` (all elements by default) in one call, as a named tuple.

        >>> tuple(agnostic.tensor([[1, 5], [3, 2]]).aminmax(dim=0))
        (tensor([1, 2]), tensor([3, 5]))
        >>> agnostic.tensor([[1, 5], [3, 2]]).aminmax().max
        tensor(5)
    """
    _ordered_input("aminmax", input)
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        reduced = ()
    else:
        reduced = _normalize_dim(dim, input.ndim)
        if input.ndim and input.shape[reduced] == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        if not input.ndim:
            reduced = ()
    return aminmax_result(amin(input, reduced, keepdim), amax(input, reduced, keepdim))


# ----- order statistics: median, nanmedian, mode ------------------------------------------------------------------
def _missing(xp, array):
    """Where ``array`` is NaN (nowhere for integers and bools)."""
    return array != array


def _pick_sorted(name, input, dim, keepdim, position):
    """``(values, indices)`` of the element at ``position(count, nans)`` of each sorted row along ``dim`` (all
    elements, flattened, for None): ``count`` is the row's length, ``nans`` its number of NaNs (both kept as a
    trailing dim of 1). Ties keep their order, NaNs sort last."""
    _ordered_input(name, input)
    if input.dtype is _dtypes.bool:
        raise NotImplementedError(f'"{name}" not implemented for bool tensors; convert with .int() first')
    device = input._device
    xp = device.backend.xp
    array = input._data
    whole = dim is None
    axis = 0 if whole else _normalize_dim(dim, array.ndim)
    if not whole and array.ndim == 0:
        zero = device.backend.run(xp.zeros, (), numpy.int64)
        return input.clone(), wrap(zero, device)
    if not whole:
        _check_nonempty_dim(name, input, axis)
    with device.backend.activate():
        rows = array.reshape(-1) if whole else xp.moveaxis(array, axis, -1)
        order = _stable_order(device, rows, -1, False)
        count = rows.shape[-1]
        nans = _missing(xp, rows).sum(axis=-1, keepdims=True)
        index = position(xp, count, nans).astype(numpy.int64)
        indices = xp.take_along_axis(order, index, axis=-1)
        values = xp.take_along_axis(rows, indices, axis=-1)
        if whole:
            values, indices = values.reshape(()), indices.reshape(())
        else:
            values, indices = values[..., 0], indices[..., 0]
            if keepdim:
                values, indices = xp.expand_dims(values, axis), xp.expand_dims(indices, axis)
    return finish(values, input.dtype, device), finish(indices, _dtypes.int64, device)


def _lower_middle(xp, count, nans):
    """The lower median's place; the first NaN's where there is one, as PyTorch's median."""
    return xp.where(nans > 0, count - nans, (count - 1) // 2)


def _lower_middle_of_numbers(xp, count, nans):
    """The lower median's place among the numbers; the first NaN's where all are NaN, as PyTorch's nanmedian."""
    numbers = count - nans
    return xp.where(numbers > 0, (numbers - 1) // 2, 0)


def _evenly_to_equal(grad, input, value):
    """A whole-tensor order statistic's gradient, shared evenly between the elements equal to it (the NaNs, when it
    is NaN), as PyTorch's ``evenly_distribute_backward``."""
    chosen = isnan(input) if bool(isnan(value)) else input == value
    chosen = chosen.to(grad.dtype)
    return chosen * (grad / chosen.sum())


def _to_chosen(grad, input, dim, keepdim, indices):
    """The gradient of values chosen along ``dim``: each goes to the element its index names."""
    if input.ndim == 0:
        return grad
    axis = dim % input.ndim
    if not keepdim:
        grad, indices = grad.unsqueeze(axis), indices.unsqueeze(axis)
    return zeros_like(input, dtype=grad.dtype).scatter(axis, indices, grad)


def _order_statistic_gradient(grad, input, dim, keepdim, result):
    if dim is None:
        return _evenly_to_equal(grad, input, result)
    return _to_chosen(grad, input, dim, keepdim, result[1])


@composite(out=True, gradients={"input": _order_statistic_gradient})
def median(input, dim=None, keepdim=False):
    """The lower median of all elements (a 0-dim tensor; NaN if any is NaN); with ``dim``, ``(values, indices)``
    along it.

        >>> agnostic.tensor([3.0, 1.0, 4.0, 2.0]).median()
        tensor(2.)
        >>> tuple(agnostic.tensor([[1, 5, 3], [4, 6, 0]]).median(dim=1))
        (tensor([3, 4]), tensor([2, 0]))
    """
    if dim is None:
        if input.numel() == 0:
            return tensor(math.nan, dtype=input.dtype, device=input.device)
        return _pick_sorted("median", input, None, False, _lower_middle)[0]
    return median_result(*_pick_sorted("median", input, dim, keepdim, _lower_middle))


@composite(out=True, gradients={"input": _order_statistic_gradient})
def nanmedian(input, dim=None, keepdim=False):
    """``median`` ignoring NaNs: the lower median of the elements that are numbers (NaN where none is).

        >>> agnostic.tensor([1.0, float("nan"), 3.0, 2.0]).nanmedian()
        tensor(2.)
    """
    if dim is None:
        if input.numel() == 0:
            return tensor(math.nan, dtype=input.dtype, device=input.device)
        return _pick_sorted("nanmedian", input, None, False, _lower_middle_of_numbers)[0]
    return nanmedian_result(*_pick_sorted("nanmedian", input, dim, keepdim, _lower_middle_of_numbers))


@composite(out=True, gradients={"input": lambda grad, input, dim, keepdim, result: _to_chosen(grad, input, dim, keepdim,
                                                                                     result[1])})
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along ``dim`` (the smallest of several) and the index of its last occurrence.

        >>> tuple(agnostic.tensor([[3, 1, 3, 1, 2], [0, 5, 5, 0, 5]]).mode())
        (tensor([1, 5]), tensor([3, 4]))
    """
    _ordered_input("mode", input)
    device = input._device
    xp = device.backend.xp
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return mode_result(input.clone(), wrap(device.backend.run(xp.zeros, (), numpy.int64), device))
    _check_nonempty_dim("mode", input, axis)
    with device.backend.activate():
        rows = xp.moveaxis(array, axis, -1)
        order = _stable_order(device, rows, -1, False)
        ordered = xp.take_along_axis(rows, order, axis=-1)
        count = rows.shape[-1]
        places = xp.broadcast_to(xp.arange(count, dtype=numpy.int64), rows.shape)
        starts = xp.ones(rows.shape, dtype=bool)
        starts[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
        run_start = _running_selection(xp, xp.where(starts, places, 0), _later_if_not_smaller)[0]
        run_length = places - run_start + 1
        # Runs are ascending by value, so the first place reaching the longest length (argmax takes the first)
        # ends the smallest mode's run, whose last element (the sort is stable) is the value's last occurrence.
        end = xp.argmax(run_length, axis=-1)[..., None]
        indices = xp.take_along_axis(order, end, axis=-1)[..., 0]
        values = xp.take_along_axis(ordered, end, axis=-1)[..., 0]
        if keepdim:
            values, indices = xp.expand_dims(values, axis), xp.expand_dims(indices, axis)
    return mode_result(finish(values, input.dtype, device), finish(indices, _dtypes.int64, device))


# ----- quantile, nanquantile --------------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    """PyTorch's quantile: each row sorted (NaNs last), ranks ``q * (n - 1)`` (``n`` the row's numbers for
    ``ignore_nan``; the last place where a row has a NaN otherwise), values gathered and interpolated (``lerp``, so
    the gradient reaches the two neighbours)."""
    check_tensor(name, input)
    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if input.dtype not in (_dtypes.float32, _dtypes.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype, got {input.dtype.name}; "
                           "convert with .float() or .double()")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, but "
                           f"got {interpolation}")
    device = input._device
    xp = device.backend.xp
    if isinstance(q, TensorBase):
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor (got {q.dtype.name} and "
                               f"{input.dtype.name}); convert q with .to(input.dtype)")
        if q.device != input.device:
            raise RuntimeError(f"{name}() q tensor must be on the same device as the input tensor ({q.device} and "
                               f"{input.device}); move it with .to(input.device)")
        if not bool(((q >= 0) & (q <= 1)).all()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        scalar_q = q.ndim == 0
        q_values = q.detach().reshape(-1)
    else:
        if isinstance(q, (list, tuple)):
            raise TypeError(f"{name}(): q must be a float or a Tensor; for several, pass agnostic.tensor({list(q)})")
        q = float(q)
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        scalar_q = True
        q_values = tensor([q], dtype=input.dtype, device=input.device)
    whole = dim is None or input.ndim == 0
    axis = None if dim is None else _normalize_dim(dim, input.ndim)
    rows = input.reshape(-1) if whole else input.movedim(axis, -1)
    count = rows.shape[-1]
    with device.backend.activate():
        dtype = rows._data.dtype
        order = _stable_order(device, rows._data, -1, False)
        nans = _missing(xp, rows._data).sum(axis=-1, keepdims=True)
        if ignore_nan:
            ranks = q_values._data * (count - nans - 1).astype(dtype)
            ranks = xp.where(ranks < 0, 0, ranks)
        else:
            ranks = xp.where(nans > 0, count - 1, q_values._data * dtype.type(count - 1))
        ranks = ranks.astype(dtype)
        if interpolation == "lower":
            ranks = xp.floor(ranks)
        elif interpolation == "higher":
            ranks = xp.ceil(ranks)
        elif interpolation == "nearest":
            ranks = xp.round(ranks)  # half to even, as PyTorch's round
        below = ranks.astype(numpy.int64)
        weights = ranks - below.astype(dtype) if interpolation == "linear" else xp.full_like(ranks, 0.5)
        above_order = xp.take_along_axis(order, xp.ceil(ranks).astype(numpy.int64), axis=-1)
        below_order = xp.take_along_axis(order, below, axis=-1)
    values = rows.gather(-1, wrap(below_order, device))
    if interpolation in ("linear", "midpoint"):
        values = lerp(values, rows.gather(-1, wrap(above_order, device)), wrap(weights, device))
    values = values.movedim(-1, 0)  # the quantiles first, then the other dims in order
    if keepdim:
        values = values.reshape((values.shape[0],) + (1,) * input.ndim) if whole else values.unsqueeze(axis + 1)
    return values[0] if scalar_q else values


@composite(out=True)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles (a float, or a 0-D or 1-D tensor of them, in [0, 1]) along ``dim`` (of all elements
    by default), interpolated as ``interpolation`` says: linear, lower, higher, midpoint or nearest. A 1-D ``q``
    puts the quantiles first in the result; a row with a NaN gives NaN.

        >>> agnostic.tensor([1.0, 2.0, 3.0, 4.0]).quantile(0.5)
        tensor(2.5000)
        >>> agnostic.quantile(agnostic.tensor([[0.0, 1.0], [2.0, 6.0]]), agnostic.tensor([0.25, 1.0]), dim=1).tolist()
        [[0.25, 3.0], [1.0, 6.0]]
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@composite(out=True)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """``quantile`` ignoring NaNs: the quantiles of each row's numbers (NaN where a row has none).

        >>> agnostic.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5)
        tensor(2.)
    """
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# ----- running scans: cummax, cummin, logcumsumexp ----------------------------------------------------------------
def _running_selection(xp, rows, later_wins):
    """``(values, indices)`` of a running selection along the last dim: at each place, the element the associative
    choice ``later_wins(earlier, later)`` keeps among those up to it. Each step doubles how far back is covered."""
    count = rows.shape[-1]
    values = xp.ascontiguousarray(rows)
    indices = xp.ascontiguousarray(xp.broadcast_to(xp.arange(count, dtype=numpy.int64), rows.shape))
    reach = 1
    while reach < count:
        earlier, later = values[..., :-reach], values[..., reach:]
        keep_later = later_wins(earlier, later)
        values = xp.concatenate([values[..., :reach], xp.where(keep_later, later, earlier)], axis=-1)
        indices = xp.concatenate([indices[..., :reach], xp.where(keep_later, indices[..., reach:],
                                                                 indices[..., :-reach])], axis=-1)
        reach *= 2
    return values, indices


# PyTorch's scans: a NaN is kept from where it appears (the latest NaN's index), equal values take the later index.
def _later_if_not_smaller(earlier, later):
    return (later != later) | ((earlier == earlier) & (later >= earlier))


def _later_if_not_larger(earlier, later):
    return (later != later) | ((earlier == earlier) & (later <= earlier))


def _running_extreme(name, result_type, later_wins, input, dim):
    _ordered_input(name, input)
    device = input._device
    xp = device.backend.xp
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return result_type(input.clone(), wrap(device.backend.run(xp.zeros, (), numpy.int64), device))
    with device.backend.activate():
        values, indices = _running_selection(xp, xp.moveaxis(array, axis, -1), later_wins)
        values, indices = xp.moveaxis(values, -1, axis), xp.moveaxis(indices, -1, axis)
    return result_type(finish(values, input.dtype, device), finish(indices, _dtypes.int64, device))


def _to_running_choices(grad, input, dim, result):
    """A running selection's gradient: each place's gradient goes to the element it chose, summed."""
    if input.ndim == 0:
        return grad
    return zeros_like(input, dtype=grad.dtype).scatter_add(dim % input.ndim, result[1], grad)


@composite(out=True, gradients={"input": _to_running_choices})
def cummax(input, dim):
    """Running maximum along ``dim`` and where it was found (the latest index among equal values; a NaN, once
    seen, stays).

        >>> tuple(agnostic.tensor([1, 3, 2, 3, 5]).cummax(0))
        (tensor([1, 3, 3, 3, 5]), tensor([0, 1, 1, 3, 4]))
    """
    return _running_extreme("cummax", cummax_result, _later_if_not_smaller, input, dim)


@composite(out=True, gradients={"input": _to_running_choices})
def cummin(input, dim):
    """Running minimum along ``dim`` and where it was found (the latest index among equal values; a NaN, once
    seen, stays).

        >>> agnostic.tensor([4.0, 2.0, 3.0, 2.0]).cummin(0).values
        tensor([4., 2., 2., 2.])
    """
    return _running_extreme("cummin", cummin_result, _later_if_not_larger, input, dim)


def _logcumsumexp_gradient(grad, input, dim, result):
    """``grad_i = sum over j >= i of grad_j * exp(input_i - result_j)``, summed in log space by sign (PyTorch's
    formula), so nothing overflows."""
    if input.ndim == 0:
        return grad
    axis = dim % input.ndim
    lowest = _dtypes.finfo(grad.dtype).min

    def reverse_logcumsumexp(values):
        return logcumsumexp(values.flip(axis), axis).flip(axis)

    log_magnitude = grad.abs().log()
    positive = where(grad > 0, log_magnitude, lowest)
    negative = where(grad < 0, log_magnitude, lowest)
    return (reverse_logcumsumexp(positive - result) + input).exp() - \
        (reverse_logcumsumexp(negative - result) + input).exp()


@composite(out=True, gradients={"input": _logcumsumexp_gradient})
def logcumsumexp(input, dim):
    """Running ``log(sum(exp(x)))`` along ``dim`` of a floating point tensor, computed stably.

        >>> agnostic.tensor([0.0, 0.0, 0.0]).logcumsumexp(0)
        tensor([0.0000, 0.6931, 1.0986])
    """
    check_tensor("logcumsumexp", input)
    if input.dtype.category != _FLOATING:
        raise NotImplementedError(f'"logcumsumexp" not implemented for {input.dtype.name}: it takes floating point '
                                  "inputs; convert with .float() first")
    result = input.dtype
    device = input._device
    xp = device.backend.xp
    array = operand_array(input, _dtypes.float32 if result in _HALF else result, device)
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return finish(device.backend.run(array.copy), result, device)
    with device.backend.activate(), numpy.errstate(invalid="ignore", over="ignore"):
        rows = xp.ascontiguousarray(xp.moveaxis(array, axis, -1))
        reach = 1
        while reach < rows.shape[-1]:
            rows = xp.concatenate([rows[..., :reach], xp.logaddexp(rows[..., :-reach], rows[..., reach:])], axis=-1)
            reach *= 2
        out = xp.moveaxis(rows, -1, axis)
    return finish(out, result, device)


# ----- histograms: histc, bincount --------------------------------------------------------------------------------
@composite(out=True)
def histc(input, bins=100, min=0, max=0):
    """Counts of ``input``'s elements in ``bins`` equal bins over [``min``, ``max``] (the elements' own range when
    both are 0); elements outside are left out, ``max`` counts in the last bin. Same dtype as ``input``.

        >>> agnostic.histc(agnostic.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3)
        tensor([0., 2., 1., 0.])
    """
    check_tensor("histc", input)
    if input.dtype.category != _FLOATING:
        raise NotImplementedError(f'"histogram_cpu" not implemented for {input.dtype.name}: histc counts floating '
                                  "point values; convert with .float() first")
    bins = int(bins)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    device = input._device
    xp = device.backend.xp
    compute = _dtypes.float32 if input.dtype in _HALF else input.dtype
    array = operand_array(input, compute, device).reshape(-1)
    low, high = float(min), float(max)
    if low == high and array.size:
        with device.backend.activate():
            low, high = float(array.min()), float(array.max())
    if low == high:
        low, high = low - 1, high + 1
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    if low > high:
        raise RuntimeError("torch.histc: max must be larger than min")
    with device.backend.activate():
        inside = array[(array >= low) & (array <= high)]
        dtype = inside.dtype.type
        place = ((inside - dtype(low)) * dtype(bins) / (dtype(high) - dtype(low))).astype(numpy.int64)
        place = xp.minimum(place, bins - 1)  # ``max`` itself counts in the last bin
        counts = _counts(xp, place, bins)
    return finish(counts, input.dtype, device)


def _counts(xp, values, length, weights=None):
    """``bincount`` of the non-negative integers ``values`` (all below ``length``): ``length`` counts, or sums of
    ``weights`` (float64). CuPy's own refuses empty ``values`` and a ``minlength`` of 0, so neither reaches it."""
    if values.size == 0:
        return xp.zeros(length, numpy.int64 if weights is None else numpy.float64)
    return xp.bincount(values, weights=weights, minlength=length)


@composite()
def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer ``input`` (at least ``minlength``
    counts); with ``weights``, their sums per value (float32 weights give float32, others float64).

        >>> agnostic.tensor([1, 3, 1]).bincount()
        tensor([0, 2, 0, 1])
        >>> agnostic.bincount(agnostic.tensor([0, 2]), weights=agnostic.tensor([0.5, 2.0]))
        tensor([0.5000, 0.0000, 2.0000])
    """
    check_tensor("bincount", input)
    if input.dtype.category != _INTEGER:
        raise NotImplementedError(f'"bincount" not implemented for {input.dtype.name}: it counts integers; convert '
                                  "with .long() first")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    device = input._device
    xp = device.backend.xp
    array = input._data
    if array.ndim != 1 or (array.size and bool(device.backend.run(array.min) < 0)):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (not isinstance(weights, TensorBase) or weights.ndim != 1
                                or weights.shape[0] != array.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    length = builtins.max(int(device.backend.run(array.max)) + 1 if array.size else 0, minlength)
    if weights is None:
        with device.backend.activate():
            return finish(_counts(xp, array, length), _dtypes.int64, device)
    result = _dtypes.float32 if weights.dtype is _dtypes.float32 else _dtypes.float64
    with device.backend.activate():
        counts = _counts(xp, array, length, operand_array(weights, _dtypes.float64, device))
    return finish(counts, result, device)



histogram_result = _return_type("histogram", ("hist", "bin_edges"))


@composite(out=True)
def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """Counts (or summed ``weight``) of ``input``'s elements per bin, and the bins' edges (``torch.histogram``):
    ``bins`` equal bins over ``range`` (the elements' own range by default), or a 1-D tensor of increasing edges.
    Each bin holds its left edge, the last one its right edge too; with ``density`` the counts become a density
    that integrates to one. Floating tensors only; both results have ``input``'s dtype.

        >>> agnostic.histogram(agnostic.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
        agnostic.return_types.histogram(
        hist=tensor([0., 2., 1., 0.]),
        bin_edges=tensor([0.0000, 0.7500, 1.5000, 2.2500, 3.0000]))
    """
    check_tensor("histogram", input)
    if input.dtype.category != _FLOATING:
        raise NotImplementedError(f'"histogram_cpu" not implemented for {input.dtype.name}; convert the input '
                                  "with .float() first")
    device = input._device
    backend = device.backend
    xp = backend.xp
    values = input.reshape(-1)
    if isinstance(bins, TensorBase):
        if bins.ndim != 1 or bins.numel() < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at least 2 elements")
        edges = bins.to(input.dtype)
    else:
        count = int(bins)
        if count <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for dimension 0")
        if range is not None:
            low, high = float(range[0]), float(range[1])
        elif values.numel():
            low, high = float(values.min()), float(values.max())
        else:
            low, high = 0.0, 0.0
        if low > high:
            raise RuntimeError(f"torch.histogram(): min should not exceed max, but got min {low} max {high}")
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogram(): range of [{low}, {high}] is not finite")
        if low == high:
            low, high = low - 0.5, high + 0.5  # NumPy's and PyTorch's widening of an empty range
        edges = linspace(low, high, count + 1, dtype=input.dtype, device=device)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogram(): if weight tensor is provided it should have the same shape as the "
                           f"input tensor, got {list(weight.shape)} and {list(input.shape)}")
    compute = _dtypes.float32 if input.dtype in _HALF else input.dtype
    array = operand_array(values, compute, device)
    edge_array = operand_array(edges, compute, device)
    weights = None if weight is None else operand_array(weight.reshape(-1), compute, device)
    with backend.activate():
        low, high = edge_array[0], edge_array[-1]
        inside = (array >= low) & (array <= high)
        # The bin of each element: edges to its left, less one; ``high`` itself goes in the last bin.
        place = xp.searchsorted(edge_array, array, side="right") - 1
        place = xp.minimum(place, edge_array.shape[0] - 2)
        place = xp.where(inside, place, 0)
        counted = inside.astype(compute.numpy_dtype) if weights is None else xp.where(inside, weights, 0)
        counts = _counts(xp, place.astype(numpy.int64), edge_array.shape[0] - 1, counted)
        if density:
            counts = counts / (counts.sum() * xp.diff(edge_array))
    return histogram_result(finish(counts.astype(compute.numpy_dtype), input.dtype, device), edges)


# ----- covariance and correlation ---------------------------------------------------------------------------------
@composite()
def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in ``input``'s rows, its columns the observations (``torch.cov``);
    ``fweights`` (integer repeat counts) and ``aweights`` (observation weights) weigh the columns, and the divisor
    is the weight total less ``correction``, as in PyTorch. A 1-D input gives a 0-dim variance.

        >>> agnostic.cov(agnostic.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.ndim > 2:
        raise ValueError(f"cov(): expected input to have two or fewer dimensions but got an input with {input.ndim} "
                         "dimensions")
    observations = input.reshape(1, -1) if input.ndim < 2 else input
    count = observations.shape[1]
    weights = None
    if fweights is not None:
        if fweights.dtype.is_floating_point or fweights.dtype.is_complex:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{fweights.dtype} dtype; convert them with .long()")
        if fweights.ndim > 1 or fweights.numel() != count:
            raise RuntimeError(f"cov(): expected fweights to be one-dimensional with {count} elements, the number "
                               f"of observations, but got shape {list(fweights.shape)}")
        if bool((fweights < 0).any()):
            raise RuntimeError("cov(): fweights cannot be negative")
        weights = fweights
    if aweights is not None:
        if not aweights.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{aweights.dtype} dtype")
        if aweights.ndim > 1 or aweights.numel() != count:
            raise RuntimeError(f"cov(): expected aweights to be one-dimensional with {count} elements, the number "
                               f"of observations, but got shape {list(aweights.shape)}")
        if bool((aweights < 0).any()):
            raise RuntimeError("cov(): aweights cannot be negative")
        weights = aweights if weights is None else weights * aweights
    if not (observations.dtype.is_floating_point or observations.dtype.is_complex):
        observations = observations.to(_dtypes.get_default_dtype())
    if weights is None:
        total = observations.new_tensor(count)
        average = observations.mean(1)
        divisor = total - correction
    else:
        total = weights.sum()
        average = (observations * weights).sum(1) / total
        if correction == 0:
            divisor = total
        elif aweights is None:
            divisor = total - correction
        else:
            divisor = total - correction * (weights * aweights).sum() / total
    divisor = divisor.clamp(min=0)
    deviations = observations - average.unsqueeze(1)
    weighted = deviations if weights is None else deviations * weights
    result = (weighted @ deviations.mT.conj()) / divisor
    return result.squeeze()


@composite()
def corrcoef(input):
    """The Pearson correlation coefficients of the variables in ``input``'s rows (``torch.corrcoef``): ``cov``
    normalized by the standard deviations, the real parts clipped to ``[-1, 1]``.

        >>> agnostic.corrcoef(agnostic.tensor([[0.0, 1.0, 2.0], [4.0, 2.0, 0.0]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.ndim > 2:
        raise ValueError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.ndim} dimensions")
    covariance = cov(input)
    if covariance.ndim == 0:
        return covariance / covariance
    deviation = covariance.diagonal()
    deviation = (deviation.real if deviation.dtype.is_complex else deviation).sqrt()
    result = covariance / deviation.unsqueeze(1) / deviation.unsqueeze(0)
    if result.dtype.is_complex:
        return result  # PyTorch clips the real and imaginary parts; left unclipped here
    return result.clamp(-1, 1)


__all__ = public_names(globals())
