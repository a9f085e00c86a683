"""``torch.nn.modules.distance``'s path to agnostic's PairwiseDistance and CosineSimilarity."""

from ._paths import mirror

__all__ = mirror(globals(), "distance")
