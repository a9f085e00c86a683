"""PyTorch-style ``repr``: ``tensor([1., 2.], device='cuda:0', dtype=agnostic.float64)``, and the print options
that shape it (``set_printoptions``)."""

import math
import sys

import numpy

from . import _dtypes

_PROFILES: dict[str, dict[str, object]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
_OPTIONS: dict[str, object] = {**_PROFILES["default"], "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Set how tensors print, as ``torch.set_printoptions``: ``precision`` digits after the point (4), more than
    ``threshold`` elements (1000) summarized to ``edgeitems`` (3) at each end of each dimension, lines wrapped at
    ``linewidth`` characters (80); ``profile`` ``"default"``, ``"short"`` or ``"full"`` (never summarized) sets all
    four first. ``sci_mode`` True or False forces scientific notation on or off; None (what every call without it
    sets) lets each tensor's values decide.

        >>> agnostic.set_printoptions(precision=2)
        >>> agnostic.tensor([1.23456, 2.0])
        tensor([1.23, 2.00])
        >>> agnostic.set_printoptions(profile="default")
        >>> agnostic.tensor([1.23456, 2.0])
        tensor([1.2346, 2.0000])
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions(): profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        _OPTIONS.update(_PROFILES[profile])
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None:
            _OPTIONS[name] = value
    _OPTIONS["sci_mode"] = sci_mode


def get_printoptions():
    """The current print options, as a dict (``torch._tensor_str.get_printoptions``; see ``set_printoptions``).

        >>> agnostic.get_printoptions()
        {'precision': 4, 'threshold': 1000, 'edgeitems': 3, 'linewidth': 80, 'sci_mode': None}
    """
    return dict(_OPTIONS)


def _float_formatter(values):
    """PyTorch's float formatting: integer mode (``1.``), fixed (``1.5000``) or scientific (``1.0000e+08``), chosen
    from the nonzero finite values unless ``sci_mode`` says, with widths taken from those values only."""
    precision = _OPTIONS["precision"]
    values = values.astype(numpy.float64)
    shown = values[numpy.isfinite(values) & (values != 0)]
    integral = bool((shown == numpy.ceil(shown)).all())
    scientific = False
    if shown.size:
        magnitudes = numpy.abs(shown)
        largest, smallest = magnitudes.max(), magnitudes.min()
        scientific = largest / smallest > 1000.0 or largest > 1.0e8 or (not integral and smallest < 1.0e-4)
    if _OPTIONS["sci_mode"] is not None:
        scientific = _OPTIONS["sci_mode"]
    if scientific:
        def format_one(x):
            return f"{x:.{precision}e}"
    elif integral:
        format_one = _integral
    else:
        def format_one(x):
            return f"{x:.{precision}f}"
    width = max((len(format_one(v)) for v in shown), default=1)
    return lambda x: format_one(x).rjust(width)


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
    edge = _OPTIONS["edgeitems"]
    if array.size <= _OPTIONS["threshold"] or array.ndim == 0:
        return array.reshape(-1)
    index = tuple(numpy.r_[0:min(edge, n), max(n - edge, edge):n] for n in array.shape)
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
            threshold=min(_OPTIONS["threshold"], sys.maxsize), edgeitems=_OPTIONS["edgeitems"],
            max_line_width=_OPTIONS["linewidth"],
        ).replace(", ..., ", ",  ..., ")
    if not _default_dtype_for(dtype) or (array.size == 0 and dtype is not _dtypes.get_default_dtype()):
        suffixes.append(f"dtype={dtype!r}")
    if tensor._grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor._grad_fn.name()}>")
    elif tensor._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes("tensor(" + body, suffixes)


def _with_suffixes(text, suffixes):
    """PyTorch's layout of the suffixes: one that would pass the line width starts a new line, under the body."""
    indent = len("tensor(")
    parts = [text]
    line_length = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        # Measured as PyTorch's (``torch.float16``), so that lines break where PyTorch's do.
        length = len(suffix.replace("agnostic.", "torch."))
        if line_length + length + 2 > _OPTIONS["linewidth"]:
            parts.append(",\n" + " " * indent + suffix)
            line_length = indent + length
        else:
            parts.append(", " + suffix)
            line_length += length + 2
    return "".join(parts) + ")"
