"""Spatial transformers' sampling: affine_grid and grid_sample, as torch.nn.functional.

Both are composed of differentiable agnostic ops (gather, floor, where, matmul), so the gradients with respect to
``theta``, ``input`` and ``grid`` are autograd's; the coordinate clipping and reflection pass PyTorch's gradients
(zero where a coordinate is clipped, sign-flipped where it is reflected).
"""

import itertools
import warnings

import agnostic

from ... import _autocast
from ._upsampling import _cubic_weights

_ALIGN_CORNERS_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                          "documentation of grid_sample for details.")
_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")


def _base_coordinates(steps, align_corners, dtype, device):
    """The normalized centers of ``steps`` pixels along one dimension (0 alone for one pixel), as PyTorch's."""
    if steps <= 1:
        return agnostic.zeros(max(steps, 1), dtype=dtype, device=device)
    end = 1.0 if align_corners else (steps - 1) / steps
    return agnostic.linspace(-end, end, steps, dtype=dtype, device=device)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of a batch of affine maps ``theta`` ((N, 2, 3) for a 4-D ``size`` (N, C, H, W), (N, 3, 4)
    for a 5-D one): an (N, H, W, 2) or (N, D, H, W, 3) tensor of normalized (x, y[, z]) source positions for
    ``grid_sample``, as ``torch.nn.functional.affine_grid``. ``align_corners=None`` warns and means False.

        >>> import agnostic.nn.functional as F
        >>> identity = agnostic.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(identity, (1, 1, 2, 2), align_corners=True)
        tensor([[[[-1., -1.],
                  [ 1., -1.]],
        <BLANKLINE>
                 [[-1.,  1.],
                  [ 1.,  1.]]]])
    """
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {tuple(size)}.")
    dims = len(size) - 2
    if theta.dim() != 3 or tuple(theta.shape[-2:]) != (dims, dims + 1):
        raise ValueError(f"Expected a batch of {dims}D affine matrices of shape Nx{dims}x{dims + 1} for size "
                         f"{tuple(size)}. Got {theta.shape}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {tuple(size)}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected theta's batch size {theta.shape[0]} to match size[0] = "
                           f"{size[0]}; pass the output size of the same batch")
    # the homogeneous base grid: (x, y[, z], 1) at each output position, x varying fastest (the last dimension)
    axes = [_base_coordinates(s, align_corners, theta.dtype, theta.device) for s in reversed(spatial)]
    mesh = agnostic.meshgrid(*reversed(axes), indexing="ij")  # each (D,) H, W
    ones = agnostic.ones(tuple(spatial), dtype=theta.dtype, device=theta.device)
    base = agnostic.stack(list(reversed(mesh)) + [ones], dim=-1).reshape(1, -1, dims + 1)
    grid = agnostic.matmul(base, theta.transpose(1, 2))  # (N, positions, dims)
    return grid.reshape(size[0], *spatial, dims)


def _unnormalize(coordinate, size, align_corners):
    """Normalized [-1, 1] coordinates to pixel positions: [0, size - 1] with corners aligned, else
    [-0.5, size - 0.5]."""
    if align_corners:
        return (coordinate + 1) / 2 * (size - 1)
    return ((coordinate + 1) * size - 1) / 2


def _clip(coordinate, size):
    """``coordinate`` clamped to [0, size - 1], with a zero gradient where it is clamped (boundaries included)."""
    inside = (coordinate > 0) & (coordinate < size - 1)
    return agnostic.where(inside, coordinate, coordinate.detach().clamp(0, size - 1))


def _reflect(coordinate, twice_low, twice_high):
    """``coordinate`` reflected off the bounds ``twice_low / 2`` and ``twice_high / 2`` until it falls between them
    (bounds passed doubled so half-integers are exact), as PyTorch's ``reflect_coordinates``."""
    if twice_low == twice_high:
        return agnostic.zeros_like(coordinate)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    shifted = coordinate - low
    distance = agnostic.where(shifted < 0, -shifted, shifted)
    extra = agnostic.fmod(distance, span)
    flips = agnostic.floor(distance.detach() / span)
    return agnostic.where(agnostic.remainder(flips, 2) == 0, extra + low, span - extra + low)


def _padded_coordinate(coordinate, size, padding_mode, align_corners):
    """Pixel positions mapped into the image by the padding mode (left as they are for zeros padding)."""
    if padding_mode == "border":
        return _clip(coordinate, size)
    if padding_mode == "reflection":
        reflected = _reflect(coordinate, 0, 2 * (size - 1)) if align_corners else _reflect(coordinate, -1, 2 * size - 1)
        return _clip(reflected, size)
    return coordinate


