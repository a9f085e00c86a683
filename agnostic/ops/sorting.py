"""Sorting, searching and comparing whole tensors (sort, topk, unique, searchsorted, allclose...), each declared once
with its gradient.

Every order comes from one stable sort, so CPU and CUDA pick the same indices among equal values; NaN sorts after
every number (before them when descending), as in PyTorch.
"""

import math

import numpy

from .. import _dtypes
from .._tensor import TensorBase, _normalize_dim, wrap
from ._dispatch import check_same_device, check_tensor, finish, operand_array, result_dtype
from ._registry import composite, public_names
from .creation import zeros_like
from .reduction import _return_type

_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)

sort_result, topk_result, kthvalue_result = _return_type("sort"), _return_type("topk"), _return_type("kthvalue")


def _ordered_input(name, input):
    check_tensor(name, input)
    if input.dtype.is_complex:
        raise RuntimeError(f"{name}(): does not support complex dtypes ({input.dtype.name}): complex numbers have no "
                           "order; sort their .real, .imag or .abs() instead")


# ----- the one stable order ---------------------------------------------------------------------------------------
def _sort_keys(xp, array):
    """``array`` as keys every backend's stable sort orders as PyTorch: -0.0 as 0.0 and each NaN as the positive NaN
    (a radix sort would put -0.0 before 0.0 and negative NaNs first), bools as bytes."""
    if array.dtype.kind == "b":
        return array.view(numpy.uint8)
    if array.dtype.kind == "f":
        return xp.where(xp.isnan(array), array.dtype.type(numpy.nan), array + array.dtype.type(0))
    return array


def _stable_order(device, array, axis, descending):
    """Indices (int64) that stably sort ``array`` along ``axis``; equal values keep their order in both directions,
    as PyTorch's ``stable=True``."""
    backend = device.backend
    xp = backend.xp
    with backend.activate():
        keys = _sort_keys(xp, xp.moveaxis(array, axis, -1))
        if descending:
            # Sorting the reversed keys and reversing the result keeps equal values in their first-to-last order.
            order = (keys.shape[-1] - 1) - backend.stable_argsort(keys[..., ::-1])[..., ::-1]
        else:
            order = backend.stable_argsort(keys)
        return xp.moveaxis(order.astype(numpy.int64, copy=False), -1, axis)


def _sorted_along(input, dim, descending):
    """(values array, indices array, axis) of ``input`` sorted along ``dim``; a 0-dim tensor is its own sort."""
    device = input._device
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        return array.copy(), device.backend.run(device.backend.xp.zeros, (), numpy.int64), axis
    order = _stable_order(device, array, axis, descending)
    values = device.backend.run(device.backend.xp.take_along_axis, array, order, axis)
    return values, order, axis


def _scattered_back(grad, input, dim, indices):
    """A gradient of values picked from ``input`` along ``dim`` at ``indices``, sent back to where they were."""
    if input.ndim == 0:
        return grad.reshape(()) if grad.numel() else zeros_like(input, dtype=grad.dtype)
    return zeros_like(input, dtype=grad.dtype).scatter(dim % input.ndim, indices, grad)


# ----- sort, argsort, msort ---------------------------------------------------------------------------------------
@composite(out=True, gradients={"input": lambda grad, input, dim, result: _scattered_back(grad, input, dim, result[1])})
def sort(input, dim=-1, descending=False, stable=False):
    """Values sorted along ``dim`` with the indices they came from, as ``(values, indices)``; NaN sorts last (first
    when ``descending``). The sort is always stable: equal values keep their order.

        >>> agnostic.tensor([3.0, 1.0, 2.0]).sort()
        agnostic.return_types.sort(
        values=tensor([1., 2., 3.]),
        indices=tensor([1, 2, 0]))
    """
    _ordered_input("sort", input)
    values, indices, _ = _sorted_along(input, dim, descending)
    device = input._device
    return sort_result(wrap(values, device), finish(indices, _dtypes.int64, device))


