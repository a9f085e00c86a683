"""Elementwise ops, each declared once: its dtype rule, its implementation, its gradient and its docstring.

The registry (``_registry``) turns each declaration into ``agnostic.<name>``, ``Tensor.<name>``, ``Tensor.<name>_``
and its operators, all on one dispatch path. Gradients are written with tensor methods, so that they are recorded
too when a graph of the gradient is built (``create_graph=True``).
"""

import functools
import math
from collections import namedtuple

import numpy

from .. import _dtypes
from .._backends import cpu_kernels, cpu_ops, cuda_ops, cuda_vectorized
from .._tensor import TensorBase, _check_writable, _normalize_dim, wrap
from ..autograd import tracking
from ..autograd.grad_mode import is_grad_enabled
from . import _division, _relu_gradient
from ._dispatch import (
    Result, as_operand, broadcasting, check_same_device, check_tensor, finish, operand_array, refuse, result_dtype,
    write_result,
)
from .indexing import nonzero
from ._registry import _DECLARED, Elementwise, composite, public_names

_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)
SAME, FLOAT, BOOL, LOGICAL = Result.SAME, Result.FLOAT, Result.BOOL, Result.LOGICAL

# ----- dtype checks ---------------------------------------------------------------------------------------------
no_bool = refuse((_BOOL,), '"{name}" is not implemented for {dtype}; convert the tensor with .int() or .float()')
no_complex = refuse((_COMPLEX,), '"{name}" is not implemented for complex tensors ({dtype})')
no_bool_or_complex = refuse((_BOOL, _COMPLEX), '"{name}" is not implemented for {dtype}')
integral_only = refuse((_FLOATING, _COMPLEX), '"{name}" is only implemented for integer and bool tensors, got {dtype}')
integers_only = refuse((_BOOL, _FLOATING, _COMPLEX), '"{name}" is only implemented for integer tensors, got {dtype}')
ordered_only = refuse((_COMPLEX,), '"{name}" is not supported for complex tensors: complex numbers have no order')
floating_only = refuse((_BOOL, _INTEGER, _COMPLEX), '"{name}" needs a floating tensor, got {dtype}')


def _no_bool_subtraction(name, dtype):
    if dtype is _dtypes.bool:  # the promoted dtype: both operands are bool
        raise NotImplementedError(  # PyTorch's type (a RuntimeError)
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "Use the `^` or `logical_xor()` operator instead."
        )


def _no_bool_negation(name, dtype):
    if dtype is _dtypes.bool:
        raise NotImplementedError(  # PyTorch's type (a RuntimeError)
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _no_bool_operand_subtraction(input, other, compute):
    """PyTorch refuses ``-`` whenever an operand is bool, even when promotion makes the result a number."""
    if any(isinstance(x, bool) or (isinstance(x, TensorBase) and x.dtype is _dtypes.bool) for x in (input, other)):
        raise NotImplementedError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _nonzero_integer_divisor(input, other, compute):
    if compute.category != _INTEGER:
        return
    if isinstance(other, TensorBase):
        # One reduction of the divisor's own array, no dispatch: on CUDA, reading its answer waits for the device.
        zero = not other._device.backend.run(other._data.all)
    else:
        zero = other == 0
    if zero:
        raise ZeroDivisionError("integer division by zero; divide floating-point tensors to get inf/nan instead")


def _no_negative_integer_power(input, other, compute):
    if compute.category == _INTEGER and not isinstance(other, TensorBase) and other < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed; use a float base or exponent")


# ----- implementations the backends lack --------------------------------------------------------------------------
# PyTorch's pow kernels compute these scalar powers of float32/float64 tensors by their defining arithmetic, not
# by pow(): the same bits here (checked against PyTorch 2.14's CPU, whose x ** 0.5 is its pow's, not sqrt's), and as
# fast (NumPy's pow of a float32 takes ~20 ns an element, x * x * x under 1).
_SCALAR_POWERS = {
    2.0: lambda xp, x: x * x,
    3.0: lambda xp, x: x * x * x,
    -2.0: lambda xp, x: xp.reciprocal(x * x),
    -0.5: lambda xp, x: xp.reciprocal(xp.sqrt(x)),
    -1.0: lambda xp, x: xp.reciprocal(x),
}


def _power(xp, base, exponent):
    """Powers, and integer powers with negative exponents as PyTorch: 1 ** n = 1, (-1) ** n = +-1, else 0."""
    if not hasattr(base, "dtype"):
        base = exponent.dtype.type(base)  # a Python number: in the tensor's dtype, as the direct plan promised
    if isinstance(exponent, (numpy.generic, float, int)) and base.dtype.kind == "f" and base.dtype.itemsize >= 4:
        special = _SCALAR_POWERS.get(float(exponent))
        if special is not None:
            return special(xp, base)
    if base.dtype.kind not in "iu" or getattr(exponent, "ndim", None) is None:
        return xp.power(base, exponent)
    negative = exponent < 0
    powers = xp.power(base, xp.where(negative, 0, exponent).astype(exponent.dtype))
    odd = (xp.abs(exponent) % 2).astype(bool)
    special = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0)).astype(powers.dtype)
    return xp.where(negative, special, powers)


def _complex_parts(xp, real, imag, dtype):
    """A complex array of ``dtype`` from its real and imaginary parts (signed zeros and NaNs kept, which
    ``real + 1j * imag`` would not)."""
    out = xp.empty(real.shape, dtype)
    out.real[...] = real
    out.imag[...] = imag
    return out


# C99's values (Annex G, which the Array API standard and PyTorch's std::complex follow) where CuPy's complex
# functions differ: computed alike on every device, so the CPU and CUDA give the same special values.
def _complex_logarithm(backend_name):
    """log and log1p: an infinite part beside a NaN part gives +inf + NaN j."""
    def compute(xp, z):
        result = getattr(xp, backend_name)(z)
        infinite_beside_nan = (xp.isinf(z.real) & xp.isnan(z.imag)) | (xp.isnan(z.real) & xp.isinf(z.imag))
        return xp.where(infinite_beside_nan, result.dtype.type(complex(numpy.inf, numpy.nan)), result)
    return compute


def _complex_tanh(xp, z):
    """tanh(+-0 + inf j) and tanh(+-0 + NaN j) are +-0 + NaN j."""
    result = xp.tanh(z)
    zero_real = (z.real == 0) & ~xp.isfinite(z.imag)
    return _complex_parts(xp, xp.where(zero_real, z.real, result.real), xp.where(zero_real, numpy.nan, result.imag),
                          result.dtype)


def _complex_acosh(xp, z):
    """acosh(+-0 + NaN j) is NaN + pi/2 j."""
    result = xp.arccosh(z)
    zero_real = (z.real == 0) & xp.isnan(z.imag)
    return _complex_parts(xp, xp.where(zero_real, numpy.nan, result.real),
                          xp.where(zero_real, numpy.pi / 2, result.imag), result.dtype)


def _rounding(backend_name):
    """Rounding keeps integer and bool tensors as they are (NumPy would turn them into float64)."""
    def compose(xp, x):
        return x.copy() if x.dtype.kind in "iub" else getattr(xp, backend_name)(x)
    return compose


def _square(xp, x):
    return xp.square(x.astype(numpy.int64) if x.dtype.kind == "b" else x)


def _sign(xp, x):
    return x.copy() if x.dtype.kind == "b" else xp.sign(x)


def _frac(xp, x):
    return x - xp.trunc(x)


def _relu(xp, x):
    dtype = x.dtype
    zero = _ZEROS.get(dtype)
    if zero is None:  # made once per dtype: a NumPy scalar costs more to make than the maximum of 1,000 elements
        zero = _ZEROS[dtype] = dtype.type(0)
    return xp.maximum(x, zero)


_ZEROS: dict = {}  # dtype -> its zero, as a NumPy scalar (a Python 0 would widen ml_dtypes' bfloat16)


def _sigmoid(xp, x):
    return xp.reciprocal(1 + xp.exp(-x))


def _rsqrt(xp, x):
    return xp.reciprocal(xp.sqrt(x))


def _reciprocal(xp, x):
    return xp.reciprocal(x)


# ----- gradient helpers -------------------------------------------------------------------------------------------
def _conj(x):
    return x.conj() if isinstance(x, TensorBase) and x.dtype.is_complex else x


def _zero(grad):
    return grad * 0


def _first_of_pair(pick_first):
    """maximum/minimum: the gradient goes to the operand picked, split evenly between equal operands; ``input``'s
    share is ``picked - tie / 2``, ``other``'s the rest."""
    def share_of_input(grad, input, other):
        tie = (input == other).to(grad.dtype) if isinstance(other, TensorBase) else 0.0
        return pick_first(input, other).to(grad.dtype) - tie * 0.5
    return {"input": lambda grad, input, other: grad * share_of_input(grad, input, other),
            "other": lambda grad, input, other: grad * (1 - share_of_input(grad, input, other))}


def _relu_backward(grad, input):
    if not is_grad_enabled() and _relu_gradient.supports(grad, input):
        return _relu_gradient.relu_gradient(grad, input)  # one pass; the recorded form below builds higher ones
    return grad.masked_fill(~(input > 0), 0.0)


# ----- binary ops -------------------------------------------------------------------------------------------------
def _binary(name, result, implementation, **declaration):
    return Elementwise(name, 2, result, implementation, **declaration).function


def _large(kernel):
    """``large_cpu`` and ``large_cuda`` of a two-operand op: the multi-core CPU kernel and the vectorized CUDA kernel
    ``kernel`` (each giving None where it doesn't apply)."""
    return dict(large_cpu=functools.partial(cpu_kernels.binary, kernel),
                large_cuda=functools.partial(cuda_vectorized.binary, kernel))