class _Sampler:
    """Reads the values of an (N, C, *spatial) input at integer positions given per grid coordinate (x first)."""

    def __init__(self, input, output_shape):
        self.batch, self.channels = input.shape[0], input.shape[1]
        self.sizes = list(reversed(input.shape[2:]))  # W, H[, D]: the grid's coordinate order
        self.flat = input.reshape(self.batch, self.channels, -1)
        self.output_shape = output_shape

    def values(self, positions, weight):
        """The input at the (float, integral) ``positions`` times ``weight``, zero where a position is outside."""
        valid = None
        flat_index = None
        stride = 1
        for position, size in zip(positions, self.sizes):
            inside = (position >= 0) & (position < size)
            valid = inside if valid is None else valid & inside
            term = position.clamp(0, size - 1) * stride
            flat_index = term if flat_index is None else flat_index + term
            stride *= size
        flat_index = agnostic.where(valid, flat_index, agnostic.zeros_like(flat_index)).to(agnostic.int64)
        index = flat_index.reshape(self.batch, 1, -1).expand(self.batch, self.channels, flat_index[0].numel())
        gathered = self.flat.gather(2, index)
        mask = valid.to(self.flat.dtype)
        weight = mask if weight is None else weight * mask
        return gathered * weight.reshape(self.batch, 1, -1)

    def finish(self, flat_output):
        return flat_output.reshape(self.batch, self.channels, *self.output_shape)


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in last dimension, but got "
                           f"grid with sizes {list(grid.shape)}")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but got "
                           f"input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with sizes "
                           f"{list(input.shape)} and grid with sizes {list(grid.shape)}")
    for d in range(2, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {list(input.shape)} with dimension {d} being empty")
    if mode == "bicubic" and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        raise NotImplementedError(f"grid_sample: input of dtype {input.dtype} is not supported; convert it to a "
                                  f"floating-point dtype (input.float())")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same dtype, but got input "
                           f"{input.dtype} and grid {grid.dtype}; convert one with .to()")
    if grid.device != input.device:
        raise RuntimeError(f"grid_sampler(): expected input and grid on the same device, but got input on "
                           f"{input.device} and grid on {grid.device}")


@_autocast.policy
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` (N, C, H, W) at the normalized positions ``grid`` (N, H_out, W_out, 2), x then y in
    [-1, 1] (5-D: (N, C, D, H, W) with an (N, D_out, H_out, W_out, 3) grid), as
    ``torch.nn.functional.grid_sample``. ``mode``: 'bilinear' (trilinear in 5-D), 'nearest' or 'bicubic' (4-D
    only); ``padding_mode``: what positions outside read, 'zeros', 'border' (the nearest edge) or 'reflection';
    ``align_corners``: whether -1 and 1 are the corner pixels' centers (True) or their outer edges (False;
    ``None`` warns and means False). Differentiable with respect to ``input`` and ``grid``.

        >>> import agnostic.nn.functional as F
        >>> image = agnostic.tensor([[[[0.0, 1.0], [2.0, 3.0]]]])
        >>> grid = agnostic.tensor([[[[0.0, 0.0], [1.0, -1.0]]]])
        >>> F.grid_sample(image, grid, align_corners=True)
        tensor([[[[1.5000, 1.0000]]]])
    """
    _check_grid_sample(input, grid, mode, padding_mode)
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=3)  # past the autocast wrapper, to the caller
        align_corners = False
    dims = input.dim() - 2
    sampler = _Sampler(input, tuple(grid.shape[1:-1]))
    raw = [_unnormalize(grid[..., k], size, align_corners) for k, size in enumerate(sampler.sizes)]
    if mode == "bicubic":
        return sampler.finish(_bicubic(sampler, raw, padding_mode, align_corners))
    coordinates = [_padded_coordinate(c, size, padding_mode, align_corners) for c, size in zip(raw, sampler.sizes)]
    if mode == "nearest":
        # a weight of ones still wired to the grid, so grid.grad is zeros (as PyTorch's) rather than None
        first = coordinates[0]
        weight = agnostic.where(agnostic.zeros_like(first, dtype=agnostic.bool), first, agnostic.ones_like(first))
        return sampler.finish(sampler.values([agnostic.round(c.detach()) for c in coordinates], weight))
    lows = [agnostic.floor(c.detach()) for c in coordinates]
    fractions = [c - low for c, low in zip(coordinates, lows)]
    total = None
    for corner in itertools.product((0, 1), repeat=dims):
        weight = None
        for bit, fraction in zip(corner, fractions):
            factor = fraction if bit else 1 - fraction
            weight = factor if weight is None else weight * factor
        term = sampler.values([low + bit for bit, low in zip(corner, lows)], weight)
        total = term if total is None else total + term
    return sampler.finish(total)


def _bicubic(sampler, raw, padding_mode, align_corners):
    """Bicubic interpolation over the 4x4 taps around each position; taps outside are padded by ``padding_mode``."""
    (x, y), (width, height) = raw, sampler.sizes
    x0, y0 = agnostic.floor(x.detach()), agnostic.floor(y.detach())
    x_weights, y_weights = _cubic_weights(x - x0), _cubic_weights(y - y0)
    total = None
    for j, y_weight in enumerate(y_weights):
        tap_y = _padded_coordinate(y0 + (j - 1), height, padding_mode, align_corners)
        for i, x_weight in enumerate(x_weights):
            tap_x = _padded_coordinate(x0 + (i - 1), width, padding_mode, align_corners)
            term = sampler.values([tap_x, tap_y], x_weight * y_weight)
            total = term if total is None else total + term
    return total


__all__ = ["affine_grid", "grid_sample"]
