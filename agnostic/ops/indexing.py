"""Indexing: ``t[key]`` and ``t[key] = value`` with PyTorch's rules, plus gather/scatter/index_select/masked ops and
the fills; each declared once with its gradient.

Index bounds are checked here, so an out-of-range index is an IndexError on every device (CuPy would wrap it
around silently):

    >>> cupy.arange(3)[cupy.array([5])]     # array([2]): wrapped
    >>> agnostic.arange(3, device="cuda")[agnostic.tensor([5])]   # IndexError, as on the CPU
"""

import numpy

from .. import _backend, _dtypes
from .._device import CPU
from .._tensor import TensorBase, _check_broadcast_into, _check_writable, _normalize_dim, wrap
from ..autograd.derivatives import passes_through
from ._dispatch import check_same_device, finish, keep_negative_zero, operand_array
from ._registry import composite, in_place_of, public_names, tensor_method
from .creation import tensor as make_tensor, zeros, zeros_like
from .shape import broadcast_shapes

_INTEGER_KINDS = "iu"


def _index_array(value, device):
    """A Tensor, list or NumPy array used as an index, as a backend array on ``device``."""
    if isinstance(value, TensorBase):
        array = value._data
        if value._device is not device:
            array = _backend.move(array, value._device, device)
        return array
    array = numpy.asarray(value)
    if array.dtype.kind == "f" and array.size == 0:
        array = array.astype(numpy.int64)
    if array.dtype.kind not in "iub":
        raise IndexError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {array.dtype}; "
            "convert the index with .long()"
        )
    return _backend.move(array, CPU, device)


def _normalize_key(tensor, key):
    """The key as a backend index tuple, checked against the tensor's shape (bounds, mask shapes, slice steps)."""
    items = key if isinstance(key, tuple) else (key,)
    device = tensor._device
    shape = tensor._data.shape
    consuming = sum(_dims_consumed(item) for item in items)
    if consuming > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
    converted = []
    dim = 0
    for item in items:
        if item is None:
            converted.append(None)
        elif item is Ellipsis:
            converted.append(Ellipsis)
            dim += len(shape) - consuming
        elif isinstance(item, slice):
            if item.step is not None and _as_int(item.step) <= 0:
                raise ValueError("step must be greater than zero")
            converted.append(item)
            dim += 1
        elif isinstance(item, (TensorBase, list, numpy.ndarray)):
            array = _index_array(item, device)
            if array.dtype.kind == "b":
                _check_mask(array.shape, shape[dim:dim + array.ndim], dim)
                dim += array.ndim
            else:
                _check_bounds(array, shape[dim], dim)
                dim += 1
            converted.append(array)
        elif isinstance(item, (bool, numpy.bool_)):
            converted.append(item)
        else:
            index = _as_int(item)
            size = shape[dim]
            if not -size <= index < size:
                raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
            converted.append(index)
            dim += 1
    if not any(item is Ellipsis for item in converted):
        converted.append(Ellipsis)  # keeps NumPy from returning a scalar: t[0] stays a 0-dim view
    return tuple(converted)


def _dims_consumed(item):
    if item is None or item is Ellipsis or isinstance(item, (bool, numpy.bool_)):
        return 0
    if isinstance(item, TensorBase) and item.dtype is _dtypes.bool:
        return item._data.ndim
    if isinstance(item, (list, numpy.ndarray)):
        array = numpy.asarray(item)
        return array.ndim if array.dtype.kind == "b" else 1
    return 1


def _as_int(value):
    try:
        return value.__index__()
    except (AttributeError, TypeError):
        raise IndexError(
            f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid indices "
            f"(got {type(value).__name__})"
        ) from None


def _check_mask(mask_shape, indexed_shape, dim):
    for offset, (mask_size, size) in enumerate(zip(mask_shape, indexed_shape)):
        if mask_size != size:
            raise IndexError(
                f"The shape of the mask {list(mask_shape)} at index {offset} does not match the shape of the indexed "
                f"tensor {list(indexed_shape)} at index {dim + offset}"
            )
    if len(indexed_shape) < len(mask_shape):
        raise IndexError("too many indices for tensor: the boolean mask has more dimensions than remain")


