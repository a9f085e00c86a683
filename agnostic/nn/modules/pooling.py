"""``torch.nn.modules.pooling``'s path to agnostic's pooling layers and their bases _MaxPoolNd, _AvgPoolNd."""

from ._paths import mirror

__all__ = mirror(globals(), "pooling")
