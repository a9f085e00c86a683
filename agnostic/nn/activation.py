"""Activation layers: ReLU, GELU, Tanh, Sigmoid, Softmax, LogSoftmax."""

from . import functional as F
from .module import Module


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
