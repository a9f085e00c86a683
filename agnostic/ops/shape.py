"""Shape ops: views (view, permute, transpose, expand, squeeze...) that share memory, and joins/splits that copy; each
declared once with its gradient (which only moves gradients back into place, so reads no values)."""

import builtins
import itertools
import math
import operator
import warnings

import numpy

from .. import _dtypes
from .._allocation import check_allocation
from .._layout import check_strided
from .._size import Size
from .._tensor import TensorBase, _check_writable, _normalize_dim, wrap
from ._dispatch import check_same_device, finish, operand_array, result_dtype, write_result
from ._registry import composite, in_place_of, public_names, tensor_method
from .creation import arange, tensor as make_tensor, zeros, zeros_like


def _shape_op(**declaration):
    """Declare a shape op (see ``_registry.Composite``): its gradient reads shapes only."""
    return composite(shape_only=True, **declaration)


def _shaped_back(grad, input):
    """The gradient of an op that only changes the shape: the output's gradient in the input's shape."""
    return grad.reshape(input.shape)


_RESHAPED_BACK = {"input": _shaped_back}


def _sizes(args):
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = args[0]
    try:
        return tuple(int(s) for s in args)
    except TypeError:
        raise TypeError(f"sizes must be ints, got {args!r}") from None


def _infer_shape(shape, numel, name):
    if shape.count(-1) > 1:
        raise RuntimeError(f"{name}(): only one dimension can be inferred (-1), got {list(shape)}")
    known = math.prod(s for s in shape if s != -1)
    if any(s < -1 for s in shape):
        raise RuntimeError(f"{name}(): invalid shape dimension {min(shape)} in {list(shape)}")
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def reshape(input, *shape):
    """The same elements in a new shape: a view when the layout allows, a copy otherwise.

        >>> agnostic.arange(4).reshape(2, -1).shape
        agnostic.Size([2, 2])
    """
    if len(shape) == 1 and type(shape[0]) in (tuple, list, Size):
        shape = shape[0]
    if all(type(s) is int and s >= -1 for s in shape) and shape.count(-1) <= 1:
        data = input._data
        try:
            if data.flags.c_contiguous:  # always a view: no kernel, so no need to make the device current
                return wrap(data.reshape(shape), input._device)
            backend = input._device.backend
            return wrap(backend.run(backend.reshape, data, shape), input._device)
        except ValueError:
            pass  # explained below with PyTorch's message
    shape = _infer_shape(_sizes(shape), input._data.size, "reshape")
    backend = input._device.backend
    return wrap(backend.run(backend.reshape, input._data, shape), input._device)


@tensor_method(shape_only=True, is_view=True, gradients=_RESHAPED_BACK)
def view(input, *size):
    """A view with a new shape (always shares memory), or a reinterpretation as another dtype of equal size.

    Raises when the memory layout can't be viewed that way; ``reshape`` copies instead.

        >>> agnostic.arange(6).view(3, 2)[2]
        tensor([4, 5])
    """
    if len(size) == 1:
        if type(size[0]) in (tuple, list, Size):
            size = size[0]
        elif isinstance(size[0], (_dtypes.dtype, numpy.dtype, type, str)):
            return _view_as_dtype(input, _dtypes.as_dtype(size[0]))
    array = input._data
    if not (all(type(s) is int and s >= -1 for s in size) and size.count(-1) <= 1):  # else the backend's reshape
        size = _infer_shape(_sizes(size), array.size, "view")                      # reads them as PyTorch would
    result = input._device.backend.reshaped_view(array, size)
    if result is None:
        _infer_shape(_sizes(size), array.size, "view")  # PyTorch's error for a shape of another size
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (shape {list(array.shape)}, "
            f"stride {list(input.stride())}): at least one dimension spans across two contiguous subspaces. "
            "Use .reshape(...) instead."
        )
    return wrap(result, input._device)


