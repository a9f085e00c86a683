"""Special functions (agnostic.lgamma, digamma, polygamma, erf..., and agnostic.special as torch.special): values
against SciPy and PyTorch in float32 and float64, PyTorch's values at poles and infinities, its result dtypes, the
gradients (gradcheck in float64, and against PyTorch), the in-place forms and methods; and the print options."""

import math

import numpy as np
import pytest
import scipy.special as sp

import agnostic
from agnostic import special
from agnostic._printing import get_printoptions, set_printoptions

# Away from poles, the float64 values are SciPy's own (the same library on the CPU); CuPy's kernels may differ by a
# few ulps, and float32 inputs are computed in float64 by SciPy but natively by CuPy.
TOLERANCE = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=1e-6)}
POINTS = np.array([-3.7, -2.5, -0.3, 1e-6, 0.1, 0.5, 1.0, 2.25, 7.5, 30.0])
UNIT = np.array([-0.99, -0.5, -1e-4, 0.0, 0.3, 0.75, 0.999])
PROBABILITY = np.array([1e-6, 0.01, 0.3, 0.5, 0.8, 0.999])
POSITIVE = np.array([1e-3, 0.2, 1.0, 3.5, 12.0, 40.0])

# name -> (agnostic function, SciPy/NumPy reference, points)
UNARY = {
    "lgamma": (agnostic.lgamma, sp.gammaln, POINTS),
    "digamma": (agnostic.digamma, sp.psi, POINTS),
    "erf": (agnostic.erf, sp.erf, POINTS),
    "erfc": (agnostic.erfc, sp.erfc, POINTS),
    "erfinv": (agnostic.erfinv, sp.erfinv, UNIT),
    "i0": (agnostic.i0, sp.i0, POINTS),
    "sinc": (agnostic.sinc, np.sinc, POINTS),
    "logit": (agnostic.logit, sp.logit, PROBABILITY),
    "erfcx": (special.erfcx, sp.erfcx, POINTS),
    "i0e": (special.i0e, sp.i0e, POINTS),
    "i1": (special.i1, sp.i1, POINTS),
    "i1e": (special.i1e, sp.i1e, POINTS),
    "ndtr": (special.ndtr, sp.ndtr, POINTS),
    "ndtri": (special.ndtri, sp.ndtri, PROBABILITY),
    "log_ndtr": (special.log_ndtr, sp.log_ndtr, POINTS),
    "entr": (special.entr, sp.entr, POSITIVE),
    "expit": (special.expit, sp.expit, POINTS),
    "trigamma": (lambda x: agnostic.polygamma(1, x), lambda x: sp.polygamma(1, x), POINTS),
    "polygamma3": (lambda x: agnostic.polygamma(3, x), lambda x: sp.polygamma(3, x), POSITIVE),
    "mvlgamma": (lambda x: agnostic.mvlgamma(x, 3), lambda x: sp.multigammaln(x, 3), POSITIVE + 1.0),
}
# name -> (agnostic function, reference, first points, second points)
BINARY = {
    "xlogy": (agnostic.xlogy, sp.xlogy, POINTS, POSITIVE[:, None]),
    "xlog1py": (special.xlog1py, sp.xlog1py, POINTS, POSITIVE[:, None] - 0.5),
    "zeta": (special.zeta, sp.zeta, POSITIVE + 1.5, POSITIVE[:, None]),
    "igamma": (agnostic.igamma, sp.gammainc, POSITIVE, POSITIVE[:, None]),
    "igammac": (agnostic.igammac, sp.gammaincc, POSITIVE, POSITIVE[:, None]),
}


