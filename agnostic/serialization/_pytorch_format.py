"""PyTorch's checkpoint formats without PyTorch: the zip layout of ``torch.save`` (read and written) and the legacy
pre-1.6 layout (read), through an unpickler that admits only what ``torch.load(weights_only=True)`` admits."""

import _compat_pickle
import io
import pickle
import pickletools
import struct
import sys
import warnings
import zipfile
from collections import Counter, OrderedDict

import numpy

from .. import _dtypes
from .._backend import data_pointer
from .._device import CPU, Device
from .._device import device as make_device
from .._size import Size
from .._tensor import wrap
from .._tensor_classes import Tensor
from ..nn.modules._paths import pytorch_counterpart
from ..nn.parameter import Parameter
from ._common import CheckpointError, CheckpointUnpicklingError, checked_numel, numpy_dtype

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001
ALIGN = 64
MAX_DEPTH = 200

_STORAGE_NAMES = {
    "Float": _dtypes.float32, "Double": _dtypes.float64, "Half": _dtypes.float16, "BFloat16": _dtypes.bfloat16,
    "Long": _dtypes.int64, "Int": _dtypes.int32, "Short": _dtypes.int16, "Char": _dtypes.int8,
    "Byte": _dtypes.uint8, "Bool": _dtypes.bool, "ComplexFloat": _dtypes.complex64,
    "ComplexDouble": _dtypes.complex128,
}
_STORAGE_OF = {dtype: name + "Storage" for name, dtype in _STORAGE_NAMES.items()}
# dtypes torch.load admits that agnostic has no counterpart for: named in the error instead of "not allowed"
_FOREIGN_DTYPES = {"uint16", "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                   "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2", "complex32", "qint8", "quint8", "qint32",
                   "quint4x2", "quint2x4", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"} | {
    f"int{n}" for n in range(1, 8)} | {f"uint{n}" for n in range(1, 8)}


def looks_like_zip(data):
    return data[:4] == b"PK\x03\x04"


def looks_like_legacy(data):
    return data[:2] == b"\x80\x02" and data[2:3] == b"\x8a"  # protocol 2, then the magic number as a LONG1


# ----- safe globals ------------------------------------------------------------------------------------------
_user_globals: dict = {}


def add_safe_globals(safe_globals):
    """Admit ``safe_globals`` (objects, or ``(object, "module.name")`` pairs) when loading with
    ``weights_only=True``, as ``torch.serialization.add_safe_globals``.

        >>> import collections
        >>> agnostic.serialization.add_safe_globals([collections.namedtuple])
        >>> collections.namedtuple in agnostic.serialization.get_safe_globals()
        True
        >>> agnostic.serialization.clear_safe_globals()
    """
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError("add_safe_globals: expected objects or (object, 'module.name') pairs, got "
                                f"{entry!r}")
            obj, name = entry
        else:
            obj, name = entry, f"{entry.__module__}.{entry.__qualname__}"
        _user_globals[name] = obj


def get_safe_globals():
    """The objects ``add_safe_globals`` admitted (a list).

        >>> agnostic.serialization.get_safe_globals()
        []
    """
    return list(_user_globals.values())


def clear_safe_globals():
    """Forget every object ``add_safe_globals`` admitted.

        >>> agnostic.serialization.clear_safe_globals()
    """
    _user_globals.clear()


class safe_globals:
    """Admit ``safe_globals`` inside a ``with`` block only, as ``torch.serialization.safe_globals``.

        >>> import collections
        >>> with agnostic.serialization.safe_globals([collections.namedtuple]):
        ...     len(agnostic.serialization.get_safe_globals())
        1
    """

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        self.saved = dict(_user_globals)
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info):
        _user_globals.clear()
        _user_globals.update(self.saved)