def _check_bounds(array, size, dim, negative=True, error=IndexError):
    """Refuse indices outside ``[-size, size)`` (``[0, size)`` without ``negative``) with one read-back."""
    if array.size == 0:
        return
    lowest = -size if negative else 0
    with _backend.device_of_array(array).backend.activate():
        # Shifted so the valid range starts at 0 and read as unsigned, an index below it turns huge: one
        # comparison and one reduction find both kinds of bad index.
        shifted = array.astype(numpy.int64) - lowest
        if not bool((shifted.view(numpy.uint64) >= size - lowest).any()):
            return
        bad = int(array[(array < lowest) | (array >= size)].ravel()[0])
    if error is IndexError and not negative:
        raise IndexError("index out of range in self")
    raise error(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _accumulated_at(target, key, values):
    """``target[key] += values`` in place, adding repeated advanced indices up (not last-write-wins); ``target``."""
    index = _normalize_key(target, key)
    array = target._data
    advanced = any(not isinstance(item, (slice, int, type(None), type(Ellipsis), bool)) for item in index)
    with target._device.backend.activate():
        if advanced:
            target._device.backend.scatter_add(array, index, values._data)
        else:
            array[index] += values._data
    return target


@tensor_method(name="__getitem__", node="select", is_view=True, shape_only=True, gradients={
    "tensor": lambda grad, tensor, key: _accumulated_at(zeros_like(tensor, dtype=grad.dtype), key, grad)})
def getitem(tensor, key):
    """``tensor[key]``: basic indexing gives a view, advanced indexing (tensors, lists, masks) a copy.

        >>> agnostic.tensor([[1, 2], [3, 4]])[1, [0, 0]]
        tensor([3, 3])
    """
    if type(key) is slice and (key.step is None or type(key.step) is int and key.step > 0) and tensor._data.ndim:
        return wrap(tensor._data[key], tensor._device)
    if type(key) is int and tensor._data.ndim:
        size = tensor._data.shape[0]
        if not -size <= key < size:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size {size}")
        return wrap(tensor._data[key, ...], tensor._device)
    index = _normalize_key(tensor, key)
    return wrap(tensor._device.backend.run(tensor._data.__getitem__, index), tensor._device)


def _zeroed_at(grad, key):
    gradient = grad.clone()
    gradient[key] = 0
    return gradient


@tensor_method(name="__setitem__", node="index_put", overwrites=True, shape_only=True, gradients={
    "tensor": _zeroed_at, "value": lambda grad, key: grad[key]})
def setitem(tensor, key, value):
    """``tensor[key] = value``: the value is broadcast to the selection and cast to the tensor's dtype.

        >>> t = agnostic.zeros(3); t[1:] = 2.0; t
        tensor([0., 2., 2.])
    """
    _check_writable(tensor)
    index = _normalize_key(tensor, key)
    device = tensor._device
    if isinstance(value, TensorBase):
        check_same_device(tensor, value)
        array = operand_array(value, tensor.dtype, device)
    elif isinstance(value, (bool, int, float, complex, numpy.generic)):
        array = operand_array(value if not isinstance(value, numpy.generic) else value.item(), tensor.dtype, device)
        array = keep_negative_zero(array, device)
    else:
        array = operand_array(make_tensor(value, device=device), tensor.dtype, device)
    with device.backend.activate():
        try:
            tensor._data[index] = array
        except ValueError:
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(array.shape)} cannot be broadcast to "
                               f"indexing result of shape {list(tensor._data[index].shape)}") from None


def _along_dim_index(xp, index, dim):
    """An advanced-index tuple selecting ``index[i][j]...`` along ``dim`` and the positions elsewhere."""
    grids = []
    for axis, size in enumerate(index.shape):
        if axis == dim:
            grids.append(index)
        else:
            shape = [1] * index.ndim
            shape[axis] = size
            grids.append(xp.arange(size).reshape(shape))
    return tuple(grids)


