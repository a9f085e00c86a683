"""Factory functions: tensor, as_tensor, from_numpy, from_dlpack, zeros/ones/empty/full, arange, linspace, eye, and
*_like."""

import math

import numpy

from .. import _backend, _dtypes, _layout
from .._allocation import check_allocation
from .._backends import dlpack
from .._device import CPU, Device, as_device
from .._tensor import TensorBase, wrap
from ._binding import size_by_name
from ._dispatch import factory_out, keep_negative_zero


def _target(device):
    return _backend.resolve(as_device(device))


def _sizes(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    try:
        sizes = tuple(int(s.__index__()) for s in size)
    except (AttributeError, TypeError):
        raise TypeError(f"size must be a sequence of ints, got {size!r}") from None
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: {list(sizes)}")
    return sizes


def _infer_python_dtype(array):
    kind = array.dtype.kind
    if kind == "f":
        return _dtypes.get_default_dtype()
    if kind in "iu":
        return _dtypes.int64
    if kind == "b":
        return _dtypes.bool
    if kind == "c":
        return _dtypes.get_default_dtype().to_complex()
    raise TypeError(f"can't create a tensor from elements of type {array.dtype}; use numbers or bools")


def _element_dtype(value):
    """PyTorch's inference for one element: NumPy scalars keep their dtype, Python numbers take the defaults."""
    if isinstance(value, numpy.generic):
        return _dtypes.from_numpy_dtype(value.dtype)
    if isinstance(value, TensorBase):
        return value.dtype
    if isinstance(value, (bool, int, float, complex)):
        return _dtypes.scalar_dtype(value)
    return None


def _inferred_dtype(data, array):
    """The dtype ``tensor(data)`` gets: promoted over the elements when NumPy scalars or tensors take part."""
    if isinstance(data, (numpy.generic, TensorBase)):
        return _element_dtype(data)
    if isinstance(data, (list, tuple)) and _has_typed_elements(data):
        inferred = None
        for value in _flattened(data):
            element = _element_dtype(value)
            if element is not None:
                inferred = element if inferred is None else _dtypes.promote_types(inferred, element)
        if inferred is not None:
            return inferred
    return _infer_python_dtype(array)


def _has_typed_elements(data):
    return any(isinstance(value, (numpy.generic, TensorBase)) for value in _flattened(data))


def _flattened(data):
    for value in data:
        if isinstance(value, (list, tuple)):
            yield from _flattened(value)
        else:
            yield value


def _python_data_array(data):
    if isinstance(data, (list, tuple)) and any(isinstance(x, (TensorBase, list, tuple)) for x in data):
        data = [_python_data(x) for x in data]
    try:
        with numpy.errstate(all="ignore"):
            array = numpy.asarray(data)
    except ValueError as error:
        raise ValueError(f"can't create a tensor from ragged nested sequences: every row at one depth must have "
                         f"the same length ({error})") from None
    except OverflowError:
        raise RuntimeError("Overflow when unpacking long: an integer does not fit in int64") from None
    if array.dtype == object:
        raise TypeError(f"can't create a tensor from {type(data).__name__} of mixed or non-numeric objects")
    return array


def _python_data(value):
    if isinstance(value, TensorBase):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_python_data(x) for x in value]
    return value


