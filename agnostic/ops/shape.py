"""Shape ops: views (view, permute, transpose, expand, squeeze...) that share memory, and joins/splits that copy."""

import math

import numpy

from .. import _backend, _dtypes
from .._size import Size
from .._tensor import Tensor, _normalize_dim, wrap
from ._dispatch import call, check_same_device, finish, operand_array, result_dtype


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


def reshape(input, *shape):
    """The same elements in a new shape: a view when the layout allows, a copy otherwise."""
    if len(shape) == 1 and type(shape[0]) in (tuple, list, Size):
        shape = shape[0]
    if all(type(s) is int and s >= -1 for s in shape) and shape.count(-1) <= 1:
        data = input._data
        try:
            if data.flags.c_contiguous:  # always a view: no kernel, so no need to make the device current
                return wrap(data.reshape(shape), input._device)
            return wrap(call(input._device, data.reshape, shape), input._device)
        except ValueError:
            pass  # explained below with PyTorch's message
    shape = _infer_shape(_sizes(shape), input._data.size, "reshape")
    return wrap(call(input._device, input._data.reshape, shape), input._device)


def view(input, *shape):
    """A view with a new shape (always shares memory), or a reinterpretation as another dtype of equal size.

    Raises when the memory layout can't be viewed that way; ``reshape`` copies instead.
    """
    if len(shape) == 1 and (isinstance(shape[0], (_dtypes.dtype, numpy.dtype, type)) or isinstance(shape[0], str)):
        return _view_as_dtype(input, _dtypes.as_dtype(shape[0]))
    shape = _infer_shape(_sizes(shape), input._data.size, "view")
    array = input._data
    result = call(input._device, array.reshape, shape)
    if array.size > 1 and _backend.data_pointer(result) != _backend.data_pointer(array):
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


def view_as(input, other):
    """``view(other.shape)``."""
    return view(input, other._data.shape)


def reshape_as(input, other):
    """``reshape(other.shape)``."""
    return reshape(input, other._data.shape)


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dimensions ``start_dim..end_dim`` into one (a view when possible)."""
    ndim = input._data.ndim
    if ndim == 0:
        return reshape(input, 1)
    start, end = _normalize_dim(start_dim, ndim), _normalize_dim(end_dim, ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input._data.shape
    return reshape(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """Split dimension ``dim`` into ``sizes``."""
    shape = input._data.shape
    dim = _normalize_dim(dim, len(shape))
    sizes = _infer_shape(tuple(sizes), shape[dim], "unflatten")
    return view(input, shape[:dim] + sizes + shape[dim + 1:])


def permute(input, *dims):
    """A view with dimensions reordered."""
    dims = _sizes(dims)
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise RuntimeError(f"permute(): number of dims don't match: got {len(dims)} dims for a {ndim}-d tensor")
    axes = tuple(_normalize_dim(d, ndim) for d in dims)
    if len(set(axes)) != ndim:
        raise RuntimeError(f"permute(): repeated dim in {list(dims)}")
    return wrap(input._data.transpose(axes), input._device)


def transpose(input, dim0, dim1):
    """A view with ``dim0`` and ``dim1`` swapped."""
    ndim = input._data.ndim
    if ndim == 0:
        _normalize_dim(dim0, 0), _normalize_dim(dim1, 0)
        return wrap(input._data.view(), input._device)
    return wrap(input._data.swapaxes(_normalize_dim(dim0, ndim), _normalize_dim(dim1, ndim)), input._device)


swapaxes = swapdims = transpose


def t(input):
    """Transpose of a tensor with at most 2 dimensions."""
    if input._data.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input._data.ndim}D; "
                           "use transpose(dim0, dim1) or mT")
    return wrap(input._data.T, input._device)


def matrix_transpose(input):
    """Swap the last two dimensions (``mT``)."""
    if input._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return transpose(input, -2, -1)


def movedim(input, source, destination):
    """A view with dimension(s) ``source`` moved to ``destination``."""
    xp = _backend.namespace(input._device)
    return wrap(xp.moveaxis(input._data, source, destination), input._device)


moveaxis = movedim


def squeeze(input, dim=None):
    """A view without size-1 dimensions (only ``dim``'s, when given)."""
    array = input._data
    if dim is None:
        return wrap(array.reshape([s for s in array.shape if s != 1]), input._device)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    axes = {_normalize_dim(d, array.ndim) for d in dims}
    shape = [s for i, s in enumerate(array.shape) if not (i in axes and s == 1)]
    return wrap(array.reshape(shape), input._device)


def unsqueeze(input, dim):
    """A view with a size-1 dimension inserted at ``dim``."""
    array = input._data
    dim = _normalize_dim(dim, array.ndim + 1)
    return wrap(array.reshape(array.shape[:dim] + (1,) + array.shape[dim:]), input._device)


def expand(input, *sizes):
    """A view broadcasting size-1 dimensions to ``sizes`` (-1 keeps a size); no memory is allocated."""
    sizes = _sizes(sizes)
    array = input._data
    if len(sizes) < array.ndim:
        raise RuntimeError(
            f"expand(): the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({array.ndim})"
        )
    lead = len(sizes) - array.ndim
    shape = []
    for i, size in enumerate(sizes):
        current = array.shape[i - lead] if i >= lead else None
        if size == -1:
            if current is None:
                raise RuntimeError(f"expand(): -1 is not allowed in a leading, non-existing dimension {i}")
            size = current
        elif current is not None and current != size and current != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({size}) must match the existing size ({current}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(array.shape)}"
            )
        shape.append(size)
    strides = [0] * lead + [0 if array.shape[i] == 1 and shape[i + lead] != 1 else array.strides[i]
                            for i in range(array.ndim)]
    return wrap(_as_strided(input._device, array, tuple(shape), tuple(strides)), input._device)