add = _binary("add", SAME, "add", alpha=True, operator="add", **_large("add"), gradients={
    "input": lambda grad: grad, "other": lambda grad: grad}, doc="""\
``input + alpha * other``, broadcasting, in the dtype PyTorch's promotion gives (``torch.add``).

    >>> agnostic.add(agnostic.tensor([1, 2]), agnostic.tensor([10, 20]))
    tensor([11, 22])
    >>> agnostic.add(agnostic.tensor([1, 2]), agnostic.tensor([10, 20]), alpha=2)
    tensor([21, 42])
""")
sub = _binary("sub", SAME, "subtract", check=_no_bool_subtraction, check_operands=_no_bool_operand_subtraction,
              alpha=True, operator="sub", aliases=("subtract",), **_large("sub"),
              gradients={"input": lambda grad: grad, "other": lambda grad: -grad}, doc="""\
``input - alpha * other`` (``torch.sub``, alias ``subtract``); bool operands are refused, as in PyTorch.

    >>> agnostic.sub(agnostic.tensor([5.0, 7.0]), 2)
    tensor([3., 5.])
""")
mul = _binary("mul", SAME, "multiply", operator="mul", aliases=("multiply",), **_large("mul"),
              gradients={
    "input": lambda grad, other: grad * _conj(other),
    "other": lambda grad, input: grad * _conj(input)}, doc="""\
``input * other``, elementwise (``torch.mul``, alias ``multiply``).

    >>> agnostic.mul(agnostic.tensor([1.5, 2.0]), 2)
    tensor([3., 4.])
""")
_true_divide = Elementwise("div", 2, FLOAT, "true_divide", operator="truediv", **_large("div"),
                           kind_implementations={"c": _division.complex_divide},
                           cpu_implementation={"c": cpu_ops.complex_divide},
                           cuda_implementation={"c": cuda_ops.complex_divide}, public=False,
                           gradients={"input": lambda grad, other: grad / _conj(other),
                                      "other": lambda grad, input, other: -grad * _conj(input) / _conj(other * other)},
                           doc="""\
True division: integers divide to the default float dtype (``torch.true_divide``; ``div`` adds rounding modes).

    >>> agnostic.true_divide(agnostic.tensor([7, -7]), 2)
    tensor([ 3.5000, -3.5000])
""")
def _division_op(name, **declaration):
    """floor_divide, remainder and fmod: PyTorch's formulas on every device (``_division``), not each backend's own;
    each backend's ``ops`` gives the formula's bits its fastest way (NumPy's ufunc where identical, one CUDA kernel)."""
    return _binary(name, SAME, getattr(_division, name), cpu_implementation=getattr(cpu_ops, name),
                   cuda_implementation=getattr(cuda_ops, name), check=no_bool_or_complex,
                   check_operands=_nonzero_integer_divisor, **declaration)


floor_divide = _division_op("floor_divide", operator="floordiv", gradients={"input": _zero, "other": _zero}, doc="""\
``input / other`` rounded down (``torch.floor_divide``, ``div(rounding_mode='floor')``).

    >>> agnostic.floor_divide(agnostic.tensor([7, -7]), 2)
    tensor([ 3, -4])
""")
remainder = _division_op("remainder", operator="mod", gradients={
    "input": lambda grad: grad, "other": lambda grad, input, other: -grad * floor_divide(input, other)}, doc="""\
The remainder of floor division, with the sign of ``other`` (Python's ``%``, ``torch.remainder``).

    >>> agnostic.remainder(agnostic.tensor([7, -7]), 3)
    tensor([1, 2])
""")
fmod = _division_op("fmod", gradients={
    "input": lambda grad: grad, "other": lambda grad, input, other: -grad * (input / other).trunc()}, doc="""\
The remainder of truncated division, with the sign of ``input`` (C's ``fmod``, ``torch.fmod``).

    >>> agnostic.fmod(agnostic.tensor([7, -7]), 3)
    tensor([ 1, -1])
""")
_trunc_divide = Elementwise("div_trunc", 2, SAME, _division.trunc_divide, cpu_implementation=cpu_ops.trunc_divide,
                            cuda_implementation=cuda_ops.trunc_divide, check=no_bool_or_complex,
                            check_operands=_nonzero_integer_divisor, public=False,
                            gradients={"input": _zero, "other": _zero},
                            doc="``input / other`` rounded toward zero, in the promoted dtype.")


def _pow_base_gradient(grad, input, other):
    if not isinstance(other, TensorBase) and other == 0:
        return grad * 0
    return grad * other * input ** (other - 1)


def _pow_exponent_gradient(grad, input, other, result):
    log_base = input.log() if isinstance(input, TensorBase) else math.log(input)
    gradient = grad * result * log_base
    if isinstance(input, TensorBase):
        gradient = gradient.masked_fill((result == 0) & (other >= 0), 0.0)
    return gradient


pow = _binary("pow", SAME, _power, check=no_bool, check_operands=_no_negative_integer_power, operator="pow",
              gradients={"input": _pow_base_gradient, "other": _pow_exponent_gradient},
              doc="""\
``input ** other``, elementwise; integer powers wrap like C integers, and negative integer exponents of an integer
tensor give 1, -1 or 0 as in PyTorch (``torch.pow``).

    >>> agnostic.pow(agnostic.tensor([2, 3]), 2)
    tensor([4, 9])
""")


def _comparison(name, implementation, symbol, printed, aliases=(), check=None):
    alias_text = "".join(f", alias ``{alias}``" for alias in aliases)
    return _binary(name, BOOL, implementation, check=check, operator=name, reflected=False, aliases=aliases, doc=f"""\
``input {symbol} other``, elementwise, as a bool tensor (``torch.{name}``{alias_text}).

    >>> agnostic.{name}(agnostic.tensor([1, 2, 3]), 2)
    tensor([{printed}])
""")


eq = _comparison("eq", "equal", "==", "False,  True, False")
ne = _comparison("ne", "not_equal", "!=", " True, False,  True", aliases=("not_equal",))
lt = _comparison("lt", "less", "<", " True, False, False", aliases=("less",), check=ordered_only)
le = _comparison("le", "less_equal", "<=", " True,  True, False", aliases=("less_equal",), check=ordered_only)
gt = _comparison("gt", "greater", ">", "False, False,  True", aliases=("greater",), check=ordered_only)
ge = _comparison("ge", "greater_equal", ">=", "False,  True,  True", aliases=("greater_equal",), check=ordered_only)


def _logical(name, meaning, printed):
    return _binary(name, LOGICAL, name, doc=f"""\
Elementwise logical {meaning} of the operands' truth values (nonzero is true), as a bool tensor (``torch.{name}``).

    >>> agnostic.{name}(agnostic.tensor([0, 1, 2]), agnostic.tensor([1, 1, 0]))
    tensor([{printed}])
""")


logical_and = _logical("logical_and", "and", "False,  True, False")
logical_or = _logical("logical_or", "or", "True, True, True")
logical_xor = _logical("logical_xor", "exclusive or", " True, False,  True")


def _bitwise(name, implementation, symbol, operator, printed, check=integral_only):
    return _binary(name, SAME, implementation, check=check, operator=operator, doc=f"""\
``input {symbol} other`` on the bits of integer (or bool) tensors (``torch.{name}``).

    >>> agnostic.{name}(agnostic.tensor([12]), agnostic.tensor([10]))
    tensor([{printed}])
""")


bitwise_and = _bitwise("bitwise_and", "bitwise_and", "&", "and", 8)
bitwise_or = _bitwise("bitwise_or", "bitwise_or", "|", "or", 14)
bitwise_xor = _bitwise("bitwise_xor", "bitwise_xor", "^", "xor", 6)
bitwise_left_shift = _bitwise("bitwise_left_shift", "left_shift", "<<", "lshift", 12288, check=integers_only)
bitwise_right_shift = _bitwise("bitwise_right_shift", "right_shift", ">>", "rshift", 0, check=integers_only)


def _extremum(name, meaning, pick_first, nan, printed):
    return _binary(name, SAME, name, check=ordered_only, gradients=_first_of_pair(pick_first), doc=f"""\
The elementwise {meaning} of two tensors; {nan} (``torch.{name}``).

    >>> agnostic.{name}(agnostic.tensor([1.0, 5.0]), agnostic.tensor([3.0, 2.0]))
    tensor([{printed}])
""")


maximum = _extremum("maximum", "maximum", lambda a, b: a >= b, "NaN wins", "3., 5.")
minimum = _extremum("minimum", "minimum", lambda a, b: a <= b, "NaN wins", "1., 2.")
fmax = _extremum("fmax", "maximum", lambda a, b: a >= b, "a NaN loses to a number", "3., 5.")
fmin = _extremum("fmin", "minimum", lambda a, b: a <= b, "a NaN loses to a number", "1., 2.")

atan2 = _binary("atan2", FLOAT, "arctan2", check=no_complex, aliases=("arctan2",), gradients={
    "input": lambda grad, input, other: grad * other / (other * other + input * input),
    "other": lambda grad, input, other: -grad * input / (other * other + input * input)}, doc="""\
The angle of the point ``(other, input)``, in radians, quadrant-aware (``torch.atan2``, alias ``arctan2``).

    >>> agnostic.atan2(agnostic.tensor([1.0]), agnostic.tensor([1.0]))
    tensor([0.7854])
""")
hypot = _binary("hypot", FLOAT, "hypot", check=floating_only, gradients={
    "input": lambda grad, input, result: grad * input / result,
    "other": lambda grad, other, result: grad * other / result}, doc="""\
``sqrt(input ** 2 + other ** 2)`` without overflow in the squares (``torch.hypot``); floating operands only,
as in PyTorch.

    >>> agnostic.hypot(agnostic.tensor([3.0]), agnostic.tensor([4.0]))
    tensor([5.])
""")
copysign = _binary("copysign", FLOAT, "copysign", check=no_complex, gradients={
    "input": lambda grad, input, result: grad * (result / input).masked_fill(input == 0, 0.0),
    "other": _zero}, doc="""\
The magnitude of ``input`` with the sign of ``other`` (``torch.copysign``).

    >>> agnostic.copysign(agnostic.tensor([1.0, 2.0]), -1.0)
    tensor([-1., -2.])
""")