def _leaf(made, requires_grad):
    """PyTorch's ``requires_grad=`` factory argument: the new tensor is a leaf that requires grad."""
    return made.requires_grad_() if requires_grad else made


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of ``data`` (nested sequences, numbers, NumPy/CuPy arrays or tensors).

    Python floats become the default dtype, ints int64, bools bool; arrays keep their dtype.

        >>> agnostic.tensor([[1, 2], [3, 4]])
        tensor([[1, 2],
                [3, 4]])
        >>> agnostic.tensor([1.5, 2]).dtype
        agnostic.float32
        >>> agnostic.tensor(3, dtype=agnostic.float64)
        tensor(3., dtype=agnostic.float64)
    """
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(data, TensorBase):
        made = data.detach().to(device=device or data.device, dtype=dtype, copy=True)
    elif _backend.is_backend_array(data):
        source = _backend.device_of_array(data)
        array_dtype = dtype or _dtypes.from_numpy_dtype(data.dtype)
        target = _backend.resolve(as_device(device)) if device is not None else source
        made = wrap(data, source)._converted(target, array_dtype, copy=True)
    elif _is_foreign_array(data):
        shared = _shared_foreign_array(data)
        target = _backend.resolve(as_device(device)) if device is not None else shared.device
        made = shared._converted(target, dtype, copy=True)
    else:
        array = _python_data_array(data)
        target_dtype = dtype or _inferred_dtype(data, array)
        array = array.astype(target_dtype.numpy_dtype)
        device = _target(device)
        made = wrap(_backend.move(array, CPU, device), device)
    return _leaf(_pinned_if(made, pin_memory), requires_grad)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory when it already is a tensor or array of the right dtype and device.

        >>> import numpy
        >>> array = numpy.array([1.0, 2.0, 3.0])
        >>> t = agnostic.as_tensor(array)
        >>> array[0] = -1.0
        >>> t
        tensor([-1.,  2.,  3.], dtype=agnostic.float64)
        >>> agnostic.as_tensor([1, 2], dtype=agnostic.float32)
        tensor([1., 2.])
    """
    dtype = _dtypes.as_dtype(dtype)
    if isinstance(data, TensorBase):
        return data.to(device=device, dtype=dtype)
    if _backend.is_backend_array(data):
        source = _backend.device_of_array(data)
        _dtypes.from_numpy_dtype(data.dtype)
        target = source if device is None else _target(device)
        return wrap(data, source)._converted(target, dtype, copy=False)
    if _is_foreign_array(data):
        shared = _shared_foreign_array(data)
        return shared._converted(None if device is None else _target(device), dtype, copy=False)
    return tensor(data, dtype=dtype, device=device)


asarray = as_tensor


def from_numpy(ndarray):
    """A CPU tensor sharing memory with a NumPy array (or another library's CPU array exporting DLPack, such as a
    PyTorch CPU tensor): writes to either show in both.

        >>> import numpy
        >>> array = numpy.zeros(3, dtype=numpy.int32)
        >>> t = agnostic.from_numpy(array)
        >>> t[1] = 7
        >>> array
        array([0, 7, 0], dtype=int32)
    """
    if not isinstance(ndarray, numpy.ndarray):
        if hasattr(ndarray, "__dlpack__"):
            shared = from_dlpack(ndarray)
            if shared.device.backend.host:
                return shared
            raise TypeError(f"from_numpy() expects host memory, got a {type(ndarray).__name__} on {shared.device}; "
                            "use agnostic.from_dlpack() or agnostic.as_tensor() for device arrays")
        raise TypeError(f"from_numpy() expects a numpy.ndarray, got {type(ndarray).__name__}; "
                        "use agnostic.as_tensor() for other data")
    _dtypes.from_numpy_dtype(ndarray.dtype)
    return wrap(ndarray, CPU)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of another library's array through DLPack, as ``torch.from_dlpack``.

    ``ext_tensor`` is an object with ``__dlpack__`` and ``__dlpack_device__`` (NumPy, CuPy, PyTorch, JAX arrays,
    agnostic tensors) or a DLPack capsule (``agnostic.utils.dlpack.to_dlpack``). The tensor is on the producer's
    device (CPU memory: ``cpu``, CUDA device N: ``cuda:N``), and CUDA producers order their pending work before the
    current stream's. ``device=`` moves it elsewhere (a copy); ``copy=True`` always copies, ``copy=False`` never
    does (ValueError if it must).

        >>> import numpy
        >>> array = numpy.arange(4.0)
        >>> t = agnostic.from_dlpack(array)
        >>> t[0] = -1.0
        >>> array
        array([-1.,  1.,  2.,  3.])
        >>> agnostic.from_dlpack(array, copy=True).data_ptr() == t.data_ptr()
        False
    """
    kind, index = dlpack.device_of(dlpack.producer_device(ext_tensor))
    source = _backend.resolve(Device(kind, index))
    target = source if device is None else _target(device)
    if target is not source and copy is False:
        raise ValueError(f"from_dlpack(): moving the data from {source} to {target} needs a copy, and copy=False "
                         "forbids one; pass copy=None or copy=True, or leave out device=")
    array = source.backend.ops.dlpack_import(ext_tensor, copy if target is source else None)
    _check_shared_dtype(array)
    return wrap(array, source)._converted(target, None, copy=False)


def _is_foreign_array(data):
    """True for another library's array that agnostic can share without a copy (DLPack or CUDA array interface)."""
    return hasattr(data, "__dlpack__") or hasattr(data, "__cuda_array_interface__")