def _values(tensor):
    return tensor.cpu().numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_scipy(device, name, dtype):
    function, reference, points = UNARY[name]
    values = points.astype(dtype)
    got = function(agnostic.tensor(values, device=device))
    assert got.dtype is getattr(agnostic, dtype) and got.device == device
    with np.errstate(all="ignore"):
        expected = reference(values.astype(np.float64)).astype(dtype)  # overflows as the dtype does
    np.testing.assert_allclose(_values(got), expected, **TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_match_scipy_and_broadcast(device, name, dtype):
    function, reference, first, second = BINARY[name]
    a, b = first.astype(dtype), second.astype(dtype)
    got = function(agnostic.tensor(a, device=device), agnostic.tensor(b, device=device))
    assert got.shape == (len(second), len(first)) and got.dtype is getattr(agnostic, dtype)
    with np.errstate(over="ignore"):  # overflows as the dtype does
        expected = reference(a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(_values(got), expected, **TOLERANCE[dtype])


@pytest.mark.parametrize("name", ["xlogy", "xlog1py", "zeta", "igamma"])
def test_binary_ops_take_a_python_number_on_either_side(device, name):
    function, reference = BINARY[name][:2]
    x = agnostic.tensor([0.5, 2.0, 3.0], dtype=agnostic.float64, device=device)
    np.testing.assert_allclose(_values(function(x, 2.0)), reference([0.5, 2.0, 3.0], 2.0), rtol=1e-12)
    np.testing.assert_allclose(_values(function(2.0, x)), reference(2.0, [0.5, 2.0, 3.0]), rtol=1e-12)
    if name != "igamma":  # which refuses integers, as PyTorch's
        assert function(agnostic.tensor([1, 2], device=device), 3).dtype is agnostic.float32


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_pytorch(name, dtype):
    torch = pytest.importorskip("torch")
    torch_functions = {"trigamma": lambda x: torch.polygamma(1, x), "polygamma3": lambda x: torch.polygamma(3, x),
                       "mvlgamma": lambda x: torch.mvlgamma(x, 3)}
    function, _, points = UNARY[name]
    theirs = torch_functions.get(name) or getattr(torch.special, name, None) or getattr(torch, name)
    values = points.astype(dtype)
    tolerance = dict(rtol=1e-9, atol=1e-12) if dtype == "float64" else dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(_values(function(agnostic.tensor(values))), theirs(torch.tensor(values)).numpy(),
                               **tolerance)


# ----- PyTorch's values at poles, zeros and infinities --------------------------------------------------------------
INF, NAN = math.inf, math.nan


@pytest.mark.parametrize("function, inputs, expected", [
    (agnostic.lgamma, [0.0, -0.0, -1.0, -2.0, INF, -INF, NAN], [INF, INF, INF, INF, INF, INF, NAN]),
    (agnostic.digamma, [0.0, -0.0, -1.0, -2.0, INF, -INF, NAN], [-INF, INF, NAN, NAN, INF, NAN, NAN]),
    (lambda x: agnostic.polygamma(0, x), [0.0, -3.0], [-INF, NAN]),
    (lambda x: agnostic.polygamma(1, x), [0.0, INF], [INF, 0.0]),
    (agnostic.erfinv, [-1.0, 1.0, 1.5, -2.0, NAN], [-INF, INF, NAN, NAN, NAN]),
    (agnostic.erf, [INF, -INF, 0.0], [1.0, -1.0, 0.0]),
    (agnostic.erfc, [INF, -INF], [0.0, 2.0]),
    (agnostic.logit, [0.0, 1.0, 2.0, -1.0], [-INF, INF, NAN, NAN]),
    (agnostic.sinc, [0.0, INF, NAN], [1.0, NAN, NAN]),
    (agnostic.i0, [0.0, INF, -INF], [1.0, NAN, NAN]),
    (special.entr, [0.0, -1.0, INF], [0.0, -INF, -INF]),
    (special.ndtri, [0.0, 1.0, 2.0], [-INF, INF, NAN]),
    (special.log_ndtr, [INF, -INF], [0.0, -INF]),
    (special.erfcx, [INF, -INF], [0.0, INF]),
])
def test_special_values_are_pytorchs(device, function, inputs, expected):
    got = _values(function(agnostic.tensor(inputs, dtype=agnostic.float64, device=device)))
    np.testing.assert_array_equal(got, np.array(expected))


def test_xlogy_is_zero_where_x_is_zero_unless_y_is_nan(device):
    x = agnostic.tensor([0.0, 0.0, 0.0, 2.0, NAN], device=device)
    y = agnostic.tensor([0.0, -1.0, NAN, 0.0, 1.0], device=device)
    np.testing.assert_array_equal(_values(agnostic.xlogy(x, y)), [0.0, 0.0, NAN, -INF, NAN])
    np.testing.assert_array_equal(_values(special.xlog1py(x, y - 1)), [0.0, 0.0, NAN, -INF, NAN])


def test_logit_with_eps_clamps_first(device):
    x = agnostic.tensor([0.0, 0.5, 1.0, 2.0], dtype=agnostic.float64, device=device)
    expected = sp.logit(np.clip([0.0, 0.5, 1.0, 2.0], 0.1, 0.9))
    np.testing.assert_allclose(_values(agnostic.logit(x, eps=0.1)), expected, rtol=1e-12)
    np.testing.assert_allclose(_values(x.logit(0.1)), expected, rtol=1e-12)


def test_signbit_sees_negative_zero_and_integers(device):
    got = agnostic.signbit(agnostic.tensor([-0.0, 0.0, -2.5, INF, -INF], device=device))
    assert got.dtype is agnostic.bool
    assert _values(got).tolist() == [True, False, True, False, True]
    assert _values(agnostic.tensor([-3, 0, 4], device=device).signbit()).tolist() == [True, False, False]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_frexp_splits_into_mantissa_and_int32_exponent(device, dtype):
    values = np.array([8.0, -3.5, 0.0, 0.3, INF, NAN], dtype=dtype)
    mantissa, exponent = agnostic.frexp(agnostic.tensor(values, device=device))
    expected_mantissa, expected_exponent = np.frexp(values)
    assert mantissa.dtype is getattr(agnostic, dtype) and exponent.dtype is agnostic.int32
    np.testing.assert_array_equal(_values(mantissa), expected_mantissa)
    np.testing.assert_array_equal(_values(exponent), expected_exponent)
    result = agnostic.tensor(values, device=device).frexp()
    assert result.mantissa is not None and result.exponent.shape == (6,)
    assert repr(result).startswith("agnostic.return_types.frexp(\nmantissa=tensor(")


def test_ldexp_multiplies_by_powers_of_two(device):
    x = agnostic.tensor([1.0, 3.0, -0.5], device=device)
    np.testing.assert_array_equal(_values(agnostic.ldexp(x, agnostic.tensor([2, -1, 10], device=device))),
                                  [4.0, 1.5, -512.0])
    integers = agnostic.ldexp(agnostic.tensor([1], device=device), agnostic.tensor([2], device=device))
    assert integers.dtype is agnostic.float32 and _values(integers).tolist() == [4.0]


def test_heaviside_takes_values_where_input_is_zero(device):
    x = agnostic.tensor([-1.5, 0.0, 2.0, NAN, -0.0], device=device)
    np.testing.assert_array_equal(_values(agnostic.heaviside(x, agnostic.tensor([0.5], device=device))),
                                  [0.0, 0.5, 1.0, 0.0, 0.5])
    ints = agnostic.tensor([0, -1, 2], device=device).heaviside(agnostic.tensor([5], device=device))
    assert ints.dtype is agnostic.int64 and _values(ints).tolist() == [5, 0, 1]


# ----- dtypes and errors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("function", [agnostic.lgamma, agnostic.digamma, agnostic.erf, agnostic.erfc, agnostic.i0,
                                      agnostic.sinc, agnostic.erfinv, special.i1e, special.ndtr, special.entr,
                                      agnostic.logit, lambda x: agnostic.polygamma(2, x)])
