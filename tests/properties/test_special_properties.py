"""Special functions agree across devices and with SciPy computed in float64 under PyTorch's dtype rules: any shape,
bool and integer inputs computing in the default float dtype, float16 in float32 and rounded, complex refused;
two-operand ones broadcast and promote; frexp and signbit are exact."""

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import (
    COMPLEX, FLOATS, REAL, arrays, broadcast_pair, check_tensor, fewer_examples, float_result, on_all_devices, shapes,
    torch_result_type,
)

# Tolerances by result dtype: float16 results are float32 values rounded (one rounding apart from the reference's);
# CuPy computes float32 natively, a few ulps from SciPy's float64-rounded values.
TOLERANCE = {"float16": (4e-3, 1e-3), "float32": (2e-5, 1e-5), "float64": (1e-10, 1e-12)}


def _expit(x):
    return sp.expit(x)


# name -> (agnostic function, float64 reference, lo, hi, dtypes)
UNARY = {
    "lgamma": (agnostic.lgamma, sp.gammaln, 0.125, 50, REAL),
    "digamma": (agnostic.digamma, sp.psi, 0.125, 50, REAL),
    "trigamma": (lambda x: agnostic.polygamma(1, x), lambda x: sp.polygamma(1, x), 0.125, 50, REAL),
    "erf": (agnostic.erf, sp.erf, -5, 5, REAL),
    "erfc": (agnostic.erfc, sp.erfc, -5, 5, REAL),
    "erfinv": (agnostic.erfinv, sp.erfinv, -0.984375, 0.984375, FLOATS),
    "i0": (agnostic.i0, sp.i0, -10, 10, REAL),
    "sinc": (agnostic.sinc, np.sinc, -10, 10, REAL),
    "logit": (agnostic.logit, sp.logit, 0.015625, 0.984375, FLOATS),
    "erfcx": (agnostic.special.erfcx, sp.erfcx, -5, 20, REAL),
    "i0e": (agnostic.special.i0e, sp.i0e, -20, 20, REAL),
    "i1": (agnostic.special.i1, sp.i1, -10, 10, REAL),
    "i1e": (agnostic.special.i1e, sp.i1e, -20, 20, REAL),
    "ndtr": (agnostic.special.ndtr, sp.ndtr, -10, 10, REAL),
    "ndtri": (agnostic.special.ndtri, sp.ndtri, 0.015625, 0.984375, FLOATS),
    "log_ndtr": (agnostic.special.log_ndtr, sp.log_ndtr, -20, 10, REAL),
    "entr": (agnostic.special.entr, sp.entr, 0, 50, REAL),
    "expit": (agnostic.special.expit, _expit, -20, 20, REAL),
}
UNARY_CASES = [(name, dtype) for name in sorted(UNARY) for dtype in UNARY[name][4]]


def _reference(function, *arrays, result):
    with np.errstate(all="ignore"):
        return np.asarray(function(*[np.asarray(a, np.float64) for a in arrays])).astype(result)


@pytest.mark.parametrize("name, dtype", UNARY_CASES, ids=[f"{name}-{dtype}" for name, dtype in UNARY_CASES])
@fewer_examples(0.08, minimum=5)
@given(shape=shapes(max_dims=3), data=st.data())
def test_unary_special_functions(name, dtype, shape, data):
    function, reference, lo, hi, _ = UNARY[name]
    a = data.draw(arrays(dtype, shape, lo, hi))
    result = float_result(dtype)
    rtol, atol = TOLERANCE[result]
    outcome = on_all_devices(function, a, rtol=rtol, atol=atol, compute="float32" if result == "float16" else result)
    check_tensor(outcome, _reference(reference, a, result=result), result, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["lgamma", "digamma", "erf", "erfinv", "i0", "i1e", "ndtr", "logit"])
