"""Fractional max pooling (FractionalMaxPool2d/3d) and CrossMapLRN2d, as torch.nn's."""

import agnostic

from ..autograd import Function
from . import functional as F
from .module import Module


def _tuple(value, dims):
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * dims


class _FractionalMaxPool(Module):
    _dims = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _tuple(kernel_size, self._dims)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, self._dims) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, self._dims) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < ratio < 1 for ratio in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        """The pooled ``input`` (and the maxima's flat indices with ``return_indices``)."""
        pool = F.fractional_max_pool2d if self._dims == 2 else F.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
                    _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPool):
    """2-D fractional max pooling (Graham, 2014) over (N, C, H, W) or (C, H, W) inputs, as
    ``torch.nn.FractionalMaxPool2d(kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None)``: ``kernel_size`` windows at pseudo-random starts, redrawn each call unless
    ``_random_samples`` (N, C, 2) fixes them.

        >>> pool = agnostic.nn.FractionalMaxPool2d(2, output_size=2, _random_samples=agnostic.full((1, 1, 2), 0.5))
        >>> pool(agnostic.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """

    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPool):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) inputs, as
    ``torch.nn.FractionalMaxPool3d(kernel_size, output_size=None, output_ratio=None, return_indices=False,
    _random_samples=None)``; ``_random_samples`` is (N, C, 3).

        >>> _ = agnostic.manual_seed(0)
        >>> pool = agnostic.nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True)
        >>> output, indices = pool(agnostic.randn(2, 3, 8, 8, 8))
        >>> output.shape, indices.dtype
        (agnostic.Size([2, 3, 4, 4, 4]), agnostic.int64)
    """

    _dims = 3


def _channel_sums(values, high, low):
    """``sum(values[:, low[c]:high[c]])`` for each channel ``c``, through prefix sums along dimension 1."""
    shape = list(values.shape)
    shape[1] = 1
    prefix = agnostic.cat([agnostic.zeros(shape, dtype=values.dtype, device=values.device),
                           values.cumsum(1)], 1)
    return prefix.index_select(1, high) - prefix.index_select(1, low)


def _indices(values, device):
    return agnostic.tensor(values, dtype=agnostic.int64, device=device)


class _CrossMapLRN(Function):
    """PyTorch's legacy ``CrossMapLRN2d`` function, kept value for value: its forward's running window never drops
    the first channel (channels from ``pre_pad + 1`` on keep ``x[0]**2`` in their sum), and its backward is its own
    formula, with the window it uses, rather than the forward's exact derivative."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        channels, device = input.shape[1], input.device
        pre_pad = int((size - 1) / 2 + 1)
        squares = input * input
        # PyTorch's running window: x[0]**2 is never dropped, so channels past pre_pad sum their window and x[0]**2
        keeps_first = [c >= pre_pad + 1 for c in range(channels)]
        high = [min(c + pre_pad, channels) for c in range(channels)]
        low = [c - pre_pad + 1 if keeps else 0 for c, keeps in zip(range(channels), keeps_first)]
        sums = _channel_sums(squares, _indices(high, device), _indices(low, device))
        first = agnostic.tensor(keeps_first, dtype=input.dtype, device=device).reshape(1, -1, 1, 1)
        sums = sums + squares[:, :1] * first
        scale = sums * (alpha / size) + k
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, output, scale = ctx.saved_tensors
        size, channels = ctx.size, input.shape[1]
        inverse_pre_pad = int(size - (size - 1) / 2)
        ratio = grad_output * output / scale
        high = [min(max(c - inverse_pre_pad + size, 0), channels) for c in range(channels)]
        low = [min(max(c - inverse_pre_pad, 0), channels) for c in range(channels)]
        accumulated = _channel_sums(ratio, _indices(high, input.device), _indices(low, input.device))
        grad_input = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / size) * input * accumulated
        return grad_input, None, None, None, None


class CrossMapLRN2d(Module):
    """Local response normalization across channels of (N, C, H, W) inputs, PyTorch's legacy form:
    ``torch.nn.CrossMapLRN2d(size, alpha=1e-4, beta=0.75, k=1)``, ``x * (k + alpha / size * s)**-beta`` with ``s``
    the sum of squares over a window of channels (PyTorch's running window, first channel included, kept as is).

        >>> lrn = agnostic.nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0, k=1.0)
        >>> lrn(agnostic.tensor([1.0, 2.0, 3.0]).reshape(1, 3, 1, 1)).flatten()
        tensor([0.3750, 0.3529, 0.5294])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        """The normalized ``input``."""
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        return _CrossMapLRN.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["CrossMapLRN2d", "FractionalMaxPool2d", "FractionalMaxPool3d"]
