"""N-d convolution and transposed convolution as im2col + matmul, and the unfold/fold pair they are built on (each
the other's backward)."""

import itertools
import math

import agnostic

from ... import _autocast
from ...autograd import Function
from .._utils import _ntuple, _pair


def _output_size(size, kernel, dilation, pad_before, pad_after, stride):
    return (size + pad_before + pad_after - dilation * (kernel - 1) - 1) // stride + 1


def _window_slices(kernel, dilation, stride, output):
    """For each kernel offset along one dimension, the slice of the padded input its windows read."""
    return [slice(i * dilation, i * dilation + stride * (output - 1) + 1, stride) for i in range(kernel)]


def _kernel_offsets(kernel, dilation, stride, output):
    """Per kernel position (row-major over the spatial dimensions), the index tuple of the windows it reads."""
    per_dim = [_window_slices(k, d, s, o) for k, d, s, o in zip(kernel, dilation, stride, output)]
    return [(slice(None), slice(None)) + combination for combination in itertools.product(*per_dim)]


def _padded(input, padding, fill):
    """``input`` (N, C, *spatial) with ``padding`` = (before, after) per spatial dimension, flattened."""
    if not any(padding):
        return input
    spatial = input.shape[2:]
    befores, afters = padding[0::2], padding[1::2]
    shape = tuple(input.shape[:2]) + tuple(s + b + a for s, b, a in zip(spatial, befores, afters))
    out = agnostic.full(shape, fill, dtype=input.dtype, device=input.device)
    out[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(befores, spatial))] = input
    return out


class _Unfold(Function):
    """(N, C, *spatial) -> (N, C, prod(kernel), *output): every sliding window's elements (padding reads ``fill``)."""

    @staticmethod
    def forward(ctx, input, kernel, dilation, padding, stride, fill, output):
        ctx.geometry = (tuple(input.shape), kernel, dilation, padding, stride, output)
        padded = _padded(input, padding, fill)
        return agnostic.stack([padded[index] for index in _kernel_offsets(kernel, dilation, stride, output)], dim=2)

    @staticmethod
    def backward(ctx, grad):
        return (_Fold.apply(grad, *ctx.geometry),) + (None,) * 6


class _Fold(Function):
    """The adjoint of ``_Unfold``: sums each window's values back into an (N, C, *spatial) tensor."""

    @staticmethod
    def forward(ctx, columns, shape, kernel, dilation, padding, stride, output):
        ctx.geometry = (kernel, dilation, padding, stride, output)
        befores, afters = padding[0::2], padding[1::2]
        spatial = shape[2:]
        padded_shape = tuple(shape[:2]) + tuple(s + b + a for s, b, a in zip(spatial, befores, afters))
        out = agnostic.zeros(padded_shape, dtype=columns.dtype, device=columns.device)
        for k, index in enumerate(_kernel_offsets(kernel, dilation, stride, output)):
            window = out[index]
            window += columns[:, :, k]
        return out[(slice(None), slice(None)) + tuple(slice(b, b + s) for b, s in zip(befores, spatial))].contiguous()

    @staticmethod
    def backward(ctx, grad):
        return (_Unfold.apply(grad, *ctx.geometry[:4], 0.0, ctx.geometry[4]),) + (None,) * 6


class _Convolution(Function):
    """The grouped matmul's result in the convolution's output shape, as a tensor of its own rather than a view (as
    PyTorch's convolution output is, so that in-place ops on it, as ``ReLU(inplace=True)``, are plain ones); it
    shares the memory of that result, which nothing else holds, so nothing is copied."""

    @staticmethod
    def forward(ctx, products, shape):
        ctx.shape = products.shape
        return products.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


def windows(input, kernel, dilation, padding, stride, fill=0.0, output=None):
    """Differentiable sliding windows of an (N, C, *spatial) input: (N, C, prod(kernel), *output). ``padding`` is
    (before, after) per spatial dimension, flattened; ``output`` defaults to what fits."""
    if output is None:
        output = tuple(_output_size(size, k, d, padding[2 * i], padding[2 * i + 1], s)
                       for i, (size, k, d, s) in enumerate(zip(input.shape[2:], kernel, dilation, stride)))
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
    _check_sliding_blocks(_pair(kernel_size), _pair(dilation), (ph, pw), _pair(stride))
    blocks = tuple(_output_size(size, k, d, p, p, st) for size, k, d, p, st in
                   zip(input.shape[2:], _pair(kernel_size), _pair(dilation), (ph, pw), _pair(stride)))
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(input.shape[2:])}, kernel_size={_pair(kernel_size)}, "
                           f"dilation={_pair(dilation)}, padding={(ph, pw)}, calculated shape of the array of sliding "
                           f"blocks as {blocks}, but its components must be at least one.")
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
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    unbatched = input.dim() == 2
    if unbatched:
        input = input.unsqueeze(0)
    kernel, dilation, stride = _pair(kernel_size), _pair(dilation), _pair(stride)
    (ph, pw), (h, w) = _pair(padding), _pair(output_size)
    _check_sliding_blocks(kernel, dilation, (ph, pw), stride)
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


