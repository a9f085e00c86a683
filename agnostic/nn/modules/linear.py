"""``torch.nn.modules.linear``'s path to agnostic's Linear, Identity, Bilinear and NonDynamicallyQuantizableLinear."""

from ._paths import mirror

__all__ = mirror(globals(), "linear")
