"""``torch.nn.modules.dropout``'s path to agnostic's dropout layers and their base _DropoutNd."""

from ._paths import mirror

__all__ = mirror(globals(), "dropout")
