"""agnostic.storage: UntypedStorage (a tensor's memory, as bytes), TypedStorage and the legacy ``FloatStorage``-style
classes, as torch.storage.

A storage is the allocation under tensors: ``Tensor.untyped_storage()`` gives the bytes a tensor's elements lie in,
shared with it (writes through either are seen by the other), and ``Tensor.set_(storage, ...)`` lays a tensor over
a storage. Unlike PyTorch, agnostic's tensors hold their arrays directly, so a storage that tensors view can't be
moved to new memory (``resize_`` and ``share_memory_`` refuse then, naming the tensor-level call that works).
"""

import collections.abc
import numbers
import warnings

import numpy

from . import _backend, _dtypes
from ._device import as_device, get_default_device
from ._tensor import wrap
from .ops.creation import empty, tensor as make_tensor
from .ops.strided import _needed_elements


def _memory_of(array, device):
    """The flat uint8 bytes of a whole allocation holding ``array`` (see the backends' ``allocation``)."""
    backend = device.backend
    with backend.activate():
        return backend.ops.allocation(array)[0]


def tensor_over(storage, dtype, storage_offset, size, stride):
    """A ``dtype`` tensor laid over ``storage``'s bytes with ``size`` and ``stride`` (in elements) from
    ``storage_offset`` elements, refused with PyTorch's error where it would reach past the storage's end."""
    memory, device = storage._memory, storage._device
    itemsize = dtype.itemsize
    if storage_offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {storage_offset}")
    needed = _needed_elements(size, stride, storage_offset) * itemsize
    if needed > memory.size:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                           f"{storage_offset}, and itemsize {itemsize} requiring a storage size of {needed} are out "
                           f"of bounds for storage of size {memory.size}")
    backend = device.backend
    with backend.activate():
        array = backend.ops.strided_view(memory, _dtypes._numpy_dtype_of(dtype), tuple(size),
                                         tuple(step * itemsize for step in stride),
                                         storage_offset * itemsize if needed else 0)
    storage._lent = True
    return wrap(array, device)


def _check_size(size, name):
    if not isinstance(size, numbers.Integral) or isinstance(size, bool):
        raise TypeError(f"{name}(): size must be an int, not {type(size).__name__}")
    if size < 0:
        raise RuntimeError(f"{name}(): size must be non-negative, got {size}")
    return int(size)