def _shared_foreign_array(data):
    """A tensor sharing the memory of another library's array: through DLPack (stream-ordered, every dtype) when it
    exports it, else through its ``__cuda_array_interface__`` (Numba device arrays...)."""
    if hasattr(data, "__dlpack__"):
        return from_dlpack(data)
    array = _target("cuda").backend.ops.array_from_cuda_interface(data)
    _check_shared_dtype(array)
    return wrap(array, _backend.device_of_array(array))


def _check_shared_dtype(array):
    """Refuse element types agnostic has no dtype for; asking bfloat16 for its NumPy dtype registers ml_dtypes' type,
    which a tensor's ``dtype`` then finds."""
    _dtypes.from_numpy_dtype(array.dtype).numpy_dtype


def _filled(size, dtype, device, make, pin_memory=False, strides=None):
    """A new tensor of ``size`` whose array ``make(xp, shape, numpy_dtype)`` makes; with ``strides`` (dense, in
    elements) other than row-major ones, in memory laid out with them and filled with ``make``'s 0-dim value."""
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    device = _target(device)
    shape = _sizes(size)
    check_allocation(shape, dtype, device)
    backend = device.backend
    xp = backend.xp
    with backend.activate():
        if strides is None or strides == _layout.contiguous_strides(shape):
            array = make(xp, shape, dtype.numpy_dtype)
        else:
            array = _layout.empty_array(backend, shape, strides, dtype.numpy_dtype)
            if make is not _uninitialized:
                xp.copyto(array, make(xp, (), dtype.numpy_dtype))
        made = wrap(array, device)
    return _pinned_if(made, pin_memory)


def _uninitialized(xp, shape, numpy_dtype):
    return xp.empty(shape, numpy_dtype)


def _format_strides(memory_format, size):
    """The strides ``empty(..., memory_format=...)`` gives ``size`` (None for row-major ones)."""
    if memory_format is _layout.contiguous_format:
        return None
    memory_format = _layout.check_memory_format(memory_format, allow_preserve=False, operation="empty")
    return _layout.format_strides(memory_format, _sizes(size))


def _pinned_if(made, pin_memory):
    """PyTorch's ``pin_memory=`` factory argument: page-locked CPU memory, refused for other devices."""
    if not pin_memory:
        return made
    if not made.device.backend.host:
        raise RuntimeError(f"pin_memory=True only applies to CPU tensors, got device='{made.device}'")
    return made.pin_memory()


@factory_out
@size_by_name
def zeros(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of zeros (default dtype unless given).

        >>> agnostic.zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]])
        >>> agnostic.zeros((2,), dtype=agnostic.int64)
        tensor([0, 0])
    """
    _layout.check_strided(layout, "zeros")
    return _leaf(_filled(size, dtype, device, lambda xp, shape, dt: xp.zeros(shape, dt), pin_memory), requires_grad)


@factory_out
@size_by_name
def ones(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor of ones (default dtype unless given).

        >>> agnostic.ones(2, 2)
        tensor([[1., 1.],
                [1., 1.]])
        >>> agnostic.ones(3, dtype=agnostic.bool)
        tensor([True, True, True])
    """
    _layout.check_strided(layout, "ones")
    return _leaf(_filled(size, dtype, device, lambda xp, shape, dt: xp.ones(shape, dt), pin_memory), requires_grad)