def _nextafter(xp, input, other):
    """The next float after ``input`` towards ``other``, stepped and compared on the bits: CuPy's half-precision
    nextafter steps in float32, and its kernels (``-ftz=true``) read float32 subnormals as zeros in comparisons."""
    input, other = xp.broadcast_arrays(input, other)
    signed = numpy.dtype(f"int{8 * input.dtype.itemsize}")
    lowest = numpy.iinfo(signed).min  # the sign bit alone: -0.0
    bits, toward = (xp.ascontiguousarray(x).reshape(x.shape).view(signed) for x in (input, other))
    # The bits as integers in the floats' order: magnitude, negated for negative floats (-0.0 and 0.0 both 0).
    key, toward_key = (xp.where(b < 0, -(b & ~lowest), b) for b in (bits, toward))
    away_from_zero = (toward_key > key) == (key > 0)  # a step up in magnitude is +1 on the bits, either sign
    stepped = bits + (away_from_zero.astype(signed) * 2 - 1)
    from_zero = xp.where(toward_key > 0, signed.type(1), signed.type(lowest + 1))
    result = xp.where(key == 0, from_zero, stepped)
    result = xp.where(key == toward_key, toward, result).view(input.dtype)
    return xp.where((input != input) | (other != other), input + other, result)


nextafter = _binary("nextafter", SAME, _nextafter, check=floating_only, gradients={
    "input": lambda grad: grad, "other": _zero}, doc="""\
The next floating-point value after ``input`` in the direction of ``other``, in the promoted dtype
(``torch.nextafter``); floating operands only. Subnormal results are kept on every device.

    >>> agnostic.nextafter(agnostic.tensor([0.0, 0.0]), agnostic.tensor([1.0, -1.0]))
    tensor([ 1.4013e-45, -1.4013e-45])
""")


@composite(method=False)
def rsub(input, other, *, alpha=1):
    """``other - alpha * input``: :func:`sub` with its operands swapped (``torch.rsub``).

        >>> agnostic.rsub(agnostic.tensor([1, 2]), 5, alpha=2)
        tensor([3, 1])
    """
    return sub(other, input, alpha=alpha)


def div(input, other, *, rounding_mode=None, out=None):
    """``input / other``: true division (integers divide to the default float dtype) or, with ``rounding_mode``
    ``"trunc"`` or ``"floor"``, the quotient rounded that way in the promoted dtype (``torch.div``, aliases
    ``divide`` and ``true_divide``).

        >>> agnostic.div(agnostic.tensor([7, -7]), 2)
        tensor([ 3.5000, -3.5000])
        >>> agnostic.div(agnostic.tensor([7, -7]), 2, rounding_mode="trunc")
        tensor([ 3, -3])
    """
    if rounding_mode is None:
        return _true_divide.function(input, other, out=out)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    dtype = result_dtype(as_operand(input), as_operand(other))
    if dtype is _dtypes.bool:
        raise NotImplementedError(f'"div_{rounding_mode}" is not implemented for bool tensors')
    if rounding_mode == "floor":
        return floor_divide(input, other, out=out)
    return _trunc_divide.function(input, other, out=out)


def div_(self, other, *, rounding_mode=None):
    """In-place :func:`div` (``self /= other``): the quotient is written into ``self``, which keeps its shape and
    dtype.

        >>> x = agnostic.tensor([7.0, -7.0])
        >>> x.div_(2, rounding_mode="floor")
        tensor([ 3., -4.])
    """
    if rounding_mode is None:
        return _true_divide.inplace_method(self, other)
    _check_writable(self)
    return write_result(self, div(self, other, rounding_mode=rounding_mode), "div_")


div = divide = true_divide = composite(aliases=("divide", "true_divide"), inplace=div_)(div)


def round(input, *, decimals=0, out=None):
    """Each element rounded to the nearest integer, halves to even, or with ``decimals`` to that many decimal places
    (negative: to tens, hundreds...) as ``torch.round``: ``round(input * 10 ** decimals) / 10 ** decimals``, computed
    in float32 for float16 and bfloat16 tensors, as PyTorch does. Integer tensors stay as they are (rounding them to
    decimals is refused, as in PyTorch).

        >>> agnostic.round(agnostic.tensor([0.5, 1.5, 2.7]))
        tensor([0., 2., 3.])
        >>> agnostic.tensor([1.2345, -2.5, 15.0]).round(decimals=2)
        tensor([ 1.2300, -2.5000, 15.0000])
        >>> agnostic.round(agnostic.tensor([15.0, 149.0]), decimals=-2)
        tensor([  0., 100.])
    """
    if decimals == 0:
        return _round_to_integer.function(input, out=out)
    result = _round_to_decimals(input, decimals)
    return result if out is None else write_result(out, result, "round")


def _round_to_decimals(input, decimals):
    check_tensor("round", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"round" to decimals is not implemented for {input.dtype} tensors, as in PyTorch; '
                                  "convert with .float() first, or leave decimals at 0")
    computed = input.float() if input.dtype in (_dtypes.float16, _dtypes.bfloat16) else input
    places = -decimals if decimals < 0 else decimals
    scale = 10.0 ** places if places <= 308 else math.inf  # past float64's range: NaN, as PyTorch's inf scale gives
    if decimals > 0:
        rounded = _round_to_integer.function(computed * scale) / scale
    else:
        rounded = _round_to_integer.function(computed / scale) * scale
    return rounded.to(input.dtype)


def round_(self, *, decimals=0):
    """In-place :func:`round`.

        >>> agnostic.tensor([1.25, 2.5]).round_(decimals=1)
        tensor([1.2000, 2.5000])
    """
    if decimals == 0:
        return _round_to_integer.inplace_method(self)
    _check_writable(self)
    return write_result(self, _round_to_decimals(self, decimals), "round_")


round = composite(inplace=round_)(round)


# ----- unary ops --------------------------------------------------------------------------------------------------
def _unary(name, result, implementation, example, **declaration):
    values, expected = example
    torch_name = declaration.pop("torch_name", name)
    module = declaration.pop("module", "agnostic")  # the public namespace, for ops of agnostic.special
    aliases = declaration.get("aliases", ())
    summary = declaration.pop("summary")
    doc = f"""\
{summary} (``torch.{torch_name}``{''.join(', alias ``' + a + '``' for a in aliases)}).

    >>> {module}.{name}(agnostic.tensor({values}))
    tensor({expected})
"""
    return Elementwise(name, 1, result, implementation, doc=doc, **declaration).function


neg = _unary("neg", SAME, "negative", ("[1, -2]", "[-1,  2]"), check=_no_bool_negation, operator="neg",
             aliases=("negative",), derivative=lambda: -1.0, summary="``-input``; bool tensors are refused")
abs = _unary("abs", SAME, "absolute", ("[-1.5, 2.0]", "[1.5000, 2.0000]"), check=no_bool, operator="abs",
             aliases=("absolute",), derivative=lambda input: input.sgn().conj(),
             summary="The absolute value")
sign = _unary("sign", SAME, _sign, ("[-2.0, 0.0, 3.0]", "[-1.,  0.,  1.]"), check=no_complex,
              gradients={"input": _zero}, summary="-1, 0 or 1 by the sign of each element")
floor = _unary("floor", SAME, _rounding("floor"), ("[-1.5, 1.5]", "[-2.,  1.]"), check=no_complex,
               gradients={"input": _zero}, summary="The largest integer not above each element")
ceil = _unary("ceil", SAME, _rounding("ceil"), ("[-1.5, 1.5]", "[-1.,  2.]"), check=no_complex,
              gradients={"input": _zero}, summary="The smallest integer not below each element")
trunc = _unary("trunc", SAME, _rounding("trunc"), ("[-1.5, 1.5]", "[-1.,  1.]"), check=no_complex,
               gradients={"input": _zero}, aliases=("fix",), summary="Each element rounded toward zero")
_round_to_integer = Elementwise("round", 1, SAME, _rounding("rint"), check=no_complex, gradients={"input": _zero},
                                public=False, doc="Each element rounded to the nearest integer, halves to even.")
frac = _unary("frac", SAME, _frac, ("[1.25, -1.5]", "[ 0.2500, -0.5000]"), check=floating_only,
              derivative=lambda: 1.0, summary="The fractional part, ``input - trunc(input)``")
square = _unary("square", SAME, _square, ("[2, -3]", "[4, 9]"), derivative=lambda input: 2 * input,
                summary="``input * input``; bool tensors square to int64")
relu = _unary("relu", SAME, _relu, ("[-1.0, 2.0]", "[0., 2.]"), check=no_bool_or_complex, large_cpu=cpu_kernels.relu,
              large_cuda=cuda_vectorized.relu,
              gradients={"input": _relu_backward}, summary="``max(input, 0)``: the rectified linear unit")
bitwise_not = _unary("bitwise_not", SAME, "invert", ("[0, 5]", "[-1, -6]"), check=integral_only, operator="invert",
                     summary="Every bit flipped (logical not for bool tensors)")
logical_not = _unary("logical_not", LOGICAL, "logical_not", ("[0, 2]", "[ True, False]"),
                     summary="True where an element is zero, as a bool tensor")