class UntypedStorage:
    """Bytes of memory on one device, as ``torch.UntypedStorage``: made from a size (uninitialized bytes) or a
    sequence of byte values, or got from a tensor by ``Tensor.untyped_storage()`` (then it is the tensor's memory,
    and writes through it are seen by the tensor).

        >>> x = agnostic.tensor([1, 2], dtype=agnostic.int16)
        >>> s = x.untyped_storage()
        >>> s.nbytes(), s.tolist()
        (4, [1, 0, 2, 0])
        >>> s[2] = 7
        >>> x
        tensor([1, 7], dtype=agnostic.int16)
    """

    __slots__ = ("_memory", "_device", "_lent", "__weakref__")

    def __init__(self, *args, device=None):
        device = get_default_device() if device is None else as_device(device)
        if len(args) > 1:
            raise TypeError(f"UntypedStorage() takes a size or a sequence of bytes, got {len(args)} arguments")
        if not args:
            made = empty(0, dtype=_dtypes.uint8, device=device)
        elif isinstance(args[0], collections.abc.Sequence) and not isinstance(args[0], str):
            made = make_tensor([int(value) & 0xFF for value in args[0]], dtype=_dtypes.uint8, device=device)
        else:
            made = empty(_check_size(args[0], "UntypedStorage"), dtype=_dtypes.uint8, device=device)
        self._memory = made._data
        self._device = made._device
        self._lent = False

    @classmethod
    def _around(cls, memory, device, lent):
        """The storage over ``memory`` (flat uint8 array on ``device``); ``lent``: tensors view it."""
        storage = object.__new__(cls)
        storage._memory = memory
        storage._device = device
        storage._lent = lent
        return storage

    @classmethod
    def _of_tensor(cls, tensor):
        return cls._around(_memory_of(tensor._data, tensor._device), tensor._device, True)

    def _bytes(self):
        """The storage's bytes as a 1-D uint8 tensor sharing its memory."""
        return wrap(self._memory, self._device)

    # ----- what it is ---------------------------------------------------------------------------------------------
    @property
    def device(self):
        """The Device this storage's memory lives on.

            >>> agnostic.UntypedStorage(4).device
            device(type='cpu')
        """
        return self._device

    @property
    def is_cuda(self):
        """True when the memory is on a CUDA device.

            >>> agnostic.UntypedStorage(4).is_cuda
            False
        """
        return self._device.type == "cuda"

    def get_device(self):
        """The CUDA device index of the memory, -1 on the CPU (``Tensor.get_device``'s convention).

            >>> agnostic.UntypedStorage(4).get_device()
            -1
        """
        return self._bytes().get_device()

    def nbytes(self):
        """The size of the memory in bytes.

            >>> agnostic.zeros(3).untyped_storage().nbytes()
            12
        """
        return int(self._memory.size)

    def size(self):
        """The size in bytes (an untyped storage's elements are bytes).

            >>> agnostic.UntypedStorage(5).size()
            5
        """
        return self.nbytes()

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        """1: an untyped storage counts bytes.

            >>> agnostic.UntypedStorage(4).element_size()
            1
        """
        return 1

    def data_ptr(self):
        """The address of the first byte; the storages of two views of one tensor have the same.

            >>> x = agnostic.zeros(4)
            >>> x[2:].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
            True
        """
        return _backend.data_pointer(self._memory)

    def resizable(self):
        """Whether ``resize_`` may give this storage new memory: True unless tensors view it.

            >>> agnostic.UntypedStorage(4).resizable()
            True
        """
        return not self._lent

    def untyped(self):
        """Itself (``TypedStorage.untyped`` gives its untyped storage).

            >>> s = agnostic.UntypedStorage(2)
            >>> s.untyped() is s
            True
        """
        return self

    def type(self, dtype=None, non_blocking=False):
        """The storage's type name without arguments, as ``torch.UntypedStorage.type``.

            >>> agnostic.UntypedStorage(2).type()
            'agnostic.storage.UntypedStorage'
        """
        if dtype is not None:
            raise TypeError("UntypedStorage.type(dtype): convert tensors instead (tensor.to(dtype))")
        return "agnostic.storage.UntypedStorage"

    # ----- reading and writing bytes ------------------------------------------------------------------------------
    def _index(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(self.nbytes())
            if step != 1:
                raise RuntimeError(f"Trying to index a storage with step {step}: only step 1 is supported")
            return slice(start, max(start, stop))
        if not isinstance(index, numbers.Integral) or isinstance(index, bool):
            raise TypeError(f"can't index a storage with {type(index).__name__}")
        size = self.nbytes()
        if not -size <= index < size:
            raise IndexError(f"index {index} out of range for storage of size {size}")
        return int(index) % size

    def __getitem__(self, index):
        """A byte's value, or for a slice a storage viewing those bytes.

            >>> agnostic.UntypedStorage([5, 6, 7])[1]
            6
        """
        where = self._index(index)
        if isinstance(where, slice):
            return UntypedStorage._around(self._memory[where], self._device, True)
        return int(self._bytes()[where].item())

    def __setitem__(self, index, value):
        """Write a byte (or the bytes of a slice) in place; tensors over this memory see it.

            >>> s = agnostic.UntypedStorage([0, 0, 0])
            >>> s[1:] = 9
            >>> s.tolist()
            [0, 9, 9]
        """
        if isinstance(value, (UntypedStorage, TypedStorage)):
            raise RuntimeError(f"cannot set item with value type {type(value).__name__}")
        self._bytes()[self._index(index)] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        """The bytes as a list of ints.

            >>> agnostic.tensor([1], dtype=agnostic.int16).untyped_storage().tolist()
            [1, 0]
        """
        return self._bytes().tolist()

    def fill_(self, value):
        """Set every byte to ``value``; returns the storage.

            >>> agnostic.UntypedStorage(3).fill_(4).tolist()
            [4, 4, 4]
        """
        self._bytes().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        """Copy ``source``'s bytes (a storage of the same size, on any device) into this one; returns it.

            >>> agnostic.UntypedStorage(2).copy_(agnostic.UntypedStorage([1, 2])).tolist()
            [1, 2]
        """
        if isinstance(source, TypedStorage):
            source = source._untyped_storage
        if not isinstance(source, UntypedStorage):
            raise TypeError(f"copy_(): expected a storage as source, got {type(source).__name__}")
        if source.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was {source.nbytes()} "
                               "bytes")
        self._bytes().copy_(source._bytes(), non_blocking=bool(non_blocking))
        return self

    # ----- new storages -------------------------------------------------------------------------------------------
    def clone(self):
        """A copy of the bytes in new memory on the same device.

            >>> s = agnostic.UntypedStorage([1, 2])
            >>> c = s.clone()
            >>> c.tolist(), c.data_ptr() != s.data_ptr()
            ([1, 2], True)
        """
        return UntypedStorage._around(self._bytes().clone()._data, self._device, False)

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())

    def _moved(self, device, non_blocking=False):
        if device == self._device:
            return self
        moved = self._bytes().to(device, non_blocking=non_blocking)
        return UntypedStorage._around(moved._data, moved._device, False)

    def cpu(self):
        """This storage when on the CPU, else a CPU copy of it.

            >>> s = agnostic.UntypedStorage(2)
            >>> s.cpu() is s
            True
        """
        return self._moved(as_device("cpu"))

    def cuda(self, device=None, non_blocking=False):
        """A copy on CUDA ``device`` (the current one by default); itself when already there.

            >>> agnostic.UntypedStorage(2).cuda().is_cuda  # doctest: +SKIP
            True
        """
        target = self._bytes().cuda(device, non_blocking=non_blocking)
        return self._moved(target._device) if target._device != self._device else self

    def to(self, *, device, non_blocking=False):
        """This storage on ``device`` (a copy when it is elsewhere).

            >>> agnostic.UntypedStorage(2).to(device="cpu").device
            device(type='cpu')
        """
        return self._moved(as_device(device), non_blocking)

    def resize_(self, size):
        """Change the number of bytes: the leading bytes are kept, added ones are uninitialized. Refused for a
        storage tensors view (agnostic can't move their memory): resize the tensor (``Tensor.resize_``) instead.

            >>> s = agnostic.UntypedStorage([1, 2, 3])
            >>> s.resize_(2).tolist()
            [1, 2]
        """
        size = _check_size(size, "resize_")
        if size == self.nbytes():
            return self
        if self._lent:
            raise RuntimeError("Trying to resize storage that is not resizable: tensors view this storage's memory, "
                               "which agnostic can't move; resize the tensor in place instead (tensor.resize_(...)), "
                               "or resize a clone of the storage (storage.clone().resize_(n))")
        grown = empty(size, dtype=_dtypes.uint8, device=self._device)
        kept = min(size, self.nbytes())
        grown[:kept] = self._bytes()[:kept]
        self._memory = grown._data
        return self

    # ----- memory seen by other processes -------------------------------------------------------------------------
    def is_shared(self):
        """True when other processes can map this memory (shared memory on the CPU, always for CUDA).

            >>> agnostic.UntypedStorage(2).is_shared()
            False
        """
        from .multiprocessing.sharing import is_shared  # lazily: import agnostic doesn't load multiprocessing

        return is_shared(self._bytes())

    def share_memory_(self):
        """Move the bytes into shared memory (a no-op for CUDA and shared storages); returns the storage. Refused
        for a storage tensors view: call ``share_memory_()`` on the tensor instead.

            >>> agnostic.UntypedStorage([1, 2]).share_memory_().is_shared()
            True
        """
        from .multiprocessing.sharing import share_memory_  # lazily: import agnostic doesn't load multiprocessing

        if self.is_shared():
            return self
        if self._lent:
            raise RuntimeError("share_memory_(): tensors view this storage's memory, which agnostic can't move; call "
                               "tensor.share_memory_() before taking its storage")
        moved = share_memory_(self._bytes())
        self._memory = moved._data
        return self

    def is_pinned(self, device="cuda"):
        """True when this CPU memory is page-locked (see ``Tensor.pin_memory``).

            >>> agnostic.UntypedStorage(2).is_pinned()
            False
        """
        return self._bytes().is_pinned()

    def pin_memory(self, device="cuda"):
        """A copy in page-locked memory (CPU storages only).

            >>> agnostic.UntypedStorage(2).pin_memory().is_pinned()  # doctest: +SKIP
            True
        """
        if not self._device.backend.host:
            raise TypeError("cannot pin 'agnostic.storage.UntypedStorage' only CPU memory can be pinned")
        pinned = self._bytes().pin_memory()
        return UntypedStorage._around(pinned._data, pinned._device, False)

    @classmethod
    def from_file(cls, filename, shared=False, nbytes=0):
        """A storage of ``nbytes`` bytes mapped from ``filename`` (see ``agnostic.from_file``): with ``shared``,
        writes reach the file.

            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "bytes.bin")
            >>> _ = open(path, "wb").write(bytes([1, 2, 3]))
            >>> agnostic.UntypedStorage.from_file(path, False, 3).tolist()
            [1, 2, 3]
        """
        mapped = map_file(filename, shared, nbytes, _dtypes.uint8)
        return cls._around(mapped._data, mapped._device, True)

    def __repr__(self):
        values = "".join(f" {value}\n" for value in self.tolist())
        return f"{values}[agnostic.storage.UntypedStorage(device={self._device}) of size {self.nbytes()}]"

    def __reduce__(self):
        return (_rebuild_untyped, (self._bytes().cpu().numpy().tobytes(), str(self._device)))


