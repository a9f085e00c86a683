"""agnostic.nn.grad: the gradients of convolutions with respect to their input and weight, as torch.nn.grad.

The input gradient is the transposed convolution of the output gradient, with the ``output_padding`` that gives back
the input's size (the rows and columns a strided window never reached get zero); the weight gradient multiplies the
output gradient by the input's sliding windows, group by group, summed over the batch. Both are built from
differentiable agnostic ops, so their results can be differentiated again.
"""

import math

from .functional._conv import _output_size, _per_dimension, conv_transpose1d, conv_transpose2d, conv_transpose3d, \
    windows
from ..ops.linalg import matmul

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]

_TRANSPOSED = {1: conv_transpose1d, 2: conv_transpose2d, 3: conv_transpose3d}


def _geometry(stride, padding, dilation, groups, dims):
    """``stride``, ``padding``, ``dilation`` as tuples of ``dims`` ints, with ``groups``, checked."""
    if isinstance(padding, str):
        raise RuntimeError(f"conv{dims}d gradients take padding as an int or a tuple of ints, not {padding!r}; pass "
                           "the padding that the convolution used")
    stride = _per_dimension(stride, dims, "stride")
    padding = _per_dimension(padding, dims, "padding")
    dilation = _per_dimension(dilation, dims, "dilation")
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:
        raise RuntimeError(f"expected positive stride and dilation and non-negative padding, but got stride={stride}, "
                           f"padding={padding}, dilation={dilation}")
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"non-positive groups is not supported, but got groups={groups}")
    return stride, padding, dilation


def _check_shapes(name, input_shape, weight_shape, grad_output, stride, padding, dilation, groups, dims):
    """Refuse an input, weight and output gradient whose shapes no convolution of this geometry relates."""
    for what, shape in (("input", input_shape), ("weight", weight_shape), ("grad_output", grad_output.shape)):
        if len(shape) != dims + 2:
            raise RuntimeError(f"{name}: expected {dims + 2}-dimensional {what} (batched: minibatch, channels, "
                               f"*spatial), but got {what} of size {list(shape)}")
    batch, channels = input_shape[:2]
    out_channels, per_group = weight_shape[:2]
    if channels != per_group * groups or out_channels % groups:
        raise RuntimeError(f"{name}: given groups={groups}, weight of size {list(weight_shape)} needs an input with "
                           f"{per_group * groups} channels and out channels divisible by {groups}, but the input "
                           f"has size {list(input_shape)}")
    expected = (batch, out_channels) + tuple(
        _output_size(size, k, d, p, p, s)
        for size, k, d, p, s in zip(input_shape[2:], weight_shape[2:], dilation, padding, stride))
    if tuple(grad_output.shape) != expected:
        raise RuntimeError(f"{name}: a convolution of input of size {list(input_shape)} with weight of size "
                           f"{list(weight_shape)}, stride={stride}, padding={padding}, dilation={dilation} gives an "
                           f"output of size {list(expected)}, but grad_output has size {list(grad_output.shape)}")


def _check_same_dtype(name, first, second):
    if first.dtype != second.dtype:
        raise RuntimeError(f"{name}: expected scalar type {first.dtype} but found {second.dtype}; convert both "
                           f"tensors to one dtype with .to()")


def _input_gradient(input_size, weight, grad_output, stride, padding, dilation, groups, dims):
    name = f"conv{dims}d_input"
    input_size = tuple(int(size) for size in input_size)
    stride, padding, dilation = _geometry(stride, padding, dilation, groups, dims)
    _check_shapes(name, input_size, tuple(weight.shape), grad_output, stride, padding, dilation, groups, dims)
    _check_same_dtype(name, grad_output, weight)
    # What the transposed convolution alone would not give back: the input's last elements that no window reached.
    output_padding = tuple(size + 2 * p - d * (k - 1) - 1 - (out - 1) * s for size, out, k, s, p, d in
                           zip(input_size[2:], grad_output.shape[2:], weight.shape[2:], stride, padding, dilation))
    return _TRANSPOSED[dims](grad_output, weight, None, stride, padding, output_padding, groups, dilation)


