"""Fractional max pooling in two and three dimensions, as torch.nn.functional's.

Each (sample, channel) plane pools over windows whose starts follow ATen's pseudo-random sequence: for an output
position ``i < out - 1``, ``int((i + u) * alpha) - int(u * alpha)`` with ``alpha = (in - k) / (out - 1)`` computed
in the input's dtype and ``u`` the plane's sample in [0, 1); the last window ends at the input's end. Given the same
``_random_samples``, outputs and indices equal PyTorch's; the gradient flows to each window's selected maximum.
"""

import math

import agnostic

_AXES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _tuple(value, dims, what, name):
    if isinstance(value, (list, tuple)):
        if len(value) == 1:
            return tuple(value) * dims
        if len(value) != dims:
            raise RuntimeError(f"{name}(): {what} must either be a single int or tuple of {dims} ints, got "
                               f"{tuple(value)}")
        return tuple(value)
    return (value,) * dims


def _window_starts(samples, size, output, kernel):
    """(N, C, output) window starts along one axis, from (N, C) samples, as ATen's ``generate_intervals``."""
    starts = agnostic.full(samples.shape + (output,), size - kernel, dtype=agnostic.int64, device=samples.device)
    if output > 1:
        alpha = agnostic.full((), size - kernel, dtype=samples.dtype, device=samples.device) / (output - 1)
        positions = agnostic.arange(output - 1, dtype=samples.dtype, device=samples.device)
        scaled = ((positions + samples.unsqueeze(-1)) * alpha).to(agnostic.int64)
        starts[..., :output - 1] = scaled - (samples * alpha).to(agnostic.int64).unsqueeze(-1)
    return starts


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, dims):
    name = f"fractional_max_pool{dims}d"
    if input.dim() not in (dims + 1, dims + 2) or input.numel() == 0:
        raise RuntimeError(f"{name}(): non-empty {dims + 1}D or {dims + 2}D (batch mode) tensor expected for input, "
                           f"but got: ndim {input.dim()}")
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    spatial = tuple(input.shape[-dims:])
    if output_size is None:
        ratios = _tuple(output_ratio, dims, "output_ratio", name)
        output_size = [int(size * ratio) for size, ratio in zip(spatial, ratios)]
    kernel = _tuple(kernel_size, dims, "kernel_size", name)
    output = _tuple(output_size, dims, "output_size", name)
    for axis, size, out, k in zip(_AXES[dims], spatial, output, kernel):
        # ATen's 3-D check is strict, its 2-D one is not
        if out + k - 1 > size or (dims == 3 and out + k - 1 == size):
            where = name if dims == 2 else name + "_out"
            raise RuntimeError(f"{where}(): pool {axis} {k} too large relative to input {axis} {size}")
    batched = input.dim() == dims + 2
    planes = input if batched else input.unsqueeze(0)
    batch, channels = planes.shape[:2]
    if samples is None:
        samples = agnostic.rand(batch, channels, dims, dtype=input.dtype, device=input.device)
    if samples.dim() != 3 or samples.shape[0] != batch or samples.shape[2] != dims:
        raise RuntimeError(f"{name}(): _random_samples must have shape ({batch}, {channels}, {dims}), got "
                           f"{tuple(samples.shape)}")
    if samples.shape[1] != channels:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    # ATen reads a 2-D plane's samples as (width, height), a 3-D one's as (time, height, width)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    strides = [math.prod(spatial[axis + 1:]) for axis in range(dims)]
    flat = None  # (N, C, out_1, k_1, out_2, k_2, ...) flat positions in each plane
    for axis in range(dims):
        starts = _window_starts(samples[:, :, order[axis]], spatial[axis], output[axis], kernel[axis])
        offsets = starts.unsqueeze(-1) + agnostic.arange(kernel[axis], device=input.device)
        offsets = (offsets * strides[axis]).reshape((batch, channels) + (1, 1) * axis + offsets.shape[2:]
                                                     + (1, 1) * (dims - axis - 1))
        flat = offsets if flat is None else flat + offsets
    positions, window = math.prod(output), math.prod(kernel)
    order_of_axes = [0, 1] + [2 + 2 * axis for axis in range(dims)] + [3 + 2 * axis for axis in range(dims)]
    flat = flat.permute(order_of_axes).reshape(batch, channels, positions, window)
    values = planes.reshape(batch, channels, -1)
    with agnostic.no_grad():
        candidates = values.detach().gather(2, flat.reshape(batch, channels, -1)).reshape(flat.shape)
        chosen = _first_maximum(candidates)
        indices = flat.gather(3, chosen.unsqueeze(-1)).squeeze(-1)
    result = values.gather(2, indices).reshape((batch, channels) + output)
    indices = indices.reshape((batch, channels) + output)
    if not batched:
        return result.squeeze(0), indices.squeeze(0)
    return result, indices


