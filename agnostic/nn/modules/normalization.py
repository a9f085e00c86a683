"""``torch.nn.modules.normalization``'s path to agnostic's LayerNorm, GroupNorm, LocalResponseNorm, RMSNorm."""

from ._paths import mirror

__all__ = mirror(globals(), "normalization")
