"""``torch.nn.modules.loss``'s path to agnostic's loss modules and their bases _Loss, _WeightedLoss."""

from ._paths import mirror

__all__ = mirror(globals(), "loss")
