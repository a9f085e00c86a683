"""agnostic.special: special functions (erf, erfinv, gammaln, digamma, polygamma, expit, logit, xlogy, i0...), as
torch.special, with gradients, on every device.

The functions ``torch.special`` shares with ``torch`` (``special.erf`` is ``torch.erf``, ``special.gammaln`` is
``torch.lgamma``) are agnostic's own; the others are declared in ``agnostic.ops.elementwise`` (``SPECIAL``) and made
public here. The Bessel and Airy functions and the orthogonal polynomials (``bessel_j0``, ``airy_ai``,
``chebyshev_polynomial_t``...) are declared here, computed by PyTorch's own formulas (``_backends.special``) on every
device, for float32 and float64 (integers give the default dtype), without gradients, as in PyTorch."""

import numpy

from . import _dtypes
from ._backends import special as _formulas
from .ops._dispatch import Result
from .ops._registry import Composite, Elementwise, public_names
from .ops.elementwise import (
    SPECIAL, digamma, erf, erfc, erfinv, exp2, expm1, i0, igamma, igammac, lgamma, log1p, log_softmax, logit,
    mvlgamma, polygamma, round, sigmoid, sinc, softmax, xlogy,
)
from .ops.reduction import logsumexp


def _public(op):
    """``agnostic.special.<name>``: the elementwise op ``op`` with its own signature (``out=`` included)."""
    forward = _unary_forward(op) if op.arity == 1 else _binary_forward(op)
    forward.__name__ = forward.__qualname__ = op.name
    forward.__doc__ = op.doc
    return Composite(forward, namespace=__name__, method=False).function


def _unary_forward(op):
    def forward(input, *, out=None):
        return op.function(input, out=out)
    return forward


def _binary_forward(op):
    def forward(input, other, *, out=None):
        return op.function(input, other, out=out)
    return forward


erfcx = _public(SPECIAL["erfcx"])
i0e = _public(SPECIAL["i0e"])
i1 = _public(SPECIAL["i1"])
i1e = _public(SPECIAL["i1e"])
ndtr = _public(SPECIAL["ndtr"])
ndtri = _public(SPECIAL["ndtri"])
log_ndtr = _public(SPECIAL["log_ndtr"])
entr = _public(SPECIAL["entr"])
xlog1py = _public(SPECIAL["xlog1py"])
zeta = _public(SPECIAL["zeta"])


def _single_or_double(name, dtype):
    """PyTorch computes these for float32 and float64 alone (integers are promoted to the default dtype first)."""
    if dtype.is_floating_point and dtype not in (_dtypes.float32, _dtypes.float64) or dtype.is_complex:
        raise NotImplementedError(f'"{name}" not implemented for {dtype}; convert the input with .float() or '
                                  ".double()")


def _elementwise(name, arity, formula, example, expected, summary):
    """``agnostic.special.<name>``: the elementwise op computing ``formula(xp, *arrays)`` (no gradient)."""
    if arity == 1:
        def unary(xp, x):
            with numpy.errstate(all="ignore"):
                return formula(xp, x).astype(x.dtype, copy=False)
        implementation = unary
        call = f"agnostic.special.{name}(agnostic.tensor({example}))"
    else:
        def binary(xp, x, n):
            x, n = (array.copy() for array in xp.broadcast_arrays(xp.asarray(x), xp.asarray(n)))  # C order
            with numpy.errstate(all="ignore"):
                return formula(xp, x, n).astype(x.dtype, copy=False)
        implementation = binary
        call = f"agnostic.special.{name}(agnostic.tensor({example[0]}), {example[1]})"
    doc = f"""\
{summary} (``torch.special.{name}``); no gradient.

    >>> {call}
    tensor({expected})
"""
    op = Elementwise(name, arity, Result.FLOAT, implementation, check=_single_or_double, public=False, doc=doc)
    return _public(op)


def _function(name, example, expected, summary):
    return _elementwise(name, 1, getattr(_formulas, name), example, expected, summary)


def _polynomial(name, example, expected, summary):
    return _elementwise(name, 2, getattr(_formulas, name), example, expected,
                        summary + "; ``n`` (a tensor or a number) is truncated to an integer, and a negative one "
                        "gives 0")


bessel_j0 = _function("bessel_j0", "[0.0, 1.0, 10.0]", "[ 1.0000,  0.7652, -0.2459]",
                      "The Bessel function of the first kind of order 0")
bessel_j1 = _function("bessel_j1", "[0.0, 1.0, -2.0]", "[ 0.0000,  0.4401, -0.5767]",
                      "The Bessel function of the first kind of order 1")