isnan = _unary("isnan", BOOL, "isnan", ("[1.0, float('nan')]", "[False,  True]"), summary="True where NaN")
isinf = _unary("isinf", BOOL, "isinf", ("[1.0, float('inf')]", "[False,  True]"), summary="True where +-inf")
isfinite = _unary("isfinite", BOOL, "isfinite", ("[1.0, float('inf')]", "[ True, False]"),
                  summary="True where neither NaN nor infinite")


def _floating(name, implementation, example, summary, derivative, **declaration):
    return _unary(name, FLOAT, implementation, example, derivative=derivative, summary=summary, **declaration)


sqrt = _floating("sqrt", "sqrt", ("[4.0, 9.0]", "[2., 3.]"), "The square root", lambda result: 0.5 / result)
rsqrt = _floating("rsqrt", _rsqrt, ("[4.0]", "[0.5000]"), "``1 / sqrt(input)``",
                  lambda result: -0.5 * result ** 3)
reciprocal = _floating("reciprocal", _reciprocal, ("[2.0, 4.0]", "[0.5000, 0.2500]"), "``1 / input``",
                       lambda result: -(result * result))
exp = _floating("exp", "exp", ("[0.0, 1.0]", "[1.0000, 2.7183]"), "``e ** input``", lambda result: result)
exp2 = _floating("exp2", "exp2", ("[3.0]", "[8.]"), "``2 ** input``", lambda result: result * math.log(2.0))
expm1 = _floating("expm1", "expm1", ("[0.0]", "[0.]"), "``exp(input) - 1``, exact near zero",
                  lambda result: result + 1)
log = _floating("log", "log", ("[1.0]", "[0.]"), "The natural logarithm", lambda input: 1 / input,
               kind_implementations={"c": _complex_logarithm("log")})
log2 = _floating("log2", "log2", ("[8.0]", "[3.]"), "The base-2 logarithm",
                 lambda input: 1 / (input * math.log(2.0)))
log10 = _floating("log10", "log10", ("[1.0]", "[0.]"), "The base-10 logarithm",
                  lambda input: 1 / (input * math.log(10.0)))
log1p = _floating("log1p", "log1p", ("[0.0]", "[0.]"), "``log(1 + input)``, exact near zero",
                  lambda input: 1 / (1 + input), kind_implementations={"c": _complex_logarithm("log1p")})
sin = _floating("sin", "sin", ("[0.0]", "[0.]"), "The sine (radians)", lambda input: input.cos())
cos = _floating("cos", "cos", ("[0.0]", "[1.]"), "The cosine (radians)", lambda input: -input.sin())
tan = _floating("tan", "tan", ("[0.0]", "[0.]"), "The tangent (radians)", lambda result: 1 + result * result)
asin = _floating("asin", "arcsin", ("[1.0]", "[1.5708]"), "The inverse sine",
                 lambda input: (1 - input * input).rsqrt(), aliases=("arcsin",))
acos = _floating("acos", "arccos", ("[1.0]", "[0.]"), "The inverse cosine",
                 lambda input: -(1 - input * input).rsqrt(), aliases=("arccos",))
atan = _floating("atan", "arctan", ("[1.0]", "[0.7854]"), "The inverse tangent",
                 lambda input: 1 / (1 + input * input), aliases=("arctan",))
sinh = _floating("sinh", "sinh", ("[0.0]", "[0.]"), "The hyperbolic sine", lambda input: input.cosh())
cosh = _floating("cosh", "cosh", ("[0.0]", "[1.]"), "The hyperbolic cosine", lambda input: input.sinh())
tanh = _floating("tanh", "tanh", ("[0.0]", "[0.]"), "The hyperbolic tangent", lambda result: 1 - result * result,
                 kind_implementations={"c": _complex_tanh})
asinh = _floating("asinh", "arcsinh", ("[0.0]", "[0.]"), "The inverse hyperbolic sine",
                  lambda input: (input * input + 1).rsqrt(), aliases=("arcsinh",))
acosh = _floating("acosh", "arccosh", ("[1.0]", "[0.]"), "The inverse hyperbolic cosine",
                  lambda input: (input * input - 1).rsqrt(), kind_implementations={"c": _complex_acosh},
                  aliases=("arccosh",))
atanh = _floating("atanh", "arctanh", ("[0.0]", "[0.]"), "The inverse hyperbolic tangent",
                  lambda input: 1 / (1 - input * input), aliases=("arctanh",))
sigmoid = _floating("sigmoid", _sigmoid, ("[0.0]", "[0.5000]"), "The logistic function ``1 / (1 + exp(-input))``",
                    lambda result: result * (1 - result))
negative, absolute = neg, abs
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh, fix = asinh, acosh, atanh, trunc
subtract, multiply = sub, mul
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# ----- ops with extra arguments -----------------------------------------------------------------------------------
def _where_method(self, condition, other):
    """``where(condition, self, other)``: ``self`` where ``condition`` is true, else ``other``.

        >>> agnostic.tensor([1.0, 2.0]).where(agnostic.tensor([True, False]), 0.0)
        tensor([1., 0.])
    """
    return where(condition, self, other)


@composite(out=True, method=_where_method, gradients={
    "input": lambda grad, condition: grad.masked_fill(~condition, 0.0),
    "other": lambda grad, condition: grad.masked_fill(condition, 0.0)})
def where(condition, input=None, other=None):
    """``input`` where ``condition`` is true, else ``other`` (PyTorch's promotion between the two).

    With only ``condition``, the indices of its nonzero elements, as ``torch.where(condition)``.

        >>> agnostic.where(agnostic.tensor([True, False]), agnostic.tensor([1.0, 2.0]), 0.0)
        tensor([1., 0.])
    """
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, TensorBase) or condition.dtype is not _dtypes.bool:
        got = condition.dtype if isinstance(condition, TensorBase) else type(condition).__name__
        raise RuntimeError(f"where(): expected condition to be a bool tensor, got {got}; use condition.bool()")
    input = as_operand(input, "input")
    other = as_operand(other, "other")
    device = check_same_device(*[x for x in (condition, input, other) if isinstance(x, TensorBase)])
    dtype = result_dtype(input, other)
    xp = device.backend.xp
    a = operand_array(input, dtype, device)
    b = operand_array(other, dtype, device)
    mask = operand_array(condition, _dtypes.bool, device)
    backend = device.backend
    if _is_positive_zero(other) and isinstance(a, backend.array_type) and a.dtype.kind in "fiu":
        return finish(backend.run(broadcasting, backend.ops.kept_or_zero, (mask, a)), dtype, device)
    return finish(device.backend.run(broadcasting, xp.where, (mask, a, b)), dtype, device)


def _is_positive_zero(value):
    return type(value) in (int, float) and value == 0 and math.copysign(1.0, value) > 0


def _inside(input, min, max):
    inside = input == input if min is None else input >= min
    return inside if max is None else inside & (input <= max)


@composite(aliases=("clip",), inplace=True, gradients={
    "input": lambda grad, input, min, max: grad * _inside(input, min, max).to(grad.dtype),
    "min": lambda grad, input, min, max: grad * ((input < min) & (True if max is None else input <= max)).to(
        grad.dtype),
    "max": lambda grad, input, max: grad * (input > max).to(grad.dtype)})
def clamp(input, min=None, max=None, *, out=None):
    """Limit ``input`` to ``[min, max]`` (scalars or tensors); the result dtype promotes over all three.

    Where ``min > max`` every element becomes ``max``, and NaN stays NaN, as in PyTorch.

        >>> agnostic.clamp(agnostic.tensor([-2.0, 0.5, 3.0]), -1, 1)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    dtype = result_dtype(*(x for x in (input, min, max) if x is not None))
    result = input if input.dtype is dtype else input.to(dtype)
    for bound, combine in ((min, maximum), (max, minimum)):
        if bound is not None:
            if not isinstance(bound, TensorBase):
                ordered_only("clamp", input.dtype)
            elif bound.dtype is not dtype:  # else a 0-dim input would take a dimensioned bound's dtype
                bound = bound.to(dtype)
            result = combine(result, bound)
    if out is not None:
        return write_result(out, result, "clamp")
    return result


clip = clamp


@composite(out="cast", inplace=True, gradients={
    "input": lambda grad, weight: grad * (1 - weight),
    "end": lambda grad, weight: grad * weight,
    "weight": lambda grad, input, end: grad * (end - input)})
def lerp(input, end, weight):
    """``input + weight * (end - input)``; floating (or complex) tensors only, as in PyTorch.

        >>> agnostic.lerp(agnostic.tensor([0.0]), agnostic.tensor([10.0]), 0.25)
        tensor([2.5000])
    """
    dtype = result_dtype(input, end)
    if dtype.category < _FLOATING:
        raise NotImplementedError(f'"lerp" is not implemented for {dtype}; convert the tensors with .float()')
    return add(input, mul(sub(end, input), weight))


@composite(out=True, inplace=True, gradients={"input": lambda grad, input: grad * input.isfinite().to(grad.dtype)})
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities with finite numbers (the dtype's extremes by default).

        >>> agnostic.nan_to_num(agnostic.tensor([float('nan'), 1.0]))
        tensor([0., 1.])
    """
    if not input.dtype.is_floating_point:
        return input.clone()
    info = _dtypes.finfo(input.dtype)
    xp = input._device.backend.xp
    result = input._device.backend.run(xp.nan_to_num, input._data, nan=nan,
                                       posinf=info.max if posinf is None else posinf,
                                       neginf=info.min if neginf is None else neginf)
    return finish(result, input.dtype, input._device)


def _softmax_gradient(grad, dim, result):
    fused = _fused_softmax_gradient(grad, dim, result, logarithm=False)
    return fused if fused is not None else result * (grad - (grad * result).sum(dim, keepdim=True))