def _check_sliding_blocks(kernel, dilation, padding, stride):
    """fold/unfold's geometry checks, with PyTorch's messages (a zero stride would otherwise divide by zero)."""
    for what, name, values, low in (("kernel size", "kernel", kernel, 1), ("stride", "stride", stride, 1),
                                    ("dilation", "dilation", dilation, 1), ("padding", "pad", padding, 0)):
        if min(values) < low:
            raise RuntimeError(f"{what} should be {'greater than zero' if low else 'non-negative'}, but got "
                               f"{name}_height: {values[0]} {name}_width: {values[1]}")


def _conv_padding(padding, kernel, dilation, stride):
    """(before, after) per spatial dimension, flattened, for ``padding`` (ints, tuples, 'valid' or 'same')."""
    dims = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * dims)
        if padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]  # the odd one goes after, as PyTorch
            return tuple(pads)
        raise RuntimeError(f"Invalid padding string: {padding!r}")
    return tuple(p for p in _ntuple(dims, "_ntuple")(padding) for _ in range(2))


def _per_dimension(value, dims, what):
    """``value`` as a tuple of ``dims`` ints (an int repeats), refusing a tuple of the wrong length."""
    values = _ntuple(dims, "_ntuple")(value)
    if len(values) != dims:
        raise RuntimeError(f"expected {what} to be a single integer value or a list of {dims} values to match the "
                           f"convolution dimensions, but got {what}={list(values)}")
    return tuple(int(v) for v in values)


def _batched(input, dims, name):
    """``input`` with a batch dimension, and whether it lacked one; checks the rank."""
    if input.dim() == dims + 1:
        return input.unsqueeze(0), True
    if input.dim() != dims + 2:
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got input "
                           f"of size: {list(input.shape)}")
    return input, False


def _check_weight(weight, dims, name):
    if weight.dim() != dims + 2:
        raise RuntimeError(f"{name}: expected weight to be {dims + 2}-dimensional, but got weight of size "
                           f"{list(weight.shape)}; pass a weight of shape (out, in / groups, *kernel_size)")


