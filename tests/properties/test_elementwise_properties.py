"""Elementwise ops agree across devices and with a NumPy reference computed under PyTorch's promotion rules:
binary arithmetic, comparisons, logical and bitwise ops, maximum/minimum, unary math, where, clamp, softmax."""

import operator

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import agnostic
from _strategies import (
    ALL, BITS, CATEGORY, COMPLEX, FLOATS, INTS, REAL, arrays, broadcast_or_none, broadcast_pair, cast, check_tensor,
    empty_shapes, fewer_examples, float_result, mismatched_pair, on_all_devices, operand_dtype, scalars, shapes,
    torch_result_type, wide,
)


# ----- binary ops -------------------------------------------------------------------------------------------------
def _powi(base, exponent, name):
    """PyTorch's integer power (ATen's powi): negative exponents give 1, -1 or 0; results wrap like C integers."""
    bits = BITS.get(name)
    out = np.empty(np.broadcast_shapes(base.shape, exponent.shape), dtype=name)
    for index in np.ndindex(out.shape):
        b = int(np.broadcast_to(base, out.shape)[index])
        e = int(np.broadcast_to(exponent, out.shape)[index])
        if e < 0:
            value = 1 if b == 1 else ((-1 if (-e) % 2 else 1) if b == -1 else 0)
        else:
            value = b ** e
        if bits:
            value %= 2 ** bits
            if name != "uint8" and value >= 2 ** (bits - 1):
                value -= 2 ** bits
        out[index] = value
    return out


def _reference_pow(a, b, compute):
    if CATEGORY[compute] == 1:
        return _powi(a, b, compute)
    return np.power(wide(a), wide(b))


def _logical(function):
    return lambda a, b, compute: function(a != 0, b != 0)


class Binary:
    """One binary op: how agnostic spells it, its result kind, which promoted dtypes PyTorch rejects, the NumPy
    reference, and value ranges keeping the reference meaningful."""

    def __init__(self, name, call, kind, reference, refuse=(), lo=-100, hi=100, b_lo=None, b_hi=None,
                 no_zero_divisor=False):
        self.name, self.call, self.kind, self.reference = name, call, kind, reference
        self.refuse = refuse  # categories of the promoted dtype PyTorch refuses (0 bool, 1 int, 2 float, 3 complex)
        self.lo, self.hi = lo, hi
        self.b_lo = lo if b_lo is None else b_lo
        self.b_hi = hi if b_hi is None else b_hi
        self.no_zero_divisor = no_zero_divisor

    def __repr__(self):
        return self.name

    def result(self, compute):
        return {"same": compute, "float": float_result(compute), "bool": "bool"}[self.kind]

    def compute(self, promoted):
        return float_result(promoted) if self.kind == "float" else promoted


def _wide_op(function):
    return lambda a, b, compute: function(wide(a), wide(b))


def _plain_op(function):
    return lambda a, b, compute: function(a, b)


