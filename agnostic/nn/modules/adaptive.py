"""``torch.nn.modules.adaptive``'s path: the adaptive softmax (``AdaptiveLogSoftmaxWithLoss``)."""

from ._paths import mirror

__all__ = mirror(globals(), "adaptive")
