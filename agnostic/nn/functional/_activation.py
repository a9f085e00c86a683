"""Activation functions: relu, gelu (with an exact erf), tanh, sigmoid, logsigmoid, softmax, log_softmax."""

import math
import warnings

import agnostic

from ..._tensor import wrap
from ...autograd import Function


class _Erf(Function):
    """erf, differentiable: d/dx erf(x) = 2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, input):
        if not input.dtype.is_floating_point:
            input = input.to(agnostic.get_default_dtype())
        ctx.save_for_backward(input)
        backend = input.device.backend
        with backend.activate():
            return wrap(backend.ops.erf(input._data), input.device)

    @staticmethod
    def backward(ctx, grad):
        input, = ctx.saved_tensors
        return grad * (2.0 / math.sqrt(math.pi)) * agnostic.exp(-input * input)


def erf(input):
    """The error function, elementwise (accurate to float64 precision on every device).

        >>> import agnostic.nn.functional as F
        >>> F.erf(agnostic.tensor([0.0, 0.5, -2.0]))
        tensor([ 0.0000,  0.5205, -0.9953])
    """
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
    """``log(1 / (1 + exp(-x)))``, elementwise and stable.

        >>> import agnostic.nn.functional as F
        >>> F.logsigmoid(agnostic.tensor([-100.0, 0.0, 2.0]))
        tensor([-100.0000,   -0.6931,   -0.1269])
    """
    return _LogSigmoid.apply(input)


def relu(input, inplace=False):
    """``max(x, 0)`` elementwise (gradient 0 at 0, as PyTorch).

        >>> import agnostic.nn.functional as F
        >>> F.relu(agnostic.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """
    return input.relu_() if inplace else agnostic.relu(input)


def relu_(input):
    """In-place ``relu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-1.0, 3.0])
        >>> F.relu_(x) is x, x
        (True, tensor([0., 3.]))
    """
    return input.relu_()


def gelu(input, approximate="none"):
    """GELU: ``x * Phi(x)`` with the exact normal CDF (``approximate='none'``) or PyTorch's tanh approximation.

        >>> import agnostic.nn.functional as F
        >>> F.gelu(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
        >>> F.gelu(agnostic.tensor([-1.0, 0.0, 1.0]), approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412])
    """
    if approximate == "none":
        return input * 0.5 * (1.0 + erf(input * (1.0 / math.sqrt(2.0))))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + agnostic.tanh(inner))
    raise RuntimeError("approximate argument must be either none or tanh.")


def tanh(input):
    """Hyperbolic tangent, elementwise.

        >>> import agnostic.nn.functional as F
        >>> F.tanh(agnostic.tensor([-1.0, 0.0, 20.0]))
        tensor([-0.7616,  0.0000,  1.0000])
    """
    return agnostic.tanh(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))``, elementwise.

        >>> import agnostic.nn.functional as F
        >>> F.sigmoid(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([0.2689, 0.5000, 0.7311])
    """
    return agnostic.sigmoid(input)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim`` (computed in ``dtype`` when given).

        >>> import agnostic.nn.functional as F
        >>> F.softmax(agnostic.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]), dim=1)
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]])
        >>> F.softmax(agnostic.tensor([1000.0, 1000.0]), dim=0)
        tensor([0.5000, 0.5000])
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return agnostic.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed stably.

        >>> import agnostic.nn.functional as F
        >>> F.log_softmax(agnostic.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return agnostic.log_softmax(input, dim, dtype=dtype)