BINARY = [
    Binary("add", operator.add, "same", _wide_op(np.add)),
    Binary("sub", operator.sub, "same", _wide_op(np.subtract)),
    Binary("mul", operator.mul, "same", _wide_op(np.multiply)),
    Binary("div", operator.truediv, "float", _wide_op(np.true_divide)),
    Binary("floor_divide", operator.floordiv, "same", _wide_op(np.floor_divide), refuse=(0, 3),
           no_zero_divisor=True),
    Binary("remainder", operator.mod, "same", _wide_op(np.remainder), refuse=(0, 3), no_zero_divisor=True),
    Binary("pow", operator.pow, "same", _reference_pow, refuse=(0,), lo=-6, hi=6, b_lo=-3, b_hi=3),
    Binary("eq", operator.eq, "bool", _plain_op(np.equal)),
    Binary("ne", operator.ne, "bool", _plain_op(np.not_equal)),
    Binary("lt", operator.lt, "bool", _plain_op(np.less), refuse=(3,)),
    Binary("le", operator.le, "bool", _plain_op(np.less_equal), refuse=(3,)),
    Binary("gt", operator.gt, "bool", _plain_op(np.greater), refuse=(3,)),
    Binary("ge", operator.ge, "bool", _plain_op(np.greater_equal), refuse=(3,)),
    Binary("logical_and", agnostic.logical_and, "bool", _logical(np.logical_and)),
    Binary("logical_or", agnostic.logical_or, "bool", _logical(np.logical_or)),
    Binary("logical_xor", agnostic.logical_xor, "bool", _logical(np.logical_xor)),
    Binary("bitwise_and", operator.and_, "same", _plain_op(np.bitwise_and), refuse=(2, 3)),
    Binary("bitwise_or", operator.or_, "same", _plain_op(np.bitwise_or), refuse=(2, 3)),
    Binary("bitwise_xor", operator.xor, "same", _plain_op(np.bitwise_xor), refuse=(2, 3)),
    Binary("bitwise_left_shift", operator.lshift, "same", _plain_op(np.left_shift), refuse=(0, 2, 3),
           b_lo=0, b_hi=7),
    Binary("bitwise_right_shift", operator.rshift, "same", _plain_op(np.right_shift), refuse=(0, 2, 3),
           b_lo=0, b_hi=7),
    Binary("maximum", agnostic.maximum, "same", _plain_op(np.maximum), refuse=(3,)),
    Binary("minimum", agnostic.minimum, "same", _plain_op(np.minimum), refuse=(3,)),
]
BY_NAME = {op.name: op for op in BINARY}


def _expected_binary(op, a, b):
    """('error', type) or ('ok', expected array, result dtype name) for ``op(a, b)`` under PyTorch's rules."""
    promoted = torch_result_type(a, b)
    if promoted == "complex32":
        return None
    if op.name == "sub" and "bool" in (operand_dtype(a), operand_dtype(b)):
        return ("error", RuntimeError)  # PyTorch refuses subtraction with any bool operand (sub_check)
    compute = op.compute(promoted)
    if CATEGORY[compute] in op.refuse:
        return ("error", RuntimeError)
    if op.name == "pow" and CATEGORY[compute] == 1 and not isinstance(b, np.ndarray) and b < 0:
        return ("error", RuntimeError)  # "Integers to negative integer powers are not allowed" (Scalar exponent)
    if broadcast_or_none(np.shape(a), np.shape(b)) is None:
        return ("error", RuntimeError)
    x, y = cast(a, compute), cast(b, compute)
    if op.no_zero_divisor and CATEGORY[compute] == 1:
        assume(not (y == 0).any())  # integer division by zero is undefined across devices
    if op.name == "div" and CATEGORY[compute] == 3:
        assume(not (y == 0).any())  # complex x / 0: NumPy and CUDA's complex division give different infs/NaNs
    if op.name == "pow" and CATEGORY[compute] == 3:
        assume(not (x == 0).any())  # 0 ** complex: C++ std::pow and NumPy disagree on special values
    with np.errstate(all="ignore"):
        expected = op.reference(x, y, compute)
    result = op.result(compute)
    expected = cast(expected, result)
    if op.name in ("div", "pow") and CATEGORY[compute] == 3:
        # A complex quotient or power that overflows (4 / 1.2e-38j, or 7.5e-22j ** -2, in complex64): the
        # algorithms (NumPy's, CuPy's, PyTorch's) give different infs/NaNs there, and the reference is computed
        # wider.
        assume(np.isfinite(expected).all() or not np.isfinite(x).all() or not np.isfinite(y).all())
    return ("ok", expected, result)


def _check(outcome, expected):
    if expected[0] == "error":
        outcome.raises(expected[1])
    else:
        check_tensor(outcome, expected[1], expected[2])


def _operands_for(op, draw, shape_a, shape_b, name_a, name_b):
    a = draw(arrays(name_a, shape_a, op.lo, op.hi))
    b = draw(arrays(name_b, shape_b, op.b_lo, op.b_hi))
    return a, b


