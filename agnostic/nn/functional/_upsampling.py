"""interpolate (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area), the upsample aliases, and
pixel_shuffle / pixel_unshuffle, as torch.nn.functional's."""

import math
import warnings

import numpy

import agnostic

from ._pooling import _adaptive_avg_pool

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic coefficient


def _nearest_taps(size, out, scale, exact):
    """Source index of each output position, with PyTorch's float32 scale (so ties round the same way)."""
    if out == size:
        return [(numpy.arange(out), None)]
    step = numpy.float32(1.0 / scale) if scale is not None else numpy.float32(size) / numpy.float32(out)
    offset = numpy.float32(0.5) if exact else numpy.float32(0.0)
    positions = (numpy.arange(out, dtype=numpy.float32) + offset) * step
    return [(numpy.minimum(numpy.floor(positions).astype(numpy.int64), size - 1), None)]


def _source_positions(size, out, scale, align_corners, cubic):
    """Where each output position samples the input, in input coordinates (PyTorch's
    ``area_pixel_compute_source_index``)."""
    index = numpy.arange(out, dtype=numpy.float64)
    if align_corners:
        return index * ((size - 1) / (out - 1) if out > 1 else 0.0)
    step = 1.0 / scale if scale is not None else size / out
    positions = (index + 0.5) * step - 0.5
    return positions if cubic else numpy.maximum(positions, 0.0)


def _linear_taps(size, out, scale, align_corners):
    positions = _source_positions(size, out, scale, align_corners, False)
    low = numpy.minimum(numpy.floor(positions).astype(numpy.int64), size - 1)
    high = numpy.minimum(low + 1, size - 1)
    weight = positions - low
    return [(low, 1.0 - weight), (high, weight)]


def _cubic_weights(t):
    """The four Keys-cubic weights of the taps at offsets -1, 0, 1, 2 for fraction ``t``."""
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_taps(size, out, scale, align_corners):
    positions = _source_positions(size, out, scale, align_corners, True)
    floor = numpy.floor(positions)
    weights = _cubic_weights(positions - floor)
    floor = floor.astype(numpy.int64)
    return [(numpy.clip(floor + offset, 0, size - 1), weight) for offset, weight in zip((-1, 0, 1, 2), weights)]


def _resample(input, dim, taps):
    """Sum over ``taps`` of (input rows at ``index`` along ``dim``) * ``weight`` (None: weight 1)."""
    shape = [1] * input.dim()
    shape[dim] = -1
    out = None
    for index, weight in taps:
        rows = agnostic.index_select(input, dim, agnostic.tensor(index, dtype=agnostic.int64, device=input.device))
        if weight is not None:
            rows = agnostic.mul(rows, agnostic.tensor(weight, dtype=input.dtype, device=input.device).reshape(shape))
        out = rows if out is None else agnostic.add(out, rows)
    return out


def _output_sizes(input, size, scale_factor, recompute_scale_factor):
    """The output spatial sizes, and the per-dimension scales the sampling uses (None: input size / output size)."""
    dims = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = tuple(size) if isinstance(size, (list, tuple)) else (size,) * dims
        if len(sizes) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {list(sizes)}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK)"
                             " format.")
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        return tuple(int(s) for s in sizes), (None,) * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(scale_factor) if isinstance(scale_factor, (list, tuple)) else (scale_factor,) * dims
    if len(scales) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {list(scales)}. "
                         "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                         "...,sK) format.")
    sizes = tuple(math.floor(float(length) * float(scale)) for length, scale in zip(input.shape[2:], scales))
    return sizes, ((None,) * dims if recompute_scale_factor else tuple(float(s) for s in scales))


def _triangle(x):
    return numpy.maximum(1.0 - numpy.abs(x), 0.0)


