"""``torch.nn.modules.module``'s path to agnostic's Module, the base of every layer."""

from ._paths import mirror

__all__ = mirror(globals(), "module")
