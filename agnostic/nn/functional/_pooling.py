"""Max and average pooling over 1-D to 3-D sliding windows (PyTorch's output sizes, ceil_mode and divisors), and
their adaptive forms (windows chosen to give a requested output size)."""

import math

import numpy

import agnostic

from .._utils import _ntuple
from ._conv import windows


def _pool_output(size, kernel, pad, stride, dilation, ceil_mode):
    reach = dilation * (kernel - 1) + 1
    out = (size + 2 * pad - reach + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1  # the last window must start inside the input or the left padding
    return out


def _geometry(input, dims, kernel_size, stride, padding, dilation, ceil_mode):
    ntuple = _ntuple(dims, "_ntuple")
    kernel = ntuple(kernel_size)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else ntuple(stride)
    padding, dilation = ntuple(padding), ntuple(dilation)
    if any(len(values) != dims for values in (kernel, stride, padding, dilation)):
        raise RuntimeError(f"pooling over {dims} dimension(s) takes kernel_size, stride, padding and dilation as "
                           f"single ints or tuples of {dims} ints")
    for pad, k, d in zip(padding, kernel, dilation):
        if pad > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pad}, "
                               f"kernel_size={k} and dilation={d}")
    spatial = tuple(input.shape[2:])
    output = tuple(_pool_output(size, k, p, s, d, ceil_mode)
                   for size, k, p, s, d in zip(spatial, kernel, padding, stride, dilation))
    if any(size <= 0 for size in output):
        channels = input.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (channels,) + spatial))}). Calculated output size: "
                           f"({'x'.join(map(str, (channels,) + output))}). Output size is too small")
    # ceil_mode windows may hang over the trailing edge: pad enough for them (never less than ``padding``).
    pads = []
    for size, k, p, s, d, out in zip(spatial, kernel, padding, stride, dilation, output):
        pads += [p, max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)]
    return kernel, stride, padding, dilation, tuple(pads), output


def _batched(input, dims, name):
    if input.dim() == dims + 1:
        return input.unsqueeze(0), True
    if input.dim() != dims + 2:
        raise RuntimeError(f"{name}: Expected {dims + 1}D or {dims + 2}D (batch mode) tensor for input, got "
                           f"{input.dim()}D")
    return input, False


def _lowest(dtype):
    return -float("inf") if dtype.is_floating_point else agnostic.iinfo(dtype).min


def _flat_indices(positions, shape):
    """Flat index into ``shape`` of per-dimension ``positions`` (tensors broadcasting together)."""
    flat = positions[0]
    for position, size in zip(positions[1:], shape[1:]):
        flat = flat * size + position
    return flat


