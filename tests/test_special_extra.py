"""agnostic.special's Bessel and Airy functions and orthogonal polynomials: SciPy's values in float64, PyTorch's
special cases (0, negative, +-inf, NaN, |x| = 1, negative and non-integer degrees, the Hermite degree limit), dtype
rules (integers give the default dtype, half precision refused) and no gradient."""

import math

import numpy as np
import pytest
import scipy.special as sp

import agnostic

S = agnostic.special

# name -> (SciPy's float64 reference, sample points)
FUNCTIONS = {
    "bessel_j0": (sp.j0, np.linspace(-40, 40, 801)),
    "bessel_j1": (sp.j1, np.linspace(-40, 40, 801)),
    "bessel_y0": (sp.y0, np.linspace(0.01, 40, 800)),
    "bessel_y1": (sp.y1, np.linspace(0.01, 40, 800)),
    "modified_bessel_i0": (sp.i0, np.linspace(-30, 30, 601)),
    "modified_bessel_i1": (sp.i1, np.linspace(-30, 30, 601)),
    "modified_bessel_k0": (sp.k0, np.linspace(0.01, 50, 500)),
    "modified_bessel_k1": (sp.k1, np.linspace(0.01, 50, 500)),
    "scaled_modified_bessel_k0": (sp.k0e, np.linspace(0.01, 500, 500)),
    "scaled_modified_bessel_k1": (sp.k1e, np.linspace(0.01, 500, 500)),
    "spherical_bessel_j0": (lambda x: sp.spherical_jn(0, x), np.linspace(-30, 30, 601)),
    "airy_ai": (lambda x: sp.airy(x)[0], np.linspace(-20, 20, 801)),
}