def test_integers_give_the_default_float_dtype_and_half_stays_half(device, function):
    assert function(agnostic.tensor([1, 2], device=device)).dtype is agnostic.float32
    assert function(agnostic.tensor([True, False], device=device)).dtype is agnostic.float32
    half = function(agnostic.tensor([0.25, 0.5], dtype=agnostic.float16, device=device))
    single = function(agnostic.tensor([0.25, 0.5], device=device))
    assert half.dtype is agnostic.float16
    np.testing.assert_allclose(_values(half).astype(np.float32), _values(single), rtol=2e-3, atol=2e-3)
    with agnostic.autograd.no_grad():
        previous = agnostic.get_default_dtype()
        agnostic.set_default_dtype(agnostic.float64)
        try:
            assert function(agnostic.tensor([1, 2], device=device)).dtype is agnostic.float64
        finally:
            agnostic.set_default_dtype(previous)


@pytest.mark.parametrize("function", [agnostic.lgamma, agnostic.digamma, agnostic.erfinv, special.i0e,
                                      agnostic.signbit, agnostic.logit, lambda x: agnostic.polygamma(1, x),
                                      lambda x: agnostic.xlogy(x, x)])
def test_complex_inputs_are_refused(device, function):
    with pytest.raises(NotImplementedError, match="complex"):
        function(agnostic.tensor([1 + 1j], device=device))


