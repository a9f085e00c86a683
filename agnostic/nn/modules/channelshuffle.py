"""``torch.nn.modules.channelshuffle``'s path to agnostic's ChannelShuffle."""

from ._paths import mirror

__all__ = mirror(globals(), "channelshuffle")
