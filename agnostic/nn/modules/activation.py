"""``torch.nn.modules.activation``'s path to agnostic's activation layers and MultiheadAttention."""

from ._paths import mirror

__all__ = mirror(globals(), "activation")
