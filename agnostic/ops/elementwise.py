"""Elementwise ops, generated from two tables (binary and unary), each with PyTorch's dtype rules.

Same-device, same-dtype calls take a short path straight to the backend ufunc; everything else goes through
``_dispatch`` (device check, promotion, casting). Results are identical either way.
"""

import functools
import math

import numpy

from .. import _backend, _dtypes, _host_cache, _host_kernels
from .._device import CPU
from .._tensor import Tensor, _check_broadcast_into, _check_writable, wrap
from ._dispatch import as_operand, call, check_same_device, finish, operand_array, result_dtype

_ndarray = numpy.ndarray
_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)


def _floating_result(dtype):
    """Integer and bool inputs compute in the default float dtype (``int / int`` is a float, as in PyTorch)."""
    return _dtypes.get_default_dtype() if dtype.category < _FLOATING else dtype


def _not_for(categories, message):
    def check(name, dtype):
        if dtype.category in categories:
            # NotImplementedError is a RuntimeError, and what PyTorch raises for unsupported dtypes.
            raise NotImplementedError(message.format(name=name, dtype=dtype))
    return check


_no_bool = _not_for((_BOOL,), '"{name}" is not implemented for {dtype}; convert the tensor with .int() or .float()')
_no_complex = _not_for((_COMPLEX,), '"{name}" is not implemented for complex tensors ({dtype})')
_no_bool_or_complex = _not_for((_BOOL, _COMPLEX), '"{name}" is not implemented for {dtype}')
_integral_only = _not_for(
    (_FLOATING, _COMPLEX), '"{name}" is only implemented for integer and bool tensors, got {dtype}'
)


_integers_only = _not_for(
    (_BOOL, _FLOATING, _COMPLEX), '"{name}" is only implemented for integer tensors, got {dtype}'
)


def _no_bool_subtraction(name, dtype):
    if dtype is _dtypes.bool:
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


def _no_bool_negation(name, dtype):
    if dtype is _dtypes.bool:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


class _Op:
    """One elementwise op: backend function name, dtype rule, and input check."""

    def __init__(self, name, backend_name, kind, check=None, compose=None, host_large=None):
        self.name = name
        self.backend_name = backend_name
        self.kind = kind  # "same": result in the promoted type; "float": ints become floats; "bool": bool result
        self.check = check
        self.compose = compose  # (xp, *arrays) -> array, for ops the backends lack
        self.numpy_function = compose and (lambda *arrays: compose(numpy, *arrays)) or getattr(numpy, backend_name)
        # The NumPy call for large CPU results, written into a reused buffer (see _host_cache); None: as small ones.
        if host_large is None and isinstance(self.numpy_function, numpy.ufunc):
            host_large = functools.partial(_host_cache.apply, self.numpy_function)
        self.host_large = host_large
        self._cupy_function = None
        self.fast_dtypes = frozenset(
            d.numpy_dtype for d in _dtypes.ALL_DTYPES if d is not _dtypes.bfloat16 and self._fast(d)
        )

    def _fast(self, dtype):
        """Whether a same-dtype call needs no casting (the backend's result type already is PyTorch's)."""
        try:
            self.types(dtype)
        except RuntimeError:
            return False
        if self.kind == "logical":
            return dtype.category != _COMPLEX  # CuPy's logical ufuncs take no complex: cast to bool first
        return self.kind != "float" or dtype.category >= _FLOATING

    def types(self, dtype):
        """(compute dtype, result dtype) for inputs promoted to ``dtype``; raises for unsupported dtypes."""
        if self.check is not None:
            self.check(self.name, dtype)
        if self.kind == "same":
            return dtype, dtype
        if self.kind == "float":
            floating = _floating_result(dtype)
            return floating, floating
        if self.kind == "logical":
            return _dtypes.bool, _dtypes.bool
        return dtype, _dtypes.bool

    def function(self, device):
        if device is CPU:
            return self.numpy_function
        if self._cupy_function is None:
            cupy = _backend.require_cupy()
            compose = self.compose
            self._cupy_function = (
                (lambda *arrays: compose(cupy, *arrays)) if compose else getattr(cupy, self.backend_name)
            )
        return self._cupy_function