def _rebuild_untyped(data, device):
    storage = UntypedStorage(len(data), device=device)
    if data:
        storage._bytes().copy_(wrap(numpy.frombuffer(data, numpy.uint8).copy(), as_device("cpu")))
    return storage


def map_file(filename, shared, nbytes, dtype):
    """A CPU tensor of ``nbytes // dtype.itemsize`` elements mapped from ``filename``: written back to the file
    when ``shared``, else a private copy-on-write mapping; with PyTorch's errors for missing or short files."""
    count = nbytes // dtype.itemsize
    if shared:
        try:
            handle = open(filename, "r+b")
        except FileNotFoundError:
            handle = open(filename, "w+b")
        with handle:
            handle.seek(0, 2)
            if handle.tell() < nbytes:  # PyTorch grows a shared file to the mapping's size
                handle.truncate(nbytes)
    else:
        try:
            with open(filename, "rb") as handle:
                handle.seek(0, 2)
                length = handle.tell()
        except OSError as error:
            raise RuntimeError(f"unable to open file <{filename}> in read-only mode: {error.strerror} "
                               f"({error.errno})") from None
        if length < nbytes:
            raise RuntimeError(f"file <{filename}> size <{length}> is smaller than the required mapping size "
                               f"<{nbytes}>")
    cpu = as_device("cpu")
    if count == 0:
        return empty(0, dtype=dtype, device=cpu)
    array = numpy.memmap(filename, dtype=_dtypes._numpy_dtype_of(dtype), mode="r+" if shared else "c",
                         shape=(count,))
    return wrap(array, cpu)


