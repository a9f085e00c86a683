"""Elementwise ops, each declared once: its dtype rule, its implementation, its gradient and its docstring.

The registry (``_registry``) turns each declaration into ``agnostic.<name>``, ``Tensor.<name>``, ``Tensor.<name>_``
and its operators, all on one dispatch path. Gradients are written with tensor methods, so that they are recorded
too when a graph of the gradient is built (``create_graph=True``).
"""

import functools
import math

import numpy

from .. import _dtypes
from .._backends import cpu_kernels, cpu_ops, cuda_ops
from .._tensor import TensorBase, _check_writable, _normalize_dim
from ..autograd.grad_mode import is_grad_enabled
from . import _division, _relu_gradient
from ._dispatch import (
    Result, as_operand, broadcasting, check_same_device, finish, operand_array, refuse, result_dtype, write_result,
)
from .indexing import nonzero
from ._registry import Elementwise, composite, public_names

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
    if dtype is _dtypes.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _no_bool_negation(name, dtype):
    if dtype is _dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _no_bool_operand_subtraction(input, other, compute):
    """PyTorch refuses ``-`` whenever an operand is bool, even when promotion makes the result a number."""
    if any(isinstance(x, bool) or (isinstance(x, TensorBase) and x.dtype is _dtypes.bool) for x in (input, other)):
        _no_bool_subtraction("sub", _dtypes.bool)


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
def _power(xp, base, exponent):
    """Powers, and integer powers with negative exponents as PyTorch: 1 ** n = 1, (-1) ** n = +-1, else 0."""
    if not hasattr(base, "dtype"):
        base = exponent.dtype.type(base)  # a Python number: in the tensor's dtype, as the direct plan promised
    if base.dtype.kind not in "iu" or getattr(exponent, "ndim", None) is None:
        return xp.power(base, exponent)
    negative = exponent < 0
    powers = xp.power(base, xp.where(negative, 0, exponent).astype(exponent.dtype))
    odd = (xp.abs(exponent) % 2).astype(bool)
    special = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0)).astype(powers.dtype)
    return xp.where(negative, special, powers)


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
    return xp.maximum(x, x.dtype.type(0))


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
    """``large_cpu`` of a two-operand op: the multi-core kernel ``kernel`` (or None where it doesn't apply)."""
    return functools.partial(cpu_kernels.binary, kernel)