def _view_as_dtype(input, dtype):
    if dtype.itemsize != input.dtype.itemsize:
        raise RuntimeError(
            f"view(dtype): {input.dtype} and {dtype} differ in size; only same-size reinterpretation is supported"
        )
    return wrap(input._data.view(dtype.numpy_dtype), input._device)


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def view_as(input, other):
    """``view(other.shape)``.

        >>> agnostic.arange(4).view_as(agnostic.ones(2, 2)).shape
        agnostic.Size([2, 2])
    """
    return view(input, other._data.shape)


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def reshape_as(input, other):
    """``reshape(other.shape)``.

        >>> agnostic.arange(4).reshape_as(agnostic.ones(4, 1)).shape
        agnostic.Size([4, 1])
    """
    return input.reshape(other._data.shape)


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one (a view when possible).

        >>> agnostic.ones(2, 3, 4).flatten(1).shape
        agnostic.Size([2, 12])
    """
    ndim = input._data.ndim
    if ndim == 0:
        return input.reshape(1)
    start, end = _normalize_dim(start_dim, ndim), _normalize_dim(end_dim, ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input._data.shape
    return input.reshape(shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def unflatten(input, dim, sizes):
    """Split dimension ``dim`` into ``sizes``.

        >>> agnostic.ones(2, 6).unflatten(1, (3, -1)).shape
        agnostic.Size([2, 3, 2])
    """
    shape = input._data.shape
    dim = _normalize_dim(dim, len(shape))
    sizes = _infer_shape(tuple(sizes), shape[dim], "unflatten")
    return view(input, shape[:dim] + sizes + shape[dim + 1:])


def _inverse_permutation(dims, ndim):
    inverse = [0] * len(dims)
    for position, dim in enumerate(dims):
        inverse[dim % ndim] = position
    return inverse


@_shape_op(is_view=True, gradients={"input": lambda grad, input, dims: grad.permute(
    _inverse_permutation(dims, input.ndim))})
def permute(input, *dims):
    """A view with dimensions reordered: dimension ``i`` of the result is ``dims[i]`` of the input.

        >>> agnostic.ones(2, 3, 4).permute(2, 0, 1).shape
        agnostic.Size([4, 2, 3])
    """
    dims = _sizes(dims)
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(f"permute(): number of dims don't match: got {len(dims)} dims for a {ndim}-d tensor")
    axes = tuple(_normalize_dim(d, ndim) for d in dims)
    if len(set(axes)) != ndim:
        raise RuntimeError(f"permute(): repeated dim in {list(dims)}")
    return wrap(input._data.transpose(axes), input._device)


@_shape_op(is_view=True, aliases=("swapaxes", "swapdims"), gradients={
    "input": lambda grad, input, dim0, dim1: grad.transpose(dim0, dim1) if input.ndim else grad})
def transpose(input, dim0, dim1):
    """A view with ``dim0`` and ``dim1`` swapped (aliases ``swapaxes``, ``swapdims``).

        >>> agnostic.ones(2, 3, 4).transpose(0, 2).shape
        agnostic.Size([4, 3, 2])
    """
    ndim = input._data.ndim
    if ndim == 0:
        _normalize_dim(dim0, 0), _normalize_dim(dim1, 0)
        return wrap(input._data.view(), input._device)
    return wrap(input._data.swapaxes(_normalize_dim(dim0, ndim), _normalize_dim(dim1, ndim)), input._device)


swapaxes = swapdims = transpose


@_shape_op(is_view=True, gradients={"input": lambda grad: grad.t()})
def t(input):
    """Transpose of a tensor with at most 2 dimensions.

        >>> agnostic.tensor([[1, 2], [3, 4]]).t()[0]
        tensor([1, 3])
    """
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D; "
                           "use transpose(dim0, dim1) or mT")
    return wrap(input._data.T, input._device)


@tensor_method(name="T", as_property=True, node="permute", shape_only=True, is_view=True, gradients={
    "input": lambda grad: grad.permute(tuple(reversed(range(grad.ndim))))})
def reversed_dims(input):
    """All dimensions reversed (a view): PyTorch's ``Tensor.T``.

        >>> agnostic.ones(2, 3, 4).T.shape
        agnostic.Size([4, 3, 2])
    """
    return permute(input, tuple(reversed(range(input._data.ndim))))


@tensor_method(name="mT", as_property=True, node="transpose", shape_only=True, is_view=True, gradients={
    "input": lambda grad: grad.mT})
def matrix_transpose(input):
    """The last two dimensions swapped (a view): PyTorch's ``Tensor.mT``.

        >>> agnostic.ones(5, 2, 3).mT.shape
        agnostic.Size([5, 3, 2])
    """
    if input._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(input, -2, -1)


@_shape_op(is_view=True, aliases=("moveaxis",), gradients={
    "input": lambda grad, source, destination: grad.movedim(destination, source)})
def movedim(input, source, destination):
    """A view with dimension(s) ``source`` moved to ``destination`` (alias ``moveaxis``).

        >>> agnostic.ones(2, 3, 4).movedim(0, -1).shape
        agnostic.Size([3, 4, 2])
    """
    xp = input._device.backend.xp
    return wrap(xp.moveaxis(input._data, source, destination), input._device)


moveaxis = movedim


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def squeeze(input, dim=None):
    """A view without size-1 dimensions (only ``dim``'s, when given).

        >>> agnostic.ones(2, 1, 3, 1).squeeze(1).shape
        agnostic.Size([2, 3, 1])
    """
    array = input._data
    if dim is None:
        return wrap(array.reshape([s for s in array.shape if s != 1]), input._device)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = {_normalize_dim(d, array.ndim) for d in dims}
    shape = [s for i, s in enumerate(array.shape) if not (i in axes and s == 1)]
    return wrap(array.reshape(shape), input._device)


@_shape_op(is_view=True, gradients=_RESHAPED_BACK)
def unsqueeze(input, dim):
    """A view with a size-1 dimension inserted at ``dim``.

        >>> agnostic.ones(2, 3).unsqueeze(-1).shape
        agnostic.Size([2, 3, 1])
    """
    array = input._data
    dim = _normalize_dim(dim, array.ndim + 1)
    return wrap(array.reshape(array.shape[:dim] + (1,) + array.shape[dim:]), input._device)


_SUMMED_BACK = {"input": lambda grad: grad}  # ``fit`` sums the broadcast dimensions away


@_shape_op(is_view=True, gradients=_SUMMED_BACK)
def expand(input, *size):
    """A view broadcasting size-1 dimensions to ``size`` (-1 keeps a size); no memory is allocated.

        >>> agnostic.tensor([[1], [2]]).expand(2, 3)[1]
        tensor([2, 2, 2])
    """
    sizes = _sizes(size)
    array = input._data
    if len(sizes) < array.ndim:
        raise RuntimeError(
            f"expand(): the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({array.ndim})"
        )
    lead = len(sizes) - array.ndim
    shape = []
    for i, wanted in enumerate(sizes):
        current = array.shape[i - lead] if i >= lead else None
        if wanted == -1:
            if current is None:
                raise RuntimeError(f"expand(): -1 is not allowed in a leading, non-existing dimension {i}")
            wanted = current
        elif current is not None and current != wanted and current != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({wanted}) must match the existing size ({current}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(array.shape)}"
            )
        shape.append(wanted)
    strides = [0] * lead + [0 if array.shape[i] == 1 and shape[i + lead] != 1 else array.strides[i]
                            for i in range(array.ndim)]
    if math.prod(shape) * array.itemsize > _INT64_MAX:  # NumPy and CuPy arrays, views included, can't be larger
        raise RuntimeError(f"expand(): a view of shape {shape} would span {math.prod(shape) * array.itemsize} bytes, "
                           "more than int64 can count, which agnostic's arrays can't describe; expand less")
    return wrap(_as_strided(input._device, array, tuple(shape), tuple(strides)), input._device)


_INT64_MAX = 2 ** 63 - 1


def _as_strided(device, array, shape, strides):
    return device.backend.as_strided(array, shape, strides)


@_shape_op(is_view=True, gradients=_SUMMED_BACK)
def expand_as(input, other):
    """``expand(other.shape)``.

        >>> agnostic.tensor([1, 2]).expand_as(agnostic.ones(3, 2)).shape
        agnostic.Size([3, 2])
    """
    return input.expand(other._data.shape)


@_shape_op(is_view=True, gradients=_SUMMED_BACK)
def broadcast_to(input, size):
    """``expand(size)``.

        >>> agnostic.broadcast_to(agnostic.tensor([1, 2]), (2, 2))[1]
        tensor([1, 2])
    """
    return input.expand(size)


@composite(method=False)
def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common broadcast shape (differentiated through ``expand``).

        >>> agnostic.broadcast_tensors(agnostic.ones(2, 1), agnostic.ones(3))[0].shape
        agnostic.Size([2, 3])
    """
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to (an int is a 1-D shape), with PyTorch's error message when
    they don't broadcast (``torch.broadcast_shapes``).

        >>> agnostic.broadcast_shapes((2, 1), (3,))
        agnostic.Size([2, 3])
    """
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    try:
        return Size(numpy.broadcast_shapes(*shapes))
    except ValueError:
        raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single shape: {shapes}") from None


def _joined(name, tensors, dim, join):
    tensors = list(tensors)
    if not tensors:
        raise ValueError(f"{name}() expects a non-empty sequence of tensors")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"{name}(): expected a sequence of Tensors, but element {position} is "
                            f"{type(tensor).__name__}")
    device = check_same_device(*tensors)
    dtype = result_dtype(*tensors)
    arrays = [operand_array(t, dtype, device) for t in tensors]
    return finish(device.backend.run(join, device.backend, arrays, dim), dtype, device)


def _cat_gradients(grad, tensors, dim):
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or tensors  # PyTorch skips 1-D empties
    axis = dim % kept[0].ndim
    pieces = iter(split(grad, [t.shape[axis] for t in kept], axis))
    return [next(pieces) if any(t is k for k in kept) else zeros_like(t) for t in tensors]


@_shape_op(out="cast", method=False, aliases=("concat", "concatenate"), gradients={"tensors": _cat_gradients})
def cat(tensors, dim=0):
    """Join ``tensors`` along an existing dimension (dtypes promote, as in PyTorch; aliases ``concat``,
    ``concatenate``).

        >>> agnostic.cat([agnostic.tensor([1, 2]), agnostic.tensor([3])])
        tensor([1, 2, 3])
    """
    tensors = list(tensors)
    nonempty = [t for t in tensors if not (isinstance(t, TensorBase) and t._data.shape == (0,))] or tensors[:1]
    if not tensors:
        raise ValueError("cat() expects a non-empty sequence of tensors")
    reference = nonempty[0]
    if isinstance(reference, TensorBase) and reference._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated; use stack()")
    ndim = reference._data.ndim if isinstance(reference, TensorBase) else 1
    axis = _normalize_dim(dim, ndim)
    for position, tensor in enumerate(nonempty):
        if isinstance(tensor, TensorBase) and (tensor._data.ndim != ndim or any(
                a != b for i, (a, b) in enumerate(zip(tensor._data.shape, reference._data.shape)) if i != axis)):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {axis}. Expected shape {list(reference.shape)} "
                f"but got {list(tensor.shape)} for tensor number {position} in the list"
            )

    def join(backend, arrays, axis):
        return backend.concatenate([a for a in arrays if a.ndim == ndim] or arrays, axis)
    return _joined("cat", tensors, axis, join)


concat = concatenate = cat


@_shape_op(out="cast", method=False, gradients={"tensors": lambda grad, dim: grad.unbind(dim % grad.ndim)})
def stack(tensors, dim=0):
    """Join same-shaped ``tensors`` along a new dimension.

        >>> agnostic.stack([agnostic.tensor([1, 2]), agnostic.tensor([3, 4])], dim=1)[0]
        tensor([1, 3])
    """
    tensors = list(tensors)
    if tensors and isinstance(tensors[0], TensorBase):
        first = tensors[0]._data.shape
        for position, tensor in enumerate(tensors):
            if isinstance(tensor, TensorBase) and tensor._data.shape != first:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                                   f"and {list(tensor._data.shape)} at entry {position}")
        axis = _normalize_dim(dim, len(first) + 1)
    else:
        axis = dim

    return _joined("stack", tensors, axis, lambda backend, arrays, axis: backend.xp.stack(arrays, axis=axis))


def _hstack_gradients(grad, tensors):
    axis = 0 if tensors[0].ndim == 1 else 1
    return split(grad, [t.shape[axis] for t in tensors], axis)


@_shape_op(out="cast", method=False, gradients={"tensors": _hstack_gradients})
def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors).

        >>> agnostic.hstack([agnostic.tensor([1, 2]), agnostic.tensor([3])])
        tensor([1, 2, 3])
    """
    tensors = list(tensors)
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def _vstack_gradients(grad, tensors):
    pieces = split(grad, [1 if t.ndim == 1 else t.shape[0] for t in tensors], 0)
    return [piece.reshape(t.shape) for piece, t in zip(pieces, tensors)]


@_shape_op(out="cast", method=False, aliases=("row_stack",), gradients={"tensors": _vstack_gradients})
def vstack(tensors):
    """Concatenate along dim 0, promoting 1-D tensors to rows (alias ``row_stack``).

        >>> agnostic.vstack([agnostic.tensor([1, 2]), agnostic.tensor([3, 4])]).shape
        agnostic.Size([2, 2])
    """
    return cat([t.reshape(1, -1) if t._data.ndim == 1 else t for t in tensors], 0)


row_stack = vstack


def _split_method(self, split_size, dim=0):
    """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be smaller), or of the
    listed section sizes (``Tensor.split``, whose argument PyTorch names ``split_size``; ``agnostic.split`` names it
    ``split_size_or_sections``, as ``torch.split``).

        >>> agnostic.arange(5).split(split_size=2)[-1]
        tensor([4])
    """
    return split(self, split_size, dim)


@_shape_op(is_view=True, method=_split_method,
           gradients={"tensor": lambda grads, tensor, dim: cat(list(grads), dim % tensor.ndim)})
def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be smaller), or of the
    listed section sizes.

        >>> agnostic.arange(5).split(2)[-1]
        tensor([4])
    """
    array = tensor._data
    if array.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    axis = _normalize_dim(dim, array.ndim)
    length = array.shape[axis]
    if isinstance(split_size_or_sections, int):
        size = split_size_or_sections
        if size < 0 or (size == 0 and length):
            raise RuntimeError(f"split(): split_size must be a positive integer, got {size}")
        if length == 0:
            sections = [0]
        else:
            sections = [size] * (length // size) + ([length % size] if length % size else [])
    else:
        sections = list(split_size_or_sections)
        if builtin_sum(sections) != length:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {length} (input tensor's size at "
                f"dimension {axis}), but got split_sizes={sections}"
            )
    pieces, start = [], 0
    for section in sections:
        index = [slice(None)] * array.ndim
        index[axis] = slice(start, start + section)
        pieces.append(wrap(array[tuple(index)], tensor._device))
        start += section
    return tuple(pieces)


builtin_sum = sum


_PIECES_JOINED_BACK = {"input": lambda grads, input, dim: cat(list(grads), dim % input.ndim)}


@_shape_op(is_view=True, node="split", gradients=_PIECES_JOINED_BACK)
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` views of equal size along ``dim`` (the last may be smaller; fewer may be returned).

        >>> len(agnostic.arange(5).chunk(2))
        2
    """
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    length = input._data.shape[_normalize_dim(dim, input._data.ndim)]
    if length == 0:
        return split(input, [0] * chunks, dim)
    return split(input, max(-(-length // chunks), 1), dim)


@_shape_op(is_view=True, gradients=_PIECES_JOINED_BACK)
def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``n`` nearly equal views, or at the given indices, along ``dim``.

        >>> agnostic.arange(5).tensor_split([1, 3])[1]
        tensor([1, 2])
    """
    xp = input._device.backend.xp
    axis = _normalize_dim(dim, input._data.ndim)
    sections = indices_or_sections if isinstance(indices_or_sections, int) else list(indices_or_sections)
    return tuple(wrap(a, input._device) for a in xp.array_split(input._data, sections, axis=axis))


@_shape_op(is_view=True, gradients={"input": lambda grads, input, dim: stack(list(grads), dim % input.ndim)})
def unbind(input, dim=0):
    """Views of each slice along ``dim``, with that dimension removed.

        >>> agnostic.tensor([[1, 2], [3, 4]]).unbind(1)[0]
        tensor([1, 3])
    """
    axis = _normalize_dim(dim, input._data.ndim)
    moved = input._device.backend.xp.moveaxis(input._data, axis, 0)
    return tuple(wrap(moved[i, ...], input._device) for i in range(moved.shape[0]))  # [i, ...]: a 0-dim view


def _narrow_gradient(grad, input, dim, start, length):
    axis = dim % input.ndim
    start = start + input.shape[axis] if start < 0 else start
    index = [slice(None)] * input.ndim
    index[axis] = slice(start, start + length)
    gradient = zeros_like(input, dtype=grad.dtype)
    gradient[tuple(index)] = grad
    return gradient


@_shape_op(is_view=True, gradients={"input": _narrow_gradient})
def narrow(input, dim, start, length):
    """A view of ``length`` elements from ``start`` along ``dim``.

        >>> agnostic.arange(6).narrow(0, 2, 3)
        tensor([2, 3, 4])
    """
    axis = _normalize_dim(dim, input._data.ndim)
    size = input._data.shape[axis]
    start = start + size if start < 0 else start
    if not (0 <= start <= size and 0 <= length and start + length <= size):
        raise IndexError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = [slice(None)] * input._data.ndim
    index[axis] = slice(start, start + length)
    return wrap(input._data[tuple(index)], input._device)


def _dims_list(dims, ndim, name):
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    axes = tuple(_normalize_dim(d, ndim) for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"{name}(): dims has duplicates: {list(dims)}")
    return axes


@_shape_op(gradients={"input": lambda grad, dims: grad.flip(dims)})
def flip(input, *dims):
    """A copy with the order of elements reversed along ``dims`` (``flip(0, 1)`` or ``flip((0, 1))``).

        >>> agnostic.tensor([[1, 2], [3, 4]]).flip(0, 1)[0]
        tensor([4, 3])
    """
    axes = _dims_list(dims[0] if len(dims) == 1 else dims, input._data.ndim, "flip")
    if input._data.ndim == 0:
        return input.clone()
    xp = input._device.backend.xp
    with input._device.backend.activate():
        return wrap(xp.flip(input._data, axes).copy() if axes else input._data.copy(), input._device)


@_shape_op(gradients={"input": lambda grad: grad.flip(1)})
def fliplr(input):
    """Reverse columns (dim 1).

        >>> agnostic.tensor([[1, 2], [3, 4]]).fliplr()[0]
        tensor([2, 1])
    """
    return flip(input, (1,))


@_shape_op(gradients={"input": lambda grad: grad.flip(0)})
def flipud(input):
    """Reverse rows (dim 0).

        >>> agnostic.tensor([[1, 2], [3, 4]]).flipud()[0]
        tensor([3, 4])
    """
    return flip(input, (0,))


def _unrolled(grad, shifts, dims):
    return grad.roll(-shifts if isinstance(shifts, int) else tuple(-shift for shift in shifts), dims)


@_shape_op(gradients={"input": _unrolled})
def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (the flattened tensor when ``dims`` is None).

        >>> agnostic.tensor([1, 2, 3]).roll(1)
        tensor([3, 1, 2])
    """
    xp = input._device.backend.xp
    array = input._data
    if dims is None:
        if not isinstance(shifts, int) and len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0; pass one dim per "
                               "shift, or a single shift to roll the flattened tensor")
        shifts = shifts if isinstance(shifts, int) else shifts[0]
        return wrap(input._device.backend.run(xp.roll, array.reshape(-1), shifts).reshape(array.shape), input._device)
    shifts_tuple = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    axes = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts_tuple) != len(axes):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts_tuple)}, dims:{len(axes)}; "
                           "pass one shift per dim")
    axes = tuple(_normalize_dim(d, array.ndim) for d in axes)
    return wrap(input._device.backend.run(xp.roll, array, shifts_tuple, axes), input._device)


