"""The Python Array API standard (revision 2024.12) over agnostic tensors: ``Tensor.__array_namespace__()``.

Libraries written against the standard (scikit-learn's ``array_api_dispatch``, SciPy, array-api-extra) take agnostic
tensors through this namespace. Its functions are agnostic's public ops (so autograd and every device work through
them), bridged where PyTorch and the standard disagree; the tensors themselves keep PyTorch's behaviour:

- promotion: the namespace's functions promote 0-D arrays like any other (PyTorch lets a 0-D tensor take the other
  operand's dtype) and refuse mixed kinds such as ``int8`` with ``float32`` (TypeError); Python scalars take the
  array's dtype. Tensor operators (``x + y``) follow PyTorch.
- reductions take ``axis`` (int, tuple or ``()``) and ``keepdims`` with ``axis=None``; ``std``/``var`` take a float
  ``correction``; ``sort`` returns only the values and is stable by default; ``unique_*`` count every NaN apart.
- ``floor_divide``/``remainder`` of floats follow the standard's special cases (the signs of zeros and infinities).
- ``can_cast``/``result_type``/``finfo``/``iinfo`` follow the standard's tables (``can_cast(int64, float32)`` is
  False here, True in PyTorch); ``finfo(...).dtype`` is the dtype object.
- ``Tensor.size`` stays PyTorch's method (the standard's ``size`` is an int attribute): use ``math.prod(x.shape)``.

Conformance: the standard's test suite (array-api-tests) passes with no failure in the namespace's functions. Its
deliberate exceptions, all in the Tensor object (which keeps PyTorch's behaviour), are listed in
``tests/array_api_tests_xfails.txt`` in the source tree (the suite's ``--xfails-file``):

- Tensor operators (``x1 - x2``, ``x1 << x2``, ``x1 ** x2``...) promote a 0-D tensor like PyTorch: it takes the
  other operand's dtype (``int16`` 0-D ``-`` ``int8`` array gives ``int8``; the standard says ``int16``).
- ``//`` and ``%`` on Tensors keep PyTorch's results for signed zeros and infinities (``-0.0 % 3`` is ``-0.0``).
- Tensor indexing and item assignment refuse slices with a negative step, as PyTorch does.
- a boolean mask with an axis of size 0 where ``x``'s axis has size 1 is refused (IndexError), as in PyTorch and
  NumPy; the suite expects it to select nothing.
- ``uint16``/``uint32``/``uint64`` do not exist in agnostic: run the suite with
  ``ARRAY_API_TESTS_SKIP_DTYPES=uint16,uint32,uint64``.
- CUDA tensors answer ``__dlpack__(dl_device=CPU, copy=False)`` with the standard's ``BufferError`` (GPU memory
  reaches the host only as a copy); the suite asks it of every array.

Run the suite from its own directory with ``--rootdir .`` (else pytest may take an enclosing project's root, and the
xfails file's test ids then match nothing), and on CUDA with ``--disable-deadline``: a kernel's first call compiles it.

The default device of the creation functions is agnostic's: ``agnostic.set_default_device("cuda")`` moves it, e.g. for
the suite: ``ARRAY_API_TESTS_MODULE="exec('import agnostic, agnostic.array_api as xp;
agnostic.set_default_device(\"cuda\")')"``.

    >>> xp = agnostic.ones(2).__array_namespace__()
    >>> xp.sum(xp.asarray([[1, 2], [3, 4]]), axis=0)
    tensor([4, 6])
"""

import builtins
import math
from typing import NamedTuple

import numpy

import agnostic
from . import _helpers, fft, linalg
from ._helpers import Tensor, binary, keep_dims, normalize_axes, on_backend, promoted
from ._info import __array_namespace_info__

__array_api_version__ = "2024.12"
SUPPORTED_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

bool = agnostic.bool
int8, int16, int32, int64 = agnostic.int8, agnostic.int16, agnostic.int32, agnostic.int64
uint8 = agnostic.uint8
float32, float64 = agnostic.float32, agnostic.float64
complex64, complex128 = agnostic.complex64, agnostic.complex128

e = math.e
inf = math.inf
nan = math.nan
pi = math.pi
newaxis = None


# ---------------------------------------------------------------------------------------------------- creation


def _device_of(device):
    return agnostic.get_default_device() if device is None else agnostic.device(device)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """Convert ``obj`` (an array, a nested sequence of scalars, a buffer) to an array; ``copy=False`` refuses to copy.

        >>> agnostic.array_api.asarray([1.0, 2.0], dtype=agnostic.float64)
        tensor([1., 2.], dtype=agnostic.float64)
    """
    if isinstance(obj, Tensor):
        target_device = obj.device if device is None else agnostic.device(device)
        target_dtype = obj.dtype if dtype is None else dtype
        if target_dtype == obj.dtype and target_device == obj.device:
            return obj.clone() if copy else obj
        if copy is False:
            raise ValueError("asarray(copy=False) cannot change the dtype or device without a copy: "
                             "pass copy=None to allow one")
        return obj.to(device=target_device, dtype=target_dtype)
    if copy is False and not (hasattr(obj, "__array_interface__") or hasattr(obj, "__dlpack__")
                              or hasattr(obj, "__cuda_array_interface__")):
        raise ValueError(f"asarray(copy=False) cannot share memory with a {type(obj).__name__}: pass copy=None")
    if hasattr(obj, "__array_interface__") or hasattr(obj, "__cuda_array_interface__") or hasattr(obj, "__dlpack__"):
        host = isinstance(obj, numpy.ndarray)
        # A host array goes to the default device; a device array stays where it is unless told otherwise.
        result = agnostic.as_tensor(obj, dtype=dtype, device=_device_of(device) if host else device)
        if copy is False and host and result.device != agnostic.device("cpu"):
            raise ValueError(f"asarray(copy=False) cannot share a NumPy array's memory on {result.device}")
        return result.clone() if copy else result
    if isinstance(obj, (bytes, bytearray, memoryview)):  # host memory: NumPy reads it without a copy
        return asarray(numpy.frombuffer(obj, dtype=numpy.uint8), dtype=dtype, device=device, copy=copy)
    if dtype is None and isinstance(obj, (list, tuple)):
        obj = _unwrap_scalars(obj)
    return agnostic.tensor(obj, dtype=dtype, device=_device_of(device))