@factory_out
@size_by_name
def empty(*size, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False,
          memory_format=_layout.contiguous_format):
    """An uninitialized tensor (default dtype unless given), laid out in ``memory_format`` (row-major by default;
    ``agnostic.channels_last`` for 4-D, ``agnostic.channels_last_3d`` for 5-D sizes).

        >>> t = agnostic.empty(2, 3)
        >>> t.shape, t.dtype
        (agnostic.Size([2, 3]), agnostic.float32)
        >>> agnostic.empty(2, 3, 4, 5, memory_format=agnostic.channels_last).stride()
        (60, 1, 15, 3)
    """
    _layout.check_strided(layout, "empty")
    strides = _format_strides(memory_format, size)
    return _leaf(_filled(size, dtype, device, _uninitialized, pin_memory, strides), requires_grad)


@factory_out
def full(size, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A tensor filled with ``fill_value``; the dtype follows the value (bool, int64, default float) unless given.

        >>> agnostic.full((2, 2), 7)
        tensor([[7, 7],
                [7, 7]])
        >>> agnostic.full((3,), 0.5)
        tensor([0.5000, 0.5000, 0.5000])
    """
    _layout.check_strided(layout, "full")
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    dtype = _dtypes.as_dtype(dtype) or _dtypes.scalar_dtype(fill_value)
    device = _target(device)
    value = keep_negative_zero(_cast_scalar(fill_value, dtype), device)
    made = _filled(size, dtype, device, lambda xp, shape, dt: xp.full(shape, value, dt), pin_memory)
    return _leaf(made, requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """A 0-dim tensor holding the number ``s``, in the default float dtype unless ``dtype`` is given, whatever the
    type of ``s`` (``torch.scalar_tensor``; ``agnostic.tensor(s)`` infers the dtype from ``s`` instead).

        >>> agnostic.scalar_tensor(3), agnostic.scalar_tensor(3, dtype=agnostic.int64)
        (tensor(3.), tensor(3))
    """
    _layout.check_strided(layout, "scalar_tensor")
    if isinstance(s, TensorBase):
        s = s.item()
    if isinstance(s, complex) and dtype is None:
        raise RuntimeError("value cannot be converted to type float without overflow; pass a complex dtype=")
    return full((), s, dtype=_dtypes.as_dtype(dtype) or _dtypes.get_default_dtype(), device=device,
                requires_grad=requires_grad, pin_memory=pin_memory)


def _cast_scalar(value, dtype):
    with numpy.errstate(all="ignore"):
        return numpy.asarray(value).astype(dtype.numpy_dtype)[()]


def _like(input, dtype, device, memory_format):
    """The dtype, device and strides (None: row-major) of a new tensor like ``input``: ``memory_format``'s strides,
    or for ``preserve_format`` (the default) ``input``'s where they are dense, else dense ones in their order."""
    memory_format = _layout.check_memory_format(memory_format)
    shape = input._data.shape
    if memory_format is _layout.preserve_format:
        strides = _layout.element_strides(input._data)
        if strides == _layout.contiguous_strides(shape):
            strides = None
        else:
            strides = _layout.preserved_strides(shape, strides)
    else:
        strides = _layout.format_strides(memory_format, shape)
    return (_dtypes.as_dtype(dtype) or input.dtype), (input.device if device is None else device), strides


def zeros_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=_layout.preserve_format):
    """Zeros with ``input``'s shape, dtype, device and strides (unless given; see ``empty_like``).

        >>> agnostic.zeros_like(agnostic.tensor([[1, 2], [3, 4]]))
        tensor([[0, 0],
                [0, 0]])
    """
    _layout.check_strided(layout, "zeros_like")
    dtype, device, strides = _like(input, dtype, device, memory_format)
    made = _filled(input._data.shape, dtype, device, lambda xp, shape, dt: xp.zeros(shape, dt), strides=strides)
    return _leaf(made, requires_grad)


