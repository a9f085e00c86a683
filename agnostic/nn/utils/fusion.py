"""Folding an eval-mode BatchNorm into the convolution or linear layer before it, as torch.nn.utils.fusion."""

import copy

import agnostic
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval! Call .eval() on both modules before fusing them.")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None: fuse a BatchNorm built with "
                             "track_running_stats=True")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` (eval mode) computing ``bn(conv(x))`` (``bn`` in eval mode) in one convolution: the
    BatchNorm's scale folds into the weight, its shift into the bias. ``transpose`` for ConvTranspose layers.

        >>> conv, bn = agnostic.nn.Conv2d(2, 3, 3).eval(), agnostic.nn.BatchNorm2d(3).eval()
        >>> fused = agnostic.nn.utils.fuse_conv_bn_eval(conv, bn)
        >>> x = agnostic.randn(1, 2, 5, 5)
        >>> agnostic.allclose(fused(x), bn(conv(x)), atol=1e-6)
        True
    """
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """``(weight, bias)`` Parameters of the convolution equal to a convolution (``conv_w``, ``conv_b`` or None)
    followed by an eval-mode BatchNorm (running mean/var, eps, affine weight/bias or None), in the dtypes of
    ``conv_w`` and ``conv_b``. ``transpose`` scales dim 1 of the weight (ConvTranspose) instead of dim 0.

        >>> w, b = agnostic.nn.utils.fuse_conv_bn_weights(
        ...     agnostic.ones(2, 1, 1, 1), None, agnostic.tensor([1.0, 2.0]), agnostic.tensor([4.0, 1.0]), 0.0,
        ...     agnostic.tensor([2.0, 3.0]), agnostic.tensor([0.5, 0.5]))
        >>> w.flatten().tolist(), b.tolist()
        ([1.0, 3.0], [-0.5, -5.5])
    """
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    conv_b = agnostic.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = agnostic.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = agnostic.zeros_like(bn_rm) if bn_b is None else bn_b
    var_rsqrt = agnostic.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) computing ``bn(linear(x))`` (``bn`` in eval mode, with ``out_features``
    features or a single one) in one linear layer.

        >>> linear, bn = agnostic.nn.Linear(3, 2).eval(), agnostic.nn.BatchNorm1d(2).eval()
        >>> fused = agnostic.nn.utils.fuse_linear_bn_eval(linear, bn)
        >>> x = agnostic.randn(4, 3)
        >>> agnostic.allclose(fused(x), bn(linear(x)), atol=1e-6)
        True
    """
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """``(weight, bias)`` Parameters of the linear layer equal to a linear layer (``linear_w``, ``linear_b`` or None)
    followed by an eval-mode BatchNorm (running mean/var, eps, affine weight/bias), in the linear layer's dtypes.

        >>> w, b = agnostic.nn.utils.fuse_linear_bn_weights(
        ...     agnostic.ones(2, 1), agnostic.zeros(2), agnostic.tensor([1.0, 2.0]), agnostic.tensor([4.0, 1.0]), 0.0,
        ...     agnostic.tensor([2.0, 3.0]), agnostic.tensor([0.5, 0.5]))
        >>> w.flatten().tolist(), b.tolist()
        ([1.0, 3.0], [-0.5, -5.5])
    """
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    linear_b = agnostic.zeros_like(bn_rm) if linear_b is None else linear_b
    bn_scale = bn_w * agnostic.rsqrt(bn_rv + bn_eps)
    fused_w = linear_w * bn_scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * bn_scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