POLYNOMIALS = {
    "chebyshev_polynomial_t": sp.eval_chebyt,
    "chebyshev_polynomial_u": sp.eval_chebyu,
    "shifted_chebyshev_polynomial_t": sp.eval_sh_chebyt,
    "shifted_chebyshev_polynomial_u": sp.eval_sh_chebyu,
    "hermite_polynomial_h": sp.eval_hermite,
    "hermite_polynomial_he": sp.eval_hermitenorm,
    "laguerre_polynomial_l": sp.eval_laguerre,
    "legendre_polynomial_p": sp.eval_legendre,
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_bessel_and_airy_functions_match_scipy_in_float64(device, name):
    reference, points = FUNCTIONS[name]
    result = getattr(S, name)(agnostic.tensor(points, dtype=agnostic.float64, device=device))
    assert result.dtype == agnostic.float64
    # PyTorch's Bessel J, Y and Airy forms are accurate to about 1e-6 absolute near their zeros (agnostic computes
    # PyTorch's formulas, so it shares that); the others to a few ulps.
    atol = 5e-6 if name.startswith(("bessel", "airy")) else 1e-13
    np.testing.assert_allclose(result.cpu().numpy(), reference(points), rtol=1e-11 if atol < 1e-12 else 1e-4,
                               atol=atol)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_bessel_and_airy_functions_in_float32_are_close_to_float64(device, name):
    _, points = FUNCTIONS[name]
    function = getattr(S, name)
    single = function(agnostic.tensor(points, dtype=agnostic.float32, device=device))
    double = function(agnostic.tensor(points.astype(np.float32).astype(np.float64), device=device))
    assert single.dtype == agnostic.float32
    np.testing.assert_allclose(single.cpu().numpy(), double.cpu().numpy(), rtol=2e-5, atol=2e-6)


def test_bessel_special_values_follow_pytorch(device):
    def at(name, values):
        return getattr(S, name)(agnostic.tensor(values, dtype=agnostic.float64, device=device)).cpu().tolist()
    inf, nan = math.inf, math.nan
    assert at("bessel_j0", [0.0, -0.0]) == [1.0, 1.0]
    assert at("bessel_y0", [0.0])[0] == -inf and math.isnan(at("bessel_y0", [-1.0])[0])
    assert at("bessel_y1", [0.0])[0] == -inf and math.isnan(at("bessel_y1", [-1.0])[0])
    assert at("modified_bessel_k0", [0.0, 1e300]) == [inf, 0.0] and math.isnan(at("modified_bessel_k0", [-2.0])[0])
    assert at("modified_bessel_k1", [0.0])[0] == inf and math.isnan(at("modified_bessel_k1", [-2.0])[0])
    assert at("spherical_bessel_j0", [inf, -inf, 0.0]) == [0.0, 0.0, 1.0]
    ai = at("airy_ai", [inf, -inf, 200.0, nan])
    assert math.isnan(ai[0]) and math.isnan(ai[1]) and ai[2] == 0.0 and math.isnan(ai[3])
    assert at("modified_bessel_i1", [-1.0])[0] == -at("modified_bessel_i1", [1.0])[0]
    assert all(math.isnan(v) for v in at("bessel_j0", [nan]) + at("modified_bessel_i0", [nan]))


@pytest.mark.parametrize("name", sorted(POLYNOMIALS))
def test_polynomials_match_scipy_for_integer_degrees(device, name):
    reference = POLYNOMIALS[name]
    x = np.linspace(-1.5, 1.5, 31) if "shifted" not in name else np.linspace(-0.25, 1.25, 31)
    for degree in (0, 1, 2, 3, 5, 7, 9, 12, 20):
        result = getattr(S, name)(agnostic.tensor(x, device=device), degree)
        expected = reference(degree, x)
        scale = max(1, np.abs(expected).max())
        np.testing.assert_allclose(result.cpu().numpy(), expected, rtol=1e-9, atol=1e-9 * scale)


def test_third_and_fourth_kind_chebyshev_polynomials_by_their_low_degrees(device):
    x = np.linspace(-0.9, 0.9, 7)
    t = agnostic.tensor(x, device=device)
    V = {0: np.ones_like(x), 1: 2 * x - 1, 2: 4 * x * x - 2 * x - 1}
    W = {0: np.ones_like(x), 1: 2 * x + 1, 2: 4 * x * x + 2 * x - 1}
    for n in V:
        np.testing.assert_allclose(S.chebyshev_polynomial_v(t, n).cpu().numpy(), V[n], atol=1e-12)
        np.testing.assert_allclose(S.chebyshev_polynomial_w(t, n).cpu().numpy(), W[n], atol=1e-12)
    # shifted: P*_n(x) = P_n(2x - 1)
    y = (x + 1) / 2
    for kind in "tuvw":
        shifted = getattr(S, f"shifted_chebyshev_polynomial_{kind}")(agnostic.tensor(y, device=device), 11)
        plain = getattr(S, f"chebyshev_polynomial_{kind}")(agnostic.tensor(2 * y - 1, device=device), 11)
        np.testing.assert_allclose(shifted.cpu().numpy(), plain.cpu().numpy(), rtol=1e-9, atol=1e-9)


def test_polynomial_special_cases(device):
    x = agnostic.tensor([1.0, -1.0], dtype=agnostic.float64, device=device)
    assert S.chebyshev_polynomial_t(x, 3).tolist() == [1.0, -1.0]
    assert S.chebyshev_polynomial_u(x, 3).tolist() == [4.0, -4.0]
    assert S.chebyshev_polynomial_v(x, 3).tolist() == [1.0, -7.0]
    assert S.chebyshev_polynomial_w(x, 3).tolist() == [7.0, -1.0]
    assert S.legendre_polynomial_p(x, 3).tolist() == [1.0, -1.0]
    # a negative degree gives 0; a fractional one is truncated; a non-finite one counts as negative
    assert S.chebyshev_polynomial_t(x, -2).tolist() == [0.0, 0.0]
    assert S.hermite_polynomial_h(agnostic.tensor([2.0], device=device), 2.9).tolist() == [14.0]
    assert S.laguerre_polynomial_l(agnostic.tensor([0.0, 2.0], device=device), math.nan).tolist() == [0.0, 0.0]
    assert S.laguerre_polynomial_l(agnostic.tensor([0.0], device=device), 5).tolist() == [1.0]
    # Hermite: NaN above degree 128 in float32, 512 in float64
    assert math.isnan(S.hermite_polynomial_he(agnostic.tensor([0.5], device=device), 129).item())
    assert not math.isnan(S.hermite_polynomial_he(agnostic.tensor([0.5], dtype=agnostic.float64,
                                                                  device=device), 129).item())
    # the closed form for large degrees inside (-1, 1)
    assert S.chebyshev_polynomial_t(agnostic.tensor([0.5], dtype=agnostic.float64, device=device),
                                    10 ** 6).item() == pytest.approx(math.cos(10 ** 6 * math.acos(0.5)), abs=1e-6)
    # overflowing recurrences stop at NaN or inf instead of running to the degree
    big = S.chebyshev_polynomial_t(agnostic.tensor([3.0], device=device), 10 ** 7).item()
    assert math.isnan(big) or math.isinf(big)


def test_degree_tensors_broadcast_and_promote(device):
    x = agnostic.tensor([[0.5], [2.0]], device=device)
    n = agnostic.tensor([0, 1, 2, 3], device=device)
    result = S.chebyshev_polynomial_t(x, n)
    assert result.shape == (2, 4) and result.dtype == agnostic.float32
    np.testing.assert_allclose(result.cpu().numpy(), sp.eval_chebyt(np.arange(4), np.array([[0.5], [2.0]])),
                               rtol=1e-6)
    assert S.legendre_polynomial_p(0.5, agnostic.tensor([2], device=device)).tolist() == [-0.125]
    assert S.chebyshev_polynomial_t(x.double(), n).dtype == agnostic.float64


def test_dtype_rules_and_no_gradient(device):
    assert S.bessel_j0(agnostic.tensor([1, 2], device=device)).dtype == agnostic.get_default_dtype()
    with pytest.raises(NotImplementedError, match="not implemented for"):
        S.bessel_j0(agnostic.tensor([1.0], dtype=agnostic.float16, device=device))
    with pytest.raises(RuntimeError):
        S.airy_ai(agnostic.tensor([1.0 + 1.0j], device=device))
    x = agnostic.tensor([0.5, 1.0], requires_grad=True, device=device)
    assert not S.modified_bessel_k0(x).requires_grad
    assert not S.hermite_polynomial_h(x, 3).requires_grad


def test_values_match_pytorch_over_wide_ranges(device):
    torch = pytest.importorskip("torch", minversion="2.14")  # PyTorch 2.14's special cases are the reference
    points = np.concatenate([np.linspace(-60, 60, 2401), np.geomspace(1e-6, 1e4, 200), -np.geomspace(1e-6, 1e4, 200),
                             [0.0, np.inf, -np.inf, np.nan, 2.09, -2.09, 5.0, 8.0, 2.0, 103.892, 104.0]])
    for name in FUNCTIONS:
        for dtype, rtol, atol in ((np.float64, 1e-12, 1e-300), (np.float32, 1e-5, 1e-6)):
            ours = getattr(S, name)(agnostic.tensor(points.astype(dtype), device=device)).cpu().numpy()
            theirs = getattr(torch.special, name)(torch.tensor(points.astype(dtype))).numpy()
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True, err_msg=name)
    x = np.array([-3, -1.5, -1, -0.999, -0.5, 0, 0.25, 0.5, 0.999, 1, 1.5, 3, np.inf, -np.inf, np.nan])
    n = np.array([-3, 0, 1, 2, 3, 6, 7, 9, 10, 20, 100, 200, 600, 2.5, np.nan, np.inf])
    X, N = (grid.ravel() for grid in np.meshgrid(x, n))
    names = [name for name in dir(torch.special) if "_polynomial_" in name]
    assert len(names) == 12
    for name in names:
        ours = getattr(S, name)(agnostic.tensor(X, device=device), agnostic.tensor(N, device=device)).cpu().numpy()
        theirs = getattr(torch.special, name)(torch.tensor(X), torch.tensor(N)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=name)