def _log_softmax_gradient(grad, dim, result):
    fused = _fused_softmax_gradient(grad, dim, result, logarithm=True)
    return fused if fused is not None else grad - result.exp() * grad.sum(dim, keepdim=True)


def _fused_softmax_gradient(grad, dim, result, logarithm):
    """The gradient from the backend's row kernel (``ops.softmax_backward_rows``) where it has one (``ROW_KERNELS``)
    and takes these arrays: the last dimension of float32/float64 tensors of one dtype, in a backward that isn't
    recorded; else None."""
    backend = result._device.backend
    if (not backend.ops.ROW_KERNELS or is_grad_enabled() or result.dtype.name not in ("float32", "float64")
            or grad.dtype != result.dtype
            or grad.device != result.device or result.ndim == 0 or result.numel() == 0
            or _normalize_dim(dim, result.ndim) != result.ndim - 1):
        return None
    with backend.activate():
        gradient = backend.ops.softmax_backward_rows(backend.xp.ascontiguousarray(grad._data),
                                                     backend.xp.ascontiguousarray(result._data), logarithm)
    return None if gradient is None else wrap(gradient, result._device)  # None: the backend leaves it composed


def _softmax_family(input, dim, dtype, logarithm):
    """softmax or log_softmax: the backend's row kernel over the last dimension where it has one (``ROW_KERNELS``:
    ``ops.softmax_rows``), else composed from NumPy/CuPy calls, the maximum subtracted first."""
    target = _softmax_dtype(input, dtype)
    backend = input._device.backend
    if (backend.ops.ROW_KERNELS and input._data.ndim and input._data.size
            and _normalize_dim(dim, input._data.ndim) == input._data.ndim - 1):
        array = operand_array(input, target, input._device)
        with backend.activate():
            compute = array.astype(numpy.float32) if target is _dtypes.float16 else array
            fused = None
            if compute.dtype in _FUSED_SOFTMAX_DTYPES:
                fused = backend.ops.softmax_rows(backend.xp.ascontiguousarray(compute), logarithm)
            if fused is not None:  # None: the backend leaves this one to the composed form (a small CPU array)
                return finish(fused, target, input._device)
    shifted, xp = _shifted_for_softmax(input, dim, dtype)
    with backend.activate():
        if logarithm:
            result = shifted - xp.log(xp.exp(shifted).sum(axis=_axis(shifted, dim), keepdims=True))
        else:
            exponentials = xp.exp(shifted)
            result = exponentials / exponentials.sum(axis=_axis(shifted, dim), keepdims=True)
    return finish(result, target, input._device)


_FUSED_SOFTMAX_DTYPES = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))


@composite(gradients={"input": _softmax_gradient})
def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (the maximum is subtracted first).

        >>> agnostic.softmax(agnostic.tensor([0.0, 0.0]), dim=0)
        tensor([0.5000, 0.5000])
    """
    return _softmax_family(input, dim, dtype, logarithm=False)


@composite(gradients={"input": _log_softmax_gradient})
def log_softmax(input, dim, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed without forming the softmax.

        >>> agnostic.log_softmax(agnostic.tensor([0.0, 0.0]), dim=0)
        tensor([-0.6931, -0.6931])
    """
    return _softmax_family(input, dim, dtype, logarithm=True)


def _axis(array, dim):
    """The reduction axis of a softmax: None for a 0-dim array (CuPy refuses axis 0 there, NumPy allows it)."""
    return dim if array.ndim else None


def _softmax_dtype(input, dtype):
    dtype = _dtypes.as_dtype(dtype) or input.dtype
    if dtype.category < _FLOATING:
        raise RuntimeError(f"softmax(): not implemented for {dtype}; convert the input with .float()")
    return dtype


def _shifted_for_softmax(input, dim, dtype):
    target = _softmax_dtype(input, dtype)
    dim = _normalize_dim(dim, input._data.ndim)
    xp = input._device.backend.xp
    array = operand_array(input, target, input._device)
    with input._device.backend.activate():
        compute = array.astype(numpy.float32) if target is _dtypes.float16 else array
        if compute.ndim == 0 or compute.size == 0:
            return compute - compute, xp
        return compute - compute.max(axis=_axis(compute, dim), keepdims=True), xp


# ----- special functions ------------------------------------------------------------------------------------------
# Computed by SciPy's scipy.special on the CPU and by its CuPy namesake (cupyx.scipy.special) on CUDA, through each
# backend's ``ops.special_function``; where those libraries' values differ from PyTorch's, ``adjust`` gives PyTorch's.
_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _each_backends_own(xp, *arrays):
    raise NotImplementedError("special functions are computed by each backend's own library (backend.ops)")


def _library(name, adjust=None):
    """The implementations of an op computed by ``scipy.special.<name>`` on the CPU and ``cupyx.scipy.special``'s
    namesake on CUDA."""
    return {"cpu_implementation": cpu_ops.special_function(name, adjust),
            "cuda_implementation": cuda_ops.special_function(name, adjust)}


def _infinite_at_minus_infinity(xp, result, x):
    """SciPy's gammaln(-inf) is -inf; PyTorch's lgamma(-inf) is +inf (log |Gamma| grows without bound there)."""
    return xp.where(x == -numpy.inf, numpy.inf, result)


def _nan_at_infinity(xp, result, x):
    """PyTorch's i0(+-inf) is NaN (its series divides inf by inf); CuPy's is inf."""
    return xp.where(xp.isinf(x), numpy.nan, result)


def _nan_where_other_is_nan(xp, result, input, other):
    """xlogy and xlog1py are NaN where ``other`` is, even where ``input`` is 0 (SciPy's are; CuPy's give 0)."""
    return xp.where(xp.isnan(other), numpy.nan, result)


def _special(name, library_name, example, summary, derivative=None, adjust=None, **declaration):
    """A one-operand special function: integers and bools give the default float dtype, complex is refused."""
    return _unary(name, FLOAT, _each_backends_own, example, check=no_complex, derivative=derivative, summary=summary,
                  **{**_library(library_name, adjust), **declaration})


def _special_only(name, example, summary, derivative=None, library_name=None):
    """An op of ``agnostic.special`` alone (``torch.special.<name>``): declared here, unlisted in ``agnostic``, and
    made public by ``agnostic.special``; returns its declaration."""
    function = _special(name, library_name or name, example, summary, derivative, module="agnostic.special",
                        torch_name="special." + name, public=False)
    return _declaration_of(function)


def _declaration_of(function):
    return next(op for op in reversed(_DECLARED) if op.function is function)


def _not_implemented(name, parameter):
    """A gradient formula for an argument PyTorch doesn't differentiate: the backward pass refuses it."""
    def formula(grad):
        raise NotImplementedError(f"the derivative for '{name}: {parameter}' is not implemented.")
    return formula


def _tiny_replaced(x):
    """``x`` where ``|x|`` exceeds machine epsilon, else epsilon: a divisor safe at zero (PyTorch's i1 backward)."""
    epsilon = _dtypes.finfo(x.dtype).eps
    return where(x.abs() > epsilon, x, epsilon)


def _i1_derivative(input, result):
    safe = _tiny_replaced(input)
    return where(input.abs() > _dtypes.finfo(input.dtype).eps, i0(safe) - result / safe, 0.5)


def _i1e_derivative(input, result):
    safe = _tiny_replaced(input)
    return where(input.abs() > _dtypes.finfo(input.dtype).eps,
                 SPECIAL["i0e"].function(safe) - result * (safe.sign() + safe.reciprocal()), 0.5)


def _sinc_derivative(input):
    """``(cos(pi x) pi x - sin(pi x)) / (pi x^2)``, 0 at 0."""
    angle = input * math.pi
    return where(input == 0, 0.0, (angle * angle.cos() - angle.sin()) / (angle * input))


def _sinc(xp, x):
    """``sin(pi x) / (pi x)``, 1 at 0, as PyTorch computes it (half precisions in float32)."""
    compute = x.astype(numpy.float32) if x.dtype.itemsize == 2 and x.dtype.kind in "fV" else x
    angle = compute * compute.dtype.type(math.pi)
    with numpy.errstate(all="ignore"):
        return xp.where(compute == 0, compute.dtype.type(1), xp.sin(angle) / angle).astype(x.dtype, copy=False)


digamma = _special("digamma", "psi", ("[1.0, 0.5]", "[-0.5772, -1.9635]"),
                   "The logarithmic derivative of the gamma function; -inf at 0 (+inf at -0.0), NaN at the "
                   "negative integers", lambda input: polygamma(1, input))
lgamma = _special("lgamma", "gammaln", ("[0.5, 3.0]", "[0.5724, 0.6931]"),
                  "The natural logarithm of the absolute value of the gamma function; +inf at 0, the negative "
                  "integers and -inf", lambda input: digamma(input), adjust=_infinite_at_minus_infinity)
erf = _special("erf", "erf", ("[0.0, 0.5, -2.0]", "[ 0.0000,  0.5205, -0.9953]"), "The error function",
               lambda input: (-input * input).exp() * (2.0 / _SQRT_PI),
               cpu_implementation=cpu_ops.erf)  # fdlibm's, to 1 ulp (``_backends.special``)
erfc = _special("erfc", "erfc", ("[0.0, 1.0]", "[1.0000, 0.1573]"), "The complementary error function ``1 - erf``",
                lambda input: (-input * input).exp() * (-2.0 / _SQRT_PI))
erfinv = _special("erfinv", "erfinv", ("[0.0, 0.5]", "[0.0000, 0.4769]"),
                  "The inverse error function: +-inf at +-1, NaN outside [-1, 1]",
                  lambda result: (result * result).exp() * (0.5 * _SQRT_PI))
i0 = _special("i0", "i0", ("[0.0, 1.0]", "[1.0000, 1.2661]"),
              "The modified Bessel function of the first kind, order 0", lambda input: SPECIAL["i1"].function(input),
              adjust=_nan_at_infinity)