def test_bad_arguments_raise_pytorchs_errors(device):
    x = agnostic.tensor([1.0, 2.0], device=device)
    with pytest.raises(RuntimeError, match="negative n"):
        agnostic.polygamma(-1, x)
    with pytest.raises(TypeError, match="'n' must be int"):
        agnostic.polygamma(1.5, x)
    with pytest.raises(RuntimeError, match="different dtypes"):
        agnostic.heaviside(x, agnostic.tensor([1], device=device))
    with pytest.raises(TypeError, match="must be Tensor"):
        agnostic.heaviside(x, 0.5)
    with pytest.raises(RuntimeError, match="floating-point"):
        agnostic.frexp(agnostic.tensor([1, 2], device=device))
    with pytest.raises(RuntimeError, match="greater than or equal to 1"):
        agnostic.mvlgamma(x, 0)


# ----- gradients -------------------------------------------------------------------------------------------------
GRADIENT_CASES = {
    "lgamma": (agnostic.lgamma, [[0.3, 2.5, -1.5]]),
    "digamma": (agnostic.digamma, [[0.3, 2.5, -1.5]]),
    "polygamma": (lambda x: agnostic.polygamma(2, x), [[0.3, 2.5, 4.0]]),
    "erf": (agnostic.erf, [[-1.2, 0.1, 0.7]]),
    "erfc": (agnostic.erfc, [[-1.2, 0.1, 0.7]]),
    "erfinv": (agnostic.erfinv, [[-0.9, 0.1, 0.7]]),
    "i0": (agnostic.i0, [[-1.2, 0.1, 3.0]]),
    "sinc": (agnostic.sinc, [[-1.2, 0.1, 3.3]]),
    "logit": (agnostic.logit, [[0.1, 0.5, 0.8]]),
    "logit_eps": (lambda x: agnostic.logit(x, eps=0.2), [[0.1, 0.5, 0.7]]),
    "mvlgamma": (lambda x: agnostic.mvlgamma(x, 3), [[1.3, 2.5, 4.0]]),
    "ldexp": (lambda x: agnostic.ldexp(x, agnostic.tensor([1, -2, 3])), [[0.3, -2.5, 4.0]]),
    "frexp": (lambda x: agnostic.frexp(x).mantissa, [[0.3, -2.5, 3.0]]),
    "xlogy": (agnostic.xlogy, [[0.0, 1.5, -2.0], [0.5, 2.0, 3.0]]),
    "xlogy_scalar": (lambda y: agnostic.xlogy(2.0, y), [[0.5, 2.0, 3.0]]),
    "xlog1py": (special.xlog1py, [[0.0, 1.5, -2.0], [0.5, 2.0, 3.0]]),
    "igamma": (lambda x: agnostic.igamma(agnostic.tensor([0.5, 2.0, 3.0], dtype=agnostic.float64), x),
               [[0.5, 1.0, 4.0]]),
    "igammac": (lambda x: agnostic.igammac(agnostic.tensor([0.5, 2.0, 3.0], dtype=agnostic.float64), x),
                [[0.5, 1.0, 4.0]]),
    "zeta": (lambda q: special.zeta(agnostic.tensor([2.0, 3.5, 5.0], dtype=agnostic.float64), q), [[0.5, 1.0, 4.0]]),
    "erfcx": (special.erfcx, [[-1.2, 0.1, 3.0]]),
    "i0e": (special.i0e, [[-1.2, 0.1, 3.0]]),
    "i1": (special.i1, [[-1.2, 0.1, 3.0]]),
    "i1e": (special.i1e, [[-1.2, 0.1, 3.0]]),
    "ndtr": (special.ndtr, [[-1.2, 0.1, 3.0]]),
    "ndtri": (special.ndtri, [[0.1, 0.5, 0.9]]),
    "log_ndtr": (special.log_ndtr, [[-5.0, 0.1, 3.0]]),
    "entr": (special.entr, [[0.1, 0.5, 3.0]]),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradcheck_in_float64(name):
    function, inputs = GRADIENT_CASES[name]
    tensors = [agnostic.tensor(values, dtype=agnostic.float64, requires_grad=True) for values in inputs]
    assert agnostic.autograd.gradcheck(lambda *xs: function(*xs).sum(), tensors)


TORCH_FUNCTIONS = {
    "polygamma": lambda torch: lambda x: torch.polygamma(2, x),
    "logit_eps": lambda torch: lambda x: torch.logit(x, eps=0.2),
    "mvlgamma": lambda torch: lambda x: torch.mvlgamma(x, 3),
    "ldexp": lambda torch: lambda x: torch.ldexp(x, torch.tensor([1, -2, 3])),
    "frexp": lambda torch: lambda x: torch.frexp(x).mantissa,
    "xlogy_scalar": lambda torch: lambda y: torch.xlogy(2.0, y),
    "igamma": lambda torch: lambda x: torch.igamma(torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64), x),
    "igammac": lambda torch: lambda x: torch.igammac(torch.tensor([0.5, 2.0, 3.0], dtype=torch.float64), x),
    "zeta": lambda torch: lambda q: torch.special.zeta(torch.tensor([2.0, 3.5, 5.0], dtype=torch.float64), q),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_match_pytorch(name):
    torch = pytest.importorskip("torch")
    if name == "ldexp" and tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 14):
        pytest.skip("PyTorch before 2.14 takes 2 ** other in integers in ldexp's gradient (2 ** -2 == 0); "
                    "test_ldexp_gradient_is_a_power_of_two checks it by hand")
    function, inputs = GRADIENT_CASES[name]
    theirs = TORCH_FUNCTIONS[name](torch) if name in TORCH_FUNCTIONS else \
        getattr(torch.special, name, None) or getattr(torch, name)
    ours = [agnostic.tensor(values, dtype=agnostic.float64, requires_grad=True) for values in inputs]
    reference = [torch.tensor(values, dtype=torch.float64, requires_grad=True) for values in inputs]
    weights = [1.0, -2.0, 0.5]
    got = agnostic.autograd.grad((function(*ours) * agnostic.tensor(weights, dtype=agnostic.float64)).sum(), ours)
    expected = torch.autograd.grad((theirs(*reference) * torch.tensor(weights, dtype=torch.float64)).sum(), reference)
    for mine, their in zip(got, expected):
        np.testing.assert_allclose(mine.numpy(), their.numpy(), rtol=1e-9, atol=1e-12)