def _keys_cubic(x):
    """The cubic convolution kernel with a = -0.5 (PIL's, which PyTorch's anti-aliased bicubic matches)."""
    x = numpy.abs(x)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = (((x - 5) * x + 8) * x - 4) * a
    return numpy.where(x < 1, near, numpy.where(x < 2, far, 0.0))


def _antialias_weights(size, out, scale, align_corners, cubic):
    """The (out, size) matrix of PyTorch's separable anti-aliasing resampler along one axis (its
    ``_upsample_*_aa``, after PIL): a filter stretched by the downscaling factor, normalized per output."""
    if align_corners:
        step = (size - 1) / (out - 1) if out > 1 else 0.0
    else:
        step = 1.0 / scale if scale is not None and scale > 0 else size / out
    support = (2.0 if cubic else 1.0) * (step if step >= 1.0 else 1.0)
    stretch = 1.0 / step if step >= 1.0 else 1.0
    kernel = _keys_cubic if cubic else _triangle
    weights = numpy.zeros((out, size))
    for i in range(out):
        center = step * (i + 0.5)
        low = max(int(center - support + 0.5), 0)
        high = min(int(center + support + 0.5), size)
        taps = kernel((numpy.arange(low, high) - center + 0.5) * stretch)
        total = taps.sum()
        weights[i, low:high] = taps / total if total != 0 else taps
    return weights