# ----- binary ops ------------------------------------------------------------------------------------------------
def _check_ordered(name, dtype):
    if dtype.category == _COMPLEX:
        raise NotImplementedError(f'"{name}" is not supported for complex tensors: complex numbers have no order')


_BINARY = {
    "add": _Op("add", "add", "same"),
    "sub": _Op("sub", "subtract", "same", _no_bool_subtraction),
    "mul": _Op("mul", "multiply", "same"),
    "div": _Op("div", "true_divide", "float"),
    "floor_divide": _Op("floor_divide", "floor_divide", "same", _no_bool_or_complex),
    "remainder": _Op("remainder", "remainder", "same", _no_bool_or_complex),
    "fmod": _Op("fmod", "fmod", "same", _no_bool_or_complex),
    "pow": _Op("pow", "power", "same", _no_bool),
    "eq": _Op("eq", "equal", "bool"),
    "ne": _Op("ne", "not_equal", "bool"),
    "lt": _Op("lt", "less", "bool", _check_ordered),
    "le": _Op("le", "less_equal", "bool", _check_ordered),
    "gt": _Op("gt", "greater", "bool", _check_ordered),
    "ge": _Op("ge", "greater_equal", "bool", _check_ordered),
    "logical_and": _Op("logical_and", "logical_and", "logical"),
    "logical_or": _Op("logical_or", "logical_or", "logical"),
    "logical_xor": _Op("logical_xor", "logical_xor", "logical"),
    "bitwise_and": _Op("bitwise_and", "bitwise_and", "same", _integral_only),
    "bitwise_or": _Op("bitwise_or", "bitwise_or", "same", _integral_only),
    "bitwise_xor": _Op("bitwise_xor", "bitwise_xor", "same", _integral_only),
    "bitwise_left_shift": _Op("bitwise_left_shift", "left_shift", "same", _integers_only),
    "bitwise_right_shift": _Op("bitwise_right_shift", "right_shift", "same", _integers_only),
    "maximum": _Op("maximum", "maximum", "same", _check_ordered),
    "minimum": _Op("minimum", "minimum", "same", _check_ordered),
    "fmax": _Op("fmax", "fmax", "same", _check_ordered),
    "fmin": _Op("fmin", "fmin", "same", _check_ordered),
    "atan2": _Op("atan2", "arctan2", "float", _no_complex),
    "hypot": _Op("hypot", "hypot", "float", _no_complex),
    "copysign": _Op("copysign", "copysign", "float", _no_complex),
}


# Integer powers and divisions check their right operand first, so they never take the short path.
for _name in ("pow", "floor_divide", "remainder", "fmod"):
    _BINARY[_name].fast_dtypes = frozenset(d for d in _BINARY[_name].fast_dtypes if d.kind in "fc")


_new_tensor = object.__new__
_SCALARS_FOR_FLOATS = (float, int)


def _binary(op, input, other):
    # Short path: nothing to promote or move, so the backend's ufunc result already is PyTorch's.
    if type(input) is Tensor:
        device = input._device
        a = input._data
        if type(other) is Tensor:
            if other._device is device:
                b = other._data
                if a.dtype is b.dtype and a.dtype in op.fast_dtypes:
                    return _fast_result(op, device, a, b)
        elif type(other) in _SCALARS_FOR_FLOATS and a.dtype.kind in "fc" and a.dtype in op.fast_dtypes:
            return _fast_result(op, device, a, other)
    elif type(input) in _SCALARS_FOR_FLOATS and type(other) is Tensor:
        b = other._data
        if b.dtype.kind in "fc" and b.dtype in op.fast_dtypes:
            return _fast_result(op, other._device, input, b)
    return _binary_general(op, input, other)


def broadcast_error(*shapes):
    """PyTorch's error for shapes that don't broadcast, naming the first mismatching dimension."""
    shapes = [tuple(shape) for shape in shapes]
    ndim = max(len(shape) for shape in shapes)
    padded = [(1,) * (ndim - len(shape)) + shape for shape in shapes]
    for dim in range(ndim):
        sizes = [shape[dim] for shape in padded if shape[dim] != 1]
        if len(set(sizes)) > 1:
            return RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({sizes[1]}) "
                                f"at non-singleton dimension {dim}")
    return RuntimeError(f"shapes {[list(shape) for shape in shapes]} cannot be broadcast together")


