"""``torch.nn.modules.conv``'s path to agnostic's convolutions (ConvNd, ConvTransposeNd) and their base _ConvNd."""

from ._paths import mirror

__all__ = mirror(globals(), "conv")
