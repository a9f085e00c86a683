"""PyTorch's conversions of arrays between dtypes, written once against an array namespace ``xp`` (``numpy`` or
``cupy``) for the pairs where NumPy's and CuPy's own ``astype`` give other values than PyTorch, or each other.

Floats to integers: C leaves a float outside the integer type's range undefined, and the machines answer
differently: ``float16 -1.0`` to uint8 is 255 in NumPy on x86 and 0 in CuPy (CUDA saturates). PyTorch's CPU
(c10's ``static_cast_with_inter_type``, as x86-64 runs it) converts through a wider signed integer, in which the
value is truncated toward zero and then wrapped to the target's width:

- to uint8 and int64 through int64, to int8, int16 and int32 through int32: -1.0 to uint8 is 255, 300.0 to int8 is
  44, 70000.0 to int16 is 4464;
- NaN, the infinities and values outside the intermediate type's range give its minimum (x86's "integer
  indefinite"), which wraps to 0 for uint8, int8 and int16.

PyTorch's CUDA gives the same inside those ranges and saturates outside them (its +inf to uint8 is 255, its NaN to
int32 is 0): these functions follow its CPU there, on every device.

float64 to float16 rounds through float32, as PyTorch does (``c10::Half`` is made from a float): 1 + 2**-11 +
2**-40 becomes 1.0, where NumPy's and CuPy's direct rounding give 1.001.

Every other pair is the libraries' own ``astype``, which is PyTorch's conversion in both.
"""

import functools

import numpy

# integer target -> (the intermediate integer, the lowest and the first too high float of its range). The bounds
# are float64 scalars, so that comparisons happen in float64: a Python float would become -inf beside float16.
_INT64_RANGE = (numpy.dtype(numpy.int64), numpy.float64(-2.0 ** 63), numpy.float64(2.0 ** 63))
_INT32_RANGE = (numpy.dtype(numpy.int32), numpy.float64(-2.0 ** 31), numpy.float64(2.0 ** 31))
_WIDE = {"uint8": _INT64_RANGE, "int64": _INT64_RANGE, "int8": _INT32_RANGE, "int16": _INT32_RANGE,
         "int32": _INT32_RANGE}
_FLOAT16 = numpy.dtype(numpy.float16)
_FLOAT32 = numpy.dtype(numpy.float32)
_FLOAT64 = numpy.dtype(numpy.float64)


@functools.cache
def kind(source, target):
    """How ``source`` converts to ``target`` (NumPy dtypes): ``"float_to_integer"``, ``"float64_to_float16"``, or
    None where the libraries' ``astype`` is PyTorch's conversion."""
    if _is_float(source) and target.name in _WIDE:
        return "float_to_integer"
    if source == _FLOAT64 and target == _FLOAT16:
        return "float64_to_float16"
    return None


def _is_float(dtype):
    return dtype.kind == "f" or dtype.name == "bfloat16"


def integer_range(target):
    """``(intermediate dtype, low, high)``: a float converts to ``target`` through the intermediate integer when
    ``low <= value < high``, else it gives the intermediate's minimum."""
    return _WIDE[target.name]


def convert(xp, array, target):
    """``array`` as dtype ``target``, as PyTorch converts it (see the module docstring)."""
    found = kind(array.dtype, target)
    if found == "float_to_integer":
        wide, low, high = integer_range(target)
        inside = (array >= low) & (array < high)  # False for NaN
        values = xp.where(inside, array, array.dtype.type(0)).astype(wide)
        xp.copyto(values, numpy.iinfo(wide).min, where=~inside)
        return values.astype(target, copy=False)
    if found == "float64_to_float16":
        return array.astype(_FLOAT32).astype(target)
    return array.astype(target)
