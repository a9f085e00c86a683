"""A tensor's storage as PyTorch exposes it: untyped_storage, storage, set_, the deprecated resize forms, from_file,
the element-wise Python callbacks (apply_, map_, map2_) and the hook run after a leaf's gradient is accumulated."""

import numbers
import warnings

import numpy

from .. import _dtypes
from .._device import as_device
from .._layout import channels_last, check_strided, memory_format
from .._size import Size
from .._tensor import TensorBase
from ..autograd.graph import register_post_accumulate_grad_hook as _register_post_accumulate_grad_hook
from ..storage import TypedStorage, UntypedStorage, legacy_storage_class, map_file, tensor_over
from ..storage import _warn_typed_storage_removal
from ._dispatch import check_tensor
from ._registry import composite, public_names, tensor_method
from .creation import empty
from .strided import _contiguous_strides, _geometry


# ----- the storage under a tensor ---------------------------------------------------------------------------------
@tensor_method()
def untyped_storage(input):
    """The memory this tensor's elements lie in, as bytes (``Tensor.untyped_storage``): the same memory, so writes
    through either are seen by the other, and every view of one tensor gives a storage with the same ``data_ptr()``.

        >>> x = agnostic.zeros(3)
        >>> s = x[1:].untyped_storage()
        >>> s.nbytes(), s.data_ptr() == x.data_ptr()
        (12, True)
    """
    return UntypedStorage._of_tensor(input)


@tensor_method()
def storage(input):
    """The memory under this tensor read as its dtype's elements, a ``TypedStorage`` (``Tensor.storage``; PyTorch
    deprecates it and warns once: ``untyped_storage()`` is the lasting form).

        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> agnostic.tensor([1, 2, 3])[1:].storage().tolist()
        [1, 2, 3]
    """
    _warn_typed_storage_removal(stacklevel=4)
    return TypedStorage(wrap_storage=UntypedStorage._of_tensor(input), dtype=input.dtype, _internal=True)


@tensor_method()
def storage_type(input):
    """The legacy storage class of this tensor's dtype and device (``Tensor.storage_type``).

        >>> agnostic.zeros(2).storage_type()
        <class 'agnostic.FloatStorage'>
    """
    return legacy_storage_class(input.dtype, input.device)


@tensor_method()
def const_data_ptr(input):
    """The address of the first element, for reading (``Tensor.const_data_ptr``; the same as ``data_ptr()``).

        >>> x = agnostic.zeros(2)
        >>> x.const_data_ptr() == x.data_ptr()
        True
    """
    return input.data_ptr()


# ----- set_: a tensor laid over other memory ----------------------------------------------------------------------
_SET_SIGNATURES = ("set_() received an invalid combination of arguments - expected one of: (), (Storage source), "
                   "(Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None), "
                   "(Tensor source), (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride "
                   "= None)")


def _refuse_requires_grad(input, name):
    if input._requires_grad:
        if input._grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        raise RuntimeError(f"{name}: agnostic can't lay a tensor that has autograd history over other memory; "
                           "detach() it first")


def _sizes(name, size, stride):
    if isinstance(size, int):
        size = (size,)
    if stride is None:
        size = tuple(int(length) for length in size)
        return _geometry(name, size, _contiguous_strides(size))
    if isinstance(stride, int):
        stride = (stride,)
    if len(tuple(size)) != len(tuple(stride)):
        raise RuntimeError(f"unequal size length ({len(tuple(size))}) and stride length ({len(tuple(stride))})")
    return _geometry(name, size, stride)


