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
from ._dispatch import check_same_device, check_tensor, finish, keep_negative_zero, operand_array
from ._registry import composite, in_place_of, public_names, tensor_method
from ..autograd.grad_mode import is_grad_enabled
from .creation import arange, ones_like, tensor as make_tensor, zeros, zeros_like
from .shape import broadcast_shapes

_INTEGER_KINDS = "iu"


def _index_array(value, device):
    """A Tensor, list or NumPy array used as an index, as a backend array on ``device``."""
    if isinstance(value, TensorBase):
        array = value._data
        if array.dtype.kind not in "iub":
            raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {value.dtype}; "
                             "convert the index with .long()")
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


def _getitem_gradient(grad, tensor, key):
    """``grad`` added into zeros shaped like ``tensor`` at ``key``; in a recorded backward (``create_graph=True``)
    from differentiable ops, so that second derivatives through indexing are right: the flat positions ``key``
    selects, and ``index_add`` there."""
    if not is_grad_enabled():
        return _accumulated_at(zeros_like(tensor, dtype=grad.dtype), key, grad)
    count = tensor.numel()
    positions = arange(count, device=tensor.device).reshape(tensor.shape)[key].reshape(-1)
    flat = zeros(count, dtype=grad.dtype, device=grad.device)
    return flat.index_add(0, positions, grad.reshape(-1)).reshape(tensor.shape)


@tensor_method(name="__getitem__", node="select", is_view=True, shape_only=True, gradients={
    "tensor": _getitem_gradient})
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