@pytest.mark.parametrize("first", ALL)
@pytest.mark.parametrize("op", BINARY, ids=[op.name for op in BINARY])
@fewer_examples()
@given(pair=broadcast_pair(), second=st.sampled_from(ALL), data=st.data())
def test_binary_tensor_tensor(op, first, pair, second, data):
    a, b = _operands_for(op, data.draw, pair[0], pair[1], first, second)
    expected = _expected_binary(op, a, b)
    assume(expected is not None)
    _check(on_all_devices(op.call, a, b, compute=op.compute(torch_result_type(a, b))), expected)


@given(op=st.sampled_from(BINARY), pair=mismatched_pair(max_dims=3, max_side=3),
       name=st.sampled_from(["int64", "float32", "bool"]))
def test_binary_shape_mismatch_raises_runtime_error(op, pair, name):
    """Shapes that don't broadcast: RuntimeError ("The size of tensor a (2) must match the size of tensor b (3)")."""
    a, b = np.ones(pair[0], name), np.ones(pair[1], name)
    on_all_devices(op.call, a, b).raises(RuntimeError)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("op", BINARY, ids=[op.name for op in BINARY])
@fewer_examples()
@given(shape=shapes(), reflected=st.booleans(), data=st.data())
def test_binary_tensor_scalar(op, name, shape, reflected, data):
    kinds = ("bool", "int", "float", "complex")
    if reflected:  # the tensor is the right operand (the exponent, the shift amount...)
        a = data.draw(arrays(name, shape, op.b_lo, op.b_hi))
        scalar = data.draw(scalars(kinds, lo=max(op.lo, -10), hi=min(op.hi, 10)))
    else:
        a = data.draw(arrays(name, shape, op.lo, op.hi))
        scalar = data.draw(scalars(kinds, lo=max(op.b_lo, -10), hi=min(op.b_hi, 10)))
    if name == "uint8" and isinstance(scalar, int) and not isinstance(scalar, bool):
        assume(scalar >= 0)  # a negative Python int wraps into uint8; keep to unambiguous values
    if op.name == "pow" and isinstance(scalar, complex):
        assume(not reflected or scalar != 0)
    if op.name == "sub":
        assume(not isinstance(scalar, bool))  # test_sub_with_any_bool_operand_raises covers bool scalars
    if reflected:
        expected = _expected_binary(op, scalar, a)
        assume(expected is not None)
        _check(on_all_devices(lambda t: op.call(scalar, t), a), expected)
    else:
        expected = _expected_binary(op, a, scalar)
        assume(expected is not None)
        _check(on_all_devices(lambda t: op.call(t, scalar), a), expected)


@given(shape=shapes(), name=st.sampled_from(ALL), data=st.data())
def test_sub_with_any_bool_operand_raises(shape, name, data):
    """PyTorch's sub_check: subtraction with a bool operand (tensor or Python bool, either side, in place or not) is
    a RuntimeError ("use the `~` or `logical_not()` operator instead"), whatever the other operand's dtype."""
    a = data.draw(arrays(name, shape, -5, 5))
    flag = data.draw(st.booleans())
    mask = data.draw(arrays("bool", data.draw(st.sampled_from([(), shape]))))
    on_all_devices(lambda t: t - flag, a).raises(RuntimeError)
    on_all_devices(lambda t: flag - t, a).raises(RuntimeError)
    on_all_devices(lambda t: t.sub_(flag), a).raises(RuntimeError)
    on_all_devices(lambda t, m: t - m, a, mask).raises(RuntimeError)
    on_all_devices(lambda t, m: m - t, a, mask).raises(RuntimeError)
    on_all_devices(lambda t, m: agnostic.sub(t, m), a, mask).raises(RuntimeError)


@pytest.mark.parametrize("op", [BY_NAME[n] for n in ("add", "mul", "div", "sub", "lt", "maximum")],
                         ids=lambda op: op.name)