@tensor_method()
def set_(input, source=None, storage_offset=0, size=None, stride=None):
    """Make ``self`` a view of other memory, in place (``Tensor.set_``): with no source, an empty tensor of its
    own; with a tensor, that tensor's memory and geometry; with a storage, its whole memory as a 1-D tensor; with
    ``storage_offset``, ``size`` (and ``stride``, contiguous by default), that view of the source's memory, in
    elements of ``self``'s dtype. Refused for a leaf that requires grad, as in PyTorch.

        >>> x = agnostic.arange(6.)
        >>> agnostic.tensor([]).set_(x.untyped_storage(), 2, (2, 2))
        tensor([[2., 3.],
                [4., 5.]])
        >>> y = agnostic.tensor([]).set_(x)
        >>> y.data_ptr() == x.data_ptr()
        True
    """
    _refuse_requires_grad(input, "set_")
    if source is None:
        if storage_offset or size is not None or stride is not None:
            raise TypeError(_SET_SIGNATURES)
        input._data = empty(0, dtype=input.dtype, device=input.device)._data
        return input
    if isinstance(source, TensorBase):
        if source.dtype is not input.dtype:
            raise RuntimeError(f"Could not set tensor of type {source.dtype} to a tensor of type {input.dtype}; "
                               f"convert one of them first (source.to({input.dtype}))")
        storage_of_source = UntypedStorage._of_tensor(source)
        if size is None:
            if storage_offset:
                raise TypeError(_SET_SIGNATURES)
            storage_of_source._lent = True
            _check_same_device(input, storage_of_source)
            input._data = source._data
            return input
        source = storage_of_source
    elif isinstance(source, TypedStorage):
        if source.dtype is not input.dtype:
            raise RuntimeError(f"Expected a Storage of type {input.dtype} or an UntypedStorage, but got type "
                               f"{source.dtype} for argument 1 'storage'")
        source = source._untyped_storage
    elif not isinstance(source, UntypedStorage):
        raise TypeError(f"{_SET_SIGNATURES}; got {type(source).__name__}")
    _check_same_device(input, source)
    if size is None:
        if storage_offset:
            raise TypeError(_SET_SIGNATURES)
        size = (source.nbytes() // input.dtype.itemsize,)
    if not isinstance(storage_offset, numbers.Integral) or isinstance(storage_offset, bool):
        raise TypeError(f"set_(): argument 'storage_offset' must be int, not {type(storage_offset).__name__}")
    size, stride = _sizes("set_", size, stride)
    input._data = tensor_over(source, input.dtype, int(storage_offset), size, stride)._data
    return input


def _check_same_device(input, storage):
    if storage.device != input.device:
        raise RuntimeError(f"Attempted to set the storage of a tensor on device \"{input.device}\" to a storage on "
                           f"different device \"{storage.device}\".  This is no longer allowed; the devices must "
                           "match.")


# ----- the deprecated and top-level forms of resizing -------------------------------------------------------------
def _resize_view(input, sizes):
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, Size)):
        sizes = sizes[0]
    sizes = tuple(int(length) for length in sizes)
    count = 1
    for length in sizes:
        count *= length
    if count != input.numel():
        shown = "x".join(str(length) for length in sizes)
        raise RuntimeError(f"requested resize to {shown} ({count} elements in total), but the given tensor has a "
                           f"size of {'x'.join(str(length) for length in input.shape)} ({input.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, while preserving the "
                           "number of elements. ")
    return input.reshape(sizes)


@tensor_method()
def resize(input, *sizes):
    """The deprecated out-of-place ``resize``: ``self`` reshaped to ``sizes`` (as many elements), warning as
    PyTorch does; use ``reshape`` (or ``resize_`` to change the element count).

        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> agnostic.arange(4).resize(2, 2)
        tensor([[0, 1],
                [2, 3]])
    """
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=3)
    return _resize_view(input, sizes)


@tensor_method()
def resize_as(input, tensor):
    """The deprecated out-of-place ``resize_as``: ``self.resize(tensor.size())`` (as many elements), warning.

        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> agnostic.arange(4).resize_as(agnostic.zeros(2, 2)).shape
        agnostic.Size([2, 2])
    """
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=3)
    return _resize_view(input, (tuple(tensor.shape),))


@composite(method=False)
def resize_as_(input, the_template, *, memory_format=None):
    """``input.resize_as_(the_template)``: ``input`` given ``the_template``'s shape in place, its leading
    elements kept (``torch.resize_as_``).

        >>> agnostic.resize_as_(agnostic.arange(6), agnostic.zeros(2, 2))
        tensor([[0, 1],
                [2, 3]])
    """
    return input.resize_as_(the_template, memory_format=memory_format)


