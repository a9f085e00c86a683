"""The classes users hold: ``agnostic.Tensor`` and ``GradTensor``, made from ``TensorBase`` (storage, metadata,
conversions: ``_tensor.py``) and the methods the op declarations make (``ops/_registry.py``).

This module comes after the ops in the import order, so every method here may use any of them; the ops, below it,
make plain tensors with ``_tensor.wrap`` and tell the two classes apart by ``TensorBase.plain`` and
``TensorBase.recording``, which the classes below name themselves.
"""

from typing import TYPE_CHECKING

from . import _backend, _conversion, _dtypes, _layout, _legacy_types
from ._backends import cuda as _cuda_backend
from ._device import CPU
from ._printing import tensor_repr
from ._tensor import CONVERSION, TensorBase, _check_broadcast_into, _check_writable, wrap
from .autograd import functions as _autograd_functions
from .autograd.tracking import set_requires_grad
from .cuda.memory import record_stream as _record_stream
from .ops import (  # noqa: F401  (declarations)
    activations, complex, creation, elementwise, factorizations, indexing, linalg, numerical, random, reduction, shape, sorting,
    sparse, spectral, statistics, storage, strided,
)
from .ops._registry import declared_methods, tensor_method

# Tensor.new_zeros/new_ones/new_empty/new_full: declared in ops.creation, which the registry itself imports, so they
# become methods here.
for _factory in creation.NEW_FACTORIES:
    tensor_method()(_factory)
del _factory


# ----- ops that need this layer, declared here: their methods come with the others --------------------------------
# (``type`` shadows the builtin in this module, which doesn't use it: the op's name is the function's.)
@tensor_method(**CONVERSION)
def type(self, dtype=None, non_blocking=False):
    """Without arguments, the legacy type name (``'agnostic.cuda.FloatTensor'``); otherwise cast to that type.

        >>> agnostic.ones(2).type("agnostic.DoubleTensor").type()
        'agnostic.DoubleTensor'
    """
    if dtype is None:
        return _legacy_types.type_name(self)
    device, target = _legacy_types.parse_type(dtype, self._device)
    return self._converted(device, target, False, non_blocking)


@tensor_method(overwrites=True, shape_only=True, gradients={"src": lambda grad: grad})
def copy_(self, src, non_blocking=False):
    """Copy ``src`` into ``self`` in place, across devices, broadcasting and casting; returns ``self``.

    With ``non_blocking``, a device-to-host copy into pinned, contiguous ``self`` of the same shape and dtype
    runs asynchronously; reading ``self`` on the host waits for it.

        >>> agnostic.zeros(2, 2).copy_(agnostic.tensor([1, 2]))[1]
        tensor([1., 2.])
    """
    if not isinstance(src, TensorBase):
        src = creation.tensor(src)
    _check_writable(self)
    array = src._data
    if src._device is not self._device:
        if non_blocking and self._device.backend.host and _can_receive_async_copy(self._data, array):
            _, event = src._device.backend.to_host(array, non_blocking=True, out=self._data)
            InFlightHostTensor.mark(self, event)
            return self
        array = _backend.move(array, src._device, self._device, non_blocking)
    _check_broadcast_into(self, array.shape, "copy_")
    with self._device.backend.activate():
        if _conversion.kind(array.dtype, self._data.dtype) is not None:  # where C casts are not PyTorch's
            array = self._device.backend.ops.convert(array, self._data.dtype)
        self._device.backend.xp.copyto(self._data, array, casting="unsafe")
    return self


def _can_receive_async_copy(host, device_array):
    return (host.shape == device_array.shape and host.dtype == device_array.dtype and host.flags.c_contiguous
            and _cuda_backend.is_pinned(host))


# ----- the classes ---------------------------------------------------------------------------------------------
if TYPE_CHECKING:  # their signatures, for type checkers and IDEs: generated from the declarations (see _stubs.py)
    from ._tensor_methods import GradTensorMethods, TensorMethods