def ones_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=_layout.preserve_format):
    """Ones with ``input``'s shape, dtype, device and strides (unless given; see ``empty_like``).

        >>> agnostic.ones_like(agnostic.tensor([1.5, 2.5]))
        tensor([1., 1.])
    """
    _layout.check_strided(layout, "ones_like")
    dtype, device, strides = _like(input, dtype, device, memory_format)
    made = _filled(input._data.shape, dtype, device, lambda xp, shape, dt: xp.ones(shape, dt), strides=strides)
    return _leaf(made, requires_grad)


def empty_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
               memory_format=_layout.preserve_format):
    """Uninitialized, with ``input``'s shape, dtype and device (unless given), laid out in ``memory_format``: by
    default (``agnostic.preserve_format``) with ``input``'s strides where they are dense, else dense strides in
    their order, as PyTorch's.

        >>> t = agnostic.empty_like(agnostic.tensor([[1, 2, 3]]))
        >>> t.shape, t.dtype
        (agnostic.Size([1, 3]), agnostic.int64)
        >>> agnostic.empty_like(agnostic.zeros(2, 3).t()).stride()
        (1, 3)
    """
    _layout.check_strided(layout, "empty_like")
    dtype, device, strides = _like(input, dtype, device, memory_format)
    return _leaf(_filled(input._data.shape, dtype, device, _uninitialized, strides=strides), requires_grad)


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=_layout.preserve_format):
    """``fill_value`` everywhere, with ``input``'s shape, dtype, device and strides (unless given; see
    ``empty_like``).

        >>> agnostic.full_like(agnostic.tensor([1, 2, 3]), 9)
        tensor([9, 9, 9])
    """
    _layout.check_strided(layout, "full_like")
    dtype, device, strides = _like(input, dtype, device, memory_format)
    if isinstance(fill_value, TensorBase):
        fill_value = fill_value.item()
    device = _target(device)
    value = keep_negative_zero(_cast_scalar(fill_value, dtype), device)
    made = _filled(input._data.shape, dtype, device, lambda xp, shape, dt: xp.full(shape, value, dt),
                   strides=strides)
    return _leaf(made, requires_grad)


@factory_out
def arange(start, end=None, step=1, *, dtype=None, layout=None, device=None, requires_grad=False):
    """Values from ``start`` up to (not including) ``end`` by ``step``; int64 for integer arguments, else the
    default float dtype. The length is ``ceil((end - start) / step)``, as in PyTorch.

        >>> agnostic.arange(5)
        tensor([0, 1, 2, 3, 4])
        >>> agnostic.arange(1, 2.5, 0.5)
        tensor([1.0000, 1.5000, 2.0000])
    """
    _layout.check_strided(layout, "arange")
    if end is None:
        start, end = 0, start
    bounds = [x.item() if isinstance(x, TensorBase) else x for x in (start, end, step)]
    start, end, step = bounds
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange(): upper bound and larger bound inconsistent with step sign "
                           f"(start={start}, end={end}, step={step})")
    integral = all(isinstance(x, int) for x in bounds)
    dtype = _dtypes.as_dtype(dtype) or (_dtypes.int64 if integral else _dtypes.get_default_dtype())
    length = max(math.ceil((end - start) / step), 0) if not integral else max(-((start - end) // step), 0)
    device = _target(device)
    check_allocation((length,), dtype, device)
    xp = device.backend.xp
    with device.backend.activate():
        if integral and dtype.category == 1:
            values = xp.arange(start, start + length * step, step, dtype=numpy.int64)[:length]
        else:
            values = xp.arange(length, dtype=numpy.float64) * step + start
        return _leaf(wrap(values.astype(dtype.numpy_dtype, copy=False), device), requires_grad)


@factory_out
def linspace(start, end, steps, *, dtype=None, layout=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default float dtype).

        >>> agnostic.linspace(0, 1, steps=5)
        tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    _layout.check_strided(layout, "linspace")
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    device = _target(device)
    check_allocation((steps,), dtype, device)
    xp = device.backend.xp
    with device.backend.activate():
        values = xp.linspace(start, end, steps, dtype=numpy.float64)
        return _leaf(wrap(values.astype(dtype.numpy_dtype, copy=False), device), requires_grad)


@factory_out
def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False):
    """``base ** linspace(start, end, steps)``.

        >>> agnostic.logspace(0, 3, steps=4)
        tensor([   1.,   10.,  100., 1000.])
    """
    _layout.check_strided(layout, "logspace")
    exponents = linspace(start, end, steps, dtype=_dtypes.float64, device=device)
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    return _leaf((base ** exponents).to(dtype), requires_grad)


@factory_out
def eye(n, m=None, *, dtype=None, layout=None, device=None, requires_grad=False):
    """An ``n x m`` matrix with ones on the diagonal.

        >>> agnostic.eye(2)
        tensor([[1., 0.],
                [0., 1.]])
        >>> agnostic.eye(2, 3, dtype=agnostic.int64)
        tensor([[1, 0, 0],
                [0, 1, 0]])
    """
    _layout.check_strided(layout, "eye")
    if n < 0 or (m is not None and m < 0):
        raise RuntimeError(f"eye(): n must be greater or equal to 0, got {n}" if n < 0 else
                           f"eye(): m must be greater or equal to 0, got {m}")
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    device = _target(device)
    check_allocation((n, n if m is None else m), dtype, device)
    xp = device.backend.xp
    with device.backend.activate():
        return _leaf(wrap(xp.eye(n, n if m is None else m, dtype=dtype.numpy_dtype), device), requires_grad)


# ----- Tensor.new_*: factories that take their dtype and device from a tensor ------------------------------------
def _new_size(name, args, size):
    if size is not None:
        if args:
            raise TypeError(f"{name}() got the size both as positional arguments {args!r} and as size={size!r}")
        args = (size,)
    if len(args) == 1 and not isinstance(args[0], (tuple, list)) and not hasattr(args[0], "__index__"):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not "
                        f"{type(args[0]).__name__}")
    return args


