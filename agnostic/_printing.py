"""PyTorch-style ``repr``: ``tensor([1., 2.], device='cuda:0', dtype=agnostic.float64)``."""

import numpy

from . import _dtypes

_SUMMARIZE_OVER = 1000
_EDGE_ITEMS = 3


def _float_formatter(values):
    """PyTorch's float formatting: integer mode (``1.``), fixed (``1.5000``) or scientific (``1.0000e+08``),
    with widths taken from the nonzero finite values only."""
    values = values.astype(numpy.float64)
    shown = values[numpy.isfinite(values) & (values != 0)]
    if shown.size == 0:
        return lambda x: _integral(x).rjust(1)
    magnitudes = numpy.abs(shown)
    largest, smallest = magnitudes.max(), magnitudes.min()
    integral = bool((shown == numpy.ceil(shown)).all())
    wide = largest / smallest > 1000.0 or largest > 1.0e8
    if integral and not wide:
        width = max(len(f"{v:.0f}") + 1 for v in shown)
        return lambda x: _integral(x).rjust(width)
    if wide or (not integral and smallest < 1.0e-4):
        width = max(len(f"{v:.4e}") for v in shown)
        return lambda x: f"{x:{width}.4e}"
    width = max(len(f"{v:.4f}") for v in shown)
    return lambda x: f"{x:.4f}".rjust(width)


def _integral(x):
    text = f"{x:.0f}"
    return text if numpy.isnan(x) or numpy.isinf(x) else text + "."


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
        return {"float": _float_formatter(_sampled(array))}
    if kind == "c":
        sampled = _sampled(array)
        real = _float_formatter(sampled.real)
        imag = _float_formatter(sampled.imag)
        return {"complex_kind": lambda z: real(z.real) + _signed(imag(z.imag).lstrip()) + "j"}
    return {}


def _signed(text):
    return text if text[0] in "+-" else "+" + text


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
    if not tensor._device.backend.host:
        suffixes.append(f"device='{tensor._device}'")
    if array.size == 0:
        body = "[]"
        if array.shape != (0,):
            suffixes.append(f"size={tuple(array.shape)}")
    elif array.ndim == 0:
        body = _formatter(array).popitem()[1](array[()]).strip()
    else:
        body = numpy.array2string(
            array, separator=", ", prefix="tensor(", formatter=_formatter(array),
            threshold=_SUMMARIZE_OVER, edgeitems=_EDGE_ITEMS, max_line_width=80,
        ).replace(", ..., ", ",  ..., ")
    if not _default_dtype_for(dtype) or (array.size == 0 and dtype is not _dtypes.get_default_dtype()):
        suffixes.append(f"dtype={dtype!r}")
    if tensor._grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor._grad_fn.name()}>")
    elif tensor._requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + ", ".join([body] + suffixes) + ")"
