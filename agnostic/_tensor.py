"""Tensor: one NumPy or CuPy array plus the device it lives on; operators are installed from the ops tables.

A thin class around the backend array (not a subclass), so NumPy's and CuPy's own semantics never leak into
results: every operator goes through ``agnostic.ops``, which applies PyTorch's rules on every device.
"""

import numpy

from . import _backend, _dtypes, _transfer
from ._device import CPU, as_device
from ._size import Size

_ndarray = numpy.ndarray
_DTYPE_OF = _dtypes._BY_NUMPY


def wrap(array, device):
    """A Tensor around ``array`` (already on ``device``); the only way tensors are made internally."""
    tensor = object.__new__(Tensor)
    tensor._data = array
    tensor._device = device
    return tensor


class Tensor:
    """An n-dimensional array on a CPU or CUDA device, with PyTorch's semantics.

    Make tensors with the factory functions (``agnostic.tensor``, ``zeros``, ``arange``...). ``Tensor(data)`` is
    PyTorch's legacy CPU constructor: a float tensor from a sequence, or an uninitialized one from sizes.
    """

    __slots__ = ("_data", "_device", "__dict__", "__weakref__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators: numpy_array + tensor -> Tensor.__radd__

    # Autograd state: class-level defaults, so plain tensors carry none of it (see agnostic.autograd.tracking).
    _requires_grad = False
    _grad_fn = None
    _output_nr = 0
    _version = 0
    grad = None

    def __init__(self, *args, device=None):
        from .ops import creation

        if len(args) == 1 and not isinstance(args[0], int):
            made = creation.tensor(args[0], dtype=_dtypes.get_default_dtype(), device=device)
        else:
            made = creation.empty(*args, device=device)
        self._data = made._data
        self._device = made._device

    # ----- metadata -----------------------------------------------------------------------------------------
    @property
    def device(self):
        """The Device this tensor lives on (``cpu`` or ``cuda:N``)."""
        return self._device

    @property
    def dtype(self):
        """The element type (an agnostic dtype such as ``agnostic.float32``)."""
        return _DTYPE_OF[self._data.dtype]

    @property
    def shape(self):
        """The sizes of each dimension, as an ``agnostic.Size``."""
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim=None):
        """``shape``, or the size of one dimension."""
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[_normalize_dim(dim, self._data.ndim, allow_scalar=False)]

    @property
    def ndim(self):
        """Number of dimensions."""
        return self._data.ndim

    def dim(self):
        """Number of dimensions."""
        return self._data.ndim

    ndimension = dim

    def numel(self):
        """Number of elements."""
        return self._data.size

    nelement = numel

    def element_size(self):
        """Bytes per element."""
        return self._data.itemsize

    @property
    def itemsize(self):
        return self._data.itemsize

    @property
    def nbytes(self):
        return self._data.nbytes

    def stride(self, dim=None):
        """Strides in elements (not bytes), as PyTorch reports them."""
        itemsize = self._data.itemsize
        strides = tuple(s // itemsize for s in self._data.strides)
        return strides if dim is None else strides[_normalize_dim(dim, self._data.ndim, allow_scalar=False)]

    def is_contiguous(self):
        """True when elements are laid out in row-major order without gaps."""
        return self._data.flags.c_contiguous

    def data_ptr(self):
        """Address of the first element."""
        return _backend.data_pointer(self._data)

    @property
    def is_cuda(self):
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        return self._device is CPU

    def get_device(self):
        """The CUDA index, or -1 on the CPU (as PyTorch)."""
        return -1 if self._device is CPU else self._device.index

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return self.dtype.is_complex

    # ----- conversions to Python and NumPy ------------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar; "
                "item() needs exactly one element (index or reduce first)"
            )
        return self._host_array().reshape(()).item()

    def tolist(self):
        """The elements as (nested) Python lists of Python numbers."""
        return self._host_array().tolist()

    def numpy(self, *, force=False):
        """The NumPy array behind a CPU tensor (shared memory). On CUDA, call ``.cpu()`` first (or ``force=True``)."""
        if self._device is not CPU:
            if force:
                return _transfer.move(self._data, self._device, CPU)
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array

    def _host_array(self):
        if self._device is CPU:
            return self._data
        return _transfer.move(self._data, self._device, CPU)

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self.dtype.category > 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (wrap(self._data[i], self._device) for i in range(self._data.shape[0]))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        from ._printing import tensor_repr

        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)

    def __reduce__(self):
        return (_rebuild, (self._host_array(), str(self._device)))

    # ----- moving between devices and dtypes ----------------------------------------------------------------
    def to(self, *args, **kwargs):
        """Move and/or cast: ``to(device)``, ``to(dtype)``, ``to(other)``, ``to(device, dtype, non_blocking=False,
        copy=False)``. Returns ``self`` when nothing changes (and ``copy`` is false), a new tensor otherwise."""
        device, dtype, non_blocking, copy = _parse_to_arguments(args, kwargs)
        return self._converted(device, dtype, copy, non_blocking)

    def cuda(self, device=None, non_blocking=False):
        """A copy on a CUDA device (the current one by default); ``self`` if already there."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int) or device == "cuda" or getattr(device, "type", None) == "cuda":
            pass
        else:
            device = as_device(device)
            if device.type != "cuda":
                raise ValueError(f"cuda(): expected a CUDA device, got {device}; use .to({str(device)!r}) instead")
        return self._converted(as_device(device), None, False, non_blocking)

    def cpu(self):
        """A copy in CPU memory; ``self`` if already there."""
        return self._converted(CPU, None, False, False)

    def type(self, dtype=None, non_blocking=False):
        """Without arguments, the legacy type name (``'agnostic.cuda.FloatTensor'``); otherwise cast to that type."""
        from . import _legacy_types

        if dtype is None:
            return _legacy_types.type_name(self)
        device, target = _legacy_types.parse_type(dtype, self._device)
        return self._converted(device, target, False, non_blocking)

    def _converted(self, device, dtype, copy, non_blocking=False):
        source = self._device
        target = source if device is None else _backend.resolve(device)
        array = self._data
        if dtype is not None and _DTYPE_OF[array.dtype] is not dtype:
            with _backend.on(source):
                array = array.astype(dtype.numpy_dtype)
            copy = False
        if target is not source:
            if target is CPU and non_blocking:
                host, event = _transfer.to_host(array, source, non_blocking=True)
                return InFlightHostTensor.around(host, event)
            array = _transfer.move(array, source, target, non_blocking)
        elif copy:
            with _backend.on(source):
                array = array.copy()
        elif array is self._data:
            return self
        return wrap(array, target)

    def pin_memory(self):
        """A copy of this CPU tensor in page-locked memory (``self`` if already pinned), for fast and
        asynchronous (``non_blocking``) copies to a GPU."""
        if self._device is not CPU:
            raise RuntimeError(f"cannot pin '{self._device}' memory: only CPU tensors can be pinned")
        if _transfer.is_pinned(self._data):
            return self
        return wrap(_transfer.pinned_copy(self._data), CPU)

    def is_pinned(self):
        """True when this tensor's memory is page-locked (always False on machines without CUDA)."""
        return self._device is CPU and _transfer.is_pinned(self._data)

    # ----- autograd --------------------------------------------------------------------------------------------
    @property
    def requires_grad(self):
        """Whether gradients are recorded for this tensor (only floating and complex tensors may require them)."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place (only on leaves); returns ``self``."""
        from .autograd.tracking import set_requires_grad

        return set_requires_grad(self, requires_grad)

    @property
    def grad_fn(self):
        """The recorded operation that produced this tensor (None for leaves)."""
        return self._grad_fn

    @property
    def is_leaf(self):
        """True for tensors not produced by a recorded operation (all tensors that don't require grad)."""
        return self._grad_fn is None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (``gradient`` is required unless self has one
        element), as ``torch.Tensor.backward``."""
        from .autograd import backward

        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward."""
        from .autograd.functions import retain_grad

        retain_grad(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces the gradient.
        Returns a handle with ``remove()``."""
        from .autograd.functions import register_hook

        return register_hook(self, hook)

    @property
    def data(self):
        """This tensor's values as a tensor outside autograd (shares memory)."""
        return wrap(self._data, self._device)

    @data.setter
    def data(self, value):
        if not isinstance(value, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    def detach_(self):
        """Cut this tensor from its history in place (it becomes a leaf that doesn't require grad)."""
        if self._grad_fn is not None and self.__dict__.get("_is_view"):
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        for key in ("_grad_fn", "_requires_grad", "_output_nr"):
            self.__dict__.pop(key, None)
        from .autograd.tracking import GradTensor

        if type(self) is GradTensor:
            self.__class__ = Tensor
        return self

    def clone(self, *, memory_format=None):
        """A copy with its own memory, on the same device."""
        with _backend.on(self._device):
            return wrap(self._data.copy(), self._device)

    def detach(self):
        """A tensor sharing this one's memory, cut from autograd history."""
        return wrap(self._data, self._device)

    def contiguous(self, memory_format=None):
        """``self`` if already contiguous, else a contiguous copy."""
        if self._data.flags.c_contiguous:
            return self
        xp = _backend.namespace(self._device)
        with _backend.on(self._device):
            return wrap(xp.ascontiguousarray(self._data), self._device)

    def copy_(self, src, non_blocking=False):
        """Copy ``src`` into ``self`` in place, across devices, broadcasting and casting; returns ``self``.

        With ``non_blocking``, a device-to-host copy into pinned, contiguous ``self`` of the same shape and dtype
        runs asynchronously; reading ``self`` on the host waits for it.
        """
        if not isinstance(src, Tensor):
            from .ops.creation import tensor as make_tensor

            src = make_tensor(src)
        _check_writable(self)
        array = src._data
        if src._device is not self._device:
            if self._device is CPU and non_blocking and _can_receive_async_copy(self._data, array):
                _, event = _transfer.to_host(array, src._device, non_blocking=True, out=self._data)
                InFlightHostTensor.mark(self, event)
                return self
            array = _transfer.move(array, src._device, self._device, non_blocking)
        _check_broadcast_into(self, array.shape, "copy_")
        with _backend.on(self._device):
            _backend.namespace(self._device).copyto(self._data, array, casting="unsafe")
        return self

    # Legacy casts: x.float(), x.long(), ...
    def float(self): return self.to(_dtypes.float32)
    def double(self): return self.to(_dtypes.float64)
    def half(self): return self.to(_dtypes.float16)
    def bfloat16(self): return self.to(_dtypes.bfloat16)
    def int(self): return self.to(_dtypes.int32)
    def long(self): return self.to(_dtypes.int64)
    def short(self): return self.to(_dtypes.int16)
    def char(self): return self.to(_dtypes.int8)
    def byte(self): return self.to(_dtypes.uint8)
    def bool(self): return self.to(_dtypes.bool)
    def cfloat(self): return self.to(_dtypes.complex64)
    def cdouble(self): return self.to(_dtypes.complex128)

    def new_tensor(self, data, dtype=None, device=None):
        """A new tensor from ``data``, with this tensor's dtype and device unless given."""
        from .ops.creation import tensor as make_tensor

        return make_tensor(data, dtype=dtype or self.dtype, device=device or self._device)


class InFlightHostTensor(Tensor):
    """A CPU tensor that a non_blocking device-to-host copy is still filling.

    Any read of its data (``numpy()``, ``item()``, printing, indexing, a CPU op) first waits for the copy, then the
    object turns into a plain Tensor, so the classic race of reading stale host memory cannot happen and plain
    tensors pay nothing for the check.
    """

    __slots__ = ()

    @classmethod
    def around(cls, array, event):
        """A new in-flight tensor for ``array``, complete when ``event`` is."""
        tensor = wrap(array, CPU)
        cls.mark(tensor, event)
        return tensor

    @classmethod
    def mark(cls, tensor, event):
        """Turn ``tensor`` into one whose reads wait for ``event``."""
        tensor.__dict__["_copy_done"] = event
        tensor.__class__ = cls

    @property
    def _data(self):
        self.__dict__.pop("_copy_done").synchronize()
        self.__class__ = Tensor
        return self._data

    @_data.setter
    def _data(self, array):
        _SLOT_DATA.__set__(self, array)


_SLOT_DATA = Tensor.__dict__["_data"]


def _can_receive_async_copy(host, device_array):
    return (host.shape == device_array.shape and host.dtype == device_array.dtype and host.flags.c_contiguous
            and _transfer.is_pinned(host))


def _rebuild(array, device_text):
    from .ops.creation import as_tensor

    return as_tensor(array, device=device_text)


def _normalize_dim(dim, ndim, allow_scalar=True):
    """``dim`` as a non-negative index; IndexError with the valid range, as PyTorch.

    Like PyTorch, most ops treat a 0-dim tensor as having one dimension (dim 0 or -1); ``size``/``stride`` don't.
    """
    if ndim == 0 and not allow_scalar:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    bound = max(ndim, 1)
    if not -bound <= dim < bound:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], but got {dim})"
        )
    return dim % bound if ndim else 0