def _sum_tiles(grad, input, sizes):
    """The gradient of tiling ``input`` ``sizes`` times: the tiles' gradients added up."""
    lead = len(sizes) - input.ndim
    grad = grad.reshape((-1,) + tuple(grad.shape[lead:])).sum(0) if lead else grad
    shape = []
    for count, size in zip(sizes[lead:], input.shape):
        shape.extend([count, size])
    return grad.reshape(shape).sum(dim=tuple(range(0, len(shape), 2))) if shape else grad


@tensor_method(shape_only=True,
               gradients={"input": lambda grad, input, repeats: _sum_tiles(grad, input, list(repeats))})
def repeat(input, *repeats):
    """Tile the tensor ``repeats`` times along each dimension (PyTorch's ``repeat``, NumPy's ``tile``).

        >>> agnostic.tensor([1, 2]).repeat(2)
        tensor([1, 2, 1, 2])
    """
    sizes = _sizes(repeats)
    if len(sizes) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    padded = (1,) * (len(sizes) - input._data.ndim) + input._data.shape
    check_allocation(tuple(count * size for count, size in zip(sizes, padded)), input._data.dtype, input._device)
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.tile, input._data, sizes), input._device)


def _tile_counts(input, dims):
    dims = _sizes(dims)
    return (1,) * (input.ndim - len(dims)) + dims