@given(shape=shapes(min_dims=1), names=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)), data=st.data())
def test_zero_dim_tensor_tier(op, shape, names, data):
    """A 0-dim tensor only changes the result dtype of a dimensioned one when it is of a higher category."""
    a = data.draw(arrays(names[0], shape, op.lo, op.hi))
    b = data.draw(arrays(names[1], (), op.b_lo, op.b_hi))
    for x, y in ((a, b), (b, a)):
        expected = _expected_binary(op, x, y)
        assume(expected is not None)
        _check(on_all_devices(op.call, x, y, compute=op.compute(torch_result_type(x, y))), expected)


_LARGEST_SUBNORMAL = float(np.nextafter(np.finfo(np.float32).tiny, np.float32(0)))


@pytest.mark.parametrize("op", [BY_NAME[n] for n in ("pow", "div", "floor_divide", "remainder", "mul")],
                         ids=lambda op: op.name)
@given(a=arrays("float32", (3,), -6, 6),
       tiny=st.floats(-_LARGEST_SUBNORMAL, _LARGEST_SUBNORMAL, width=32).filter(lambda x: x != 0))
@example(a=np.array([0.0, 2.0, -0.5], np.float32), tiny=1e-40)  # GPU dev profile: pow gave 1 on CUDA, 0 on the CPU
def test_a_float32_subnormal_operand_is_zero_on_cuda(op, a, tiny):
    """A float64 0-dim operand beside a float32 tensor computes in float32, where ``tiny`` is a subnormal: the CPU
    computes with it (``0 ** 1e-40`` is 0, as PyTorch on either device), CUDA reads it as a zero of its sign, as
    every CuPy kernel does (-ftz=true; ``0 ** 0`` is 1). The CPU's values, and on CUDA exactly those of a zero."""
    b = np.array(tiny, np.float64)
    expected = _expected_binary(op, a, b)
    assume(expected[0] == "ok")
    outcome = on_all_devices(op.call, a, b, compute="float32")
    _check(outcome, expected)


_SCALAR_POWERS = {2: lambda x: x * x, 3: lambda x: x * x * x, -2: lambda x: 1 / (x * x),
                  -0.5: lambda x: 1 / np.sqrt(x), -1: lambda x: 1 / x}


@given(name=st.sampled_from(("float32", "float64")), shape=shapes(), exponent=st.sampled_from(sorted(_SCALAR_POWERS)),
       as_float=st.booleans(), data=st.data())
def test_scalar_powers_are_pytorchs_arithmetic(name, shape, exponent, as_float, data):
    """``x ** 2``, ``** 3``, ``** -2``, ``** -0.5`` and ``** -1`` of a float tensor are ``x * x``, ``x * x * x``,
    ``1 / (x * x)``, ``1 / sqrt(x)`` and ``1 / x``, as PyTorch's pow kernels compute them: bit for bit, on every
    device."""
    a = data.draw(arrays(name, shape))
    if exponent == -0.5:
        a = np.asarray(np.abs(a))  # 0-dim stays an array, not a NumPy scalar
    if name == "float32":  # CuPy's kernels flush float32 subnormal results to zero (-ftz=true): 1.7e-15 ** 3 is 0
        with np.errstate(all="ignore"):
            result = np.abs(_SCALAR_POWERS[exponent](a))
        a = np.asarray(np.where((result > 0) & (result < np.finfo(np.float32).tiny), np.float32(1), a), a.dtype)
    power = float(exponent) if as_float else exponent
    outcome = on_all_devices(lambda t: t ** power, a, rtol=0, atol=0, compute=name)
    with np.errstate(all="ignore"):
        expected = _SCALAR_POWERS[exponent](a)
    check_tensor(outcome, expected, name, rtol=0, atol=0)


def test_scalar_powers_match_pytorch_bit_for_bit():
    torch = pytest.importorskip("torch", minversion="2.14")
    x = np.random.default_rng(0).standard_normal(10_000).astype(np.float32)
    x[:5] = [0.0, -0.0, np.inf, np.nan, 1.7153913e-15]  # the last: a subnormal cube (PyTorch's CPU keeps it)
    for exponent in _SCALAR_POWERS:
        base = np.abs(x) if exponent == -0.5 else x
        got = (agnostic.tensor(base) ** exponent).numpy()
        expected = (torch.tensor(base) ** exponent).numpy()
        same = (got.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(got) & np.isnan(expected))
        assert same.all(), exponent


