"""conv2d as im2col + matmul, and the unfold/fold pair it is built on (each the other's backward)."""

import agnostic

from ...autograd import Function
from .._utils import _pair


def _output_size(size, kernel, dilation, pad_before, pad_after, stride):
    return (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1


def _window_slices(kernel, dilation, stride, output):
    """For each kernel offset along one dimension, the slice of the padded input its windows read."""
    return [slice(i * dilation, i * dilation + stride * (output - 1) + 1, stride) for i in range(kernel)]


def _padded(input, padding, fill):
    top, bottom, left, right = padding
    if not any(padding):
        return input
    n, c, h, w = input.shape
    out = agnostic.full((n, c, h + top + bottom, w + left + right), fill, dtype=input.dtype, device=input.device)
    out[:, :, top:top + h, left:left + w] = input
    return out


class _Unfold(Function):
    """(N, C, H, W) -> (N, C, kh*kw, oh, ow): every sliding window's elements (padding reads ``fill``)."""

    @staticmethod
    def forward(ctx, input, kernel, dilation, padding, stride, fill, output):
        ctx.geometry = (tuple(input.shape), kernel, dilation, padding, stride, output)
        padded = _padded(input, padding, fill)
        rows = _window_slices(kernel[0], dilation[0], stride[0], output[0])
        cols = _window_slices(kernel[1], dilation[1], stride[1], output[1])
        return agnostic.stack([padded[:, :, r, c] for r in rows for c in cols], dim=2)

    @staticmethod
    def backward(ctx, grad):
        return (_Fold.apply(grad, *ctx.geometry),) + (None,) * 6


class _Fold(Function):
    """The adjoint of ``_Unfold``: sums each window's values back into an (N, C, H, W) tensor."""

    @staticmethod
    def forward(ctx, columns, shape, kernel, dilation, padding, stride, output):
        ctx.geometry = (kernel, dilation, padding, stride, output)
        n, c, h, w = shape
        top, bottom, left, right = padding
        out = agnostic.zeros((n, c, h + top + bottom, w + left + right), dtype=columns.dtype, device=columns.device)
        rows = _window_slices(kernel[0], dilation[0], stride[0], output[0])
        cols = _window_slices(kernel[1], dilation[1], stride[1], output[1])
        for k, (r, c_) in enumerate((r, c_) for r in rows for c_ in cols):
            window = out[:, :, r, c_]
            window += columns[:, :, k]
        return out[:, :, top:top + h, left:left + w].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return (_Unfold.apply(grad, *ctx.geometry[:4], 0.0, ctx.geometry[4]),) + (None,) * 6


def windows(input, kernel, dilation, padding, stride, fill=0.0, output=None):
    """Differentiable sliding windows of a 4-D input: (N, C, kh*kw, oh, ow). ``padding`` is (top, bottom, left,
    right); ``output`` (oh, ow) defaults to what fits."""
    if output is None:
        output = (_output_size(input.shape[2], kernel[0], dilation[0], padding[0], padding[1], stride[0]),
                  _output_size(input.shape[3], kernel[1], dilation[1], padding[2], padding[3], stride[1]))
    return _Unfold.apply(input, tuple(kernel), tuple(dilation), tuple(padding), tuple(stride), fill, tuple(output))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C*kh*kw, L), each column one sliding window (3-D input: unbatched).

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.arange(9.0).reshape(1, 1, 3, 3)
        >>> F.unfold(x, kernel_size=2)
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != 4:
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    ph, pw = _pair(padding)
    columns = windows(input, _pair(kernel_size), _pair(dilation), (ph, ph, pw, pw), _pair(stride))
    n, c, k, oh, ow = columns.shape
    columns = columns.reshape(n, c * k, oh * ow)
    return columns.squeeze(0) if unbatched else columns


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of ``unfold``: (N, C*kh*kw, L) -> (N, C, H, W), overlapping values summed.

        >>> import agnostic.nn.functional as F
        >>> columns = F.unfold(agnostic.ones(1, 1, 3, 3), kernel_size=2)
        >>> F.fold(columns, output_size=(3, 3), kernel_size=2)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    unbatched = input.dim() == 2
    if unbatched:
        input = input.unsqueeze(0)
    kernel, dilation, stride = _pair(kernel_size), _pair(dilation), _pair(stride)
    (ph, pw), (h, w) = _pair(padding), _pair(output_size)
    padding = (ph, ph, pw, pw)
    n, ck, length = input.shape
    k = kernel[0] * kernel[1]
    output = (_output_size(h, kernel[0], dilation[0], ph, ph, stride[0]),
              _output_size(w, kernel[1], dilation[1], pw, pw, stride[1]))
    if ck % k or output[0] * output[1] != length:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, and "
                           f"the number of blocks {length} to match {output[0] * output[1]}; got input of shape "
                           f"{list(input.shape)}")
    columns = input.reshape(n, ck // k, k, output[0], output[1])
    out = _Fold.apply(columns, (n, ck // k, h, w), kernel, dilation, padding, stride, output)
    return out.squeeze(0) if unbatched else out


def _conv_padding(padding, kernel, dilation, stride):
    """(top, bottom, left, right) for ``padding`` (ints, pairs, 'valid' or 'same')."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]  # extra on the bottom/right, as PyTorch
            return tuple(pads)
        raise RuntimeError(f"Invalid padding string: {padding!r}")
    ph, pw = _pair(padding)
    return (ph, ph, pw, pw)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of (N, C, H, W) input (or unbatched (C, H, W)) with (O, C/groups, kh, kw) weights.

        >>> import agnostic.nn.functional as F
        >>> x = agnostic.arange(16.0).reshape(1, 1, 4, 4)
        >>> weight = agnostic.ones(1, 1, 2, 2)
        >>> F.conv2d(x, weight, stride=2)
        tensor([[[[10., 18.],
                  [42., 50.]]]])
        >>> F.conv2d(x, weight, padding=1).shape
        agnostic.Size([1, 1, 5, 5])
    """
    unbatched = input.dim() == 3
    if unbatched:
        input = input.unsqueeze(0)
    if input.dim() != 4:
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
                           f"{list(input.shape)}")
    n, channels, h, w = input.shape
    out_channels, per_group, kh, kw = weight.shape
    if channels != per_group * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {per_group * groups} channels, but got {channels} channels "
                           "instead")
    if out_channels % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    stride, dilation = _pair(stride), _pair(dilation)
    pads = _conv_padding(padding, (kh, kw), dilation, stride)
    padded = (h + pads[0] + pads[1], w + pads[2] + pads[3])
    reach = (dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
    if padded[0] < reach[0] or padded[1] < reach[1]:
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x {padded[1]}). Kernel size: "
                           f"({reach[0]} x {reach[1]}). Kernel size can't be greater than actual input size")
    columns = windows(input, (kh, kw), dilation, pads, stride)
    oh, ow = columns.shape[-2:]
    columns = columns.reshape(n, groups, per_group * kh * kw, oh * ow)
    kernels = weight.reshape(groups, out_channels // groups, per_group * kh * kw)
    out = agnostic.matmul(kernels, columns).reshape(n, out_channels, oh, ow)
    if bias is not None:
        out = agnostic.add(out, bias.reshape(1, -1, 1, 1))
    return out.squeeze(0) if unbatched else out