@composite()
def argsort(input, dim=-1, descending=False, stable=False):
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``); stable, NaN last (first when
    ``descending``).

        >>> agnostic.tensor([3, 1, 2]).argsort(descending=True)
        tensor([0, 2, 1])
    """
    _ordered_input("argsort", input)
    if input._data.ndim == 0:
        _normalize_dim(dim, 0)
        return finish(input._device.backend.run(input._device.backend.xp.zeros, (), numpy.int64), _dtypes.int64,
                      input._device)
    order = _stable_order(input._device, input._data, _normalize_dim(dim, input._data.ndim), descending)
    return finish(order, _dtypes.int64, input._device)


@composite()
def msort(input):
    """``input`` sorted along its first dimension (the values of ``sort(input, dim=0)``).

        >>> agnostic.tensor([[3, 1], [2, 4]]).msort()
        tensor([[2, 1],
                [3, 4]])
    """
    _ordered_input("msort", input)
    return sort(input, dim=0).values


# ----- topk, kthvalue ---------------------------------------------------------------------------------------------
@composite(out=True, gradients={"input": lambda grad, input, dim, result: _scattered_back(grad, input, dim, result[1])})
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (``largest=False``: smallest) values along ``dim`` with their indices, as
    ``(values, indices)``, largest first (smallest first); NaN counts as larger than any number. Among equal values
    the first ones are taken; the result is always sorted.

        >>> agnostic.tensor([1.0, 5.0, 3.0, 4.0]).topk(2)
        agnostic.return_types.topk(
        values=tensor([5., 4.]),
        indices=tensor([1, 3]))
    """
    _ordered_input("topk", input)
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    size = array.shape[axis] if array.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"selected index k out of range: topk() got k={k} for a dimension of size {size}; "
                           f"pass 0 <= k <= {size}")
    values, indices, axis = _sorted_along(input, dim, largest)
    device = input._device
    if array.ndim:
        with device.backend.activate():
            kept = (slice(None),) * axis + (slice(0, k),)
            values, indices = values[kept], indices[kept]
    return topk_result(wrap(values, device), finish(indices, _dtypes.int64, device))


def _kthvalue_gradient(grad, input, dim, keepdim, result):
    if input.ndim == 0:
        return grad
    axis = dim % input.ndim
    indices, grad = (result[1], grad) if keepdim else (result[1].unsqueeze(axis), grad.unsqueeze(axis))
    return zeros_like(input, dtype=grad.dtype).scatter(axis, indices, grad)


@composite(out=True, gradients={"input": _kthvalue_gradient})
def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value (counting from 1) along ``dim`` and its index, as ``(values, indices)``; NaN
    counts as larger than any number; among equal values, the first in a stable sort.

        >>> agnostic.tensor([[3.0, 1.0, 2.0], [6.0, 5.0, 4.0]]).kthvalue(2, dim=1)
        agnostic.return_types.kthvalue(
        values=tensor([2., 5.]),
        indices=tensor([2, 1]))
    """
    _ordered_input("kthvalue", input)
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    size = array.shape[axis] if array.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {axis} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}: got k={k} for a "
                           f"dimension of size {size}; pass 1 <= k <= {size}")
    values, indices, axis = _sorted_along(input, dim, False)
    device = input._device
    if array.ndim:
        with device.backend.activate():
            picked = (slice(None),) * axis + (slice(k - 1, k) if keepdim else k - 1,)
            values, indices = values[picked], indices[picked]
    return kthvalue_result(wrap(values, device), finish(indices, _dtypes.int64, device))


# ----- comparing whole tensors ------------------------------------------------------------------------------------
def _check_close_arguments(name, input, other, rtol, atol, equal_nan):
    check_tensor(name, input)
    check_tensor(name, other, 2, "other")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{name}(): {input.dtype.name} did not match {other.dtype.name}: both tensors must have "
                           f"one dtype; convert one with .to(other.dtype)")
    if equal_nan and input.dtype.is_complex:
        raise RuntimeError(f"{name} with equal_nan=True is not supported for complex inputs.")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")


@composite()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Where ``|input - other| <= atol + rtol * |other|`` (or the two are equal: infinities of one sign; NaNs with
    ``equal_nan``), broadcast; both tensors must have one dtype. Integers and bools are compared in the default
    float dtype, as PyTorch.

        >>> agnostic.isclose(agnostic.tensor([1.0, 2.0]), agnostic.tensor([1.0 + 1e-6, 2.1]))
        tensor([ True, False])
    """
    _check_close_arguments("isclose", input, other, rtol, atol, equal_nan)
    input, other = input.detach(), other.detach()
    close = input == other
    if equal_nan and input.dtype.is_floating_point:
        close = close | (input.isnan() & other.isnan())
    if rtol == 0 and atol == 0:
        return close
    if input.dtype.category < _FLOATING:
        # Subtracting first would wrap around in the integer dtype (uint8: 1 - 2 = 255).
        default = _dtypes.get_default_dtype()
        input, other = input.to(default), other.to(default)
    allowed = (other * rtol).abs() + atol
    actual = (input - other).abs()
    return close | (actual.isfinite() & (actual <= allowed))