def _check_writable(tensor):
    """Refuse in-place writes into tensors where several elements share one memory location (expand)."""
    array = tensor._data
    if array.size == 0:
        return  # nothing is written; NumPy gives empty arrays zero strides
    for size, stride in zip(array.shape, array.strides):
        if stride == 0 and size > 1:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation."
            )


def _check_broadcast_into(tensor, shape, op_name):
    """The in-place rule: the other operand must broadcast to ``self``'s shape without changing it."""
    target = tensor._data.shape
    if shape == target:
        return
    try:
        broadcast = numpy.broadcast_shapes(target, shape)
    except ValueError:
        broadcast = None
    if broadcast != target:
        raise RuntimeError(
            f"{op_name}: output with shape {list(target)} doesn't match the broadcast shape "
            f"{list(broadcast) if broadcast is not None else 'of ' + str(list(shape))}; an in-place operation "
            "can't change the shape of self (use the out-of-place form)"
        )


def _parse_to_arguments(args, kwargs):
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    positional = list(args)
    if positional and isinstance(positional[0], Tensor):
        other = positional.pop(0)
        device, dtype = other._device, other.dtype
    elif positional and not isinstance(positional[0], (_dtypes.dtype, type)) and positional[0] is not None \
            and not _looks_like_dtype(positional[0]):
        device = positional.pop(0)
    elif positional and positional[0] is None:
        positional.pop(0)
    if positional and (positional[0] is None or isinstance(positional[0], (_dtypes.dtype, type))
                       or _looks_like_dtype(positional[0])):
        dtype = positional.pop(0)
    if positional and isinstance(positional[0], type(True)):
        non_blocking = positional.pop(0)
    if positional and isinstance(positional[0], type(True)):
        copy = positional.pop(0)
    if positional:
        raise TypeError(
            f"to() received an invalid combination of arguments {args!r}; valid: to(device), to(dtype), to(other), "
            "to(device, dtype, non_blocking=False, copy=False)"
        )
    return (None if device is None else as_device(device)), _dtypes.as_dtype(dtype), non_blocking, copy


def _looks_like_dtype(value):
    return isinstance(value, numpy.dtype) or (isinstance(value, str) and value.removeprefix("agnostic.")
                                              .removeprefix("torch.") in _dtypes._BY_NAME)
