"""``torch.nn.modules.fold``'s path to agnostic's Fold and Unfold."""

from ._paths import mirror

__all__ = mirror(globals(), "fold")