# ----- TypedStorage: an untyped storage read as elements of one dtype ---------------------------------------------
_warned = False


def _warn_typed_storage_removal(stacklevel=3):
    """PyTorch's deprecation warning for TypedStorage, given once per process as PyTorch does."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
                      "only storage class. This should only matter to you if you are using storages directly.  To "
                      "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                      UserWarning, stacklevel=stacklevel)


class TypedStorage:
    """An ``UntypedStorage`` read as elements of one ``dtype``, as ``torch.TypedStorage`` (deprecated in PyTorch,
    which warns once): got from ``Tensor.storage()``, or made from a size or a sequence of values.

        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> s = agnostic.tensor([1., 2.]).storage()
        >>> s.dtype, s.size(), s[1], s.tolist()
        (agnostic.float32, 2, 2.0, [1.0, 2.0])
    """

    is_sparse = False

    def __init__(self, *args, device=None, dtype=None, wrap_storage=None, _internal=False):
        if not _internal:
            _warn_typed_storage_removal()
        if wrap_storage is not None:
            if args:
                raise RuntimeError("TypedStorage(): no positional arguments should be given with 'wrap_storage'")
            if dtype is None:
                raise RuntimeError("TypedStorage(): argument 'dtype' must be given with 'wrap_storage'")
            if device is not None:
                raise RuntimeError("TypedStorage(): argument 'device' should not be given with 'wrap_storage'")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"TypedStorage(): argument 'wrap_storage' must be UntypedStorage, but got "
                                f"{type(wrap_storage).__name__}")
            self.dtype = _dtypes.as_dtype(dtype)
            self._untyped_storage = wrap_storage
            return
        self.dtype = _dtypes.get_default_dtype() if dtype is None else _dtypes.as_dtype(dtype)
        device = get_default_device() if device is None else as_device(device)
        if len(args) > 1:
            raise RuntimeError("TypedStorage(): too many positional arguments (expected a size or a sequence)")
        if not args:
            self._untyped_storage = UntypedStorage(device=device)
        elif isinstance(args[0], collections.abc.Sequence) and not isinstance(args[0], str):
            values = make_tensor(list(args[0]), dtype=self.dtype, device=device)
            self._untyped_storage = UntypedStorage._around(_memory_of(values._data, values._device), values._device,
                                                           False)
        elif isinstance(args[0], numbers.Integral) and not isinstance(args[0], bool):
            self._untyped_storage = UntypedStorage(int(args[0]) * self.dtype.itemsize, device=device)
        else:
            raise TypeError(f"TypedStorage(): argument type not recognized: {type(args[0]).__name__}")

    def _elements(self):
        """The storage's elements as a 1-D tensor of its dtype, sharing its memory."""
        return tensor_over(self._untyped_storage, self.dtype, 0, (self._size(),), (1,))

    def _size(self):
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def _wrapping(self, untyped):
        return TypedStorage(wrap_storage=untyped, dtype=self.dtype, _internal=True)

    @property
    def device(self):
        """The Device of the memory.

            >>> agnostic.FloatStorage(2).device
            device(type='cpu')
        """
        return self._untyped_storage.device

    @property
    def is_cuda(self):
        """True when the memory is on a CUDA device.

            >>> agnostic.FloatStorage(2).is_cuda
            False
        """
        return self._untyped_storage.is_cuda

    def untyped(self):
        """The ``UntypedStorage`` holding the bytes.

            >>> agnostic.FloatStorage(2).untyped().nbytes()
            8
        """
        return self._untyped_storage

    def size(self):
        """The number of elements.

            >>> agnostic.DoubleStorage(3).size()
            3
        """
        return self._size()

    def __len__(self):
        return self._size()

    def nbytes(self):
        """The size in bytes.

            >>> agnostic.DoubleStorage(3).nbytes()
            24
        """
        return self._untyped_storage.nbytes()

    def element_size(self):
        """The size of one element in bytes.

            >>> agnostic.HalfStorage(1).element_size()
            2
        """
        return self.dtype.itemsize

    def data_ptr(self):
        """The address of the first byte.

            >>> x = agnostic.zeros(2)
            >>> x.storage().data_ptr() == x.data_ptr()
            True
        """
        return self._untyped_storage.data_ptr()

    def get_device(self):
        """The CUDA device index, -1 on the CPU.

            >>> agnostic.FloatStorage(1).get_device()
            -1
        """
        return self._untyped_storage.get_device()

    def _wrapped_index(self, index):
        size = self._size()
        if not isinstance(index, numbers.Integral) or isinstance(index, bool):
            raise TypeError(f"can't index a {type(self).__name__} with {type(index).__name__}")
        if not -size <= index < size:
            raise IndexError(f"index {index} out of range for storage of size {size}")
        return int(index) % size

    def __getitem__(self, index):
        """The element at ``index`` as a Python number (slices are for UntypedStorage only, as in PyTorch).

            >>> agnostic.LongStorage([4, 5])[-1]
            5
        """
        if isinstance(index, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._elements()[self._wrapped_index(index)].item()

    def __setitem__(self, index, value):
        """Write an element (or a slice of them) in place.

            >>> s = agnostic.LongStorage([1, 2])
            >>> s[0] = 7
            >>> s.tolist()
            [7, 2]
        """
        if isinstance(value, (UntypedStorage, TypedStorage)):
            raise RuntimeError(f"cannot set item with value type {type(value).__name__}")
        if not isinstance(index, slice):
            index = self._wrapped_index(index)
        self._elements()[index] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self):
        """The elements as a list of Python numbers.

            >>> agnostic.IntStorage([1, 2]).tolist()
            [1, 2]
        """
        return self._elements().tolist()

    def fill_(self, value):
        """Set every element to ``value``; returns the storage.

            >>> agnostic.FloatStorage(2).fill_(3).tolist()
            [3.0, 3.0]
        """
        self._elements().fill_(value)
        return self

    def copy_(self, source, non_blocking=None):
        """Copy ``source``'s bytes (a storage of as many bytes) into this one; returns it.

            >>> agnostic.FloatStorage(2).copy_(agnostic.FloatStorage([1, 2])).tolist()
            [1.0, 2.0]
        """
        self._untyped_storage.copy_(source, non_blocking)
        return self

    def clone(self):
        """A copy in new memory.

            >>> agnostic.ShortStorage([3]).clone().tolist()
            [3]
        """
        return self._wrapping(self._untyped_storage.clone())

    def __copy__(self):
        return self.clone()

    def __deepcopy__(self, memo):
        return memo.setdefault(id(self), self.clone())

    def cpu(self):
        """The storage on the CPU (sharing the memory when already there).

            >>> agnostic.FloatStorage([1]).cpu().tolist()
            [1.0]
        """
        return self._wrapping(self._untyped_storage.cpu())

    def cuda(self, device=None, non_blocking=False):
        """A copy on a CUDA device.

            >>> agnostic.FloatStorage([1]).cuda().is_cuda  # doctest: +SKIP
            True
        """
        return self._wrapping(self._untyped_storage.cuda(device, non_blocking))

    def to(self, *, device, non_blocking=False):
        """The storage on ``device``.

            >>> agnostic.FloatStorage([1]).to(device="cpu").tolist()
            [1.0]
        """
        return self._wrapping(self._untyped_storage.to(device=device, non_blocking=non_blocking))

    def type(self, dtype=None, non_blocking=False):
        """The legacy class name without arguments (``'agnostic.FloatStorage'``).

            >>> agnostic.zeros(1, dtype=agnostic.float64).storage().type()
            'agnostic.DoubleStorage'
        """
        if dtype is not None:
            raise TypeError("TypedStorage.type(dtype): convert tensors instead (tensor.to(dtype))")
        legacy = legacy_storage_class(self.dtype, self.device)
        return f"{legacy.__module__}.{legacy.__name__}"

    def pickle_storage_type(self):
        """The legacy class name without its module (``'FloatStorage'``), as checkpoints record it.

            >>> agnostic.FloatStorage(1).pickle_storage_type()
            'FloatStorage'
        """
        return legacy_storage_class(self.dtype, as_device("cpu")).__name__

    def resize_(self, size):
        """Change the number of elements (see ``UntypedStorage.resize_``).

            >>> agnostic.LongStorage([1, 2, 3]).resize_(2).tolist()
            [1, 2]
        """
        self._untyped_storage.resize_(_check_size(size, "resize_") * self.dtype.itemsize)
        return self

    def resizable(self):
        """Whether ``resize_`` may give the storage new memory.

            >>> agnostic.FloatStorage(1).resizable()
            True
        """
        return self._untyped_storage.resizable()

    def is_shared(self):
        """Whether other processes can map this memory.

            >>> agnostic.FloatStorage(1).is_shared()
            False
        """
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        """Move the memory into shared memory (see ``UntypedStorage.share_memory_``); returns the storage.

            >>> agnostic.FloatStorage(1).share_memory_().is_shared()
            True
        """
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda"):
        """Whether the memory is page-locked.

            >>> agnostic.FloatStorage(1).is_pinned()
            False
        """
        return self._untyped_storage.is_pinned()

    def _to(self, dtype):
        """The elements converted to ``dtype``, in a new storage (PyTorch's ``storage.double()`` and the like)."""
        converted = self._elements().to(dtype)
        if converted.data_ptr() == self.data_ptr():
            converted = converted.clone()
        return TypedStorage(wrap_storage=UntypedStorage._of_tensor(converted), dtype=dtype, _internal=True)

    def __repr__(self):
        values = "".join(f" {value}\n" for value in self.tolist())
        return (f"{values}[agnostic.storage.TypedStorage(dtype={self.dtype}, device={self.device}) of size "
                f"{self._size()}]")

    def __reduce__(self):
        return (_rebuild_typed, (self._untyped_storage, str(self.dtype)))

    @classmethod
    def from_file(cls, filename, shared=False, size=0):
        """A storage of ``size`` elements (the default dtype's) mapped from ``filename`` (``agnostic.from_file``).

            >>> import os, tempfile
            >>> path = os.path.join(tempfile.mkdtemp(), "values.bin")
            >>> _ = open(path, "wb").write(bytes(8))
            >>> agnostic.FloatStorage.from_file(path, False, 2).tolist()
            [0.0, 0.0]
        """
        dtype = getattr(cls, "_legacy_dtype", None) or _dtypes.get_default_dtype()
        mapped = map_file(filename, shared, size * dtype.itemsize, dtype)
        return TypedStorage(wrap_storage=UntypedStorage._of_tensor(mapped), dtype=dtype, _internal=True)


