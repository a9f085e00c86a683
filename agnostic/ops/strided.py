"""Strided views of a tensor's memory (as_strided, storage_offset, empty_strided, resize_), the scattering forms of
views (slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter), index_reduce and put, and the *_copy
forms of views, as PyTorch's.

A tensor's memory is its allocation (PyTorch's storage): ``storage_offset()`` counts elements from its start, and
``as_strided`` lays a view over it with strides in elements, refusing one that reaches past its end.
"""

import builtins
import inspect

import numpy

from .. import _dtypes
from .._layout import check_strided, contiguous_format
from .._size import Size
from .._tensor import TensorBase, _check_writable, _normalize_dim, wrap
from ._dispatch import check_same_device, check_tensor, write_result
from ._registry import composite, in_place_of, public_names, tensor_method
from .creation import arange, empty, tensor as make_tensor, zeros, zeros_like
from .indexing import scatter_reduce
from .shape import _selection, cat, split

_TYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int8": "Char",
               "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _type_name(dtype):
    """PyTorch's name of a scalar type in its messages (``Float`` for float32)."""
    name = str(dtype).removeprefix("agnostic.")
    return _TYPE_NAMES.get(name, name)


# ----- the memory under a tensor ----------------------------------------------------------------------------------
def _allocation(input):
    """``(memory, byte offset)`` of ``input``'s elements in their allocation (see the backends' ``allocation``)."""
    backend = input._device.backend
    with backend.activate():
        return backend.ops.allocation(input._data)


@tensor_method()
def storage_offset(input):
    """How many elements from the start of its memory (its allocation) this tensor's first element lies, as
    ``Tensor.storage_offset``: 0 for a tensor of its own, ``k`` for a view ``t[k:]`` of one.

        >>> agnostic.arange(5)[2:].storage_offset()
        2
    """
    return _allocation(input)[1] // input._data.itemsize


def _geometry(name, size, stride):
    """``size`` and ``stride`` as tuples of ints, with PyTorch's errors."""
    if isinstance(size, int):
        size = (size,)
    if isinstance(stride, int):
        stride = (stride,)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"{name}: Trying to create tensor with negative dimension {min(size)}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    return size, stride


def _needed_elements(size, stride, offset):
    """How many elements of memory a view of ``size`` and ``stride`` from ``offset`` reaches (0 when empty)."""
    if 0 in size:
        return 0
    return offset + 1 + builtins.sum((length - 1) * step for length, step in zip(size, stride))


def _view_of_memory(input, memory, size, stride, offset):
    """The view of ``size``/``stride`` elements from ``offset`` on ``memory`` (flat bytes), as ``input``'s dtype,
    refused with PyTorch's error where it would reach past the memory's end."""
    itemsize = input._data.itemsize
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    needed = _needed_elements(size, stride, offset) * itemsize
    if needed > memory.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {itemsize} requiring a storage size of {needed} are out of bounds for storage "
                           f"of size {memory.size}")
    backend = input._device.backend
    with backend.activate():
        return backend.ops.strided_view(memory, input._data.dtype, size, tuple(s * itemsize for s in stride),
                                        offset * itemsize if needed else 0)


def _storage_positions(shape, stride, offset, device):
    """The memory position of each element of a view of ``shape``/``stride`` from ``offset``, as an int64 tensor
    of ``shape``."""
    positions = make_tensor(offset, dtype=_dtypes.int64, device=device)
    for axis, (length, step) in enumerate(zip(shape, stride)):
        placed = [1] * len(shape)
        placed[axis] = length
        positions = positions + (arange(length, device=device) * step).reshape(placed)
    return positions.expand(tuple(shape))


def _overlaps(shape, stride):
    """Whether a view of ``shape``/``stride`` has elements sharing memory (``expand``'s, say)."""
    extent = 1
    for length, step in sorted(((length, step) for length, step in zip(shape, stride) if length > 1),
                               key=lambda pair: pair[1]):
        if step < extent:
            return True
        extent = step * length
    return False


