"""Normalization layers: BatchNorm1d/2d/3d (running statistics, momentum, eval mode), InstanceNorm1d/2d/3d,
GroupNorm, LayerNorm, RMSNorm and LocalResponseNorm."""

from .. import _dtypes
from ..ops import creation
from . import functional as F, init
from .module import Module
from .parameter import Parameter


class _BatchNorm(Module):
    """Shared BatchNorm machinery: affine ``weight``/``bias`` (ones/zeros) and the running-statistics buffers
    ``running_mean`` (zeros), ``running_var`` (ones) and ``num_batches_tracked``."""

    _version = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(creation.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(creation.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", creation.zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", creation.ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", creation.tensor(0, dtype=_dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batches tracked."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Reset the running statistics and the affine parameters (weight ones, bias zeros)."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def forward(self, input):
        """Batch statistics in training (updating the running ones; ``momentum=None`` gives a cumulative
        average), running statistics in eval mode when they are tracked."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, factor, self.eps)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        version = local_metadata.get("version")
        if (version is None or version < 2) and self.track_running_stats:
            # state_dicts from before num_batches_tracked existed: keep ours rather than report it missing
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None else \
                    creation.tensor(0, dtype=_dtypes.int64)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) inputs, as ``torch.nn.BatchNorm1d``.

        >>> norm = agnostic.nn.BatchNorm1d(2)
        >>> norm(agnostic.tensor([[1.0, 10.0], [3.0, 30.0]]))
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], grad_fn=<...>)
        >>> norm.running_mean
        tensor([0.2000, 2.0000])
    """

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) inputs, as ``torch.nn.BatchNorm2d``.

        >>> _ = agnostic.manual_seed(0)
        >>> norm = agnostic.nn.BatchNorm2d(3)
        >>> y = norm(agnostic.randn(4, 3, 8, 8) * 5 + 2)
        >>> y.mean(dim=(0, 2, 3)).abs().max() < 1e-5, norm.num_batches_tracked
        (tensor(True), tensor(1))
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) inputs, as ``torch.nn.BatchNorm3d``.

        >>> norm = agnostic.nn.BatchNorm3d(2, affine=False).eval()
        >>> norm(agnostic.full((1, 2, 1, 1, 2), 3.0)).flatten()
        tensor([3.0000, 3.0000, 3.0000, 3.0000])
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_BatchNorm):
    """Shared InstanceNorm machinery: per-sample, per-channel statistics; optional affine parameters and running
    statistics (both off by default), unbatched inputs accepted."""

    _spatial = 0

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        if input.dim() not in (self._spatial + 1, self._spatial + 2):
            raise ValueError(f"expected {self._spatial + 1}D or {self._spatial + 2}D input (got {input.dim()}D "
                             "input)")

    def forward(self, input):
        """Instance statistics in training or without running statistics, else the running ones."""
        self._check_input_dim(input)
        unbatched = input.dim() == self._spatial + 1
        if unbatched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.num_features and self.affine:
            raise ValueError(f"expected input's size at dim=1 to match num_features ({self.num_features}), but got: "
                             f"{input.shape[1]}.")
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or unbatched (C, L) inputs, as ``torch.nn.InstanceNorm1d``.

        >>> agnostic.nn.InstanceNorm1d(2)(agnostic.tensor([[[1.0, 3.0], [0.0, 10.0]]]))
        tensor([[[-1.0000,  1.0000],
                 [-1.0000,  1.0000]]])
    """

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or unbatched (C, H, W) inputs, as ``torch.nn.InstanceNorm2d``.

        >>> _ = agnostic.manual_seed(0)
        >>> y = agnostic.nn.InstanceNorm2d(3, affine=True)(agnostic.randn(2, 3, 4, 4) * 3 + 1)
        >>> y.mean(dim=(2, 3)).abs().max() < 1e-5
        tensor(True)
    """

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or unbatched (C, D, H, W) inputs, as
    ``torch.nn.InstanceNorm3d``.

        >>> agnostic.nn.InstanceNorm3d(1)(agnostic.tensor([1.0, 3.0]).reshape(1, 1, 2, 1, 1)).flatten()
        tensor([-1.0000,  1.0000])
    """

    _spatial = 3


def _affine_parameters(module, affine, bias, shape, device, dtype):
    """``module.weight`` (and ``module.bias`` unless ``bias`` is false) of ``shape``, initialized to ones and zeros;
    None for both without ``affine``."""
    module.register_parameter("weight", Parameter(creation.empty(shape, device=device, dtype=dtype)) if affine
                              else None)
    module.register_parameter("bias", Parameter(creation.empty(shape, device=device, dtype=dtype)) if affine and bias
                              else None)
    _reset_affine(module)


def _reset_affine(module):
    if module.weight is not None:
        init.ones_(module.weight)
    if module.bias is not None:
        init.zeros_(module.bias)


class GroupNorm(Module):
    """Group normalization: each sample's channels split into ``num_groups`` groups normalized together, then a
    per-channel ``weight`` (ones) and ``bias`` (zeros), as ``torch.nn.GroupNorm``.

        >>> norm = agnostic.nn.GroupNorm(2, 4)
        >>> norm
        GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)
        >>> norm(agnostic.tensor([[1.0, 3.0, 0.0, 10.0]]))
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]], grad_fn=<...>)
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        _affine_parameters(self, affine, bias, num_channels, device, dtype)

    def reset_parameters(self):
        """Weight ones, bias zeros."""
        _reset_affine(self)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """Normalization across neighbouring channels, as ``torch.nn.LocalResponseNorm``.

        >>> norm = agnostic.nn.LocalResponseNorm(2, alpha=1.0, beta=1.0)
        >>> norm
        LocalResponseNorm(2, alpha=1.0, beta=1.0, k=1.0)
        >>> norm(agnostic.tensor([[1.0, 2.0]]).reshape(1, 2, 1)).flatten()
        tensor([0.6667, 0.5714])
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class LayerNorm(Module):
    """Normalization over the trailing ``normalized_shape`` dimensions with elementwise ``weight`` (ones) and
    ``bias`` (zeros), as ``torch.nn.LayerNorm``.

        >>> agnostic.nn.LayerNorm(3)(agnostic.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 6.0]]))
        tensor([[-1.2247,  0.0000,  1.2247],
                [-0.7071, -0.7071,  1.4142]], grad_fn=<...>)
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        _affine_parameters(self, elementwise_affine, bias, self.normalized_shape, device, dtype)

    def reset_parameters(self):
        """Weight ones, bias zeros."""
        _reset_affine(self)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Root mean square normalization over the trailing ``normalized_shape`` dimensions with an elementwise
    ``weight`` (ones), as ``torch.nn.RMSNorm``; ``eps=None`` uses the input dtype's machine epsilon.

        >>> norm = agnostic.nn.RMSNorm(3)
        >>> norm
        RMSNorm((3,), eps=None, elementwise_affine=True)
        >>> norm(agnostic.tensor([[1.0, 2.0, 3.0]]))
        tensor([[0.4629, 0.9258, 1.3887]], grad_fn=<...>)
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.register_parameter("weight", Parameter(creation.empty(self.normalized_shape, device=device, dtype=dtype))
                                if elementwise_affine else None)
        self.reset_parameters()

    def reset_parameters(self):
        """Weight ones."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input):
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LayerNorm", "LocalResponseNorm", "RMSNorm"]
