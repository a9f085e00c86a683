"""SyncBatchNorm: batch normalization whose statistics are reduced across the processes of a group, as torch.nn's."""

import agnostic

from .. import distributed
from .._batch_norm_functions import (batch_norm_backward_elemt, batch_norm_backward_reduce, batch_norm_elemt,
                                     batch_norm_gather_stats_with_counts, batch_norm_stats)
from ..autograd import Function
from . import functional as F
from .normalization import _BatchNorm, _InstanceNorm


class _SynchronizedBatchNorm(Function):
    """Batch norm over the union of every process's batch (PyTorch's ``torch.nn.modules._functions.SyncBatchNorm``):
    each process gathers the others' per-channel mean, invstd and count, and the backward all-reduces the sums the
    input's gradient needs. The weight's and bias's gradients stay local: data parallelism sums them afterwards."""

    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_group, world_size):
        channels = input.shape[1]
        size = input.numel() // channels
        if size == 1 and world_size < 2:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
        if input.numel() > 0:
            mean, invstd = batch_norm_stats(input, eps)
            count = agnostic.full((1,), size, dtype=mean.dtype, device=mean.device)
            combined = agnostic.cat([mean, invstd, count])
        else:  # an empty batch still joins the collective, with a zero count that the merge leaves out
            combined = agnostic.zeros(2 * channels + 1, dtype=_statistics_dtype(input), device=input.device)
        gathered = [agnostic.empty_like(combined) for _ in range(world_size)]
        distributed.all_gather(gathered, combined, process_group)
        combined = agnostic.stack(gathered)
        combined = combined[combined[:, -1] >= 1]
        mean_all, invstd_all, count_all = combined[:, :channels], combined[:, channels:2 * channels], combined[:, -1]
        counts = count_all if running_mean is None else count_all.to(running_mean.dtype)
        mean, invstd = batch_norm_gather_stats_with_counts(input, mean_all, invstd_all, running_mean, running_var,
                                                           momentum, eps, counts)
        ctx.save_for_backward(input, weight, mean, invstd, count_all.to(agnostic.int32))
        ctx.process_group = process_group
        if input.numel() == 0:
            return agnostic.empty_like(input)
        return batch_norm_elemt(input, weight, bias, mean, invstd, eps)

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, mean, invstd, counts = ctx.saved_tensors
        needs_input, needs_weight, needs_bias = ctx.needs_input_grad[:3]
        grad_input = grad_weight = grad_bias = None
        channels = input.shape[1]
        if input.numel() > 0:
            sum_dy, sum_dy_xmu, grad_weight, grad_bias = batch_norm_backward_reduce(
                grad_output, input, mean, invstd, weight, needs_input, needs_weight, needs_bias)
            if needs_input:
                combined = agnostic.cat([sum_dy, sum_dy_xmu])
                distributed.all_reduce(combined, distributed.ReduceOp.SUM, ctx.process_group)
                sum_dy, sum_dy_xmu = combined[:channels], combined[channels:]
                grad_input = batch_norm_backward_elemt(grad_output, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                                                       counts)
            if weight is None or not needs_weight:
                grad_weight = None
            if weight is None or not needs_bias:
                grad_bias = None
        elif needs_input:  # nothing to differentiate here, but the peers wait for this process's sums
            combined = agnostic.zeros(2 * channels, dtype=_statistics_dtype(input), device=input.device)
            distributed.all_reduce(combined, distributed.ReduceOp.SUM, ctx.process_group)
        return grad_input, grad_weight, grad_bias, None, None, None, None, None, None


def _statistics_dtype(input):
    return agnostic.float32 if input.dtype.name in ("float16", "bfloat16") else input.dtype


class SyncBatchNorm(_BatchNorm):
    """Batch normalization over (N, C, ...) inputs whose batch statistics, in training, cover the batches of every
    process of ``process_group`` (the whole world by default), as ``torch.nn.SyncBatchNorm(num_features, eps=1e-5,
    momentum=0.1, affine=True, track_running_stats=True, process_group=None)``. In eval mode, or without an
    initialized group of more than one process, it is ``BatchNorm``. Unlike PyTorch's it also synchronizes CPU
    tensors (through agnostic's CPU collectives).

        >>> norm = agnostic.nn.SyncBatchNorm(2)
        >>> norm(agnostic.tensor([[1.0, 10.0], [3.0, 30.0]]))
        tensor([[-1.0000, -1.0000],
                [ 1.0000,  1.0000]], grad_fn=<...>)
        >>> norm.running_mean
        tensor([0.2000, 2.0000])
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        """Normalize ``input`` with the statistics of the whole group's batch (training), else as BatchNorm."""
        self._check_input_dim(input)
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        running_mean = self.running_mean if track else None
        running_var = self.running_var if track else None
        world_size = 1
        if use_batch and self.training and distributed.is_initialized():
            group = self.process_group or distributed.group.WORLD
            world_size = distributed.get_world_size(group)
        if world_size <= 1:
            return F.batch_norm(input, running_mean, running_var, self.weight, self.bias, use_batch, factor,
                                self.eps)
        return _SynchronizedBatchNorm.apply(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                            factor, group, world_size)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm layer in it replaced by a SyncBatchNorm sharing its parameters and
        running statistics (a new module when ``module`` itself is one), as PyTorch's.

            >>> net = agnostic.nn.Sequential(agnostic.nn.Linear(3, 4), agnostic.nn.BatchNorm1d(4))
            >>> agnostic.nn.SyncBatchNorm.convert_sync_batchnorm(net)
            Sequential(
              (0): Linear(in_features=3, out_features=4, bias=True)
              (1): SyncBatchNorm(4, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)
            )
        """
        converted = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with agnostic.no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


__all__ = ["SyncBatchNorm"]