@composite(out=True, shape_only=True, gradients={
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


@composite(out=True, shape_only=True,
           gradients={"input": _unwritten, "src": lambda grad, dim, index: grad.gather(dim, index)})
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


@composite(out=True, shape_only=True, gradients={"input": passes_through,
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




@composite(out=True, shape_only=True, gradients={"input": lambda grad, input, dim, index: zeros_like(
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


@composite(out=True, shape_only=True, gradients={"input": _masked_select_gradient})
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


@composite(out=True)
def nonzero(input, *, as_tuple=False):
    """Indices of nonzero elements: an ``(n, ndim)`` int64 tensor, or a tuple of 1-D tensors with ``as_tuple``.

        >>> agnostic.tensor([0, 3, 0, 5]).nonzero(as_tuple=True)
        (tensor([1, 3]),)
    """
    backend = input._device.backend
    xp = backend.xp
    array = input._data if input._data.ndim else input._data.reshape(1)
    with backend.activate():
        found = backend.ops.nonzero(array)
        if as_tuple:
            return tuple(finish(a, _dtypes.int64, input._device) for a in found)
        stacked = xp.stack(found, axis=1)
        if input._data.ndim == 0:  # one row per nonzero (0 or 1), of no coordinates
            stacked = stacked[:, :0]
    return finish(stacked, _dtypes.int64, input._device)


@composite()
def argwhere(input):
    """The indices of the nonzero elements, one row each: ``nonzero(input)``.

        >>> agnostic.tensor([[0, 1], [2, 0]]).argwhere().tolist()
        [[0, 1], [1, 0]]
    """
    return nonzero(input)


@composite(out=True, shape_only=True, gradients={"input": lambda grad, input, index: _accumulated_at(
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


@composite(out=True, shape_only=True, gradients={
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


# ----- scatter_reduce -----------------------------------------------------------------------------------------------
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _region(tensor, shape):
    """``tensor``'s leading block of ``shape`` (the part of ``src`` that an index of that shape reads)."""
    if tuple(tensor.shape) == tuple(shape):
        return tensor
    return tensor[tuple(slice(0, size) for size in shape)]


def _padded_to(gradient, like):
    """A gradient of ``like``'s leading block, with zeros for the rest of ``like``."""
    if tuple(gradient.shape) == tuple(like.shape):
        return gradient
    padded = zeros_like(like, dtype=gradient.dtype)
    padded[tuple(slice(0, size) for size in gradient.shape)] = gradient
    return padded


def _scatter_reduce_gradients(grad, input, dim, index, src, reduce, include_self, result):
    """(input's, src's) gradients of ``scatter_reduce``, as PyTorch's ``scatter_reduce_backward``: prod handles zeros
    by recomputing without them; amax/amin share the gradient evenly among the elements equal to the result."""
    if input.ndim == 0:
        flat = _scatter_reduce_gradients(grad.reshape(1), input.reshape(1), 0, index.reshape(-1), src.reshape(-1),
                                         reduce, include_self, result.reshape(1))
        return flat[0].reshape(()), flat[1].reshape(src.shape)
    dim %= input.ndim
    part = _region(src, index.shape)
    if reduce == "sum":
        grad_input, grad_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        counts = (ones_like(grad) if include_self else zeros_like(grad)).scatter_add(
            dim, index, ones_like(part, dtype=grad.dtype))
        counts = counts.masked_fill(counts == 0, 1)
        grad_input = grad / counts
        grad_src = grad_input.gather(dim, index)
    elif reduce == "prod":
        masked_input = input.masked_fill(input == 0, 1)
        masked_result = masked_input.scatter_reduce(dim, index, part, "prod", include_self=include_self)
        grad_input = grad * masked_result / masked_input
        src_zero = part == 0
        zeros_there = zeros_like(grad).scatter_add(dim, index, src_zero.to(grad.dtype)).gather(dim, index)
        single_zero = src_zero & (zeros_there == 1)
        # Where src holds its group's only zero, result / src would be 0 / 0: the product of the others instead.
        masked_src_result = input.scatter_reduce(dim, index, part.masked_fill(single_zero, 1), "prod",
                                                 include_self=include_self)
        grad_src = (grad * masked_src_result).gather(dim, index).where(
            single_zero, (grad * result).gather(dim, index) / part.masked_fill(src_zero, 1))
    else:
        value = result.gather(dim, index)
        input_is_result = (input == result).to(grad.dtype)
        src_is_result = (part == value).to(grad.dtype)
        shares = grad / input_is_result.scatter_add(dim, index, src_is_result)
        grad_input = input_is_result * shares
        grad_src = src_is_result * shares.gather(dim, index)
    if not include_self:
        grad_input = grad_input.scatter(dim, index, 0.0)
    return grad_input, _padded_to(grad_src, src)


@composite(out=True, gradients={
    "input": lambda grad, input, dim, index, src, reduce, include_self, result: _scatter_reduce_gradients(
        grad, input, dim, index, src, reduce, include_self, result)[0],
    "src": lambda grad, input, dim, index, src, reduce, include_self, result: _scatter_reduce_gradients(
        grad, input, dim, index, src, reduce, include_self, result)[1]})
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of ``input`` with the ``src`` values at ``index`` along ``dim`` reduced into it: ``reduce`` is "sum",
    "prod", "mean", "amax" or "amin"; without ``include_self`` the written positions' own values are left out.
    Integer means round down, as PyTorch's.

        >>> agnostic.ones(2).scatter_reduce(0, agnostic.tensor([0, 0]), agnostic.tensor([5., 3.]), "amax")
        tensor([5., 1.])
    """
    return scatter_reduce_(input.clone(), dim, index, src, reduce, include_self=include_self)


def _lowest(dtype):
    if dtype.kind == "f":
        return -numpy.inf
    return False if dtype.kind == "b" else numpy.iinfo(dtype).min


def _highest(dtype):
    if dtype.kind == "f":
        return numpy.inf
    return True if dtype.kind == "b" else numpy.iinfo(dtype).max


# What a written position starts from without include_self: the reduction's identity.
_STARTS = {"sum": lambda dtype: 0, "mean": lambda dtype: 0, "prod": lambda dtype: 1, "amax": _lowest, "amin": _highest}


@in_place_of(scatter_reduce)
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place ``scatter_reduce``: ``self[index[i][j]][j]`` reduced with ``src[i][j]`` for ``dim=0``.

        >>> agnostic.zeros(2).scatter_reduce_(0, agnostic.tensor([1, 1]), agnostic.tensor([2., 4.]), "mean")
        tensor([0., 2.])
    """
    _check_writable(self)
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    dim = _check_index_tensor("scatter_reduce", self, dim, index)
    check_tensor("scatter_reduce", src, 4, "src")
    check_same_device(self, src)
    if src.dtype is not self.dtype:
        raise RuntimeError(f"scatter(): Expected self.dtype to be equal to src.dtype ({self.dtype} vs {src.dtype}); "
                           "convert src with .to(self.dtype)")
    if src._data.ndim != index._data.ndim or any(
            size > limit for size, limit in zip(index._data.shape, src._data.shape)):
        raise RuntimeError(f"scatter_reduce(): Expected index {list(index.shape)} to be smaller than src "
                           f"{list(src.shape)} in every dimension")
    device = self._device
    xp = device.backend.xp
    target, indices = self._data, index._data
    if target.ndim == 0:
        target, indices = target.reshape(1), indices.reshape(-1)
    values = src._data.reshape(indices.shape) if src._data.ndim == 0 else _region(src, indices.shape)._data
    with device.backend.activate():
        positions = _along_dim_index(xp, indices, dim)
        if not include_self:
            target[positions] = _STARTS[reduce](target.dtype)
        if reduce in ("sum", "mean"):
            device.backend.scatter_add(target, positions, values)
        elif reduce == "prod":
            device.backend.scatter_multiply(target, positions, values)
        elif reduce == "amax":
            device.backend.ops.scatter_maximum(target, positions, values)
        else:
            device.backend.ops.scatter_minimum(target, positions, values)
        if reduce == "mean":
            # int32 counts: exact, and a dtype every backend's atomic add takes.
            counts = xp.full(target.shape, 1 if include_self else 0, dtype=numpy.int32)
            device.backend.scatter_add(counts, positions, xp.ones(values.shape, dtype=numpy.int32))
            counts[counts == 0] = 1
            counts = counts.astype(target.dtype)  # PyTorch counts in self's dtype
            if target.dtype.kind in "fc":
                xp.divide(target, counts, out=target)
            else:
                xp.floor_divide(target, counts, out=target)
    return self


# ----- index_copy, index_fill, index_put, masked_scatter, take_along_dim -------------------------------------------
def _check_dim_index(name, input, dim, index, negative=True):
    """The axis ``dim`` names and the 0-D/1-D int64 ``index`` along it as a 1-D array, bounds checked (``negative``:
    whether indices from the end are allowed)."""
    check_tensor(name, index, 2, "index")
    check_same_device(input, index)
    if index.dtype is not _dtypes.int64:
        raise RuntimeError(f"{name}(): Expected a long tensor for index, but got {index.dtype}; convert it with "
                           ".long()")
    if index._data.ndim > 1:
        raise IndexError(f"{name}(): Index should have dimension 1 or 0 (got {index._data.ndim})")
    ndim = input._data.ndim
    axis = _normalize_dim(dim, ndim)
    size = input._data.shape[axis] if ndim else 1
    try:
        _check_bounds(index._data, size, axis, negative=negative, error=RuntimeError)
    except RuntimeError as error:
        raise IndexError(f"{name}(): {error}") from None
    return axis, index._data.reshape(-1)


def _along(ndim, axis, positions):
    return (slice(None),) * axis + (positions,) if ndim else (Ellipsis,)


@composite(out=True, gradients={"input": lambda grad, dim, index: grad.index_fill(dim, index, 0),
                      "source": lambda grad, source, dim, index: grad.index_select(dim, index.reshape(-1)).reshape(
                          source.shape) if grad.ndim else grad.reshape(source.shape)})
def index_copy(input, dim, index, source):
    """A copy of ``input`` with ``source``'s slices along ``dim`` written at the positions ``index`` lists
    (an index listed twice: which slice lands is undefined, as in PyTorch).

        >>> agnostic.zeros(3).index_copy(0, agnostic.tensor([2, 0]), agnostic.tensor([5., 7.]))
        tensor([7., 0., 5.])
    """
    return index_copy_(input.clone(), dim, index, source)


@in_place_of(index_copy)
def index_copy_(self, dim, index, source):
    """In-place ``index_copy``: ``self[..., index[i], ...] = source[..., i, ...]`` along ``dim``.

        >>> agnostic.zeros(2, 2).index_copy_(1, agnostic.tensor([1]), agnostic.ones(2, 1)).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
    """
    _check_writable(self)
    axis, positions = _check_dim_index("index_copy_", self, dim, index, negative=False)
    check_same_device(self, source)
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{self.dtype} and (source) {source.dtype}; convert source with .to(self.dtype)")
    ndim = self._data.ndim
    count = source._data.shape[axis] if source._data.ndim else 1
    if count != positions.shape[0]:
        raise RuntimeError(f"index_copy_(): Number of indices ({positions.shape[0]}) should be equal to "
                           f"source.size(dim) ({count})")
    if source._data.ndim != ndim and not (ndim <= 1 and source._data.ndim <= 1):
        raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                         f"match. Source dimensionality ({source._data.ndim}), destination dimensionality ({ndim})")
    expected = self._data.shape[:axis] + (count,) + self._data.shape[axis + 1:] if ndim else ()
    if ndim > 1 and source._data.shape != expected:
        raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. Destination "
                           f"slice shape: {list(expected)} and source slice shape: {list(source.shape)}")
    with self._device.backend.activate():
        self._data[_along(ndim, axis, positions)] = source._data.reshape(expected)
    return self


def _index_fill_value_gradient(grad, dim, index, value):
    if not isinstance(value, TensorBase):
        return None
    return grad.index_select(dim, index.reshape(-1)).sum() if grad.ndim else grad.sum() * index.numel()


@composite(gradients={"input": lambda grad, dim, index: grad.index_fill(dim, index, 0),
                      "value": _index_fill_value_gradient})
def index_fill(input, dim, index, value):
    """A copy of ``input`` with ``value`` (a number or 0-dim tensor) at the positions ``index`` lists along ``dim``.

        >>> agnostic.zeros(2, 3).index_fill(1, agnostic.tensor([0, 2]), -1.0)[0]
        tensor([-1.,  0., -1.])
    """
    return index_fill_(input.clone(), dim, index, value)


@in_place_of(index_fill)
def index_fill_(self, dim, index, value):
    """In-place ``index_fill``.

        >>> agnostic.ones(3).index_fill_(0, agnostic.tensor([1]), 0)
        tensor([1., 0., 1.])
    """
    _check_writable(self)
    if isinstance(index, TensorBase) and index.dtype is not _dtypes.int64:
        raise RuntimeError(f"index_fill_(): Expected dtype int64 for index, got {index.dtype}; convert it with "
                           ".long()")
    axis, positions = _check_dim_index("index_fill_", self, dim, index)
    if isinstance(value, TensorBase):
        check_same_device(self, value)
        if value._data.ndim:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value._data.ndim} dimension(s).")
        value = value.item()
    fill = keep_negative_zero(operand_array(value, self.dtype, self._device), self._device)
    with self._device.backend.activate():
        if positions.size:
            self._data[_along(self._data.ndim, axis, positions)] = fill
    return self


def _index_key(indices):
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): indices must be a tuple of tensors, got {type(indices).__name__}")
    for position, item in enumerate(indices):
        if not isinstance(item, TensorBase):
            raise TypeError(f"index_put(): expected Tensor as element {position} in argument 0, but got "
                            f"{type(item).__name__}; write t[:, i] = v for a full slice")
    return tuple(indices)


@composite(gradients={
    "input": lambda grad, indices, accumulate: grad if accumulate else _zeroed_at(grad, _index_key(indices)),
    "values": lambda grad, indices: grad[_index_key(indices)]})
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` (broadcast) written at ``input[indices]``, ``indices`` a tuple of long or
    bool tensors; ``accumulate`` adds instead, repeated indices adding up (without it, which repeat lands is
    undefined, as in PyTorch).

        >>> agnostic.zeros(3).index_put((agnostic.tensor([0, 0, 2]),), agnostic.tensor(1.), accumulate=True)
        tensor([2., 0., 1.])
    """
    return index_put_(input.clone(), indices, values, accumulate)


@in_place_of(index_put)
def index_put_(self, indices, values, accumulate=False):
    """In-place ``index_put``: ``self[indices] = values`` (``+=``, repeats adding up, with ``accumulate``).

        >>> agnostic.zeros(2, 2).index_put_((agnostic.tensor([1]), agnostic.tensor([0])), agnostic.tensor(5.))[1]
        tensor([5., 0.])
    """
    _check_writable(self)
    key = _index_key(indices)
    check_tensor("index_put", values, 3, "values")
    check_same_device(self, values)
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype} for the "
                           f"destination and {values.dtype} for the source; convert values with .to(self.dtype)")
    if not accumulate:
        setitem(self, key, values)
        return self
    selected_shape = getitem(self, key).shape
    try:
        spread = values.expand(selected_shape)
    except RuntimeError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(selected_shape)}") from None
    return _accumulated_at(self, key, spread.contiguous())


def _masked_scatter_source_gradient(grad, mask, source):
    shape = broadcast_shapes(grad.shape, mask.shape)
    selected = grad.expand(shape)[mask.expand(shape)]
    gradient = zeros(source.numel(), dtype=grad.dtype, device=grad.device)
    gradient[:selected.shape[0]] = selected
    return gradient.reshape(source.shape)


@composite(gradients={"input": lambda grad, mask: grad.masked_fill(mask, 0.0),
                      "source": _masked_scatter_source_gradient})
def masked_scatter(input, mask, source):
    """A copy of ``input`` (broadcast with the bool ``mask``) with ``source``'s elements, in order, where ``mask``
    is true.

        >>> agnostic.zeros(4).masked_scatter(agnostic.tensor([True, False, True, False]), agnostic.tensor([1., 2.]))
        tensor([1., 0., 2., 0.])
    """
    if not isinstance(mask, TensorBase):
        raise TypeError(f"masked_scatter(): mask must be a bool Tensor, got {type(mask).__name__}")
    shape = broadcast_shapes(input.shape, mask.shape)
    return masked_scatter_(input.expand(shape).clone(), mask, source)


@in_place_of(masked_scatter)
def masked_scatter_(self, mask, source):
    """In-place ``masked_scatter``: ``mask`` broadcasts to ``self``.

        >>> agnostic.zeros(2, 2).masked_scatter_(agnostic.tensor([False, True]), agnostic.tensor([[1., 2.]]))[:, 1]
        tensor([1., 2.])
    """
    _check_writable(self)
    if not isinstance(mask, TensorBase) or mask.dtype is not _dtypes.bool:
        got = mask.dtype if isinstance(mask, TensorBase) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {got}; use "
                           "mask.bool()")
    check_same_device(self, mask, source)
    if source.dtype is not self.dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got {self.dtype} and "
                           f"{source.dtype}; convert source with .to(self.dtype)")
    _check_broadcast_into(self, mask._data.shape, "masked_scatter_")
    xp = self._device.backend.xp
    with self._device.backend.activate():
        selected = xp.broadcast_to(mask._data, self._data.shape)
        count = int(selected.sum())
        if count > source._data.size:
            raise RuntimeError(f"masked_scatter_: Number of elements of source ({source._data.size}) < number of ones "
                               f"in mask ({count})")
        self._data[selected] = source._data.reshape(-1)[:count]
    return self


@composite(out=True)
def take_along_dim(input, indices, dim=None):
    """The values of ``input`` at ``indices`` along ``dim`` (the two broadcast in the other dimensions), as the
    indices ``argmax``/``argsort`` give; without ``dim``, of the flattened tensor.

        >>> agnostic.tensor([[10, 30, 20]]).take_along_dim(agnostic.tensor([[1, 2]]), dim=1)
        tensor([[30, 20]])
    """
    check_tensor("take_along_dim", indices, 2, "indices")
    check_same_device(input, indices)
    if dim is None:  # PyTorch gathers from the flattened tensor, which takes int32 indices too
        if indices.dtype not in (_dtypes.int32, _dtypes.int64):
            raise RuntimeError(f"gather(): Expected dtype int32/int64 for index, got {indices.dtype}")
        return input.reshape(-1).gather(0, indices.reshape(-1).to(_dtypes.int64))
    if indices.dtype is not _dtypes.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype}; "
                           "convert it with .long()")
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    axis = _normalize_dim(dim, input.ndim)
    shape_input, shape_indices = list(input.shape), list(indices.shape)
    shape_input[axis] = shape_indices[axis] = 1
    shape = list(broadcast_shapes(shape_input, shape_indices))
    input_shape, indices_shape = shape.copy(), shape.copy()
    input_shape[axis], indices_shape[axis] = input.shape[axis], indices.shape[axis]
    return input.expand(input_shape).gather(axis, indices.expand(indices_shape))


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
