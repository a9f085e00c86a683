"""Activation functions, as torch.nn.functional: the ReLU family, ELU family, smooth and hard sigmoids, shrinkages,
GLU, PReLU and the softmax family, written with agnostic ops so autograd differentiates them."""

import math
import warnings

import agnostic

from ... import _autocast
from ..._tensor import wrap
from ...autograd import Function
from ...ops.activations import hardshrink, prelu  # noqa: F401  (the ops themselves, Tensor methods too)


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


@_autocast.policy
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


@_autocast.policy
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed stably.

        >>> import agnostic.nn.functional as F
        >>> F.log_softmax(agnostic.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return agnostic.log_softmax(input, dim, dtype=dtype)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _require_floating(input, name):
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"{name} is not implemented for {input.dtype} tensors; convert the input with "
                                  ".float() first.")


def _in_place(input, function, *arguments):
    """``input`` overwritten with ``function(input, *arguments)``. While autograd records, the function reads a copy:
    the tensors its backward saved must not be the ones overwritten (PyTorch's in-place forms save their result)."""
    source = input.clone() if input.requires_grad and agnostic.is_grad_enabled() else input
    return input.copy_(function(source, *arguments))


def _apply(function, input, inplace, *arguments):
    return _in_place(input, function, *arguments) if inplace else function(input, *arguments)


def _not_positive(input):
    """``min(x, 0)``: the input of an exponential branch, finite where that branch is not taken, so its (masked)
    gradient there is 0 rather than 0 * inf = nan."""
    return agnostic.clamp(input, max=0)


def _threshold(input, threshold, value):
    if not input.dtype.is_floating_point:
        value = int(value)
    return agnostic.where(agnostic.gt(input, threshold), input, value)


