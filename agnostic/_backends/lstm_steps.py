"""The time order of one LSTM layer direction's steps, as both backends run them (``cpu_ops`` and ``cuda_ops``'
``lstm_forward_steps``/``lstm_backward_steps``). Arrays are in time order, (T, B, ...); ``reverse`` runs the steps
from the last to the first.
"""


def order(steps, reverse):
    """The time steps in the order the layer runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)
