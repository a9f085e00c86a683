"""PyTorch's legacy tensor types (``agnostic.FloatTensor``, ``agnostic.cuda.LongTensor``...) and ``Tensor.type()``.

Each type is a constructor (``FloatTensor([1, 2])``, ``FloatTensor(2, 3)``) and works with ``isinstance``.
"""

from . import _dtypes
from ._device import CPU, Device

_NAMES = {
    _dtypes.float32: "FloatTensor", _dtypes.float64: "DoubleTensor", _dtypes.float16: "HalfTensor",
    _dtypes.bfloat16: "BFloat16Tensor", _dtypes.uint8: "ByteTensor", _dtypes.int8: "CharTensor",
    _dtypes.int16: "ShortTensor", _dtypes.int32: "IntTensor", _dtypes.int64: "LongTensor",
    _dtypes.bool: "BoolTensor", _dtypes.complex64: "ComplexFloatTensor", _dtypes.complex128: "ComplexDoubleTensor",
}
_BY_NAME = {name: dtype for dtype, name in _NAMES.items()}


class _LegacyTensorType(type):
    def __instancecheck__(cls, obj):
        from ._tensor import Tensor

        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == cls.device_type

    def __call__(cls, *args, device=None):
        from .ops import creation

        target = device if device is not None else ("cuda" if cls.device_type == "cuda" else "cpu")
        if len(args) == 1 and not isinstance(args[0], int):
            return creation.tensor(args[0], dtype=cls.dtype, device=target)
        return creation.empty(*args, dtype=cls.dtype, device=target)

    def __repr__(cls):
        return f"<class '{cls.__qualname__}'>"


def _make_types(device_type):
    prefix = "agnostic.cuda." if device_type == "cuda" else "agnostic."
    return {
        name: _LegacyTensorType(name, (), {"dtype": dtype, "device_type": device_type,
                                           "__qualname__": prefix + name,
                                           "__doc__": f"Legacy {device_type} tensor type of dtype {dtype.name}."})
        for dtype, name in _NAMES.items()
    }


cpu_types = _make_types("cpu")
cuda_types = _make_types("cuda")


def type_name(tensor):
    """The legacy type name of a tensor, e.g. ``'agnostic.cuda.FloatTensor'``."""
    prefix = "agnostic.cuda." if tensor.device.type == "cuda" else "agnostic."
    return prefix + _NAMES[tensor.dtype]


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