def _rebuild_typed(untyped, dtype_name):
    return TypedStorage(wrap_storage=untyped, dtype=_dtypes.as_dtype(dtype_name), _internal=True)


def _conversion(dtype, name):
    def convert(self):
        return self._to(dtype)
    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = f"""The elements converted to {dtype}, in a new storage.

            >>> agnostic.IntStorage([1]).{name}().dtype
            {dtype}
        """
    return convert


for _name, _dtype in (("double", _dtypes.float64), ("float", _dtypes.float32), ("half", _dtypes.float16),
                      ("bfloat16", _dtypes.bfloat16), ("long", _dtypes.int64), ("int", _dtypes.int32),
                      ("short", _dtypes.int16), ("char", _dtypes.int8), ("byte", _dtypes.uint8),
                      ("bool", _dtypes.bool), ("complex_float", _dtypes.complex64),
                      ("complex_double", _dtypes.complex128)):
    setattr(TypedStorage, _name, _conversion(_dtype, _name))
del _name, _dtype


# ----- the legacy classes: FloatStorage(3), isinstance(tensor.storage(), FloatStorage) ----------------------------
class _LegacyStorageMeta(type):
    """Makes ``isinstance(storage, FloatStorage)`` true for any float32 CPU TypedStorage, as in PyTorch."""

    def __instancecheck__(cls, instance):
        if type(instance) is TypedStorage:
            return instance.dtype is cls._legacy_dtype and instance.device.type == cls._legacy_device_type
        return super().__instancecheck__(instance)


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    _legacy_dtype = None
    _legacy_device_type = "cpu"

    def __new__(cls, *args, wrap_storage=None, dtype=None, device=None):
        _warn_typed_storage_removal()
        if cls._legacy_dtype is None:
            raise RuntimeError("Only child classes of _LegacyStorage can be instantiated")
        if dtype is not None or device is not None:
            raise RuntimeError(f"{cls.__name__}(): keyword arguments 'dtype' and 'device' cannot be given")
        if wrap_storage is not None:
            if args:
                raise RuntimeError(f"{cls.__name__}(): no positional arguments should be given with 'wrap_storage'")
            if not isinstance(wrap_storage, UntypedStorage):
                raise TypeError(f"{cls.__name__}(): argument 'wrap_storage' must be UntypedStorage, but got "
                                f"{type(wrap_storage).__name__}")
            if wrap_storage.device.type != cls._legacy_device_type:
                raise RuntimeError(f"{cls.__name__}(): device of 'wrap_storage' must be {cls._legacy_device_type}, "
                                   f"but got {wrap_storage.device.type}")
            return TypedStorage(wrap_storage=wrap_storage, dtype=cls._legacy_dtype, _internal=True)
        if len(args) == 1 and not isinstance(args[0], (numbers.Integral, collections.abc.Sequence)):
            raise TypeError(f"{cls.__name__}(): argument type not recognized: {type(args[0]).__name__}")
        return TypedStorage(*args, dtype=cls._legacy_dtype, device=cls._legacy_device_type, _internal=True)


