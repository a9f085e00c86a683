"""save/load: tensors and nested containers in a safetensors-style file that runs no code when loaded (no pickle).

Layout: an 8-byte little-endian header length, a UTF-8 JSON header, then the tensors' raw little-endian bytes.
The header holds ``tensors`` (``dtype``, ``shape``, ``device`` saved on, ``offsets`` [begin, end) into the data,
``requires_grad``, ``parameter``) and ``object``: the saved structure, where a JSON scalar or list stands for itself
and a JSON object is a tagged node: ``{"tensor": i}``, ``{"dict": [[key, value], ...], "ordered": bool}``,
``{"tuple": [...]}``, ``{"float": "nan" | "inf" | "-inf"}``, ``{"bytes": hex}``, ``{"dtype": name}``,
``{"device": text}``. The same tensor object saved twice loads as one object. Loading only ever builds tensors,
dicts, lists, tuples, numbers, strings, bytes, None, dtypes and devices.
"""

import json
import math
import os
import struct
import sys
from collections import OrderedDict

import numpy

from . import _backend, _dtypes
from ._device import CPU, Device, as_device
from ._tensor import wrap
from ._tensor_classes import Tensor
from .nn.parameter import Parameter

_FORMAT = "agnostic"
_VERSION = 1
_ALIGN = 64
_MAX_HEADER = 1 << 30
_MAX_DEPTH = 200


class _Writer:
    def __init__(self):
        self.tensors = []  # header entries
        self.arrays = []  # host arrays, in order
        self.seen = {}  # id(tensor) -> index
        self.keep = []  # keeps saved tensors alive so their ids stay unique while encoding
        self.size = 0

    def tensor(self, tensor):
        index = self.seen.get(id(tensor))
        if index is not None:
            return index
        array = tensor._host_array()
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # (numpy.ascontiguousarray would turn a 0-dim array into a 1-dim one)
        if sys.byteorder != "little":
            array = array.byteswap()
        begin = -(-self.size // _ALIGN) * _ALIGN
        end = begin + array.nbytes
        self.tensors.append({
            "dtype": tensor.dtype.name, "shape": list(array.shape), "device": str(tensor.device),
            "offsets": [begin, end], "requires_grad": bool(getattr(tensor, "requires_grad", False)),
            "parameter": _is_parameter(tensor),
        })
        self.arrays.append((begin, array))
        self.size = end
        index = self.seen[id(tensor)] = len(self.tensors) - 1
        self.keep.append(tensor)
        return index

    def encode(self, value, depth=0):
        if depth > _MAX_DEPTH:
            raise ValueError(f"agnostic.save: objects nested deeper than {_MAX_DEPTH} levels are not supported")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if math.isfinite(value):
                return float(value)
            return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if isinstance(value, Tensor):
            return {"tensor": self.tensor(value)}
        if isinstance(value, dict):
            items = [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()]
            return {"dict": items, "ordered": isinstance(value, OrderedDict)}
        if isinstance(value, list):
            return [self.encode(v, depth + 1) for v in value]
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v, depth + 1) for v in value]}
        if isinstance(value, (bytes, bytearray)):
            return {"bytes": bytes(value).hex()}
        if isinstance(value, _dtypes.dtype):
            return {"dtype": value.name}
        if isinstance(value, Device):
            return {"device": str(value)}
        if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
            return self.encode(value.item(), depth)
        raise TypeError(
            f"agnostic.save: can't save an object of type {type(value).__module__}.{type(value).__qualname__}; "
            "supported: tensors, dicts, lists, tuples, str, bytes, int, float, bool, None, dtypes and devices "
            "(the format stores no code: save a module's or optimizer's state_dict(), not the object)")


def _is_parameter(tensor):
    nn = sys.modules.get("agnostic.nn")
    parameter = getattr(nn, "Parameter", None)
    return parameter is not None and isinstance(tensor, parameter)


def save(obj, f):
    """Save ``obj`` (tensors, state dicts, nested dicts/lists/tuples of them, numbers, strings, None) to ``f``: a
    path (str or ``os.PathLike``) or a writable binary file object. Tensors keep their dtype, shape and the device
    they were saved from (``load`` restores them there unless ``map_location`` says otherwise).

        >>> import io
        >>> buffer = io.BytesIO()
        >>> agnostic.save({"weight": agnostic.ones(2, 2), "step": 10}, buffer)
        >>> _ = buffer.seek(0)
        >>> agnostic.load(buffer)
        {'weight': tensor([[1., 1.],
                [1., 1.]]), 'step': 10}
    """
    writer = _Writer()
    structure = writer.encode(obj)
    header = {"format": _FORMAT, "version": _VERSION, "tensors": writer.tensors, "object": structure}
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % _ALIGN)  # the data section starts aligned
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as stream:
            _write(stream, text, writer)
    else:
        _write(f, text, writer)


