"""``torch.nn.modules.transformer``'s path to agnostic's Transformer and its encoder/decoder layers."""

from ._paths import mirror

__all__ = mirror(globals(), "transformer")