_LEGACY_NAMES = {_dtypes.float32: "FloatStorage", _dtypes.float64: "DoubleStorage", _dtypes.float16: "HalfStorage",
                 _dtypes.bfloat16: "BFloat16Storage", _dtypes.int64: "LongStorage", _dtypes.int32: "IntStorage",
                 _dtypes.int16: "ShortStorage", _dtypes.int8: "CharStorage", _dtypes.uint8: "ByteStorage",
                 _dtypes.bool: "BoolStorage", _dtypes.complex64: "ComplexFloatStorage",
                 _dtypes.complex128: "ComplexDoubleStorage"}
_LEGACY_CLASSES: dict = {}


def _legacy_class(dtype, device_type):
    name = _LEGACY_NAMES[dtype]
    module = "agnostic" if device_type == "cpu" else f"agnostic.{device_type}"
    made = _LegacyStorageMeta(name, (_LegacyStorage,), {
        "__module__": module, "_legacy_dtype": dtype, "_legacy_device_type": device_type,
        "__doc__": f"""The legacy storage class of {dtype} on the {device_type.upper()}, as ``torch.{name}``:
    ``{name}(size)`` or ``{name}(sequence)`` makes a ``TypedStorage`` of that dtype, and any such storage is an
    instance of it.

        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> isinstance(agnostic.zeros(1, dtype={dtype}).storage(), agnostic.{name})
        True
    """})
    _LEGACY_CLASSES[dtype, device_type] = made
    return made


