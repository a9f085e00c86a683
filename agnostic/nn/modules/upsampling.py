"""``torch.nn.modules.upsampling``'s path to agnostic's Upsample, UpsamplingNearest2d, UpsamplingBilinear2d."""

from ._paths import mirror

__all__ = mirror(globals(), "upsampling")