def _write(stream, header, writer):
    stream.write(struct.pack("<Q", len(header)))
    stream.write(header)
    position = 0
    for begin, array in writer.arrays:
        if begin > position:
            stream.write(b"\0" * (begin - position))
        stream.write(array.reshape(-1).view(numpy.uint8))
        position = begin + array.nbytes


# ----- loading ----------------------------------------------------------------------------------------------------
class _Corrupt(RuntimeError):
    pass


def _fail(source, reason):
    raise RuntimeError(f"agnostic.load: {source} is not a valid agnostic checkpoint ({reason}); it may be truncated, "
                       "corrupt, or not written by agnostic.save")


def _read_all(f):
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return stream.read(), repr(os.fspath(f))
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"agnostic.load: the file object must be opened in binary mode, got {type(data).__name__}")
    return bytes(data), "the file object"


def load(f, map_location=None, *, weights_only=None, mmap=None):
    """Load what ``save`` wrote, from a path or a readable binary file object. Nothing in the file is executed.

    ``map_location`` (as in PyTorch) places each tensor: None restores the saved device (a clear error when it is a
    CUDA device this machine lacks); a device or string sends every tensor there; a dict remaps saved device
    strings (``{'cuda:1': 'cuda:0'}``); a callable ``(cpu_tensor, saved_location) -> tensor`` decides, None meaning
    the default. ``weights_only`` and ``mmap`` are accepted for PyTorch compatibility (loading is always safe).

        >>> import io
        >>> buffer = io.BytesIO()
        >>> agnostic.save([agnostic.arange(3), "note"], buffer)
        >>> _ = buffer.seek(0)
        >>> agnostic.load(buffer, map_location="cpu")
        [tensor([0, 1, 2]), 'note']
    """
    data, source = _read_all(f)
    if len(data) < 8:
        _fail(source, f"{len(data)} bytes, shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", data[:8])
    if length > min(len(data) - 8, _MAX_HEADER):
        _fail(source, f"the header claims {length} bytes but only {len(data) - 8} follow")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        _fail(source, f"unreadable header: {type(error).__name__}")
    if not isinstance(header, dict) or header.get("format") != _FORMAT:
        _fail(source, "no agnostic header")
    if header.get("version") != _VERSION:
        raise RuntimeError(f"agnostic.load: {source} has format version {header.get('version')!r}; this agnostic "
                           f"reads version {_VERSION} (upgrade agnostic)")
    body = memoryview(data)[8 + length:]
    restore = _placement(map_location)
    try:
        entries = header.get("tensors")
        if not isinstance(entries, list):
            raise _Corrupt("'tensors' is not a list")
        tensors = [_LazyTensor(entry, body, restore) for entry in entries]
        return _decode(header.get("object"), tensors, 0)
    except _Corrupt as error:
        _fail(source, str(error))
    except RecursionError:
        _fail(source, "structure nested too deeply")