def _antialiased(input, sizes, scales, align_corners, cubic):
    """Resample the two spatial axes of (N, C, H, W) ``input`` with anti-aliasing: two matmuls (differentiable)."""
    (height, width), (out_height, out_width) = tuple(input.shape[2:]), sizes
    rows = _antialias_weights(height, out_height, scales[0], align_corners, cubic)
    columns = _antialias_weights(width, out_width, scales[1], align_corners, cubic)
    dtype = input.dtype if input.dtype.is_floating_point else agnostic.get_default_dtype()
    rows = agnostic.tensor(rows, dtype=dtype, device=input.device)
    columns = agnostic.tensor(columns.T, dtype=dtype, device=input.device)
    return agnostic.matmul(agnostic.matmul(rows, input), columns)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resample (N, C, *spatial) input to ``size`` or by ``scale_factor``, as ``torch.nn.functional.interpolate``.

    ``mode``: 'nearest' (PyTorch's legacy rule), 'nearest-exact', 'linear' (3-D input), 'bilinear' or 'bicubic'
    (4-D), 'trilinear' (5-D), or 'area' (adaptive average pooling). ``align_corners`` maps the corner pixels'
    centres onto each other (interpolating modes only). ``antialias`` (bilinear and bicubic, 4-D input) widens the
    filter by the downscaling factor, as PyTorch's (and PIL's) resizing, so that downsampling doesn't alias.

        >>> import agnostic.nn.functional as F
        >>> F.interpolate(agnostic.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
        >>> F.interpolate(agnostic.tensor([[[1.0, 2.0]]]), size=4, mode="linear")
        tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])
        >>> F.interpolate(agnostic.tensor([[[1.0, 2.0]]]), size=3, mode="linear", align_corners=True)
        tensor([[[1.0000, 1.5000, 2.0000]]])
        >>> F.interpolate(agnostic.tensor([[[[1.0, 2.0, 3.0, 4.0]]]]), size=(1, 2), mode="bilinear", antialias=True)
        tensor([[[[1.7143, 3.2857]]]])
    """
    if antialias and (mode not in ("bilinear", "bicubic") or input.dim() != 4):
        raise NotImplementedError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
                                  f"tensor as input (got mode={mode!r} and a {input.dim()}-D tensor); use "
                                  "antialias=False")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode in _MODE_DIMS:
        if align_corners is None:
            align_corners = False
        if input.dim() - 2 != _MODE_DIMS[mode]:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    else:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if input.dim() not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor)
    if any(length <= 0 for length in tuple(input.shape[2:]) + sizes):
        names = ("D", "H", "W")[-(input.dim() - 2):]
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(f'{n}: {s}' for n, s in zip(names, input.shape[2:]))}) and output "
                           f"({', '.join(f'{n}: {s}' for n, s in zip(names, sizes))})")
    if mode == "area":
        return _adaptive_avg_pool(input, input.dim() - 2, sizes, "interpolate")
    if antialias:
        return _antialiased(input, sizes, scales, align_corners, mode == "bicubic")
    out = input
    for axis, (length, target, scale) in enumerate(zip(input.shape[2:], sizes, scales)):
        if mode in ("nearest", "nearest-exact"):
            taps = _nearest_taps(length, target, scale, mode == "nearest-exact")
        elif mode == "bicubic":
            taps = _cubic_taps(length, target, scale, align_corners)
        else:
            taps = _linear_taps(length, target, scale, align_corners)
        out = _resample(out, 2 + axis, taps)
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate`` (it warns, as PyTorch's).

        >>> import agnostic.nn.functional as F
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     F.upsample(agnostic.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode='nearest')``.

        >>> import agnostic.nn.functional as F
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     F.upsample_nearest(agnostic.tensor([[[1.0, 2.0]]]), size=3)
        tensor([[[1., 1., 2.]]])
    """
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(mode='bilinear', align_corners=True)``.

        >>> import agnostic.nn.functional as F
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     F.upsample_bilinear(agnostic.tensor([[[[1.0, 2.0]]]]), size=(1, 3))
        tensor([[[[1.0000, 1.5000, 2.0000]]]])
    """
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r): channel blocks become r x r spatial blocks.

        >>> import agnostic.nn.functional as F
        >>> F.pixel_shuffle(agnostic.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    r = int(upscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    batch = tuple(batch)
    lead = len(batch)
    out = input.reshape(batch + (channels // (r * r), r, r, height, width))
    out = out.permute(tuple(range(lead)) + tuple(lead + i for i in (0, 3, 1, 4, 2)))
    return out.reshape(batch + (channels // (r * r), height * r, width * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W): the inverse of ``pixel_shuffle``.

        >>> import agnostic.nn.functional as F
        >>> F.pixel_unshuffle(agnostic.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    r = int(downscale_factor)
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, channels, height, width = input.shape
    if height % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={height} is not divisible by {r}")
    if width % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={width} is not divisible by {r}")
    batch = tuple(batch)
    lead = len(batch)
    out = input.reshape(batch + (channels, height // r, r, width // r, r))
    out = out.permute(tuple(range(lead)) + tuple(lead + i for i in (0, 2, 4, 1, 3)))
    return out.reshape(batch + (channels * r * r, height // r, width // r))


def channel_shuffle(input, groups):
    """(N, g * k, *) -> (N, k * g, *): split the channels into ``groups`` groups and interleave them (channel
    ``i * k + j`` moves to ``j * g + i``), as ``torch.nn.functional.channel_shuffle`` (ShuffleNet's shuffle).

        >>> import agnostic.nn.functional as F
        >>> F.channel_shuffle(agnostic.arange(6.0).reshape(1, 6, 1), 2).flatten()
        tensor([0., 3., 1., 4., 2., 5.])
    """
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}")
    groups = int(groups)
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           f"groups.")
    grouped = input.reshape(batch, groups, channels // groups, *rest)
    return grouped.transpose(1, 2).reshape(input.shape)


def native_channel_shuffle(input, groups):
    """``channel_shuffle`` under its native-kernel name, as ``torch.nn.functional.native_channel_shuffle``.

        >>> import agnostic.nn.functional as F
        >>> F.native_channel_shuffle(agnostic.arange(4.0).reshape(1, 4, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return channel_shuffle(input, groups)


__all__ = ["channel_shuffle", "interpolate", "native_channel_shuffle", "pixel_shuffle", "pixel_unshuffle", "upsample",
           "upsample_bilinear", "upsample_nearest"]