def _max_pool(input, dims, name, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    batched, unbatched = _batched(input, dims, name)
    kernel, stride, padding, dilation, pads, output = _geometry(batched, dims, kernel_size, stride, padding, dilation,
                                                                ceil_mode)
    columns = windows(batched, kernel, dilation, pads, stride, _lowest(input.dtype), output)
    values, offsets = agnostic.max(columns, dim=2)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    device = input.device
    positions = []
    remaining = offsets
    for i in reversed(range(dims)):  # the window offset is row-major over the kernel: peel the last dimension first
        along = agnostic.remainder(remaining, kernel[i])
        remaining = agnostic.div(remaining, kernel[i], rounding_mode="floor")
        shape = [1] * dims
        shape[i] = output[i]
        starts = agnostic.arange(output[i], device=device).reshape(shape) * stride[i] - padding[i]
        positions.insert(0, starts + along * dilation[i])
    indices = _flat_indices(positions, tuple(batched.shape[2:]))
    return values, indices.squeeze(0) if unbatched else indices


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window of (N, C, L) (or (C, L)) input; with ``return_indices`` also each maximum's index.

        >>> import agnostic.nn.functional as F
        >>> F.max_pool1d(agnostic.tensor([[[1.0, 5.0, 2.0, 0.0, 3.0]]]), 2, return_indices=True)
        (tensor([[[5., 2.]]]), tensor([[[1, 2]]]))
    """
    return _max_pool(input, 1, "max_pool1d", kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window; with ``return_indices`` also each maximum's flat index into its input plane.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 8.0, 6.0]]]])
        >>> F.max_pool2d(x, 2)
        tensor([[[[5., 8.]]]])
        >>> F.max_pool2d(x, 2, return_indices=True)[1]
        tensor([[[[1, 6]]]])
    """
    return _max_pool(input, 2, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window of (N, C, D, H, W) (or (C, D, H, W)) input; with ``return_indices`` also each
    maximum's flat index into its input volume.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> F.max_pool3d(x, 2, return_indices=True)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    return _max_pool(input, 3, "max_pool3d", kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _divisors(size, kernel, stride, pad, output, count_include_pad):
    starts = numpy.arange(output) * stride - pad
    ends = numpy.minimum(starts + kernel, size + pad)
    if count_include_pad:
        counts = ends - starts
    else:
        counts = numpy.minimum(ends, size) - numpy.maximum(starts, 0)
    return numpy.maximum(counts, 1)  # windows wholly in the padding sum to 0 (PyTorch gives 0 there too)


def _avg_pool(input, dims, name, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    batched, unbatched = _batched(input, dims, name)
    kernel, stride, padding, _, pads, output = _geometry(batched, dims, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    sums = windows(batched, kernel, (1,) * dims, pads, stride, 0.0, output).sum(dim=2)
    if divisor_override is not None:
        result = sums / divisor_override
    else:
        counts = numpy.ones(())
        for size, k, s, p, out in zip(batched.shape[2:], kernel, stride, padding, output):
            counts = numpy.multiply.outer(counts, _divisors(size, k, s, p, out, count_include_pad))
        result = agnostic.div(sums, agnostic.tensor(counts, dtype=input.dtype, device=input.device))
    return result.squeeze(0) if unbatched else result


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over each window of (N, C, L) (or (C, L)) input, as ``torch.nn.functional.avg_pool1d``.

        >>> import agnostic.nn.functional as F
        >>> F.avg_pool1d(agnostic.tensor([[[1.0, 5.0, 2.0, 0.0, 3.0]]]), 2, ceil_mode=True)
        tensor([[[3., 1., 3.]]])
    """
    return _avg_pool(input, 1, "avg_pool1d", kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over each window; padding counts in the divisor with ``count_include_pad`` (windows reaching past
    the padded input under ``ceil_mode`` never count the overhang); ``divisor_override`` replaces the divisor.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 8.0, 6.0]]]])
        >>> F.avg_pool2d(x, 2)
        tensor([[[[3.2500, 4.0000]]]])
        >>> F.avg_pool2d(x, 2, padding=1, count_include_pad=False)
        tensor([[[[1.0000, 3.5000, 0.0000],
                  [3.0000, 6.0000, 6.0000]]]])
    """
    return _avg_pool(input, 2, "avg_pool2d", kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over each window of (N, C, D, H, W) (or (C, D, H, W)) input, as ``torch.nn.functional.avg_pool3d``.

        >>> import agnostic.nn.functional as F
        >>> F.avg_pool3d(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        tensor([[[[[3.5000]]]]])
    """
    return _avg_pool(input, 3, "avg_pool3d", kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _adaptive_bounds(size, output):
    """Each output position's input window [start, end), as PyTorch: floor(i * size / out), ceil((i+1) * size /
    out)."""
    index = numpy.arange(output)
    return (index * size) // output, ((index + 1) * size + output - 1) // output


def _adaptive_output(input, dims, output_size, name):
    batched, unbatched = _batched(input, dims, name)
    sizes = _ntuple(dims, "_ntuple")(output_size)
    if len(sizes) != dims:
        raise RuntimeError(f"{name}: output_size must be {dims} ints (None keeps that input size), got {output_size}")
    spatial = tuple(batched.shape[2:])
    sizes = tuple(size if out is None else int(out) for size, out in zip(spatial, sizes))
    if any(out < 0 for out in sizes) or any(size == 0 for size in spatial):
        raise RuntimeError(f"{name}: expected non-empty input and non-negative output_size, got input of size "
                           f"{list(input.shape)} and output_size {list(sizes)}")
    return batched, unbatched, spatial, sizes


def _adaptive_avg_pool(input, dims, output_size, name):
    batched, unbatched, spatial, sizes = _adaptive_output(input, dims, output_size, name)
    # Window sums as one 0/1 matrix product per dimension (windows are boxes), then one division by their sizes.
    out, counts = batched, numpy.ones(())
    for axis, (size, target) in enumerate(zip(spatial, sizes)):
        starts, ends = _adaptive_bounds(size, target)
        positions = numpy.arange(size)
        inside = (positions[:, None] >= starts) & (positions[:, None] < ends)  # (size, target)
        dim = 2 + axis
        matrix = agnostic.tensor(inside, dtype=input.dtype, device=input.device)
        out = agnostic.matmul(out.movedim(dim, -1), matrix).movedim(-1, dim)
        counts = numpy.multiply.outer(counts, ends - starts)
    out = agnostic.div(out, agnostic.tensor(counts, dtype=input.dtype, device=input.device))
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool1d(input, output_size):
    """Mean over ``output_size`` nearly equal windows of (N, C, L) (or (C, L)) input.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_avg_pool1d(agnostic.tensor([[[1.0, 2.0, 3.0, 4.0, 5.0]]]), 2)
        tensor([[[2., 4.]]])
    """
    return _adaptive_avg_pool(input, 1, output_size, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """Mean over nearly equal windows giving an ``output_size`` (an int, a pair, None keeps a size) plane.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_avg_pool2d(agnostic.arange(16.0).reshape(1, 1, 4, 4), 1)
        tensor([[[[7.5000]]]])
        >>> F.adaptive_avg_pool2d(agnostic.arange(16.0).reshape(1, 4, 4), (2, None)).shape
        agnostic.Size([1, 2, 4])
    """
    return _adaptive_avg_pool(input, 2, output_size, "adaptive_avg_pool2d")


def adaptive_avg_pool3d(input, output_size):
    """Mean over nearly equal windows giving an ``output_size`` (D, H, W) volume.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_avg_pool3d(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
        tensor([[[[[3.5000]]]]])
    """
    return _adaptive_avg_pool(input, 3, output_size, "adaptive_avg_pool3d")


def _adaptive_max_pool(input, dims, output_size, return_indices, name):
    batched, unbatched, spatial, sizes = _adaptive_output(input, dims, output_size, name)
    # Gather every window padded to the longest one by repeating its last element (which changes no maximum and,
    # coming after the original, not which occurrence is first), then take the maximum over the window axes.
    gathered, reads = batched, []
    for axis, (size, target) in enumerate(zip(spatial, sizes)):
        starts, ends = _adaptive_bounds(size, target)
        longest = int((ends - starts).max()) if target else 1
        read = numpy.minimum(starts[:, None] + numpy.arange(longest), ends[:, None] - 1)  # (target, longest)
        reads.append(read)
        dim = 2 + 2 * axis
        index = agnostic.tensor(read.reshape(-1), dtype=agnostic.int64, device=input.device)
        gathered = agnostic.index_select(gathered, dim, index)
        shape = tuple(gathered.shape)
        gathered = gathered.reshape(shape[:dim] + (target, longest) + shape[dim + 1:])
    n, c = batched.shape[:2]
    order = (0, 1) + tuple(2 + 2 * axis for axis in range(dims)) + tuple(3 + 2 * axis for axis in range(dims))
    lengths = tuple(read.shape[1] for read in reads)
    gathered = gathered.permute(order).reshape((n, c) + sizes + (math.prod(lengths),))
    values, offsets = agnostic.max(gathered, dim=-1)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    positions, remaining = [], offsets
    for axis in reversed(range(dims)):
        along = agnostic.remainder(remaining, lengths[axis])
        remaining = agnostic.div(remaining, lengths[axis], rounding_mode="floor")
        shape = [1] * dims
        shape[axis] = sizes[axis]
        read = agnostic.tensor(reads[axis], dtype=agnostic.int64, device=input.device)
        rows = agnostic.arange(sizes[axis], device=input.device).reshape(shape)
        positions.insert(0, read[rows, along])
    indices = _flat_indices(positions, spatial)
    return values, indices.squeeze(0) if unbatched else indices


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Maximum over ``output_size`` nearly equal windows of (N, C, L) (or (C, L)) input.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool1d(agnostic.tensor([[[1.0, 7.0, 3.0, 4.0, 5.0]]]), 2, return_indices=True)
        (tensor([[[7., 5.]]]), tensor([[[1, 4]]]))
    """
    return _adaptive_max_pool(input, 1, output_size, return_indices, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Maximum over nearly equal windows giving an ``output_size`` plane; with ``return_indices`` also the flat
    index of each maximum in its input plane.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool2d(agnostic.arange(16.0).reshape(1, 1, 4, 4), 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
    """
    return _adaptive_max_pool(input, 2, output_size, return_indices, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Maximum over nearly equal windows giving an ``output_size`` (D, H, W) volume.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool3d(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
        tensor([[[[[7.]]]]])
    """
    return _adaptive_max_pool(input, 3, output_size, return_indices, "adaptive_max_pool3d")


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool1d`` that always returns ``(values, indices)`` (``return_indices`` is ignored), as
    ``torch.nn.functional.max_pool1d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.max_pool1d_with_indices(agnostic.tensor([[[1.0, 5.0, 2.0, 0.0]]]), 2)
        (tensor([[[5., 2.]]]), tensor([[[1, 2]]]))
    """
    return _max_pool(input, 1, "max_pool1d", kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool2d`` that always returns ``(values, indices)`` (``return_indices`` is ignored), as
    ``torch.nn.functional.max_pool2d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.max_pool2d_with_indices(agnostic.tensor([[[[1.0, 5.0], [3.0, 4.0]]]]), 2)
        (tensor([[[[5.]]]]), tensor([[[[1]]]]))
    """
    return _max_pool(input, 2, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """``max_pool3d`` that always returns ``(values, indices)`` (``return_indices`` is ignored), as
    ``torch.nn.functional.max_pool3d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.max_pool3d_with_indices(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    return _max_pool(input, 3, "max_pool3d", kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool1d`` that always returns ``(values, indices)``, as
    ``torch.nn.functional.adaptive_max_pool1d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool1d_with_indices(agnostic.tensor([[[1.0, 7.0, 3.0, 4.0, 5.0]]]), 2)
        (tensor([[[7., 5.]]]), tensor([[[1, 4]]]))
    """
    return _adaptive_max_pool(input, 1, output_size, True, "adaptive_max_pool1d")


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool2d`` that always returns ``(values, indices)``, as
    ``torch.nn.functional.adaptive_max_pool2d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool2d_with_indices(agnostic.arange(4.0).reshape(1, 1, 2, 2), 1)
        (tensor([[[[3.]]]]), tensor([[[[3]]]]))
    """
    return _adaptive_max_pool(input, 2, output_size, True, "adaptive_max_pool2d")


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """``adaptive_max_pool3d`` that always returns ``(values, indices)``, as
    ``torch.nn.functional.adaptive_max_pool3d_with_indices``.

        >>> import agnostic.nn.functional as F
        >>> F.adaptive_max_pool3d_with_indices(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 1)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    return _adaptive_max_pool(input, 3, output_size, True, "adaptive_max_pool3d")


__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d", "adaptive_max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "max_pool1d", "max_pool1d_with_indices", "max_pool2d", "max_pool2d_with_indices", "max_pool3d",
           "max_pool3d_with_indices"]