@given(shape=shapes(), name=st.sampled_from(INTS), data=st.data())
def test_integer_pow_with_negative_tensor_exponent(shape, name, data):
    """Integer tensors to negative tensor exponents follow ATen's powi (1, -1 or 0); only a negative *Python
    number* exponent is an error."""
    a = data.draw(arrays(name, shape, -3, 3))
    b = data.draw(arrays(name, shape, -3, 3))
    expected = _expected_binary(BY_NAME["pow"], a, b)
    assume(expected is not None)
    _check(on_all_devices(operator.pow, a, b), expected)
    on_all_devices(lambda t: t ** -1, a).raises(RuntimeError)


@given(pair=broadcast_pair(), names=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)), data=st.data())
def test_div_rounding_modes(pair, names, data):
    a = data.draw(arrays(names[0], pair[0]))
    b = data.draw(arrays(names[1], pair[1]))
    promoted = torch_result_type(a, b)
    for mode in ("trunc", "floor"):
        outcome = on_all_devices(lambda x, y: agnostic.div(x, y, rounding_mode=mode), a, b, compute=promoted)
        if CATEGORY[promoted] in (0, 3):  # "div_trunc_cpu"/"div_floor_cpu" not implemented for 'Bool'/complex
            outcome.raises(RuntimeError)
            continue
        x, y = cast(a, promoted), cast(b, promoted)
        if CATEGORY[promoted] == 1:
            assume(not (y == 0).any())
        with np.errstate(all="ignore"):
            quotient = wide(x) / wide(y) if CATEGORY[promoted] == 2 else None
            if quotient is not None:  # a quotient within rounding of an integer may round either way
                near = np.abs(quotient - np.round(quotient)) <= 1e-2 * np.maximum(np.abs(quotient), 1)
                assume(not (near & np.isfinite(quotient) & (quotient != np.round(quotient))).any())
            if mode == "trunc":
                expected = np.trunc(quotient) if quotient is not None else _int_trunc_div(x, y)
            else:
                expected = np.floor_divide(wide(x), wide(y))
        check_tensor(outcome, cast(expected, promoted), promoted)


def _int_trunc_div(x, y):
    q = np.floor_divide(x, y)
    fix = (np.remainder(x, y) != 0) & ((x < 0) != (y < 0))
    return q + fix


# ----- unary ops --------------------------------------------------------------------------------------------------
class Unary:
    def __init__(self, name, reference, kind, refuse=(), dtypes=ALL, lo=-100, hi=100, nonzero_complex=False,
                 complex_poles=None):
        self.name, self.reference, self.kind, self.refuse = name, reference, kind, refuse
        self.dtypes, self.lo, self.hi = dtypes, lo, hi
        self.nonzero_complex = nonzero_complex
        # where a complex function has poles: the distance to the nearest, below which float32 results lose all
        # digits (any two correct implementations then disagree), so such inputs are not drawn
        self.complex_poles = complex_poles

    def __repr__(self):
        return self.name

    def result(self, name):
        if self.kind == "float":
            return float_result(name)
        if self.kind == "bool":
            return "bool"
        if self.kind == "real":  # abs: complex -> its real type
            return {"complex64": "float32", "complex128": "float64"}.get(name, name)
        return name


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _rounding(function):
    return lambda x: x if x.dtype.kind in "iub" else function(x)