def _convolution(input, weight, bias, stride, padding, dilation, groups, dims, name):
    """Cross-correlation over the last ``dims`` dimensions: im2col windows, then one batched matmul per group."""
    input, unbatched = _batched(input, dims, name)
    _check_weight(weight, dims, name)
    n, channels = input.shape[:2]
    out_channels, per_group = weight.shape[:2]
    kernel = tuple(weight.shape[2:])
    if channels != per_group * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {per_group * groups} channels, but got {channels} channels "
                           "instead")
    if out_channels % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    stride, dilation = _per_dimension(stride, dims, "stride"), _per_dimension(dilation, dims, "dilation")
    if not isinstance(padding, str):
        padding = _per_dimension(padding, dims, "padding")
    pads = _conv_padding(padding, kernel, dilation, stride)
    padded = tuple(size + pads[2 * i] + pads[2 * i + 1] for i, size in enumerate(input.shape[2:]))
    reach = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size can't be greater than actual input size")
    columns = windows(input, kernel, dilation, pads, stride)
    output = tuple(columns.shape[3:])
    size = per_group * math.prod(kernel)
    columns = columns.reshape(n, groups, size, math.prod(output))
    kernels = weight.reshape(groups, out_channels // groups, size)
    out = _Convolution.apply(agnostic.matmul(kernels, columns), (n, out_channels) + output)
    if bias is not None:
        out = agnostic.add(out, bias.reshape((1, -1) + (1,) * dims))
    return out.squeeze(0) if unbatched else out


@_autocast.policy
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of (N, C, L) input (or unbatched (C, L)) with (O, C/groups, k) weights.

        >>> import agnostic.nn.functional as F
        >>> F.conv1d(agnostic.tensor([[[1.0, 2.0, 3.0, 4.0]]]), agnostic.tensor([[[1.0, -1.0]]]))
        tensor([[[-1., -1., -1.]]])
    """
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@_autocast.policy
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
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


@_autocast.policy
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation of (N, C, D, H, W) input (or unbatched (C, D, H, W)) with (O, C/groups, kd, kh, kw)
    weights.

        >>> import agnostic.nn.functional as F
        >>> F.conv3d(agnostic.ones(1, 1, 3, 3, 3), agnostic.ones(1, 1, 2, 2, 2)).shape
        agnostic.Size([1, 1, 2, 2, 2])
        >>> F.conv3d(agnostic.ones(1, 1, 2, 2, 2), agnostic.ones(1, 1, 2, 2, 2)).flatten()
        tensor([8.])
    """
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, dims, name):
    """The adjoint of ``_convolution`` in its input: each input value scatters ``weight``-scaled copies into the
    output (one matmul per group to build the columns, then fold)."""
    if isinstance(padding, str):
        raise RuntimeError(f"{name}: padding must be an int or a tuple of ints, not {padding!r}")
    input, unbatched = _batched(input, dims, name)
    _check_weight(weight, dims, name)
    n, channels = input.shape[:2]
    if weight.shape[0] != channels:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {weight.shape[0]} channels, but got {channels} channels "
                           "instead")
    if channels % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but "
                           f"got weight of size {list(weight.shape)} instead")
    stride, padding = _per_dimension(stride, dims, "stride"), _per_dimension(padding, dims, "padding")
    dilation = _per_dimension(dilation, dims, "dilation")
    output_padding = _per_dimension(output_padding, dims, "output_padding")
    kernel = tuple(weight.shape[2:])
    for extra, s, d in zip(output_padding, stride, dilation):
        if extra >= s and extra >= d:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={output_padding}, stride={stride} and dilation={dilation}")
    spatial = tuple(input.shape[2:])
    output = tuple((size - 1) * s - 2 * p + d * (k - 1) + extra + 1
                   for size, s, p, d, k, extra in zip(spatial, stride, padding, dilation, kernel, output_padding))
    if any(size <= 0 for size in output):
        raise RuntimeError(f"Given input size per channel: {list(spatial)}. Calculated output size per channel: "
                           f"{list(output)}. Output size is too small")
    per_group_out = weight.shape[1]
    size = per_group_out * math.prod(kernel)
    kernels = weight.reshape(groups, channels // groups, size).transpose(1, 2)
    flat = input.reshape(n, groups, channels // groups, math.prod(spatial))
    columns = agnostic.matmul(kernels, flat).reshape((n, groups * per_group_out, math.prod(kernel)) + spatial)
    pads = tuple(p for p in padding for _ in range(2))
    out = _Fold.apply(columns, (n, groups * per_group_out) + output, kernel, dilation, pads, stride, spatial)
    if bias is not None:
        out = agnostic.add(out, bias.reshape((1, -1) + (1,) * dims))
    return out.squeeze(0) if unbatched else out


@_autocast.policy
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution (the input-gradient of ``conv1d``) of (N, C, L) input with (C, O/groups, k)
    weights.

        >>> import agnostic.nn.functional as F
        >>> F.conv_transpose1d(agnostic.tensor([[[1.0, 2.0]]]), agnostic.tensor([[[1.0, 10.0]]]))
        tensor([[[ 1., 12., 20.]]])
    """
    return _transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                                   "conv_transpose1d")


@_autocast.policy
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution (the input-gradient of ``conv2d``) of (N, C, H, W) input with
    (C, O/groups, kh, kw) weights.

        >>> import agnostic.nn.functional as F
        >>> F.conv_transpose2d(agnostic.ones(1, 1, 2, 2), agnostic.ones(1, 1, 2, 2), stride=2)
        tensor([[[[1., 1., 1., 1.],
                  [1., 1., 1., 1.],
                  [1., 1., 1., 1.],
                  [1., 1., 1., 1.]]]])
        >>> F.conv_transpose2d(agnostic.ones(1, 1, 2, 2), agnostic.ones(1, 1, 2, 2))
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    return _transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                                   "conv_transpose2d")


@_autocast.policy
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution (the input-gradient of ``conv3d``) of (N, C, D, H, W) input with
    (C, O/groups, kd, kh, kw) weights.

        >>> import agnostic.nn.functional as F
        >>> F.conv_transpose3d(agnostic.ones(1, 1, 2, 2, 2), agnostic.ones(1, 1, 2, 2, 2), stride=2).shape
        agnostic.Size([1, 1, 4, 4, 4])
    """
    return _transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                                   "conv_transpose3d")



def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a (time, batch, channels) sequence, as ``torch.conv_tbc``: ``weight`` is (kernel width,
    in channels, out channels), ``bias`` (out channels), ``pad`` zeros added at both ends of time.

        >>> agnostic.conv_tbc(agnostic.ones(4, 1, 2), agnostic.ones(3, 2, 1), agnostic.zeros(1)).flatten()
        tensor([6., 6.])
    """
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError(f"Input dim 2 (input channels) is not == dim 1 in the weight tensor: {input.shape[2]} "
                           f"!= {weight.shape[1]}")
    if bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"Bias size must equal dim 2 in the weight tensor (output channels): {bias.shape[0]} "
                           f"!= {weight.shape[2]}")
    output = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return output.permute(2, 0, 1)

__all__ = ["conv_tbc", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "fold",
           "unfold"]
