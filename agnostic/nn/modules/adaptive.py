"""``torch.nn.modules.adaptive``'s path: agnostic lacks the adaptive softmax, and its error says so."""

from ._paths import mirror

__all__ = mirror(globals(), "adaptive")
