"""The Array API standard's type promotion, scalar and axis rules, shared by the namespace and its extensions."""

import builtins
import functools

import agnostic
from agnostic._tensor import wrap

Tensor = agnostic.Tensor

BOOL = (agnostic.bool,)
SIGNED = (agnostic.int8, agnostic.int16, agnostic.int32, agnostic.int64)
UNSIGNED = (agnostic.uint8,)
INTEGERS = SIGNED + UNSIGNED
REAL_FLOATS = (agnostic.float32, agnostic.float64)
COMPLEX_FLOATS = (agnostic.complex64, agnostic.complex128)
STANDARD_DTYPES = BOOL + INTEGERS + REAL_FLOATS + COMPLEX_FLOATS

# The standard's promotion table (PyTorch's agrees on it but lets 0-D tensors and dtypes of another kind in).
_PROMOTIONS = {
    (agnostic.int8, agnostic.int16): agnostic.int16, (agnostic.int8, agnostic.int32): agnostic.int32,
    (agnostic.int8, agnostic.int64): agnostic.int64, (agnostic.int16, agnostic.int32): agnostic.int32,
    (agnostic.int16, agnostic.int64): agnostic.int64, (agnostic.int32, agnostic.int64): agnostic.int64,
    (agnostic.uint8, agnostic.int8): agnostic.int16, (agnostic.uint8, agnostic.int16): agnostic.int16,
    (agnostic.uint8, agnostic.int32): agnostic.int32, (agnostic.uint8, agnostic.int64): agnostic.int64,
    (agnostic.float32, agnostic.float64): agnostic.float64,
    (agnostic.complex64, agnostic.complex128): agnostic.complex128,
    (agnostic.float32, agnostic.complex64): agnostic.complex64,
    (agnostic.float32, agnostic.complex128): agnostic.complex128,
    (agnostic.float64, agnostic.complex64): agnostic.complex128,
    (agnostic.float64, agnostic.complex128): agnostic.complex128,
}
_PROMOTIONS.update({(b, a): c for (a, b), c in list(_PROMOTIONS.items())})
_PROMOTIONS.update({(a, a): a for a in STANDARD_DTYPES})


def promote(first, second):
    """The standard's result dtype of two dtypes; TypeError for pairs it leaves undefined (mixed kinds)."""
    try:
        return _PROMOTIONS[first, second]
    except KeyError:
        raise TypeError(f"the Array API standard defines no promotion of {first} with {second}: "
                        f"cast one of them with astype() first") from None


def is_kind(dtype, kind):
    """``isdtype`` of the standard for one kind (a dtype or a kind name)."""
    if not isinstance(kind, str):
        return dtype == kind
    kinds = {
        "bool": BOOL, "signed integer": SIGNED, "unsigned integer": UNSIGNED, "integral": INTEGERS,
        "real floating": REAL_FLOATS + (agnostic.float16, agnostic.bfloat16), "complex floating": COMPLEX_FLOATS,
        "numeric": INTEGERS + REAL_FLOATS + (agnostic.float16, agnostic.bfloat16) + COMPLEX_FLOATS,
    }
    if kind not in kinds:
        raise ValueError(f"unknown dtype kind {kind!r}: use one of {sorted(kinds)} or a dtype")
    return dtype in kinds[kind]


def scalar_fits(value, dtype):
    """Whether a Python scalar may join an array of ``dtype`` under the standard (same kind or a wider one)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return dtype not in BOOL
    if isinstance(value, float):
        return dtype in REAL_FLOATS + COMPLEX_FLOATS or dtype.is_floating_point
    return dtype in COMPLEX_FLOATS


def as_operand(value, like):
    """A Python scalar as a 0-D tensor of ``like``'s dtype and device (the standard's rule), a tensor unchanged."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, complex)) and scalar_fits(value, like.dtype):
        if isinstance(value, int) and not isinstance(value, bool) and like.dtype in INTEGERS:
            info = agnostic.iinfo(like.dtype)
            if not info.min <= value <= info.max:
                raise OverflowError(f"{value} does not fit in {like.dtype}")
        return agnostic.tensor(value, dtype=like.dtype, device=like.device)
    raise TypeError(f"expected an array or a Python scalar of a kind compatible with {like.dtype}, "
                    f"got {type(value).__name__}")


def promoted(x1, x2):
    """Both operands as tensors of the standard's result dtype (Python scalars take the array's dtype)."""
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        raise TypeError("at least one argument must be an array")
    if not isinstance(x1, Tensor):
        x1 = as_operand(x1, x2)
    if not isinstance(x2, Tensor):
        x2 = as_operand(x2, x1)
    if x1.dtype != x2.dtype and x1.dtype in STANDARD_DTYPES and x2.dtype in STANDARD_DTYPES:
        dtype = promote(x1.dtype, x2.dtype)
        x1, x2 = x1.to(dtype), x2.to(dtype)
    return x1, x2


def binary(function):
    """The standard form of a PyTorch binary op: scalars allowed on either side, promotion by the table."""
    @functools.wraps(function)
    def standard(x1, x2, /):
        return function(*promoted(x1, x2))
    return standard


def on_backend(name, x, *others):
    """``xp.<name>`` of the tensors' device on their arrays, as a tensor (for the few functions agnostic lacks)."""
    backend = x._device.backend
    return wrap(backend.run(getattr(backend.xp, name), x._data, *(o._data for o in others)), x._device)


def normalize_axes(axis, ndim):
    """``axis`` (None, an int or a tuple) as a sorted tuple of non-negative axes, IndexError when out of range."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    result = []
    for a in axes:
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1) or (ndim == 0 and a not in (0, -1)):
            raise IndexError(f"axis {a} is out of range for an array of {ndim} dimensions")
        a = a % ndim if ndim else 0
        if a in result:
            raise ValueError(f"axis {a} appears more than once")
        result.append(a)
    return tuple(sorted(result))


def keep_dims(result, axes, ndim, keepdims):
    """``result`` of a reduction over ``axes``, with those axes put back as size 1 when ``keepdims``."""
    if not keepdims:
        return result
    shape = list(result.shape)
    for a in axes:
        shape.insert(a, 1)
    return agnostic.reshape(result, tuple(shape)) if ndim else result


def complex_from_parts(real, imag, dtype):
    """The complex array ``real + imag * 1j`` of ``dtype``, exact for infinities and signed zeros (arithmetic
    would turn ``inf * 1j`` into ``nan + inf j``)."""
    backend = real._device.backend

    def assemble(real_array, imag_array):
        result = backend.xp.empty(real_array.shape, dtype=dtype.numpy_dtype)
        result.real[...] = real_array  # .real and .imag of a complex array are views in NumPy and CuPy
        result.imag[...] = imag_array
        return result
    return wrap(backend.run(assemble, real._data, imag._data), real._device)
