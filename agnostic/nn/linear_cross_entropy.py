"""LinearCrossEntropyLoss and LinearCrossEntropyOptions: a linear layer and the cross-entropy of its logits, and the
options of its chunked path, as torch.nn's (PyTorch 2.14)."""

import dataclasses
import math

import agnostic

from . import functional as F
from .linear import Linear
from .loss import _WeightedLoss

_ACC_POLICIES = ("auto", "accurate", "compact")


def _low_precision(dtype):
    return dtype in (agnostic.float16, agnostic.bfloat16)


@dataclasses.dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """The chunked path of ``linear_cross_entropy`` and its settings, as ``torch.nn.LinearCrossEntropyOptions``:
    pass an instance as ``options=`` to compute the loss a block of batch rows at a time, never holding the whole
    ``(N, C)`` logits matrix (a win when ``C`` is much larger than ``in_features``, e.g. a language model's head).

    - ``allow_retain_graph`` (False): for 'mean'/'sum' the forward precomputes the gradients and the backward
      consumes them, so a second backward raises unless this is True.
    - ``batch_chunk_size`` (None: one chunk): batch rows per chunk; with ``chunking_method`` other than None the two
      must agree.
    - ``chunking_method`` ('auto'): 'aspect_ratio' (chunk logits about the size of the input) or 'aspect_ratio:N'
      (N times smaller chunks); 'auto' is 'aspect_ratio', capped so that the chunked peak stays below the reference
      path's; None uses ``batch_chunk_size``.
    - ``acc_policy`` ('auto', 'accurate' or 'compact') and ``acc_dtype`` (None, or a floating dtype): the dtype the
      chunks are computed in; None means float32 for float16/bfloat16 input and the input's dtype otherwise. Here
      both policies compute every chunk and accumulate the gradients in ``acc_dtype``.

        >>> options = agnostic.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None)
        >>> options.batch_chunk_size
        2
        >>> agnostic.nn.LinearCrossEntropyOptions(acc_policy="fast")
        Traceback (most recent call last):
        ...
        ValueError: invalid acc_policy: 'fast'; expected one of 'auto', 'accurate', 'compact'
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None

    def __post_init__(self):
        if self.acc_policy not in _ACC_POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r}; expected one of "
                             f"{', '.join(map(repr, _ACC_POLICIES))}")
        if self.chunking_method is not None and self.chunking_method != "auto":
            name, separator, factor = str(self.chunking_method).partition(":")
            factor = factor if separator else "1"
            if not (name == "aspect_ratio" and factor.isdigit() and int(factor) > 0):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r}")
        size = self.batch_chunk_size
        if not (size is None or (isinstance(size, int) and not isinstance(size, bool) and size > 0)):
            raise ValueError(f"batch_chunk_size must be positive int or None, got {size!r}")
        supported = (agnostic.float16, agnostic.bfloat16, agnostic.float32, agnostic.float64)
        if self.acc_dtype is not None and self.acc_dtype not in supported:
            raise ValueError(f"acc_dtype must be one of {{None, agnostic.float16, agnostic.bfloat16, agnostic.float32, "
                             f"agnostic.float64}}, got {self.acc_dtype!r}. Pass acc_dtype=None to let the op pick "
                             "automatically.")

    @staticmethod
    def _auto_acc_dtype(dtype, device):
        """float32 for float16/bfloat16 input where matrix products accumulate in float32 (the CPU, CUDA from
        compute capability 7.0 for float16 and 8.0 for bfloat16), else None (the input's dtype)."""
        if device is None or not _low_precision(dtype):
            return None
        if device.backend.host:
            return agnostic.float32
        major, _ = agnostic.cuda.get_device_capability(device)
        return agnostic.float32 if major >= (8 if dtype == agnostic.bfloat16 else 7) else None

    def _chunk_size_for(self, method, num_batches, in_features, num_classes):
        """'aspect_ratio[:N]': the power of two at least ``num_batches / ceil(num_classes / in_features)``, over N."""
        factor = int(method.split(":", 1)[1]) if ":" in method else 1
        growth = -(-num_classes // max(in_features, 1))
        target = -(-num_batches // max(growth, 1))
        return min((1 << (target - 1).bit_length()) // factor, num_batches)

    def _adjust(self, num_batches, in_features, num_classes, dtype, device=None, prob_target=False):
        """These options with every 'auto' and None resolved for one call (PyTorch's ``_adjust``)."""
        acc_policy, chunking_method = self.acc_policy, self.chunking_method
        chunking_was_auto = chunking_method == "auto"
        if chunking_method == "auto" and self.batch_chunk_size is not None:
            chunking_method = None
        if acc_policy == "auto":
            # Only the CPU's low-precision matrix products are emulated (slow), so only there keep them in float32.
            on_host = device is not None and device.backend.host
            acc_policy = "accurate" if on_host and _low_precision(dtype) else "compact"
        if chunking_method == "auto":
            chunking_method = "aspect_ratio"
        batch_chunk_size = num_batches if self.batch_chunk_size is None else min(self.batch_chunk_size, num_batches)
        if chunking_method is not None:
            batch_chunk_size = self._chunk_size_for(chunking_method, num_batches, in_features, num_classes)
            if chunking_was_auto and acc_policy == "compact":
                # The largest power-of-two chunk whose peak memory stays at or below the reference path's.
                limit = num_batches // 2 if prob_target else num_batches * num_classes // (4 * max(in_features, 1))
                limit = 1 << (limit.bit_length() - 1) if limit >= 1 else 1
                batch_chunk_size = max(1, min(batch_chunk_size, limit))
            if self.batch_chunk_size is not None and self.batch_chunk_size != batch_chunk_size:
                raise ValueError(f"batch_chunk_size (={self.batch_chunk_size}) and chunking_method "
                                 f"('{chunking_method}') give different chunk sizes ({self.batch_chunk_size} vs "
                                 f"{batch_chunk_size}); pass only one.")
        acc_dtype = self.acc_dtype
        if acc_dtype is None:
            automatic = self._auto_acc_dtype(dtype, device) if self.acc_policy == "auto" else None
            acc_dtype = automatic if automatic is not None else dtype
        return dataclasses.replace(self, acc_policy=acc_policy, chunking_method=chunking_method,
                                   batch_chunk_size=max(1, batch_chunk_size), acc_dtype=acc_dtype)


class LinearCrossEntropyLoss(_WeightedLoss):
    """A linear layer (``self.linear``) and the cross entropy of its logits, as
    ``torch.nn.LinearCrossEntropyLoss``: ``forward(input, target)`` is ``F.linear_cross_entropy(input, weight, target,
    ...)``. For a K-dimensional loss (``out_features=(d_1, ..., d_K)``) the logits are ``(N, C, d_1, ..., d_K)``; the
    layer's weight and bias are stored flat, ``(C * prod(out_features), in_features)`` and
    ``(C * prod(out_features),)``, and reshaped in ``forward``.

        >>> _ = agnostic.manual_seed(0)
        >>> loss = agnostic.nn.LinearCrossEntropyLoss(4, 3, bias=True)
        >>> loss
        LinearCrossEntropyLoss(
          in_features=4, num_classes=3, out_features=(), bias=True, reduction=mean, ignore_index=None, \
label_smoothing=0.0, options=None
          (linear): Linear(in_features=4, out_features=3, bias=True)
        )
        >>> input = agnostic.randn(5, 4, requires_grad=True)
        >>> output = loss(input, agnostic.tensor([0, 1, 2, 1, 0]))
        >>> output.backward()
        >>> output.shape, loss.linear.weight.grad.shape
        (agnostic.Size([]), agnostic.Size([3, 4]))
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = out_features
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        # Linear holds 2-D weights: the (C, *out_features, in_features) weight is stored flat and reshaped in forward.
        self.linear = Linear(in_features, math.prod(out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        """The loss of ``input`` (``(in_features)`` or ``(N, in_features)``) against ``target``."""
        linear_weight = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        linear_bias = None if self.linear.bias is None \
            else self.linear.bias.reshape((self.num_classes, *self.out_features))
        return F.linear_cross_entropy(input, linear_weight, target, linear_bias=linear_bias, weight=self.weight,
                                      reduction=self.reduction, ignore_index=self.ignore_index,
                                      label_smoothing=self.label_smoothing, options=self.options)

    def extra_repr(self):
        """The constructor's settings, as PyTorch prints them."""
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")


__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]