def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, else ``value``.

        >>> import agnostic.nn.functional as F
        >>> F.threshold(agnostic.tensor([-1.0, 0.5, 2.0]), 1.0, 20.0)
        tensor([20., 20.,  2.])
    """
    return _apply(_threshold, input, inplace, threshold, value)


def threshold_(input, threshold, value):
    """In-place ``threshold``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-1.0, 2.0])
        >>> F.threshold_(x, 0.0, -5.0) is x, x
        (True, tensor([-5.,  2.]))
    """
    return _in_place(input, _threshold, threshold, value)


def _hardtanh(input, min_val, max_val):
    # Not clamp: PyTorch's gradient is 0 at the bounds themselves, clamp's is 1 there.
    return agnostic.where(agnostic.le(input, min_val), min_val,
                          agnostic.where(agnostic.ge(input, max_val), max_val, input))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """``x`` clamped to ``[min_val, max_val]`` (gradient 0 at the bounds, as PyTorch).

        >>> import agnostic.nn.functional as F
        >>> F.hardtanh(agnostic.tensor([-2.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(_hardtanh, input, inplace, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place ``hardtanh``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-2.0, 0.5])
        >>> F.hardtanh_(x) is x, x
        (True, tensor([-1.0000,  0.5000]))
    """
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """``min(max(x, 0), 6)``: ``hardtanh(x, 0, 6)``.

        >>> import agnostic.nn.functional as F
        >>> F.relu6(agnostic.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky_relu(input, negative_slope):
    _require_floating(input, "leaky_relu")
    return agnostic.where(agnostic.gt(input, 0), input, agnostic.mul(input, negative_slope))


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``x`` where ``x > 0``, else ``negative_slope * x``.

        >>> import agnostic.nn.functional as F
        >>> F.leaky_relu(agnostic.tensor([-2.0, 0.0, 3.0]), 0.1)
        tensor([-0.2000,  0.0000,  3.0000])
    """
    return _apply(_leaky_relu, input, inplace, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    """In-place ``leaky_relu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-2.0, 3.0])
        >>> F.leaky_relu_(x, 0.5) is x, x
        (True, tensor([-1.,  3.]))
    """
    return _in_place(input, _leaky_relu, negative_slope)


def _exponential_linear(input, alpha, scale, input_scale, name):
    """PyTorch's ELU kernel: ``scale * x`` where ``x > 0``, else ``alpha * scale * (exp(input_scale * x) - 1)``."""
    _require_floating(input, name)
    negative = agnostic.expm1(agnostic.mul(_not_positive(input), input_scale) if input_scale != 1.0
                              else _not_positive(input))
    positive = agnostic.mul(input, scale) if scale != 1.0 else input
    return agnostic.where(agnostic.gt(input, 0), positive, agnostic.mul(negative, alpha * scale))


def _elu(input, alpha):
    return _exponential_linear(input, alpha, 1.0, 1.0, "elu")


def elu(input, alpha=1.0, inplace=False):
    """ELU: ``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

        >>> import agnostic.nn.functional as F
        >>> F.elu(agnostic.tensor([-2.0, 0.0, 3.0]))
        tensor([-0.8647,  0.0000,  3.0000])
    """
    return _apply(_elu, input, inplace, alpha)


def elu_(input, alpha=1.0):
    """In-place ``elu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-2.0, 3.0])
        >>> F.elu_(x) is x, x
        (True, tensor([-0.8647,  3.0000]))
    """
    return _in_place(input, _elu, alpha)


def _selu(input):
    return _exponential_linear(input, _SELU_ALPHA, _SELU_SCALE, 1.0, "selu")


def selu(input, inplace=False):
    """SELU: ``scale * elu(x, alpha)`` with PyTorch's constants (alpha 1.6733, scale 1.0507).

        >>> import agnostic.nn.functional as F
        >>> F.selu(agnostic.tensor([-2.0, 0.0, 1.0]))
        tensor([-1.5202,  0.0000,  1.0507])
    """
    return _apply(_selu, input, inplace)


def selu_(input):
    """In-place ``selu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-2.0, 1.0])
        >>> F.selu_(x) is x, x
        (True, tensor([-1.5202,  1.0507]))
    """
    return _in_place(input, _selu)


def _celu(input, alpha):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU; use a nonzero alpha.")
    return _exponential_linear(input, alpha, 1.0, 1.0 / alpha, "celu")


def celu(input, alpha=1.0, inplace=False):
    """CELU: ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

        >>> import agnostic.nn.functional as F
        >>> F.celu(agnostic.tensor([-2.0, 0.0, 3.0]), alpha=2.0)
        tensor([-1.2642,  0.0000,  3.0000])
    """
    return _apply(_celu, input, inplace, alpha)


def celu_(input, alpha=1.0):
    """In-place ``celu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-2.0, 3.0])
        >>> F.celu_(x) is x, x
        (True, tensor([-0.8647,  3.0000]))
    """
    return _in_place(input, _celu, alpha)


def _silu(input):
    return agnostic.mul(input, agnostic.sigmoid(input))


def silu(input, inplace=False):
    """SiLU (swish): ``x * sigmoid(x)``.

        >>> import agnostic.nn.functional as F
        >>> F.silu(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """
    return _apply(_silu, input, inplace)


@_autocast.policy
def softplus(input, beta=1.0, threshold=20.0):
    """``log(1 + exp(beta * x)) / beta``, and ``x`` itself where ``beta * x > threshold`` (for stability).

        >>> import agnostic.nn.functional as F
        >>> F.softplus(agnostic.tensor([-1.0, 0.0, 30.0]))
        tensor([ 0.3133,  0.6931, 30.0000])
        >>> F.softplus(agnostic.tensor([-1.0, 0.0, 1.0]), beta=2.0)
        tensor([0.0635, 0.3466, 1.0635])
    """
    _require_floating(input, "softplus")
    if input.dtype in (agnostic.float16, agnostic.bfloat16):
        # exp overflows half precision from 11.1 on, below the threshold: compute in float32, as PyTorch does.
        return softplus(input.float(), beta, threshold).to(input.dtype)
    scaled = agnostic.mul(input, beta) if beta != 1.0 else input
    linear = agnostic.gt(scaled, threshold)
    # The exponential reads 0 where the linear branch is taken, so its masked gradient there is 0, not 0 * inf.
    smooth = agnostic.log1p(agnostic.exp(agnostic.where(linear, 0.0, scaled)))
    if beta != 1.0:
        smooth = agnostic.div(smooth, beta)
    return agnostic.where(linear, input, smooth)


def _mish(input):
    return agnostic.mul(input, agnostic.tanh(softplus(input)))


def mish(input, inplace=False):
    """Mish: ``x * tanh(softplus(x))``.

        >>> import agnostic.nn.functional as F
        >>> F.mish(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """
    return _apply(_mish, input, inplace)


def _hardswish(input):
    # Branches rather than x * relu6(x + 3) / 6, for PyTorch's gradient: x / 3 + 1/2 on (-3, 3), 0 at -3, 1 at 3.
    _require_floating(input, "hardswish")
    middle = agnostic.div(agnostic.mul(input, agnostic.add(input, 3.0)), 6.0)
    return agnostic.where(agnostic.le(input, -3.0), agnostic.mul(input, 0.0),
                          agnostic.where(agnostic.lt(input, 3.0), middle, input))


def hardswish(input, inplace=False):
    """Hard swish: ``x * relu6(x + 3) / 6``.

        >>> import agnostic.nn.functional as F
        >>> F.hardswish(agnostic.tensor([-4.0, -1.0, 0.0, 1.0, 4.0]))
        tensor([-0.0000, -0.3333,  0.0000,  0.6667,  4.0000])
    """
    return _apply(_hardswish, input, inplace)


def _hardsigmoid(input):
    _require_floating(input, "hardsigmoid")
    return agnostic.where(agnostic.le(input, -3.0), 0.0,
                          agnostic.where(agnostic.ge(input, 3.0), 1.0, agnostic.div(agnostic.add(input, 3.0), 6.0)))


def hardsigmoid(input, inplace=False):
    """Hard sigmoid: ``relu6(x + 3) / 6`` (gradient 1/6 strictly inside (-3, 3), else 0).

        >>> import agnostic.nn.functional as F
        >>> F.hardsigmoid(agnostic.tensor([-4.0, 0.0, 1.5, 4.0]))
        tensor([0.0000, 0.5000, 0.7500, 1.0000])
    """
    return _apply(_hardsigmoid, input, inplace)


def softsign(input):
    """``x / (1 + |x|)``.

        >>> import agnostic.nn.functional as F
        >>> F.softsign(agnostic.tensor([-3.0, 0.0, 1.0]))
        tensor([-0.7500,  0.0000,  0.5000])
    """
    return agnostic.div(input, agnostic.add(agnostic.abs(input), 1))


def tanhshrink(input):
    """``x - tanh(x)``.

        >>> import agnostic.nn.functional as F
        >>> F.tanhshrink(agnostic.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.2384,  0.0000,  1.0360])
    """
    return agnostic.sub(input, agnostic.tanh(input))


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

        >>> import agnostic.nn.functional as F
        >>> F.softshrink(agnostic.tensor([-2.0, 0.25, 1.0]))
        tensor([-1.5000,  0.0000,  0.5000])
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be in range [0, inf) for softshrink, but found {lambd}; pass lambd >= 0.")
    # x * 0 rather than 0 in the middle: NaN stays NaN, as in PyTorch.
    return agnostic.where(agnostic.gt(input, lambd), agnostic.sub(input, lambd),
                          agnostic.where(agnostic.lt(input, -lambd), agnostic.add(input, lambd),
                                         agnostic.mul(input, 0.0)))


@_autocast.policy
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """``softmax(-x)`` along ``dim`` (computed in ``dtype`` when given).

        >>> import agnostic.nn.functional as F
        >>> F.softmin(agnostic.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    return agnostic.softmax(agnostic.neg(input), dim, dtype=dtype)


def glu(input, dim=-1):
    """Gated linear unit: ``a * sigmoid(b)``, where ``a`` and ``b`` are the two halves of ``input`` along ``dim``.

        >>> import agnostic.nn.functional as F
        >>> F.glu(agnostic.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    position = dim + input.dim() if dim < 0 else dim
    if not 0 <= position < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    size = input.shape[position]
    if size % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {position} is size {size}")
    first, second = agnostic.narrow(input, position, 0, size // 2), agnostic.narrow(input, position, size // 2,
                                                                                     size // 2)
    return agnostic.mul(first, agnostic.sigmoid(second))


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: in training, negative inputs are scaled by slopes drawn from U(lower, upper);
    otherwise ``leaky_relu(x, (lower + upper) / 2)``.

        >>> import agnostic.nn.functional as F
        >>> F.rrelu(agnostic.tensor([-3.0, 2.0]), 0.25, 0.75)
        tensor([-1.5000,  2.0000])
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2.0, inplace)
    return _apply(_random_slopes, input, inplace, lower, upper)


def _random_slopes(input, lower, upper):
    _require_floating(input, "rrelu")
    slopes = agnostic.add(agnostic.mul(agnostic.rand_like(input), upper - lower), lower)
    return agnostic.where(agnostic.ge(input, 0), input, agnostic.mul(input, slopes))


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place ``rrelu``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([-3.0, 2.0])
        >>> F.rrelu_(x, 0.25, 0.75) is x, x
        (True, tensor([-1.5000,  2.0000]))
    """
    return rrelu(input, lower, upper, training, inplace=True)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with Gumbel(0, 1) noise ``g``;
    ``hard`` returns the one-hot of its largest entry, with the soft sample's gradient (straight-through).

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.gumbel_softmax(agnostic.tensor([[0.0, 100.0, 0.0]]), hard=True)
        tensor([[0., 1., 0.]])
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # -log(Exponential(1)) is Gumbel(0, 1); 1 - U keeps the exponential finite (U in [0, 1)).
    exponential = agnostic.neg(agnostic.log1p(agnostic.neg(agnostic.rand_like(logits))))
    gumbels = agnostic.div(agnostic.sub(logits, agnostic.log(exponential)), tau)
    soft = agnostic.softmax(gumbels, dim)
    if not hard:
        return soft
    index = agnostic.argmax(soft, dim, keepdim=True)
    one_hot = agnostic.scatter(agnostic.zeros_like(logits), dim, index, value=1.0)
    return agnostic.add(agnostic.sub(one_hot, soft.detach()), soft)


__all__ = ["celu", "celu_", "elu", "elu_", "erf", "gelu", "glu", "gumbel_softmax", "hardshrink", "hardsigmoid",
           "hardswish", "hardtanh", "hardtanh_", "leaky_relu", "leaky_relu_", "log_softmax", "logsigmoid", "mish",
           "prelu", "relu", "relu6", "relu_", "rrelu", "rrelu_", "selu", "selu_", "sigmoid", "silu", "softmax",
           "softmin", "softplus", "softshrink", "softsign", "tanh", "tanhshrink", "threshold", "threshold_"]