# ----- reading ---------------------------------------------------------------------------------------------------
class _StorageType:
    """What a ``torch.FloatStorage`` (etc.) global stands for: only its dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Storage:
    """One storage of the file: a 1-D tensor of its dtype, already placed by map_location."""

    def __init__(self, tensor, numel, dtype):
        self.tensor, self.numel, self.dtype = tensor, numel, dtype


class _PlacementError(Exception):
    """Carries an error of map_location out of the unpickler unchanged."""


class _TensorClass:
    """What ``torch.Tensor`` (in ``_rebuild_from_type_v2``) stands for."""


def _encode(text, encoding="latin1"):
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise CheckpointUnpicklingError("_codecs.encode takes a str and 'latin1' in a checkpoint")
    return text.encode("latin1")


def _get_layout(name):
    if name != "torch.strided":
        raise CheckpointUnpicklingError(f"layout {name!r} is not supported (agnostic has strided tensors only)")
    return name


def _foreign_dtype(name):
    def refuse(*args):
        raise CheckpointError(f"torch.{name} has no agnostic dtype")
    return refuse


class _SafeUnpickler(pickle._Unpickler):
    """The pure-Python unpickler with a whitelist of opcodes: globals only through ``find_class`` (PyTorch's
    ``weights_only`` set, mapped onto agnostic), calls only of those, ``BUILD`` only on OrderedDicts, and storages
    only through ``persistent_load``. (The pure-Python class, since its dispatch table can be narrowed per opcode.)"""

    dispatch = {}

    def __init__(self, data, loader):
        self.stream = io.BytesIO(data)
        super().__init__(self.stream, encoding="ASCII")
        self.loader = loader
        self.allowed = loader.allowed_globals()
        self.callable = {id(obj) for obj in self.allowed.values()} | {id(obj) for obj in _user_globals.values()}

    def find_class(self, module, name):
        if self.proto < 3:  # Python 2 names, as pickle maps them (torch.save writes protocol 2)
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        full = f"{module}.{name}"
        found = self.allowed.get(full)
        if found is None:
            found = _user_globals.get(full)
        if found is None:  # PyTorch's name of an agnostic class the user admitted (torch.nn.modules.rnn.LSTM)
            counterpart = pytorch_counterpart(module, name)
            if counterpart is not None and any(counterpart is admitted for admitted in _user_globals.values()):
                found = counterpart
        if found is None:
            raise CheckpointUnpicklingError(
                f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
                f"`agnostic.serialization.add_safe_globals([{full}])` or the "
                f"`agnostic.serialization.safe_globals([{full}])` context manager to allowlist this global if you "
                "trust this class/function (or, for a file you trust entirely, agnostic.load(f, weights_only=False), "
                "which can run code from it)")
        return found

    def persistent_load(self, pid):
        return self.loader.persistent_load(pid)

    def load_reduce(self):
        args = self.stack.pop()
        func = self.stack[-1]
        if id(func) not in self.callable or not isinstance(args, tuple):
            raise CheckpointUnpicklingError(f"Trying to call reduce for unrecognized function {func!r}")
        self.stack[-1] = func(*args)

    def load_newobj(self):
        args = self.stack.pop()
        cls = self.stack.pop()
        if cls is Parameter:
            self.append(_rebuild_parameter(*args))
        elif id(cls) in self.callable and isinstance(cls, type) and isinstance(args, tuple):
            self.append(cls.__new__(cls, *args))
        else:
            raise CheckpointUnpicklingError(f"Can only create new objects of allowed classes, got {cls!r}")

    def load_build(self):
        state = self.stack.pop()
        inst = self.stack[-1]
        if type(inst) is OrderedDict:
            if not isinstance(state, dict) or not all(isinstance(k, str) and not hasattr(OrderedDict, k)
                                                      for k in state):
                raise CheckpointUnpicklingError("bad attributes for an OrderedDict")
            inst.__dict__.update(state)
        elif type(inst) in _user_globals.values():  # as PyTorch's: __setstate__, else the attributes
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
                return
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state:
                inst.__dict__.update(state)
            for name, value in (slotstate or {}).items():
                setattr(inst, name, value)
        else:
            raise CheckpointUnpicklingError(f"Can only build OrderedDicts and allowed classes, got {type(inst)}")

    def load_setitem(self):
        self._check_dict(self.stack[-3])
        super().load_setitem()

    def load_setitems(self):
        self._check_dict(self.metastack[-1][-1] if self.metastack and self.metastack[-1] else None)
        super().load_setitems()

    def load_append(self):
        self._check_list(self.stack[-2])
        super().load_append()

    def load_appends(self):
        self._check_list(self.metastack[-1][-1] if self.metastack and self.metastack[-1] else None)
        super().load_appends()

    def load_additems(self):
        target = self.metastack[-1][-1] if self.metastack and self.metastack[-1] else None
        if type(target) is not set:
            raise CheckpointUnpicklingError(f"Can only add items to sets, got {type(target)}")
        super().load_additems()

    @staticmethod
    def _check_dict(target):
        if type(target) not in (dict, OrderedDict, Counter):
            raise CheckpointUnpicklingError(f"Can only set items of dicts, got {type(target)}")

    @staticmethod
    def _check_list(target):
        # list subclasses allowed through add_safe_globals may be appended to, as in PyTorch
        if type(target) is not list and not (isinstance(target, list) and type(target) in _user_globals.values()):
            raise CheckpointUnpicklingError(f"Can only append to lists, got {type(target)}")


_ALLOWED_OPCODES = (
    "PROTO FRAME STOP GLOBAL STACK_GLOBAL REDUCE NEWOBJ BUILD BINPERSID MARK POP POP_MARK DUP "
    "NONE NEWTRUE NEWFALSE BININT BININT1 BININT2 LONG1 LONG4 BINFLOAT SHORT_BINUNICODE BINUNICODE BINUNICODE8 "
    "SHORT_BINSTRING BINSTRING SHORT_BINBYTES BINBYTES BINBYTES8 EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_LIST "
    "APPEND APPENDS LIST EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET BINGET LONG_BINGET BINPUT "
    "LONG_BINPUT MEMOIZE").split()
for _name in _ALLOWED_OPCODES:
    _code = getattr(pickle, _name)[0]
    _handler = pickle._Unpickler.dispatch[_code]
    _SafeUnpickler.dispatch[_code] = getattr(_SafeUnpickler, _handler.__name__)


def _rebuild_parameter(data, requires_grad=True, backward_hooks=None, state=None):
    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise CheckpointUnpicklingError("_rebuild_parameter takes a tensor and a bool")
    return Parameter(data.detach() if data.requires_grad else data, requires_grad=requires_grad)


class Reader:
    """Loads one PyTorch checkpoint (zip or legacy) already read into memory."""

    def __init__(self, data, source, restore, weights_only=True):
        self.data, self.source, self.restore, self.weights_only = data, source, restore, weights_only
        self.storages = {}
        self.records = {}
        self.big_endian = False
        self.discovering = False
        self.wanted = {}  # legacy files: storage key -> (dtype, numel, location), found in a first pass

    def fail(self, reason):
        raise CheckpointError(f"agnostic.load: {self.source} is not a valid PyTorch checkpoint ({reason})")

    def allowed_globals(self):
        allowed = {
            "collections.OrderedDict": OrderedDict, "collections.Counter": Counter, "torch.Size": Size,
            "torch.device": self.device, "torch.nn.parameter.Parameter": Parameter, "torch.Tensor": _TensorClass,
            "_codecs.encode": _encode, "builtins.bytearray": bytearray, "builtins.set": set,
            "builtins.complex": complex, "torch.serialization._get_layout": _get_layout,
            "torch._utils._rebuild_tensor": self.rebuild_tensor, "torch._utils._rebuild_tensor_v2":
                self.rebuild_tensor_v2, "torch._utils._rebuild_tensor_v3": self.rebuild_tensor_v3,
            "torch._utils._rebuild_parameter": self.rebuild_parameter,
            "torch._utils._rebuild_parameter_with_state": self.rebuild_parameter,
            "torch._tensor._rebuild_from_type_v2": self.rebuild_from_type_v2,
        }
        for dtype in _dtypes.ALL_DTYPES:
            allowed[f"torch.{dtype.name}"] = dtype
        for name in _FOREIGN_DTYPES:
            allowed[f"torch.{name}"] = _foreign_dtype(name)
        for name, dtype in _STORAGE_NAMES.items():
            allowed[f"torch.{name}Storage"] = allowed[f"torch.cuda.{name}Storage"] = _StorageType(dtype)
        return allowed

    # --- the functions a checkpoint may call ---
    def device(self, *args):
        try:
            return make_device(*args)
        except (RuntimeError, ValueError, TypeError) as error:
            raise CheckpointUnpicklingError(f"bad device {args!r}: {error}") from None

    def rebuild_tensor(self, storage, storage_offset, size, stride, *_):
        return self.rebuild_tensor_v2(storage, storage_offset, size, stride, False, OrderedDict())

    def rebuild_tensor_v3(self, storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype,
                          metadata=None):
        if self.discovering:
            return None
        if not isinstance(storage, _Storage) or dtype is not storage.dtype:
            raise CheckpointUnpicklingError(f"_rebuild_tensor_v3 with dtype {dtype!r} over a storage of another "
                                            "dtype")
        return self.rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks)

    def rebuild_tensor_v2(self, storage, storage_offset, size, stride, requires_grad, backward_hooks,
                          metadata=None):
        if self.discovering:
            return None
        if not isinstance(storage, _Storage):
            raise CheckpointUnpicklingError(f"a tensor's storage is a {type(storage).__name__}, not a storage")
        if type(storage_offset) is not int or storage_offset < 0 or type(requires_grad) is not bool:
            raise CheckpointUnpicklingError(f"bad tensor offset {storage_offset!r} or requires_grad")
        if not (isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride) <= 64
                and all(type(s) is int and s >= 0 for s in stride)):
            raise CheckpointUnpicklingError(f"bad tensor size {size!r} or stride {stride!r}")
        if not isinstance(backward_hooks, (dict, type(None))) or backward_hooks:
            raise CheckpointUnpicklingError("tensors with backward hooks are not supported")
        numel = checked_numel(size, storage.dtype.itemsize, self.source, "a tensor")
        array = storage.tensor._data
        if numel == 0:
            view = array[:0].reshape(size)
        else:
            last = storage_offset + sum((n - 1) * s for n, s in zip(size, stride))
            if last >= storage.numel:
                raise CheckpointUnpicklingError(
                    f"a tensor of size {tuple(size)}, stride {tuple(stride)} and offset {storage_offset} reaches "
                    f"element {last} of a storage of {storage.numel} elements")
            itemsize = array.itemsize
            view = storage.tensor._device.backend.as_strided(array[storage_offset:], size,
                                                             tuple(s * itemsize for s in stride))
        if requires_grad and not (storage.dtype.is_floating_point or storage.dtype.is_complex):
            raise CheckpointUnpicklingError(f"a {storage.dtype.name} tensor is marked requires_grad (only floating "
                                            "point and complex tensors can require gradients)")
        tensor = wrap(view, storage.tensor._device)
        return tensor.requires_grad_(True) if requires_grad else tensor

    def rebuild_parameter(self, data, requires_grad, backward_hooks, state=None):
        if self.discovering:
            return None
        if state:
            raise CheckpointUnpicklingError("parameters with extra attributes are not supported")
        return _rebuild_parameter(data, requires_grad)

    def rebuild_from_type_v2(self, func, new_type, args, state):
        if self.discovering:
            return None
        if new_type not in (_TensorClass, Parameter) or id(func) not in {id(f) for f in (
                self.rebuild_tensor_v2, self.rebuild_tensor_v3, self.rebuild_tensor, self.rebuild_parameter)}:
            raise CheckpointUnpicklingError(f"_rebuild_from_type_v2 of {new_type!r} is not supported")
        if not isinstance(args, tuple) or state:
            raise CheckpointUnpicklingError("tensors with extra attributes are not supported")
        return func(*args)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) in (5, 6) and pid[0] in ("storage", b"storage")):
            raise CheckpointUnpicklingError(f"only storages may be persistent ids, got {pid!r:.80}")
        storage_type, key, location, numel = pid[1:5]
        if isinstance(location, bytes):
            location = location.decode("ascii", "replace")
        if not (isinstance(storage_type, _StorageType) and isinstance(key, str) and isinstance(location, str)
                and type(numel) is int and numel >= 0):
            raise CheckpointUnpicklingError(f"bad storage id {pid!r:.120}")
        dtype = storage_type.dtype
        if len(pid) == 6 and pid[5] is not None:
            raise CheckpointUnpicklingError("legacy storage views are not supported")
        if self.discovering:
            known = self.wanted.setdefault(key, (dtype, numel, location))
            if known != (dtype, numel, location):
                raise CheckpointUnpicklingError(f"storage {key!r} is described two ways")
            return None
        storage = self.storages.get(key)
        if storage is None:
            record = self.storage_bytes(key, dtype, numel)
            if len(record) != numel * dtype.itemsize:
                self.fail(f"storage {key!r} holds {len(record)} bytes, not {numel} {dtype.name} elements")
            array = numpy.frombuffer(record, numpy_dtype(dtype, self.source)).copy()
            if self.big_endian != (sys.byteorder == "big"):
                array = array.byteswap()
            try:
                tensor = self.restore(wrap(array, CPU), location)
            except Exception as error:  # map_location's own errors reach the caller as they are
                raise _PlacementError(error) from None
            if tensor.dtype is not dtype or tuple(tensor.shape) != (numel,):
                raise _PlacementError(TypeError(
                    f"agnostic.load: map_location returned a {tensor.dtype.name} tensor of shape {tuple(tensor.shape)} "
                    f"for a storage of {numel} {dtype.name} elements; return the storage moved, not changed"))
            storage = self.storages[key] = _Storage(tensor, numel, dtype)
        elif storage.dtype is not dtype or storage.numel != numel:
            raise CheckpointUnpicklingError(f"storage {key!r} is described two ways")
        return storage

    def unpickle(self, data, where):
        unpickler = _SafeUnpickler(data, self) if self.weights_only else _TrustingUnpickler(data, self)
        try:
            result = unpickler.load()
        except CheckpointError as error:
            if isinstance(error, pickle.UnpicklingError):
                raise CheckpointUnpicklingError(f"agnostic.load: {self.source}, {where}, byte "
                                                f"{unpickler.stream.tell() - 1}: {error}") from None
            raise CheckpointError(f"agnostic.load: {self.source}: {error}") from None
        except _PlacementError as error:
            raise error.args[0] from None
        except Exception as error:  # anything a damaged pickle provokes inside the unpickler
            raise CheckpointUnpicklingError(
                f"agnostic.load: {self.source} is not a valid PyTorch checkpoint: {where} is damaged near byte "
                f"{unpickler.stream.tell() - 1} ({type(error).__name__}: {error})") from None
        if unpickler.stream.tell() != len(data):
            self.fail(f"{len(data) - unpickler.stream.tell()} bytes after the end of {where}")
        return result

    # --- zip files ---
    def load_zip(self):
        try:
            archive = zipfile.ZipFile(io.BytesIO(self.data))
            infos = archive.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, struct.error, EOFError,
                NotImplementedError) as error:
            self.fail(f"damaged zip structure: {error}")
        self._check_zip_layout(archive, infos)
        prefix = infos[0].filename.split("/", 1)[0] + "/"
        for info in infos:
            try:
                self.records[info.filename[len(prefix):]] = archive.read(info)  # a full read checks the CRC-32
            except (zipfile.BadZipFile, ValueError, struct.error, EOFError, NotImplementedError, OSError,
                    RuntimeError) as error:
                self.fail(f"record {info.filename!r} at byte {info.header_offset}: {error}")
        if "data.pkl" not in self.records:
            self.fail("no data.pkl record" + (" (a TorchScript archive: use torch.jit.load)"
                                              if "constants.pkl" in self.records else ""))
        order = self.records.get("byteorder", b"little")
        if order not in (b"little", b"big"):
            self.fail(f"byteorder record is {order[:20]!r}")
        self.big_endian = order == b"big"
        for name in self.records:
            if name not in ("data.pkl", "byteorder", "version", ".format_version", ".storage_alignment") and \
                    not name.startswith((".data/", "data/")):
                self.fail(f"unexpected record {prefix + name!r}")
        result = self.unpickle(self.records["data.pkl"], "data.pkl")
        unused = {name[5:] for name in self.records if name.startswith("data/")} - set(self.storages)
        if unused:
            self.fail(f"records {sorted(prefix + 'data/' + key for key in unused)[:5]} belong to no tensor")
        return result

    def storage_bytes(self, key, dtype, numel):
        if self.legacy_data is not None:
            return self.legacy_data[key]
        record = self.records.get("data/" + key)
        if record is None:
            self.fail(f"no record data/{key} for a storage")
        return record

    legacy_data = None

    def _check_zip_layout(self, archive, infos):
        """Every byte accounted for: records back to back from byte 0, then the central directory, then the end
        record; stored (uncompressed) records with one shared top folder, no duplicates."""
        if not infos:
            self.fail("an empty zip archive")
        names = [info.filename for info in infos]
        if len(set(names)) != len(names):
            self.fail("duplicate record names")
        prefix = names[0].split("/", 1)[0]
        position = 0
        for info in sorted(infos, key=lambda info: info.header_offset):
            if not info.filename.startswith(prefix + "/") or info.compress_type != zipfile.ZIP_STORED or \
                    info.flag_bits & 0x1:
                self.fail(f"record {info.filename!r} is outside {prefix + '/'!r}, compressed or encrypted")
            if info.header_offset != position:
                self.fail(f"record {info.filename!r} starts at byte {info.header_offset}, expected {position}")
            header = self.data[position:position + 30]
            if len(header) < 30 or header[:4] != b"PK\x03\x04":
                self.fail(f"no local header at byte {position}")
            name_length, extra_length = struct.unpack("<HH", header[26:30])
            position += 30 + name_length + extra_length + info.compress_size
            if info.flag_bits & 0x08:
                descriptor = 24 if info.compress_size >= 0xFFFFFFFF or info.file_size >= 0xFFFFFFFF else 16
                if self.data[position:position + 4] != b"PK\x07\x08":
                    descriptor -= 4
                position += descriptor
        if archive.start_dir != position:
            self.fail(f"{archive.start_dir - position} unexpected bytes at byte {position}, before the directory")
        end = len(self.data) - 22 - len(archive.comment)
        if end < position or self.data[end:end + 4] != b"PK\x05\x06" or archive.comment:
            self.fail(f"bytes after the end of the archive (its end record isn't the file's last 22 bytes)")

    # --- legacy files ---
    def load_legacy(self):
        stream = io.BytesIO(self.data)
        header = []
        for what in ("magic number", "protocol version", "system info"):
            start = stream.tell()
            header.append(self._small_pickle(stream, what))
        magic, protocol, info = header
        if magic != LEGACY_MAGIC or protocol != LEGACY_PROTOCOL or not isinstance(info, dict):
            self.fail("bad legacy header (magic number, protocol version or system info)")
        if info.get("little_endian", True) is False:
            self.big_endian = True
        start = stream.tell()
        main = self._pickle_extent(start, "the object pickle")
        self.discovering = True
        self.unpickle(self.data[start:main], "the object pickle")
        self.discovering = False
        stream.seek(main)
        keys = self._small_pickle(stream, "the storage key list")
        if not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)) or sorted(keys) != sorted(
                self.wanted) or len(set(keys)) != len(keys):
            self.fail("the storage key list doesn't match the storages the object uses")
        self.legacy_data = {}
        position = stream.tell()
        for key in keys:
            dtype, numel, _ = self.wanted[key]
            size = self.data[position:position + 8]
            if len(size) < 8 or struct.unpack("<q", size)[0] != numel:
                self.fail(f"storage {key!r} at byte {position} doesn't start with its element count {numel}")
            end = position + 8 + numel * dtype.itemsize
            if end > len(self.data):
                self.fail(f"storage {key!r} at byte {position} is truncated")
            self.legacy_data[key] = self.data[position + 8:end]
            position = end
        if position != len(self.data):
            self.fail(f"{len(self.data) - position} bytes after the last storage (byte {position})")
        return self.unpickle(self.data[start:main], "the object pickle")

    def _pickle_extent(self, start, what):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # genops warns about bad escapes in damaged string opcodes
                for opcode, _, position in pickletools.genops(self.data[start:]):
                    if opcode.name == "STOP":
                        return start + position + 1
        except Exception as error:  # genops reports damage as ValueError, struct.error, IndexError...
            self.fail(f"{what} at byte {start} is damaged ({type(error).__name__})")
        self.fail(f"{what} at byte {start} has no end")

    def _small_pickle(self, stream, what):
        start = stream.tell()
        end = self._pickle_extent(start, what)
        stream.seek(end)
        saved = self.weights_only
        self.weights_only = True
        try:
            value = self.unpickle(self.data[start:end], what)
        finally:
            self.weights_only = saved
        if not _plain(value):
            self.fail(f"{what} at byte {start} holds more than plain values")
        return value


def _plain(value, depth=0):
    if depth > 20:
        return False
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if type(value) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    return False


class _TrustingUnpickler(pickle.Unpickler):
    """``weights_only=False``: full unpickling for trusted files, with PyTorch's names mapped onto agnostic."""

    def __init__(self, data, loader):
        self.stream = io.BytesIO(data)
        super().__init__(self.stream, encoding="ASCII")
        self.loader = loader
        self.mapped = loader.allowed_globals()

    def find_class(self, module, name):
        full = f"{module}.{name}"
        if full in self.mapped:
            return self.mapped[full]
        counterpart = pytorch_counterpart(module, name)
        if counterpart is not None:
            return counterpart
        if module == "torch" or module.startswith("torch."):
            raise CheckpointUnpicklingError(
                f"the checkpoint pickles {full}, a PyTorch object agnostic has no counterpart for; save "
                "model.state_dict() (or other plain containers of tensors) instead of whole objects")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return self.loader.persistent_load(pid)