@given(shape=shapes(max_dims=2), dtype=st.sampled_from(COMPLEX))
def test_complex_inputs_are_refused_on_every_device(name, shape, dtype):
    a = np.ones(shape, dtype)
    on_all_devices(UNARY[name][0], a).raises(NotImplementedError)


# name -> (agnostic function, float64 reference, (lo, hi) of the first operand, (lo, hi) of the second)
BINARY = {
    "xlogy": (agnostic.xlogy, sp.xlogy, (-10, 10), (0, 20)),
    "xlog1py": (agnostic.special.xlog1py, sp.xlog1py, (-10, 10), (-0.875, 20)),
    "igamma": (agnostic.igamma, sp.gammainc, (0.5, 20), (0, 20)),
    "igammac": (agnostic.igammac, sp.gammaincc, (0.5, 20), (0, 20)),
    "zeta": (agnostic.special.zeta, sp.zeta, (2, 12), (0.5, 20)),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@fewer_examples(0.3)
@given(shape_pair=broadcast_pair(max_dims=3, max_side=4), names=st.tuples(st.sampled_from(FLOATS + ["int64"]),
                                                                          st.sampled_from(FLOATS + ["int32"])),
       scalar_second=st.booleans(), data=st.data())
def test_binary_special_functions_broadcast_and_promote(name, shape_pair, names, scalar_second, data):
    function, reference, (lo_a, hi_a), (lo_b, hi_b) = BINARY[name]
    if names[1] == "int32":
        lo_b = max(lo_b, 1)
    a = data.draw(arrays(names[0], shape_pair[0], max(lo_a, 1) if names[0] == "int64" else lo_a, hi_a))
    b = data.draw(st.floats(lo_b, hi_b, width=32)) if scalar_second else \
        data.draw(arrays(names[1], shape_pair[1], lo_b, hi_b))
    if name in ("igamma", "igammac") and np.dtype(torch_result_type(a, b)).kind in "iub":
        on_all_devices(function, a, b).raises(NotImplementedError)  # PyTorch: "igamma_cpu" not implemented for 'Int'
        return
    result = float_result(torch_result_type(a, b))
    rtol, atol = TOLERANCE[result]
    if result == "float16":  # the operands' own rounding to float16 moves these steep functions further
        rtol, atol = 2e-2, 2e-3
    outcome = on_all_devices(function, a, b, rtol=rtol, atol=atol, compute="float32" if result == "float16" else result)
    expected = _reference(reference, np.asarray(a).astype(result), np.asarray(b).astype(result), result=result)
    check_tensor(outcome, expected, result, rtol=rtol, atol=atol)


@given(shape=shapes(), dtype=st.sampled_from(FLOATS), data=st.data())
def test_frexp_is_exact(shape, dtype, data):
    a = data.draw(arrays(dtype, shape, -1e4, 1e4))
    mantissa, exponent = np.frexp(a)
    outcome = on_all_devices(agnostic.frexp, a).ok()
    check_tensor(outcome[0], mantissa, dtype, rtol=0, atol=0)
    check_tensor(outcome[1], exponent, "int32", rtol=0, atol=0)


@given(shape=shapes(), dtype=st.sampled_from(REAL), data=st.data())
def test_signbit_is_exact(shape, dtype, data):
    a = data.draw(arrays(dtype, shape, -100, 100))
    check_tensor(on_all_devices(agnostic.signbit, a), np.signbit(a.astype(np.float64)), "bool")


@given(shape=shapes(max_dims=3), dtype=st.sampled_from(FLOATS), n=st.integers(0, 4), data=st.data())
def test_polygamma_of_any_order(shape, dtype, n, data):
    a = data.draw(arrays(dtype, shape, 0.25, 30))
    rtol, atol = TOLERANCE[dtype]
    outcome = on_all_devices(lambda x: agnostic.polygamma(n, x), a, rtol=rtol, atol=atol)
    expected = _reference(lambda x: sp.polygamma(n, x), a, result=dtype)
    check_tensor(outcome, expected, dtype, rtol=rtol * 4, atol=atol)
