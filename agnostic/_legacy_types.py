"""PyTorch's legacy tensor types (``agnostic.FloatTensor``, ``agnostic.cuda.LongTensor``...) and ``Tensor.type()``.

Each type is a constructor (``FloatTensor([1, 2])``, ``FloatTensor(2, 3)``) and works with ``isinstance``.
"""

from . import _dtypes
from ._device import CPU, Device
from ._tensor import TensorBase
from .ops import creation

_NAMES = {
    _dtypes.float32: "FloatTensor", _dtypes.float64: "DoubleTensor", _dtypes.float16: "HalfTensor",
    _dtypes.bfloat16: "BFloat16Tensor", _dtypes.uint8: "ByteTensor", _dtypes.int8: "CharTensor",
    _dtypes.int16: "ShortTensor", _dtypes.int32: "IntTensor", _dtypes.int64: "LongTensor",
    _dtypes.bool: "BoolTensor", _dtypes.complex64: "ComplexFloatTensor", _dtypes.complex128: "ComplexDoubleTensor",
}
_BY_NAME = {name: dtype for dtype, name in _NAMES.items()}


class _LegacyTensorType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, TensorBase) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __call__(cls, *args, device=None):
        target = device if device is not None else cls.device_type
        if len(args) == 1 and not isinstance(args[0], int):
            return creation.tensor(args[0], dtype=cls.dtype, device=target)
        return creation.empty(*args, dtype=cls.dtype, device=target)

    def __repr__(cls):
        return f"<class '{cls.__qualname__}'>"


_MODULE_PREFIX = {"cpu": "agnostic.", "cuda": "agnostic.cuda."}  # where each device type's legacy types live


def _make_types(device_type):
    prefix = _MODULE_PREFIX[device_type]
    return {
        name: _LegacyTensorType(name, (), {"dtype": dtype, "device_type": device_type,
                                           "__qualname__": prefix + name,
                                           "__doc__": _doc(prefix + name, dtype, device_type)})
        for dtype, name in _NAMES.items()
    }


def _doc(qualname, dtype, device_type):
    name = qualname.rsplit(".", 1)[1]
    torch_name = qualname.replace("agnostic.", "torch.", 1)
    where = "CUDA" if device_type == "cuda" else "CPU"
    doc = (f"Legacy {where} tensor type of dtype {dtype.name}, as ``{torch_name}``: ``{name}(data)`` copies ``data``\n"
           f"into a new {dtype.name} {where} tensor, ``{name}(*sizes)`` makes an uninitialized one, and\n"
           f"``isinstance(t, {name})`` tells whether a tensor has this dtype on a {where} device.\n\n"
           f"    >>> {qualname}.dtype\n"
           f"    agnostic.{dtype.name}\n"
           f"    >>> isinstance(agnostic.ones(2), {qualname})\n"
           f"    {dtype is _dtypes.float32 and device_type == 'cpu'}\n")
    if device_type == "cpu" and dtype is not _dtypes.bfloat16:  # bfloat16 tensors need ml_dtypes
        doc += (f"    >>> t = {qualname}([1, 0])\n"
                f"    >>> t.dtype, isinstance(t, {qualname})\n"
                f"    (agnostic.{dtype.name}, True)\n")
    return doc


cpu_types = _make_types("cpu")
cuda_types = _make_types("cuda")


def type_name(tensor):
    """The legacy type name of a tensor, e.g. ``'agnostic.cuda.FloatTensor'``."""
    return _MODULE_PREFIX[tensor.device.type] + _NAMES[tensor.dtype]


def parse_type(spec, current_device):
    """(device, dtype) that ``Tensor.type(spec)`` converts to: a legacy type, its name, or a dtype."""
    if isinstance(spec, _LegacyTensorType):
        device_type, dtype = spec.device_type, spec.dtype
    elif isinstance(spec, str) and spec.endswith("Tensor"):
        parts = spec.split(".")
        if parts[-1] not in _BY_NAME:
            raise ValueError(f"invalid type: {spec!r}; use a name such as 'agnostic.cuda.FloatTensor'")
        device_type, dtype = ("cuda" if "cuda" in parts[:-1] else "cpu"), _BY_NAME[parts[-1]]
    else:
        return None, _dtypes.as_dtype(spec)
    if device_type == current_device.type:
        return None, dtype
    return (CPU if device_type == "cpu" else Device("cuda")), dtype