sinc = _unary("sinc", FLOAT, _sinc, ("[0.0, 0.5]", "[1.0000, 0.6366]"), derivative=_sinc_derivative,
              summary="The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0")
signbit = _unary("signbit", BOOL, "signbit", ("[-0.0, 0.0, -1.5]", "[ True, False,  True]"), check=no_complex,
                 summary="True where the sign bit is set (negative numbers and -0.0)")

# torch.special's own functions, which agnostic.special makes public (``SPECIAL``: by name).
SPECIAL: dict = {op.name: op for op in (
    _special_only("erfcx", ("[0.0, 2.0]", "[1.0000, 0.2554]"), "The scaled complementary error function "
                  "``exp(x ** 2) * erfc(x)``", lambda input, result: 2 * input * result - 2.0 / _SQRT_PI),
    _special_only("i0e", ("[0.0, 1.0]", "[1.0000, 0.4658]"), "The exponentially scaled modified Bessel function "
                  "of order 0, ``exp(-|x|) * i0(x)``",
                  lambda input, result: SPECIAL["i1e"].function(input) - input.sign() * result),
    _special_only("i1", ("[0.0, 1.0]", "[0.0000, 0.5652]"), "The modified Bessel function of the first kind, "
                  "order 1", _i1_derivative),
    _special_only("i1e", ("[0.0, 1.0]", "[0.0000, 0.2079]"), "The exponentially scaled modified Bessel function "
                  "of order 1, ``exp(-|x|) * i1(x)``", _i1e_derivative),
    _special_only("ndtr", ("[0.0, 1.0]", "[0.5000, 0.8413]"), "The standard normal distribution function",
                  lambda input: (input * input * -0.5).exp() / _SQRT_2PI),
    _special_only("ndtri", ("[0.5, 0.975]", "[0.0000, 1.9600]"), "The inverse of ``ndtr``: the standard normal "
                  "quantile", lambda result: (result * result * 0.5).exp() * _SQRT_2PI),
    _special_only("log_ndtr", ("[0.0, -10.0]", "[ -0.6931, -53.2313]"), "The logarithm of the standard normal "
                  "distribution function, accurate in the lower tail",
                  lambda input, result: (-(result + input * input * 0.5)).exp() / _SQRT_2PI),
    _special_only("entr", ("[0.5, 0.0, -1.0]", "[0.3466, 0.0000,   -inf]"), "The entropy term ``-x * log(x)``: 0 at "
                  "0, -inf for negative x", lambda input: -(input.log() + 1)),
)}


def _special_binary(name, library_name, summary, example, gradients, public=True, torch_name=None, check=no_complex,
                    adjust=None):
    """A two-operand special function (tensors or Python numbers); integers and bools give the default float dtype
    unless ``check`` refuses them."""
    module = "agnostic" if public else "agnostic.special"
    doc = f"""\\
{summary} (``torch.{torch_name or name}``).

    >>> {module}.{name}({example[0]})
    {example[1]}
"""
    return Elementwise(name, 2, FLOAT, _each_backends_own, check=check, gradients=gradients, public=public,
                       doc=doc, **_library(library_name, adjust))


def _log_x_gradient(name, shifted):
    """The gradient of ``x * log(y + shifted)`` for x: ``grad * log(y + shifted)``, 0 where ``x == 0`` and
    ``y + shifted <= 0`` (PyTorch's derivative of xlogy and xlog1py; ``y`` may be a Python number)."""
    def formula(grad, input, other):
        return where((input == 0) & (other + shifted <= 0), 0.0, _LOG_X_OPS[name].function(grad, other))
    return formula


def _incomplete_gamma_gradient(sign):
    """d/dx of the regularized incomplete gamma functions P(a, x) (``sign`` 1) and Q(a, x) (-1):
    ``x ** (a - 1) * exp(-x) / Gamma(a)``."""
    def formula(grad, input, other):
        log_gamma = lgamma(input) if isinstance(input, TensorBase) else math.lgamma(input)
        return grad * ((input - 1) * other.log() - other - log_gamma).exp() * sign
    return formula


_xlogy = _special_binary("xlogy", "xlogy", "``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is "
                         "NaN); either operand may be a Python number",
                         ("agnostic.tensor([0.0, 2.0]), 0.0", "tensor([0., -inf])"),
                         {"input": _log_x_gradient("xlogy", 0),
                          "other": lambda grad, input, other: grad * input / other}, adjust=_nan_where_other_is_nan)
xlogy = _xlogy.function
igamma = _special_binary("igamma", "gammainc", "The regularized lower incomplete gamma function ``P(input, other)``"
                         "; floating operands only, as in PyTorch",
                         ("agnostic.tensor([1.0, 2.0]), agnostic.tensor([1.0, 1.0])", "tensor([0.6321, 0.2642])"),
                         {"input": _not_implemented("igamma", "input"), "other": _incomplete_gamma_gradient(1)},
                         check=floating_only).function
igammac = _special_binary("igammac", "gammaincc", "The regularized upper incomplete gamma function "
                          "``Q(input, other) = 1 - P(input, other)``",
                          ("agnostic.tensor([1.0, 2.0]), agnostic.tensor([1.0, 1.0])", "tensor([0.3679, 0.7358])"),
                          {"input": _not_implemented("igammac", "input"), "other": _incomplete_gamma_gradient(-1)},
                          check=floating_only).function
_xlog1py = _special_binary("xlog1py", "xlog1py", "``input * log1p(other)``, 0 where ``input`` is 0 (unless "
                           "``other`` is NaN); either operand may be a Python number",
                           ("agnostic.tensor([0.0, 2.0]), -1.0", "tensor([0., -inf])"),
                           {"input": _log_x_gradient("xlog1py", 1),
                            "other": lambda grad, input, other: grad * input / (other + 1)},
                           public=False, torch_name="special.xlog1py", adjust=_nan_where_other_is_nan)
_zeta: Elementwise = _special_binary("zeta", "zeta", "The Hurwitz zeta function ``sum over k >= 0 of (k + other) ** -input``",
                        ("agnostic.tensor([2.0, 3.0]), 1.0", "tensor([1.6449, 1.2021])"),
                        {"input": _not_implemented("zeta", "input"),
                         "other": lambda grad, input, other: grad * -input * _zeta.function(input + 1.0, other)},
                        public=False, torch_name="special.zeta")
_LOG_X_OPS = {"xlogy": _xlogy, "xlog1py": _xlog1py}
SPECIAL.update(xlog1py=_xlog1py, zeta=_zeta)


def _floating_result(name, input):
    """The dtype of a special function's result: the input's if floating, else the default float dtype."""
    dtype = input.dtype
    if dtype.is_complex:
        raise NotImplementedError(f'"{name}" is not implemented for complex tensors ({dtype})')
    return dtype if dtype.is_floating_point else _dtypes.get_default_dtype()


_polygamma_of = Elementwise("polygamma", 2, FLOAT, _each_backends_own, check=no_complex, public=False,
                            doc="``polygamma(n, input)`` of a number ``n`` and a tensor (see ``polygamma``).",
                            **_library("polygamma"))


def _polygamma_method(self, n):
    """``polygamma(n, self)``: the ``n``-th derivative of the digamma function.

        >>> agnostic.tensor([1.0]).polygamma(1)
        tensor([1.6449])
    """
    return polygamma(n, self)


def _write_polygamma(self, n):
    _check_writable(self)
    return write_result(self, polygamma(n, self), "polygamma_")


def polygamma_(self, n):
    """In-place :func:`polygamma` (``self = polygamma(n, self)``); integer tensors are refused (the result is
    floating).

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> x.polygamma_(1)
        tensor([1.6449, 0.6449])
    """
    return _polygamma_in_place(self, n)


_polygamma_in_place = tracking.differentiable_inplace("polygamma_", _write_polygamma,
                                                      lambda self, n: polygamma(n, self))


@composite(method=_polygamma_method, inplace=polygamma_,
           gradients={"input": lambda grad, n, input: grad * polygamma(n + 1, input)})
def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of the digamma function (``torch.polygamma``): ``polygamma(0, x)`` is ``digamma(x)``,
    ``polygamma(1, x)`` the trigamma function. Integer inputs give the default float dtype.

        >>> agnostic.polygamma(1, agnostic.tensor([1.0, 0.5]))
        tensor([1.6449, 4.9348])
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return digamma(input, out=out)
    return _polygamma_of.function(n, input, out=out)


def _logit_gradient(grad, input, eps):
    """``grad / (x (1 - x))``; NaN outside [0, 1] without ``eps``, 0 outside [eps, 1 - eps] with it (PyTorch's)."""
    x = input if input.dtype is grad.dtype else input.to(grad.dtype)
    derivative = grad / (x * (1 - x))
    if eps is None:
        return where((x < 0) | (x > 1), math.nan, derivative)
    return where((x < eps) | (x > 1 - eps), 0.0, derivative)


@composite(inplace=True, gradients={"input": _logit_gradient})
def logit(input, eps=None, *, out=None):
    """``log(x / (1 - x))``, the inverse of the sigmoid (``torch.logit``); with ``eps``, ``x`` is first clamped to
    ``[eps, 1 - eps]``. Integer inputs give the default float dtype.

        >>> agnostic.logit(agnostic.tensor([0.25, 0.5, 1.0]))
        tensor([-1.0986,  0.0000,     inf])
        >>> agnostic.logit(agnostic.tensor([0.0, 1.0]), eps=0.1)
        tensor([-2.1972,  2.1972])
    """
    dtype = _floating_result("logit", input)
    x = input if input.dtype is dtype else input.to(dtype)
    if eps is not None:
        x = clamp(x, eps, 1 - eps)
    with numpy.errstate(all="ignore"):
        result = log(x / (1 - x))
    return result if out is None else write_result(out, result, "logit")


