"""Batch assembly as PyTorch's: default_collate, default_convert, the extensible collate, and pin_memory."""

import collections.abc
import copy
import re

import numpy

from ..._tensor_classes import Tensor
from ... import _dtypes
from ...ops.creation import as_tensor, tensor
from ...ops.shape import stack

_STRING_OR_OBJECT = re.compile(r"[SaUO]")
_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
_CONVERT_ERROR = "default_convert: can't convert arrays of strings or objects to tensors, found {}"


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(value, "_fields")


def _like_mapping(elem, values):
    """A mapping of ``elem``'s type holding ``values`` (a dict when that type can't be built so)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _like_sequence(elem, values):
    """A sequence of ``elem``'s type holding ``values`` (a list when that type can't be built so)."""
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for index, value in enumerate(values):
                clone[index] = value
            return clone
        return type(elem)(values)
    except TypeError:
        return list(values)


def _collate_tensors(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def _collate_numpy_arrays(batch, *, collate_fn_map=None):
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(_ERROR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalars(batch, *, collate_fn_map=None):
    return as_tensor(numpy.asarray(batch))


def _collate_floats(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=_dtypes.float64)


def _collate_ints(batch, *, collate_fn_map=None):
    return tensor(batch)


def _collate_strings(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: _collate_tensors,
    numpy.ndarray: _collate_numpy_arrays,
    (numpy.bool_, numpy.number, numpy.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _collate_strings,
    bytes: _collate_strings,
}


def collate(batch, *, collate_fn_map=None):
    """Merge a list of samples into a batch: ``collate_fn_map`` maps an element type (or a base of it) to a
    function; mappings, namedtuples and sequences are collated field by field, as ``torch.utils.data._utils``'s.

        >>> def collate_ints(batch, *, collate_fn_map=None):
        ...     return sum(batch)
        >>> batch = [{"a": 1, "b": 2}, {"a": 10, "b": 20}]
        >>> agnostic.utils.data.collate(batch, collate_fn_map={int: collate_ints})
        {'a': 11, 'b': 22}
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, function in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return function(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _like_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                    for key in elem})
    if _is_namedtuple(elem):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(sample) == size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        return _like_sequence(elem, [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
    raise TypeError(_ERROR.format(elem_type))


def default_collate(batch):
    """PyTorch's ``default_collate``: tensors are stacked along a new first dimension; NumPy arrays and scalars
    become tensors first; Python floats a float64 tensor, ints (and bools) an int64 tensor; strings stay a list;
    dicts, namedtuples, tuples (as lists) and lists are collated per field.

        >>> agnostic.utils.data.default_collate([agnostic.tensor([1, 2]), agnostic.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
        >>> agnostic.utils.data.default_collate([(1.0, "a"), (2.0, "b")])
        [tensor([1., 2.], dtype=agnostic.float64), ('a', 'b')]
        >>> agnostic.utils.data.default_collate([{"x": 1}, {"x": 2}])
        {'x': tensor([1, 2])}
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """PyTorch's ``default_convert`` (used when ``batch_size=None``): NumPy arrays and scalars become tensors,
    inside mappings, namedtuples and sequences too; everything else is returned as is.

        >>> import numpy
        >>> agnostic.utils.data.default_convert({"x": numpy.array([1, 2]), "name": "sample"})
        {'x': tensor([1, 2]), 'name': 'sample'}
    """
    if isinstance(data, Tensor):
        return data
    elem_type = type(data)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, numpy.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _like_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _like_sequence(data, [default_convert(d) for d in data])
    return data


def pin_memory(data):
    """Copy every CPU tensor in ``data`` (nested as ``default_collate`` builds it) into page-locked memory, as
    PyTorch's pinning does; objects with a ``pin_memory()`` method are pinned by it."""
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        return _like_mapping(data, {key: pin_memory(sample) for key, sample in data.items()})
    if _is_namedtuple(data):
        return type(data)(*(pin_memory(sample) for sample in data))
    if isinstance(data, tuple):
        return [pin_memory(sample) for sample in data]
    if isinstance(data, collections.abc.Sequence):
        return _like_sequence(data, [pin_memory(sample) for sample in data])
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data