def _checked(function, *arrays):
    """Call a backend function, turning its broadcasting ValueError into PyTorch's RuntimeError."""
    try:
        return function(*arrays)
    except ValueError:
        shapes = [a.shape for a in arrays if hasattr(a, "shape")]
        if len(shapes) > 1 and _broadcastable(shapes):
            raise
        raise broadcast_error(*shapes) from None


def _broadcastable(shapes):
    try:
        numpy.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def _fast_result(op, device, a, b):
    tensor = _new_tensor(Tensor)
    tensor._device = device
    if device is CPU:
        if op.host_large is not None and _host_cache.is_large(a if type(a) is _ndarray else b):
            tensor._data = _checked(op.host_large, a, b)
            return tensor
        out = _checked(op.numpy_function, a, b)
        tensor._data = out if type(out) is _ndarray else numpy.asarray(out)
        return tensor
    with _backend.on(device):
        out = _checked(op.function(device), a, b)
        expected = a.dtype if hasattr(a, "dtype") else b.dtype
        if op.kind != "bool" and op.kind != "logical" and out.dtype != expected:
            out = out.astype(expected)  # a CuPy without NumPy 2's weak-scalar rule
    tensor._data = out
    return tensor


def _binary_general(op, input, other):
    input = as_operand(input, "input")
    other = as_operand(other, "other")
    tensors = [x for x in (input, other) if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got two Python numbers")
    device = check_same_device(*tensors)
    if op.name == "sub" and (any(t.dtype is _dtypes.bool for t in tensors)
                             or isinstance(input, bool) or isinstance(other, bool)):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. "
            "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    promoted = result_dtype(input, other)
    compute, result = op.types(promoted)
    if op.name == "pow":
        _check_integer_power(compute, other)
    elif op.name in _INTEGER_DIVISIONS and compute.category == _INTEGER:
        _check_integer_divisor(other)
    if op.kind == "logical" and promoted is not compute:
        # As PyTorch: truth taken in the common dtype (a float64 1e-300 beside a float16 tensor is 0 there).
        a, b = (_truth(operand_array(x, promoted, device), device) for x in (input, other))
    else:
        a = operand_array(input, compute, device)
        b = operand_array(other, compute, device)
    if op.name == "pow" and compute.category == _INTEGER and isinstance(other, Tensor):
        xp = _backend.namespace(device)
        return finish(call(device, _checked, lambda base, exponent: _integer_power(xp, base, exponent), a, b),
                      result, device)
    return finish(call(device, _checked, op.function(device), a, b), result, device)


def _truth(array, device):
    return call(device, array.astype, numpy.bool_)


def _integer_power(xp, base, exponent):
    """Integer powers with negative exponents, as PyTorch: 1 ** n = 1, (-1) ** n = +-1, anything else 0."""
    negative = exponent < 0
    powers = xp.power(base, xp.where(negative, 0, exponent).astype(exponent.dtype))
    odd = (xp.abs(exponent) % 2).astype(bool)
    special = xp.where(base == 1, 1, xp.where(base == -1, xp.where(odd, -1, 1), 0)).astype(powers.dtype)
    return xp.where(negative, special, powers)


_INTEGER_DIVISIONS = ("floor_divide", "remainder", "fmod")


def _check_integer_divisor(divisor):
    zero = bool((divisor == 0).any()) if isinstance(divisor, Tensor) else divisor == 0
    if zero:
        raise ZeroDivisionError("integer division by zero; divide floating-point tensors to get inf/nan instead")


def _check_integer_power(dtype, exponent):
    if dtype.category != _INTEGER or isinstance(exponent, Tensor):
        return  # tensor exponents: see _integer_power
    if exponent < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed; use a float base or exponent")


def _binary_inplace(op, self, other):
    _check_writable(self)
    if isinstance(other, Tensor) and other._device is self._device:  # a Parameter too (a bias added in place)
        a = self._data
        b = other._data
        if a.dtype is b.dtype and a.dtype in op.fast_dtypes and op.kind in ("same", "float"):
            _check_broadcast_into(self, b.shape, op.name + "_")
            call(self._device, op.function(self._device), a, b, out=a)
            return self
    result = _binary_general(op, self, other)
    return _write_result(self, result, op.name + "_")


def _write_result(self, result, name):
    """Store an out-of-place result into ``self`` after PyTorch's in-place checks (shape and castability)."""
    if result._device is not self._device:
        raise RuntimeError(
            f"{name}: the result is on {result._device} but the output tensor is on {self._device}; "
            "move the inputs to the output's device first"
        )
    _check_broadcast_into(self, result._data.shape, name)
    check_can_cast(result.dtype, self.dtype, name)
    with _backend.on(self._device):
        _backend.namespace(self._device).copyto(self._data, result._data, casting="unsafe")
    return self


def check_can_cast(source, target, name):
    """PyTorch's rule for writing results: no float -> integer, complex -> real, or non-bool -> bool."""
    if source.category > target.category:
        raise RuntimeError(
            f"{name}: result type {source.name} can't be cast to the desired output type {target.name}; "
            f"convert self first (e.g. self.to({source!r}))"
        )


def _make_binary(op):
    def function(input, other, *, out=None):
        result = _binary(op, input, other)
        return _write_result(out, result, op.name) if out is not None else result

    function.__name__ = op.name
    function.__doc__ = f"Elementwise ``{op.name}`` with broadcasting and PyTorch's type promotion."
    return function


def _make_inplace(op):
    def method(self, other):
        return _binary_inplace(op, self, other)

    method.__name__ = op.name + "_"
    method.__doc__ = f"In-place ``{op.name}``; ``self`` keeps its shape and dtype."
    return method


binary_functions = {name: _make_binary(op) for name, op in _BINARY.items()}
binary_inplace_methods = {name + "_": _make_inplace(op) for name, op in _BINARY.items()}


def add(input, other, *, alpha=1, out=None):
    """``input + alpha * other``, with broadcasting and PyTorch's type promotion."""
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary_functions["add"](input, other, out=out)


def sub(input, other, *, alpha=1, out=None):
    """``input - alpha * other``."""
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return binary_functions["sub"](input, other, out=out)


def div(input, other, *, rounding_mode=None, out=None):
    """True division (``rounding_mode=None``), or ``"trunc"`` / ``"floor"`` rounding, as ``torch.div``."""
    if rounding_mode is None:
        return binary_functions["div"](input, other, out=out)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    dtype = result_dtype(as_operand(input), as_operand(other))
    if dtype is _dtypes.bool:
        raise NotImplementedError(f'"div_{rounding_mode}" is not implemented for bool tensors')
    if rounding_mode == "floor":
        return binary_functions["floor_divide"](input, other, out=out)
    if rounding_mode == "trunc":
        if dtype.category <= _INTEGER:
            _check_integer_divisor(other)
        input, other = (x.to(dtype) if isinstance(x, Tensor) else x for x in (input, other))
        quotient = binary_functions["div"](input, other)
        result = trunc(quotient).to(dtype)
        return _write_result(out, result, "div") if out is not None else result
    raise ValueError(f"div(): rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")


mul = binary_functions["mul"]
true_divide = divide = binary_functions["div"]
multiply = mul
subtract = sub
floor_divide = binary_functions["floor_divide"]
remainder = binary_functions["remainder"]
fmod = binary_functions["fmod"]
pow = binary_functions["pow"]
eq, ne, lt, le, gt, ge = (binary_functions[n] for n in ("eq", "ne", "lt", "le", "gt", "ge"))
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
logical_and = binary_functions["logical_and"]
logical_or = binary_functions["logical_or"]
logical_xor = binary_functions["logical_xor"]
bitwise_and = binary_functions["bitwise_and"]
bitwise_or = binary_functions["bitwise_or"]
bitwise_xor = binary_functions["bitwise_xor"]
bitwise_left_shift = binary_functions["bitwise_left_shift"]
bitwise_right_shift = binary_functions["bitwise_right_shift"]
maximum = binary_functions["maximum"]
minimum = binary_functions["minimum"]
fmax = binary_functions["fmax"]
fmin = binary_functions["fmin"]
atan2 = arctan2 = binary_functions["atan2"]
hypot = binary_functions["hypot"]
copysign = binary_functions["copysign"]


# ----- unary ops -------------------------------------------------------------------------------------------------
def _sigmoid(xp, x):
    return xp.reciprocal(1 + xp.exp(-x))


def _rsqrt(xp, x):
    return xp.reciprocal(xp.sqrt(x))


def _reciprocal(xp, x):
    return xp.reciprocal(x)


def _relu(xp, x):
    return xp.maximum(x, x.dtype.type(0))


def _large_relu(x):
    out = _host_cache.empty(x.shape, x.dtype)
    if _host_kernels.relu(x, out):
        return out
    return numpy.maximum(x, x.dtype.type(0), out=out)


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


_UNARY = {op.name: op for op in (
    _Op("neg", "negative", "same", _no_bool_negation),
    _Op("abs", "absolute", "same", _no_bool),
    _Op("sign", "sign", "same", _no_complex, compose=_sign),
    _Op("floor", "floor", "same", _no_complex, compose=_rounding("floor")),
    _Op("ceil", "ceil", "same", _no_complex, compose=_rounding("ceil")),
    _Op("trunc", "trunc", "same", _no_complex, compose=_rounding("trunc")),
    _Op("round", "rint", "same", _no_complex, compose=_rounding("rint")),
    _Op("frac", "frac", "same", _not_for((_BOOL, _INTEGER, _COMPLEX), '"frac" needs a floating tensor, got {dtype}'),
        compose=_frac),
    _Op("square", "square", "same", compose=_square),
    _Op("relu", "relu", "same", _no_bool_or_complex, compose=_relu, host_large=_large_relu),
    _Op("bitwise_not", "invert", "same", _integral_only),
    _Op("logical_not", "logical_not", "logical"),
    _Op("isnan", "isnan", "bool"),
    _Op("isinf", "isinf", "bool"),
    _Op("isfinite", "isfinite", "bool"),
    _Op("sqrt", "sqrt", "float"),
    _Op("rsqrt", "rsqrt", "float", compose=_rsqrt),
    _Op("reciprocal", "reciprocal", "float", compose=_reciprocal),
    _Op("exp", "exp", "float"),
    _Op("exp2", "exp2", "float"),
    _Op("expm1", "expm1", "float"),
    _Op("log", "log", "float"),
    _Op("log2", "log2", "float"),
    _Op("log10", "log10", "float"),
    _Op("log1p", "log1p", "float"),
    _Op("sin", "sin", "float"),
    _Op("cos", "cos", "float"),
    _Op("tan", "tan", "float"),
    _Op("asin", "arcsin", "float"),
    _Op("acos", "arccos", "float"),
    _Op("atan", "arctan", "float"),
    _Op("sinh", "sinh", "float"),
    _Op("cosh", "cosh", "float"),
    _Op("tanh", "tanh", "float"),
    _Op("asinh", "arcsinh", "float"),
    _Op("acosh", "arccosh", "float"),
    _Op("atanh", "arctanh", "float"),
    _Op("sigmoid", "sigmoid", "float", compose=_sigmoid),
)}


def _unary(op, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op.name}(): argument 'input' must be a Tensor, got {type(input).__name__}")
    a = input._data
    device = input._device
    if a.dtype in op.fast_dtypes:
        if device is CPU:
            if op.host_large is not None and _host_cache.is_large(a):
                return wrap(op.host_large(a), device)
            out = op.numpy_function(a)
            return wrap(out if type(out) is _ndarray else numpy.asarray(out), device)
        with _backend.on(device):
            return wrap(op.function(device)(a), device)
    compute, result = op.types(input.dtype)
    array = operand_array(input, compute, device)
    return finish(call(device, op.function(device), array), result, device)


def _make_unary(op):
    def function(input, *, out=None):
        result = _unary(op, input)
        return _write_result(out, result, op.name) if out is not None else result

    function.__name__ = op.name
    function.__doc__ = f"Elementwise ``{op.name}``, with PyTorch's result dtype."
    return function


def _make_unary_inplace(op):
    def method(self):
        _check_writable(self)
        return _write_result(self, _unary(op, self), op.name + "_")

    method.__name__ = op.name + "_"
    method.__doc__ = f"In-place ``{op.name}``."
    return method


unary_functions = {name: _make_unary(op) for name, op in _UNARY.items()}
unary_inplace_methods = {name + "_": _make_unary_inplace(op) for name, op in _UNARY.items()
                         if op.kind not in ("bool",)}
globals().update(unary_functions)
negative = unary_functions["neg"]
absolute = unary_functions["abs"]
arcsin, arccos, arctan = unary_functions["asin"], unary_functions["acos"], unary_functions["atan"]
trunc = unary_functions["trunc"]
round = unary_functions["round"]


# ----- ops with extra arguments ----------------------------------------------------------------------------------
def where(condition, input=None, other=None):
    """``input`` where ``condition`` is true, else ``other`` (PyTorch's promotion between the two).

    With only ``condition``, the indices of its nonzero elements, as ``torch.where(condition)``.
    """
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor) or condition.dtype is not _dtypes.bool:
        got = condition.dtype if isinstance(condition, Tensor) else type(condition).__name__
        raise RuntimeError(f"where(): expected condition to be a bool tensor, got {got}; use condition.bool()")
    input = as_operand(input, "input")
    other = as_operand(other, "other")
    device = check_same_device(*[x for x in (condition, input, other) if isinstance(x, Tensor)])
    dtype = result_dtype(input, other)
    xp = _backend.namespace(device)
    a = operand_array(input, dtype, device)
    b = operand_array(other, dtype, device)
    mask = operand_array(condition, _dtypes.bool, device)
    if device is CPU and _is_positive_zero(other) and type(a) is _ndarray and a.dtype.kind in "fiu":
        return finish(_checked(_kept_or_zero, mask, a), dtype, device)
    return finish(call(device, _checked, xp.where, mask, a, b), dtype, device)