@composite()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``isclose`` holds for every element pair (a Python bool).

        >>> agnostic.tensor([1.0, 2.0]).allclose(agnostic.tensor([1.0, 2.0 + 1e-7]))
        True
    """
    _check_close_arguments("allclose", input, other, rtol, atol, equal_nan)
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@composite()
def equal(input, other):
    """Whether the two tensors have the same shape and the same values (compared in their promoted dtype; NaN
    equals nothing) - a Python bool.

        >>> agnostic.tensor([1, 2]).equal(agnostic.tensor([1.0, 2.0]))
        True
    """
    check_tensor("equal", input)
    check_tensor("equal", other, 2, "other")
    device = check_same_device(input, other)
    if input._data is other._data:
        return True
    if input._data.shape != other._data.shape:
        return False
    dtype = _dtypes.promote_types(input.dtype, other.dtype)
    with device.backend.activate():
        same = operand_array(input, dtype, device) == operand_array(other, dtype, device)
        return bool(same.all())


# ----- unique values ----------------------------------------------------------------------------------------------
def _check_unique_input(name, input, dim):
    check_tensor(name, input)
    if input.dtype.is_complex:
        raise NotImplementedError(f'"{name}" not implemented for complex tensors ({input.dtype.name}): complex '
                                  "numbers have no order; take the unique values of .real and .imag separately")
    if dim is None:
        return None
    axis = _normalize_dim(dim, input._data.ndim, allow_scalar=False)
    shape = input._data.shape
    if 0 in shape and any(size == 0 for other_axis, size in enumerate(shape) if other_axis != axis):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
    return axis


def _rows(input, axis):
    """``input`` as a 2-D array with one row per index along ``axis`` (None: one element per row)."""
    array = input._data
    xp = input._device.backend.xp
    if axis is None:
        return array.reshape(-1, 1)
    moved = xp.moveaxis(array, axis, 0)
    return moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))


def _lexicographic_order(device, rows):
    """Indices that stably sort the rows of a 2-D array lexicographically: one stable sort per column, the last
    column first."""
    xp = device.backend.xp
    order = xp.arange(rows.shape[0], dtype=numpy.int64)
    for column in range(rows.shape[1] - 1, -1, -1):
        keys = _sort_keys(xp, rows[order, column])
        order = order[device.backend.stable_argsort(keys)]
    return order


def _unique(input, axis, in_order, return_inverse, return_counts):
    """``unique``'s and ``unique_consecutive``'s results: consecutive equal rows (after sorting them, unless
    ``in_order``) make one group; NaNs are never equal."""
    device = input._device
    xp = device.backend.xp
    shape = input._data.shape
    with device.backend.activate():
        rows = _rows(input, axis)
        count = rows.shape[0]
        order = None
        if not in_order and count:
            order = _lexicographic_order(device, rows) if rows.shape[1] != 1 else device.backend.stable_argsort(
                _sort_keys(xp, rows[:, 0]))
            rows = rows[order]
        changes = (rows[1:] != rows[:-1]).any(axis=1) if rows.shape[1] else xp.zeros(max(count - 1, 0), bool)
        starts_group = xp.concatenate([xp.ones(min(count, 1), bool), changes])
        values = rows[starts_group]
        if axis is None:
            values = values.reshape(-1)
        else:
            moved_shape = (values.shape[0],) + tuple(n for i, n in enumerate(shape) if i != axis)
            values = xp.moveaxis(values.reshape(moved_shape), 0, axis)
        outputs = [wrap(values, device)]
        if return_inverse:
            group = xp.cumsum(starts_group, dtype=numpy.int64) - 1
            if order is not None:
                inverse = xp.empty(count, numpy.int64)
                inverse[order] = group
                group = inverse
            outputs.append(finish(group.reshape(shape if axis is None else (count,)), _dtypes.int64, device))
        if return_counts:
            starts = xp.flatnonzero(starts_group)
            counts = xp.diff(xp.concatenate([starts, xp.asarray([count], dtype=starts.dtype)]))
            outputs.append(finish(counts, _dtypes.int64, device))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


@composite()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The unique elements of ``input`` (flattened), sorted; with ``dim``, its unique slices along ``dim``, sorted
    lexicographically. ``return_inverse`` adds each element's (slice's) index into the result, ``return_counts``
    how often each occurs. NaNs are all distinct, as in PyTorch.

        >>> agnostic.tensor([3, 1, 3, 2]).unique(return_counts=True)
        (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    axis = _check_unique_input("unique", input, dim)
    return _unique(input, axis, False, return_inverse, return_counts)


@composite()
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``input`` with each run of equal consecutive elements (slices along ``dim``) kept once, in order;
    ``return_inverse`` and ``return_counts`` as for ``unique``.

        >>> agnostic.tensor([1, 1, 2, 2, 1]).unique_consecutive(return_counts=True)
        (tensor([1, 2, 1]), tensor([2, 2, 1]))
    """
    axis = _check_unique_input("unique_consecutive", input, dim)
    return _unique(input, axis, True, return_inverse, return_counts)


