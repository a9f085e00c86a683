"""``torch.nn.modules.padding``'s path to agnostic's padding layers (ConstantPad, ReflectionPad, ZeroPad...)."""

from ._paths import mirror

__all__ = mirror(globals(), "padding")
