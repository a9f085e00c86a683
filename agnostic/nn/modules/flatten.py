"""``torch.nn.modules.flatten``'s path to agnostic's Flatten and Unflatten."""

from ._paths import mirror

__all__ = mirror(globals(), "flatten")