def _weight_gradient(input, weight_size, grad_output, stride, padding, dilation, groups, dims):
    name = f"conv{dims}d_weight"
    weight_size = tuple(int(size) for size in weight_size)
    stride, padding, dilation = _geometry(stride, padding, dilation, groups, dims)
    _check_shapes(name, tuple(input.shape), weight_size, grad_output, stride, padding, dilation, groups, dims)
    _check_same_dtype(name, grad_output, input)
    batch, channels = input.shape[:2]
    out_channels, kernel = weight_size[0], weight_size[2:]
    output = tuple(grad_output.shape[2:])
    pads = tuple(p for p in padding for _ in range(2))
    columns = windows(input, kernel, dilation, pads, stride, output=output)  # (N, C, prod(kernel), *output)
    columns = columns.reshape(batch, groups, channels // groups * math.prod(kernel), math.prod(output))
    grads = grad_output.reshape(batch, groups, out_channels // groups, math.prod(output))
    return matmul(grads, columns.transpose(-1, -2)).sum(0).reshape(weight_size)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its input, of shape ``input_size`` (minibatch, in channels,
    width), given the ``weight`` (out channels, in channels / groups, kernel width) and the output gradient
    ``grad_output`` (minibatch, out channels, output width), as ``torch.nn.grad.conv1d_input``.

        >>> weight = agnostic.tensor([[[1.0, 10.0]]])
        >>> agnostic.nn.grad.conv1d_input((1, 1, 4), weight, agnostic.tensor([[[1.0, 2.0, 3.0]]]))
        tensor([[[ 1., 12., 23., 30.]]])
    """
    return _input_gradient(input_size, weight, grad_output, stride, padding, dilation, groups, 1)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv1d`` with respect to its weight, of shape ``weight_size`` (out channels,
    in channels / groups, kernel width), given the ``input`` (minibatch, in channels, width) and the output gradient
    ``grad_output`` (minibatch, out channels, output width), as ``torch.nn.grad.conv1d_weight``.

        >>> input = agnostic.tensor([[[1.0, 2.0, 3.0, 4.0]]])
        >>> agnostic.nn.grad.conv1d_weight(input, (1, 1, 2), agnostic.tensor([[[1.0, 0.0, 1.0]]]))
        tensor([[[4., 6.]]])
    """
    return _weight_gradient(input, weight_size, grad_output, stride, padding, dilation, groups, 1)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its input, of shape ``input_size`` (minibatch, in channels,
    height, width), given the ``weight`` (out channels, in channels / groups, kernel height, kernel width) and the
    output gradient ``grad_output`` (minibatch, out channels, output height, output width), as
    ``torch.nn.grad.conv2d_input``.

        >>> weight = agnostic.ones(1, 1, 2, 2)
        >>> agnostic.nn.grad.conv2d_input((1, 1, 3, 3), weight, agnostic.ones(1, 1, 1, 1), stride=2)
        tensor([[[[1., 1., 0.],
                  [1., 1., 0.],
                  [0., 0., 0.]]]])
    """
    return _input_gradient(input_size, weight, grad_output, stride, padding, dilation, groups, 2)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv2d`` with respect to its weight, of shape ``weight_size`` (out channels,
    in channels / groups, kernel height, kernel width), given the ``input`` (minibatch, in channels, height, width)
    and the output gradient ``grad_output`` (minibatch, out channels, output height, output width), as
    ``torch.nn.grad.conv2d_weight``.

        >>> input = agnostic.arange(9.0).reshape(1, 1, 3, 3)
        >>> agnostic.nn.grad.conv2d_weight(input, (1, 1, 2, 2), agnostic.ones(1, 1, 2, 2))
        tensor([[[[ 8., 12.],
                  [20., 24.]]]])
    """
    return _weight_gradient(input, weight_size, grad_output, stride, padding, dilation, groups, 2)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its input, of shape ``input_size`` (minibatch, in channels,
    depth, height, width), given the ``weight`` (out channels, in channels / groups, kernel depth, height, width)
    and the output gradient ``grad_output`` (minibatch, out channels, output depth, height, width), as
    ``torch.nn.grad.conv3d_input``.

        >>> weight = agnostic.ones(1, 1, 2, 2, 2)
        >>> agnostic.nn.grad.conv3d_input((1, 1, 3, 3, 3), weight, agnostic.ones(1, 1, 2, 2, 2))[0, 0, 1]
        tensor([[2., 4., 2.],
                [4., 8., 4.],
                [2., 4., 2.]])
    """
    return _input_gradient(input_size, weight, grad_output, stride, padding, dilation, groups, 3)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``conv3d`` with respect to its weight, of shape ``weight_size`` (out channels,
    in channels / groups, kernel depth, height, width), given the ``input`` (minibatch, in channels, depth, height,
    width) and the output gradient ``grad_output`` (minibatch, out channels, output depth, height, width), as
    ``torch.nn.grad.conv3d_weight``.

        >>> input = agnostic.ones(1, 1, 3, 3, 3)
        >>> agnostic.nn.grad.conv3d_weight(input, (1, 1, 2, 2, 2), agnostic.ones(1, 1, 2, 2, 2)).flatten()
        tensor([8., 8., 8., 8., 8., 8., 8., 8.])
    """
    return _weight_gradient(input, weight_size, grad_output, stride, padding, dilation, groups, 3)