class _LazyTensor:
    """One header entry, validated on creation and built (once) on first reference."""

    def __init__(self, entry, body, restore):
        if not isinstance(entry, dict):
            raise _Corrupt("a tensor entry is not an object")
        dtype = _dtypes._BY_NAME.get(entry.get("dtype")) if isinstance(entry.get("dtype"), str) else None
        shape, offsets, device = entry.get("shape"), entry.get("offsets"), entry.get("device")
        if dtype is None:
            raise _Corrupt(f"unknown dtype {entry.get('dtype')!r}")
        if not (isinstance(shape, list) and len(shape) <= 64 and all(type(s) is int and 0 <= s < 2 ** 62
                                                                     for s in shape)):
            raise _Corrupt(f"bad shape {shape!r}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= len(body)):
            raise _Corrupt(f"tensor bytes {offsets!r} outside the {len(body)}-byte data section")
        if offsets[1] - offsets[0] != math.prod(shape) * dtype.itemsize:
            raise _Corrupt(f"tensor of shape {shape} and dtype {dtype.name} doesn't fill bytes {offsets}")
        if not isinstance(device, str):
            raise _Corrupt(f"bad device {device!r}")
        self.entry, self.dtype, self.shape, self.body, self.restore = entry, dtype, shape, body, restore
        self.value = None

    def get(self):
        if self.value is None:
            begin, end = self.entry["offsets"]
            array = numpy.frombuffer(self.body[begin:end], self.dtype.numpy_dtype).copy()  # writable and aligned
            if sys.byteorder != "little":
                array = array.byteswap()
            array = array.reshape(self.shape)
            tensor = self.restore(wrap(array, CPU), self.entry["device"])
            self.value = _with_grad_flags(tensor, self.entry)
        return self.value


def _with_grad_flags(tensor, entry):
    if entry.get("parameter") is True:
        return Parameter(tensor, requires_grad=entry.get("requires_grad") is True)
    if entry.get("requires_grad") is True and hasattr(tensor, "requires_grad_"):
        return tensor.requires_grad_(True)
    return tensor


def _decode(node, tensors, depth):
    if depth > _MAX_DEPTH:
        raise _Corrupt("structure nested too deeply")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(item, tensors, depth + 1) for item in node]
    if not isinstance(node, dict) or len(node) not in (1, 2):
        raise _Corrupt(f"unknown node {type(node).__name__}")
    if "tensor" in node:
        index = node["tensor"]
        if type(index) is not int or not 0 <= index < len(tensors):
            raise _Corrupt(f"tensor reference {index!r} out of range")
        return tensors[index].get()
    if "dict" in node:
        items = node["dict"]
        if not isinstance(items, list) or not all(isinstance(i, list) and len(i) == 2 for i in items):
            raise _Corrupt("bad dict node")
        pairs = [(_decode(k, tensors, depth + 1), _decode(v, tensors, depth + 1)) for k, v in items]
        try:
            return OrderedDict(pairs) if node.get("ordered") is True else dict(pairs)
        except TypeError:
            raise _Corrupt("unhashable dict key") from None
    if "tuple" in node and isinstance(node["tuple"], list):
        return tuple(_decode(item, tensors, depth + 1) for item in node["tuple"])
    if node.get("float") in ("nan", "inf", "-inf"):
        return float(node["float"])
    if "bytes" in node and isinstance(node["bytes"], str):
        try:
            return bytes.fromhex(node["bytes"])
        except ValueError:
            raise _Corrupt("bad bytes node") from None
    if "dtype" in node and node["dtype"] in _dtypes._BY_NAME:
        return _dtypes._BY_NAME[node["dtype"]]
    if "device" in node and isinstance(node["device"], str):
        try:
            return as_device(node["device"])
        except (RuntimeError, ValueError, TypeError):
            raise _Corrupt(f"bad device {node['device']!r}") from None
    raise _Corrupt(f"unknown node with keys {sorted(node)}")


# ----- map_location -------------------------------------------------------------------------------------------
def _placement(map_location):
    """``restore(cpu_tensor, saved_location) -> tensor`` for ``map_location``, as PyTorch interprets it."""
    if map_location is None:
        return _default_restore
    if isinstance(map_location, (str, Device)):
        target = as_device(map_location)
        return lambda tensor, location: _to(tensor, target, location)
    if isinstance(map_location, dict):
        mapping = {str(k): str(v) for k, v in map_location.items()}
        return lambda tensor, location: _default_restore(tensor, mapping.get(location, location))
    if callable(map_location):
        def restore(tensor, location):
            result = map_location(tensor, location)
            if result is None:
                return _default_restore(tensor, location)
            if not isinstance(result, Tensor):
                raise TypeError(f"agnostic.load: map_location returned {type(result).__name__}, expected a Tensor "
                                "or None")
            return result
        return restore
    raise TypeError(f"agnostic.load: map_location must be None, a device, a string, a dict or a callable, got "
                    f"{type(map_location).__name__}")


def _default_restore(tensor, location):
    try:
        device = as_device(location)
    except (RuntimeError, ValueError, TypeError):
        raise RuntimeError(f"agnostic.load: unknown saved location {location!r}; pass map_location to place the "
                           "tensors") from None
    return _to(tensor, device, location)


def _to(tensor, device, location):
    if not device.backend.host:
        count = _backend.cuda_device_count()
        if count == 0:
            raise RuntimeError(
                f"Attempting to deserialize object on a CUDA device ({location}) but CUDA is not available on this "
                "machine. If you are running on a CPU-only machine, please use agnostic.load with "
                "map_location='cpu' (or map_location=agnostic.device('cpu')) to map your storages to the CPU.")
        if device.index is not None and device.index >= count:
            raise RuntimeError(
                f"Attempting to deserialize object on CUDA device {device.index} but agnostic.cuda.device_count() "
                f"is {count}. Please use agnostic.load with map_location to map your storages to an existing "
                "device (for example map_location={'" + str(device) + "': 'cuda:0'}).")
    return tensor.to(device)


__all__ = ["save", "load"]
