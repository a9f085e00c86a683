"""Converting convolution weights' memory format, as torch.nn.utils.memory_format: each weight becomes a copy laid
out in the given format (``agnostic.channels_last``: the strides of an NHWC buffer, as PyTorch's), with the same
values, in place of the old one."""

from ...autograd import no_grad
from ..conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..module import _set_data

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, kinds, memory_format):
    if isinstance(module, kinds):
        with no_grad():
            _set_data(module.weight, module.weight.detach().clone(memory_format=memory_format))
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give the weight of every ``Conv2d``/``ConvTranspose2d`` in ``module`` (itself included) ``memory_format``, as
    PyTorch's. Returns ``module``.

        >>> net = agnostic.nn.Sequential(agnostic.nn.Conv2d(1, 2, 3), agnostic.nn.ReLU())
        >>> agnostic.nn.utils.convert_conv2d_weight_memory_format(net, agnostic.channels_last)[0].weight.stride()
        (9, 1, 3, 1)
    """
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give the weight of every ``Conv3d``/``ConvTranspose3d`` in ``module`` (itself included) ``memory_format``, as
    PyTorch's. Returns ``module``.

        >>> net = agnostic.nn.Sequential(agnostic.nn.Conv3d(1, 2, 3))
        >>> agnostic.nn.utils.convert_conv3d_weight_memory_format(net, agnostic.channels_last_3d)[0].weight.stride()
        (27, 1, 9, 3, 1)
    """
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