def _check_index_tensor(name, input, dim, index):
    if not isinstance(index, TensorBase) or index.dtype is not _dtypes.int64:
        got = index.dtype if isinstance(index, TensorBase) else type(index).__name__
        raise RuntimeError(f"{name}(): Expected dtype int64 for index, got {got}; convert it with .long()")
    check_same_device(input, index)
    ndim = input._data.ndim
    if index._data.ndim != ndim and not (ndim == 0 and index._data.ndim <= 1):
        raise RuntimeError(f"{name}(): Index tensor must have the same number of dimensions as input tensor")
    dim = _normalize_dim(dim, ndim)
    for axis, (size, limit) in enumerate(zip(index._data.shape, input._data.shape)):
        if axis != dim and size > limit:
            raise RuntimeError(
                f"{name}(): Size does not match at dimension {axis} expected index {list(index.shape)} to be "
                f"smaller than self {list(input.shape)} apart from dimension {dim}"
            )
    if ndim:
        _check_bounds(index._data, input._data.shape[dim], dim, negative=False, error=RuntimeError)
    return dim


@composite(shape_only=True, gradients={
    "input": lambda grad, input, dim, index: zeros_like(input, dtype=grad.dtype).scatter_add(dim, index, grad)})
def gather(input, dim, index):
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and likewise for other dims).

        >>> agnostic.tensor([[1, 2], [3, 4]]).gather(1, agnostic.tensor([[1], [0]]))
        tensor([[2], [3]])
    """
    dim = _check_index_tensor("gather", input, dim, index)
    if input._data.ndim == 0:
        return input.clone().reshape(index._data.shape)
    xp = input._device.backend.xp
    with input._device.backend.activate():
        return wrap(input._data[_along_dim_index(xp, index._data, dim)], input._device)


def _unwritten(grad, dim, index, reduce):
    """The gradient of what scatter leaves of its input: zero where it wrote."""
    if reduce is not None:
        raise RuntimeError("scatter(reduce=...) is not differentiable; use scatter_add")
    return grad.scatter(dim, index, 0.0)


@composite(shape_only=True, gradients={"input": _unwritten, "src": lambda grad, dim, index: grad.gather(dim, index)})
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src`` (a tensor or scalar) written at ``index`` along ``dim``.

        >>> agnostic.zeros(3).scatter(0, agnostic.tensor([2]), 5.0)
        tensor([0., 0., 5.])
    """
    return scatter_(input.clone(), dim, index, src, value=value, reduce=reduce)


@in_place_of(scatter)
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place ``scatter``: ``self[index[i][j]][j] = src[i][j]`` for ``dim=0``; ``reduce`` 'add' or 'multiply'.

        >>> agnostic.zeros(3).scatter_(0, agnostic.tensor([0, 0]), agnostic.ones(2), reduce="add")
        tensor([2., 0., 0.])
    """
    _check_writable(self)
    source = value if src is None else src
    dim = _check_index_tensor("scatter", self, dim, index)
    device = self._device
    xp = device.backend.xp
    if isinstance(source, TensorBase):
        check_same_device(self, source)
        if source.dtype is not self.dtype:
            raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype ({self.dtype} vs "
                               f"{source.dtype}); convert src with .to(self.dtype)")
        values = source._data[tuple(slice(0, n) for n in index._data.shape)]
    else:
        values = operand_array(source, self.dtype, device)
    with device.backend.activate():
        positions = _along_dim_index(xp, index._data, dim)
        if reduce is None:
            self._data[positions] = values
        elif reduce in ("add", "sum"):
            device.backend.scatter_add(self._data, positions, xp.broadcast_to(xp.asarray(values), index._data.shape))
        elif reduce in ("multiply", "prod"):
            device.backend.scatter_multiply(self._data, positions,
                                            xp.broadcast_to(xp.asarray(values), index._data.shape))
        else:
            raise RuntimeError(f"scatter(): reduce argument must be 'add' or 'multiply', got {reduce!r}")
    return self


@composite(shape_only=True, gradients={"input": passes_through,
                                       "src": lambda grad, dim, index: grad.gather(dim, index)})
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim`` (repeated indices accumulate).

        >>> agnostic.zeros(3).scatter_add(0, agnostic.tensor([1, 1]), agnostic.ones(2))
        tensor([0., 2., 0.])
    """
    return scatter_add_(input.clone(), dim, index, src)


