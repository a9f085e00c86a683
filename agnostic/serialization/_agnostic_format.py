"""agnostic's first checkpoint format (agnostic <= 0.x): read, fully validated; written only for tests and tools.

Layout: an 8-byte little-endian header length, a UTF-8 JSON header padded with spaces so that the data section
starts 64-byte aligned, then the tensors' raw little-endian bytes, each 64-byte aligned, zero bytes between them.
The header holds ``format``, ``version``, ``tensors`` (``dtype``, ``shape``, ``device`` saved on, ``offsets``
[begin, end) into the data, ``requires_grad``, ``parameter``) and ``object``: the saved structure, where a JSON
scalar or list stands for itself and a JSON object is a tagged node: ``{"tensor": i}``, ``{"dict": [[key, value],
...], "ordered": bool}``, ``{"tuple": [...]}``, ``{"float": "nan" | "inf" | "-inf"}``, ``{"bytes": hex}``,
``{"dtype": name}``, ``{"device": text}``. The format has no checksum; the loader checks that the offsets tile
the data section exactly, so a shifted header or an edited offset is refused.
"""

import json
import math
import struct
import sys
from collections import OrderedDict

import numpy

from .. import _dtypes
from .._device import CPU, Device, as_device
from .._tensor import wrap
from .._tensor_classes import Tensor
from ..nn.parameter import Parameter
from ._common import CheckpointError, checked_numel, numpy_dtype

FORMAT = "agnostic"
VERSION = 1
ALIGN = 64
MAX_HEADER = 1 << 30
MAX_DEPTH = 200
_ENTRY_KEYS = {"dtype", "shape", "device", "offsets", "requires_grad", "parameter"}
_HEADER_KEYS = {"format", "version", "tensors", "object"}


def looks_like(data):
    """True when ``data`` starts as this format does (a length, then a JSON object naming the format)."""
    return len(data) >= 9 and data[8:9] == b"{" and b'"format"' in data[8:40]


# ----- writing (kept so tests can make files of this format) ------------------------------------------------------
class _Writer:
    def __init__(self):
        self.tensors, self.arrays, self.seen, self.keep, self.size = [], [], {}, [], 0

    def tensor(self, tensor):
        index = self.seen.get(id(tensor))
        if index is not None:
            return index
        array = tensor._host_array()
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        if sys.byteorder != "little":
            array = array.byteswap()
        begin = -(-self.size // ALIGN) * ALIGN
        end = begin + array.nbytes
        self.tensors.append({
            "dtype": tensor.dtype.name, "shape": list(array.shape), "device": str(tensor.device),
            "offsets": [begin, end], "requires_grad": bool(getattr(tensor, "requires_grad", False)),
            "parameter": isinstance(tensor, Parameter),
        })
        self.arrays.append((begin, array))
        self.size = end
        index = self.seen[id(tensor)] = len(self.tensors) - 1
        self.keep.append(tensor)
        return index

    def encode(self, value, depth=0):
        if depth > MAX_DEPTH:
            raise ValueError(f"objects nested deeper than {MAX_DEPTH} levels are not supported")
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
        raise TypeError(f"the agnostic format can't store {type(value).__name__}")


def encode(obj):
    """The bytes of ``obj`` in this format (what agnostic.save wrote before it wrote PyTorch's format)."""
    writer = _Writer()
    structure = writer.encode(obj)
    header = {"format": FORMAT, "version": VERSION, "tensors": writer.tensors, "object": structure}
    text = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    text += b" " * (-(8 + len(text)) % ALIGN)
    parts, position = [struct.pack("<Q", len(text)), text], 0
    for begin, array in writer.arrays:
        parts.append(b"\0" * (begin - position))
        parts.append(array.reshape(-1).view(numpy.uint8).tobytes())
        position = begin + array.nbytes
    return b"".join(parts)


# ----- reading ------------------------------------------------------------------------------------------------
def load(data, source, restore):
    """The object saved in ``data`` (this format), every length, offset and node checked before use."""
    def fail(reason):
        raise CheckpointError(f"agnostic.load: {source} is not a valid agnostic checkpoint ({reason}); it may be "
                              "truncated, corrupt, or not written by agnostic.save")

    if len(data) < 8:
        fail(f"{len(data)} bytes, shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", data[:8])
    if length > min(len(data) - 8, MAX_HEADER):
        fail(f"the header length at byte 0 claims {length} bytes but only {len(data) - 8} follow")
    try:
        header = json.loads(data[8:8 + length].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        fail(f"unreadable header at byte 8: {type(error).__name__}")
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        fail("no agnostic header at byte 8")
    if header.get("version") != VERSION:
        raise CheckpointError(f"agnostic.load: {source} has format version {header.get('version')!r}; this "
                              f"agnostic reads version {VERSION} (upgrade agnostic)")
    if (8 + length) % ALIGN:
        fail(f"the header length at byte 0 ({length}) doesn't end the header on a {ALIGN}-byte boundary")
    if set(header) != _HEADER_KEYS:
        fail(f"header keys {sorted(header)}, expected {sorted(_HEADER_KEYS)}")
    body = memoryview(data)[8 + length:]
    try:
        entries = header["tensors"]
        if not isinstance(entries, list):
            raise CheckpointError("'tensors' is not a list")
        tensors = [_LazyTensor(entry, index, body, restore, source) for index, entry in enumerate(entries)]
        _check_tiling(tensors, body, 8 + length)
        result = _decode(header["object"], tensors, 0)
    except CheckpointError as error:
        if str(error).startswith("agnostic.load"):
            raise
        fail(str(error))
    except RecursionError:
        fail("structure nested too deeply")
    unused = [index for index, tensor in enumerate(tensors) if tensor.value is None]
    if unused:
        fail(f"tensor entries {unused[:5]} are never referenced")
    return result


def _check_tiling(tensors, body, start):
    """The tensors' bytes must tile the data section: aligned, in order, zero padding only, nothing after."""
    position = 0
    for index, tensor in sorted(enumerate(tensors), key=lambda pair: pair[1].offsets[0]):
        begin, end = tensor.offsets
        if begin % ALIGN or begin < position or begin - position >= ALIGN:
            raise CheckpointError(f"tensor {index} starts at data byte {begin} (file byte {start + begin}); the "
                                  f"previous data ends at {position} and tensors start {ALIGN}-byte aligned")
        if any(body[position:begin]):
            raise CheckpointError(f"non-zero padding at file byte {start + position}")
        position = end
    if position != len(body):
        raise CheckpointError(f"{len(body) - position} bytes after the last tensor (file byte {start + position})")


class _LazyTensor:
    """One header entry, validated on creation and built (once) on first reference."""

    def __init__(self, entry, index, body, restore, source):
        if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
            raise CheckpointError(f"tensor entry {index} is not an object with keys {sorted(_ENTRY_KEYS)}")
        name = entry["dtype"]
        dtype = _dtypes._BY_NAME.get(name) if isinstance(name, str) else None
        if dtype is None or dtype.name != name:
            raise CheckpointError(f"tensor entry {index} has unknown dtype {name!r}")
        shape, offsets, device = entry["shape"], entry["offsets"], entry["device"]
        if not isinstance(shape, list) or len(shape) > 64:
            raise CheckpointError(f"tensor entry {index} has bad shape {shape!r}")
        numel = checked_numel(shape, dtype.itemsize, source, f"tensor entry {index}")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)
                and 0 <= offsets[0] <= offsets[1] <= len(body)):
            raise CheckpointError(f"tensor entry {index} has bytes {offsets!r} outside the {len(body)}-byte data "
                                  "section")
        if offsets[1] - offsets[0] != numel * dtype.itemsize:
            raise CheckpointError(f"tensor entry {index} of shape {shape} and dtype {dtype.name} doesn't fill "
                                  f"bytes {offsets}")
        if not isinstance(device, str):
            raise CheckpointError(f"tensor entry {index} has bad device {device!r}")
        if type(entry["requires_grad"]) is not bool or type(entry["parameter"]) is not bool:
            raise CheckpointError(f"tensor entry {index} has non-boolean requires_grad or parameter")
        self.entry, self.dtype, self.shape, self.offsets = entry, dtype, shape, offsets
        self.body, self.restore, self.source = body, restore, source
        self.value = None

    def get(self):
        if self.value is None:
            begin, end = self.offsets
            array = numpy.frombuffer(self.body[begin:end], numpy_dtype(self.dtype, self.source)).copy()
            if sys.byteorder != "little":
                array = array.byteswap()
            tensor = self.restore(wrap(array.reshape(self.shape), CPU), self.entry["device"])
            if self.entry["parameter"]:
                tensor = Parameter(tensor, requires_grad=self.entry["requires_grad"])
            elif self.entry["requires_grad"]:
                tensor = tensor.requires_grad_(True)
            self.value = tensor
        return self.value