class frexp_result(namedtuple("frexp", ["mantissa", "exponent"])):
    """``frexp``'s (mantissa, exponent) named tuple, printed as PyTorch's ``torch.return_types.frexp``."""

    __slots__ = ()

    def __repr__(self):
        return f"agnostic.return_types.frexp(\nmantissa={self.mantissa!r},\nexponent={self.exponent!r})"


@composite(gradients={"input": lambda grad, input: grad / frexp(input).exponent.exp2()})
def frexp(input, *, out=None):
    """Split ``input`` into a mantissa in ``(-1, 1)`` and an int32 exponent, ``input = mantissa * 2 ** exponent``
    (``torch.frexp``; 0, inf and NaN keep their value with exponent 0). Floating tensors only.

        >>> agnostic.frexp(agnostic.tensor([8.0, -3.5])).mantissa
        tensor([ 0.5000, -0.8750])
        >>> agnostic.frexp(agnostic.tensor([8.0, -3.5])).exponent
        tensor([4, 2], dtype=agnostic.int32)
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}; "
                           "convert the tensor with .float()")
    device = input._device
    backend = device.backend
    array = input._data
    if array.dtype.kind == "V":  # bfloat16, which NumPy's frexp doesn't take: exact in float32
        array = backend.run(array.astype, numpy.float32)
    mantissa, exponent = backend.run(backend.xp.frexp, array)
    result = frexp_result(finish(mantissa, input.dtype, device), finish(exponent, _dtypes.int32, device))
    if out is None:
        return result
    return frexp_result(write_result(out[0], result.mantissa, "frexp"), write_result(out[1], result.exponent, "frexp"))


@composite(inplace=True)
def ldexp(input, other, *, out=None):
    """``input * 2 ** other`` (``torch.ldexp``): integer operands give the default float dtype.

        >>> agnostic.ldexp(agnostic.tensor([1.0, 3.0]), agnostic.tensor([2, -1]))
        tensor([4.0000, 1.5000])
    """
    return mul(input, exp2(other), out=out)


@composite(inplace=True)
def mvlgamma(input, p, *, out=None):
    """The multivariate log-gamma function of dimension ``p`` (``torch.mvlgamma``, ``torch.special.multigammaln``):
    ``p (p - 1) / 4 log(pi) + sum of lgamma(input - j / 2) for j in 0..p-1``.

        >>> agnostic.mvlgamma(agnostic.tensor([2.5, 3.0]), 2)
        tensor([0.8570, 1.5502])
    """
    if not isinstance(p, int) or p < 1:
        raise RuntimeError(f"mvlgamma(): p has to be greater than or equal to 1, got {p}")
    if input.dtype is _dtypes.bool:
        raise RuntimeError("mvlgamma(): the input tensor may not be a boolean tensor; convert it with .float()")
    dtype = _floating_result("mvlgamma", input)
    x = input if input.dtype is dtype else input.to(dtype)
    result = lgamma(x)
    for j in range(1, p):
        result = result + lgamma(x - j / 2)
    result = result + p * (p - 1) / 4 * _LOG_PI
    return result if out is None else write_result(out, result, "mvlgamma")


def _heaviside_arrays(xp):
    def step(x, values):
        return xp.where(x == 0, values, x > 0).astype(x.dtype, copy=False)
    return step


@composite(inplace=True, gradients={"input": _not_implemented("heaviside", "input"),
                                    "values": _not_implemented("heaviside", "values")})
def heaviside(input, values, *, out=None):
    """The Heaviside step function (``torch.heaviside``): 0 where ``input < 0``, ``values`` where ``input == 0``, 1
    where ``input > 0`` (NaN gives 0, as in PyTorch); both tensors must have one dtype.

        >>> agnostic.heaviside(agnostic.tensor([-1.5, 0.0, 2.0]), agnostic.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    check_tensor("heaviside", values, 2, "values")
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({input.dtype} and "
                           f"{values.dtype}); convert values with values.to(input.dtype)")
    if input.dtype.is_complex:
        raise NotImplementedError("heaviside is not yet implemented for complex tensors.")
    device = check_same_device(input, values)
    backend = device.backend
    result = finish(backend.run(broadcasting, _heaviside_arrays(backend.xp), (input._data, values._data)),
                    input.dtype, device)
    return result if out is None else write_result(out, result, "heaviside")


# ----- complex conjugation ----------------------------------------------------------------------------------------
@composite(aliases=("conj_physical",), gradients={"input": lambda grad: conj(grad)})
def conj(input):
    """The complex conjugate; a real tensor is returned as it is, as in PyTorch (which conjugates lazily, where
    agnostic copies; ``conj_physical`` is the same op).

        >>> agnostic.tensor([1 + 2j, 3 - 1j]).conj()
        tensor([1.-2.j, 3.+1.j])
        >>> agnostic.tensor([1.0, 2.0]).conj()
        tensor([1., 2.])
    """
    check_tensor("conj", input)
    if not input.dtype.is_complex:
        return input
    backend = input._device.backend
    return finish(backend.run(backend.xp.conj, input._data), input.dtype, input._device)


@composite(aliases=("resolve_neg",), gradients={"input": lambda grad: grad})
def resolve_conj(input):
    """``input`` itself: agnostic conjugates and negates eagerly, so there is no conjugate or negative bit to
    resolve (PyTorch's ``resolve_conj`` and ``resolve_neg`` copy only when the bit is set).

        >>> agnostic.tensor([1 + 1j]).conj().resolve_conj()
        tensor([1.-1.j])
    """
    return input


conj_physical, resolve_neg = conj, resolve_conj



# ----- more of PyTorch's elementwise ops --------------------------------------------------------------------------
logaddexp = _binary("logaddexp", FLOAT, "logaddexp", check=floating_only, gradients={
    "input": lambda grad, input, other: grad * (input - other).sigmoid(),
    "other": lambda grad, input, other: grad * (other - input).sigmoid()}, doc="""\
``log(exp(input) + exp(other))`` without overflow (``torch.logaddexp``); floating operands only.

    >>> agnostic.logaddexp(agnostic.tensor([0.0, 1.0]), agnostic.tensor([0.0, 1.0]))
    tensor([0.6931, 1.6931])
""")
logaddexp2 = _binary("logaddexp2", FLOAT, "logaddexp2", check=floating_only, gradients={
    "input": lambda grad, input, other: grad * ((input - other) * math.log(2.0)).sigmoid(),
    "other": lambda grad, input, other: grad * ((other - input) * math.log(2.0)).sigmoid()}, doc="""\
``log2(2 ** input + 2 ** other)`` without overflow (``torch.logaddexp2``); floating operands only.

    >>> agnostic.logaddexp2(agnostic.tensor([1.0, 2.0]), agnostic.tensor([1.0, 2.0]))
    tensor([2., 3.])
""")
gcd = _binary("gcd", SAME, "gcd", check=integers_only, doc="""\
The greatest common divisor, never negative (``torch.gcd``); integer tensors only.

    >>> agnostic.gcd(agnostic.tensor([4, -6, 0]), agnostic.tensor([6, 4, 5]))
    tensor([2, 2, 5])
""")
def _least_common_multiple(xp, input, other):
    """PyTorch's ``|input / gcd * other|``, computed wide and wrapped into the dtype, so that an lcm beyond the dtype
    wraps alike on every device (CuPy's own lcm takes the absolute value after wrapping)."""
    divisor = xp.gcd(input, other)
    quotient = xp.floor_divide(input, xp.where(divisor == 0, 1, divisor))
    multiple = xp.abs(quotient.astype(numpy.int64) * other.astype(numpy.int64))
    return xp.where(divisor == 0, 0, multiple).astype(input.dtype)


lcm = _binary("lcm", SAME, _least_common_multiple, check=integers_only, doc="""\
The least common multiple, never negative (``torch.lcm``); integer tensors only.

    >>> agnostic.lcm(agnostic.tensor([4, -6]), agnostic.tensor([6, 4]))
    tensor([12, 12])
""")
deg2rad = _floating("deg2rad", "deg2rad", ("[180.0, 90.0]", "[3.1416, 1.5708]"), "Degrees converted to radians",
                    lambda: math.pi / 180, check=no_complex)
rad2deg = _floating("rad2deg", "rad2deg", ("[3.141592653589793]", "[180.]"), "Radians converted to degrees",
                    lambda: 180 / math.pi, check=no_complex)
isposinf = _unary("isposinf", BOOL, lambda xp, x: x == numpy.inf, ("[1.0, float('inf'), -float('inf')]",
                  "[False,  True, False]"), check=no_complex, summary="True where +inf")
isneginf = _unary("isneginf", BOOL, lambda xp, x: x == -numpy.inf, ("[1.0, float('inf'), -float('inf')]",
                  "[False, False,  True]"), check=no_complex, summary="True where -inf")


def _isreal(xp, x):
    if x.dtype.kind == "c":
        return x.imag == 0
    return xp.ones(x.shape, dtype=bool)


isreal = _unary("isreal", BOOL, _isreal, ("[1+0j, 1+1j]", "[ True, False]"),
                summary="True where the imaginary part is zero (everywhere, for real tensors)")


@composite(gradients={"input": lambda grad: grad})
def positive(input):
    """``input`` itself, as ``+input`` (``torch.positive``); bool tensors are refused, as in PyTorch.

        >>> agnostic.positive(agnostic.tensor([-1.0, 2.0]))
        tensor([-1.,  2.])
    """
    if input.dtype is _dtypes.bool:
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported; convert it with .int()")
    return input


@composite(inplace=True)
def clamp_min(input, min):
    """``clamp(input, min=min)`` (``torch.clamp_min``).

        >>> agnostic.clamp_min(agnostic.tensor([-2.0, 0.5, 3.0]), 0)
        tensor([0.0000, 0.5000, 3.0000])
    """
    return clamp(input, min=min)


@composite(inplace=True)
def clamp_max(input, max):
    """``clamp(input, max=max)`` (``torch.clamp_max``).

        >>> agnostic.clamp_max(agnostic.tensor([-2.0, 0.5, 3.0]), 1)
        tensor([-2.0000,  0.5000,  1.0000])
    """
    return clamp(input, max=max)


@composite(inplace=True)
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 * tensor2``, broadcast (``torch.addcmul``), as optimizers use it.

        >>> agnostic.addcmul(agnostic.tensor([1.0]), agnostic.tensor([2.0]), agnostic.tensor([3.0]), value=0.5)
        tensor([4.])
    """
    product = mul(tensor1, tensor2)
    result = add(input, product if value == 1 else mul(product, value))
    return result if out is None else write_result(out, result, "addcmul")


@composite(inplace=True)
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    """``input + value * tensor1 / tensor2``, broadcast (``torch.addcdiv``); integer ``tensor1`` and ``tensor2``
    are refused, as in PyTorch.

        >>> agnostic.addcdiv(agnostic.tensor([1.0]), agnostic.tensor([2.0]), agnostic.tensor([4.0]), value=2)
        tensor([2.])
    """
    if all(not isinstance(t, TensorBase) or t.dtype.category < _FLOATING for t in (tensor1, tensor2)):
        raise RuntimeError("Integer division with addcdiv is no longer supported; divide with "
                           "input + value * torch.true_divide(tensor1, tensor2) or make tensor1 or tensor2 floating")
    quotient = div(tensor1, tensor2)
    result = add(input, quotient if value == 1 else mul(quotient, value))
    return result if out is None else write_result(out, result, "addcdiv")



@composite(out=True)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """True where an element of ``elements`` is among ``test_elements`` (either may be a number), as a bool tensor
    of ``elements``' shape (``torch.isin``); ``invert`` gives the opposite.

        >>> agnostic.isin(agnostic.tensor([[1, 2], [3, 4]]), agnostic.tensor([2, 3]))
        tensor([[False,  True],
                [ True, False]])
    """
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin(): at least one of elements and test_elements must be a Tensor")
    elements = as_operand(elements, "elements")
    test_elements = as_operand(test_elements, "test_elements")
    device = check_same_device(*[x for x in (elements, test_elements) if isinstance(x, TensorBase)])
    dtype = result_dtype(elements, test_elements)
    backend = device.backend
    values = operand_array(elements, dtype, device)
    tested = operand_array(test_elements, dtype, device)
    shape = tuple(elements.shape) if isinstance(elements, TensorBase) else ()
    with backend.activate():
        result = backend.xp.isin(backend.xp.asarray(values).reshape(shape),
                                 backend.xp.asarray(tested).reshape(-1), invert=invert)
    return finish(result, _dtypes.bool, device)

def _double_precision(value):
    if isinstance(value, TensorBase):
        return value.to(_dtypes.complex128 if value.dtype.is_complex else _dtypes.float64)
    return value


def float_power_(self, exponent):
    """In-place ``float_power``: ``self`` must be float64 (complex128 for a complex result), as in PyTorch.

        >>> agnostic.tensor([2.0, 3.0], dtype=agnostic.float64).float_power_(2)
        tensor([4., 9.], dtype=agnostic.float64)
    """
    _check_writable(self)
    result = float_power(self, exponent)
    if self.dtype is not result.dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype} but the operation's result "
                           f"requires dtype {result.dtype}; convert it first with self.to({result.dtype})")
    return write_result(self, result, "float_power_")


@composite(inplace=float_power_)
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in double precision (``torch.float_power``): the result is float64, or
    complex128 when an operand is complex.

        >>> agnostic.float_power(agnostic.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=agnostic.float64)
    """
    if not isinstance(input, TensorBase):
        input = as_operand(input, "input")
    base = _double_precision(input)
    power = _double_precision(exponent)
    if isinstance(exponent, complex) and not base.dtype.is_complex:
        base = base.to(_dtypes.complex128)
    result = pow(base, power)
    return result if out is None else write_result(out, result, "float_power")



# ----- PyTorch's top-level in-place functions (``torch.relu_(x)`` is ``x.relu_()``) --------------------------------
def _top_level_inplace(name, arguments, printed):
    method_name = name + "_"

    def inplace(input, *args, **kwargs):
        return getattr(input, method_name)(*args, **kwargs)
    inplace.__name__ = inplace.__qualname__ = method_name
    inplace.__doc__ = f"""``input.{method_name}(...)``: ``{name}`` written into ``input``, which is returned
    (``torch.{method_name}``).

        >>> agnostic.{method_name}(agnostic.tensor([0.5, 2.0]){arguments})
        {printed}
    """
    return composite(method=False)(inplace)


_TOP_LEVEL_INPLACE = {
    "abs": ("", "tensor([0.5000, 2.0000])"), "neg": ("", "tensor([-0.5000, -2.0000])"),
    "negative": ("", "tensor([-0.5000, -2.0000])"), "ceil": ("", "tensor([1., 2.])"),
    "floor": ("", "tensor([0., 2.])"), "round": ("", "tensor([0., 2.])"), "trunc": ("", "tensor([0., 2.])"),
    "frac": ("", "tensor([0.5000, 0.0000])"),
    "square": ("", "tensor([0.2500, 4.0000])"), "sqrt": ("", "tensor([0.7071, 1.4142])"),
    "rsqrt": ("", "tensor([1.4142, 0.7071])"), "reciprocal": ("", "tensor([2.0000, 0.5000])"),
    "exp": ("", "tensor([1.6487, 7.3891])"), "exp2": ("", "tensor([1.4142, 4.0000])"),
    "expm1": ("", "tensor([0.6487, 6.3891])"), "log": ("", "tensor([-0.6931,  0.6931])"),
    "log2": ("", "tensor([-1.,  1.])"), "log10": ("", "tensor([-0.3010,  0.3010])"),
    "log1p": ("", "tensor([0.4055, 1.0986])"), "sin": ("", "tensor([0.4794, 0.9093])"),
    "cos": ("", "tensor([ 0.8776, -0.4161])"), "tan": ("", "tensor([ 0.5463, -2.1850])"),
    "sinh": ("", "tensor([0.5211, 3.6269])"), "cosh": ("", "tensor([1.1276, 3.7622])"),
    "tanh": ("", "tensor([0.4621, 0.9640])"), "asin": (".clamp_(max=1)", "tensor([0.5236, 1.5708])"),
    "arcsin": (".clamp_(max=1)", "tensor([0.5236, 1.5708])"), "acos": (".clamp_(max=1)", "tensor([1.0472, 0.0000])"),
    "arccos": (".clamp_(max=1)", "tensor([1.0472, 0.0000])"), "atan": ("", "tensor([0.4636, 1.1071])"),
    "arctan": ("", "tensor([0.4636, 1.1071])"), "asinh": ("", "tensor([0.4812, 1.4436])"),
    "arcsinh": ("", "tensor([0.4812, 1.4436])"), "acosh": (".clamp_(min=1)", "tensor([0.0000, 1.3170])"),
    "arccosh": (".clamp_(min=1)", "tensor([0.0000, 1.3170])"),
    "atanh": (".clamp_(max=0.5)", "tensor([0.5493, 0.5493])"),
    "arctanh": (".clamp_(max=0.5)", "tensor([0.5493, 0.5493])"), "fix": ("", "tensor([0., 2.])"),
    "sigmoid": ("", "tensor([0.6225, 0.8808])"),
    "relu": ("", "tensor([0.5000, 2.0000])"), "erf": ("", "tensor([0.5205, 0.9953])"),
    "erfc": ("", "tensor([0.4795, 0.0047])"), "i0": ("", "tensor([1.0635, 2.2796])"),
    "logit": (", 0.25", "tensor([0.0000, 1.0986])"),
    "deg2rad": ("", "tensor([0.0087, 0.0349])"), "rad2deg": ("", "tensor([ 28.6479, 114.5916])"),
    "clamp": (", 1, 1.5", "tensor([1.0000, 1.5000])"), "clip": (", 1, 1.5", "tensor([1.0000, 1.5000])"),
    "clamp_min": (", 1", "tensor([1., 2.])"), "clamp_max": (", 1", "tensor([0.5000, 1.0000])"),
    "nan_to_num": ("", "tensor([0.5000, 2.0000])"), "ldexp": (", agnostic.tensor([1.0, 1.0])",
                                                            "tensor([1., 4.])"),
    "xlogy": (", 2.0", "tensor([0.3466, 1.3863])"),
    "zero": ("", "tensor([0., 0.])"), "fill": (", 3.0", "tensor([3., 3.])"),
}
(
    abs_, neg_, negative_, ceil_, floor_, round_, trunc_, frac_, square_, sqrt_, rsqrt_, reciprocal_, exp_,
    exp2_, expm1_, log_, log2_, log10_, log1p_, sin_, cos_, tan_, sinh_, cosh_, tanh_, asin_, arcsin_, acos_,
    arccos_, atan_, arctan_, asinh_, arcsinh_, acosh_, arccosh_, atanh_, arctanh_, fix_, sigmoid_, relu_, erf_,
    erfc_,
    i0_, logit_, deg2rad_, rad2deg_, clamp_, clip_, clamp_min_, clamp_max_, nan_to_num_, ldexp_, xlogy_,
    zero_, fill_,
) = (_top_level_inplace(name, *_TOP_LEVEL_INPLACE[name]) for name in _TOP_LEVEL_INPLACE)


__all__ = public_names(globals())
