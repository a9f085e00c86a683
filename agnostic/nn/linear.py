"""Linear (``y = x W^T + b``), Bilinear (``y = x1^T A x2 + b``) and Identity layers."""

import math

from .. import ops
from . import functional as F, init
from .module import Module
from .parameter import Parameter


def _empty(*size, device=None, dtype=None):
    return ops.creation.empty(*size, device=device, dtype=dtype)


class Identity(Module):
    """Returns its input unchanged (any constructor arguments are ignored).

        >>> agnostic.nn.Identity(54, unused="ignored")(agnostic.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x W^T + b`` with ``weight`` (out_features, in_features) and ``bias`` (out_features), initialized as
    PyTorch: ``kaiming_uniform_(a=sqrt(5))`` (so U(-1/sqrt(in), 1/sqrt(in))) and bias U(-1/sqrt(in), 1/sqrt(in)).

        >>> _ = agnostic.manual_seed(0)
        >>> layer = agnostic.nn.Linear(3, 2)
        >>> layer
        Linear(in_features=3, out_features=2, bias=True)
        >>> layer.weight.shape, layer.bias.shape
        (agnostic.Size([2, 3]), agnostic.Size([2]))
        >>> layer(agnostic.ones(5, 3)).shape
        agnostic.Size([5, 2])
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw the weights and bias with the default initialization."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``weight`` (out_features, in1_features, in2_features) and ``bias``
    (out_features), both initialized U(-1/sqrt(in1_features), 1/sqrt(in1_features)) as PyTorch.

        >>> _ = agnostic.manual_seed(0)
        >>> layer = agnostic.nn.Bilinear(3, 4, 2)
        >>> layer
        Bilinear(in1_features=3, in2_features=4, out_features=2, bias=True)
        >>> layer(agnostic.ones(5, 3), agnostic.ones(5, 4)).shape
        agnostic.Size([5, 2])
    """

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(_empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Re-draw the weight and bias from U(-1/sqrt(in1_features), 1/sqrt(in1_features))."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["Bilinear", "Identity", "Linear"]
