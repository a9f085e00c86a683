"""TensorBase: one NumPy or CuPy array plus the device it lives on, with what a tensor knows of itself (shape,
dtype, device, strides), its conversions to Python and NumPy values and its moves between devices.

A thin class around the backend array (not a subclass), so NumPy's and CuPy's own semantics never leak into
results. The classes users hold, ``agnostic.Tensor`` and ``GradTensor``, add the ops' methods and operators on top
(``_tensor_classes.py``); the ops, which sit between the two, make and recognize tensors through this module:
``wrap`` makes a plain ``Tensor``, and ``TensorBase.plain``/``TensorBase.recording`` are the two classes.
"""

import numpy

from . import _backend, _dtypes, _layout
from ._backends import cuda as _cuda_backend, pinned as _pinned
from ._device import CPU, as_device
from ._size import Size

_ndarray = numpy.ndarray
_DTYPE_OF = _dtypes._BY_NUMPY


def wrap(array, device):
    """A Tensor around ``array`` (already on ``device``); the only way tensors are made internally."""
    tensor = object.__new__(TensorBase.plain)
    tensor._data = array
    tensor._device = device
    return tensor


def _declared(**declaration):
    """Declare the decorated method as an op (with ``ops._registry.Composite``'s arguments): plain tensors keep the
    method as written, and GradTensor gets the form that records it."""
    def declare(method):
        method.declaration = declaration
        return method
    return declare


# Functions called with each Tensor subclass as it is defined (agnostic.multiprocessing registers its reducer for it).
subclass_hooks: list = []

# The gradient of a move, copy or cast: the output's, which autograd turns back into the input's dtype and device.
PASSES_THROUGH = {"self": lambda grad: grad}
CONVERSION = {"node": "_to_copy", "gradients": PASSES_THROUGH}  # PyTorch's ToCopyBackward0


def version_of(tensor):
    """``tensor._version``, the count of in-place changes of a tensor's memory: a tensor's own count (in its
    ``__dict__``), else its base's for a view (views share the count with their base, as in PyTorch), else 0. A
    function as well as the attribute: autograd reads it for every recorded input, and a call costs less than the
    descriptor.

        >>> w = agnostic.zeros(2, requires_grad=True)
        >>> with agnostic.no_grad():
        ...     _ = w.add_(1)
        >>> agnostic._tensor.version_of(w), w._version
        (1, 1)
    """
    state = tensor.__dict__
    own = state.get("_version")
    if own is not None:
        return own
    view = state.get("_view")
    return 0 if view is None else version_of(view.base)


class _SharedVersion:
    """``tensor._version`` (``version_of``): a tensor's own count sits in its ``__dict__``, which comes first (this
    descriptor has no ``__set__``)."""

    def __get__(self, tensor, owner=None):
        return self if tensor is None else version_of(tensor)