def _as_strided(device, array, shape, strides):
    if device.type == "cpu":
        return numpy.lib.stride_tricks.as_strided(array, shape, strides, writeable=True)
    return _backend.namespace(device).lib.stride_tricks.as_strided(array, shape, strides)


def expand_as(input, other):
    """``expand(other.shape)``."""
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    """``expand(size)``."""
    return expand(input, size)


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common broadcast shape."""
    shape = broadcast_shapes(*(t._data.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def broadcast_shapes(*shapes):
    """The broadcast shape of ``shapes``, with PyTorch's error message when they don't broadcast."""
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
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{name}(): expected a sequence of Tensors, but element {position} is "
                            f"{type(tensor).__name__}")
    device = check_same_device(*tensors)
    dtype = result_dtype(*tensors)
    arrays = [operand_array(t, dtype, device) for t in tensors]
    return finish(call(device, join, _backend.namespace(device), arrays, dim), dtype, device)


def cat(tensors, dim=0):
    """Join ``tensors`` along an existing dimension (dtypes promote, as in PyTorch)."""
    tensors = list(tensors)
    nonempty = [t for t in tensors if not (isinstance(t, Tensor) and t._data.shape == (0,))] or tensors[:1]
    if not tensors:
        raise ValueError("cat() expects a non-empty sequence of tensors")
    reference = nonempty[0]
    if isinstance(reference, Tensor) and reference._data.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated; use stack()")
    ndim = reference._data.ndim if isinstance(reference, Tensor) else 1
    axis = _normalize_dim(dim, ndim)
    for position, tensor in enumerate(nonempty):
        if isinstance(tensor, Tensor) and (tensor._data.ndim != ndim or any(
                a != b for i, (a, b) in enumerate(zip(tensor._data.shape, reference._data.shape)) if i != axis)):
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {axis}. Expected shape {list(reference.shape)} "
                f"but got {list(tensor.shape)} for tensor number {position} in the list"
            )

    def join(xp, arrays, axis):
        return xp.concatenate([a for a in arrays if a.ndim == ndim] or arrays, axis=axis)
    return _joined("cat", tensors, axis, join)


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join same-shaped ``tensors`` along a new dimension."""
    tensors = list(tensors)
    if tensors and isinstance(tensors[0], Tensor):
        first = tensors[0]._data.shape
        for position, tensor in enumerate(tensors):
            if isinstance(tensor, Tensor) and tensor._data.shape != first:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 "
                                   f"and {list(tensor._data.shape)} at entry {position}")
        axis = _normalize_dim(dim, len(first) + 1)
    else:
        axis = dim

    return _joined("stack", tensors, axis, lambda xp, arrays, axis: xp.stack(arrays, axis=axis))


def hstack(tensors):
    """Concatenate along dim 1 (dim 0 for 1-D tensors)."""
    tensors = list(tensors)
    return cat(tensors, 0 if tensors[0]._data.ndim == 1 else 1)


def vstack(tensors):
    """Concatenate along dim 0, promoting 1-D tensors to rows."""
    return cat([t.reshape(1, -1) if t._data.ndim == 1 else t for t in tensors], 0)


def split(tensor, split_size_or_sections, dim=0):
    """Views of consecutive pieces along ``dim``: of ``split_size`` each (the last may be smaller), or of the
    listed section sizes."""
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


