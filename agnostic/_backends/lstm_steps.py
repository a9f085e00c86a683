"""The time loops of one LSTM layer direction on the CPU: a step is one matrix product and the cell's few
whole-row passes (``cpu_ops._lstm_cell_forward``/``_lstm_cell_backward``) on preallocated arrays, so that nothing is
allocated inside the loops. (CUDA runs a step as one kernel, the product inside it: ``cuda_ops``.)

Arrays are in time order, (T, B, ...); ``reverse`` runs the steps from the last to the first.
"""


def order(steps, reverse):
    """The time steps in the order the layer runs them."""
    return range(steps - 1, -1, -1) if reverse else range(steps)


def forward(xp, cell_forward, projected, first_hidden, first_cell, weight_hh, recurrent, gates, cells, outputs,
            reverse):
    """Run the layer from its input projection ``projected`` (T, B, 4H) and first states (B, H): each step's
    activated gates into ``gates``, cell states into ``cells`` and hidden states into ``outputs``; ``recurrent``
    (B, 4H) is scratch for the hidden-to-gates product."""
    weight_hh_t = weight_hh.T
    hidden, cell = first_hidden, first_cell
    for t in order(len(projected), reverse):
        xp.matmul(hidden, weight_hh_t, out=recurrent)
        cell_forward(projected[t], recurrent, cell, gates[t], cells[t], outputs[t])
        hidden, cell = outputs[t], cells[t]


def backward(xp, cell_backward, gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, grad_cell, spare,
             grad_gates, reverse):
    """The gradients of the layer's steps, last step first: each step's gates' pre-activation gradients into
    ``grad_gates`` (T, B, 4H); ``grad_hidden`` and ``grad_cell`` (B, H) come in holding the gradients of the final
    states and leave holding those of the first states; ``spare`` (B, H) is scratch."""
    steps = len(gates)
    times = list(order(steps, reverse))
    incoming, outgoing = grad_cell, spare
    for position in range(steps - 1, -1, -1):
        t = times[position]
        cell_prev = cells[times[position - 1]] if position else first_cell
        cell_backward(gates[t], cells[t], cell_prev, grad_hidden, grad_outputs[t], incoming, outgoing, grad_gates[t])
        xp.matmul(grad_gates[t], weight_hh, out=grad_hidden)
        incoming, outgoing = outgoing, incoming
    if incoming is not grad_cell:
        grad_cell[...] = incoming