# ----- writing ---------------------------------------------------------------------------------------------------
class _PickleWriter:
    """Writes the protocol-2 pickle ``torch.save`` writes, opcode by opcode, so that it names PyTorch's globals
    (``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``...) without importing PyTorch."""

    def __init__(self):
        self.out = io.BytesIO()
        self.memo = {}  # id(object) or global name -> memo index
        self.keep = []  # objects whose ids are memo keys stay alive while writing
        self.storages = {}  # id(root array) -> (key, dtype, root array, device)
        self.records = []  # (key, host bytes)

    def write(self, obj):
        self.out.write(b"\x80\x02")
        self.save(obj, 0)
        self.out.write(pickle.STOP)
        return self.out.getvalue()

    def put(self, key):
        index = self.memo[key] = len(self.memo)
        self.out.write(pickle.BINPUT + bytes([index]) if index < 256 else pickle.LONG_BINPUT
                       + struct.pack("<I", index))

    def get(self, key):
        index = self.memo[key]
        self.out.write(pickle.BINGET + bytes([index]) if index < 256 else pickle.LONG_BINGET
                       + struct.pack("<I", index))

    def global_(self, module, name):
        key = f"global {module}.{name}"
        if key in self.memo:
            return self.get(key)
        self.out.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.put(key)

    def call(self, module, name, *args, depth):
        self.global_(module, name)
        self.tuple(args, depth)
        self.out.write(pickle.REDUCE)

    def tuple(self, items, depth):
        if not items:
            self.out.write(pickle.EMPTY_TUPLE)
            return
        self.out.write(pickle.MARK)
        for item in items:
            self.save(item, depth + 1)
        self.out.write(pickle.TUPLE)

    def save(self, value, depth):
        if depth > MAX_DEPTH:
            raise ValueError(f"agnostic.save: objects nested deeper than {MAX_DEPTH} levels are not supported")
        write = self.out.write
        if value is None:
            write(pickle.NONE)
        elif value is True or value is False:
            write(pickle.NEWTRUE if value else pickle.NEWFALSE)
        elif isinstance(value, numpy.generic) and value.dtype.kind in "biufc":
            self.save(value.item(), depth)
        elif isinstance(value, int):
            value = int(value)
            if 0 <= value < 256:
                write(pickle.BININT1 + bytes([value]))
            elif 0 <= value < 65536:
                write(pickle.BININT2 + struct.pack("<H", value))
            elif -2 ** 31 <= value < 2 ** 31:
                write(pickle.BININT + struct.pack("<i", value))
            else:
                encoded = pickle.encode_long(value)
                write(pickle.LONG1 + bytes([len(encoded)]) + encoded if len(encoded) < 256
                      else pickle.LONG4 + struct.pack("<i", len(encoded)) + encoded)
        elif isinstance(value, float):
            write(pickle.BINFLOAT + struct.pack(">d", value))
        elif isinstance(value, str):
            encoded = str(value).encode("utf-8", "surrogatepass")
            write(pickle.BINUNICODE + struct.pack("<I", len(encoded)) + encoded)
        elif isinstance(value, Tensor):
            self.tensor(value, depth)
        elif isinstance(value, (bytes, bytearray)):
            if isinstance(value, bytearray):
                self.call("builtins", "bytearray", bytes(value), depth=depth)
            else:
                self.call("_codecs", "encode", value.decode("latin1"), "latin1", depth=depth)
        elif isinstance(value, complex):
            self.call("builtins", "complex", value.real, value.imag, depth=depth)
        elif isinstance(value, Size):
            self.call("torch", "Size", tuple(value), depth=depth)
        elif isinstance(value, tuple):
            self.tuple(value, depth)
        elif isinstance(value, list):
            write(pickle.EMPTY_LIST)
            for start in range(0, len(value), 1000):
                write(pickle.MARK)
                for item in value[start:start + 1000]:
                    self.save(item, depth + 1)
                write(pickle.APPENDS)
        elif isinstance(value, (set, frozenset)) and not isinstance(value, frozenset):
            self.call("builtins", "set", list(value), depth=depth)
        elif isinstance(value, dict):
            if isinstance(value, OrderedDict):
                self.call("collections", "OrderedDict", depth=depth)
            else:
                write(pickle.EMPTY_DICT)
            items = list(value.items())
            for start in range(0, len(items), 1000):
                write(pickle.MARK)
                for key, item in items[start:start + 1000]:
                    self.save(key, depth + 1)
                    self.save(item, depth + 1)
                write(pickle.SETITEMS)
            metadata = getattr(value, "_metadata", None)
            if isinstance(value, OrderedDict) and isinstance(metadata, dict):
                write(pickle.EMPTY_DICT + pickle.MARK)
                self.save("_metadata", depth + 1)
                self.save(metadata, depth + 1)
                write(pickle.SETITEMS + pickle.BUILD)
        elif isinstance(value, _dtypes.dtype):
            self.global_("torch", value.name)
        elif isinstance(value, Device):
            self.call("torch", "device", str(value), depth=depth)
        else:
            raise _NotPlainData(
                f"agnostic.save: can't save an object of type {type(value).__module__}.{type(value).__qualname__}; "
                "supported: tensors, dicts, lists, tuples, sets, str, bytes, int, float, complex, bool, None, dtypes "
                "and devices (a checkpoint stores no code: save a module's or optimizer's state_dict(), not the "
                "object)")

    def tensor(self, tensor, depth):
        if id(tensor) in self.memo:
            return self.get(id(tensor))
        if isinstance(tensor, Parameter):
            self.global_("torch._utils", "_rebuild_parameter")
            self.out.write(pickle.MARK)
            self.plain_tensor(tensor, False)
            self.save(bool(tensor.requires_grad), depth + 1)
            self.call("collections", "OrderedDict", depth=depth)
            self.out.write(pickle.TUPLE + pickle.REDUCE)
        else:
            self.plain_tensor(tensor, bool(getattr(tensor, "requires_grad", False)))
        self.keep.append(tensor)
        self.put(id(tensor))

    def plain_tensor(self, tensor, requires_grad):
        storage, offset, size, stride = self.storage_of(tensor)
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out.write(pickle.MARK)
        self.out.write(pickle.MARK)
        self.save("storage", 0)
        self.global_("torch", _STORAGE_OF[tensor.dtype])
        key, numel, location = storage
        self.save(key, 0)
        self.save(location, 0)
        self.save(numel, 0)
        self.out.write(pickle.TUPLE + pickle.BINPERSID)
        self.save(offset, 0)
        self.tuple(size, 0)
        self.tuple(stride, 0)
        self.save(requires_grad, 0)
        self.call("collections", "OrderedDict", depth=0)
        self.out.write(pickle.TUPLE + pickle.REDUCE)

    def storage_of(self, tensor):
        """``((key, numel, location), offset, size, stride)``: the tensor as a view of its root array, so that
        tensors sharing memory share one storage; tensors that can't be described so get a storage of their own."""
        array = tensor._data
        itemsize = array.itemsize
        root = array
        base = getattr(array, "base", None)
        while base is not None:
            if type(base) is type(array):
                root = base
            base = getattr(base, "base", None)
        offset = data_pointer(array) - data_pointer(root)
        strides = array.strides
        shared = (root is not array and root.dtype == array.dtype and root.flags.c_contiguous
                  and offset % itemsize == 0 and all(s >= 0 and s % itemsize == 0 for s in strides)
                  and 0 <= offset and (array.size == 0 or offset + sum((n - 1) * s for n, s in zip(array.shape,
                                                                                                  strides))
                                       < root.nbytes))
        if not shared:
            root, offset = array, 0
            if not array.flags.c_contiguous or any(s < 0 for s in strides):
                root = tensor._device.backend.xp.ascontiguousarray(array).reshape(array.shape)
            strides = tuple(s * n for s, n in zip(_contiguous_strides(array.shape), [itemsize] * array.ndim))
        entry = self.storages.get(id(root))
        if entry is None:
            host = tensor._device.backend.to_host(root)[0]
            host = numpy.ascontiguousarray(host).reshape(-1)
            if sys.byteorder != "little":
                host = host.byteswap()
            key = str(len(self.storages))
            entry = self.storages[id(root)] = ((key, host.size, str(tensor.device)), root)
            self.records.append((key, host.view(numpy.uint8).tobytes()))
        return entry[0], offset // itemsize, tuple(array.shape), tuple(s // itemsize for s in strides)