def test_ldexp_gradient_is_a_power_of_two():
    x = agnostic.tensor([0.3, -2.5, 4.0], dtype=agnostic.float64, requires_grad=True)
    agnostic.ldexp(x, agnostic.tensor([1, -2, 3])).sum().backward()
    assert x.grad.tolist() == [2.0, 0.25, 8.0]


def test_derivatives_pytorch_does_not_implement_are_refused():
    a = agnostic.tensor([2.0], requires_grad=True)
    with pytest.raises(NotImplementedError, match="igamma: input"):
        agnostic.igamma(a, agnostic.tensor([1.0])).sum().backward()
    with pytest.raises(NotImplementedError, match="heaviside"):
        agnostic.heaviside(a, agnostic.tensor([1.0])).sum().backward()


def test_second_derivative_of_lgamma_is_trigamma():
    x = agnostic.tensor([0.7, 3.0], dtype=agnostic.float64, requires_grad=True)
    (first,) = agnostic.autograd.grad(agnostic.lgamma(x).sum(), x, create_graph=True)
    (second,) = agnostic.autograd.grad(first.sum(), x)
    np.testing.assert_allclose(second.numpy(), sp.polygamma(1, [0.7, 3.0]), rtol=1e-12)


# ----- methods and in-place forms ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, expected", [
    (lambda x: x.lgamma_(), lambda v: sp.gammaln(v)),
    (lambda x: x.digamma_(), lambda v: sp.psi(v)),
    (lambda x: x.polygamma_(1), lambda v: sp.polygamma(1, v)),
    (lambda x: x.mul_(0.5).erfinv_(), lambda v: sp.erfinv(v * 0.5)),
    (lambda x: x.erf_(), lambda v: sp.erf(v)),
    (lambda x: x.erfc_(), lambda v: sp.erfc(v)),
    (lambda x: x.i0_(), lambda v: sp.i0(v)),
    (lambda x: x.sinc_(), lambda v: np.sinc(v)),
    (lambda x: x.mul_(0.4).logit_(), lambda v: sp.logit(v * 0.4)),
    (lambda x: x.logit_(0.3), lambda v: sp.logit(np.clip(v, 0.3, 0.7))),
    (lambda x: x.xlogy_(3.0), lambda v: sp.xlogy(v, 3.0)),
    (lambda x: x.igamma_(2.0), lambda v: sp.gammainc(v, 2.0)),
    (lambda x: x.igammac_(2.0), lambda v: sp.gammaincc(v, 2.0)),
    (lambda x: x.mvlgamma_(2), lambda v: sp.gammaln(v) + sp.gammaln(v - 0.5) + 0.5 * math.log(math.pi)),
])
def test_in_place_forms_write_into_self(device, call, expected):
    values = np.array([0.6, 1.5, 2.0])
    x = agnostic.tensor(values, dtype=agnostic.float64, device=device)
    result = call(x)
    assert result is x
    np.testing.assert_allclose(_values(x), expected(values), rtol=1e-10)


