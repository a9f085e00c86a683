"""max_unpool1d, max_unpool2d and max_unpool3d: put each pooled maximum back at the position max_pool's indices
recorded, zeros elsewhere (a partial inverse of max pooling)."""

import agnostic

from .._utils import _pair, _single, _triple


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    """The spatial output size: the one max pooling came from by default, or ``output_size`` (with or without the
    batch and channel entries) within a stride of it."""
    dims = len(kernel_size)
    default = [(input.shape[input.dim() - dims + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d]
               for d in range(dims)]
    if output_size is None:
        size = default
    else:
        output_size = list(output_size)
        if len(output_size) == dims + 2:
            output_size = output_size[2:]
        if len(output_size) != dims:
            raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} elements, but it has "
                             f"a length of '{len(output_size)}'")
        for d in range(dims):
            low, high = default[d] - stride[d], default[d] + stride[d]
            if not low < output_size[d] < high:
                raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
        size = output_size
    for d in range(dims):
        if size[d] < 0:
            raise ValueError(f"max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{d}]={size[d]}")
    return [int(s) for s in size]


def _max_unpool(input, indices, spatial_size):
    """Scatter each ``(N, C)`` plane of ``input`` into a zero plane of ``spatial_size`` at the flat ``indices``."""
    if indices.dtype != agnostic.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({list(input.shape)}) "
                           f"but got indices tensor with shape: {list(indices.shape)}")
    dims = len(spatial_size)
    if input.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor for input, got {input.dim()}D")
    leading = tuple(input.shape[:input.dim() - dims])
    plane = 1
    for size in spatial_size:
        plane *= size
    flat_indices = indices.reshape(*leading, -1)
    if flat_indices.numel():
        invalid = flat_indices[(flat_indices < 0) | (flat_indices >= plane)]
        if invalid.numel():
            raise RuntimeError(f"Found an invalid max index: {int(invalid[-1])} (output volumes are of size "
                               f"{'x'.join(str(s) for s in spatial_size)})")
    output = agnostic.zeros(*leading, plane, dtype=input.dtype, device=input.device)
    return output.scatter(-1, flat_indices, input.reshape(*leading, -1)).reshape(*leading, *spatial_size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Undo ``max_pool1d(..., return_indices=True)`` on a ``(N, C, L)`` or ``(C, L)`` input: each value goes back to
    its recorded position, the rest are zeros, as ``torch.nn.functional.max_unpool1d``.

        >>> import agnostic.nn.functional as F
        >>> pooled, indices = F.max_pool1d(agnostic.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> F.max_unpool1d(pooled, indices, 2)
        tensor([[[0., 3., 2., 0.]]])
    """
    kernel_size = _single(kernel_size)
    stride = kernel_size if stride is None else _single(stride)
    size = _unpool_output_size(input, kernel_size, stride, _single(padding), output_size)
    return _max_unpool(input, indices, size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Undo ``max_pool2d(..., return_indices=True)`` on a ``(N, C, H, W)`` or ``(C, H, W)`` input: each value goes
    back to its recorded position, the rest are zeros, as ``torch.nn.functional.max_unpool2d``.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])
        >>> pooled, indices = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(pooled, indices, 2)
        tensor([[[[0., 0.],
                  [4., 0.]]]])
    """
    kernel_size = _pair(kernel_size)
    stride = kernel_size if stride is None else _pair(stride)
    size = _unpool_output_size(input, kernel_size, stride, _pair(padding), output_size)
    return _max_unpool(input, indices, size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Undo ``max_pool3d(..., return_indices=True)`` on a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input: each value
    goes back to its recorded position, the rest are zeros, as ``torch.nn.functional.max_unpool3d``.

        >>> import agnostic.nn.functional as F
        >>> pooled, indices = F.max_pool3d(agnostic.arange(8.0).reshape(1, 1, 2, 2, 2), 2, return_indices=True)
        >>> F.max_unpool3d(pooled, indices, 2).flatten()
        tensor([0., 0., 0., 0., 0., 0., 0., 7.])
    """
    kernel_size = _triple(kernel_size)
    stride = kernel_size if stride is None else _triple(stride)
    size = _unpool_output_size(input, kernel_size, stride, _triple(padding), output_size)
    return _max_unpool(input, indices, size)


__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]