def _first_maximum(candidates):
    """The position of each window's maximum along the last axis: the first of equal ones, a NaN over any number
    (as ATen's ``val > max || isnan(val)`` scan, which keeps the last NaN)."""
    nan = agnostic.isnan(candidates)
    last_nan = candidates.shape[-1] - 1 - nan.flip(-1).to(agnostic.int64).argmax(-1)
    return agnostic.where(nan.any(-1), last_nan, candidates.argmax(-1))


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``(output, indices)`` of fractional max pooling over (N, C, H, W) or (C, H, W) ``input``, as
    ``torch.nn.functional.fractional_max_pool2d_with_indices``: windows of ``kernel_size`` at pseudo-random starts
    giving ``output_size`` (or ``int(size * output_ratio)``); ``_random_samples`` (N, C, 2) in [0, 1) fixes the
    starts (drawn with ``rand`` otherwise). ``indices`` are flat positions in each (H, W) plane.

        >>> x = agnostic.arange(25.0).reshape(1, 1, 5, 5)
        >>> output, indices = agnostic.nn.functional.fractional_max_pool2d_with_indices(
        ...     x, 2, output_size=3, _random_samples=agnostic.tensor([[[0.5, 0.5]]]))
        >>> output
        tensor([[[[ 6.,  8.,  9.],
                  [16., 18., 19.],
                  [21., 23., 24.]]]])
        >>> indices
        tensor([[[[ 6,  8,  9],
                  [16, 18, 19],
                  [21, 23, 24]]]])
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (N, C, H, W) or (C, H, W) ``input``, as
    ``torch.nn.functional.fractional_max_pool2d``: the output, or ``(output, indices)`` with ``return_indices``
    (see ``fractional_max_pool2d_with_indices``).

        >>> x = agnostic.arange(16.0).reshape(1, 4, 4)
        >>> agnostic.nn.functional.fractional_max_pool2d(x, 2, output_ratio=0.5,
        ...                                             _random_samples=agnostic.tensor([[[0.2, 0.7]]]))
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """
    output, indices = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (output, indices) if return_indices else output


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """``(output, indices)`` of fractional max pooling over (N, C, T, H, W) or (C, T, H, W) ``input``, as
    ``torch.nn.functional.fractional_max_pool3d_with_indices``; ``_random_samples`` is (N, C, 3).

        >>> x = agnostic.arange(64.0).reshape(1, 1, 4, 4, 4)
        >>> output, indices = agnostic.nn.functional.fractional_max_pool3d_with_indices(
        ...     x, 2, output_size=2, _random_samples=agnostic.full((1, 1, 3), 0.5))
        >>> output.flatten(), indices.flatten()
        (tensor([21., 23., 29., 31., 53., 55., 61., 63.]), tensor([21, 23, 29, 31, 53, 55, 61, 63]))
    """
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W) ``input``, as
    ``torch.nn.functional.fractional_max_pool3d``: the output, or ``(output, indices)`` with ``return_indices``.

        >>> x = agnostic.arange(27.0).reshape(1, 3, 3, 3)
        >>> agnostic.nn.functional.fractional_max_pool3d(x, 2, output_size=1,
        ...                                             _random_samples=agnostic.full((1, 1, 3), 0.5))
        tensor([[[[26.]]]])
    """
    output, indices = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (output, indices) if return_indices else output


__all__ = ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices"]