def legacy_storage_class(dtype, device):
    """The legacy storage class (``agnostic.FloatStorage``, and for CUDA its ``agnostic.cuda`` twin) of a dtype and
    device, as ``Tensor.storage_type()`` gives."""
    if dtype not in _LEGACY_NAMES:
        raise RuntimeError(f"no legacy storage class for {dtype}")
    made = _LEGACY_CLASSES.get((dtype, device.type))
    return made if made is not None else _legacy_class(dtype, device.type)


FloatStorage = legacy_storage_class(_dtypes.float32, as_device("cpu"))
DoubleStorage = legacy_storage_class(_dtypes.float64, as_device("cpu"))
HalfStorage = legacy_storage_class(_dtypes.float16, as_device("cpu"))
BFloat16Storage = legacy_storage_class(_dtypes.bfloat16, as_device("cpu"))
LongStorage = legacy_storage_class(_dtypes.int64, as_device("cpu"))
IntStorage = legacy_storage_class(_dtypes.int32, as_device("cpu"))
ShortStorage = legacy_storage_class(_dtypes.int16, as_device("cpu"))
CharStorage = legacy_storage_class(_dtypes.int8, as_device("cpu"))
ByteStorage = legacy_storage_class(_dtypes.uint8, as_device("cpu"))
BoolStorage = legacy_storage_class(_dtypes.bool, as_device("cpu"))
ComplexFloatStorage = legacy_storage_class(_dtypes.complex64, as_device("cpu"))
ComplexDoubleStorage = legacy_storage_class(_dtypes.complex128, as_device("cpu"))

__all__ = ["TypedStorage", "UntypedStorage", "FloatStorage", "DoubleStorage", "HalfStorage", "BFloat16Storage",
           "LongStorage", "IntStorage", "ShortStorage", "CharStorage", "ByteStorage", "BoolStorage",
           "ComplexFloatStorage", "ComplexDoubleStorage"]