@_shape_op(gradients={"input": lambda grad, input, dims: _sum_tiles(grad, input, list(_tile_counts(input, dims)))})
def tile(input, *dims):
    """Repeat along each dimension (``tile((2, 3))``, ``tile(2, 3)`` or ``tile(2)``); fewer ``dims`` than dimensions
    are padded with ones on the left, more add dimensions.

        >>> agnostic.tensor([[1, 2]]).tile((2,))
        tensor([[1, 2, 1, 2]])
    """
    return repeat(input, _tile_counts(input, dims))


def _interleaved_back(grad, input, repeats, dim):
    """The gradient of repeat_interleave: each element's copies' gradients added up."""
    if repeats is None:
        return None
    source = input.reshape(-1) if dim is None else input
    axis = 0 if dim is None else dim % input.ndim
    if isinstance(repeats, TensorBase) and repeats.numel() == 1:
        repeats = repeats.expand(source.shape[axis])
    owner = repeat_interleave(arange(source.shape[axis], device=grad.device), repeats)
    return zeros_like(source, dtype=grad.dtype).index_add(axis, owner, grad).reshape(input.shape)


@_shape_op(gradients={"input": _interleaved_back})
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element ``repeats`` times (an int, or a tensor of one count per element) along ``dim``, or of the
    flattened tensor. ``repeat_interleave(counts)`` alone repeats each index ``counts[i]`` times. ``output_size``
    (the result's length along ``dim``) is checked, as PyTorch uses it to avoid a device synchronization.

        >>> agnostic.tensor([1, 2]).repeat_interleave(2)
        tensor([1, 1, 2, 2])
    """
    if repeats is None:
        if input.dtype.category != 1 or input._data.ndim > 1:
            raise RuntimeError("repeat_interleave(repeats): repeats must be a 0-dim or 1-dim integer tensor")
        counts = input.reshape(-1)
        return repeat_interleave(arange(counts._data.shape[0], device=input.device), counts, output_size=output_size)
    xp = input._device.backend.xp
    array = input._data.reshape(-1) if dim is None else input._data
    axis = 0 if dim is None else _normalize_dim(dim, array.ndim)
    length = array.shape[axis] if array.ndim else 1
    if isinstance(repeats, TensorBase):
        check_same_device(input, repeats)
        if repeats.dtype.category != 1 or repeats._data.ndim > 1:
            raise RuntimeError("repeat_interleave(): repeats must be 0-dim or 1-dim integer tensor")
        counts = repeats._data.reshape(-1)
        if counts.shape[0] not in (1, length):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{counts.shape[0]} and input.size({axis}) = {length}")
        negative = bool((counts < 0).any()) if counts.size else False
        repeats = counts if counts.shape[0] == length else counts[0]
    else:
        negative = repeats < 0
    if negative:
        raise RuntimeError("Repeats must be non-negative")
    result = wrap(input._device.backend.run(xp.repeat, array.reshape(-1) if array.ndim == 0 else array, repeats,
                                            axis=axis), input._device)
    if output_size is not None and result.shape[axis] != output_size:
        raise RuntimeError(f"repeat_interleave(): output_size {output_size} doesn't match the repeated length "
                           f"{result.shape[axis]}")
    return result


@_shape_op(out=True, gradients={"input": lambda grad, diagonal: grad.tril(diagonal)})
def tril(input, diagonal=0):
    """Lower triangle of the last two dimensions; the rest zeroed.

        >>> agnostic.tensor([[1, 2], [3, 4]]).tril()[0]
        tensor([1, 0])
    """
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.tril, input._data, diagonal), input._device)


@_shape_op(out=True, gradients={"input": lambda grad, diagonal: grad.triu(diagonal)})
def triu(input, diagonal=0):
    """Upper triangle of the last two dimensions; the rest zeroed.

        >>> agnostic.tensor([[1, 2], [3, 4]]).triu()[1]
        tensor([0, 4])
    """
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.triu, input._data, diagonal), input._device)


def _on_diagonal(grad, input, offset, dim1, dim2):
    """Zeros shaped like ``input`` with ``grad`` on the ``offset`` diagonal of its ``dim1``/``dim2`` planes."""
    dim1, dim2 = dim1 % input.ndim, dim2 % input.ndim
    gradient = zeros_like(input, dtype=grad.dtype)
    planes = gradient.movedim((dim1, dim2), (-2, -1))
    positions = arange(grad.shape[-1], device=grad.device)
    planes[..., positions + builtins.max(-offset, 0), positions + builtins.max(offset, 0)] = grad
    return planes.movedim((-2, -1), (dim1, dim2))


@_shape_op(is_view=True, gradients={"input": _on_diagonal})
def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of the ``dim1``/``dim2`` planes, appended as the last dimension.

        >>> agnostic.tensor([[1, 2], [3, 4]]).diagonal()
        tensor([1, 4])
    """
    ndim = input._data.ndim
    axis1, axis2 = _normalize_dim(dim1, ndim), _normalize_dim(dim2, ndim)
    if axis1 == axis2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    # NumPy's diagonal() is a read-only view: build the same, writable, view from strides (PyTorch's is writable).
    backend = input._device.backend
    planes = backend.xp.moveaxis(input._data, (axis1, axis2), (-2, -1))[..., builtins.max(-offset, 0):,
                                                                          builtins.max(offset, 0):]
    length = builtins.max(builtins.min(planes.shape[-2], planes.shape[-1]), 0)
    return wrap(backend.as_strided(planes, planes.shape[:-2] + (length,),
                                   planes.strides[:-2] + (planes.strides[-2] + planes.strides[-1],)), input._device)


def _diag_gradient(grad, input, diagonal):
    if input.ndim == 1:
        return grad.diagonal(diagonal)
    gradient = zeros_like(input, dtype=grad.dtype)
    positions = arange(grad.shape[0], device=grad.device)
    gradient[positions + builtins.max(-diagonal, 0), positions + builtins.max(diagonal, 0)] = grad
    return gradient


@_shape_op(out=True, gradients={"input": _diag_gradient})
def diag(input, diagonal=0):
    """The diagonal of a matrix, or a square matrix with a vector on its diagonal.

        >>> agnostic.tensor([1, 2]).diag()[1]
        tensor([0, 2])
    """
    if input._data.ndim not in (1, 2):
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input._data.ndim}D; use diagonal() or "
                           "diag_embed() for batches")
    xp = input._device.backend.xp
    return wrap(input._device.backend.run(xp.diag, input._data, diagonal).copy(), input._device)