def _as_strided_back(grad, input, size, stride, storage_offset):
    """The gradient of ``as_strided`` (PyTorch's ``as_strided_backward``): the output's gradients added up in
    memory, then read back at the input's elements (shared by the elements of an overlapping input)."""
    size, stride = _geometry("as_strided", size, stride)
    start = input.storage_offset()
    offset = start if storage_offset is None else storage_offset
    if input.numel() == 0:
        return zeros_like(input, dtype=grad.dtype)
    device = grad.device
    out_positions = _storage_positions(size, stride, offset, device).reshape(-1)
    in_positions = _storage_positions(tuple(input.shape), input.stride(), start, device)
    low = builtins.min(offset, start)
    length = builtins.max(_needed_elements(size, stride, offset), _needed_elements(input.shape, input.stride(),
                                                                                    start)) - low
    memory = zeros(length, dtype=grad.dtype, device=device).index_add(0, out_positions - low, grad.reshape(-1))
    gradient = memory.take(in_positions - low)
    if _overlaps(tuple(input.shape), input.stride()):
        counts = zeros(length, dtype=grad.dtype, device=device).index_add(
            0, (in_positions - low).reshape(-1), zeros(input.numel(), dtype=grad.dtype, device=device) + 1)
        gradient = gradient / counts.take(in_positions - low)
    return gradient


@composite(is_view=True, shape_only=True, gradients={"input": _as_strided_back})
def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s memory with ``size`` and ``stride`` (in elements), starting ``storage_offset``
    elements from the start of the memory (``input``'s own offset when None), as ``torch.as_strided``. Writes
    through it are seen in ``input``; a view reaching past the end of the memory is refused.

        >>> x = agnostic.arange(6)
        >>> agnostic.as_strided(x, (2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]])
        >>> x.as_strided((3,), (2,), 1)
        tensor([1, 3, 5])
    """
    size, stride = _geometry("as_strided", size, stride)
    memory, start = _allocation(input)
    offset = start // input._data.itemsize if storage_offset is None else int(storage_offset)
    return wrap(_view_of_memory(input, memory, size, stride, offset), input._device)


@tensor_method()
def as_strided_(input, size, stride, storage_offset=None):
    """In-place ``as_strided``: ``self`` becomes the view of its memory with ``size`` and ``stride``.

        >>> x = agnostic.arange(6)
        >>> x[1:].as_strided_((2, 2), (1, 2))
        tensor([[1, 3],
                [2, 4]])
    """
    if input._requires_grad:
        raise RuntimeError("as_strided_(): agnostic doesn't change the shape of a tensor that requires grad in "
                           "place; use the out-of-place form, x = x.as_strided(...)")
    input._data = as_strided(input, size, stride, storage_offset)._data
    return input


def _src_matches(src, region):
    if tuple(src.shape) != tuple(region.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(region.shape)}")


def _written(name, input, src, region_of):
    """A copy of ``input`` with ``src`` written over ``region_of(copy)`` (a view of the copy), for op ``name``."""
    check_tensor(name, input)
    check_tensor(name, src, 2, "src")
    check_same_device(input, src)
    result = input.clone()
    region = region_of(result)
    _src_matches(src, region)
    region[...] = src
    return result


def _zeros_for(src, grad):
    return zeros_like(src, dtype=grad.dtype)


@composite(shape_only=True, gradients={
    "input": lambda grad, src, size, stride, storage_offset: as_strided_scatter(
        grad, _zeros_for(src, grad), size, stride, storage_offset),
    "src": lambda grad, size, stride, storage_offset: grad.clone().as_strided(
        size, stride, 0 if storage_offset is None else storage_offset)})
def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written into the view ``as_strided(size, stride, storage_offset)`` of
    the copy (whose offset starts at 0), as ``torch.as_strided_scatter``.

        >>> agnostic.as_strided_scatter(agnostic.zeros(4), agnostic.tensor([1., 2.]), (2,), (2,), 1)
        tensor([0., 1., 0., 2.])
    """
    return _written("as_strided_scatter", input, src, lambda copy: as_strided(copy, size, stride, storage_offset))