UNARY = [
    Unary("neg", np.negative, "same", refuse=(0,)),
    Unary("abs", np.abs, "real", refuse=(0,)),
    Unary("sign", lambda x: x if x.dtype == bool else np.sign(x), "same", refuse=(3,)),
    Unary("floor", _rounding(np.floor), "same", refuse=(3,), dtypes=INTS + FLOATS + COMPLEX),
    Unary("ceil", _rounding(np.ceil), "same", refuse=(3,), dtypes=INTS + FLOATS + COMPLEX),
    Unary("trunc", _rounding(np.trunc), "same", refuse=(3,), dtypes=INTS + FLOATS + COMPLEX),
    Unary("round", _rounding(np.rint), "same", refuse=(3,), dtypes=INTS + FLOATS + COMPLEX),
    Unary("square", np.square, "same", dtypes=INTS + FLOATS + COMPLEX, lo=-50, hi=50),
    Unary("sqrt", np.sqrt, "float"),
    Unary("rsqrt", lambda x: 1 / np.sqrt(x), "float", nonzero_complex=True),
    Unary("reciprocal", np.reciprocal, "float", nonzero_complex=True),
    Unary("exp", np.exp, "float", lo=-20, hi=20),
    Unary("expm1", np.expm1, "float", dtypes=REAL, lo=-20, hi=20),
    Unary("log", np.log, "float", nonzero_complex=True),
    Unary("log2", np.log2, "float", dtypes=REAL),
    Unary("log10", np.log10, "float", dtypes=REAL),
    Unary("log1p", np.log1p, "float", dtypes=REAL),
    Unary("sin", np.sin, "float", lo=-20, hi=20),
    Unary("cos", np.cos, "float", lo=-20, hi=20),
    Unary("tanh", np.tanh, "float", lo=-20, hi=20),
    Unary("atan", np.arctan, "float", dtypes=REAL),
    Unary("sigmoid", _sigmoid, "float", lo=-20, hi=20,
          complex_poles=lambda z: np.abs(1 + np.exp(-z.astype(np.complex128)))),  # at z = i(2k + 1)pi
    Unary("logical_not", lambda x: x == 0, "bool"),
    Unary("bitwise_not", lambda x: np.logical_not(x) if x.dtype == bool else np.invert(x), "same", refuse=(2, 3)),
    Unary("isnan", np.isnan, "bool"),
    Unary("isfinite", np.isfinite, "bool"),
]


def _expected_unary(op, a):
    name = a.dtype.name
    if CATEGORY[name] in op.refuse:
        return ("error", RuntimeError)
    result = op.result(name)
    if op.name == "square" and name == "bool":
        result = "int64"
    compute = float_result(name) if op.kind == "float" else name
    x = cast(a, compute)
    with np.errstate(all="ignore"):
        value = op.reference(wide(x) if op.kind in ("float", "real") or CATEGORY[compute] >= 2 else x)
    return ("ok", cast(value, result), result)


@pytest.mark.parametrize("op, name", [(op, name) for op in UNARY for name in op.dtypes],
                         ids=[f"{op.name}-{name}" for op in UNARY for name in op.dtypes])
@fewer_examples()
@given(shape=shapes(), data=st.data())
def test_unary(op, name, shape, data):
    a = data.draw(arrays(name, shape, op.lo, op.hi))
    if op.nonzero_complex and CATEGORY[name] == 3:
        assume(not (a == 0).any())
    if op.complex_poles is not None and CATEGORY[name] == 3:
        assume((op.complex_poles(a) > 1e-2).all())
    expected = _expected_unary(op, a)
    function = getattr(agnostic, op.name)
    outcome = on_all_devices(function, a)
    _check(outcome, expected)
    method = on_all_devices(lambda t: getattr(t, op.name)(), a)
    _check(method, expected)


@given(shape=shapes(), name=st.sampled_from(ALL), data=st.data())
def test_operator_spellings(shape, name, data):
    a = data.draw(arrays(name, shape, -20, 20))
    _check(on_all_devices(lambda t: -t, a), _expected_unary(UNARY[0], a))
    _check(on_all_devices(abs, a), _expected_unary(UNARY[1], a))
    invert = ("ok", np.logical_not(a), "bool") if name == "bool" else _expected_unary(UNARY[-3], a)
    _check(on_all_devices(operator.invert, a), invert)


@given(shape=shapes(), name=st.sampled_from(["bool", "int32", "float64"]))
def test_square_of_bool_is_int64(shape, name):
    """``square`` is ``pow(x, 2)`` in PyTorch: a bool tensor promotes with the int exponent to int64."""
    a = np.ones(shape, name)
    expected = _expected_unary(next(op for op in UNARY if op.name == "square"), a)
    _check(on_all_devices(agnostic.square, a), expected)