bessel_y0 = _function("bessel_y0", "[0.0, 1.0, 10.0]", "[   -inf, 0.0883, 0.0557]",
                      "The Bessel function of the second kind of order 0: -inf at 0, NaN below")
bessel_y1 = _function("bessel_y1", "[1.0, 10.0, -1.0]", "[-0.7812,  0.2490,     nan]",
                      "The Bessel function of the second kind of order 1: -inf at 0, NaN below")
modified_bessel_i0 = _function("modified_bessel_i0", "[0.0, 1.0, -2.0]", "[1.0000, 1.2661, 2.2796]",
                               "The modified Bessel function of the first kind of order 0")
modified_bessel_i1 = _function("modified_bessel_i1", "[0.0, 1.0, -2.0]", "[ 0.0000,  0.5652, -1.5906]",
                               "The modified Bessel function of the first kind of order 1")
modified_bessel_k0 = _function("modified_bessel_k0", "[0.0, 1.0, 2.0]", "[   inf, 0.4210, 0.1139]",
                               "The modified Bessel function of the second kind of order 0: inf at 0, NaN below")
modified_bessel_k1 = _function("modified_bessel_k1", "[0.0, 1.0, 2.0]", "[   inf, 0.6019, 0.1399]",
                               "The modified Bessel function of the second kind of order 1: inf at 0, NaN below")
scaled_modified_bessel_k0 = _function("scaled_modified_bessel_k0", "[1.0, 2.0, 100.0]", "[1.1445, 0.8416, 0.1252]",
                                      "``exp(x) * modified_bessel_k0(x)``, finite for large ``x``")
scaled_modified_bessel_k1 = _function("scaled_modified_bessel_k1", "[1.0, 2.0, 100.0]", "[1.6362, 1.0335, 0.1258]",
                                      "``exp(x) * modified_bessel_k1(x)``, finite for large ``x``")
spherical_bessel_j0 = _function("spherical_bessel_j0", "[0.0, 1.0, float('inf')]", "[1.0000, 0.8415, 0.0000]",
                                "The spherical Bessel function of the first kind of order 0, ``sin(x) / x``")
airy_ai = _function("airy_ai", "[0.0, 1.0, -3.0]", "[ 0.3550,  0.1353, -0.3788]",
                    "The Airy function Ai: NaN at +-inf")

chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t", ("[0.5, 2.0]", 3), "[-1., 26.]",
                                     "The Chebyshev polynomial of the first kind T_n(x)")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u", ("[0.5, 2.0]", 3), "[-1., 56.]",
                                     "The Chebyshev polynomial of the second kind U_n(x)")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v", ("[0.5, 2.0]", 3), "[-1., 41.]",
                                     "The Chebyshev polynomial of the third kind V_n(x)")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w", ("[0.5, 2.0]", 3), "[-1., 71.]",
                                     "The Chebyshev polynomial of the fourth kind W_n(x)")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t", ("[0.25, 2.0]", 3), "[ 1., 99.]",
                                             "The shifted Chebyshev polynomial of the first kind T_n(2x - 1)")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u", ("[0.25, 2.0]", 3), "[  1., 204.]",
                                             "The shifted Chebyshev polynomial of the second kind U_n(2x - 1)")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v", ("[0.25, 2.0]", 3), "[  1., 169.]",
                                             "The shifted Chebyshev polynomial of the third kind V_n(2x - 1)")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w", ("[0.25, 2.0]", 3), "[  1., 239.]",
                                             "The shifted Chebyshev polynomial of the fourth kind W_n(2x - 1)")
hermite_polynomial_h = _polynomial("hermite_polynomial_h", ("[0.5, 2.0]", 3), "[-5., 40.]",
                                   "The physicists' Hermite polynomial H_n(x): NaN above degree 128 (float32) or "
                                   "512 (float64)")
hermite_polynomial_he = _polynomial("hermite_polynomial_he", ("[0.5, 2.0]", 3), "[-1.3750,  2.0000]",
                                    "The probabilists' Hermite polynomial He_n(x): NaN above degree 128 (float32) or "
                                    "512 (float64)")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", ("[0.5, 2.0]", 3), "[-0.1458, -0.3333]",
                                    "The Laguerre polynomial L_n(x)")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", ("[0.5, 2.0]", 3), "[-0.4375, 17.0000]",
                                    "The Legendre polynomial P_n(x)")

# torch.special's names for functions of torch itself.
expit, gammaln, psi, multigammaln, gammainc, gammaincc = sigmoid, lgamma, digamma, mvlgamma, igamma, igammac
_SHARED = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0",
           "log1p", "log_softmax", "logit", "logsumexp", "multigammaln", "polygamma", "psi", "round", "sinc",
           "softmax", "xlogy"]

__all__ = sorted(public_names(globals()) + _SHARED)
