"""``torch.nn.modules.instancenorm``'s path to agnostic's InstanceNorm1d/2d/3d and their base _InstanceNorm."""

from ._paths import mirror

__all__ = mirror(globals(), "instancenorm")
