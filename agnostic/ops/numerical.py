"""Numerical gradients and multi-dimensional histograms (gradient, histogramdd), as PyTorch's.

``gradient`` is composed of slices and arithmetic, so it is differentiable (in the values and in the coordinates);
``histogramdd`` counts on every device (PyTorch's runs on the CPU only): each sample's bin along each dimension by a
binary search of that dimension's edges, then one ``bincount`` of the flattened bin numbers.
"""

import math
import numbers

import numpy

from .. import _dtypes
from .._tensor import TensorBase, _normalize_dim
from ._dispatch import check_tensor, finish, operand_array
from ._registry import composite, public_names
from .creation import linspace
from .shape import cat
from .statistics import _counts, _return_type

_HALF = (_dtypes.float16, _dtypes.bfloat16)

histogramdd_result = _return_type("histogramdd", ("hist", "bin_edges"))


# ----- gradient ---------------------------------------------------------------------------------------------------
def _gradient_dims(input, dim):
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
    if input.ndim == 0 and dims:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    dims = [_normalize_dim(d, input.ndim) for d in dims]
    for position, d in enumerate(dims):
        if d in dims[:position]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return dims


def _is_scalar(value):
    return isinstance(value, numbers.Number) or (isinstance(value, TensorBase) and value.ndim == 0)


def _spacings(spacing, dims, dim_given):
    """One spacing per dim: a Python number (uniform steps) or a 1-D tensor of coordinates."""
    if _is_scalar(spacing):
        return [spacing.item() if isinstance(spacing, TensorBase) else spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) != len(dims):
        if dim_given:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to 'self.dim() = {len(dims)}', since dim argument was not given, but got a list of "
                           f"length {len(spacing)}")
    kinds = {isinstance(value, TensorBase) for value in spacing}
    if len(kinds) > 1:
        raise TypeError("torch.gradient: spacing must be all numbers or all tensors (of coordinates), not a mix; "
                        "give every dim's coordinates as a 1-D tensor")
    for value in spacing:
        if isinstance(value, TensorBase) and value.ndim != 1:
            raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got an "
                               f"element with {value.ndim} dimensions!")
    return spacing


def _slice(input, dim, start, length):
    return input.narrow(dim, start, length)


def _along(coefficients, ndim, dim):
    """A 1-D tensor shaped to broadcast along ``dim`` of an ``ndim``-dim tensor."""
    shape = [1] * ndim
    shape[dim] = coefficients.shape[0]
    return coefficients.reshape(shape)


def _uniform_gradient(input, dim, step, edge_order):
    size = input.shape[dim]
    interior = (_slice(input, dim, 2, size - 2) - _slice(input, dim, 0, size - 2)) / (2 * step)
    first, second = _slice(input, dim, 0, 1), _slice(input, dim, 1, 1)
    last, before_last = _slice(input, dim, size - 1, 1), _slice(input, dim, size - 2, 1)
    if edge_order == 1:
        head = (second - first) / step
        tail = (last - before_last) / step
    else:
        head = (first * -1.5 + second * 2 - _slice(input, dim, 2, 1) * 0.5) / step
        tail = (_slice(input, dim, size - 3, 1) * 0.5 - before_last * 2 + last * 1.5) / step
    return cat([head, interior, tail], dim)


