"""safetensors files for agnostic tensors, with the names of ``safetensors.torch``, through the safetensors library.

``save_file``/``save`` take a flat dict of names to tensors (contiguous, not sharing memory: refused as
``safetensors.torch`` refuses them) and ``load_file``/``load`` give one back, tensors on ``device``; the files are
the ones ``safetensors.torch`` and Hugging Face tools read and write. bfloat16 is stored as safetensors' ``BF16``;
complex128 has no safetensors dtype and is refused.

Nested state (an optimizer's ``state_dict()``, a training checkpoint) goes through ``save_state_file`` /
``load_state_file``: each tensor is stored under its path in the structure, keys joined by ``.``
(``state.0.exp_avg``), and the structure itself is kept as JSON in the header metadata under
``"agnostic.structure"``: a JSON scalar or list stands for itself, and an object is a tagged node
``{"tensor": name}``, ``{"dict": [[key, value], ...]}``, ``{"tuple": [...]}`` or ``{"float": "nan"|"inf"|"-inf"}``.
Other tools see the tensors under their flattened names and ignore the structure.
"""

import json
import math

import numpy
import safetensors

from .. import _dtypes
from .._device import CPU, as_device
from .._tensor import wrap
from .._tensor_classes import Tensor
from ..serialization._common import CheckpointError, numpy_dtype, read_whole

STRUCTURE_KEY = "agnostic.structure"
_NAMES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
          "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "C64": "complex64"}