@composite(method=False)
def as_strided_(input, size, stride, storage_offset=None):
    """``input.as_strided_(size, stride, storage_offset)``: ``input`` becomes that view of its memory, in place
    (``torch.as_strided_``).

        >>> agnostic.as_strided_(agnostic.arange(6), (2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]])
    """
    return input.as_strided_(size, stride, storage_offset)


# ----- dim_order --------------------------------------------------------------------------------------------------
def _compare_dims(shape, strides, a, b):
    """PyTorch's order of two dimensions in memory: 1 when ``a`` lies inside ``b``, -1 outside, 0 undecided."""
    def at_least(x, y):
        return y == 0 or (x != 0 and (x >= y or x % y == 0))
    stride_a, stride_b = strides[a], strides[b]
    if stride_a == 0 or stride_b == 0:
        return 0
    if stride_a == stride_b:
        return 0 if at_least(shape[b], shape[a]) else 1
    if at_least(stride_b, stride_a):
        return -1
    return 1 if at_least(stride_a, stride_b) else 0


@tensor_method()
def dim_order(input, *, ambiguity_check=False):
    """The dimensions from outermost to innermost in memory (``Tensor.dim_order``): ``(0, 1, ..., n-1)`` for a
    contiguous tensor. With ``ambiguity_check`` (True, or a list of memory formats the tensor must match exactly
    one of), a tensor whose order isn't unique (size-1 dimensions, equal strides) is refused.

        >>> agnostic.empty(2, 3, 5, 7).transpose(1, 2).dim_order()
        (0, 2, 1, 3)
        >>> agnostic.empty(2, 3, 5, 7).to(memory_format=agnostic.channels_last).dim_order()
        (0, 2, 3, 1)
    """
    from_formats = isinstance(ambiguity_check, list)
    if not isinstance(ambiguity_check, bool) and not (
            from_formats and all(isinstance(item, memory_format) for item in ambiguity_check)):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory formats.")
    shape, strides = tuple(input.shape), input.stride()
    if ambiguity_check is not False:
        several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in shape
        matching = sum(1 for layout in ambiguity_check if input.is_contiguous(memory_format=layout)) \
            if from_formats else 0
        if several and matching != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact one of the given "
                               "memory formats.")
    ndim = len(shape)
    if ndim <= 1:
        return tuple(range(ndim))
    contiguous = input.is_contiguous()
    is_channels_last = ndim == 4 and input.is_contiguous(memory_format=channels_last)
    if contiguous and not is_channels_last:
        return tuple(range(ndim))
    if is_channels_last and not contiguous:
        return (0, *range(2, ndim), 1)
    order = list(reversed(range(ndim)))  # sorted innermost first, then reversed, as PyTorch's insertion sort
    for i in range(1, ndim):
        moving = i
        for other in reversed(range(i)):
            comparison = _compare_dims(shape, strides, order[other], order[moving])
            if comparison > 0:
                order[other], order[moving] = order[moving], order[other]
                moving = other
            elif comparison < 0:
                break
    return tuple(reversed(order))


# ----- element-wise Python callbacks (CPU tensors only, as in PyTorch) --------------------------------------------
def _converter(dtype):
    """The Python conversion of a callback's result to ``dtype``'s values, refusing non-numbers as PyTorch."""
    def real(value):
        if isinstance(value, numbers.Real) or isinstance(value, numpy.generic):
            return value
        raise TypeError(f"must be real number, not {type(value).__name__}")
    if dtype.is_complex:
        return complex
    if dtype is _dtypes.bool:
        return lambda value: bool(real(value))
    if dtype.is_floating_point:
        return lambda value: float(real(value))
    return lambda value: int(real(value))


def _reader(dtype):
    if dtype.is_complex:
        return complex
    if dtype is _dtypes.bool:
        return bool
    return float if dtype.is_floating_point else int


def _callback_checks(name, input, others):
    if not input._device.backend.host:
        raise TypeError(f"{name} is only implemented on CPU tensors")
    if input._requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead.")
    expanded = []
    for position, (label, other) in enumerate(others, start=1):
        check_tensor(name, other, position, label)
        if other.dtype is not input.dtype:
            raise TypeError(f"{name}: expected {input.type()} for '{label}' (got {other.type()})")
        if not other._device.backend.host:
            raise TypeError(f"{name} is only implemented on CPU tensors")
        expanded.append(other.expand(tuple(input.shape))._data)
    return expanded