def _coordinate_gradient(input, dim, coordinates, edge_order):
    """NumPy's second-order accurate differences for unevenly spaced ``coordinates``."""
    size = input.shape[dim]
    if coordinates.shape[0] != size:
        raise RuntimeError(f"torch.gradient expected the coordinates of dim {dim} to have as many elements as the "
                           f"dim ({size}), but got {coordinates.shape[0]}")
    steps = coordinates[1:] - coordinates[:-1]
    left, right = steps[:-1], steps[1:]
    below = -right / (left * (left + right))
    middle = (right - left) / (left * right)
    above = left / (right * (left + right))
    ndim = input.ndim
    interior = (_slice(input, dim, 0, size - 2) * _along(below, ndim, dim)
                + _slice(input, dim, 1, size - 2) * _along(middle, ndim, dim)
                + _slice(input, dim, 2, size - 2) * _along(above, ndim, dim))
    first, second = _slice(input, dim, 0, 1), _slice(input, dim, 1, 1)
    last, before_last = _slice(input, dim, size - 1, 1), _slice(input, dim, size - 2, 1)
    if edge_order == 1:
        head = (second - first) / steps[0]
        tail = (last - before_last) / steps[-1]
    else:
        third, before_before = _slice(input, dim, 2, 1), _slice(input, dim, size - 3, 1)
        a, b = steps[0], steps[1]
        head = (first * (-(2 * a + b) / (a * (a + b))) + second * ((a + b) / (a * b))
                + third * (-a / (b * (a + b))))
        a, b = steps[-2], steps[-1]
        tail = (before_before * (b / (a * (a + b))) + before_last * (-(a + b) / (a * b))
                + last * ((a + 2 * b) / (b * (a + b))))
    return cat([head, interior, tail], dim)