# ----- searching sorted sequences ---------------------------------------------------------------------------------
def _search_side(right, side):
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left while "
                           "right was True")
    return side == "right"


def _check_searched(sorted_sequence, input, sorter):
    """Refuses what PyTorch's searchsorted refuses; returns the values as a Tensor or Python number."""
    check_tensor("searchsorted", sorted_sequence, 1, "sorted_sequence")
    sequence_shape = tuple(sorted_sequence._data.shape)
    if not sequence_shape:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if isinstance(input, numpy.generic):
        input = input.item()
    if not isinstance(input, TensorBase):
        if not isinstance(input, (bool, int, float)):
            raise TypeError(f"searchsorted(): argument 'input' must be a Tensor or a number, got "
                            f"{type(input).__name__}")
    values_shape = tuple(input._data.shape) if isinstance(input, TensorBase) else ()
    if len(sequence_shape) > 1 and not values_shape:
        raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension "
                           f"is 1, but we got boundaries tensor dim({len(sequence_shape)}) and input value's dim(0) "
                           f"numel(1)")
    if len(sequence_shape) > 1 and (len(values_shape) != len(sequence_shape)
                                    or values_shape[:-1] != sequence_shape[:-1]):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got boundaries "
                           f"tensor {list(sequence_shape)} and input value tensor {list(values_shape)}")
    if sorter is not None:
        check_tensor("searchsorted", sorter, None, "sorter")
        if sorter.dtype is not _dtypes.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{sorter.dtype.name}; convert it with .long()")
        if tuple(sorter._data.shape) != sequence_shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got boundary "
                               f"tensor {list(sequence_shape)} and got sorter tensor {list(sorter._data.shape)}")
    return input