# ----- where, clamp, softmax --------------------------------------------------------------------------------------
@given(shape_list=hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, min_side=0, max_side=4).map(
    lambda b: tuple(b.input_shapes)), names=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)),
    scalar_other=st.booleans(), data=st.data())
def test_where(shape_list, names, scalar_other, data):
    condition = data.draw(arrays("bool", shape_list[0]))
    x = data.draw(arrays(names[0], shape_list[1], -20, 20))
    y = data.draw(scalars()) if scalar_other else data.draw(arrays(names[1], shape_list[2], -20, 20))
    promoted = torch_result_type(x, y)
    assume(promoted != "complex32")
    expected = np.where(condition, cast(x, promoted), cast(y, promoted))
    check_tensor(on_all_devices(agnostic.where, condition, x, y), expected, promoted)
    check_tensor(on_all_devices(lambda c, t, o: t.where(c, o), condition, x, y), expected, promoted)


@given(shapes_=hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4),
       name=st.sampled_from(["float16", "float32", "float64", "int8", "int64", "uint8"]),
       zero=st.sampled_from([0, 0.0, -0.0]), data=st.data())
def test_where_with_a_zero_scalar_keeps_special_values(shapes_, name, zero, data):
    """``where(mask, x, 0)`` (a ReLU's gradient) takes a bit-masking path on the CPU: NaN, inf and -0.0 where the
    mask holds, the zero's own sign elsewhere, exactly as ``numpy.where``."""
    condition = data.draw(arrays("bool", shapes_.input_shapes[0]))
    zero = zero if name.startswith("float") else 0  # (a float zero would promote an integer tensor)
    elements = (st.sampled_from([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5, -2.0]) if name.startswith("float")
                else st.integers(-5, 5) if name != "uint8" else st.integers(0, 9))
    x = data.draw(hnp.arrays(name, shapes_.input_shapes[1], elements=elements))
    expected = np.where(condition, x, np.asarray(zero, dtype=name))
    check_tensor(on_all_devices(agnostic.where, condition, x, zero), expected, name)
    if name.startswith("float"):  # the zeros' signs, seen as the signs of infinities
        with np.errstate(divide="ignore"):
            reciprocal = np.reciprocal(expected)
        check_tensor(on_all_devices(lambda c, t: agnostic.where(c, t, zero).reciprocal(), condition, x), reciprocal,
                     name)


@given(pair=mismatched_pair(max_dims=3, max_side=3), third=shapes(max_dims=1, min_side=1, max_side=1),
       order=st.permutations(range(3)), use_clamp=st.booleans())
def test_where_and_clamp_shape_mismatch_raises_runtime_error(pair, third, order, use_clamp):
    shape_list = [pair[0], pair[1], third]
    a, b, c = (np.ones(shape_list[i], np.float32) for i in order)
    if use_clamp:
        on_all_devices(agnostic.clamp, a, b, c).raises(RuntimeError)
    else:
        on_all_devices(agnostic.where, a > 0, b, c).raises(RuntimeError)


@given(shape=shapes(max_dims=3), name=st.sampled_from(["float32", "int64", "int8", "float16", "complex64"]))
def test_where_needs_bool_condition(shape, name):
    condition = np.ones(shape, name)
    outcome = on_all_devices(agnostic.where, condition, np.ones(shape, np.float32), np.zeros(shape, np.float32))
    outcome.raises(RuntimeError)


@given(shape=shapes(), name=st.sampled_from(INTS[1:] + FLOATS), bounds=st.tuples(
    st.one_of(st.none(), st.integers(-50, 50), st.floats(-50, 50, width=16)),
    st.one_of(st.none(), st.integers(-50, 50), st.floats(-50, 50, width=16))), data=st.data())
