"""What every checkpoint format shares: the error type, reading the whole file, placing tensors (map_location)."""

import io
import os
import pickle

from .. import _backend, _dtypes
from .._device import Device, as_device
from .._tensor_classes import Tensor


class CheckpointError(RuntimeError):
    """A checkpoint that is damaged, truncated or not what it claims to be. The message names the file, what is
    wrong and where (a byte offset, a record or a key).

        >>> import io
        >>> try:
        ...     agnostic.load(io.BytesIO(b"not a checkpoint"))
        ... except agnostic.serialization.CheckpointError as error:
        ...     print(type(error).__name__)
        CheckpointError
    """


class CheckpointUnpicklingError(CheckpointError, pickle.UnpicklingError):
    """A PyTorch checkpoint whose pickle is refused or broken: both a ``CheckpointError`` and the
    ``pickle.UnpicklingError`` that ``torch.load(weights_only=True)`` raises in the same case.

        >>> import pickle
        >>> issubclass(agnostic.serialization.CheckpointUnpicklingError, pickle.UnpicklingError)
        True
    """


def read_whole(f):
    """``(bytes, name)`` of a path or a readable binary file object, refusing text-mode files before any decode."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as stream:
            return stream.read(), repr(os.fspath(f))
    name = repr(getattr(f, "name", "the file object"))
    if isinstance(f, io.TextIOBase):
        raise TypeError(f"agnostic.load: {name} is open in text mode; open it in binary mode (open(path, 'rb'))")
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"agnostic.load: the file object must be opened in binary mode (open(path, 'rb')), "
                        f"got {type(data).__name__} from read()")
    return bytes(data), name if name != "'the file object'" else "the file object"


def numpy_dtype(dtype, source):
    """The NumPy dtype of an agnostic dtype; bfloat16 without ml_dtypes is a CheckpointError naming the package."""
    try:
        return _dtypes._numpy_dtype_of(dtype)
    except TypeError:
        raise CheckpointError(f"agnostic.load: {source} holds bfloat16 tensors, which need the ml_dtypes package "
                              "(pip install ml_dtypes)") from None


def checked_numel(shape, itemsize, source, where):
    """The element count of ``shape``, refusing sizes whose bytes overflow before anything is allocated."""
    numel, nonzero = 1, 1
    for size in shape:
        if type(size) is not int or size < 0:
            raise CheckpointError(f"agnostic.load: {source}: {where} has a bad size {size!r} in shape {shape!r}")
        numel *= size
        nonzero *= max(size, 1)
        if nonzero * itemsize >= 1 << 62:
            raise CheckpointError(f"agnostic.load: {source}: {where} has shape {tuple(shape)}, whose size in bytes "
                                  "overflows")
    return numel


# ----- map_location ----------------------------------------------------------------------------------------------
def placement(map_location):
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
        raise CheckpointError(f"agnostic.load: unknown saved location {location!r}; pass map_location to place "
                              "the tensors") from None
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