else:
    TensorMethods = declared_methods("TensorMethods", __name__)
    GradTensorMethods = declared_methods("GradTensorMethods", __name__, recording=True)



def _never(name, what):
    """A property that is False on every agnostic tensor (``is_sparse``...), with its documented example."""
    return property(lambda self: False, doc=f"""False: agnostic has no {what} (``torch.Tensor.{name}``).

            >>> agnostic.zeros(2).{name}
            False
        """)

class Tensor(TensorMethods, TensorBase, role="plain"):
    """An n-dimensional array on a CPU or CUDA device, with PyTorch's semantics (``torch.Tensor``).

    Make tensors with the factory functions (``agnostic.tensor``, ``zeros``, ``arange``...); the constructor is
    PyTorch's legacy one. Its methods are the declared ops' (``agnostic.add`` is ``Tensor.add``...), the storage
    and conversions of ``TensorBase``, and those below.

        >>> x = agnostic.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> x.shape, x.dtype, x.device
        (agnostic.Size([2, 2]), agnostic.float32, device(type='cpu'))
        >>> (x @ x).sum()
        tensor(54.)
    """

    __slots__ = ()
    __module__ = "agnostic"  # where users find it: <class 'agnostic.Tensor'>, as torch.Tensor

    def __init__(self, *args, device=None):
        """PyTorch's legacy constructor: ``Tensor(sequence)`` is a tensor of the default float dtype holding the
        values, ``Tensor(*sizes)`` an uninitialized one of that shape (``agnostic.tensor`` and ``agnostic.empty`` say
        which is meant).

            >>> agnostic.Tensor([1, 2])
            tensor([1., 2.])
            >>> agnostic.Tensor(2, 3).shape
            agnostic.Size([2, 3])
        """
        if len(args) == 1 and not isinstance(args[0], int):
            made = creation.tensor(args[0], dtype=_dtypes.get_default_dtype(), device=device)
        else:
            made = creation.empty(*args, device=device)
        self._data = made._data
        self._device = made._device

    def __repr__(self):
        """The tensor as PyTorch prints it: its values, then its dtype and device where they are not the defaults (also
        ``str``).

            >>> agnostic.tensor([1.0, 2.5])
            tensor([1.0000, 2.5000])
            >>> print(agnostic.tensor([1, 2], dtype=agnostic.float64))
            tensor([1., 2.], dtype=agnostic.float64)
        """
        return tensor_repr(self)

    __str__ = __repr__

    def __pos__(self):
        """``+self``: ``self`` itself.

            >>> +agnostic.tensor([1, -2])
            tensor([ 1, -2])
        """
        return self

    def _converted(self, device, dtype, copy, non_blocking=False):
        source = self._device
        target = source if device is None else _backend.resolve(device)
        array = self._data
        if dtype is not None and self.dtype is not dtype:
            with source.backend.activate():
                array = source.backend.ops.convert(array, dtype.numpy_dtype)
            copy = False
        if target is not source:
            if non_blocking and target.backend.host:
                host, event = source.backend.to_host(array, non_blocking=True)
                return InFlightHostTensor.around(host, event)
            array = _backend.move(array, source, target, non_blocking)
        elif copy:
            with source.backend.activate():
                array = array.copy()
        elif array is self._data:
            return self
        return wrap(array, target)

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor from ``data`` (copied), with this tensor's dtype and device unless given.

            >>> agnostic.zeros(2, dtype=agnostic.float64).new_tensor([1, 2])
            tensor([1., 2.], dtype=agnostic.float64)
        """
        return creation.tensor(data, dtype=dtype or self.dtype, device=device or self._device,
                               requires_grad=requires_grad)

    # ----- autograd --------------------------------------------------------------------------------------------
    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` in place (only on leaves); returns ``self``.

            >>> agnostic.ones(2).requires_grad_().requires_grad
            True
        """
        return set_requires_grad(self, requires_grad)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into each leaf's ``.grad`` (``gradient`` is required unless self has one
        element), as ``torch.Tensor.backward``.

            >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * x).sum().backward()
            >>> x.grad
            tensor([2., 4.])
        """
        _autograd_functions.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def retain_grad(self):
        """Keep ``.grad`` for this non-leaf tensor after backward.

            >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
            >>> y = x * 3
            >>> y.retain_grad()
            >>> y.sum().backward()
            >>> y.grad
            tensor([1., 1.])
        """
        _autograd_functions.retain_grad(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces the gradient.
        Returns a handle with ``remove()``.

            >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
            >>> handle = x.register_hook(lambda grad: grad * 10)
            >>> x.sum().backward()
            >>> x.grad
            tensor([10., 10.])
            >>> handle.remove()
        """
        return _autograd_functions.register_hook(self, hook)

    # ----- memory shared with streams and processes ------------------------------------------------------------
    def record_stream(self, stream):
        """Keep this CUDA tensor's memory from being reused until the work queued on ``stream`` when the tensor is
        freed has finished (for tensors used on a side stream), as ``torch.Tensor.record_stream``; CUDA tensors only.

            >>> x = agnostic.ones(1000, device="cuda")  # doctest: +SKIP
            >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
            >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
            ...     y = x * 2
            >>> x.record_stream(s)  # doctest: +SKIP
            >>> del x  # its memory waits for s's work before it is reused  # doctest: +SKIP
        """
        _record_stream(self, stream)

    def share_memory_(self):
        """Move this CPU tensor's data into shared memory (a no-op on CUDA and when already shared); returns
        ``self``. Other processes it is sent to through ``agnostic.multiprocessing`` then map the same pages.

            >>> x = agnostic.zeros(2).share_memory_()
            >>> x.is_shared()
            True
        """
        from .multiprocessing.sharing import share_memory_  # lazily: import agnostic doesn't load multiprocessing

        return share_memory_(self)

    def is_shared(self):
        """True when this tensor's memory can be seen by other processes (shared memory, or any CUDA memory).

            >>> agnostic.zeros(2).is_shared()
            False
        """
        from .multiprocessing.sharing import is_shared  # lazily: import agnostic doesn't load multiprocessing

        return is_shared(self)

    # ----- what PyTorch programs ask about a tensor's kind: these are dense, strided, on a CPU or CUDA (sparse
    # tensors, a subclass made by ops.sparse, answer for themselves) ---------------------------------------------
    is_meta = _never("is_meta", "meta tensors (shapes without data)")
    is_sparse = property(lambda self: False, doc="""Whether this is a sparse COO tensor (``torch.Tensor.is_sparse``):
        False for dense tensors, True for those ``sparse_coo_tensor`` and ``to_sparse()`` make.

            >>> agnostic.zeros(2).is_sparse, agnostic.zeros(2).to_sparse().is_sparse
            (False, True)
        """)
    is_sparse_csr = property(lambda self: False, doc="""Whether this is a sparse CSR tensor
        (``torch.Tensor.is_sparse_csr``): False for dense tensors, True for those ``sparse_csr_tensor`` and
        ``to_sparse_csr()`` make.

            >>> agnostic.zeros(2, 2).is_sparse_csr, agnostic.zeros(2, 2).to_sparse_csr().is_sparse_csr
            (False, True)
        """)
    is_quantized = _never("is_quantized", "quantized tensors")
    is_nested = _never("is_nested", "nested tensors")
    is_mkldnn = _never("is_mkldnn", "MKL-DNN tensors")
    is_mps = _never("is_mps", "Apple GPUs (MPS)")
    is_xpu = _never("is_xpu", "Intel GPUs (XPU)")
    is_xla = _never("is_xla", "XLA devices")
    is_ipu = _never("is_ipu", "Graphcore IPUs")
    is_vulkan = _never("is_vulkan", "Vulkan devices")
    is_maia = _never("is_maia", "MAIA accelerators")
    is_mtia = _never("is_mtia", "MTIA accelerators")

    @property
    def layout(self):
        """The memory layout (``torch.Tensor.layout``): ``agnostic.strided`` for dense tensors; sparse tensors
        answer ``agnostic.sparse_coo``, ``sparse_csr``...

            >>> agnostic.zeros(2, 3).layout, agnostic.zeros(2, 3).to_sparse().layout
            (agnostic.strided, agnostic.sparse_coo)
        """
        return _layout.strided

    @property
    def retains_grad(self):
        """True for a non-leaf tensor whose ``retain_grad()`` was called (its ``.grad`` is kept by backward).

            >>> x = agnostic.ones(2, requires_grad=True)
            >>> y = x * 2
            >>> y.retain_grad()
            >>> x.retains_grad, y.retains_grad
            (False, True)
        """
        node = self._grad_fn
        retained = getattr(node, "retained_outputs", None) or {}
        reference = retained.get(getattr(self, "_output_nr", 0))
        return reference is not None and reference() is self

    def is_conj(self):
        """False: agnostic conjugates eagerly, so no tensor carries a lazy conjugate bit (``torch.is_conj``).

            >>> agnostic.tensor([1 + 2j]).conj().is_conj()
            False
        """
        return False

    def is_neg(self):
        """False: agnostic negates eagerly, so no tensor carries a lazy negative bit (``torch.is_neg``).

            >>> agnostic.ones(2).is_neg()
            False
        """
        return False

    def is_inference(self):
        """False: tensors made under ``agnostic.inference_mode`` are ordinary tensors without autograd history.

            >>> agnostic.ones(2).is_inference()
            False
        """
        return False

    def is_distributed(self):
        """False: agnostic has no distributed tensors (``torch.Tensor.is_distributed``).

            >>> agnostic.ones(2).is_distributed()
            False
        """
        return False

    def is_signed(self):
        """True when the dtype holds negative values (signed integers, floating point, complex).

            >>> agnostic.ones(2).is_signed(), agnostic.ones(2, dtype=agnostic.uint8).is_signed()
            (True, False)
        """
        return self.dtype.is_signed

    def is_same_size(self, other):
        """True when ``other`` has the same shape.

            >>> agnostic.ones(2, 3).is_same_size(agnostic.zeros(2, 3))
            True
        """
        return tuple(self.shape) == tuple(other.shape)

    def is_nonzero(self):
        """The truth of a one-element tensor's value; any other size is a RuntimeError, as ``torch.is_nonzero``.

            >>> agnostic.tensor([0.5]).is_nonzero(), agnostic.tensor(0).is_nonzero()
            (True, False)
        """
        count = self.numel()
        if count != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if count == 0 else 'more than one value'} "
                               "is ambiguous")
        return bool(self.item() != 0)

    def is_set_to(self, tensor):
        """True when ``tensor`` views exactly the same memory (same start, shape and strides), as
        ``torch.Tensor.is_set_to``.

            >>> x = agnostic.zeros(4)
            >>> x.is_set_to(x.view(4)), x.is_set_to(x[:2])
            (True, False)
        """
        mine, theirs = self._data, tensor._data
        return (self._device == tensor._device and mine.dtype == theirs.dtype and mine.shape == theirs.shape
                and mine.strides == theirs.strides and _backend.data_pointer(mine) == _backend.data_pointer(theirs))


class GradTensor(GradTensorMethods, Tensor, role="recording"):
    """A tensor that requires grad or was computed from one (it has a ``grad_fn``): its methods and operators record
    what they compute. A plain ``Tensor`` becomes one by ``requires_grad_()``.

        >>> x = agnostic.ones(2, requires_grad=True)
        >>> type(x).__name__, type(x * 2).__name__, type(agnostic.ones(2)).__name__
        ('GradTensor', 'GradTensor', 'Tensor')
        >>> isinstance(x, agnostic.Tensor)
        True
    """

    __slots__ = ()


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


_SLOT_DATA = TensorBase.__dict__["_data"]
