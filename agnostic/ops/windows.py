"""Window functions for spectral analysis (hann, hamming, blackman, bartlett, kaiser), as PyTorch computes them.

Each is made from agnostic's ops in the requested dtype, in PyTorch's order of operations, so half-precision
windows round as PyTorch's do, on every device. ``periodic=True`` (the default) gives the window of length
``window_length + 1`` without its last value, the form that ``stft`` wants.
"""

import math

from .. import _dtypes
from .._layout import check_strided
from .creation import arange, ones, zeros
from .elementwise import i0

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]


def _window(name, window_length, periodic, dtype, layout, device, requires_grad, make):
    """The window ``make(length, dtype, device)`` computes for ``length`` (``window_length + 1`` when periodic,
    cut back to ``window_length``), with PyTorch's checks and its empty and one-sample windows."""
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    check_strided(layout, name)
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}; pass dtype=agnostic.float32 "
                           "or another floating dtype")
    if window_length <= 1:
        window = (zeros if window_length == 0 else ones)(window_length, dtype=dtype, device=device)
    else:
        length = window_length + 1 if periodic else window_length
        window = make(length, dtype, device)[:window_length]
    return window.requires_grad_() if requires_grad else window


def _cosine_sum(length, dtype, device, alpha, beta):
    """``alpha - beta * cos(2 pi n / (length - 1))``: the generalized Hamming window."""
    return (arange(length, dtype=dtype, device=device) * (2 * math.pi / (length - 1))).cos() * -beta + alpha


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """The Hamming window ``alpha - beta * cos(2 pi n / (N - 1))`` (``torch.hamming_window``; N is
    ``window_length + 1`` when ``periodic``, then the last value is dropped).

        >>> agnostic.hamming_window(5, periodic=False)
        tensor([0.0800, 0.5400, 1.0000, 0.5400, 0.0800])
    """
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda length, dtype, device: _cosine_sum(length, dtype, device, alpha, beta))


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (``torch.hann_window``; N is ``window_length + 1`` when
    ``periodic``, then the last value is dropped).

        >>> agnostic.hann_window(4)
        tensor([0.0000, 0.5000, 1.0000, 0.5000])
    """
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad,
                   lambda length, dtype, device: _cosine_sum(length, dtype, device, 0.5, 0.5))


def _blackman(length, dtype, device):
    angles = arange(length, dtype=dtype, device=device) * (math.pi / (length - 1))
    return (angles * 4).cos() * 0.08 - (angles * 2).cos() * 0.5 + 0.42


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``
    (``torch.blackman_window``; N is ``window_length + 1`` when ``periodic``, then the last value is dropped).

        >>> agnostic.blackman_window(5, periodic=False)
        tensor([-2.9802e-08,  3.4000e-01,  1.0000e+00,  3.4000e-01, -2.9802e-08])
    """
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, _blackman)


def _bartlett(length, dtype, device):
    window = arange(length, dtype=dtype, device=device) * (2.0 / (length - 1))
    rising = ((length - 1) >> 1) + 1
    window[rising:] = -window[rising:] + 2
    return window


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Bartlett (triangular) window, rising from 0 to 1 and back (``torch.bartlett_window``; N is
    ``window_length + 1`` when ``periodic``, then the last value is dropped).

        >>> agnostic.bartlett_window(5, periodic=False)
        tensor([0.0000, 0.5000, 1.0000, 0.5000, 0.0000])
    """
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, _bartlett)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window ``I0(beta * sqrt(1 - ((n - a) / a) ** 2)) / I0(beta)``, ``a = (N - 1) / 2``, with ``I0``
    the modified Bessel function of order 0 (``torch.kaiser_window``; N is ``window_length + 1`` when
    ``periodic``, then the last value is dropped).

        >>> agnostic.kaiser_window(5, periodic=False, beta=8.0)
        tensor([0.0023, 0.3690, 1.0000, 0.3690, 0.0023])
    """
    def kaiser(length, dtype, device):
        # float32 arithmetic for half precision, as PyTorch's kernel (its "opmath" type)
        compute = _dtypes.float32 if dtype.itemsize < 4 else dtype
        middle = (length - 1) / 2.0
        offsets = (arange(length, dtype=compute, device=device) - middle) / middle
        return (i0((1 - offsets ** 2).abs().sqrt() * beta) / i0(ones((), dtype=compute, device=device) * beta)
                ).to(dtype)
    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, kaiser)
