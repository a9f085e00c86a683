"""One direction of one LSTM layer over every time step, as one recorded operation on the backend's arrays.

The composed form (a dozen agnostic ops a step, each recorded, then their backward rules) costs about 40 launches
a step on CUDA. Here the backend's ``lstm_forward_steps``/``lstm_backward_steps`` run the steps on preallocated
arrays (on CUDA one kernel a step each way, the hidden-to-gates product inside it; on the CPU one matrix product and
the cell's whole-row passes); the input projection and the weights' gradients are one product each over all the
steps, as cuDNN's LSTM does it. The arithmetic is the composed
form's, so values agree with it to rounding.

A backward that is itself recorded (``create_graph=True``) recomputes the layer with the composed ops and
differentiates that, so higher-order gradients stay exact.
"""

import agnostic

from ..._tensor import wrap
from ...autograd import Function, is_grad_enabled
from ...autograd.functions import recomputed_gradients

_FLOATS = ("float32", "float64")


def supports(input, weights, batch_sizes, projection_size):
    """Whether the fused layer can run these: a padded (not packed) float32/float64 input, weights of its dtype on
    its device, no projection, no autocast (whose per-op casts the composed form applies)."""
    device = input.device
    return (batch_sizes is None and projection_size == 0 and input.dtype.name in _FLOATS
            and all(w is None or (w.dtype == input.dtype and w.device == device) for w in weights)
            and not agnostic.is_autocast_enabled(device.type) and input.numel() > 0)


class LSTMLayer(Function):
    """``(output (T, B, H), final hidden (B, H), final cell (B, H))`` of one LSTM direction over ``input``
    (T, B, I) from ``hidden`` and ``cell`` (B, H); ``reverse`` runs the steps from last to first. ``composed`` is
    the same layer as a function of the same tensors, built from differentiable ops (for recorded backwards)."""

    @staticmethod
    def forward(ctx, input, hidden, cell, weight_ih, weight_hh, bias_ih, bias_hh, reverse, composed):
        device = input.device
        backend = device.backend
        xp = backend.xp
        steps, batch, features = input.shape
        size = weight_hh.shape[1]
        with backend.activate():
            inputs = xp.ascontiguousarray(input._data).reshape(steps * batch, features)
            projected = backend.matmul(inputs, weight_ih._data.T)
            if bias_ih is not None:
                backend.ops.add_row(projected, bias_ih._data + bias_hh._data)
            projected = projected.reshape(steps, batch, 4 * size)
            recurrent = xp.empty((batch, 4 * size), projected.dtype)
            gates = backend.empty((steps, batch, 4 * size), projected.dtype)
            cells = backend.empty((steps, batch, size), projected.dtype)
            outputs = backend.empty((steps, batch, size), projected.dtype)
            first_hidden = xp.ascontiguousarray(hidden._data)
            first_cell = xp.ascontiguousarray(cell._data)
            backend.ops.lstm_forward_steps(projected, first_hidden, first_cell, xp.ascontiguousarray(weight_hh._data),
                                           recurrent, gates, cells, outputs, reverse)
            last = 0 if reverse else steps - 1
            final_hidden, final_cell = outputs[last].copy(), cells[last].copy()
        ctx.arrays = inputs, first_hidden, first_cell, gates, cells, outputs
        ctx.reverse, ctx.composed = reverse, composed
        ctx.tensors = input, hidden, cell, weight_ih, weight_hh, bias_ih, bias_hh
        return wrap(outputs, device), wrap(final_hidden, device), wrap(final_cell, device)

    @staticmethod
    def backward(ctx, grad_output, grad_hidden, grad_cell):
        if is_grad_enabled():  # create_graph=True: differentiate the composed layer, rerun from the same inputs
            return recomputed_gradients(lambda *tensors: ctx.composed(*tensors, ctx.reverse), ctx.tensors,
                                        (grad_output, grad_hidden, grad_cell)) + (None, None)
        inputs, first_hidden, first_cell, gates, cells, outputs = ctx.arrays
        input, hidden, cell, weight_ih, weight_hh, bias_ih, bias_hh = ctx.tensors
        device = input.device
        backend = device.backend
        xp = backend.xp
        steps, batch, size = cells.shape
        dtype = cells.dtype
        with backend.activate():
            grad_outputs = (xp.zeros((steps, batch, size), dtype) if grad_output is None
                            else xp.ascontiguousarray(grad_output._data, dtype))
            grad_state_hidden = _fresh(backend, grad_hidden, (batch, size), dtype)
            grad_state_cell = _fresh(backend, grad_cell, (batch, size), dtype)
            spare = xp.empty((batch, size), dtype)
            grad_gates = backend.empty((steps, batch, 4 * size), dtype)
            backend.ops.lstm_backward_steps(gates, cells, first_cell, xp.ascontiguousarray(weight_hh._data),
                                            grad_outputs, grad_state_hidden, grad_state_cell, spare, grad_gates,
                                            ctx.reverse)
            flat_gates = grad_gates.reshape(steps * batch, 4 * size)
            # Only the gradients autograd asks for: a model's input (its data) mostly needs none, and its product is
            # as large as the input-to-gates weight's.
            needs_input, _, _, needs_weight_ih, needs_weight_hh, needs_bias_ih, needs_bias_hh = \
                ctx.needs_input_grad[:7]
            grads = [None] * 7
            if needs_input:
                grads[0] = wrap(backend.matmul(flat_gates, weight_ih._data).reshape(input.shape), device)
            grads[1], grads[2] = wrap(grad_state_hidden, device), wrap(grad_state_cell, device)
            if needs_weight_ih:
                grads[3] = wrap(backend.matmul(flat_gates.T, inputs), device)
            if needs_weight_hh:
                previous = _previous_states(xp, outputs, first_hidden, ctx.reverse)
                grads[4] = wrap(backend.matmul(flat_gates.T, previous.reshape(steps * batch, size)), device)
            if needs_bias_ih or needs_bias_hh:
                grad_bias = backend.ops.column_sums(flat_gates)
                # copied for the second: CuPy copies onto the current device
                grads[5] = wrap(grad_bias, device) if needs_bias_ih else None
                grads[6] = wrap(grad_bias.copy(), device) if needs_bias_hh else None
        return tuple(grads) + (None, None)


def _fresh(backend, grad, shape, dtype):
    """A writable copy of an incoming state gradient (``backend.empty``'s layout), zeros where none came."""
    fresh = backend.empty(shape, dtype)
    fresh[...] = 0 if grad is None else grad._data
    return fresh


def _previous_states(xp, outputs, first_hidden, reverse):
    """The hidden state each step started from, in time order: the first hidden state, then each step's output
    (shifted by one step, from the other end when the layer runs in reverse)."""
    previous = xp.empty_like(outputs)
    if reverse:
        previous[-1] = first_hidden
        previous[:-1] = outputs[1:]
    else:
        previous[0] = first_hidden
        previous[1:] = outputs[:-1]
    return previous
