"""``torch.nn.modules.lazy``'s path: agnostic lacks lazy modules, and its error says so."""

from ._paths import mirror

__all__ = mirror(globals(), "lazy")