class _NotPlainData(TypeError):
    """An object ``_PickleWriter`` doesn't write (a module, an optimizer...): ``encode`` then pickles it whole."""


class _SharedMemoWriter(_PickleWriter):
    """``_PickleWriter`` writing into a standard pickler's stream and memo, so that the tensors of a pickled object
    are the same storage records and rebuild calls as in a state dict, and are memoized with its other objects."""

    def __init__(self, pickler):
        super().__init__()
        self.pickler = self.out = pickler  # pickle._Pickler has write(); it holds the memo
        self.memo = pickler.memo

    def put(self, key):
        index = len(self.memo)
        self.memo[key] = index, None
        self.out.write(self.pickler.put(index))

    def get(self, key):
        self.out.write(self.pickler.get(self.memo[key][0]))


class _ObjectPickler(pickle._Pickler):
    """``torch.save``'s pickling of whole objects (``nn.Module``, optimizers, user classes): the standard pickler,
    classes named by their import paths (``agnostic.nn.rnn.LSTM``, ``__main__.Net``), with tensors, dtypes, devices
    and ``Size`` written as in a state dict. (The pure-Python pickler, whose ``save`` can be extended.)"""

    def __init__(self, stream):
        super().__init__(stream, protocol=2)
        self.writer = _SharedMemoWriter(self)

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, (Tensor, _dtypes.dtype, Device, Size)):
            self.writer.save(obj, 0)
        else:
            super().save(obj, save_persistent_id)


def _contiguous_strides(shape):
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _padding_extra(offset, name_length):
    """The local header's extra field (PyTorch's 'FB' padding) that puts a record's data on a 64-byte boundary."""
    start = offset + 30 + name_length + 4
    return b"FB" + struct.pack("<H", -start % ALIGN) + b"Z" * (-start % ALIGN)


def encode(obj):
    """The bytes of ``obj`` in PyTorch's zip layout, as ``torch.save`` writes them."""
    writer = _PickleWriter()
    try:
        pickled = writer.write(obj)
    except _NotPlainData:  # a module, an optimizer...: pickled whole, as torch.save does
        stream = io.BytesIO()
        pickler = _ObjectPickler(stream)
        pickler.dump(obj)
        pickled, writer = stream.getvalue(), pickler.writer
    records = [("data.pkl", pickled), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]
    records += [(f"data/{key}", data) for key, data in writer.records]
    records += [("version", b"3\n")]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in records:
            info = zipfile.ZipInfo("archive/" + name, date_time=(1980, 1, 1, 0, 0, 0))
            info.extra = _padding_extra(buffer.tell(), len(info.filename))
            info.create_system = 0
            archive.writestr(info, data)
    return buffer.getvalue()
