"""``torch.nn.modules.container``'s path to agnostic's containers (Sequential, ModuleList, ModuleDict...)."""

from ._paths import mirror

__all__ = mirror(globals(), "container")