def _diagonal_of_grad(grad, offset, dim1, dim2):
    return grad.diagonal(offset, dim1, dim2)


@_shape_op(gradients={"input": _diagonal_of_grad})
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose ``dim1``/``dim2`` planes (dimensions of the result) have the last dimension of ``input`` on
    their ``offset`` diagonal, zeros elsewhere: the inverse of ``diagonal``.

        >>> agnostic.diag_embed(agnostic.tensor([[1, 2], [3, 4]]))[1].tolist()
        [[3, 0], [0, 4]]
    """
    ndim = input._data.ndim + 1
    axis1, axis2 = _normalize_dim(dim1, ndim), _normalize_dim(dim2, ndim)
    if axis1 == axis2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    length = input._data.shape[-1] if input._data.ndim else 1
    side = length + abs(offset)
    result = zeros(tuple(input._data.shape[:-1]) + (side, side), dtype=input.dtype, device=input.device)
    positions = arange(length, device=input.device)
    result[..., positions + builtins.max(-offset, 0), positions + builtins.max(offset, 0)] = input
    return result.movedim((-2, -1), (axis1, axis2))


@_shape_op()
def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90 degrees ``k`` times in the plane of ``dims``, from the first dimension towards the second.

        >>> agnostic.tensor([[1, 2], [3, 4]]).rot90().tolist()
        [[2, 4], [1, 3]]
    """
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = (_normalize_dim(d, input.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {first} and dim1 = {second}")
    k %= 4
    if k == 1:
        return input.flip(second).transpose(first, second)
    if k == 2:
        return input.flip(first, second)
    if k == 3:
        return input.flip(first).transpose(first, second)
    return input.clone()


_MESHGRID_WARNING = "torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument."


def _grid_tensors(name, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"{name}(): expected Tensors, but element {position} is {type(tensor).__name__}")
    check_same_device(*tensors)
    if any(t.dtype is not tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype; convert them with .to(dtype)")
    return tensors


@composite(method=False)
def meshgrid(*tensors, indexing=None):
    """Grids of coordinates from 0-dim or 1-dim ``tensors`` (given one by one or as a list): views expanded to
    ``(len(t0), len(t1), ...)`` with ``indexing="ij"``, the first two lengths exchanged with ``"xy"``. Without
    ``indexing`` PyTorch's default, ``"ij"``, with its warning that the argument will be required.

        >>> [g.tolist() for g in agnostic.meshgrid(agnostic.tensor([1, 2]), agnostic.tensor([3]), indexing="ij")]
        [[[1], [2]], [[3], [3]]]
    """
    tensors = _grid_tensors("meshgrid", tensors)
    if indexing is None:
        warnings.warn(_MESHGRID_WARNING, UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for tensor in tensors:
        if tensor.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got a tensor of "
                               f"shape {list(tensor.shape)}")
    lengths = [tensor.numel() for tensor in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for axis, length in zip(axes, lengths):
        shape[axis] = length
    grids = []
    for axis, tensor in zip(axes, tensors):
        placed = [1] * len(tensors)
        placed[axis] = shape[axis]
        grids.append(tensor.reshape(placed).expand(shape))
    return tuple(grids)


@composite(method=False)
def cartesian_prod(*tensors):
    """Every combination of one element of each 1-D tensor, as rows of a ``(n0 * n1 * ..., len(tensors))`` tensor
    (one tensor: itself), in ``itertools.product``'s order.

        >>> agnostic.cartesian_prod(agnostic.tensor([1, 2]), agnostic.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    tensors = _grid_tensors("cartesian_prod", tensors)
    for tensor in tensors:
        if tensor.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(tensor.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([grid.reshape(-1) for grid in meshgrid(*tensors, indexing="ij")], dim=1)


@composite(method=False)
def combinations(input, r=2, with_replacement=False):
    """The ``r``-element combinations of a 1-D tensor's elements, as rows (``itertools.combinations`` order;
    ``itertools.combinations_with_replacement`` with ``with_replacement``). ``r=0`` gives an empty 1-D tensor.

        >>> agnostic.combinations(agnostic.tensor([1, 2, 3])).tolist()
        [[1, 2], [1, 3], [2, 3]]
    """
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0].clone()
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    positions = numpy.fromiter(itertools.chain.from_iterable(choose(range(input.shape[0]), r)), numpy.int64)
    return input[make_tensor(positions.reshape(-1, r), device=input.device)]



# ----- more of PyTorch's shape ops --------------------------------------------------------------------------------
@tensor_method()
def type_as(input, other):
    """``input`` in ``other``'s dtype (``input`` itself when they match), as ``Tensor.type_as``.

        >>> agnostic.tensor([1, 2]).type_as(agnostic.tensor([0.5]))
        tensor([1., 2.])
    """
    return input.to(other.dtype)


@composite()
def ravel(input):
    """The elements as one dimension: a view when the layout allows, a copy otherwise (``torch.ravel``).

        >>> agnostic.tensor([[1, 2], [3, 4]]).ravel()
        tensor([1, 2, 3, 4])
    """
    return input.reshape(-1)


@composite()
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``torch.diff``), after joining ``prepend`` and ``append`` to
    ``input`` there; bool tensors give ``!=`` of neighbours, as in PyTorch.

        >>> agnostic.diff(agnostic.tensor([1, 4, 9, 16]))
        tensor([3, 5, 7])
        >>> agnostic.diff(agnostic.tensor([1.0, 4.0]), prepend=agnostic.tensor([0.0]), n=2)
        tensor([2.])
    """
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _normalize_dim(dim, input.ndim)
    pieces = [piece for piece in (prepend, input, append) if piece is not None]
    if len(pieces) > 1:
        pieces = [piece if isinstance(piece, TensorBase) else make_tensor(piece, device=input.device)
                  for piece in pieces]
        pieces = [piece.expand(input.shape[:dim] + (1,) + input.shape[dim + 1:]) if piece.ndim == 0 else piece
                  for piece in pieces]
        input = cat(pieces, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        later, earlier = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = later != earlier if input.dtype is _dtypes.bool else later - earlier
    return input


def _windows_back(grad, input, dimension, size, step):
    """Each window's gradient added back to the elements it covered."""
    dim = _normalize_dim(dimension, input.ndim) if input.ndim else 0
    gradient = zeros(input.shape, dtype=grad.dtype, device=grad.device)
    if input.ndim == 0:
        return gradient + grad.reshape(())
    starts = arange(grad.shape[dim], device=grad.device) * step
    for offset in range(size):
        gradient = gradient.index_add(dim, starts + offset, grad[..., offset])
    return gradient


@tensor_method(is_view=True, shape_only=True, gradients={"input": _windows_back})
def unfold(input, dimension, size, step):
    """A view of every ``size``-long window along ``dimension``, ``step`` apart, as a new last dimension
    (``Tensor.unfold``); no memory is copied.

        >>> agnostic.arange(1, 6).unfold(0, 2, 2)
        tensor([[1, 2],
                [3, 4]])
    """
    array = input._data
    if step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0; pass a positive step")
    if size < 0:
        raise RuntimeError(f"unfold(): size is {size} but must be >= 0")
    if array.ndim == 0:
        if size > 1:
            raise RuntimeError(f"unfold(): maximum size for tensor at dimension 0 is 1 but size is {size}")
        return wrap(array.reshape(1), input._device)
    dim = _normalize_dim(dimension, array.ndim)
    length = array.shape[dim]
    if size > length:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {dim} is {length} but size is {size}; "
                           "take a smaller window")
    shape = array.shape[:dim] + ((length - size) // step + 1,) + array.shape[dim + 1:] + (size,)
    strides = array.strides[:dim] + (array.strides[dim] * step,) + array.strides[dim + 1:] + (array.strides[dim],)
    return wrap(_as_strided(input._device, array, shape, strides), input._device)


def _at_least(name, dims, tensors):
    single = len(tensors) == 1 and isinstance(tensors[0], TensorBase)
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    results = []
    for tensor in tensors:
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"{name}(): expected Tensors, got {type(tensor).__name__}")
        if tensor.ndim < dims:
            # NumPy's placement: a 1-D (n,) becomes (1, n) and then (1, n, 1).
            shape = {0: (1,) * dims, 1: (1, tensor.numel(), 1)[:dims] if dims > 1 else (tensor.numel(),),
                     2: tuple(tensor.shape) + (1,)}[tensor.ndim]
            tensor = tensor.reshape(shape)
        results.append(tensor)
    return results[0] if single else tuple(results)


@composite(method=False)
def atleast_1d(*tensors):
    """Each tensor with at least one dimension (a 0-dim tensor becomes shape ``(1,)``); one tensor in, one out.

        >>> agnostic.atleast_1d(agnostic.tensor(3.0))
        tensor([3.])
    """
    return _at_least("atleast_1d", 1, tensors)


@composite(method=False)
def atleast_2d(*tensors):
    """Each tensor with at least two dimensions (shape ``(n,)`` becomes ``(1, n)``); one tensor in, one out.

        >>> agnostic.atleast_2d(agnostic.tensor([1, 2])).shape
        agnostic.Size([1, 2])
    """
    return _at_least("atleast_2d", 2, tensors)


@composite(method=False)
def atleast_3d(*tensors):
    """Each tensor with at least three dimensions (``(n,)`` becomes ``(1, n, 1)``, ``(m, n)`` becomes
    ``(m, n, 1)``); one tensor in, one out.

        >>> agnostic.atleast_3d(agnostic.tensor([[1, 2]])).shape
        agnostic.Size([1, 2, 1])
    """
    return _at_least("atleast_3d", 3, tensors)


def _split_along(name, input, sections, dim, least):
    if input.ndim < least:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {least} dimension, but got a tensor with "
                           f"{input.ndim} dimensions!")
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{input.shape[dim]} is not divisible by the split_size {sections}!")
    return input.tensor_split(sections, dim)


@composite()
def hsplit(input, indices_or_sections):
    """Split along the columns: dimension 1, or 0 for a 1-D tensor (``torch.hsplit``; a count must divide it).

        >>> [piece.tolist() for piece in agnostic.tensor([[1, 2, 3, 4]]).hsplit(2)]
        [[[1, 2]], [[3, 4]]]
    """
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim > 1 else 0, 1)


@composite()
def vsplit(input, indices_or_sections):
    """Split along the rows, dimension 0 of a tensor of at least two (``torch.vsplit``; a count must divide it).

        >>> [piece.tolist() for piece in agnostic.tensor([[1], [2], [3]]).vsplit([1])]
        [[[1]], [[2], [3]]]
    """
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


@composite()
def dsplit(input, indices_or_sections):
    """Split along the depth, dimension 2 of a tensor of at least three (``torch.dsplit``; a count must divide it).

        >>> [piece.shape for piece in agnostic.zeros(1, 1, 4).dsplit(2)]
        [agnostic.Size([1, 1, 2]), agnostic.Size([1, 1, 2])]
    """
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


def _triangle_indices(name, rows, columns, offset, lower, dtype, device):
    if dtype is None:
        dtype = _dtypes.int64
    if rows < 0 or columns < 0:
        raise RuntimeError(f"{name}(): row and col must be non-negative, got {rows} and {columns}")
    index = numpy.tril_indices(rows, offset, columns) if lower else numpy.triu_indices(rows, offset, columns)
    return make_tensor(numpy.stack(index).reshape(2, -1), dtype=dtype, device=device)


@composite(method=False)
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``2 x N`` (row, column) indices of the lower triangle of a ``row x col`` matrix, row by row
    (``torch.tril_indices``); ``offset`` moves the diagonal up (positive) or down.

        >>> agnostic.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    check_strided(layout, "tril_indices")
    return _triangle_indices("tril_indices", row, col, offset, True, dtype, device)


@composite(method=False)
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``2 x N`` (row, column) indices of the upper triangle of a ``row x col`` matrix, row by row
    (``torch.triu_indices``); ``offset`` moves the diagonal up (positive) or down.

        >>> agnostic.triu_indices(3, 3, 1)
        tensor([[0, 0, 1],
                [1, 2, 2]])
    """
    check_strided(layout, "triu_indices")
    return _triangle_indices("triu_indices", row, col, offset, False, dtype, device)


@composite(method=False)
def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) on the diagonal of one matrix, zeros elsewhere (``torch.block_diag``).

        >>> agnostic.block_diag(agnostic.tensor([[1, 2]]), agnostic.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    if not tensors:
        return zeros(1, 0)
    for position, tensor in enumerate(tensors):
        if tensor.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {position} "
                               f"has {tensor.ndim} dimensions")
    device = check_same_device(*tensors)
    dtype = result_dtype(*tensors)
    blocks = [tensor.to(dtype).reshape(1 if tensor.ndim == 0 else -1 if tensor.ndim == 1 else tensor.shape[0],
                                       1 if tensor.ndim == 0 else tensor.shape[-1]) if tensor.ndim < 2
              else tensor.to(dtype) for tensor in tensors]
    blocks = [block.reshape(1, -1) if tensor.ndim == 1 else block for block, tensor in zip(blocks, tensors)]
    width = builtins.sum(block.shape[1] for block in blocks)
    rows, left = [], 0
    for block in blocks:
        height, columns = block.shape
        pieces = [zeros(height, left, dtype=dtype, device=device), block,
                  zeros(height, width - left - columns, dtype=dtype, device=device)]
        rows.append(cat(pieces, 1))
        left += columns
    return cat(rows, 0)


@composite(method=False)
def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of the 1-D ``x``: columns ``x ** (N - 1)`` down to ``x ** 0`` (up, with
    ``increasing``), ``N`` defaulting to ``len(x)`` (``torch.vander``).

        >>> agnostic.vander(agnostic.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    if N is None:
        N = x.shape[0]
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = result_dtype(x, 1)
    x = x.to(dtype)
    columns = [x.new_ones(x.shape)] if N else []
    for _ in range(1, N):
        columns.append(columns[-1] * x)
    if not columns:
        return zeros(x.shape[0], 0, dtype=dtype, device=x.device)
    if not increasing:
        columns.reverse()
    return stack(columns, 1)



# ----- select, column/depth stacking, diagflat, unravel_index ---------------------------------------------------
def _selection(input, dim, index):
    """The index tuple that picks ``index`` along ``dim``, PyTorch's errors for bad ones (``...`` at the end, so
    that NumPy gives a 0-dim view rather than a scalar)."""
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    axis = _normalize_dim(dim, input.ndim)
    size = input.shape[axis]
    index = operator.index(index)
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {dim}")
    return (slice(None),) * axis + (index % size, Ellipsis)


def _selected_back(grad, input, dim, index):
    gradient = zeros_like(input, dtype=grad.dtype)
    gradient[_selection(input, dim, index)] = grad
    return gradient


@_shape_op(is_view=True, gradients={"input": _selected_back})
def select(input, dim, index):
    """A view of ``input`` at ``index`` along ``dim``, which is removed (``x.select(1, i)`` is ``x[:, i]``); a
    negative ``index`` counts from the end.

        >>> agnostic.tensor([[1, 2, 3], [4, 5, 6]]).select(1, -1)
        tensor([3, 6])
    """
    return wrap(input._data[_selection(input, dim, index)], input._device)


def _nonempty(name, tensors):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return tensors


@composite(out="cast", method=False)
def column_stack(tensors):
    """Join ``tensors`` as columns: 0-dim and 1-D tensors become columns ``(n, 1)``, the others are joined along
    dim 1 (``torch.column_stack``).

        >>> agnostic.column_stack([agnostic.tensor([1, 2]), agnostic.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = _nonempty("column_stack", tensors)
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


@composite(out="cast", method=False)
def dstack(tensors):
    """Join ``tensors`` along the third dimension, after :func:`atleast_3d` (``torch.dstack``).

        >>> agnostic.dstack([agnostic.tensor([1, 2]), agnostic.tensor([3, 4])])
        tensor([[[1, 3],
                 [2, 4]]])
    """
    return cat([atleast_3d(t) for t in _nonempty("dstack", tensors)], 2)


@composite()
def diagflat(input, offset=0):
    """A square matrix with the flattened ``input`` on its ``offset`` diagonal (``torch.diagflat``).

        >>> agnostic.diagflat(agnostic.tensor([[1, 2], [3, 4]])).diagonal()
        tensor([1, 2, 3, 4])
    """
    return diag(input.reshape(-1), offset)


@composite(method=False)
def unravel_index(indices, shape):
    """The coordinates, one int64 tensor per dimension of ``shape``, of the flat ``indices`` of a row-major tensor
    of that shape (``torch.unravel_index``); indices out of range wrap around, as in PyTorch.

        >>> agnostic.unravel_index(agnostic.tensor([4, 1]), (3, 2))
        (tensor([2, 0]), tensor([0, 1]))
    """
    if not isinstance(indices, TensorBase):
        raise TypeError(f"unravel_index(): argument 'indices' must be a Tensor, not {type(indices).__name__}")
    if indices.dtype.category != 1:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    if isinstance(shape, int):
        shape = (shape,)
    elif not isinstance(shape, (tuple, list, Size)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {type(shape)}")
    for size in shape:
        if not isinstance(size, int):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {type(size)}")
    shape = tuple(shape)
    if any(size < 0 for size in shape):
        raise ValueError(f"'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices.numel():
        raise ValueError(f"'shape' cannot have zero dimensions when 'indices' is non-empty, but got {shape}")
    device = indices.device
    if indices.numel() == 0:  # a zero in ``shape`` is allowed then, and would make a zero divisor
        return tuple(zeros(tuple(indices.shape), dtype=_dtypes.int64, device=device) for _ in shape)
    strides = list(itertools.accumulate(reversed(shape[1:] + (1,)), lambda a, b: a * b))[::-1]
    strides = make_tensor(strides, dtype=_dtypes.int64, device=device)
    sizes = make_tensor(shape, dtype=_dtypes.int64, device=device)
    return (indices.unsqueeze(-1).floor_divide(strides) % sizes).unbind(-1)


# ----- in-place forms ---------------------------------------------------------------------------------------------
@in_place_of(tril)
def tril_(self, diagonal=0):
    """In-place ``tril``: everything above the ``diagonal`` of the last two dimensions set to zero.

        >>> agnostic.tensor([[1, 2], [3, 4]]).tril_()
        tensor([[1, 0],
                [3, 4]])
    """
    _check_writable(self)
    return write_result(self, tril(self, diagonal), "tril_")


@in_place_of(triu)
def triu_(self, diagonal=0):
    """In-place ``triu``: everything below the ``diagonal`` of the last two dimensions set to zero.

        >>> agnostic.tensor([[1, 2], [3, 4]]).triu_()
        tensor([[1, 2],
                [0, 4]])
    """
    _check_writable(self)
    return write_result(self, triu(self, diagonal), "triu_")


def _restrided(name, reshaped):
    """A Tensor method that gives ``self`` the shape and strides of ``reshaped(self, ...)``, a view of its memory
    (``squeeze_``, ``t_``...). A tensor that needs a gradient is refused: agnostic's graph reads the shapes its
    tensors had when recorded, so ``x = x.<op>()`` is the form to use there."""
    def method(self, *args, **kwargs):
        if self._requires_grad:
            raise RuntimeError(f"{name}(): agnostic doesn't change the shape of a tensor that requires grad in "
                               f"place; use the out-of-place form, x = x.{name[:-1]}(...)")
        self._data = reshaped(self, *args, **kwargs)._data
        return self
    method.__name__ = method.__qualname__ = name
    method.__wrapped__ = reshaped  # its signature, with ``self`` for ``input``
    return method


def _declare_restrided(name, reshaped, example, printed):
    method = _restrided(name, reshaped)
    method.__doc__ = f"""In-place ``{name[:-1]}``: ``self`` takes the new shape (its memory is kept).

        >>> {example}
        {printed}
    """
    tensor_method(name=name, method=method)(method)


_declare_restrided("squeeze_", squeeze, "agnostic.zeros(2, 1).squeeze_().shape", "agnostic.Size([2])")
_declare_restrided("unsqueeze_", unsqueeze, "agnostic.zeros(2).unsqueeze_(0).shape", "agnostic.Size([1, 2])")
_declare_restrided("t_", t, "agnostic.tensor([[1, 2]]).t_()", "tensor([[1],\n                [2]])")
_declare_restrided("transpose_", transpose, "agnostic.zeros(2, 3).transpose_(0, 1).shape", "agnostic.Size([3, 2])")
_declare_restrided("swapaxes_", transpose, "agnostic.zeros(2, 3).swapaxes_(0, 1).shape", "agnostic.Size([3, 2])")
_declare_restrided("swapdims_", transpose, "agnostic.zeros(2, 3).swapdims_(0, 1).shape", "agnostic.Size([3, 2])")


@tensor_method(overwrites=True)
def fill_diagonal_(input, fill_value, wrap=False):
    """Fill the main diagonal of a 2-D (or all-equal n-D) tensor with ``fill_value`` in place; ``wrap`` carries
    the diagonal on past the square part of a tall matrix every ``columns + 1`` rows, as in PyTorch and NumPy.

        >>> agnostic.zeros(2, 3).fill_diagonal_(5)
        tensor([[5., 0., 0.],
                [0., 5., 0.]])
    """
    _check_writable(input)
    if input.ndim < 2:
        raise RuntimeError("fill_diagonal_(): dimensions must be larger than 1")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError("fill_diagonal_(): all dimensions of input must be of equal length")
    device = input.device
    if input.ndim > 2:
        positions = arange(input.shape[0], device=device)
        input[(positions,) * input.ndim] = fill_value
        return input
    rows, columns = input.shape
    end = rows * columns if wrap else builtins.min(rows, columns) * columns
    flat = arange(0, end, columns + 1, device=device)
    input[flat // columns, flat % columns] = fill_value
    return input


__all__ = public_names(globals())
