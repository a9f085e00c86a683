"""``torch.nn.modules.pixelshuffle``'s path to agnostic's PixelShuffle and PixelUnshuffle."""

from ._paths import mirror

__all__ = mirror(globals(), "pixelshuffle")