# ----- the scattering forms of views ------------------------------------------------------------------------------
def _slice_key(input, dim, start, end, step):
    if input.ndim == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    axis = _normalize_dim(dim, input.ndim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return (slice(None),) * axis + (slice(start, end, step), Ellipsis)


@composite(shape_only=True, gradients={
    "input": lambda grad, src, dim, start, end, step: slice_scatter(grad, _zeros_for(src, grad), dim, start, end,
                                                                    step),
    "src": lambda grad, dim, start, end, step: grad[_slice_key(grad, dim, start, end, step)]})
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` with ``src`` written into the slice ``start:end:step`` along ``dim`` (``src`` has that
    slice's shape), as ``torch.slice_scatter``.

        >>> agnostic.slice_scatter(agnostic.zeros(2, 4), agnostic.ones(2, 2), dim=1, start=2)
        tensor([[0., 0., 1., 1.],
                [0., 0., 1., 1.]])
    """
    key = _slice_key(input, dim, start, end, step)
    return _written("slice_scatter", input, src, lambda copy: copy[key])


@composite(shape_only=True, gradients={
    "input": lambda grad, src, dim, index: select_scatter(grad, _zeros_for(src, grad), dim, index),
    "src": lambda grad, dim, index: grad.select(dim, index)})
def select_scatter(input, src, dim, index):
    """A copy of ``input`` with ``src`` written at ``index`` along ``dim`` (``src`` has ``input``'s shape without
    that dimension), as ``torch.select_scatter``.

        >>> agnostic.select_scatter(agnostic.zeros(2, 2), agnostic.ones(2), 0, 0)
        tensor([[1., 1.],
                [0., 0.]])
    """
    key = _selection(input, dim, index)
    return _written("select_scatter", input, src, lambda copy: copy[key])


@composite(shape_only=True, gradients={
    "input": lambda grad, src, offset, dim1, dim2: diagonal_scatter(grad, _zeros_for(src, grad), offset, dim1, dim2),
    "src": lambda grad, offset, dim1, dim2: grad.diagonal(offset, dim1, dim2)})
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` with ``src`` written on the ``offset`` diagonal of its ``dim1``/``dim2`` planes
    (``src`` has ``input.diagonal(offset, dim1, dim2)``'s shape), as ``torch.diagonal_scatter``.

        >>> agnostic.diagonal_scatter(agnostic.zeros(2, 3), agnostic.ones(2), 1)
        tensor([[0., 1., 0.],
                [0., 0., 1.]])
    """
    return _written("diagonal_scatter", input, src, lambda copy: copy.diagonal(offset, dim1, dim2))


# ----- index_reduce and put ---------------------------------------------------------------------------------------
_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _spread_index(input, dim, index, source):
    """``index`` (along ``dim``) as scatter_reduce's index: one entry per element of ``source``."""
    name = "index_reduce_()"
    check_tensor("index_reduce_", index, 2, "index")
    check_tensor("index_reduce_", source, 3, "source")
    check_same_device(input, index, source)
    if index.dtype not in (_dtypes.int32, _dtypes.int64):
        raise RuntimeError(f"{name}: Expected dtype int32/int64 for index but got: {_type_name(index.dtype)}")
    if index.ndim > 1:
        raise IndexError(f"{name}: Index is supposed to be a vector, got {index.ndim} dimensions")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{name}: self ({_type_name(input.dtype)}) and source ({_type_name(source.dtype)}) must "
                           "have the same scalar type")
    ndim = builtins.max(input.ndim, 1)
    axis = _normalize_dim(dim, ndim)
    shaped_input = tuple(input.shape) or (1,)
    shaped_source = tuple(source.shape) or (1,)
    if source.ndim != input.ndim or any(
            a != b for position, (a, b) in enumerate(zip(shaped_input, shaped_source)) if position != axis):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    if index.numel() != shaped_source[axis]:
        raise RuntimeError(f"{name}: Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({shaped_source[axis]}), for dim: {dim}")
    if index.numel():
        backend = index._device.backend
        with backend.activate():
            if bool(((index._data < 0) | (index._data >= shaped_input[axis])).any()):
                raise IndexError("index out of range in self")
    placed = [1] * ndim
    placed[axis] = index.numel()
    spread = index.to(_dtypes.int64).reshape(placed).expand(shaped_source)
    return axis, spread


@composite()
def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` with the slices of ``source`` along ``dim`` reduced into the slices ``index`` names:
    ``reduce`` is "prod", "mean", "amax" or "amin"; without ``include_self`` the written slices' own values are left
    out (``torch.index_reduce``; integer means round down). Differentiated as ``scatter_reduce``.

        >>> x = agnostic.tensor([1., 2., 3.])
        >>> x.index_reduce(0, agnostic.tensor([0, 0, 2]), agnostic.tensor([4., 5., 6.]), "amax")
        tensor([5., 2., 6.])
    """
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    axis, spread = _spread_index(input, dim, index, source)
    if input.ndim == 0:
        return scatter_reduce(input.reshape(1), 0, spread, source.reshape(-1), reduce,
                              include_self=include_self).reshape(())
    return scatter_reduce(input, axis, spread, source.reshape(spread.shape), reduce, include_self=include_self)


@in_place_of(index_reduce)
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place ``index_reduce``.

        >>> agnostic.ones(3).index_reduce_(0, agnostic.tensor([1, 1]), agnostic.tensor([2., 3.]), "prod")
        tensor([1., 6., 1.])
    """
    _check_writable(self)
    return write_result(self, index_reduce(self, dim, index, source, reduce, include_self=include_self),
                        "index_reduce_")


def _flat_positions(input, index, source):
    """``index`` and ``source`` flattened, checked as ``put_`` checks them."""
    check_tensor("put", index, 2, "index")
    check_tensor("put", source, 3, "source")
    check_same_device(input, index, source)
    if index.dtype is not _dtypes.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_type_name(index.dtype)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type_name(input.dtype)} and source.dtype = {_type_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    count = input.numel()
    positions = index.reshape(-1)
    if positions.numel():
        backend = positions._device.backend
        with backend.activate():
            outside = (positions._data < -count) | (positions._data >= count)
            if bool(outside.any()):
                bad = int(positions._data[outside][0])
                raise IndexError(f"out of range: tried to access index {bad} on a tensor of {count} elements.")
    return positions, source.reshape(-1)


@composite()
def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source``'s elements written (added, with ``accumulate``) at the positions
    ``index`` names in the flattened ``input``; negative positions count from the end (``torch.put``).

        >>> agnostic.zeros(2, 2).put(agnostic.tensor([0, 3]), agnostic.tensor([1., 2.]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    positions, values = _flat_positions(input, index, source)
    return input.reshape(-1).index_put((positions,), values, accumulate).reshape(input.shape)


@in_place_of(put)
def put_(self, index, source, accumulate=False):
    """In-place ``put``: ``self.flatten()[index] = source`` (``+=`` with ``accumulate``, repeats adding up).

        >>> agnostic.zeros(3).put_(agnostic.tensor([1, 1]), agnostic.tensor([1., 2.]), accumulate=True)
        tensor([0., 3., 0.])
    """
    _check_writable(self)
    return write_result(self, put(self, index, source, accumulate), "put_")


# ----- splits ---------------------------------------------------------------------------------------------------
def _pieces_back(grads, input, dim):
    return cat(list(grads), dim % input.ndim)


@composite()
def split_with_sizes(input, split_sizes, dim=0):
    """Views of consecutive pieces along ``dim`` of the listed sizes, which add up to its length
    (``torch.split_with_sizes``).

        >>> agnostic.arange(5).split_with_sizes([2, 3])
        (tensor([0, 1]), tensor([2, 3, 4]))
    """
    if isinstance(split_sizes, int) or not all(isinstance(size, int) for size in split_sizes):
        raise TypeError(f"split_with_sizes(): argument 'split_sizes' must be tuple of ints, not {split_sizes!r}")
    return split(input, list(split_sizes), dim)


@composite(shape_only=True, gradients={"input": _pieces_back})
def unsafe_split(input, split_size, dim=0):
    """``split`` without autograd's view checks: the pieces may be changed in place where they need a gradient,
    the caller promising that the input isn't used then (``torch.unsafe_split``).

        >>> agnostic.arange(5).unsafe_split(2)
        (tensor([0, 1]), tensor([2, 3]), tensor([4]))
    """
    return split(input, split_size, dim)


@composite(shape_only=True, gradients={"input": _pieces_back})
def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` without autograd's view checks (see ``unsafe_split``).

        >>> agnostic.arange(3).unsafe_split_with_sizes([1, 2])
        (tensor([0]), tensor([1, 2]))
    """
    return split_with_sizes(input, split_sizes, dim)


@composite(shape_only=True, gradients={"input": _pieces_back})
def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` without autograd's view checks (see ``unsafe_split``).

        >>> agnostic.arange(4).unsafe_chunk(2)
        (tensor([0, 1]), tensor([2, 3]))
    """
    return input.chunk(chunks, dim)


# ----- empty_strided, new, resize_, output_nr ---------------------------------------------------------------------
@composite(method=False)
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialized tensor of ``size`` with ``stride`` (in elements), in memory just large enough for it
    (``torch.empty_strided``).

        >>> agnostic.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    check_strided(layout, "empty_strided")
    size, stride = _geometry("empty_strided", size, stride)
    backing = empty(_needed_elements(size, stride, 0), dtype=dtype, device=device, pin_memory=pin_memory)
    made = wrap(_view_of_memory(backing, _allocation(backing)[0], size, stride, 0), backing._device)
    return made.requires_grad_() if requires_grad else made


@tensor_method()
def new_empty_strided(input, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    """``empty_strided`` with ``self``'s dtype and device unless given (``Tensor.new_empty_strided``).

        >>> agnostic.ones(1, dtype=agnostic.float64).new_empty_strided((2,), (3,)).dtype
        agnostic.float64
    """
    check_strided(layout, "new_empty_strided")
    return empty_strided(size, stride, dtype=input.dtype if dtype is None else dtype,
                         device=input.device if device is None else device, requires_grad=requires_grad,
                         pin_memory=pin_memory)


@tensor_method(name="new")
def new_tensor_legacy(input, *args, device=None):
    """PyTorch's legacy constructor, with ``self``'s dtype and device (``Tensor.new``): ``t.new(2, 3)`` or
    ``t.new(agnostic.Size([2, 3]))`` an uninitialized tensor of that size, ``t.new([1, 2])`` (a list, tuple or
    array) a tensor of that data, ``t.new(other)`` a tensor sharing ``other``'s memory, ``t.new()`` an empty one.

        >>> x = agnostic.tensor([1.5])
        >>> x.new([1, 2])
        tensor([1., 2.])
        >>> x.new(2, 3).shape
        agnostic.Size([2, 3])
    """
    device = input.device if device is None else device
    if not args:
        return empty(0, dtype=input.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], TensorBase):
        other = args[0]
        if other.dtype is not input.dtype or other.device != input.device:
            raise TypeError(f"new(): expected a tensor of dtype {input.dtype} on {input.device}, got one of "
                            f"{other.dtype} on {other.device}")
        return wrap(other._data, other._device)
    if all(isinstance(arg, (int, numpy.integer)) and not isinstance(arg, bool) for arg in args) or (
            len(args) == 1 and isinstance(args[0], Size)):
        return empty(*args, dtype=input.dtype, device=device)
    if len(args) > 1:
        raise TypeError(f"new(): expected sizes (ints), a sequence of data or a tensor, got {args!r}")
    data = args[0]
    if isinstance(data, (int, float, complex, bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return make_tensor(data, dtype=input.dtype, device=device)


def _contiguous_strides(shape):
    strides, step = [], 1
    for length in reversed(shape):
        strides.append(step)
        step *= builtins.max(length, 1)
    return tuple(reversed(strides))


def _resized(input, shape):
    """``input`` given ``shape`` (contiguous strides from its storage offset) in place: its memory when large
    enough, else new memory holding the old's bytes first."""
    if input._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if any(length < 0 for length in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    if tuple(shape) == tuple(input.shape):
        return input
    memory, start = _allocation(input)
    itemsize = input._data.itemsize
    offset = start // itemsize
    stride = _contiguous_strides(shape)
    needed = _needed_elements(shape, stride, offset) * itemsize
    if needed > memory.size:
        backend = input._device.backend
        with backend.activate():
            grown = backend.xp.empty(needed, numpy.uint8)
            grown[:memory.size] = memory
        memory = backend.ops.allocation(grown)[0]
    input._data = _view_of_memory(input, memory, tuple(shape), stride, offset)
    return input


@tensor_method()
def resize_(input, *size, memory_format=None):
    """Give ``self`` the shape ``size`` in place, contiguous from its storage offset: its leading elements are
    kept; memory is added (uninitialized) when it grows past its allocation (``Tensor.resize_``). Refused for
    tensors that require grad, as in PyTorch.

        >>> x = agnostic.arange(6)
        >>> x.resize_(2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = size[0]
    return _resized(input, tuple(int(count) for count in size))


@tensor_method()
def resize_as_(input, the_template, *, memory_format=None):
    """``resize_(the_template.shape)`` (``Tensor.resize_as_``).

        >>> agnostic.arange(4).resize_as_(agnostic.zeros(3))
        tensor([0, 1, 2])
    """
    return _resized(input, tuple(the_template.shape))


@tensor_method(as_property=True)
def output_nr(input):
    """Which output of its ``grad_fn`` this tensor is (0 for a leaf, and for most ops' results), as
    ``Tensor.output_nr``.

        >>> agnostic.arange(4.0, requires_grad=True).split(2)[1].output_nr
        1
    """
    return input._output_nr


# ----- the *_copy forms of views ----------------------------------------------------------------------------------
def _fresh(result):
    """A view op's result with memory of its own (each piece, for ops that give several)."""
    if isinstance(result, (tuple, list)):
        return tuple(piece.clone(memory_format=contiguous_format) for piece in result)
    return result.clone(memory_format=contiguous_format)


# name -> (the view, as a function of the same parameters; example; what it prints). Each is declared as the view
# followed by a copy, so its gradient is the view's.
_COPIES = {
    "view_copy": (lambda input, size: input.reshape(size),
                  "agnostic.view_copy(agnostic.arange(4), (2, 2))", "tensor([[0, 1],\n                [2, 3]])"),
    "expand_copy": (lambda input, size, *, implicit=False: input.expand(size),
                    "agnostic.expand_copy(agnostic.tensor([1, 2]), (2, 2))",
                    "tensor([[1, 2],\n                [1, 2]])"),
    "permute_copy": (lambda input, dims: input.permute(dims),
                     "agnostic.permute_copy(agnostic.zeros(2, 3), (1, 0)).stride()", "(2, 1)"),
    "t_copy": (lambda input: input.t(), "agnostic.t_copy(agnostic.tensor([[1, 2]]))",
               "tensor([[1],\n                [2]])"),
    "transpose_copy": (lambda input, dim0, dim1: input.transpose(dim0, dim1),
                       "agnostic.transpose_copy(agnostic.zeros(2, 3), 0, 1).stride()", "(2, 1)"),
    "squeeze_copy": (lambda input, dim=None: input.squeeze() if dim is None else input.squeeze(dim),
                     "agnostic.squeeze_copy(agnostic.zeros(2, 1)).shape", "agnostic.Size([2])"),
    "unsqueeze_copy": (lambda input, dim: input.unsqueeze(dim),
                       "agnostic.unsqueeze_copy(agnostic.tensor([1, 2]), 0)", "tensor([[1, 2]])"),
    "diagonal_copy": (lambda input, offset=0, dim1=0, dim2=1: input.diagonal(offset, dim1, dim2),
                      "agnostic.diagonal_copy(agnostic.tensor([[1, 2], [3, 4]]))", "tensor([1, 4])"),
    "select_copy": (lambda input, dim, index: input.select(dim, index),
                    "agnostic.select_copy(agnostic.tensor([[1, 2], [3, 4]]), 1, 0)", "tensor([1, 3])"),
    "slice_copy": (lambda input, dim=0, start=None, end=None, step=1: input[_slice_key(input, dim, start, end, step)],
                   "agnostic.slice_copy(agnostic.arange(6), 0, 1, None, 2)", "tensor([1, 3, 5])"),
    "detach_copy": (lambda input: input.detach(), "agnostic.detach_copy(agnostic.tensor([1., 2.]))",
                    "tensor([1., 2.])"),
    "alias_copy": (lambda input: input, "agnostic.alias_copy(agnostic.tensor([1, 2]))", "tensor([1, 2])"),
    "narrow_copy": (lambda input, dim, start, length: input.narrow(dim, start, length),
                    "agnostic.arange(6).narrow_copy(0, 2, 3)", "tensor([2, 3, 4])"),
    "unbind_copy": (lambda input, dim=0: input.unbind(dim),
                    "agnostic.unbind_copy(agnostic.tensor([[1, 2], [3, 4]]), 1)", "(tensor([1, 3]), tensor([2, 4]))"),
    "split_copy": (lambda input, split_size, dim=0: input.split(split_size, dim),
                   "agnostic.split_copy(agnostic.arange(5), 2)", "(tensor([0, 1]), tensor([2, 3]), tensor([4]))"),
    "split_with_sizes_copy": (lambda input, split_sizes, dim=0: split_with_sizes(input, split_sizes, dim),
                              "agnostic.split_with_sizes_copy(agnostic.arange(3), [1, 2])",
                              "(tensor([0]), tensor([1, 2]))"),
    "unfold_copy": (lambda input, dimension, size, step: input.unfold(dimension, size, step),
                    "agnostic.unfold_copy(agnostic.arange(5), 0, 2, 2)", "tensor([[0, 1],\n                [2, 3]])"),
    "as_strided_copy": (lambda input, size, stride, storage_offset=None: as_strided(input, size, stride,
                                                                                     storage_offset),
                        "agnostic.as_strided_copy(agnostic.arange(4), (2,), (2,))", "tensor([0, 2])"),
    "view_as_real_copy": (lambda input: input.view_as_real(),
                          "agnostic.view_as_real_copy(agnostic.tensor([1 + 2j]))", "tensor([[1., 2.]])"),
    "view_as_complex_copy": (lambda input: input.view_as_complex(),
                             "agnostic.view_as_complex_copy(agnostic.tensor([[1., 2.]]))", "tensor([1.+2.j])"),
}
_COPY_METHODS = {"narrow_copy"}  # those torch.Tensor has as methods too


def _declare_copy(name, view, example, printed):
    def forward(*args, **kwargs):
        return _fresh(view(*args, **kwargs))
    view_name = name.removesuffix("_copy")
    forward.__name__ = forward.__qualname__ = name
    forward.__signature__ = inspect.signature(view)
    forward.__doc__ = f"""``{view_name}`` with memory of its own: the same values, copied (contiguous), rather than
    a view of ``input`` (``torch.{name}``); differentiated as ``{view_name}``.

        >>> {example}
        {printed}
    """
    return composite(method=None if name in _COPY_METHODS else False)(forward)


for _name, (_view, _example, _printed) in _COPIES.items():
    globals()[_name] = _declare_copy(_name, _view, _example, _printed)
del _name, _view, _example, _printed

__all__ = public_names(globals())