def _specs(tensors, metadata):
    if not isinstance(tensors, dict) or not all(isinstance(k, str) and isinstance(v, Tensor)
                                                for k, v in tensors.items()):
        raise ValueError("safetensors stores a flat dict of str names to tensors; for nested state (an optimizer's "
                         "state_dict) use agnostic.utils.safetensors.save_state_file")
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError("metadata must be a dict of str to str")
    spans = []
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It "
                             "either means you are trying to save tensors which are reference of each other in "
                             "which case it's recommended to save only the full tensors, and reslice at load time, "
                             "or simply call `.contiguous()` on your tensor to pack it before saving.")
        if tensor.dtype is _dtypes.complex128:
            raise ValueError(f"tensor {name!r} is complex128, which safetensors can't store")
        if tensor.numel():
            start = tensor.data_ptr()
            spans.append((start, start + tensor.nbytes, name))
    spans.sort()
    shared = sorted({n for (s1, e1, n1), (s2, e2, n2) in zip(spans, spans[1:]) if s2 < e1 for n in (n1, n2)})
    if shared:
        raise RuntimeError(f"Some tensors share memory, this will lead to duplicate memory on disk and potential "
                           f"differences when loading them again: {[shared]}. Save copies (.clone()) of them.")
    arrays = {name: numpy.ascontiguousarray(tensor._host_array()).reshape(-1) for name, tensor in tensors.items()}
    if hasattr(safetensors, "TensorSpec"):  # safetensors >= 0.8 takes pointers to memory kept alive by `arrays`
        specs = {name: safetensors.TensorSpec(dtype=tensors[name].dtype.name, shape=list(tensors[name].shape),
                                              data_ptr=array.ctypes.data, data_len=array.nbytes)
                 for name, array in arrays.items()}
    else:
        specs = {name: {"dtype": tensors[name].dtype.name, "shape": list(tensors[name].shape),
                        "data": array.view(numpy.uint8).tobytes()} for name, array in arrays.items()}
    return specs, arrays


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding ``tensors`` (a dict of names to tensors) and ``metadata``.

        >>> data = agnostic.utils.safetensors.save({"w": agnostic.ones(2)})
        >>> agnostic.utils.safetensors.load(data)
        {'w': tensor([1., 1.])}
    """
    specs, arrays = _specs(tensors, metadata)
    result = bytes(safetensors.serialize(specs, metadata=metadata))
    del arrays
    return result


def save_file(tensors, filename, metadata=None):
    """Write ``tensors`` (a dict of names to tensors) and text ``metadata`` to the safetensors file ``filename``.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> agnostic.utils.safetensors.save_file({"w": agnostic.arange(3)}, path)
        >>> agnostic.utils.safetensors.load_file(path)
        {'w': tensor([0, 1, 2])}
    """
    data = save(tensors, metadata)
    with open(filename, "wb") as stream:
        stream.write(data)


def _decode(data, source, device):
    try:
        entries = safetensors.deserialize(data)
    except Exception as error:  # safetensors raises SafetensorError (and Rust panics) for damaged files
        raise CheckpointError(f"agnostic.utils.safetensors: {source} is not a valid safetensors file "
                              f"({type(error).__name__}: {error})") from None
    target = as_device(device)
    result = {}
    for name, entry in entries:
        dtype_name = _NAMES.get(entry["dtype"], entry["dtype"])
        dtype = _dtypes._BY_NAME.get(dtype_name)
        if dtype is None or dtype.name != dtype_name:
            raise CheckpointError(f"agnostic.utils.safetensors: {source}: tensor {name!r} has dtype "
                                  f"{entry['dtype']!r}, which agnostic doesn't support")
        array = numpy.frombuffer(bytes(entry["data"]), numpy_dtype(dtype, source)).astype(
            numpy_dtype(dtype, source).newbyteorder("<"), copy=False).copy()
        if math.prod(entry["shape"]) != array.size:
            raise CheckpointError(f"agnostic.utils.safetensors: {source}: tensor {name!r} has "
                                  f"{array.size} elements for shape {entry['shape']}")
        result[name] = wrap(array.reshape(entry["shape"]), CPU).to(target)
    return result


def load(data, device="cpu"):
    """The dict of tensors in the safetensors bytes ``data``, on ``device``.

        >>> agnostic.utils.safetensors.load(agnostic.utils.safetensors.save({"b": agnostic.zeros(1)}))
        {'b': tensor([0.])}
    """
    return _decode(bytes(data), "the data", device)


def load_file(filename, device="cpu"):
    """The dict of tensors in the safetensors file ``filename``, on ``device``.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "b.safetensors")
        >>> agnostic.utils.safetensors.save_file({"b": agnostic.tensor([True])}, path)
        >>> agnostic.utils.safetensors.load_file(path, device="cpu")
        {'b': tensor([True])}
    """
    data, source = read_whole(filename)
    return _decode(data, source, device)


def metadata_of(filename):
    """The text metadata of the safetensors file ``filename`` (a dict, empty when it has none).

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "m.safetensors")
        >>> agnostic.utils.safetensors.save_file({"b": agnostic.zeros(1)}, path, metadata={"step": "3"})
        >>> agnostic.utils.safetensors.metadata_of(path)
        {'step': '3'}
    """
    data, source = read_whole(filename)
    _decode(data, source, "cpu")  # validates the whole file
    length = int.from_bytes(data[:8], "little")
    return dict(json.loads(data[8:8 + length]).get("__metadata__") or {})


# ----- nested state ----------------------------------------------------------------------------------------------
def _flatten(value, path, tensors, depth=0):
    if depth > 100:
        raise ValueError("save_state_file: structure nested deeper than 100 levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Tensor):
        name = ".".join(path) or "tensor"
        while name in tensors:
            name += "_"
        tensors[name] = value.contiguous()
        return {"tensor": name}
    if isinstance(value, dict):
        return {"dict": [[_flatten(k, (), tensors, depth + 1), _flatten(v, (*path, str(k)), tensors, depth + 1)]
                         for k, v in value.items()]}
    if isinstance(value, (list, tuple)):
        items = [_flatten(v, (*path, str(i)), tensors, depth + 1) for i, v in enumerate(value)]
        return items if isinstance(value, list) else {"tuple": items}
    raise TypeError(f"save_state_file: can't store an object of type {type(value).__name__} (tensors, dicts, "
                    "lists, tuples, numbers, strings and None only)")


def _unflatten(node, tensors, used, depth=0):
    if depth > 100:
        raise CheckpointError("structure nested too deeply")
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, list):
        return [_unflatten(item, tensors, used, depth + 1) for item in node]
    if isinstance(node, dict) and len(node) == 1:
        (tag, inner), = node.items()
        if tag == "tensor" and isinstance(inner, str) and inner in tensors:
            used.add(inner)
            return tensors[inner]
        if tag == "dict" and isinstance(inner, list) and all(isinstance(p, list) and len(p) == 2 for p in inner):
            try:
                return {_unflatten(k, tensors, used, depth + 1): _unflatten(v, tensors, used, depth + 1)
                        for k, v in inner}
            except TypeError:
                raise CheckpointError("unhashable dict key in the structure") from None
        if tag == "tuple" and isinstance(inner, list):
            return tuple(_unflatten(item, tensors, used, depth + 1) for item in inner)
        if tag == "float" and inner in ("nan", "inf", "-inf"):
            return float(inner)
    raise CheckpointError(f"bad structure node {json.dumps(node)[:80]}")


def save_state_file(state, filename, metadata=None):
    """Write nested ``state`` (an optimizer's ``state_dict()``, a dict of models' state dicts and numbers) to the
    safetensors file ``filename``: tensors under their flattened paths, the structure as JSON metadata.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "opt.safetensors")
        >>> agnostic.utils.safetensors.save_state_file({"state": {0: {"step": agnostic.tensor(3.0)}}, "lr": 0.1}, path)
        >>> agnostic.utils.safetensors.load_state_file(path)
        {'state': {0: {'step': tensor(3.)}}, 'lr': 0.1}
    """
    tensors = {}
    structure = _flatten(state, (), tensors)
    text = dict(metadata or {})
    text[STRUCTURE_KEY] = json.dumps(structure, separators=(",", ":"), allow_nan=False)
    save_file(tensors, filename, metadata=text)


def load_state_file(filename, device="cpu"):
    """The nested state ``save_state_file`` wrote to ``filename``, tensors on ``device``.

        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "s.safetensors")
        >>> agnostic.utils.safetensors.save_state_file([1, (agnostic.ones(1), None)], path)
        >>> agnostic.utils.safetensors.load_state_file(path)
        [1, (tensor([1.]), None)]
    """
    data, source = read_whole(filename)
    tensors = _decode(data, source, device)
    length = int.from_bytes(data[:8], "little")
    text = (json.loads(data[8:8 + length]).get("__metadata__") or {}).get(STRUCTURE_KEY)
    if text is None:
        raise CheckpointError(f"agnostic.utils.safetensors: {source} has no {STRUCTURE_KEY!r} metadata (not "
                              "written by save_state_file); use load_file for flat files")
    try:
        structure = json.loads(text)
    except (ValueError, RecursionError):
        raise CheckpointError(f"agnostic.utils.safetensors: {source}: unreadable {STRUCTURE_KEY!r} metadata") \
            from None
    used = set()
    try:
        result = _unflatten(structure, tensors, used)
    except CheckpointError as error:
        raise CheckpointError(f"agnostic.utils.safetensors: {source}: {error}") from None
    if used != set(tensors):
        raise CheckpointError(f"agnostic.utils.safetensors: {source}: tensors {sorted(set(tensors) - used)[:5]} "
                              "are not in the structure")
    return result


__all__ = ["save", "save_file", "load", "load_file", "metadata_of", "save_state_file", "load_state_file"]
