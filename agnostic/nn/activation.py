"""Activation layers, as torch.nn: each holds its arguments and calls its agnostic.nn.functional form."""

import warnings

from .. import ops
from . import functional as F, init as initializers
from .module import Module
from .parameter import Parameter


class ReLU(Module):
    """``max(x, 0)`` elementwise (in place with ``inplace=True``).

        >>> agnostic.nn.ReLU()(agnostic.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """``x * Phi(x)``: exact (``approximate='none'``, via erf) or the tanh approximation.

        >>> agnostic.nn.GELU()(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
        >>> agnostic.nn.GELU(approximate="tanh")(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1588,  0.0000,  0.8412])
    """

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """Hyperbolic tangent, elementwise.

        >>> agnostic.nn.Tanh()(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7616,  0.0000,  0.7616])
    """

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``, elementwise.

        >>> agnostic.nn.Sigmoid()(agnostic.tensor([-1.0, 0.0, 1.0]))
        tensor([0.2689, 0.5000, 0.7311])
    """

    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax along ``dim`` (PyTorch's legacy implicit choice when None).

        >>> agnostic.nn.Softmax(dim=1)(agnostic.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably.

        >>> agnostic.nn.LogSoftmax(dim=0)(agnostic.tensor([1.0, 2.0, 3.0]))
        tensor([-2.4076, -1.4076, -0.4076])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


def _inplace_suffix(inplace):
    return ", inplace=True" if inplace else ""


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``.

        >>> agnostic.nn.Threshold(0.5, -1.0)(agnostic.tensor([0.0, 1.0]))
        tensor([-1.,  1.])
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``.

        >>> agnostic.nn.Hardtanh(-2.0, 2.0)
        Hardtanh(min_val=-2.0, max_val=2.0)
        >>> agnostic.nn.Hardtanh()(agnostic.tensor([-3.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`", FutureWarning,
                          stacklevel=2)
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`", FutureWarning,
                          stacklevel=2)
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if self.max_val <= self.min_val:
            raise AssertionError(f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_suffix(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``.

        >>> agnostic.nn.ReLU6()(agnostic.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """``x`` where ``x > 0``, else ``negative_slope * x``.

        >>> agnostic.nn.LeakyReLU(0.1)
        LeakyReLU(negative_slope=0.1)
        >>> agnostic.nn.LeakyReLU(0.1)(agnostic.tensor([-2.0, 3.0]))
        tensor([-0.2000,  3.0000])
    """

    def __init__(self, negative_slope=1e-2, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}{_inplace_suffix(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) in training, their mean in evaluation.

        >>> agnostic.nn.RReLU(0.25, 0.75).eval()(agnostic.tensor([-3.0, 2.0]))
        tensor([-1.5000,  2.0000])
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"


class ELU(Module):
    """``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``.

        >>> agnostic.nn.ELU(alpha=0.5)
        ELU(alpha=0.5)
        >>> agnostic.nn.ELU()(agnostic.tensor([-2.0, 3.0]))
        tensor([-0.8647,  3.0000])
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

        >>> agnostic.nn.CELU(2.0)(agnostic.tensor([-2.0, 3.0]))
        tensor([-1.2642,  3.0000])
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class _InplaceActivation(Module):
    """An activation whose only argument is ``inplace``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class SELU(_InplaceActivation):
    """``scale * elu(x, alpha)`` with alpha 1.6733 and scale 1.0507.

        >>> agnostic.nn.SELU()(agnostic.tensor([-2.0, 1.0]))
        tensor([-1.5202,  1.0507])
    """

    def forward(self, input):
        return F.selu(input, self.inplace)


class SiLU(_InplaceActivation):
    """``x * sigmoid(x)``.

        >>> agnostic.nn.SiLU()(agnostic.tensor([-1.0, 1.0]))
        tensor([-0.2689,  0.7311])
    """

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)


class Mish(_InplaceActivation):
    """``x * tanh(softplus(x))``.

        >>> agnostic.nn.Mish()(agnostic.tensor([-1.0, 1.0]))
        tensor([-0.3034,  0.8651])
    """

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)


class Hardswish(_InplaceActivation):
    """``x * relu6(x + 3) / 6``.

        >>> agnostic.nn.Hardswish()(agnostic.tensor([-1.0, 1.0]))
        tensor([-0.3333,  0.6667])
    """

    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):
        return ""


class Hardsigmoid(_InplaceActivation):
    """``relu6(x + 3) / 6``.

        >>> agnostic.nn.Hardsigmoid()(agnostic.tensor([-4.0, 1.5]))
        tensor([0.0000, 0.7500])
    """

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):
        return ""


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``.

        >>> agnostic.nn.Softplus()
        Softplus(beta=1.0, threshold=20.0)
        >>> agnostic.nn.Softplus()(agnostic.tensor([0.0, 30.0]))
        tensor([ 0.6931, 30.0000])
    """

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class LogSigmoid(Module):
    """``log(sigmoid(x))``, stable for large ``|x|``.

        >>> agnostic.nn.LogSigmoid()(agnostic.tensor([-100.0, 0.0]))
        tensor([-100.0000,   -0.6931])
    """

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """``x / (1 + |x|)``.

        >>> agnostic.nn.Softsign()(agnostic.tensor([-3.0, 1.0]))
        tensor([-0.7500,  0.5000])
    """

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``.

        >>> agnostic.nn.Tanhshrink()(agnostic.tensor([0.0, 2.0]))
        tensor([0.0000, 1.0360])
    """

    def forward(self, input):
        return F.tanhshrink(input)


class Softshrink(Module):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

        >>> agnostic.nn.Softshrink(1.0)
        Softshrink(1.0)
        >>> agnostic.nn.Softshrink()(agnostic.tensor([-2.0, 0.25]))
        tensor([-1.5000,  0.0000])
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

        >>> agnostic.nn.Hardshrink()(agnostic.tensor([-2.0, 0.25]))
        tensor([-2.,  0.])
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softmin(Module):
    """``softmax(-x)`` along ``dim``.

        >>> agnostic.nn.Softmin(dim=0)(agnostic.tensor([1.0, 2.0, 3.0]))
        tensor([0.6652, 0.2447, 0.0900])
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dimension -3) of a (C, H, W) or (N, C, H, W) input.

        >>> agnostic.nn.Softmax2d()(agnostic.zeros(1, 2, 1, 1)).flatten()
        tensor([0.5000, 0.5000])
    """

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class GLU(Module):
    """``a * sigmoid(b)`` for the two halves ``a``, ``b`` of the input along ``dim``.

        >>> agnostic.nn.GLU()(agnostic.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """``x`` where ``x > 0``, else ``weight * x``, with a learnable ``weight`` of ``num_parameters`` elements (1, or
    the number of channels), initialized to ``init``.

        >>> layer = agnostic.nn.PReLU()
        >>> layer
        PReLU(num_parameters=1)
        >>> layer.weight
        Parameter containing:
        tensor([0.2500], requires_grad=True)
        >>> layer(agnostic.tensor([-4.0, 2.0]))
        tensor([-1.,  2.], grad_fn=<...>)
    """

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(ops.creation.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Set every slope back to ``init``."""
        initializers.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


__all__ = ["CELU", "ELU", "GELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU", "SiLU", "Sigmoid", "Softmax",
           "Softmax2d", "Softmin", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold"]
