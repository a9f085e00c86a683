"""PyTorch-style ``repr``: ``tensor([1., 2.], device='cuda:0', dtype=agnostic.float64)``."""

import numpy

from . import _dtypes
from ._device import CPU

_SUMMARIZE_OVER = 1000
_EDGE_ITEMS = 3


def _float_formatter(values):
    finite = values[numpy.isfinite(values)].astype(numpy.float64)
    if finite.size == 0:
        return lambda x: _special(x)
    magnitudes = numpy.abs(finite)
    largest, smallest = magnitudes.max(), magnitudes[magnitudes > 0].min() if (magnitudes > 0).any() else 0.0
    integral = bool((finite == numpy.round(finite)).all())
    if integral and largest < 1e8:
        return lambda x: _special(x) or f"{x:.0f}."
    if largest >= 1e8 or (smallest and smallest < 1e-4) or (smallest and largest / smallest > 1000):
        return lambda x: _special(x) or f"{x:.4e}"
    return lambda x: _special(x) or f"{x:.4f}"


def _special(x):
    if numpy.isnan(x):
        return "nan"
    if numpy.isinf(x):
        return "inf" if x > 0 else "-inf"
    return ""


def _aligned(format_one, values):
    width = max((len(format_one(v)) for v in values.reshape(-1)), default=0)
    return lambda x: format_one(x).rjust(width)


def _formatter(array):
    kind = array.dtype.kind
    if kind == "b":
        return {"bool": _aligned(lambda x: "True" if x else "False", _sampled(array))}
    if kind in "iu":
        return {"int": _aligned(str, _sampled(array))}
    if kind == "f":
        sampled = _sampled(array)
        return {"float": _aligned(_float_formatter(sampled), sampled)}
    if kind == "c":
        sampled = _sampled(array)
        real = _float_formatter(sampled.real)
        imag = _float_formatter(sampled.imag)
        return {"complex_kind": lambda z: f"{real(z.real)}{'+' if z.imag >= 0 or numpy.isnan(z.imag) else '-'}"
                                          f"{imag(abs(z.imag))}j"}
    return {}


def _sampled(array):
    """The elements that will be shown (edges only for summarized tensors)."""
    if array.size <= _SUMMARIZE_OVER or array.ndim == 0:
        return array.reshape(-1)
    index = tuple(numpy.r_[0:min(_EDGE_ITEMS, n), max(n - _EDGE_ITEMS, _EDGE_ITEMS):n] for n in array.shape)
    return array[numpy.ix_(*index)].reshape(-1)


def _default_dtype_for(dtype):
    default = _dtypes.get_default_dtype()
    return dtype in (default, default.to_complex(), _dtypes.int64, _dtypes.bool)


def tensor_repr(tensor):
    array = tensor._host_array()
    dtype = tensor.dtype
    if array.dtype.kind == "V" or dtype is _dtypes.bfloat16:
        array = array.astype(numpy.float32)
    suffixes = []
    if tensor._device is not CPU:
        suffixes.append(f"device='{tensor._device}'")
    if array.size == 0:
        body = "[]"
        if array.shape != (0,):
            suffixes.insert(0, f"size={tuple(array.shape)}")
    elif array.ndim == 0:
        body = _formatter(array).popitem()[1](array[()]).strip()
    else:
        body = numpy.array2string(
            array, separator=", ", prefix="tensor(", formatter=_formatter(array),
            threshold=_SUMMARIZE_OVER, edgeitems=_EDGE_ITEMS, max_line_width=80,
        )
    if not _default_dtype_for(dtype) or (array.size == 0 and dtype is not _dtypes.get_default_dtype()):
        suffixes.append(f"dtype={dtype!r}")
    return "tensor(" + ", ".join([body] + suffixes) + ")"
