"""save/load: checkpoints in PyTorch's format, read and written without PyTorch, and loaded without running code.

``save`` writes the zip layout of ``torch.save`` (``archive/data.pkl``, ``archive/data/<key>`` records 64-byte
aligned, ``byteorder``, ``version``), so ``torch.load(f, weights_only=True)`` reads agnostic's files and
``agnostic.load`` reads PyTorch's: one format for both libraries. ``load`` tells the format from the first bytes:
PyTorch's zip layout, PyTorch's legacy pre-1.6 layout (``_use_new_zipfile_serialization=False``), and agnostic's own
first format (a JSON header and raw data, see ``_agnostic_format``), which older agnostic versions wrote and which
is still read but no longer written.

Loading trusts nothing in the file. The pickle is read by an unpickler that admits only what
``torch.load(weights_only=True)`` admits (tensor rebuild functions, storages, ``OrderedDict``, dtypes, devices,
``Size``, ``Parameter``, plain containers and scalars), mapped onto agnostic objects; any other global is refused
with ``pickle.UnpicklingError`` naming it, without running it (``add_safe_globals`` admits more;
``weights_only=False`` unpickles everything, for files you trust). Before any tensor is built the zip's records are
checked (back to back from byte 0, stored, one top folder, no duplicates, nothing after the end record, each record's
CRC-32 on its full read, no record that no tensor uses), each storage's byte count against its element count, each
tensor's offset, sizes and strides against its storage, and element counts against overflow. Every failure is a
``CheckpointError`` (a ``RuntimeError``) naming the file, what is wrong and where; one inside the pickle is a
``CheckpointUnpicklingError``, which is also the ``pickle.UnpicklingError`` PyTorch raises there.

Whole objects (``save(model)``, an optimizer, your own classes) are pickled as ``torch.save`` pickles them: the
standard pickler, each class named by its import path, tensors as the same storage records as in a state dict. Such
a file names agnostic's classes (``agnostic.nn.rnn.LSTM``), so PyTorch can't load it, and agnostic loads it with
``weights_only=False`` or with every class and function it names admitted by ``safe_globals``/``add_safe_globals``
(as PyTorch 2.6+ requires: ``with agnostic.serialization.safe_globals([MyModel, nn.LSTM]): agnostic.load(f)``);
admitted classes are rebuilt as PyTorch's ``weights_only`` unpickler rebuilds them (``__new__``, then
``__setstate__`` or their attributes). A ``state_dict()`` stays the portable choice. A whole module PyTorch saved
loads too: its ``torch.nn.modules.*`` classes (and ``torch.nn.functional`` functions) are read as agnostic's
namesakes, whose attributes are PyTorch's, and ``safe_globals`` takes them under either path; a PyTorch class
agnostic lacks is refused by name.
"""

import os

from . import _agnostic_format, _pytorch_format
from ._common import CheckpointError, CheckpointUnpicklingError, placement, read_whole
from ._pytorch_format import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, state dicts, nested dicts/lists/tuples/sets of them, numbers, strings, bytes, None,
    dtypes, devices) to ``f``, a path or a writable binary file object, in PyTorch's zip format: ``torch.load``
    reads it. Tensors that share memory (views) share one storage in the file, as with ``torch.save``; each tensor
    keeps its dtype, shape, strides, ``requires_grad``, Parameter class and the device it was saved from.

    Any other object (a whole ``nn.Module``, an optimizer, your classes) is pickled as ``torch.save`` pickles it,
    its classes named by their agnostic paths: only agnostic loads that file, with ``weights_only=False`` or with
    its classes in ``agnostic.serialization.safe_globals``.

        >>> import io
        >>> buffer = io.BytesIO()
        >>> agnostic.save({"weight": agnostic.ones(2, 2), "step": 10}, buffer)
        >>> _ = buffer.seek(0)
        >>> agnostic.load(buffer)
        {'weight': tensor([[1., 1.],
                [1., 1.]]), 'step': 10}
        >>> buffer = io.BytesIO()
        >>> agnostic.save(agnostic.nn.Linear(2, 1), buffer)  # a whole module
        >>> _ = buffer.seek(0)
        >>> with agnostic.serialization.safe_globals([agnostic.nn.Linear]):
        ...     agnostic.load(buffer)
        Linear(in_features=2, out_features=1, bias=True)
    """
    if pickle_module is not None or pickle_protocol != 2 or not _use_new_zipfile_serialization:
        raise ValueError("agnostic.save writes PyTorch's zip format with pickle protocol 2 only (the format "
                         "torch.load(weights_only=True) reads); leave pickle_module, pickle_protocol and "
                         "_use_new_zipfile_serialization at their defaults")
    data = _pytorch_format.encode(obj)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as stream:
            stream.write(data)
    else:
        f.write(data)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load a checkpoint from a path or a readable binary file object: PyTorch's zip or legacy format (what
    ``torch.save`` and ``agnostic.save`` write) or agnostic's first format. Nothing in the file is executed.

    ``map_location`` (as in PyTorch) places each storage: None restores the saved device (a clear error when it is
    a CUDA device this machine lacks); a device or string sends every tensor there; a dict remaps saved device
    strings (``{'cuda:1': 'cuda:0'}``); a callable ``(storage, saved_location) -> tensor`` decides, the storage
    given as a 1-D CPU tensor of its dtype, None meaning the default. ``weights_only`` (default True, as PyTorch's)
    admits only tensors, containers, plain values and the classes and functions ``safe_globals``/``add_safe_globals``
    admit (a whole saved module needs its classes there); ``weights_only=False`` unpickles anything, for files you
    trust. ``mmap`` is accepted for compatibility (the file is read into memory).

        >>> import io
        >>> buffer = io.BytesIO()
        >>> agnostic.save([agnostic.arange(3), "note"], buffer)
        >>> _ = buffer.seek(0)
        >>> agnostic.load(buffer, map_location="cpu")
        [tensor([0, 1, 2]), 'note']
    """
    if pickle_module is not None and weights_only:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    data, source = read_whole(f)
    restore = placement(map_location)
    if _pytorch_format.looks_like_zip(data):
        return _pytorch_format.Reader(data, source, restore, weights_only is not False).load_zip()
    if _pytorch_format.looks_like_legacy(data):
        return _pytorch_format.Reader(data, source, restore, weights_only is not False).load_legacy()
    if _agnostic_format.looks_like(data):
        return _agnostic_format.load(data, source, restore)
    if data[257:262] == b"ustar":
        raise CheckpointError(f"agnostic.load: {source} is in PyTorch's tar format (before 0.4), which agnostic "
                              "doesn't read; load and save it again with torch")
    raise CheckpointError(f"agnostic.load: {source} is not a checkpoint agnostic reads (neither PyTorch's zip or "
                          f"legacy format nor agnostic's): it starts with {data[:16]!r}; it may be truncated or "
                          "corrupt")


__all__ = ["save", "load", "CheckpointError", "CheckpointUnpicklingError", "add_safe_globals", "get_safe_globals",
           "clear_safe_globals", "safe_globals"]