def _unwrap_scalars(obj):
    """Nested sequences may hold 0-D arrays: their Python values, so inference sees bools, ints and floats."""
    if isinstance(obj, (list, tuple)):
        return [_unwrap_scalars(item) for item in obj]
    if isinstance(obj, Tensor):
        return obj.tolist()
    return obj


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)``; empty when ``step`` points away from ``stop``.

        >>> agnostic.array_api.arange(3, 0)
        tensor([], dtype=agnostic.int64)
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange() step must not be zero")
    if dtype is None:
        integral = builtins.all(isinstance(v, int) for v in (start, stop, step))
        dtype = agnostic.int64 if integral else agnostic.get_default_dtype()
    length = builtins.max(math.ceil((stop - start) / step), 0)
    if length == 0:
        return agnostic.empty(0, dtype=dtype, device=_device_of(device))
    return agnostic.arange(start, stop, step, dtype=dtype, device=_device_of(device))[:length]


def empty(shape, *, dtype=None, device=None):
    """An uninitialized array.

        >>> agnostic.array_api.empty((2, 3)).shape
        agnostic.Size([2, 3])
    """
    return agnostic.empty(shape, dtype=dtype, device=_device_of(device))


def zeros(shape, *, dtype=None, device=None):
    """An array of zeros.

        >>> agnostic.array_api.zeros(2)
        tensor([0., 0.])
    """
    return agnostic.zeros(shape, dtype=dtype, device=_device_of(device))


def ones(shape, *, dtype=None, device=None):
    """An array of ones.

        >>> agnostic.array_api.ones(2, dtype=agnostic.int32)
        tensor([1, 1], dtype=agnostic.int32)
    """
    return agnostic.ones(shape, dtype=dtype, device=_device_of(device))


def _default_dtype_of(value):
    if isinstance(value, builtins.bool):
        return agnostic.bool
    if isinstance(value, int):
        return agnostic.int64
    if isinstance(value, float):
        return agnostic.get_default_dtype()
    return agnostic.complex128 if agnostic.get_default_dtype() == agnostic.float64 else agnostic.complex64