def test_in_place_on_a_tensor_that_needs_grad_records_the_op():
    leaf = agnostic.tensor([0.5, 2.0], dtype=agnostic.float64, requires_grad=True)
    x = leaf * 1
    x.polygamma_(1)
    x.sum().backward()
    np.testing.assert_allclose(leaf.grad.numpy(), sp.polygamma(2, [0.5, 2.0]), rtol=1e-10)


def test_in_place_refuses_integer_tensors():
    with pytest.raises(RuntimeError, match="can't be cast"):
        agnostic.tensor([1, 2]).lgamma_()


def test_tensor_methods_match_the_functions(device):
    x = agnostic.tensor([0.3, 0.5], dtype=agnostic.float64, device=device)
    for name in ("lgamma", "digamma", "erf", "erfc", "erfinv", "i0", "sinc", "logit", "signbit"):
        np.testing.assert_array_equal(_values(getattr(x, name)()), _values(getattr(agnostic, name)(x)))
    np.testing.assert_array_equal(_values(x.polygamma(2)), _values(agnostic.polygamma(2, x)))
    np.testing.assert_array_equal(_values(x.xlogy(x)), _values(agnostic.xlogy(x, x)))
    np.testing.assert_array_equal(_values(x.mvlgamma(1)), _values(agnostic.lgamma(x)))


def test_out_arguments(device):
    x = agnostic.tensor([0.5, 2.0], device=device)
    out = agnostic.empty(2, device=device)
    assert agnostic.lgamma(x, out=out) is out
    np.testing.assert_allclose(_values(out), sp.gammaln([0.5, 2.0]), rtol=1e-6)
    assert special.erfcx(x, out=out) is out
    np.testing.assert_allclose(_values(out), sp.erfcx([0.5, 2.0]), rtol=1e-6)
    assert agnostic.polygamma(1, x, out=out) is out
    np.testing.assert_allclose(_values(out), sp.polygamma(1, [0.5, 2.0]), rtol=1e-6)


# ----- agnostic.special as torch.special ---------------------------------------------------------------------------
def test_special_shares_torch_functions_under_torch_special_names():
    assert special.gammaln is agnostic.lgamma and special.psi is agnostic.digamma
    assert special.expit is agnostic.sigmoid and special.multigammaln is agnostic.mvlgamma
    assert special.gammainc is agnostic.igamma and special.gammaincc is agnostic.igammac
    assert special.erfcx.__module__ == "agnostic.special" and not hasattr(agnostic, "erfcx")
    for name in special.__all__:
        assert callable(getattr(special, name)), name


def test_special_covers_torch_special():
    torch = pytest.importorskip("torch")
    theirs = {name for name in dir(torch.special) if not name.startswith("_")}
    wanted = {"erf", "erfc", "erfcx", "erfinv", "expit", "logit", "gammaln", "digamma", "psi", "polygamma",
              "multigammaln", "i0", "i0e", "i1", "i1e", "ndtr", "ndtri", "log_ndtr", "sinc", "entr", "xlogy",
              "xlog1py", "zeta", "log1p", "expm1", "exp2", "round", "logsumexp", "softmax", "log_softmax",
              "gammainc", "gammaincc"}
    assert wanted <= theirs
    assert wanted <= set(special.__all__)