def chunk(input, chunks, dim=0):
    """Split into ``chunks`` views of equal size along ``dim`` (the last may be smaller; fewer may be returned)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    if input._data.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    length = input._data.shape[_normalize_dim(dim, input._data.ndim)]
    if length == 0:
        return split(input, [0] * chunks, dim)
    return split(input, max(-(-length // chunks), 1), dim)


def tensor_split(input, indices_or_sections, dim=0):
    """Split into ``n`` nearly equal views, or at the given indices, along ``dim``."""
    xp = _backend.namespace(input._device)
    axis = _normalize_dim(dim, input._data.ndim)
    sections = indices_or_sections if isinstance(indices_or_sections, int) else list(indices_or_sections)
    return tuple(wrap(a, input._device) for a in xp.array_split(input._data, sections, axis=axis))


def unbind(input, dim=0):
    """Views of each slice along ``dim``, with that dimension removed."""
    axis = _normalize_dim(dim, input._data.ndim)
    moved = _backend.namespace(input._device).moveaxis(input._data, axis, 0)
    return tuple(wrap(moved[i], input._device) for i in range(moved.shape[0]))


def narrow(input, dim, start, length):
    """A view of ``length`` elements from ``start`` along ``dim``."""
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


def flip(input, *dims):
    """A copy with the order of elements reversed along ``dims`` (``flip(0, 1)`` or ``flip((0, 1))``)."""
    axes = _dims_list(dims[0] if len(dims) == 1 else dims, input._data.ndim, "flip")
    if input._data.ndim == 0:
        return input.clone()
    xp = _backend.namespace(input._device)
    with _backend.on(input._device):
        return wrap(xp.flip(input._data, axes).copy() if axes else input._data.copy(), input._device)


def fliplr(input):
    """Reverse columns (dim 1)."""
    return flip(input, (1,))


def flipud(input):
    """Reverse rows (dim 0)."""
    return flip(input, (0,))


def roll(input, shifts, dims=None):
    """Shift elements cyclically along ``dims`` (the flattened tensor when ``dims`` is None)."""
    xp = _backend.namespace(input._device)
    array = input._data
    if dims is None:
        return wrap(call(input._device, xp.roll, array.reshape(-1), shifts).reshape(array.shape), input._device)
    shifts_tuple = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    axes = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts_tuple) != len(axes):
        raise RuntimeError(f"roll(): shifts and dimensions must align. shifts: {len(shifts_tuple)}, "
                           f"dims: {len(axes)}")
    axes = tuple(_normalize_dim(d, array.ndim) for d in axes)
    return wrap(call(input._device, xp.roll, array, shifts_tuple, axes), input._device)


def repeat(input, *sizes):
    """Tile the tensor ``sizes`` times along each dimension (PyTorch's ``repeat``, NumPy's ``tile``)."""
    sizes = _sizes(sizes)
    if len(sizes) < input._data.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of "
                           "tensor")
    xp = _backend.namespace(input._device)
    return wrap(call(input._device, xp.tile, input._data, sizes), input._device)


def tile(input, dims):
    """Repeat along each dimension; fewer ``dims`` than dimensions are padded with ones on the left."""
    dims = tuple(dims)
    dims = (1,) * (input._data.ndim - len(dims)) + dims
    return repeat(input, dims)


def repeat_interleave(input, repeats, dim=None):
    """Repeat each element ``repeats`` times (along ``dim``, or of the flattened tensor)."""
    xp = _backend.namespace(input._device)
    if isinstance(repeats, Tensor):
        check_same_device(input, repeats)
        repeats = repeats._data
    array = input._data.reshape(-1) if dim is None else input._data
    axis = 0 if dim is None else _normalize_dim(dim, array.ndim)
    return wrap(call(input._device, xp.repeat, array, repeats, axis=axis), input._device)


def tril(input, diagonal=0):
    """Lower triangle of the last two dimensions; the rest zeroed."""
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    xp = _backend.namespace(input._device)
    return wrap(call(input._device, xp.tril, input._data, diagonal), input._device)


def triu(input, diagonal=0):
    """Upper triangle of the last two dimensions; the rest zeroed."""
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    xp = _backend.namespace(input._device)
    return wrap(call(input._device, xp.triu, input._data, diagonal), input._device)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """A view of the diagonal of the ``dim1``/``dim2`` planes, appended as the last dimension."""
    ndim = input._data.ndim
    return wrap(input._data.diagonal(offset, _normalize_dim(dim1, ndim), _normalize_dim(dim2, ndim)),
                input._device)


def diag(input, diagonal=0):
    """The diagonal of a matrix, or a square matrix with a vector on its diagonal."""
    xp = _backend.namespace(input._device)
    return wrap(call(input._device, xp.diag, input._data, diagonal).copy(), input._device)