add = _binary("add", SAME, "add", alpha=True, operator="add", large_cpu=_large("add"), gradients={
    "input": lambda grad: grad, "other": lambda grad: grad}, doc="""\
``input + alpha * other``, broadcasting, in the dtype PyTorch's promotion gives (``torch.add``).

    >>> agnostic.add(agnostic.tensor([1, 2]), agnostic.tensor([10, 20]))
    tensor([11, 22])
    >>> agnostic.add(agnostic.tensor([1, 2]), agnostic.tensor([10, 20]), alpha=2)
    tensor([21, 42])
""")
sub = _binary("sub", SAME, "subtract", check=_no_bool_subtraction, check_operands=_no_bool_operand_subtraction,
              alpha=True, operator="sub", aliases=("subtract",), large_cpu=_large("sub"),
              gradients={"input": lambda grad: grad, "other": lambda grad: -grad}, doc="""\
``input - alpha * other`` (``torch.sub``, alias ``subtract``); bool operands are refused, as in PyTorch.

    >>> agnostic.sub(agnostic.tensor([5.0, 7.0]), 2)
    tensor([3., 5.])
""")
mul = _binary("mul", SAME, "multiply", operator="mul", aliases=("multiply",), large_cpu=_large("mul"),
              gradients={
    "input": lambda grad, other: grad * _conj(other),
    "other": lambda grad, input: grad * _conj(input)}, doc="""\
``input * other``, elementwise (``torch.mul``, alias ``multiply``).

    >>> agnostic.mul(agnostic.tensor([1.5, 2.0]), 2)
    tensor([3., 4.])
""")
_true_divide = Elementwise("div", 2, FLOAT, "true_divide", operator="truediv", large_cpu=_large("div"),
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
hypot = _binary("hypot", FLOAT, "hypot", check=no_complex, gradients={
    "input": lambda grad, input, result: grad * input / result,
    "other": lambda grad, other, result: grad * other / result}, doc="""\
``sqrt(input ** 2 + other ** 2)`` without overflow in the squares (``torch.hypot``).

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


# ----- unary ops --------------------------------------------------------------------------------------------------
def _unary(name, result, implementation, example, **declaration):
    values, expected = example
    torch_name = declaration.pop("torch_name", name)
    aliases = declaration.get("aliases", ())
    summary = declaration.pop("summary")
    doc = f"""\
{summary} (``torch.{torch_name}``{''.join(', alias ``' + a + '``' for a in aliases)}).

    >>> agnostic.{name}(agnostic.tensor({values}))
    tensor({expected})
"""
    return Elementwise(name, 1, result, implementation, doc=doc, **declaration).function


neg = _unary("neg", SAME, "negative", ("[1, -2]", "[-1,  2]"), check=_no_bool_negation, operator="neg",
             aliases=("negative",), derivative=lambda: -1.0, summary="``-input``; bool tensors are refused")
abs = _unary("abs", SAME, "absolute", ("[-1.5, 2.0]", "[1.5000, 2.0000]"), check=no_bool, operator="abs",
             aliases=("absolute",), derivative=lambda input: input.sign(), summary="The absolute value")
sign = _unary("sign", SAME, _sign, ("[-2.0, 0.0, 3.0]", "[-1.,  0.,  1.]"), check=no_complex,
              gradients={"input": _zero}, summary="-1, 0 or 1 by the sign of each element")
floor = _unary("floor", SAME, _rounding("floor"), ("[-1.5, 1.5]", "[-2.,  1.]"), check=no_complex,
               gradients={"input": _zero}, summary="The largest integer not above each element")
ceil = _unary("ceil", SAME, _rounding("ceil"), ("[-1.5, 1.5]", "[-1.,  2.]"), check=no_complex,
              gradients={"input": _zero}, summary="The smallest integer not below each element")
trunc = _unary("trunc", SAME, _rounding("trunc"), ("[-1.5, 1.5]", "[-1.,  1.]"), check=no_complex,
               gradients={"input": _zero}, summary="Each element rounded toward zero")
round = _unary("round", SAME, _rounding("rint"), ("[0.5, 1.5, 2.7]", "[0., 2., 3.]"), check=no_complex,
               gradients={"input": _zero}, summary="Each element rounded to the nearest integer, halves to even")
frac = _unary("frac", SAME, _frac, ("[1.25, -1.5]", "[ 0.2500, -0.5000]"), check=floating_only,
              derivative=lambda: 1.0, summary="The fractional part, ``input - trunc(input)``")
square = _unary("square", SAME, _square, ("[2, -3]", "[4, 9]"), derivative=lambda input: 2 * input,
                summary="``input * input``; bool tensors square to int64")
relu = _unary("relu", SAME, _relu, ("[-1.0, 2.0]", "[0., 2.]"), check=no_bool_or_complex, large_cpu=cpu_kernels.relu,
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
log = _floating("log", "log", ("[1.0]", "[0.]"), "The natural logarithm", lambda input: 1 / input)
log2 = _floating("log2", "log2", ("[8.0]", "[3.]"), "The base-2 logarithm",
                 lambda input: 1 / (input * math.log(2.0)))
log10 = _floating("log10", "log10", ("[1.0]", "[0.]"), "The base-10 logarithm",
                  lambda input: 1 / (input * math.log(10.0)))
log1p = _floating("log1p", "log1p", ("[0.0]", "[0.]"), "``log(1 + input)``, exact near zero",
                  lambda input: 1 / (1 + input))
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
tanh = _floating("tanh", "tanh", ("[0.0]", "[0.]"), "The hyperbolic tangent", lambda result: 1 - result * result)
asinh = _floating("asinh", "arcsinh", ("[0.0]", "[0.]"), "The inverse hyperbolic sine",
                  lambda input: (input * input + 1).rsqrt())
acosh = _floating("acosh", "arccosh", ("[1.0]", "[0.]"), "The inverse hyperbolic cosine",
                  lambda input: (input * input - 1).rsqrt())
atanh = _floating("atanh", "arctanh", ("[0.0]", "[0.]"), "The inverse hyperbolic tangent",
                  lambda input: 1 / (1 - input * input))
sigmoid = _floating("sigmoid", _sigmoid, ("[0.0]", "[0.5000]"), "The logistic function ``1 / (1 + exp(-input))``",
                    lambda result: result * (1 - result))
negative, absolute = neg, abs
arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
subtract, multiply = sub, mul
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


# ----- ops with extra arguments -----------------------------------------------------------------------------------
def _where_method(self, condition, other):
    """``where(condition, self, other)``: ``self`` where ``condition`` is true, else ``other``.

        >>> agnostic.tensor([1.0, 2.0]).where(agnostic.tensor([True, False]), 0.0)
        tensor([1., 0.])
    """
    return where(condition, self, other)


@composite(method=_where_method, gradients={
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


@composite(inplace=True, gradients={
    "input": lambda grad, weight: grad * (1 - weight),
    "end": lambda grad, weight: grad * weight,
    "weight": lambda grad, input, end: grad * (end - input)})
def lerp(input, end, weight):
    """``input + weight * (end - input)``.

        >>> agnostic.lerp(agnostic.tensor([0.0]), agnostic.tensor([10.0]), 0.25)
        tensor([2.5000])
    """
    return add(input, mul(sub(end, input), weight))


@composite(inplace=True, gradients={"input": lambda grad, input: grad * input.isfinite().to(grad.dtype)})
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


@composite(gradients={"input": lambda grad, dim, result: result * (grad - (grad * result).sum(dim, keepdim=True))})
def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (the maximum is subtracted first).

        >>> agnostic.softmax(agnostic.tensor([0.0, 0.0]), dim=0)
        tensor([0.5000, 0.5000])
    """
    shifted, xp = _shifted_for_softmax(input, dim, dtype)
    with input._device.backend.activate():
        exponentials = xp.exp(shifted)
        result = exponentials / exponentials.sum(axis=_axis(shifted, dim), keepdims=True)
    return finish(result, _softmax_dtype(input, dtype), input._device)


@composite(gradients={"input": lambda grad, dim, result: grad - result.exp() * grad.sum(dim, keepdim=True)})
def log_softmax(input, dim, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed without forming the softmax.

        >>> agnostic.log_softmax(agnostic.tensor([0.0, 0.0]), dim=0)
        tensor([-0.6931, -0.6931])
    """
    shifted, xp = _shifted_for_softmax(input, dim, dtype)
    with input._device.backend.activate():
        result = shifted - xp.log(xp.exp(shifted).sum(axis=_axis(shifted, dim), keepdims=True))
    return finish(result, _softmax_dtype(input, dtype), input._device)


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


__all__ = public_names(globals())