def _apply_in_place(input, function, others):
    array = input._data
    read, write = _reader(input.dtype), _converter(input.dtype)
    for position in numpy.ndindex(array.shape):
        array[position] = write(function(read(array[position]), *(read(other[position]) for other in others)))
    return input


@tensor_method()
def apply_(input, callable):
    """Replace each element ``x`` of this CPU tensor by ``callable(x)`` (a Python number), in place
    (``Tensor.apply_``; slow: one Python call per element). Results are converted to the dtype (integers
    truncated toward zero).

        >>> agnostic.arange(3.).apply_(lambda x: x * 2)
        tensor([0., 2., 4.])
    """
    _callback_checks("apply_", input, ())
    return _apply_in_place(input, callable, ())


@tensor_method()
def map_(input, tensor, callable):
    """Replace each element ``x`` of this CPU tensor by ``callable(x, y)``, ``y`` the element of ``tensor``
    (broadcast to ``self``'s shape, same dtype) at the same place, in place (``Tensor.map_``).

        >>> agnostic.arange(3.).map_(agnostic.tensor([1.]), lambda x, y: x + y)
        tensor([1., 2., 3.])
    """
    others = _callback_checks("map_", input, (("other", tensor),))
    return _apply_in_place(input, callable, others)


@tensor_method()
def map2_(input, x, y, callable):
    """Replace each element ``a`` of this CPU tensor by ``callable(a, b, c)`` with ``b``, ``c`` the elements of
    ``x`` and ``y`` (broadcast to ``self``'s shape, same dtype), in place (``Tensor.map2_``).

        >>> agnostic.ones(2).map2_(agnostic.tensor([1., 2.]), agnostic.tensor([3.]), lambda a, b, c: a + b * c)
        tensor([4., 7.])
    """
    others = _callback_checks("map2_", input, (("x1", x), ("x2", y)))
    return _apply_in_place(input, callable, others)


# ----- from_file --------------------------------------------------------------------------------------------------
@composite(method=False)
def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False):
    """A 1-D tensor of ``size`` elements of ``dtype`` (the default dtype unless given) read from the file
    ``filename`` by mapping it (``torch.from_file``): with ``shared``, the tensor's memory is the file's, so writes
    reach it (a missing or short file is made or grown); otherwise a private copy of the file's bytes. On another
    ``device``, a copy there.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "numbers.bin")
        >>> written = agnostic.tensor([1., 2., 3.]).numpy().tofile(path)  # three float32 numbers
        >>> agnostic.from_file(path, size=3)
        tensor([1., 2., 3.])
    """
    check_strided(layout, "from_file")
    dtype = _dtypes.get_default_dtype() if dtype is None else _dtypes.as_dtype(dtype)
    if not isinstance(size, numbers.Integral) or size < 0:
        raise RuntimeError(f"from_file(): size must be a non-negative int, got {size!r}")
    mapped = map_file(filename, bool(shared), int(size) * dtype.itemsize, dtype)
    if device is not None and as_device(device) != mapped.device:
        mapped = mapped.to(device)
    elif pin_memory:
        mapped = mapped.pin_memory()
    return mapped


# ----- the hook after a leaf's gradient is accumulated ------------------------------------------------------------
@tensor_method()
def register_post_accumulate_grad_hook(input, hook):
    """Call ``hook(tensor)`` after backward has accumulated a gradient into this leaf's ``.grad`` (so the hook
    may step an optimizer on it and free the gradient); returns a handle with ``remove()``, as
    ``Tensor.register_post_accumulate_grad_hook``. Leaves that require grad only.

        >>> w = agnostic.tensor([1., 2.], requires_grad=True)
        >>> handle = w.register_post_accumulate_grad_hook(lambda p: p.data.sub_(p.grad))
        >>> (w * 3).sum().backward()
        >>> w
        tensor([-2., -1.], requires_grad=True)
        >>> handle.remove()
    """
    if not input._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if input._grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    return _register_post_accumulate_grad_hook(input, hook)


__all__ = public_names(globals())