def _binary_search(xp, sequence, values, right, sorter):
    """PyTorch's lower (upper, with ``right``) bound of each row of ``values`` in the same row of ``sequence``
    (2-D arrays, one row each), step for step: a midpoint goes right unless ``mid >= value`` (``mid > value``), so
    a NaN value lands past every element, and NaNs in the sequence behave as in PyTorch. Every lane takes the same
    ``length.bit_length()`` steps, which finish any search of ``length`` elements; no host synchronisation."""
    length = sequence.shape[1]
    start = xp.zeros(values.shape, numpy.int64)
    end = xp.full(values.shape, length, numpy.int64)
    for _ in range(length.bit_length()):
        middle = start + ((end - start) >> 1)
        position = xp.minimum(middle, length - 1)
        if sorter is not None:
            position = xp.take_along_axis(sorter, position, 1)
        middle_value = xp.take_along_axis(sequence, position, 1)
        past = ~(middle_value > values) if right else ~(middle_value >= values)
        searching = start < end
        start = xp.where(searching & past, middle + 1, start)
        end = xp.where(searching & ~past, middle, end)
    return start


def _search(sorted_sequence, input, out_int32, right, sorter):
    device = check_same_device(*[t for t in (sorted_sequence, input, sorter) if isinstance(t, TensorBase)])
    dtype = result_dtype(sorted_sequence, input)
    if dtype.is_complex or dtype is _dtypes.bool:
        raise NotImplementedError(f'"searchsorted" not implemented for {dtype.name} values; they have no order that '
                                  "search can use")
    xp = device.backend.xp
    sequence = operand_array(sorted_sequence, dtype, device)
    with device.backend.activate():
        values = xp.asarray(operand_array(input, dtype, device))
        shape = values.shape
        rows = math.prod(sequence.shape[:-1])
        batched = sequence.ndim > 1
        sequence = sequence.reshape(rows, sequence.shape[-1])
        values = values.reshape(rows, shape[-1]) if batched else values.reshape(1, values.size)
        order = None
        if sorter is not None:
            order = sorter._data.reshape(sequence.shape)
            if order.size and bool(((order < 0) | (order >= sequence.shape[1])).any()):
                raise RuntimeError("torch.searchsorted(): sorter index out of range")
        positions = _binary_search(xp, sequence, values, right, order).reshape(shape)
    return finish(positions, _dtypes.int32 if out_int32 else _dtypes.int64, device)


@composite(out=True, method=False)
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value of ``input`` would go in ``sorted_sequence`` (sorted along its last dimension) to keep it
    sorted: the first such index, or the last with ``right=True`` / ``side="right"``. A sequence of several
    dimensions is searched row by row, with ``input``'s rows; ``sorter`` gives the order of an unsorted sequence.
    int64 indices (int32 with ``out_int32``).

        >>> agnostic.searchsorted(agnostic.tensor([1, 3, 5, 7]), agnostic.tensor([3, 6]))
        tensor([1, 3])
    """
    right = _search_side(right, side)
    input = _check_searched(sorted_sequence, input, sorter)
    return _search(sorted_sequence, input, out_int32, right, sorter)


@composite(out=True, method=False)
def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of ``input`` among the 1-D sorted ``boundaries``: ``i`` such that
    ``boundaries[i-1] < x <= boundaries[i]`` (``boundaries[i-1] <= x < boundaries[i]`` with ``right=True``).

        >>> agnostic.bucketize(agnostic.tensor([0.5, 3.0, 9.0]), agnostic.tensor([1.0, 3.0, 5.0]))
        tensor([0, 1, 3])
    """
    check_tensor("bucketize", boundaries, 2, "boundaries")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim}); flatten "
                           "it with .reshape(-1) if its values are sorted")
    input = _check_searched(boundaries, input, None)
    return _search(boundaries, input, out_int32, right, None)


__all__ = public_names(globals())