@composite(method=False)
def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates of the partial derivatives of ``input`` along each of ``dim`` (all dims by default), one tensor per
    dim (``torch.gradient``): central differences inside, one-sided differences of ``edge_order`` (1 or 2) at the
    ends. ``spacing``: the step (a number), one step per dim, or one 1-D tensor of sample coordinates per dim.

        >>> agnostic.gradient(agnostic.tensor([1.0, 2.0, 4.0, 8.0]))
        (tensor([1.0000, 1.5000, 3.0000, 4.0000]),)
        >>> agnostic.gradient(agnostic.tensor([1.0, 2.0, 4.0, 8.0]), spacing=[agnostic.tensor([0.0, 1.0, 3.0, 4.0])])
        (tensor([1.0000, 1.0000, 3.0000, 4.0000]),)
    """
    check_tensor("gradient", input)
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _gradient_dims(input, dim)
    spacings = _spacings(spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1; dim {d} "
                               f"has size {input.shape[d]}: use edge_order=1 or more samples")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        input = input.to(_dtypes.get_default_dtype())
    return tuple(_coordinate_gradient(input, d, step, edge_order) if isinstance(step, TensorBase)
                 else _uniform_gradient(input, d, step, edge_order) for d, step in zip(dims, spacings))


# ----- histogramdd ------------------------------------------------------------------------------------------------
def _histogram_edges(input, samples, bins, range, dims):
    """Each dimension's bin edges (tensors of ``input``'s dtype)."""
    if isinstance(bins, TensorBase):
        raise TypeError("histogramdd(): bins must be an int, a sequence of ints or a sequence of 1-D tensors of "
                        "edges, not a Tensor; pass bins.tolist() for counts")
    if isinstance(bins, numbers.Integral):
        bins = [int(bins)] * dims
    bins = list(bins)
    if len(bins) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if all(isinstance(b, TensorBase) for b in bins):
        for d, edges in enumerate(bins):
            if edges.dtype != input.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                                   f"got input with dtype {input.dtype} and bins for dimension {d} with dtype "
                                   f"{edges.dtype}")
            if edges.ndim != 1:
                raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                                   f"{edges.ndim} dimensions for dimension {d}")
            if edges.shape[0] < 2:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {edges.shape[0] - 1} for "
                                   f"dimension {d}")
        return bins
    counts = [int(b) for b in bins]
    for d, count in enumerate(counts):
        if count <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {count} for dimension {d}")
    if range is not None:
        range = [float(r) for r in range]
        if len(range) != 2 * dims:
            raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should have "
                               f"{2 * dims} elements, but got {len(range)}")
        lows, highs = range[0::2], range[1::2]
    elif samples.shape[0]:
        lows, highs = samples.amin(0).tolist(), samples.amax(0).tolist()
    else:
        lows, highs = [0.0] * dims, [1.0] * dims
    edges = []
    for d, (low, high, count) in enumerate(zip(lows, highs, counts)):
        if not (math.isfinite(low) and math.isfinite(high)):
            raise RuntimeError(f"torch.histogramdd: dimension {d}'s range [{low:g}, {high:g}] is not finite")
        if low > high:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} for "
                               f"dimension {d}")
        if low == high:
            low, high = low - 0.5, high + 0.5  # NumPy's and PyTorch's widening of an empty range
        edges.append(linspace(low, high, count + 1, dtype=input.dtype, device=input.device))
    return edges


@composite(method=False)
def histogramdd(input, bins, *, range=None, weight=None, density=False):
    """The multi-dimensional histogram of the points in ``input``'s rows (``torch.histogramdd``): the last dim holds
    each point's D coordinates. ``bins``: a count for all dims, one count per dim (equal bins over ``range``,
    ``[min0, max0, min1, max1, ...]``, the points' own range by default), or one 1-D tensor of increasing edges per
    dim. Each bin holds its left edges, the last ones their right edges too; ``weight`` (one per point) is summed
    instead of counting; ``density`` divides by the total and the bin volumes. Returns ``(hist, bin_edges)``;
    floating tensors only; computed on every device (PyTorch's runs on the CPU only).

        >>> points = agnostic.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
        >>> agnostic.histogramdd(points, bins=[2, 2])
        agnostic.return_types.histogramdd(
        hist=tensor([[0., 1.],
                [2., 1.]]),
        bin_edges=(tensor([0., 1., 2.]), tensor([0., 1., 2.])))
    """
    check_tensor("histogramdd", input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"histogramdd" not implemented for {input.dtype}; convert the input with '
                                  ".float() first")
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions; give the points as "
                           "rows of coordinates, shape (N, D)")
    dims = input.shape[-1]
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor and weight tensor "
                               f"should have the same dtype, but got input({input.dtype}), and weight"
                               f"({weight.dtype})")
    samples = input.detach().reshape(-1, dims)
    edges = _histogram_edges(input, samples, bins, range, dims)
    device = input._device
    backend = device.backend
    xp = backend.xp
    compute = _dtypes.float32 if input.dtype in _HALF else input.dtype
    points = operand_array(samples, compute, device)
    edge_arrays = [operand_array(e.detach(), compute, device) for e in edges]
    sizes = [e.shape[0] - 1 for e in edge_arrays]
    with backend.activate():
        inside = xp.ones(points.shape[0], dtype=bool)
        flat = xp.zeros(points.shape[0], dtype=numpy.int64)
        for d, edge_array in enumerate(edge_arrays):
            column = points[:, d]
            inside &= (column >= edge_array[0]) & (column <= edge_array[-1])
            # the bin of each point: edges at or left of it, less one; the last edge itself goes in the last bin
            place = xp.searchsorted(edge_array, column, side="right") - 1
            flat = flat * sizes[d] + xp.clip(place, 0, sizes[d] - 1)
        counted = inside.astype(numpy.float64) if weight is None else \
            xp.where(inside, operand_array(weight.detach().reshape(-1), _dtypes.float64, device), 0.0)
        hist = _counts(xp, xp.where(inside, flat, 0), math.prod(sizes), counted).reshape(sizes)
        if density:
            volumes = xp.ones(sizes, dtype=numpy.float64)
            for d, edge_array in enumerate(edge_arrays):
                shape = [1] * dims
                shape[d] = sizes[d]
                volumes = volumes * (edge_array[1:] - edge_array[:-1]).astype(numpy.float64).reshape(shape)
            hist = hist / hist.sum() / volumes
    return histogramdd_result(finish(hist.astype(compute.numpy_dtype), input.dtype, device), tuple(edges))


__all__ = public_names(globals())