def _is_positive_zero(value):
    return type(value) in (int, float) and value == 0 and math.copysign(1.0, value) > 0


def _kept_or_zero(mask, array):
    """``numpy.where(mask, array, 0)`` by masking bits: exact, and several times faster than ``numpy.where`` when
    the mask is unpredictable (a ReLU's gradient)."""
    integers = numpy.dtype(f"i{array.dtype.itemsize}")
    return (array.view(integers) & -mask.astype(integers)).view(array.dtype)


def clamp(input, min=None, max=None, *, out=None):
    """Limit ``input`` to ``[min, max]`` (scalars or tensors); the result dtype promotes over all three.

    Where ``min > max`` every element becomes ``max``, and NaN stays NaN, as in PyTorch.
    """
    if min is None and max is None:
        raise RuntimeError("clamp(): at least one of 'min' or 'max' must not be None")
    dtype = result_dtype(*(x for x in (input, min, max) if x is not None))
    result = input if input.dtype is dtype else input.to(dtype)
    if min is not None:
        result = maximum(result, min) if isinstance(min, Tensor) else _clamp_scalar(result, min, maximum, input)
    if max is not None:
        result = minimum(result, max) if isinstance(max, Tensor) else _clamp_scalar(result, max, minimum, input)
    if out is not None:
        return _write_result(out, result, "clamp")
    return result