@in_place_of(scatter_add)
def scatter_add_(self, dim, index, src):
    """In-place ``scatter_add``.

        >>> agnostic.ones(2).scatter_add_(0, agnostic.tensor([1]), agnostic.ones(1))
        tensor([1., 2.])
    """
    return scatter_(self, dim, index, src, reduce="add")




@composite(shape_only=True, gradients={"input": lambda grad, input, dim, index: zeros_like(
    input, dtype=grad.dtype).index_add(dim, index.reshape(-1), grad)})
def index_select(input, dim, index):
    """The entries of ``input`` at the 1-D ``index`` along ``dim`` (a copy).

        >>> agnostic.tensor([[1, 2], [3, 4]]).index_select(1, agnostic.tensor([1]))
        tensor([[2], [4]])
    """
    if not isinstance(index, TensorBase) or index.dtype.category != 1 or index._data.ndim > 1:
        raise IndexError("index_select(): index must be a 1-D integer tensor (int64 or int32)")
    check_same_device(input, index)
    array = input._data
    axis = _normalize_dim(dim, array.ndim)
    if array.ndim == 0:
        _check_bounds(index._data, 1, 0, negative=False)
        return input.clone().reshape(index._data.shape)
    _check_bounds(index._data, array.shape[axis], axis, negative=False)
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.take, array, index._data.reshape(-1), axis=axis), input._device)


@composite(shape_only=True, gradients={"input": lambda grad, mask: grad.masked_fill(mask, 0.0),
                                       "value": lambda grad, mask: grad.where(mask, 0.0).sum()})
def masked_fill(input, mask, value):
    """A copy of ``input`` with ``value`` where the bool ``mask`` (broadcast to ``input``) is true.

        >>> agnostic.tensor([1.0, 2.0]).masked_fill(agnostic.tensor([True, False]), 0.0)
        tensor([0., 2.])
    """
    return masked_fill_(input.clone(), mask, value)


@in_place_of(masked_fill)
def masked_fill_(self, mask, value):
    """In-place ``masked_fill``; ``self`` keeps its dtype and shape.

        >>> agnostic.ones(2).masked_fill_(agnostic.tensor([False, True]), 3.0)
        tensor([1., 3.])
    """
    _check_writable(self)
    if not isinstance(mask, TensorBase) or mask.dtype is not _dtypes.bool:
        raise RuntimeError("masked_fill_(): expected the mask to be a bool tensor; use mask.bool()")
    check_same_device(self, mask)
    _check_broadcast_into(self, mask._data.shape, "masked_fill_")
    if isinstance(value, TensorBase):
        if value._data.ndim:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got a tensor with "
                               f"{value._data.ndim} dimension(s)")
        value = value.item()
    fill = operand_array(value, self.dtype, self._device)
    xp = self._device.backend.xp
    with self._device.backend.activate():
        xp.copyto(self._data, fill, where=operand_array(mask, _dtypes.bool, self._device))
    return self


def _masked_select_gradient(grad, input, mask):
    shape = broadcast_shapes(input.shape, mask.shape)
    gradient = zeros(shape, dtype=grad.dtype, device=grad.device)
    gradient[mask.expand(shape)] = grad
    return gradient


@composite(shape_only=True, gradients={"input": _masked_select_gradient})
def masked_select(input, mask):
    """The elements of ``input`` where ``mask`` is true, as a 1-D tensor.

        >>> agnostic.tensor([[1, 2], [3, 4]]).masked_select(agnostic.tensor([True, False]))
        tensor([1, 3])
    """
    check_same_device(input, mask)
    xp = input._device.backend.xp
    with input._device.backend.activate():
        data, select = xp.broadcast_arrays(input._data, mask._data)
        return wrap(data[select], input._device)