def test_clamp_with_scalar_bounds(shape, name, bounds, data):
    a = data.draw(arrays(name, shape))
    low, high = bounds
    outcome = on_all_devices(lambda t: agnostic.clamp(t, low, high), a)
    if low is None and high is None:
        outcome.raises(RuntimeError)
        return
    result = torch_result_type(a, *[b for b in bounds if b is not None])
    value = wide(cast(a, result))
    if low is not None:
        value = np.maximum(value, wide(cast(low, result)))
    if high is not None:  # min > max gives max everywhere, as in PyTorch
        value = np.minimum(value, wide(cast(high, result)))
    check_tensor(outcome, cast(value, result), result)


@given(pair=broadcast_pair(max_dims=3, max_side=4), names=st.tuples(*[st.sampled_from(INTS[1:] + FLOATS)] * 3),
       data=st.data())
def test_clamp_with_tensor_bounds(pair, names, data):
    """The result dtype promotes over input, min and max together (PyTorch's clamp.Tensor)."""
    a = data.draw(arrays(names[0], pair[0]))
    low = data.draw(arrays(names[1], pair[1], -50, 50))
    high = data.draw(arrays(names[2], data.draw(st.sampled_from([pair[0], pair[1], ()])), -50, 50))
    outcome = on_all_devices(lambda t, lo, hi: agnostic.clamp(t, lo, hi), a, low, high)
    result = torch_result_type(a, low, high)
    value = np.minimum(np.maximum(wide(cast(a, result)), wide(cast(low, result))), wide(cast(high, result)))
    check_tensor(outcome, cast(value, result), result)


def test_clamp_casts_a_zero_dim_input_and_its_bounds_together():
    """A draw the dev profile found on a GPU: the float16 bound must not round a 0-dim float32 input (float32)."""
    a, low, high = np.array(4.466797, np.float32), np.array([0.0], np.float16), np.array([5.0], np.float32)
    outcome = on_all_devices(lambda t, lo, hi: agnostic.clamp(t, lo, hi), a, low, high)
    check_tensor(outcome, np.array([4.466797], np.float32), "float32")


@given(shape=shapes(), name=st.sampled_from(COMPLEX), data=st.data())
def test_clamp_refuses_complex(shape, name, data):
    a = data.draw(arrays(name, shape, -5, 5))
    on_all_devices(lambda t: agnostic.clamp(t, -1, 1), a).raises(RuntimeError)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@given(shape=shapes(), name=st.sampled_from(REAL), data=st.data())
def test_softmax(log, shape, name, data):
    a = data.draw(arrays(name, shape, -20, 20))
    ndim = len(shape)
    dim = data.draw(st.integers(-max(ndim, 1) - 1, max(ndim, 1)))
    function = agnostic.log_softmax if log else agnostic.softmax
    outcome = on_all_devices(lambda t: function(t, dim), a)
    bad_dim = not -max(ndim, 1) <= dim < max(ndim, 1)
    if name not in FLOATS:  # "softmax_lastdim_kernel_impl" not implemented for 'Long'
        outcome.raises(RuntimeError, *([IndexError] if bad_dim else []))
        return
    if bad_dim:
        outcome.raises(IndexError)
        return
    x = wide(a)
    axis = dim % ndim if ndim else None
    with np.errstate(all="ignore"):
        shifted = x - (x.max(axis=axis, keepdims=True) if x.size else 0)
        total = np.exp(shifted).sum(axis=axis, keepdims=True)
        expected = shifted - np.log(total) if log else np.exp(shifted) / total
    check_tensor(outcome, cast(expected, name), name)
    if name != "float64":  # dtype= casts the input first, then computes in that dtype
        upcast = on_all_devices(lambda t: function(t, dim, dtype=agnostic.float64), a)
        check_tensor(upcast, expected, "float64")


@pytest.mark.parametrize("function", [agnostic.softmax, agnostic.log_softmax], ids=["softmax", "log_softmax"])
@given(shape=empty_shapes(), name=st.sampled_from(FLOATS), data=st.data())
def test_softmax_of_empty_tensor_is_empty(function, shape, name, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    check_tensor(on_all_devices(lambda t: function(t, dim), np.zeros(shape, name)), np.zeros(shape, name), name)