class TensorBase:
    """The storage and self-knowledge of every tensor: ``agnostic.Tensor`` is this class with the ops' methods.

        >>> isinstance(agnostic.ones(2), agnostic._tensor.TensorBase)
        True
    """

    __slots__ = ("_data", "_device", "__dict__", "__weakref__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators: numpy_array + tensor -> Tensor.__radd__

    # Autograd state: class-level defaults, so plain tensors carry none of it (see agnostic.autograd.tracking).
    _requires_grad = False
    _grad_fn = None
    _output_nr = 0
    _version = _SharedVersion()

    # The classes users hold, which name themselves (class Tensor(..., TensorBase, role="plain")): what ``wrap``
    # makes, and what a tensor that records autograd history becomes.
    plain = recording = None

    def __init_subclass__(cls, role=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if role == "plain":
            TensorBase.plain = cls
        elif role == "recording":
            TensorBase.recording = cls
        for hook in subclass_hooks:
            hook(cls)

    @property
    def grad(self):
        """The gradient ``backward()`` accumulated into this leaf (None until then, or after ``zero_grad``); it can
        be assigned, as in PyTorch.

            >>> w = agnostic.tensor([1.0, 2.0], requires_grad=True)
            >>> print(w.grad)
            None
            >>> (w * w).sum().backward()
            >>> w.grad
            tensor([2., 4.])
        """
        return self.__dict__.get("grad")

    @grad.setter
    def grad(self, value):
        if value is not None:
            if not isinstance(value, TensorBase):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(value).__name__}")
            shape = value._size if value.is_sparse else value._data.shape  # a sparse gradient has no dense array
            if shape != self._data.shape:
                raise RuntimeError(f"assigned grad has data of a different size: the tensor's shape is "
                                   f"{list(self.shape)}, the gradient's {list(value.shape)}")
        self.__dict__["grad"] = value

    # ----- metadata -----------------------------------------------------------------------------------------
    @property
    def device(self):
        """The Device this tensor lives on (``cpu`` or ``cuda:N``).

            >>> agnostic.zeros(2).device
            device(type='cpu')
        """
        return self._device

    @property
    def dtype(self):
        """The element type (an agnostic dtype such as ``agnostic.float32``).

            >>> agnostic.tensor([1, 2]).dtype
            agnostic.int64
        """
        return _DTYPE_OF[self._data.dtype]

    @property
    def shape(self):
        """The sizes of each dimension, as an ``agnostic.Size`` (a tuple).

            >>> agnostic.zeros(2, 3).shape
            agnostic.Size([2, 3])
        """
        return tuple.__new__(Size, self._data.shape)

    def size(self, dim=None):
        """``shape``, or the size of dimension ``dim`` (negative counts from the end).

            >>> x = agnostic.zeros(2, 3)
            >>> x.size()
            agnostic.Size([2, 3])
            >>> x.size(-1)
            3
        """
        if dim is None:
            return tuple.__new__(Size, self._data.shape)
        return self._data.shape[_normalize_dim(dim, self._data.ndim, allow_scalar=False)]

    @property
    def ndim(self):
        """The number of dimensions (``dim()``).

            >>> agnostic.zeros(2, 3).ndim
            2
        """
        return self._data.ndim

    def dim(self):
        """The number of dimensions (alias ``ndimension``; the property ``ndim``).

            >>> agnostic.zeros(2, 3).dim()
            2
        """
        return self._data.ndim

    ndimension = dim

    def numel(self):
        """The number of elements, the product of the sizes (alias ``nelement``).

            >>> agnostic.zeros(2, 3).numel()
            6
        """
        return self._data.size

    nelement = numel

    def element_size(self):
        """The size of one element in bytes (the property ``itemsize``).

            >>> agnostic.zeros(2, dtype=agnostic.float16).element_size()
            2
        """
        return self._data.itemsize

    @property
    def itemsize(self):
        """The size of one element in bytes (``element_size()``).

            >>> agnostic.zeros(2).itemsize
            4
        """
        return self._data.itemsize

    @property
    def nbytes(self):
        """The bytes the elements take, ``numel() * itemsize``.

            >>> agnostic.zeros(2, 3).nbytes
            24
        """
        return self._data.nbytes

    def stride(self, dim=None):
        """The step in elements (not bytes) between neighbours along each dimension, or along ``dim``, as PyTorch
        reports it.

            >>> x = agnostic.zeros(2, 3)
            >>> x.stride(), x.t().stride()
            ((3, 1), (1, 3))
        """
        itemsize = self._data.itemsize
        strides = tuple(s // itemsize for s in self._data.strides)
        return strides if dim is None else strides[_normalize_dim(dim, self._data.ndim, allow_scalar=False)]

    def is_contiguous(self, memory_format=_layout.contiguous_format):
        """True when the elements are laid out without gaps in the order of ``memory_format``: row-major for
        ``agnostic.contiguous_format`` (the default), NHWC for ``agnostic.channels_last`` (4-D tensors only) and NDHWC
        for ``agnostic.channels_last_3d`` (5-D only); the strides of size-1 dimensions don't count, as in PyTorch.

            >>> x = agnostic.zeros(2, 3)
            >>> x.is_contiguous(), x.t().is_contiguous()
            (True, False)
            >>> y = agnostic.zeros(1, 3, 4, 4).to(memory_format=agnostic.channels_last)
            >>> y.is_contiguous(), y.is_contiguous(memory_format=agnostic.channels_last)
            (False, True)
        """
        if memory_format is _layout.contiguous_format or memory_format is _layout.preserve_format:
            return self._data.flags.c_contiguous
        memory_format = _layout.check_memory_format(memory_format)
        array = self._data
        return _layout.is_contiguous_as(memory_format, array.shape, _layout.element_strides(array))

    def data_ptr(self):
        """The address of the first element (in device memory for CUDA tensors).

            >>> x = agnostic.zeros(4)
            >>> x[2:].data_ptr() - x.data_ptr()  # a view: the same memory, two float32 further
            8
        """
        return _backend.data_pointer(self._data)

    @property
    def is_cuda(self):
        """True when this tensor lives on a CUDA device.

            >>> agnostic.zeros(2).is_cuda
            False
        """
        return self._device.type == "cuda"

    @property
    def is_cpu(self):
        """True when this tensor lives in CPU memory.

            >>> agnostic.zeros(2).is_cpu
            True
        """
        return self._device is CPU

    def get_device(self):
        """The index of this tensor's CUDA device, or -1 on the CPU (as PyTorch).

            >>> agnostic.zeros(2).get_device()
            -1
        """
        index = self._device.index
        return -1 if index is None else index

    def is_floating_point(self):
        """True for floating dtypes (``float16``, ``bfloat16``, ``float32``, ``float64``).

            >>> agnostic.zeros(2).is_floating_point(), agnostic.tensor([1]).is_floating_point()
            (True, False)
        """
        return self.dtype.is_floating_point

    def is_complex(self):
        """True for complex dtypes (``complex64``, ``complex128``).

            >>> agnostic.tensor([1j]).is_complex(), agnostic.zeros(2).is_complex()
            (True, False)
        """
        return self.dtype.is_complex

    # ----- conversions to Python and NumPy ------------------------------------------------------------------
    def item(self):
        """The value of a one-element tensor as a Python number (a CUDA tensor's is copied to the host).

            >>> agnostic.tensor([2.5]).item()
            2.5
        """
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar; "
                "item() needs exactly one element (index or reduce first)"
            )
        return self._host_array().reshape(()).item()

    def tolist(self):
        """The elements as (nested) Python lists of Python numbers; a 0-dim tensor gives its number.

            >>> agnostic.tensor([[1, 2], [3, 4]]).tolist()
            [[1, 2], [3, 4]]
        """
        return self._host_array().tolist()

    def numpy(self, *, force=False):
        """The NumPy array behind a CPU tensor (shared memory), as ``torch.Tensor.numpy``. A tensor that requires
        grad or lives on a GPU is refused, since the array would silently leave the graph or the device;
        ``force=True`` detaches and copies to the host instead.

            >>> agnostic.tensor([1.0, 2.0]).numpy()
            array([1., 2.], dtype=float32)
            >>> agnostic.ones(2, requires_grad=True).numpy(force=True)
            array([1., 1.], dtype=float32)
        """
        if force:
            return self._host_array()
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if not self._device.backend.host:
            raise TypeError(
                f"can't convert {self._device} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self._data

    def __array__(self, dtype=None, copy=None):
        """The array NumPy reads (``numpy.asarray(x)``): ``numpy()``, cast to ``dtype`` if given; CPU tensors that
        don't require grad only, as in PyTorch.

            >>> import numpy
            >>> numpy.asarray(agnostic.tensor([1, 2]))
            array([1, 2])
        """
        array = self.numpy()
        if dtype is not None:
            array = array.astype(dtype, copy=False)
        return array

    # ----- exchange protocols: DLPack and __cuda_array_interface__ (the backends do the device's part) ----------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory, as the Python Array API standard specifies: what
        ``from_dlpack`` of NumPy, CuPy, PyTorch or JAX calls.

        ``stream``: the consumer's CUDA stream (None: the legacy default stream, -1: no synchronization), made to
        wait for the work queued on this device's current stream; CPU tensors take only None (or -1).
        ``max_version``: the newest DLPack the consumer reads (``(1, 0)`` and later: a versioned capsule; None: the
        legacy one). ``dl_device``: ``(kDLCPU, 0)`` exports a host copy of a CUDA tensor. ``copy``: True always
        copies, False never (BufferError, or ValueError for a CUDA-to-host copy, if one is needed). Tensors that
        require grad are refused, as in PyTorch.

            >>> agnostic.tensor([1, 2]).__dlpack__()
            <capsule object "dltensor" at 0x...>
            >>> import numpy
            >>> numpy.from_dlpack(agnostic.tensor([1.5, 2.5]))
            array([1.5, 2.5], dtype=float32)
        """
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return self._device.backend.ops.dlpack_export(self._data, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """``(DLPack device type, index)`` of this tensor's memory: ``(kDLCPU, 0)`` or ``(kDLCUDA, N)``.

            >>> agnostic.zeros(2).__dlpack_device__()
            (<DLDeviceType.kDLCPU: 1>, 0)
        """
        return self._device.backend.ops.dlpack_device(self._data)

    @property
    def __cuda_array_interface__(self):
        """The CUDA array interface (version 3, ``stream``: this device's current stream) of a CUDA tensor, which
        Numba, CuPy and PyTorch read without a copy. CPU tensors have none (``hasattr`` is False), as in PyTorch.

            >>> hasattr(agnostic.zeros(2), "__cuda_array_interface__")
            False
            >>> agnostic.zeros(2, device="cuda").__cuda_array_interface__["version"]  # doctest: +SKIP
            3
        """
        interface = self._device.backend.ops.cuda_array_interface(self._data)
        if self._requires_grad:
            raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. If gradients "
                               "aren't required, use var.detach() to get Variable that doesn't require grad.")
        return interface

    def _host_array(self):
        return self._device.backend.to_host(self._data)[0]

    def __bool__(self):
        """The truth of a one-element tensor (``if x:``); for more elements it is ambiguous, and refused.

            >>> bool(agnostic.tensor([0.0])), bool(agnostic.tensor(3))
            (False, True)
        """
        if self._data.size != 1:
            raise RuntimeError(
                f"Boolean value of Tensor with {self._data.size} elements is ambiguous; use .any() or .all()"
            )
        return bool(self.item())

    def __float__(self):
        """``float(x)`` of a one-element tensor.

            >>> float(agnostic.tensor([2.5]))
            2.5
        """
        return float(self.item())

    def __int__(self):
        """``int(x)`` of a one-element tensor (floats are truncated toward zero).

            >>> int(agnostic.tensor([2.7]))
            2
        """
        return int(self.item())

    def __complex__(self):
        """``complex(x)`` of a one-element tensor.

            >>> complex(agnostic.tensor(2.0))
            (2+0j)
        """
        return complex(self.item())

    def __index__(self):
        """A one-element integer tensor as an index (``sequence[x]``, ``range(x)``).

            >>> ["a", "b", "c"][agnostic.tensor(1)]
            'b'
        """
        if self.dtype.category > 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __len__(self):
        """The size of the first dimension (a 0-dim tensor has no length).

            >>> len(agnostic.zeros(3, 2))
            3
        """
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        """The sub-tensors along the first dimension (views).

            >>> list(agnostic.tensor([[1, 2], [3, 4]]))
            [tensor([1, 2]), tensor([3, 4])]
        """
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (wrap(self._data[i], self._device) for i in range(self._data.shape[0]))

    # Tensors hash by identity, as in PyTorch (``==`` compares values elementwise), so that they can be set members
    # and dict keys (``{x: "weights"}[x]``): object's own hash, which costs no Python call (optimizers look their
    # state up by parameter on every step).
    __hash__ = object.__hash__

    def __format__(self, spec):
        """``format(x, spec)``: a 0-dim tensor formats as its Python number, others as their repr.

            >>> f"{agnostic.tensor(2.5):.2f}"
            '2.50'
        """
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)

    def __reduce__(self):
        """Pickling: the values (copied to the host) and the device's name, where unpickling makes the tensor again.

            >>> import pickle
            >>> pickle.loads(pickle.dumps(agnostic.tensor([1, 2])))
            tensor([1, 2])
        """
        return (_rebuild, (self._host_array(), str(self._device)))

    # ----- moving between devices and dtypes ----------------------------------------------------------------
    @_declared(**CONVERSION)
    def to(self, *args, **kwargs):
        """Move and/or cast: ``to(device)``, ``to(dtype)``, ``to(other)``, ``to(device, dtype, non_blocking=False,
        copy=False, memory_format=agnostic.preserve_format)``. Returns ``self`` when nothing changes (and ``copy`` is
        false; for a memory format, when the strides already suggest it), a new tensor otherwise, whose strides are
        ``self``'s by default (see ``clone``) or those of ``memory_format``.

            >>> agnostic.tensor([1.5, -2.5]).to(agnostic.int64)
            tensor([ 1, -2])
            >>> agnostic.zeros(2, 3, 4, 5).to(memory_format=agnostic.channels_last).stride()
            (60, 1, 15, 3)
        """
        device, dtype, non_blocking, copy, memory_format = parse_to_arguments(args, kwargs)
        return self._converted_as(device, dtype, copy, non_blocking, memory_format)

    @_declared(**CONVERSION)
    def cuda(self, device=None, non_blocking=False):
        """A copy on a CUDA device (the current one by default); ``self`` if already there.

            >>> agnostic.ones(2).cuda().is_cuda  # doctest: +SKIP
            True
        """
        target = as_device("cuda" if device is None else device)
        if target.backend.host:
            raise ValueError(f"cuda(): expected a CUDA device, got {target}; use .to({str(target)!r}) instead")
        return self._converted_as(target, None, False, non_blocking)

    @_declared(**CONVERSION)
    def cpu(self):
        """A copy in CPU memory; ``self`` if already there.

            >>> agnostic.ones(2).cpu().is_cpu
            True
        """
        return self._converted_as(CPU, None, False, False)

    def _converted_as(self, device, dtype, copy, non_blocking, memory_format=_layout.preserve_format):
        """``_converted`` (the move and cast) with PyTorch's layout rules for ``to``: the result has the strides
        ``memory_format`` gives (``preserve_format``: this tensor's, see ``clone``), and ``self`` is returned when
        nothing changes."""
        made = self._converted(device, dtype, copy, non_blocking)
        if memory_format is _layout.preserve_format:
            if made is self or "_copy_done" in made.__dict__:  # an in-flight host copy: reading it would wait
                return made
            array, result = self._data, made._data
            if result.strides == array.strides or (array.flags.c_contiguous and result.flags.c_contiguous
                                                   and 1 not in array.shape):
                return made
            target = _layout.preserved_strides(array.shape, _layout.element_strides(array))
        elif made is self and _layout.suggest_memory_format(self._data.shape, self.stride()) is memory_format:
            return self  # PyTorch's rule: nothing to change when the strides already suggest that format
        else:
            target = _layout.format_strides(memory_format, self._data.shape)
        return made._laid_out(target, copy_always=made is self)

    def pin_memory(self):
        """A copy of this CPU tensor in page-locked memory (``self`` if already pinned), for fast and
        asynchronous (``non_blocking``) copies to a GPU; it needs CUDA.

            >>> x = agnostic.zeros(2).pin_memory()  # doctest: +SKIP
            >>> x.is_pinned(), x.cuda(non_blocking=True).is_cuda  # doctest: +SKIP
            (True, True)
        """
        if not self._device.backend.host:
            raise RuntimeError(f"cannot pin '{self._device}' memory: only CPU tensors can be pinned")
        if _cuda_backend.is_pinned(self._data):
            return self
        return wrap(_pinned.pinned_copy(self._data), CPU)

    def is_pinned(self):
        """True when this tensor's memory is page-locked (see ``pin_memory``; always False without CUDA).

            >>> agnostic.zeros(2).is_pinned()
            False
        """
        return self._device.backend.host and _cuda_backend.is_pinned(self._data)

    # ----- autograd --------------------------------------------------------------------------------------------
    @property
    def requires_grad(self):
        """Whether gradients are recorded for this tensor (only floating and complex tensors may require them);
        results computed from one require them too. Setting it is ``requires_grad_``.

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> x.requires_grad, (x * 2).requires_grad, agnostic.ones(2).requires_grad
            (True, True, False)
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value):
        self.requires_grad_(value)

    @property
    def grad_fn(self):
        """The recorded operation that produced this tensor (None for leaves).

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> x.grad_fn is None, (x * 2).grad_fn
            (True, <MulBackward0 object at 0x...>)
        """
        view = self.__dict__.get("_view")
        if view is not None and view.version != view.base._version:
            view.refresh(self)  # its base changed in place since its grad_fn was made
        return self._grad_fn

    @property
    def is_leaf(self):
        """True for tensors not produced by a recorded operation (all tensors that don't require grad).

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> x.is_leaf, (x * 2).is_leaf
            (True, False)
        """
        return self._grad_fn is None

    @property
    def data(self):
        """This tensor's values as a tensor outside autograd (shares memory); assigning a tensor replaces them.

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> x.data, x.data.requires_grad
            (tensor([1., 1.]), False)
        """
        return wrap(self._data, self._device)

    @data.setter
    def data(self, value):
        if not isinstance(value, TensorBase):
            raise TypeError(f"data must be a Tensor, got {type(value).__name__}")
        self._data = value._data
        self._device = value._device

    def detach_(self):
        """Cut this tensor from its history in place (it becomes a leaf that doesn't require grad); returns ``self``.

            >>> y = agnostic.ones(2, requires_grad=True) * 2
            >>> y.detach_()
            tensor([2., 2.])
            >>> y.requires_grad, y.is_leaf
            (False, True)
        """
        if self._grad_fn is not None and self.__dict__.get("_is_view"):
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        for key in ("_grad_fn", "_requires_grad", "_output_nr"):
            self.__dict__.pop(key, None)
        if type(self) is TensorBase.recording:
            self.__class__ = TensorBase.plain
        return self

    @_declared(shape_only=True, gradients=PASSES_THROUGH)
    def clone(self, *, memory_format=_layout.preserve_format):
        """A copy with its own memory, on the same device, in ``memory_format``: by default
        (``agnostic.preserve_format``) with the same strides when they are dense, else dense strides in the same
        order, as PyTorch's.

            >>> agnostic.tensor([1, 2]).clone()
            tensor([1, 2])
            >>> agnostic.zeros(2, 3).t().clone().stride()
            (1, 3)
            >>> agnostic.zeros(1, 2, 2, 3).clone(memory_format=agnostic.channels_last).stride()
            (12, 1, 6, 2)
        """
        array = self._data
        if memory_format is _layout.preserve_format and array.flags.c_contiguous and array.size \
                and 1 not in array.shape:  # row-major strides, with none of size 1 to keep: the common case, fast
            with self._device.backend.activate():
                return wrap(array.copy(), self._device)
        memory_format = _layout.check_memory_format(memory_format)
        if memory_format is _layout.preserve_format:
            target = _layout.preserved_strides(array.shape, _layout.element_strides(array))
        else:
            target = _layout.format_strides(memory_format, array.shape)
        return self._laid_out(target, copy_always=True)

    def _laid_out(self, strides, copy_always):
        """This tensor's values with ``strides`` (dense, in elements): ``self`` where it has them already and
        ``copy_always`` is false, else a copy in new memory."""
        array = self._data
        if not copy_always and _layout.element_strides(array) == tuple(strides):
            return self
        backend = self._device.backend
        with backend.activate():
            return wrap(_layout.copy_with_strides(backend, array, strides), self._device)

    def detach(self):
        """A tensor sharing this one's memory, cut from autograd history.

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> y = (x * 2).detach()
            >>> y, y.requires_grad
            (tensor([2., 2.]), False)
        """
        return wrap(self._data, self._device)

    @_declared(shape_only=True, gradients=PASSES_THROUGH)
    def contiguous(self, memory_format=_layout.contiguous_format):
        """``self`` if already contiguous in ``memory_format`` (see ``is_contiguous``), else a copy that is:
        row-major by default, NHWC-ordered strides for ``agnostic.channels_last``.

            >>> agnostic.ones(2, 3).t().contiguous().is_contiguous()
            True
            >>> agnostic.ones(1, 2, 2, 3).contiguous(memory_format=agnostic.channels_last).stride()
            (12, 1, 6, 2)
        """
        if memory_format is _layout.contiguous_format and self._data.flags.c_contiguous:
            return self
        memory_format = _layout.check_memory_format(memory_format)
        if self.is_contiguous(memory_format):
            return self
        if memory_format is _layout.preserve_format:
            raise RuntimeError("preserve memory format is unsupported by the contiguous operator; call "
                               "contiguous() for row-major order or clone() to keep the layout")
        return self._laid_out(_layout.format_strides(memory_format, self._data.shape), copy_always=True)

    # Legacy casts: x.float(), x.long(), ...
    def float(self):
        """``self.to(agnostic.float32)``.

            >>> agnostic.tensor([1, 2]).float()
            tensor([1., 2.])
        """
        return self.to(_dtypes.float32)

    def double(self):
        """``self.to(agnostic.float64)``.

            >>> agnostic.tensor([1, 2]).double()
            tensor([1., 2.], dtype=agnostic.float64)
        """
        return self.to(_dtypes.float64)

    def half(self):
        """``self.to(agnostic.float16)``.

            >>> agnostic.tensor([1, 2]).half()
            tensor([1., 2.], dtype=agnostic.float16)
        """
        return self.to(_dtypes.float16)

    def bfloat16(self):
        """``self.to(agnostic.bfloat16)``.

            >>> agnostic.tensor([1, 2]).bfloat16()  # needs ml_dtypes on the CPU  # doctest: +SKIP
            tensor([1., 2.], dtype=agnostic.bfloat16)
        """
        return self.to(_dtypes.bfloat16)

    def int(self):
        """``self.to(agnostic.int32)``.

            >>> agnostic.tensor([1.7, -1.7]).int()
            tensor([ 1, -1], dtype=agnostic.int32)
        """
        return self.to(_dtypes.int32)

    def long(self):
        """``self.to(agnostic.int64)``.

            >>> agnostic.tensor([1.7, -1.7]).long()
            tensor([ 1, -1])
        """
        return self.to(_dtypes.int64)

    def short(self):
        """``self.to(agnostic.int16)``.

            >>> agnostic.tensor([1.7, -1.7]).short()
            tensor([ 1, -1], dtype=agnostic.int16)
        """
        return self.to(_dtypes.int16)

    def char(self):
        """``self.to(agnostic.int8)``.

            >>> agnostic.tensor([1.7, -1.7]).char()
            tensor([ 1, -1], dtype=agnostic.int8)
        """
        return self.to(_dtypes.int8)

    def byte(self):
        """``self.to(agnostic.uint8)``.

            >>> agnostic.tensor([1, 255]).byte()
            tensor([  1, 255], dtype=agnostic.uint8)
        """
        return self.to(_dtypes.uint8)

    def bool(self):
        """``self.to(agnostic.bool)``.

            >>> agnostic.tensor([0, 2]).bool()
            tensor([False,  True])
        """
        return self.to(_dtypes.bool)

    def cfloat(self):
        """``self.to(agnostic.complex64)``.

            >>> agnostic.tensor([1.0]).cfloat()
            tensor([1.+0.j])
        """
        return self.to(_dtypes.complex64)

    def cdouble(self):
        """``self.to(agnostic.complex128)``.

            >>> agnostic.tensor([1.0]).cdouble()
            tensor([1.+0.j], dtype=agnostic.complex128)
        """
        return self.to(_dtypes.complex128)

    # ----- the Python Array API standard's array attributes (the namespace is agnostic.array_api) ----------------
    def __array_namespace__(self, /, *, api_version=None):
        """The Array API standard namespace for this tensor: ``agnostic.array_api`` (revisions 2021.12 to 2024.12).

            >>> agnostic.ones(2).__array_namespace__().__array_api_version__
            '2024.12'
        """
        from . import array_api as namespace  # lazily: built on agnostic's public API, which sits above this class
        if api_version is not None and api_version not in namespace.SUPPORTED_VERSIONS:
            raise ValueError(f"unsupported Array API version {api_version!r}: agnostic.array_api implements "
                             f"{', '.join(namespace.SUPPORTED_VERSIONS)}")
        return namespace

    def to_device(self, device, /, *, stream=None):
        """This tensor on ``device`` (the standard's name for ``.to(device)``; ``stream`` is not used).

            >>> agnostic.ones(2).to_device("cpu").device
            device(type='cpu')
        """
        return self.to(device)


def _rebuild(array, device_text):
    return wrap(array, CPU)._converted(as_device(device_text), None, False)


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
    """``to()``'s arguments as ``(device, dtype, non_blocking, copy)``; ``parse_to_arguments`` adds the memory
    format."""
    return parse_to_arguments(args, kwargs)[:4]


def parse_to_arguments(args, kwargs):
    """``to()``'s arguments, positional or by keyword, as ``(device, dtype, non_blocking, copy, memory_format)``
    (``memory_format`` is ``agnostic.preserve_format`` unless given): what ``Tensor.to`` and ``Module.to`` read."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    non_blocking = kwargs.pop("non_blocking", False)
    copy = kwargs.pop("copy", False)
    memory_format = _layout.check_memory_format(kwargs.pop("memory_format", None))
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    positional = list(args)
    if positional and isinstance(positional[0], TensorBase):
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
    return (None if device is None else as_device(device)), _dtypes.as_dtype(dtype), non_blocking, copy, memory_format


def _looks_like_dtype(value):
    return isinstance(value, numpy.dtype) or (isinstance(value, str) and value.removeprefix("agnostic.")
                                              .removeprefix("torch.") in _dtypes._BY_NAME)