@composite()
def nonzero(input, *, as_tuple=False):
    """Indices of nonzero elements: an ``(n, ndim)`` int64 tensor, or a tuple of 1-D tensors with ``as_tuple``.

        >>> agnostic.tensor([0, 3, 0, 5]).nonzero(as_tuple=True)
        (tensor([1, 3]),)
    """
    xp = input._device.backend.xp
    array = input._data if input._data.ndim else input._data.reshape(1)
    with input._device.backend.activate():
        found = xp.nonzero(array)
        if as_tuple:
            return tuple(finish(a, _dtypes.int64, input._device) for a in found)
        stacked = xp.stack(found, axis=1) if found else xp.zeros((0, 0), numpy.int64)
    return finish(stacked, _dtypes.int64, input._device)


@composite(shape_only=True, gradients={"input": lambda grad, input, index: _accumulated_at(
    zeros(input.numel(), dtype=grad.dtype, device=grad.device), index.reshape(-1), grad.reshape(-1)
).reshape(input.shape)})
def take(input, index):
    """Elements of the flattened ``input`` at ``index`` (result has ``index``'s shape).

        >>> agnostic.tensor([[1, 2], [3, 4]]).take(agnostic.tensor([3, 0]))
        tensor([4, 1])
    """
    check_same_device(input, index)
    _check_bounds(index._data, input._data.size, 0)
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.take, input._data.reshape(-1), index._data), input._device)


@composite(shape_only=True, gradients={
    "input": passes_through, "source": lambda grad, dim, index, alpha: grad.index_select(dim, index) * alpha})
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim`` (repeats accumulate).

        >>> agnostic.zeros(3).index_add(0, agnostic.tensor([0, 0]), agnostic.ones(2), alpha=2)
        tensor([4., 0., 0.])
    """
    return index_add_(input.clone(), dim, index, source, alpha=alpha)


@in_place_of(index_add)
def index_add_(self, dim, index, source, *, alpha=1):
    """In-place ``index_add``: ``self[..., index[i], ...] += alpha * source[..., i, ...]`` along ``dim``.

        >>> agnostic.ones(2).index_add_(0, agnostic.tensor([1]), agnostic.ones(1))
        tensor([1., 2.])
    """
    _check_writable(self)
    if not isinstance(index, TensorBase) or index.dtype.category != 1 or index._data.ndim > 1:
        raise IndexError("index_add_(): index must be a 1-D integer tensor")
    check_same_device(self, index, source)
    axis = _normalize_dim(dim, self._data.ndim)
    size = self._data.shape[axis] if self._data.ndim else 1
    _check_bounds(index._data, size, axis)
    values = operand_array(source, self.dtype, self._device)
    if alpha != 1:
        values = values * values.dtype.type(alpha)
    with self._device.backend.activate():
        if self._data.ndim == 0:
            self._data[...] += values.sum()
            return self
        positions = (slice(None),) * axis + (index._data.reshape(-1),)
        self._device.backend.scatter_add(self._data, positions, values)
    return self


# ----- fills ------------------------------------------------------------------------------------------------------
@tensor_method(overwrites=True, shape_only=True, gradients={"value": passes_through})
def fill_(self, value):
    """Fill ``self`` with ``value`` (a number or 0-dim tensor) in place.

        >>> agnostic.empty(2).fill_(7)
        tensor([7., 7.])
    """
    _check_writable(self)
    if isinstance(value, TensorBase):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions")
        value = value.item()
    value = keep_negative_zero(operand_array(value, self.dtype, self._device), self._device)
    with self._device.backend.activate():
        self._data[...] = value
    return self


@tensor_method(overwrites=True, shape_only=True)
def zero_(self):
    """Fill ``self`` with zeros in place.

        >>> agnostic.ones(2).zero_()
        tensor([0., 0.])
    """
    return fill_(self, 0)


__all__ = public_names(globals())
