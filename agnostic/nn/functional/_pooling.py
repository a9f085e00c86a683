"""max_pool2d and avg_pool2d over sliding windows (PyTorch's output sizes, ceil_mode and divisors)."""

import numpy

import agnostic

from .._utils import _pair
from ._conv import windows


def _pool_output(size, kernel, pad, stride, dilation, ceil_mode):
    reach = dilation * (kernel - 1) + 1
    out = (size + 2 * pad - reach + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1  # the last window must start inside the input or the left padding
    return out


def _geometry(input, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) else _pair(stride)
    padding, dilation = _pair(padding), _pair(dilation)
    for pad, k, d in zip(padding, kernel, dilation):
        if pad > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pad}, "
                               f"kernel_size={k} and dilation={d}")
    c, h, w = input.shape[-3:]
    output = tuple(_pool_output(size, k, p, s, d, ceil_mode)
                   for size, k, p, s, d in zip((h, w), kernel, padding, stride, dilation))
    if output[0] <= 0 or output[1] <= 0:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{output[0]}x{output[1]}). "
                           "Output size is too small")
    # ceil_mode windows may hang over the bottom/right edge: pad enough for them (never less than ``padding``).
    pads = []
    for size, k, p, s, d, out in zip((h, w), kernel, padding, stride, dilation, output):
        pads += [p, max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)]
    return kernel, stride, padding, dilation, tuple(pads), output


def _batched(input, name):
    if input.dim() == 3:
        return input.unsqueeze(0), True
    if input.dim() != 4:
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor for input, got {input.dim()}D")
    return input, False


def _lowest(dtype):
    return -float("inf") if dtype.is_floating_point else agnostic.iinfo(dtype).min


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Maximum over each window; with ``return_indices`` also each maximum's flat index into its input plane.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 8.0, 6.0]]]])
        >>> F.max_pool2d(x, 2)
        tensor([[[[5., 8.]]]])
        >>> F.max_pool2d(x, 2, return_indices=True)[1]
        tensor([[[[1, 6]]]])
    """
    batched, unbatched = _batched(input, "max_pool2d")
    kernel, stride, padding, dilation, pads, output = _geometry(batched, kernel_size, stride, padding, dilation,
                                                                ceil_mode)
    columns = windows(batched, kernel, dilation, pads, stride, _lowest(input.dtype), output)
    values, positions = agnostic.max(columns, dim=2)
    if unbatched:
        values = values.squeeze(0)
    if not return_indices:
        return values
    device = input.device
    rows = agnostic.arange(output[0], device=device).reshape(-1, 1) * stride[0] - padding[0]
    cols = agnostic.arange(output[1], device=device).reshape(1, -1) * stride[1] - padding[1]
    row = rows + agnostic.div(positions, kernel[1], rounding_mode="floor") * dilation[0]
    col = cols + agnostic.remainder(positions, kernel[1]) * dilation[1]
    indices = row * batched.shape[3] + col
    return values, indices.squeeze(0) if unbatched else indices


def _divisors(size, kernel, stride, pad, output, count_include_pad):
    starts = numpy.arange(output) * stride - pad
    ends = numpy.minimum(starts + kernel, size + pad)
    if count_include_pad:
        counts = ends - starts
    else:
        counts = numpy.minimum(ends, size) - numpy.maximum(starts, 0)
    return numpy.maximum(counts, 1)  # windows wholly in the padding sum to 0 (PyTorch gives 0 there too)


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
    batched, unbatched = _batched(input, "avg_pool2d")
    kernel, stride, padding, _, pads, output = _geometry(batched, kernel_size, stride, padding, 1, ceil_mode)
    sums = windows(batched, kernel, (1, 1), pads, stride, 0.0, output).sum(dim=2)
    if divisor_override is not None:
        result = sums / divisor_override
    else:
        h, w = batched.shape[2:]
        counts = numpy.outer(_divisors(h, kernel[0], stride[0], padding[0], output[0], count_include_pad),
                             _divisors(w, kernel[1], stride[1], padding[1], output[1], count_include_pad))
        result = agnostic.div(sums, agnostic.tensor(counts, dtype=input.dtype, device=input.device))
    return result.squeeze(0) if unbatched else result
