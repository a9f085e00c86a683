"""Tensor layouts and memory formats (``torch.layout``, ``torch.memory_format``): agnostic's tensors are dense and
strided, so ``strided`` is the only layout; memory formats are orders of the strides, as in PyTorch.

A NumPy or CuPy array holds any strides, so a ``channels_last`` tensor is what it is in PyTorch: shape NCHW, strides
of an NHWC-contiguous buffer. This module holds PyTorch's stride rules (c10's ``MemoryFormat.h`` and
``Contiguity.h``, ATen's ``empty_like``) as plain functions of shapes and strides in elements, and the one
allocation of an array with given strides.
"""

import numpy


class layout:
    """How a tensor's elements are laid out in memory, as ``torch.layout``; agnostic has ``agnostic.strided`` only
    (dense arrays with strides), which ``Tensor.layout`` returns.

        >>> agnostic.zeros(2).layout
        agnostic.strided
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"agnostic.{self.name}"

    def __reduce__(self):  # pickles as the one object of its name, as PyTorch's layouts do
        return self.name


strided = layout("strided")


def check_strided(given, op):
    """Refuse a ``layout=`` other than ``strided`` (or None, the default) for op ``op``, which makes dense tensors.

        >>> from agnostic._layout import check_strided
        >>> check_strided(agnostic.sparse_coo, "zeros")
        Traceback (most recent call last):
        ...
        RuntimeError: zeros(): makes strided (dense) tensors only, got layout=agnostic.sparse_coo; ...
    """
    if given is not None and given is not strided:
        raise RuntimeError(f"{op}(): makes strided (dense) tensors only, got layout={given!r}; make a sparse tensor "
                           "with agnostic.sparse_coo_tensor (or the like), or convert a dense one with .to_sparse()")


class memory_format:
    """An order of a tensor's strides, as ``torch.memory_format``: ``agnostic.contiguous_format`` (row-major),
    ``agnostic.channels_last`` (4-D NCHW tensors stored as NHWC), ``agnostic.channels_last_3d`` (5-D NCDHW stored as
    NDHWC), and ``agnostic.preserve_format`` (keep the input's, the default of ``clone``, ``to`` and ``*_like``).

        >>> x = agnostic.ones(2, 3, 4, 5).to(memory_format=agnostic.channels_last)
        >>> x.stride(), x.is_contiguous(memory_format=agnostic.channels_last)
        ((60, 1, 15, 3), True)
        >>> agnostic.channels_last
        agnostic.channels_last
    """

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"agnostic.{self.name}"

    def __reduce__(self):  # pickles as the one object of its name, as PyTorch's memory formats do
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# The rank each channels-last format needs, and its dimensions from the innermost (stride 1) to the outermost.
_CHANNELS_LAST_ORDER = {channels_last: (4, (1, 3, 2, 0)), channels_last_3d: (5, (1, 4, 3, 2, 0))}


def check_memory_format(value, allow_preserve=True, operation=None):
    """``value`` (None: ``preserve_format``, or ``contiguous_format`` where preserving is not allowed) as a memory
    format, refusing other objects with PyTorch's TypeError and ``preserve_format`` where ``operation`` can't keep
    a layout."""
    if value is None:
        return preserve_format if allow_preserve else contiguous_format
    if not isinstance(value, memory_format):
        raise TypeError(f"memory_format must be an agnostic.memory_format (agnostic.contiguous_format, "
                        f"agnostic.channels_last, agnostic.channels_last_3d or agnostic.preserve_format), not "
                        f"{type(value).__name__}")
    if value is preserve_format and not allow_preserve:
        raise RuntimeError(f"preserve memory format is unsupported by the {operation} operator; pass "
                           "agnostic.contiguous_format or a channels-last format")
    return value


def check_rank(value, ndim):
    """PyTorch's error for a channels-last format on a tensor of the wrong rank."""
    entry = _CHANNELS_LAST_ORDER.get(value)
    if entry is not None and entry[0] != ndim:
        raise RuntimeError(f"required rank {entry[0]} tensor to use {value.name} format")


def contiguous_strides(shape):
    """Row-major strides (in elements) of ``shape``; a size 0 counts as 1, as in PyTorch."""
    strides, step = [0] * len(shape), 1
    for dim in range(len(shape) - 1, -1, -1):
        strides[dim] = step
        step *= max(shape[dim], 1)
    return tuple(strides)


def format_strides(value, shape):
    """The strides (in elements) of a tensor of ``shape`` in memory format ``value`` (not ``preserve_format``),
    as PyTorch's ``get_channels_last_strides_2d``/``_3d``; the rank is checked."""
    check_rank(value, len(shape))
    entry = _CHANNELS_LAST_ORDER.get(value)
    if entry is None:
        return contiguous_strides(shape)
    strides, step = [0] * len(shape), 1
    for dim in entry[1]:
        strides[dim] = step
        step *= shape[dim]
    return tuple(strides)


def is_contiguous_as(value, shape, strides):
    """``Tensor.is_contiguous(memory_format=value)`` for a channels-last format: the strides of the dimensions of
    size other than 1 are those of the format (c10's ``_compute_channels_last_contiguous_2d``)."""
    entry = _CHANNELS_LAST_ORDER[value]
    if entry[0] != len(shape):
        return False
    expected = 1
    for dim in entry[1]:
        if shape[dim] != 1:
            if strides[dim] != expected:
                return False
            expected *= shape[dim]
    return True


def _strides_like(order, shape, strides):
    """c10's ``is_channels_last_strides_2d_s4``/``_3d_s5``: the strides increase along ``order``, with its
    tie-breaks toward the contiguous format for ambiguous size-1 dimensions."""
    if strides[1] == 0:
        return False
    smallest = 0
    for dim in order:
        if shape[dim] == 0 or strides[dim] < smallest:
            return False
        if dim == 0 and smallest == strides[1]:
            return False
        smallest = strides[dim] * shape[dim] if shape[dim] > 1 else strides[dim]
    return True


def suggest_memory_format(shape, strides):
    """The memory format a tensor's strides suggest, as PyTorch's ``suggest_memory_format``: what ``*_like`` and
    ``clone`` keep for tensors that are not dense, and what ``to(memory_format=...)`` compares with."""
    ndim = len(shape)
    if ndim == 4 and _strides_like(_CHANNELS_LAST_ORDER[channels_last][1], shape, strides):
        return channels_last
    if ndim == 5 and _strides_like(_CHANNELS_LAST_ORDER[channels_last_3d][1], shape, strides):
        return channels_last_3d
    return contiguous_format


def is_non_overlapping_and_dense(shape, strides):
    """True when the elements fill a block of memory exactly once in some order of the dimensions (c10's
    ``compute_non_overlapping_and_dense``): the tensors whose strides ``preserve_format`` copies as they are."""
    required = 1
    for stride, size in sorted((stride, size) for size, stride in zip(shape, strides) if size >= 2):
        if stride != required:
            return False
        required *= size
    return True


def dense_strides_like(shape, strides):
    """Dense strides in the order of ``strides`` (ATen's ``infer_dense_strides``): what ``preserve_format`` gives a
    tensor that is not dense. Dimensions of stride 0 keep their row-major place; equal strides put the smaller size
    inside."""
    ndim = len(shape)
    order = list(range(ndim - 1, -1, -1))  # from the innermost dimension out

    def should_swap(inner, outer):  # 1: ``inner`` (placed inside ``outer`` for now) belongs outside it
        if strides[inner] == 0 or strides[outer] == 0:
            return 0
        if strides[inner] != strides[outer]:
            return 1 if strides[inner] > strides[outer] else -1
        return 1 if shape[inner] > shape[outer] else 0

    for position in range(1, ndim):
        moving = position
        for earlier in range(position - 1, -1, -1):
            comparison = should_swap(order[earlier], order[moving])
            if comparison > 0:
                order[earlier], order[moving] = order[moving], order[earlier]
                moving = earlier
            elif comparison < 0:
                break
    result, step = [0] * ndim, 1
    for dim in order:
        result[dim] = step
        if shape[dim] > 1:
            step *= shape[dim]
    return tuple(result)


def preserved_strides(shape, strides):
    """The strides ``preserve_format`` gives a new tensor like one of ``shape`` and ``strides``: the same when they
    are dense and don't overlap, else dense ones in their order (ATen's ``empty_like``)."""
    strides = tuple(strides)
    if strides == contiguous_strides(shape) or is_non_overlapping_and_dense(shape, strides):
        return strides
    return dense_strides_like(shape, strides)


def element_strides(array):
    """An array's strides in elements (NumPy and CuPy count bytes)."""
    itemsize = array.itemsize
    return tuple(stride // itemsize for stride in array.strides)


def empty_array(backend, shape, strides, dtype):
    """An uninitialized array of ``backend`` with ``shape`` and dense ``strides`` (in elements), in memory of its
    own (call it with the backend active)."""
    shape = tuple(shape)
    if tuple(strides) == contiguous_strides(shape):
        return backend.xp.empty(shape, dtype)
    dtype = numpy.dtype(dtype)
    count = 1
    for size in shape:
        count *= size
    memory = backend.xp.empty(count * dtype.itemsize, numpy.uint8)
    return backend.ops.strided_view(memory, dtype, shape, tuple(stride * dtype.itemsize for stride in strides), 0)


def copy_with_strides(backend, array, strides):
    """A copy of ``array`` in new memory with ``strides`` (in elements; call it with the backend active)."""
    if tuple(strides) == contiguous_strides(array.shape):
        return array.copy() if array.flags.c_contiguous else backend.xp.ascontiguousarray(array)
    result = empty_array(backend, array.shape, strides, array.dtype)
    backend.xp.copyto(result, array)
    return result


def same_layout(a, b):
    """Whether arrays of one shape have the same strides along every axis longer than one (the others are never
    stepped along): a kernel can then index both with one set of strides.

        >>> import numpy
        >>> same_layout(numpy.empty((2, 1, 3)), numpy.empty((2, 3)).reshape(2, 1, 3))
        True
    """
    return all(x == y for x, y, size in zip(a.strides, b.strides, a.shape) if size > 1)


def check_attention_gradient_layouts(q, k, v, out, grad, grad_q, grad_k, grad_v):
    """Raise unless ``grad`` has the layout of ``out`` and each input's gradient that of the input (``same_layout``):
    the attention kernels index both with one set of strides."""
    for target, source in ((grad, out), (grad_q, q), (grad_k, k), (grad_v, v)):
        if not same_layout(target, source):
            raise ValueError("attention_backward: grad needs the layout of out, each input's gradient that of the "
                             "input")