def test_special_softmax_and_logsumexp_are_agnostics(device):
    x = agnostic.tensor([[0.0, 1.0], [2.0, 2.0]], device=device)
    np.testing.assert_allclose(_values(special.softmax(x, 1)), sp.softmax(_values(x), axis=1), rtol=1e-6)
    np.testing.assert_allclose(_values(special.logsumexp(x, 1)), sp.logsumexp(_values(x), axis=1), rtol=1e-6)


# ----- print options -----------------------------------------------------------------------------------------------
@pytest.fixture
def print_options():
    yield
    set_printoptions(profile="default")


def test_print_options_start_as_pytorchs(print_options):
    assert get_printoptions() == {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
                                  "sci_mode": None}


def test_precision_and_sci_mode_change_how_floats_print(print_options):
    set_printoptions(precision=2)
    assert repr(agnostic.tensor([1.23456, 2.0])) == "tensor([1.23, 2.00])"
    assert repr(agnostic.tensor(2.5)) == "tensor(2.50)"
    assert repr(agnostic.tensor([1e-5, 1.0])) == "tensor([1.00e-05, 1.00e+00])"
    set_printoptions(sci_mode=False)  # precision stays 2
    assert repr(agnostic.tensor([1e-5, 1.0])) == "tensor([0.00, 1.00])"
    assert repr(agnostic.tensor([1e9, 1.0])) == "tensor([1000000000.,          1.])"
    set_printoptions(sci_mode=True)
    assert repr(agnostic.tensor([1.0, 2.0])) == "tensor([1.00e+00, 2.00e+00])"
    set_printoptions(profile="default")  # resets precision; sci_mode back to None
    assert repr(agnostic.tensor([1.5, 1.0])) == "tensor([1.5000, 1.0000])"


def test_threshold_edgeitems_and_profiles_summarize(print_options):
    set_printoptions(threshold=5, edgeitems=2)
    assert repr(agnostic.arange(10.0)) == "tensor([0., 1.,  ..., 8., 9.])"
    set_printoptions(profile="full")
    assert "..." not in repr(agnostic.arange(2000)) and get_printoptions()["threshold"] == math.inf
    set_printoptions(profile="short")
    assert get_printoptions() == {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80,
                                  "sci_mode": None}
    assert repr(agnostic.arange(2000)).startswith("tensor([   0,    1,  ...,")
    with pytest.raises(ValueError, match="profile"):
        set_printoptions(profile="long")


def test_print_options_match_pytorch(print_options):
    torch = pytest.importorskip("torch")
    cases = [dict(precision=2), dict(precision=6), dict(sci_mode=True), dict(threshold=4, edgeitems=1),
             dict(profile="short")]
    values = [[1.23456, 2.0, -3.5], [1e-5, 1.0], [3.0, 4.0], list(range(8)), [0.1 * i for i in range(12)]]
    try:
        for options in cases:
            set_printoptions(profile="default")
            torch.set_printoptions(profile="default")
            set_printoptions(**options)
            torch.set_printoptions(**options)
            for value in values:
                ours = repr(agnostic.tensor(value)).replace("agnostic.", "torch.")
                assert ours == repr(torch.tensor(value)), options
    finally:
        torch.set_printoptions(profile="default")


def test_long_suffixes_start_a_new_line_where_pytorchs_do(print_options):
    torch = pytest.importorskip("torch")
    cases = [lambda m: m.tensor([float("nan"), float("inf"), -float("inf"), 1.0], dtype=m.float16),
             lambda m: m.arange(30, dtype=m.int32), lambda m: m.zeros(2, 3, dtype=m.float64, requires_grad=True),
             lambda m: m.tensor([123456.5, 1.0, 2.0, 3.0, 4.0, 5.0], dtype=m.float64)]
    for make in cases:
        assert repr(make(agnostic)).replace("agnostic.", "torch.") == repr(make(torch))


def test_integer_operands_are_refused_where_pytorch_refuses_them(device):
    x = agnostic.tensor([1, 2], device=device)
    for function in (agnostic.igamma, agnostic.igammac, agnostic.hypot):
        with pytest.raises(NotImplementedError):
            function(x, x)
    with pytest.raises(NotImplementedError, match="lerp"):
        agnostic.lerp(x, x, 0.5)
    with pytest.raises(RuntimeError, match="boolean"):
        agnostic.mvlgamma(agnostic.tensor([True], device=device), 1)
    assert agnostic.igamma(x, 2.5).dtype is agnostic.float32  # a float operand promotes first, as in PyTorch
