"""agnostic.special: special functions (erf, erfinv, gammaln, digamma, polygamma, expit, logit, xlogy, i0...), as
torch.special, with gradients, on every device.

The functions ``torch.special`` shares with ``torch`` (``special.erf`` is ``torch.erf``, ``special.gammaln`` is
``torch.lgamma``) are agnostic's own; the others are declared in ``agnostic.ops.elementwise`` (``SPECIAL``) and made
public here."""

from .ops._registry import Composite, public_names
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

# torch.special's names for functions of torch itself.
expit, gammaln, psi, multigammaln, gammainc, gammaincc = sigmoid, lgamma, digamma, mvlgamma, igamma, igammac
_SHARED = ["digamma", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0",
           "log1p", "log_softmax", "logit", "logsumexp", "multigammaln", "polygamma", "psi", "round", "sinc",
           "softmax", "xlogy"]

__all__ = sorted(public_names(globals()) + _SHARED)