def _new_options(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self._device if device is None else device)


def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kw):
    """A tensor of zeros of ``size`` (ints or one sequence) with ``self``'s dtype and device unless given
    (``Tensor.new_zeros``).

        >>> agnostic.ones(1, dtype=agnostic.float64).new_zeros(2, 3)
        tensor([[0., 0., 0.],
                [0., 0., 0.]], dtype=agnostic.float64)
    """
    _layout.check_strided(layout, "new_zeros")
    dtype, device = _new_options(self, dtype, device)
    return zeros(*_new_size("new_zeros", size, kw.pop("size", None)), dtype=dtype, device=device,
                 requires_grad=requires_grad, pin_memory=pin_memory)


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kw):
    """A tensor of ones of ``size`` with ``self``'s dtype and device unless given (``Tensor.new_ones``).

        >>> agnostic.tensor([1, 2]).new_ones((2,))
        tensor([1, 1])
    """
    _layout.check_strided(layout, "new_ones")
    dtype, device = _new_options(self, dtype, device)
    return ones(*_new_size("new_ones", size, kw.pop("size", None)), dtype=dtype, device=device,
                requires_grad=requires_grad, pin_memory=pin_memory)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False, **kw):
    """An uninitialized tensor of ``size`` with ``self``'s dtype and device unless given (``Tensor.new_empty``).

        >>> agnostic.ones(1, dtype=agnostic.int32).new_empty(2, 2).dtype
        agnostic.int32
    """
    _layout.check_strided(layout, "new_empty")
    dtype, device = _new_options(self, dtype, device)
    return empty(*_new_size("new_empty", size, kw.pop("size", None)), dtype=dtype, device=device,
                 requires_grad=requires_grad, pin_memory=pin_memory)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    """A tensor of ``size`` (a sequence) filled with ``fill_value``, with ``self``'s dtype (not the value's) and
    device unless given (``Tensor.new_full``).

        >>> agnostic.ones(1, dtype=agnostic.float64).new_full((2,), 3)
        tensor([3., 3.], dtype=agnostic.float64)
    """
    _layout.check_strided(layout, "new_full")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    dtype, device = _new_options(self, dtype, device)
    return full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory)


NEW_FACTORIES = (new_zeros, new_ones, new_empty, new_full)
