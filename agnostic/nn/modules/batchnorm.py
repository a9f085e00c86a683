"""``torch.nn.modules.batchnorm``'s path to agnostic's BatchNorm1d/2d/3d and their bases _BatchNorm, _NormBase."""

from ._paths import mirror

__all__ = mirror(globals(), "batchnorm")