def _decode(node, tensors, depth):
    if depth > MAX_DEPTH:
        raise CheckpointError("structure nested too deeply")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_decode(item, tensors, depth + 1) for item in node]
    if not isinstance(node, dict):
        raise CheckpointError(f"unknown node {type(node).__name__}")
    keys = set(node)
    if keys == {"tensor"}:
        index = node["tensor"]
        if type(index) is not int or not 0 <= index < len(tensors):
            raise CheckpointError(f"tensor reference {index!r} out of range")
        return tensors[index].get()
    if keys == {"dict", "ordered"} and isinstance(node["dict"], list) and type(node["ordered"]) is bool:
        items = node["dict"]
        if not all(isinstance(i, list) and len(i) == 2 for i in items):
            raise CheckpointError("bad dict node")
        pairs = [(_decode(k, tensors, depth + 1), _decode(v, tensors, depth + 1)) for k, v in items]
        try:
            return OrderedDict(pairs) if node["ordered"] else dict(pairs)
        except TypeError:
            raise CheckpointError("unhashable dict key") from None
    if keys == {"tuple"} and isinstance(node["tuple"], list):
        return tuple(_decode(item, tensors, depth + 1) for item in node["tuple"])
    if keys == {"float"} and node["float"] in ("nan", "inf", "-inf"):
        return float(node["float"])
    if keys == {"bytes"} and isinstance(node["bytes"], str):
        try:
            return bytes.fromhex(node["bytes"])
        except ValueError:
            raise CheckpointError("bad bytes node") from None
    if keys == {"dtype"} and node["dtype"] in _dtypes._BY_NAME:
        return _dtypes._BY_NAME[node["dtype"]]
    if keys == {"device"} and isinstance(node["device"], str):
        try:
            return as_device(node["device"])
        except (RuntimeError, ValueError, TypeError):
            raise CheckpointError(f"bad device {node['device']!r}") from None
    raise CheckpointError(f"unknown node with keys {sorted(keys)}")
