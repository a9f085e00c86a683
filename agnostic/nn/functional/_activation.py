"""Activation functions: relu, gelu (with an exact erf), tanh, sigmoid, logsigmoid, softmax, log_softmax."""

import math
import warnings

import agnostic

from ... import _backend
from ..._tensor import wrap
from ...autograd import Function
from .. import _erf


class _Erf(Function):
    """erf, differentiable: d/dx erf(x) = 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, input):
        if not input.dtype.is_floating_point:
            input = input.to(agnostic.get_default_dtype())
        ctx.save_for_backward(input)
        xp = _backend.namespace(input.device)
        with _backend.on(input.device):
            return wrap(_erf.erf(xp, input._data), input.device)

    @staticmethod
    def backward(ctx, grad):
        input, = ctx.saved_tensors
        return grad * (2.0 / math.sqrt(math.pi)) * agnostic.exp(-input * input)


def erf(input):
    """The error function, elementwise (accurate to float64 precision on every device)."""
    return _Erf.apply(input)


class _LogSigmoid(Function):
    """log(sigmoid(x)), stable for large |x|, with the smooth derivative sigmoid(-x) (also at x = 0)."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return agnostic.minimum(input, 0) - agnostic.log1p(agnostic.exp(-agnostic.abs(input)))

    @staticmethod
    def backward(ctx, grad):
        input, = ctx.saved_tensors
        return grad * agnostic.sigmoid(-input)


def logsigmoid(input):
    """``log(1 / (1 + exp(-x)))``, elementwise and stable."""
    return _LogSigmoid.apply(input)


def relu(input, inplace=False):
    """``max(x, 0)`` elementwise (gradient 0 at 0, as PyTorch)."""
    return input.relu_() if inplace else agnostic.relu(input)


def relu_(input):
    """In-place ``relu``."""
    return input.relu_()


def gelu(input, approximate="none"):
    """GELU: ``x * Phi(x)`` with the exact normal CDF (``approximate='none'``) or PyTorch's tanh approximation."""
    if approximate == "none":
        return input * 0.5 * (1.0 + erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + agnostic.tanh(inner))
    raise RuntimeError("approximate argument must be either none or tanh.")


def tanh(input):
    """Hyperbolic tangent, elementwise."""
    return agnostic.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))``, elementwise."""
    return agnostic.sigmoid(input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given)."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return agnostic.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return agnostic.log_softmax(input, dim, dtype=dtype)