def full(shape, fill_value, *, dtype=None, device=None):
    """An array filled with ``fill_value`` (a bool, int, float or complex picks the default dtype of its kind).

        >>> agnostic.array_api.full(2, 7)
        tensor([7, 7])
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dtype = _default_dtype_of(fill_value) if dtype is None else dtype
    return agnostic.full(shape, fill_value, dtype=dtype, device=_device_of(device))


def _like(x, dtype, device):
    return (x.dtype if dtype is None else dtype), (x.device if device is None else agnostic.device(device))


def empty_like(x, /, *, dtype=None, device=None):
    """An uninitialized array with ``x``'s shape (and dtype and device unless given).

        >>> agnostic.array_api.empty_like(agnostic.ones(2)).shape
        agnostic.Size([2])
    """
    dtype, device = _like(x, dtype, device)
    return agnostic.empty(tuple(x.shape), dtype=dtype, device=device)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros with ``x``'s shape.

        >>> agnostic.array_api.zeros_like(agnostic.ones(2))
        tensor([0., 0.])
    """
    dtype, device = _like(x, dtype, device)
    return agnostic.zeros(tuple(x.shape), dtype=dtype, device=device)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones with ``x``'s shape.

        >>> agnostic.array_api.ones_like(agnostic.zeros(2))
        tensor([1., 1.])
    """
    dtype, device = _like(x, dtype, device)
    return agnostic.ones(tuple(x.shape), dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` with ``x``'s shape.

        >>> agnostic.array_api.full_like(agnostic.zeros(2), 3.0)
        tensor([3., 3.])
    """
    dtype, device = _like(x, dtype, device)
    return agnostic.full(tuple(x.shape), fill_value, dtype=dtype, device=device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """A 2-D array with ones on the ``k``-th diagonal.

        >>> agnostic.array_api.eye(2, 3, k=1)
        tensor([[0., 1., 0.],
                [0., 0., 1.]])
    """
    n_cols = n_rows if n_cols is None else n_cols
    k = builtins.min(builtins.max(k, -n_rows - 1), n_cols + 1)  # any farther diagonal is just as empty
    rows = agnostic.arange(n_rows, device=_device_of(device)).reshape(n_rows, 1)
    cols = agnostic.arange(n_cols, device=_device_of(device)).reshape(1, n_cols)
    dtype = agnostic.get_default_dtype() if dtype is None else dtype
    return agnostic.eq(cols - rows, k).to(dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """``num`` evenly spaced values from ``start`` to ``stop`` (excluded when ``endpoint=False``).

        >>> agnostic.array_api.linspace(0, 1, 4, endpoint=False)
        tensor([0.0000, 0.2500, 0.5000, 0.7500])
    """
    if dtype is None:
        dtype = agnostic.complex64 if builtins.any(isinstance(v, complex) for v in (start, stop)) \
            else agnostic.get_default_dtype()
        if dtype == agnostic.complex64 and agnostic.get_default_dtype() == agnostic.float64:
            dtype = agnostic.complex128
    if not endpoint:
        return agnostic.linspace(start, stop, num + 1, dtype=dtype, device=_device_of(device))[:num]
    return agnostic.linspace(start, stop, num, dtype=dtype, device=_device_of(device))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate matrices from 1-D arrays (``indexing`` ``"xy"`` or ``"ij"``).

        >>> [a.shape for a in agnostic.array_api.meshgrid(agnostic.ones(2), agnostic.ones(3))]
        [agnostic.Size([3, 2]), agnostic.Size([3, 2])]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid indexing must be 'xy' or 'ij', got {indexing!r}")
    if not arrays:
        return []
    dtype = result_type(*arrays)
    return list(agnostic.meshgrid(*(a.to(dtype) for a in arrays), indexing=indexing))


def tril(x, /, *, k=0):
    """The lower triangle of the last two axes.

        >>> agnostic.array_api.tril(agnostic.ones(2, 2))
        tensor([[1., 0.],
                [1., 1.]])
    """
    return agnostic.tril(x, k)


def triu(x, /, *, k=0):
    """The upper triangle of the last two axes.

        >>> agnostic.array_api.triu(agnostic.ones(2, 2))
        tensor([[1., 1.],
                [0., 1.]])
    """
    return agnostic.triu(x, k)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array sharing ``x``'s memory through DLPack (``agnostic.from_dlpack``).

        >>> import numpy
        >>> agnostic.array_api.from_dlpack(numpy.arange(2))
        tensor([0, 1])
    """
    return agnostic.from_dlpack(x, device=device, copy=copy)


# ---------------------------------------------------------------------------------------------------- data types


class finfo_object(NamedTuple):
    """Machine limits of a floating-point dtype, as ``finfo`` returns them.

        >>> agnostic.array_api.finfo(agnostic.float64).eps
        2.220446049250313e-16
    """
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: object


class iinfo_object(NamedTuple):
    """Machine limits of an integer dtype, as ``iinfo`` returns them.

        >>> agnostic.array_api.iinfo(agnostic.uint8).max
        255
    """
    bits: int
    max: int
    min: int
    dtype: object


def _dtype_of(value):
    return value.dtype if isinstance(value, Tensor) else value


def finfo(type, /):
    """Limits of a floating-point dtype (of its real part for complex dtypes).

        >>> agnostic.array_api.finfo(agnostic.float32).bits
        32
    """
    dtype = _dtype_of(type)
    real = {agnostic.complex64: agnostic.float32, agnostic.complex128: agnostic.float64}.get(dtype, dtype)
    info = agnostic.finfo(real)
    return finfo_object(info.bits, float(info.eps), float(info.max), float(info.min), float(info.smallest_normal),
                        real)


def iinfo(type, /):
    """Limits of an integer dtype.

        >>> agnostic.array_api.iinfo(agnostic.int8).max
        127
    """
    dtype = _dtype_of(type)
    info = agnostic.iinfo(dtype)
    return iinfo_object(info.bits, int(info.max), int(info.min), dtype)


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind`` (a dtype, a kind name such as ``"integral"``, or a tuple of them).

        >>> agnostic.array_api.isdtype(agnostic.float32, ("integral", "real floating"))
        True
    """
    if isinstance(kind, tuple):
        return builtins.any(_helpers.is_kind(dtype, k) for k in kind)
    return _helpers.is_kind(dtype, kind)


def result_type(*arrays_and_dtypes):
    """The dtype the standard's promotion gives these arrays, dtypes and Python scalars.

        >>> agnostic.array_api.result_type(agnostic.int8, agnostic.uint8)
        agnostic.int16
    """
    dtypes = [_dtype_of(a) for a in arrays_and_dtypes if not isinstance(a, (builtins.bool, int, float, complex))]
    scalars = [a for a in arrays_and_dtypes if isinstance(a, (builtins.bool, int, float, complex))]
    if not dtypes:
        raise ValueError("result_type() needs at least one array or dtype")
    result = dtypes[0]
    for dtype in dtypes[1:]:
        result = _helpers.promote(result, dtype)
    for scalar in scalars:
        if not _helpers.scalar_fits(scalar, result):
            raise TypeError(f"a Python {type(scalar).__name__} does not promote with {result} in the standard")
    return result


def can_cast(from_, to, /):
    """Whether the standard's promotion turns ``from_`` into ``to`` (stricter than PyTorch's ``can_cast``).

        >>> agnostic.array_api.can_cast(agnostic.int64, agnostic.float32)
        False
    """
    try:
        return _helpers.promote(_dtype_of(from_), to) == to
    except TypeError:
        return False


def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` cast to ``dtype`` (and moved to ``device``); ``copy=False`` returns ``x`` itself when nothing changes.

        >>> agnostic.array_api.astype(agnostic.ones(2), agnostic.int32)
        tensor([1, 1], dtype=agnostic.int32)
    """
    if isinstance(dtype, str):
        raise TypeError("astype() takes a dtype object, not a string: use agnostic.array_api.float32 etc.")
    if not copy and x.dtype == dtype and (device is None or agnostic.device(device) == x.device):
        return x
    result = x.to(dtype=dtype) if device is None else x.to(device=device, dtype=dtype)
    return result.clone() if result is x else result


# ---------------------------------------------------------------------------------------------------- elementwise


def _unary(op, doc_example):
    def function(x, /):
        return op(x)
    function.__doc__ = doc_example
    return function


def _float_only(op):
    def function(x, /):
        if not x.dtype.is_floating_point and not x.dtype.is_complex:
            x = x.to(agnostic.get_default_dtype())
        return op(x)
    return function


def _doc(name, example, result):
    return f"""The standard's ``{name}``, elementwise.

        >>> agnostic.array_api.{name}({example})
        {result}
    """


_UNARY = {
    "abs": (agnostic.abs, "agnostic.tensor([-1.0, 2.0])", "tensor([1., 2.])"),
    "acos": (agnostic.acos, "agnostic.tensor([1.0])", "tensor([0.])"),
    "acosh": (agnostic.acosh, "agnostic.tensor([1.0])", "tensor([0.])"),
    "asin": (agnostic.asin, "agnostic.tensor([0.0])", "tensor([0.])"),
    "asinh": (agnostic.asinh, "agnostic.tensor([0.0])", "tensor([0.])"),
    "atan": (agnostic.atan, "agnostic.tensor([0.0])", "tensor([0.])"),
    "atanh": (agnostic.atanh, "agnostic.tensor([0.0])", "tensor([0.])"),
    "cos": (agnostic.cos, "agnostic.tensor([0.0])", "tensor([1.])"),
    "cosh": (agnostic.cosh, "agnostic.tensor([0.0])", "tensor([1.])"),
    "exp": (agnostic.exp, "agnostic.tensor([0.0])", "tensor([1.])"),
    "isfinite": (agnostic.isfinite, "agnostic.tensor([1.0, float('inf')])", "tensor([ True, False])"),
    "isinf": (agnostic.isinf, "agnostic.tensor([1.0, float('inf')])", "tensor([False,  True])"),
    "isnan": (agnostic.isnan, "agnostic.tensor([1.0, float('nan')])", "tensor([False,  True])"),
    "log": (agnostic.log, "agnostic.tensor([1.0])", "tensor([0.])"),
    "log1p": (agnostic.log1p, "agnostic.tensor([0.0])", "tensor([0.])"),
    "log2": (agnostic.log2, "agnostic.tensor([4.0])", "tensor([2.])"),
    "log10": (agnostic.log10, "agnostic.tensor([1.0])", "tensor([0.])"),
    "logical_not": (agnostic.logical_not, "agnostic.tensor([True])", "tensor([False])"),
    "negative": (agnostic.negative, "agnostic.tensor([1])", "tensor([-1])"),
    "reciprocal": (agnostic.reciprocal, "agnostic.tensor([2.0])", "tensor([0.5000])"),
    "sin": (agnostic.sin, "agnostic.tensor([0.0])", "tensor([0.])"),
    "sinh": (agnostic.sinh, "agnostic.tensor([0.0])", "tensor([0.])"),
    "sqrt": (agnostic.sqrt, "agnostic.tensor([4.0])", "tensor([2.])"),
    "square": (agnostic.square, "agnostic.tensor([3])", "tensor([9])"),
    "tan": (agnostic.tan, "agnostic.tensor([0.0])", "tensor([0.])"),
    "signbit": (agnostic.signbit, "agnostic.tensor([-0.0, 1.0])", "tensor([ True, False])"),
    "bitwise_invert": (agnostic.bitwise_not, "agnostic.tensor([0], dtype=agnostic.int8)",
                       "tensor([-1], dtype=agnostic.int8)"),
}

for _name, (_op, _example, _result) in _UNARY.items():
    globals()[_name] = _unary(_op, _doc(_name, _example, _result))
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name


def _integer_passthrough(op, name):
    def function(x, /):
        return x.clone() if x.dtype in _helpers.INTEGERS + _helpers.BOOL else op(x)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = _doc(name, "agnostic.tensor([-1.5, 1.5])", {
        "ceil": "tensor([-1.,  2.])", "floor": "tensor([-2.,  1.])", "trunc": "tensor([-1.,  1.])"}[name])
    return function


ceil = _integer_passthrough(agnostic.ceil, "ceil")
floor = _integer_passthrough(agnostic.floor, "floor")
trunc = _integer_passthrough(agnostic.trunc, "trunc")


def expm1(x, /):
    """``exp(x) - 1``, accurate near 0; complex arrays follow the standard's special cases.

        >>> agnostic.array_api.expm1(agnostic.tensor([0.0]))
        tensor([0.])
    """
    if not x.dtype.is_complex:
        return agnostic.expm1(x)
    a, b = real(x), imag(x)
    # exp(a + bj) - 1 = (expm1(a) cos b - 2 sin^2(b/2)) + exp(a) sin(b) j, free of cancellation near 0.
    real_part = agnostic.expm1(a) * agnostic.cos(b) - 2 * agnostic.sin(b / 2) ** 2
    imag_part = agnostic.exp(a) * agnostic.sin(b)
    unbounded_b = ~agnostic.isfinite(b)
    real_part = agnostic.where(b == 0, agnostic.expm1(a) + 0.0, real_part)  # + 0.0: expm1(-0 + 0j) is +0 + 0j
    imag_part = agnostic.where(b == 0, b, imag_part)
    real_part = agnostic.where((a == -math.inf) & unbounded_b, agnostic.full_like(a, -1.0), real_part)
    imag_part = agnostic.where((a == -math.inf) & unbounded_b, agnostic.zeros_like(b), imag_part)
    real_part = agnostic.where((a == math.inf) & unbounded_b, a, real_part)
    imag_part = agnostic.where((a == math.inf) & unbounded_b, agnostic.full_like(b, math.nan), imag_part)
    return _helpers.complex_from_parts(real_part, imag_part, x.dtype)


def tanh(x, /):
    """The hyperbolic tangent; complex arrays follow the standard's special cases.

        >>> agnostic.array_api.tanh(agnostic.tensor([0.0]))
        tensor([0.])
    """
    result = agnostic.tanh(x)
    if not x.dtype.is_complex:
        return result
    a, b = real(x), imag(x)
    # The standard: tanh(+-inf + bj) is +-1 + 0j with the zero of b's sign (NumPy takes the sign of sin(2b)).
    saturated = agnostic.isinf(a) & agnostic.isfinite(b)
    zero_with_sign = agnostic.copysign(agnostic.zeros_like(b), b)
    real_part = agnostic.where(saturated, agnostic.sign(a), real(result))
    imag_part = agnostic.where(saturated, zero_with_sign, imag(result))
    return _helpers.complex_from_parts(real_part, imag_part, x.dtype)


def positive(x, /):
    """``+x`` (a copy).

        >>> agnostic.array_api.positive(agnostic.tensor([-1]))
        tensor([-1])
    """
    return x.clone()


def conj(x, /):
    """The complex conjugate (real arrays unchanged).

        >>> agnostic.array_api.conj(agnostic.tensor([1.0]))
        tensor([1.])
    """
    return agnostic.conj(x) if x.dtype.is_complex else x.clone()


def real(x, /):
    """The real part (real arrays unchanged).

        >>> agnostic.array_api.real(agnostic.tensor([1.0]))
        tensor([1.])
    """
    return on_backend("real", x) if x.dtype.is_complex else x.clone()


def imag(x, /):
    """The imaginary part (zeros for real arrays).

        >>> agnostic.array_api.imag(agnostic.tensor([1.0]))
        tensor([0.])
    """
    return on_backend("imag", x) if x.dtype.is_complex else agnostic.zeros_like(x)


def round(x, /):
    """Round half to even.

        >>> agnostic.array_api.round(agnostic.tensor([0.5, 1.5]))
        tensor([0., 2.])
    """
    if x.dtype in _helpers.INTEGERS:
        return x.clone()
    return on_backend("round", x) if x.dtype.is_complex else agnostic.round(x)


def sign(x, /):
    """The sign: -1, 0 or 1 (NaN for NaN; ``x / |x|`` for complex).

        >>> agnostic.array_api.sign(agnostic.tensor([-2.0, 0.0, float('nan')]))
        tensor([-1.,  0., nan])
    """
    if x.dtype.is_complex:
        magnitude = agnostic.abs(x)
        return agnostic.where(magnitude == 0, agnostic.zeros_like(x), x / magnitude.to(x.dtype))
    result = agnostic.sign(x)
    if x.dtype.is_floating_point:
        result = agnostic.where(agnostic.isnan(x), x, result)
    return result


def clip(x, /, min=None, max=None):
    """``x`` limited to ``[min, max]`` (bounds are arrays or Python scalars; NaN bounds give NaN).

        >>> agnostic.array_api.clip(agnostic.tensor([1, 5, 9]), 2, 6)
        tensor([2, 5, 6])
    """
    result = x.clone()
    if min is not None:
        low = _helpers.as_operand(min, x).to(x.dtype)
        result = agnostic.where(result < low, low, result) if not x.dtype.is_floating_point else \
            agnostic.where(agnostic.isnan(low) | (result < low), low, result)
    if max is not None:
        high = _helpers.as_operand(max, x).to(x.dtype)
        result = agnostic.where(result > high, high, result) if not x.dtype.is_floating_point else \
            agnostic.where(agnostic.isnan(high) | (result > high), high, result)
    return agnostic.broadcast_to(result, agnostic.broadcast_shapes(*(
        v.shape for v in (x, min, max) if isinstance(v, Tensor)))).clone() if result.shape != x.shape else result


def _binary_doc(name, result):
    return f"""The standard's ``{name}``: elementwise, broadcasting, scalars on either side, standard promotion.

        >>> agnostic.array_api.{name}(agnostic.tensor([1.0, 4.0]), 2.0)
        {result}
    """


_BINARY = {
    "add": (agnostic.add, "tensor([3., 6.])"),
    "atan2": (agnostic.atan2, "tensor([0.4636, 1.1071])"),
    "copysign": (agnostic.copysign, "tensor([1., 4.])"),
    "divide": (agnostic.divide, "tensor([0.5000, 2.0000])"),
    "equal": (agnostic.eq, "tensor([False, False])"),
    "greater": (agnostic.greater, "tensor([False,  True])"),
    "greater_equal": (agnostic.greater_equal, "tensor([False,  True])"),
    "hypot": (agnostic.hypot, "tensor([2.2361, 4.4721])"),
    "less": (agnostic.less, "tensor([ True, False])"),
    "less_equal": (agnostic.less_equal, "tensor([ True, False])"),
    "maximum": (agnostic.maximum, "tensor([2., 4.])"),
    "minimum": (agnostic.minimum, "tensor([1., 2.])"),
    "multiply": (agnostic.multiply, "tensor([2., 8.])"),
    "not_equal": (agnostic.not_equal, "tensor([True, True])"),
    "pow": (agnostic.pow, "tensor([ 1., 16.])"),
    "subtract": (agnostic.subtract, "tensor([-1.,  2.])"),
}

for _name, (_op, _result) in _BINARY.items():
    globals()[_name] = binary(_op)
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name
    globals()[_name].__doc__ = _binary_doc(_name, _result)


def _bitwise_doc(name, result):
    return f"""The standard's ``{name}`` of integer or boolean arrays (scalars on either side).

        >>> agnostic.array_api.{name}(agnostic.tensor([12]), 10)
        {result}
    """


_BITWISE = {
    "bitwise_and": (agnostic.bitwise_and, "tensor([8])"),
    "bitwise_or": (agnostic.bitwise_or, "tensor([14])"),
    "bitwise_xor": (agnostic.bitwise_xor, "tensor([6])"),
    "bitwise_left_shift": (agnostic.bitwise_left_shift, "tensor([12288])"),
    "bitwise_right_shift": (agnostic.bitwise_right_shift, "tensor([0])"),
}

for _name, (_op, _result) in _BITWISE.items():
    globals()[_name] = binary(_op)
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name
    globals()[_name].__doc__ = _bitwise_doc(_name, _result)


def _logical(op, name, result):
    def function(x1, x2, /):
        return op(*promoted(x1, x2))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"""The standard's ``{name}`` of boolean arrays.

        >>> agnostic.array_api.{name}(agnostic.tensor([True, False]), True)
        {result}
    """
    return function


logical_and = _logical(agnostic.logical_and, "logical_and", "tensor([ True, False])")
logical_or = _logical(agnostic.logical_or, "logical_or", "tensor([True, True])")
logical_xor = _logical(agnostic.logical_xor, "logical_xor", "tensor([False,  True])")


def floor_divide(x1, x2, /):
    """``floor(x1 / x2)``, with the standard's special cases of zeros and infinities for floats.

        >>> agnostic.array_api.floor_divide(agnostic.tensor([7.0, -7.0]), 2)
        tensor([ 3., -4.])
    """
    x1, x2 = promoted(x1, x2)
    if not x1.dtype.is_floating_point:
        return agnostic.floor_divide(x1, x2)
    x1, x2 = agnostic.broadcast_tensors(x1, x2)
    # NumPy's and CuPy's floor_divide go through fmod, which gives NaN for infinite operands where the standard
    # wants floor(x1 / x2): inf // 2 -> inf, -1 // inf -> -0.
    infinite = agnostic.isinf(x1) | agnostic.isinf(x2)
    return agnostic.where(infinite, agnostic.floor(x1 / x2), on_backend("floor_divide", x1, x2))


def remainder(x1, x2, /):
    """``x1 - floor_divide(x1, x2) * x2``, the sign of ``x2`` (the standard's special cases for floats).

        >>> agnostic.array_api.remainder(agnostic.tensor([7, -7]), 3)
        tensor([1, 2])
    """
    x1, x2 = promoted(x1, x2)
    if not x1.dtype.is_floating_point:
        return agnostic.remainder(x1, x2)
    # NumPy's formula, from fmod (exact on every device; CuPy's own remainder differs at zeros and infinities): the
    # remainder moves into the divisor's sign, and a zero takes the divisor's sign.
    x1, x2 = agnostic.broadcast_tensors(x1, x2)
    rest = agnostic.fmod(x1, x2)
    moved = (rest != 0) & ((rest < 0) != (x2 < 0))
    return agnostic.where(moved, rest + x2, agnostic.where(rest == 0, agnostic.copysign(rest, x2), rest))


def logaddexp(x1, x2, /):
    """``log(exp(x1) + exp(x2))`` without overflow.

        >>> agnostic.array_api.logaddexp(agnostic.tensor([0.0]), 0.0)
        tensor([0.6931])
    """
    x1, x2 = promoted(x1, x2)
    larger = agnostic.maximum(x1, x2)
    finite = agnostic.isfinite(larger)
    safe = agnostic.where(finite, larger, agnostic.zeros_like(larger))
    summed = safe + agnostic.log(agnostic.exp(x1 - safe) + agnostic.exp(x2 - safe))
    both_infinite = agnostic.isinf(x1) & agnostic.isinf(x2) & (x1 == x2)
    return agnostic.where(both_infinite | (agnostic.isinf(larger) & (larger > 0)), larger, summed)


def nextafter(x1, x2, /):
    """The next floating-point value after ``x1`` towards ``x2``.

        >>> agnostic.array_api.nextafter(agnostic.tensor([0.0]), 1.0) > 0
        tensor([True])
    """
    x1, x2 = promoted(x1, x2)
    return on_backend("nextafter", *agnostic.broadcast_tensors(x1, x2))


# ---------------------------------------------------------------------------------------------------- indexing


def take(x, indices, /, *, axis=None):
    """Elements of ``x`` at ``indices`` along ``axis`` (negative indices count from the end).

        >>> agnostic.array_api.take(agnostic.tensor([10, 20, 30]), agnostic.tensor([0, -1]))
        tensor([10, 30])
    """
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take() needs axis for arrays of more than one dimension")
        axis = 0
    indices = agnostic.where(indices < 0, indices + x.shape[axis], indices)
    return agnostic.index_select(x, axis, indices)


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of ``x`` at ``indices`` of the same rank, along ``axis``.

        >>> agnostic.array_api.take_along_axis(agnostic.tensor([[10, 20]]), agnostic.tensor([[1, 0]]))
        tensor([[20, 10]])
    """
    indices = agnostic.where(indices < 0, indices + x.shape[axis], indices)
    return agnostic.take_along_dim(x, indices, dim=axis)


# ---------------------------------------------------------------------------------------------------- linear algebra


def matmul(x1, x2, /):
    """Matrix product with the standard's promotion.

        >>> agnostic.array_api.matmul(agnostic.ones(2, 3), agnostic.ones(3))
        tensor([3., 3.])
    """
    x1, x2 = promoted(x1, x2)
    return agnostic.matmul(x1, x2)


def matrix_transpose(x, /):
    """The transpose of the last two axes.

        >>> agnostic.array_api.matrix_transpose(agnostic.ones(2, 3)).shape
        agnostic.Size([3, 2])
    """
    if x.ndim < 2:
        raise ValueError("matrix_transpose() needs an array of at least two dimensions")
    return agnostic.swapaxes(x, -1, -2)


def tensordot(x1, x2, /, *, axes=2):
    """Contraction of ``x1`` and ``x2`` over ``axes``.

        >>> agnostic.array_api.tensordot(agnostic.ones(2, 3), agnostic.ones(3, 2), axes=1)
        tensor([[3., 3.],
                [3., 3.]])
    """
    x1, x2 = promoted(x1, x2)
    if not isinstance(axes, int):
        axes = (list(axes[0]), list(axes[1]))
    return agnostic.tensordot(x1, x2, dims=axes)


def vecdot(x1, x2, /, *, axis=-1):
    """The dot product of vectors along ``axis`` (``x1`` conjugated), broadcasting the other axes.

        >>> agnostic.array_api.vecdot(agnostic.tensor([1.0, 2.0]), agnostic.tensor([3.0, 4.0]))
        tensor(11.)
    """
    x1, x2 = promoted(x1, x2)
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot() needs equal sizes along axis {axis}: {x1.shape[axis]} and {x2.shape[axis]}")
    product = conj(x1) * x2
    return agnostic.sum(product, dim=axis, dtype=product.dtype)  # no accumulation dtype, unlike sum()


# ---------------------------------------------------------------------------------------------------- manipulation


def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape.

        >>> [a.shape for a in agnostic.array_api.broadcast_arrays(agnostic.ones(2, 1), agnostic.ones(3))]
        [agnostic.Size([2, 3]), agnostic.Size([2, 3])]
    """
    shape = agnostic.broadcast_shapes(*(a.shape for a in arrays))
    return [agnostic.broadcast_to(a, shape) for a in arrays]


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape``.

        >>> agnostic.array_api.broadcast_to(agnostic.ones(1), (3,))
        tensor([1., 1., 1.])
    """
    return agnostic.broadcast_to(x, tuple(shape))


def concat(arrays, /, *, axis=0):
    """The arrays joined along ``axis`` (flattened first when ``axis=None``), with the standard's promotion.

        >>> agnostic.array_api.concat([agnostic.ones(1), agnostic.zeros(1)], axis=None)
        tensor([1., 0.])
    """
    dtype = result_type(*arrays)
    arrays = [a.to(dtype) for a in arrays]
    if axis is None:
        return agnostic.cat([a.reshape(-1) for a in arrays], 0)
    return agnostic.cat(arrays, axis)


def stack(arrays, /, *, axis=0):
    """The arrays joined along a new axis.

        >>> agnostic.array_api.stack([agnostic.ones(2), agnostic.zeros(2)]).shape
        agnostic.Size([2, 2])
    """
    dtype = result_type(*arrays)
    return agnostic.stack([a.to(dtype) for a in arrays], axis)


def expand_dims(x, /, axis=0):
    """``x`` with a new axis of size 1 at ``axis``.

        >>> agnostic.array_api.expand_dims(agnostic.ones(2), axis=-1).shape
        agnostic.Size([2, 1])
    """
    if isinstance(axis, int):
        if not -x.ndim - 1 <= axis <= x.ndim:
            raise IndexError(f"axis {axis} is out of range for a result of {x.ndim + 1} dimensions")
        return agnostic.unsqueeze(x, axis)
    ndim = x.ndim + len(axis)
    axes = normalize_axes(axis, ndim)
    sizes = iter(x.shape)
    return agnostic.reshape(x, tuple(1 if a in axes else next(sizes) for a in range(ndim)))


def flip(x, /, *, axis=None):
    """``x`` reversed along ``axis`` (all axes by default).

        >>> agnostic.array_api.flip(agnostic.tensor([1, 2, 3]))
        tensor([3, 2, 1])
    """
    return agnostic.flip(x, normalize_axes(axis, x.ndim))


def moveaxis(x, source, destination, /):
    """``x`` with axes moved from ``source`` to ``destination``.

        >>> agnostic.array_api.moveaxis(agnostic.ones(2, 3, 4), 0, -1).shape
        agnostic.Size([3, 4, 2])
    """
    return agnostic.movedim(x, source, destination)


def permute_dims(x, /, axes):
    """``x`` with its axes in the order ``axes``.

        >>> agnostic.array_api.permute_dims(agnostic.ones(2, 3), (1, 0)).shape
        agnostic.Size([3, 2])
    """
    return agnostic.permute(x, tuple(axes))


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times (an int or an array of counts) along ``axis``.

        >>> agnostic.array_api.repeat(agnostic.tensor([1, 2]), 2)
        tensor([1, 1, 2, 2])
    """
    if isinstance(repeats, Tensor):
        repeats = repeats.to(agnostic.int64)
    if axis is None:
        x, axis = x.reshape(-1), 0
    return agnostic.repeat_interleave(x, repeats, axis)


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new shape (``copy=True`` always copies; ``copy=False`` refuses to).

        >>> agnostic.array_api.reshape(agnostic.arange(4), (2, 2))
        tensor([[0, 1],
                [2, 3]])
    """
    shape = tuple(shape)
    if copy:
        return agnostic.reshape(x, shape).clone()
    if copy is False:
        return x.view(shape)
    return agnostic.reshape(x, shape)


def roll(x, /, shift, *, axis=None):
    """``x`` rolled by ``shift`` along ``axis`` (flattened when None).

        >>> agnostic.array_api.roll(agnostic.tensor([1, 2, 3]), 1)
        tensor([3, 1, 2])
    """
    if axis is None:
        return agnostic.roll(x.reshape(-1), shift, 0).reshape(tuple(x.shape))
    return agnostic.roll(x, shift, axis)


def squeeze(x, /, axis):
    """``x`` without the given axes, which must have size 1.

        >>> agnostic.array_api.squeeze(agnostic.ones(1, 2), axis=0).shape
        agnostic.Size([2])
    """
    axes = normalize_axes(axis, x.ndim)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze() cannot remove axis {a} of size {x.shape[a]}: only axes of size 1")
    return agnostic.reshape(x, tuple(s for a, s in enumerate(x.shape) if a not in axes))


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions`` times along each axis.

        >>> agnostic.array_api.tile(agnostic.tensor([1, 2]), (2,))
        tensor([1, 2, 1, 2])
    """
    return agnostic.tile(x, tuple(repetitions))


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple.

        >>> agnostic.array_api.unstack(agnostic.tensor([[1, 2], [3, 4]]))
        (tensor([1, 2]), tensor([3, 4]))
    """
    if x.ndim == 0:
        raise ValueError("unstack() needs an array of at least one dimension")
    return tuple(agnostic.unbind(x, axis))


# ---------------------------------------------------------------------------------------------------- reductions


def _over_last_axis(x, axis):
    """``x`` with the axes to reduce flattened into one last axis, and those axes (sorted)."""
    axes = normalize_axes(axis, x.ndim)
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = agnostic.permute(x, tuple(kept + list(axes))) if x.ndim else x
    return agnostic.reshape(moved, tuple(x.shape[a] for a in kept) + (-1,)), axes


def _reduction(x, axis, keepdims, reduce):
    flat, axes = _over_last_axis(x, axis)
    return keep_dims(reduce(flat), axes, x.ndim, keepdims)


def _accumulator_dtype(x, dtype):
    if dtype is not None:
        return dtype
    if x.dtype in _helpers.INTEGERS or x.dtype == agnostic.bool:
        return agnostic.int64
    return x.dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    """The sum over ``axis`` (integers accumulate in int64).

        >>> agnostic.array_api.sum(agnostic.ones(2, 3), axis=(0, 1), keepdims=True)
        tensor([[6.]])
    """
    dtype = _accumulator_dtype(x, dtype)
    return _reduction(x, axis, keepdims, lambda flat: agnostic.sum(flat, dim=-1, dtype=dtype))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    """The product over ``axis`` (integers accumulate in int64).

        >>> agnostic.array_api.prod(agnostic.tensor([[1, 2], [3, 4]]), axis=1)
        tensor([ 2, 12])
    """
    dtype = _accumulator_dtype(x, dtype)
    return _reduction(x, axis, keepdims, lambda flat: agnostic.prod(flat, dim=-1, dtype=dtype))


def max(x, /, *, axis=None, keepdims=False):
    """The largest element over ``axis`` (NaN propagates).

        >>> agnostic.array_api.max(agnostic.tensor([[1, 5], [3, 4]]), axis=0)
        tensor([3, 5])
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.amax(flat, dim=-1))


def min(x, /, *, axis=None, keepdims=False):
    """The smallest element over ``axis`` (NaN propagates).

        >>> agnostic.array_api.min(agnostic.tensor([[1, 5], [3, 4]]), axis=0)
        tensor([1, 4])
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.amin(flat, dim=-1))


def mean(x, /, *, axis=None, keepdims=False):
    """The arithmetic mean over ``axis`` (floating-point arrays).

        >>> agnostic.array_api.mean(agnostic.tensor([1.0, 2.0]))
        tensor(1.5000)
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.mean(flat, dim=-1))


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """The variance over ``axis``, dividing by ``N - correction``.

        >>> agnostic.array_api.var(agnostic.tensor([1.0, 3.0]))
        tensor(1.)
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.var(flat, dim=-1, correction=correction))


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    """The standard deviation over ``axis``, dividing by ``N - correction``.

        >>> agnostic.array_api.std(agnostic.tensor([1.0, 3.0]))
        tensor(1.)
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.std(flat, dim=-1, correction=correction))


def all(x, /, *, axis=None, keepdims=False):
    """Whether every element over ``axis`` is true.

        >>> agnostic.array_api.all(agnostic.tensor([1, 0]))
        tensor(False)
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.all(flat != 0, dim=-1))


def any(x, /, *, axis=None, keepdims=False):
    """Whether some element over ``axis`` is true.

        >>> agnostic.array_api.any(agnostic.tensor([1, 0]))
        tensor(True)
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.any(flat != 0, dim=-1))


def _cumulative(op, x, axis, dtype, include_initial, initial):
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative functions need axis for arrays of more than one dimension")
        axis = 0
    if x.ndim == 0:
        raise ValueError("cumulative functions need an array of at least one dimension")
    result = op(x, axis, dtype=_accumulator_dtype(x, dtype))
    if include_initial:
        shape = list(result.shape)
        shape[axis] = 1
        start = agnostic.full(tuple(shape), initial, dtype=result.dtype, device=result.device)
        result = agnostic.cat([start, result], axis)
    return result


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running sums along ``axis`` (with a leading 0 when ``include_initial``).

        >>> agnostic.array_api.cumulative_sum(agnostic.tensor([1, 2, 3]), include_initial=True)
        tensor([0, 1, 3, 6])
    """
    return _cumulative(agnostic.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Running products along ``axis`` (with a leading 1 when ``include_initial``).

        >>> agnostic.array_api.cumulative_prod(agnostic.tensor([1, 2, 3]))
        tensor([1, 2, 6])
    """
    return _cumulative(agnostic.cumprod, x, axis, dtype, include_initial, 1)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``.

        >>> agnostic.array_api.diff(agnostic.tensor([1, 4, 9]))
        tensor([3, 5])
    """
    pieces = [p for p in (prepend, x, append) if p is not None]
    if len(pieces) > 1:
        x = concat(pieces, axis=axis)
    for _ in range(n):
        length = x.shape[axis]
        x = agnostic.narrow(x, axis, 1, length - 1) - agnostic.narrow(x, axis, 0, length - 1) \
            if x.dtype != agnostic.bool else \
            agnostic.narrow(x, axis, 1, length - 1) != agnostic.narrow(x, axis, 0, length - 1)
    return x


# ---------------------------------------------------------------------------------------------------- searching


def argmax(x, /, *, axis=None, keepdims=False):
    """The index of the first largest element (over the flattened array when ``axis=None``).

        >>> agnostic.array_api.argmax(agnostic.tensor([1, 5, 5]))
        tensor(1)
    """
    if axis is None:
        result = agnostic.argmax(x.reshape(-1), dim=0)
        return result.reshape((1,) * x.ndim) if keepdims else result
    return agnostic.argmax(x, dim=axis, keepdim=keepdims)


def argmin(x, /, *, axis=None, keepdims=False):
    """The index of the first smallest element (over the flattened array when ``axis=None``).

        >>> agnostic.array_api.argmin(agnostic.tensor([3, 1, 1]))
        tensor(1)
    """
    if axis is None:
        result = agnostic.argmin(x.reshape(-1), dim=0)
        return result.reshape((1,) * x.ndim) if keepdims else result
    return agnostic.argmin(x, dim=axis, keepdim=keepdims)


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """The number of non-zero elements over ``axis``.

        >>> agnostic.array_api.count_nonzero(agnostic.tensor([[0, 1], [2, 3]]), axis=1)
        tensor([1, 2])
    """
    return _reduction(x, axis, keepdims, lambda flat: agnostic.sum((flat != 0).to(agnostic.int64), dim=-1))


def nonzero(x, /):
    """The indices of the non-zero elements, one array per axis.

        >>> agnostic.array_api.nonzero(agnostic.tensor([0, 3, 4]))
        (tensor([1, 2]),)
    """
    if x.ndim == 0:
        raise ValueError("nonzero() needs an array of at least one dimension")
    return tuple(agnostic.nonzero(x, as_tuple=True))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where the elements of ``x2`` go into the sorted 1-D ``x1`` to keep it sorted.

        >>> agnostic.array_api.searchsorted(agnostic.tensor([1, 3, 5]), agnostic.tensor([3, 4]))
        tensor([1, 2])
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted side must be 'left' or 'right', got {side!r}")
    if isinstance(x2, Tensor) and x1.dtype != x2.dtype:
        dtype = _helpers.promote(x1.dtype, x2.dtype)
        x1, x2 = x1.to(dtype), x2.to(dtype)
    x2 = _helpers.as_operand(x2, x1)
    return agnostic.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /):
    """Elements of ``x1`` where ``condition`` holds, of ``x2`` elsewhere (scalars allowed, standard promotion).

        >>> agnostic.array_api.where(agnostic.tensor([True, False]), agnostic.tensor([1, 2]), 0)
        tensor([1, 0])
    """
    x1, x2 = promoted(x1, x2)
    return agnostic.where(condition, x1, x2)


# ---------------------------------------------------------------------------------------------------- sets


class UniqueAllResult(NamedTuple):
    """``unique_all``'s four arrays.

        >>> agnostic.array_api.unique_all(agnostic.tensor([5, 5])).indices
        tensor([0])
    """
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s two arrays.

        >>> agnostic.array_api.unique_counts(agnostic.tensor([5, 5])).counts
        tensor([2])
    """
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s two arrays.

        >>> agnostic.array_api.unique_inverse(agnostic.tensor([5, 5])).values
        tensor([5])
    """
    values: Tensor
    inverse_indices: Tensor


def _unique(x):
    """Sorted unique values with first indices, inverse indices (``x``'s shape) and counts; each NaN is its own."""
    flat = x.reshape(-1)
    if flat.dtype.is_complex:  # complex numbers have no order of their own: sort by real part, then imaginary
        order = agnostic.argsort(imag(flat), stable=True)
        order = order[agnostic.argsort(real(flat)[order], stable=True)]
    else:
        order = agnostic.argsort(flat, stable=True)
    ordered = flat[order]
    if flat.shape[0] == 0:
        empty_index = agnostic.zeros(0, dtype=agnostic.int64, device=x.device)
        return ordered, empty_index, empty_index.reshape(tuple(x.shape)), empty_index
    starts = agnostic.ones(flat.shape[0], dtype=agnostic.bool, device=x.device)
    if flat.shape[0] > 1:
        different = ordered[1:] != ordered[:-1]  # NaN != NaN, so every NaN starts a group of its own
        starts = agnostic.cat([starts[:1], different])
    group = agnostic.cumsum(starts.to(agnostic.int64), 0) - 1
    first_positions = agnostic.nonzero(starts, as_tuple=True)[0]
    values = ordered[first_positions]
    boundaries = agnostic.cat([first_positions, agnostic.tensor([flat.shape[0]], device=x.device)])
    counts = boundaries[1:] - boundaries[:-1]
    inverse = agnostic.empty_like(group)
    inverse[order] = group
    return values, order[first_positions], inverse.reshape(tuple(x.shape)), counts


def unique_all(x, /):
    """Unique values, the index of each one's first occurrence, the inverse indices and the counts.

        >>> agnostic.array_api.unique_all(agnostic.tensor([2, 1, 2])).counts
        tensor([1, 2])
    """
    return UniqueAllResult(*_unique(x))


def unique_counts(x, /):
    """Unique values and how often each occurs.

        >>> agnostic.array_api.unique_counts(agnostic.tensor([2, 1, 2])).values
        tensor([1, 2])
    """
    values, _, _, counts = _unique(x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """Unique values and, for each element of ``x``, the index of its value.

        >>> agnostic.array_api.unique_inverse(agnostic.tensor([2, 1, 2])).inverse_indices
        tensor([1, 0, 1])
    """
    values, _, inverse, _ = _unique(x)
    return UniqueInverseResult(values, inverse)


def unique_values(x, /):
    """The unique values, sorted.

        >>> agnostic.array_api.unique_values(agnostic.tensor([2, 1, 2]))
        tensor([1, 2])
    """
    return _unique(x)[0]


# ---------------------------------------------------------------------------------------------------- sorting


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """The values of ``x`` sorted along ``axis`` (stable by default).

        >>> agnostic.array_api.sort(agnostic.tensor([3, 1, 2]), descending=True)
        tensor([3, 2, 1])
    """
    return agnostic.sort(x, dim=axis, descending=descending, stable=stable)[0]


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """The indices that sort ``x`` along ``axis`` (stable by default; equal elements keep their order).

        >>> agnostic.array_api.argsort(agnostic.tensor([3, 1, 2]))
        tensor([1, 2, 0])
    """
    return agnostic.argsort(x, dim=axis, descending=descending, stable=stable)


_NOT_EXPORTED = {"builtins", "math", "numpy", "agnostic", "NamedTuple", "Tensor", "binary", "keep_dims",
                 "normalize_axes", "on_backend", "promoted", "SUPPORTED_VERSIONS"}
__all__ = sorted(name for name in globals() if not name.startswith("_") and name not in _NOT_EXPORTED)
__all__ += ["__array_namespace_info__", "__array_api_version__"]