def _clamp_scalar(current, bound, combine, original):
    _check_ordered("clamp", original.dtype)
    return _binary(_BINARY[combine.__name__], current, bound)


def clamp_(self, min=None, max=None):
    """In-place ``clamp``."""
    _check_writable(self)
    return _write_result(self, clamp(self, min, max), "clamp_")


clip = clamp


def lerp(input, end, weight):
    """``input + weight * (end - input)``."""
    return add(input, mul(sub(end, input), weight))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities with finite numbers (the dtype's extremes by default)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    info = _dtypes.finfo(input.dtype)
    xp = _backend.namespace(input._device)
    result = call(input._device, xp.nan_to_num, input._data, nan=nan,
                  posinf=info.max if posinf is None else posinf, neginf=info.min if neginf is None else neginf)
    return finish(result, input.dtype, input._device)


def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed stably (the maximum is subtracted first)."""
    shifted, xp = _shifted_for_softmax(input, dim, dtype)
    with _backend.on(input._device):
        exponentials = xp.exp(shifted)
        result = exponentials / exponentials.sum(axis=_axis(shifted, dim), keepdims=True)
    return finish(result, _softmax_dtype(input, dtype), input._device)


def log_softmax(input, dim, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed without forming the softmax."""
    shifted, xp = _shifted_for_softmax(input, dim, dtype)
    with _backend.on(input._device):
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
    from .._tensor import _normalize_dim

    target = _softmax_dtype(input, dtype)
    dim = _normalize_dim(dim, input._data.ndim)
    xp = _backend.namespace(input._device)
    array = operand_array(input, target, input._device)
    with _backend.on(input._device):
        compute = array.astype(numpy.float32) if target is _dtypes.float16 else array
        if compute.ndim == 0 or compute.size == 0:
            return compute - compute, xp
        return compute - compute.max(axis=dim, keepdims=True), xp


__all__ = sorted(
    set(binary_functions) | set(unary_functions) | {
        "add", "sub", "div", "mul", "true_divide", "divide", "multiply", "subtract", "negative", "absolute",
        "arcsin", "arccos", "arctan", "arctan2", "greater", "greater_equal", "less", "less_equal", "not_equal",
        "where", "clamp", "clip", "lerp", "nan_to_num", "softmax", "log_softmax",
    }
)


# ----- operators ---------------------------------------------------------------------------------------------------
_NUMBERS = (bool, int, float, complex)


def coerce_operand(other):
    """``other`` as an operand for a Tensor operator, or None when Python should try the other side."""
    if isinstance(other, _NUMBERS) or isinstance(other, Tensor):
        return other
    if isinstance(other, numpy.generic):
        return other.item()
    if isinstance(other, numpy.ndarray) or _backend.is_backend_array(other):
        from .creation import as_tensor

        return as_tensor(other)
    return None


def make_operator(name, reflected=False):
    """The ``__add__``-style method for a binary op (``__radd__`` when ``reflected``)."""
    op = _BINARY[name]

    if reflected:
        def method(self, other):
            other = coerce_operand(other)
            return NotImplemented if other is None else _binary(op, other, self)
    else:
        fast_dtypes, numpy_function, host_large = op.fast_dtypes, op.numpy_function, op.host_large
        large = _host_cache.MIN_BYTES

        def method(self, other, Tensor=Tensor, CPU=CPU, new=_new_tensor, ndarray=_ndarray):
            # The CPU short path of _binary, inlined (names bound as locals): the per-op overhead users feel most.
            if type(other) is Tensor:
                device = self._device
                if other._device is device and device is CPU:
                    a = self._data
                    b = other._data
                    dtype = a.dtype
                    if dtype is b.dtype and dtype in fast_dtypes and a.shape == b.shape:
                        if a.nbytes >= large and host_large is not None:
                            out = host_large(a, b)
                        else:
                            out = numpy_function(a, b)
                        tensor = new(Tensor)
                        tensor._data = out if type(out) is ndarray else numpy.asarray(out)
                        tensor._device = device
                        return tensor
            elif type(other) in _SCALARS_FOR_FLOATS:
                a = self._data
                if self._device is CPU and a.dtype.kind in "fc" and a.dtype in fast_dtypes:
                    if a.nbytes >= large and host_large is not None:
                        out = host_large(a, other)
                    else:
                        out = numpy_function(a, other)
                    tensor = _new_tensor(Tensor)
                    tensor._data = out if type(out) is _ndarray else numpy.asarray(out)
                    tensor._device = CPU
                    return tensor
            else:
                other = coerce_operand(other)
                if other is None:
                    return NotImplemented
            return _binary(op, self, other)
    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method
