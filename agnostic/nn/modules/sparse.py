"""``torch.nn.modules.sparse``'s path to agnostic's Embedding and EmbeddingBag."""

from ._paths import mirror

__all__ = mirror(globals(), "sparse")
