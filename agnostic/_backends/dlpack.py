"""DLPack's C structures as ctypes sees them: where a capsule's tensor lives, its element type and flags, and how to
ask a producer for a capsule with the newest keywords it takes. The backends' DLPack import and export build on it.

A capsule is a ``PyCapsule`` named ``"dltensor"`` (DLPack 0.x, a ``DLManagedTensor``) or ``"dltensor_versioned"``
(DLPack 1.x, a ``DLManagedTensorVersioned``, which adds a version and flags); a consumer renames it ``"used_..."``.
"""

import ctypes
import enum


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (``dlpack.h``), as ``__dlpack_device__`` reports them.

        >>> from agnostic._backends.dlpack import DLDeviceType
        >>> DLDeviceType.kDLCUDA == 2
        True
    """

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


# Memory the CPU reads (pinned host memory included), and memory a CUDA device computes on.
_HOST_MEMORY = frozenset({DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost})
_CUDA_MEMORY = frozenset({DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged})
CPU_DEVICE = (DLDeviceType.kDLCPU, 0)

# DLDataTypeCode values and DLPack 1.x flags.
UNSIGNED_INTEGER = 1
BFLOAT = 4
IS_COPIED = 1 << 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _ManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_LAYOUTS = {b"dltensor": _ManagedTensor, b"dltensor_versioned": _ManagedTensorVersioned}


def is_capsule(obj):
    """True for a ``PyCapsule`` (what ``__dlpack__`` and the legacy ``to_dlpack`` return)."""
    return type(obj).__name__ == "PyCapsule"


def _managed(capsule):
    """The capsule's ``DLManagedTensor`` or ``DLManagedTensorVersioned`` (a view of its C memory)."""
    name = _capsule_name(capsule)
    layout = _LAYOUTS.get(name)
    if layout is None:
        if name and name.startswith(b"used_"):
            raise BufferError("this DLPack capsule was already imported: a capsule can be consumed only once; ask "
                              "its producer for a new one (x.__dlpack__())")
        raise TypeError(f"expected a DLPack capsule ('dltensor' or 'dltensor_versioned'), got a capsule named "
                        f"{name!r}")
    return layout.from_address(_capsule_pointer(capsule, name))


def capsule_device(capsule):
    """``(DLDeviceType, index)`` of the memory a capsule's tensor lives in."""
    device = _managed(capsule).dl_tensor.device
    return _device_type(device.device_type), device.device_id


def capsule_dtype(capsule):
    """``(code, bits, lanes)`` of a capsule's element type (``DLDataType``)."""
    dtype = _managed(capsule).dl_tensor.dtype
    return dtype.code, dtype.bits, dtype.lanes


def retype(capsule, code, bits):
    """Relabel a not yet consumed capsule's elements (same width): how bfloat16 crosses NumPy, whose DLPack has no
    bfloat16, as the uint16 of the same bits."""
    _managed(capsule).dl_tensor.dtype.code = code
    _managed(capsule).dl_tensor.dtype.bits = bits


def mark_copied(capsule):
    """Set DLPack 1.x's ``IS_COPIED`` flag (the producer made a copy for this capsule); nothing for 0.x capsules."""
    managed = _managed(capsule)
    if isinstance(managed, _ManagedTensorVersioned):
        managed.flags |= IS_COPIED


def _device_type(value):
    try:
        return DLDeviceType(value)
    except ValueError:
        return value


def device_of(dl_device):
    """``("cpu", None)`` or ``("cuda", index)``: where agnostic keeps memory of DLPack device ``dl_device``; other
    device types are refused with a BufferError."""
    device_type, index = dl_device
    if device_type in _HOST_MEMORY:
        return "cpu", None
    if device_type in _CUDA_MEMORY:
        return "cuda", int(index)
    name = getattr(_device_type(device_type), "name", device_type)
    raise BufferError(f"can't import DLPack memory of device type {name} (device {index}): agnostic takes CPU "
                      "(kDLCPU, kDLCUDAHost) and CUDA (kDLCUDA, kDLCUDAManaged) memory; copy it to one of those in "
                      "its own library first")


def producer_device(producer):
    """``__dlpack_device__()`` of an exporting object, or the device of a capsule."""
    if is_capsule(producer):
        return capsule_device(producer)
    if not hasattr(producer, "__dlpack_device__"):
        raise TypeError(f"from_dlpack() expects an object with __dlpack__ and __dlpack_device__ (a tensor or array "
                        f"of NumPy, CuPy, PyTorch, JAX...) or a DLPack capsule, got {type(producer).__name__}")
    return producer.__dlpack_device__()


def request_capsule(producer, *, stream=None, dl_device=None, copy=None):
    """``(capsule, copied)``: ``producer.__dlpack__`` called with the newest keywords it takes (DLPack 1.x first,
    then without ``max_version``, ``copy``, ``dl_device``, as PyTorch's consumer does); ``copied`` is False when a
    requested ``copy=True`` is still to be made by the consumer."""
    keywords = {"stream": stream, "max_version": (1, 0), "dl_device": dl_device, "copy": copy}
    for dropped in ("max_version", "copy", "dl_device"):
        try:
            return producer.__dlpack__(**keywords), copy is not True or "copy" in keywords
        except TypeError:
            if dropped == "copy" and copy is False:
                raise
            del keywords[dropped]
    return producer.__dlpack__(**keywords), copy is not True


_set_capsule_name = ctypes.pythonapi.PyCapsule_SetName
_set_capsule_name.restype, _set_capsule_name.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# DLDataTypeCode -> the array interface's type letter (bfloat16 is read as the uint16 of its bits)
_TYPE_LETTERS = {0: "i", 1: "u", 2: "f", BFLOAT: "u", 5: "c", 6: "b"}


def is_legacy(capsule):
    """True for a DLPack 0.x capsule (``"dltensor"``), which has no read-only flag."""
    return _capsule_name(capsule) == b"dltensor"


class LegacyCapsuleMemory:
    """The host memory of a consumed DLPack 0.x capsule, as an ``__array_interface__`` NumPy reads writable (NumPy's
    own ``from_dlpack`` makes such arrays read-only; PyTorch's consumers write through them). The capsule's deleter
    runs when the last array over this memory is gone."""

    def __init__(self, capsule):
        managed = _managed(capsule)
        tensor = managed.dl_tensor
        shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        itemsize = tensor.dtype.bits // 8
        strides = None if not tensor.strides else tuple(tensor.strides[i] * itemsize for i in range(tensor.ndim))
        letter = _TYPE_LETTERS.get(tensor.dtype.code)
        if letter is None or tensor.dtype.lanes != 1:
            raise BufferError(f"can't import DLPack data type code {tensor.dtype.code} ({tensor.dtype.bits} bits, "
                              f"{tensor.dtype.lanes} lanes)")
        self.__array_interface__ = {
            "shape": shape, "strides": strides, "typestr": f"|{letter}{itemsize}", "version": 3,
            "data": ((tensor.data or 0) + tensor.byte_offset, False),
        }
        self._deleter = managed.deleter
        self._address = ctypes.addressof(managed)
        _set_capsule_name(capsule, b"used_dltensor")  # consumed: its destructor leaves the deleter to us

    def __del__(self):
        if self._deleter:
            _DELETER(self._deleter)(self._address)


class CapsuleProducer:
    """A capsule dressed as an exporting object, for consumers (``numpy.from_dlpack``) that take only those."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **keywords):
        """The capsule (the keywords were the consumer's to ask, and the producer has answered them)."""
        return self.capsule

    def __dlpack_device__(self):
        """Where the capsule's memory lives."""
        return capsule_device(self.capsule)
