"""``torch.nn.modules.rnn``'s path to agnostic's recurrent layers (RNN, LSTM, GRU, their cells and bases)."""

from ._paths import mirror

__all__ = mirror(globals(), "rnn")
