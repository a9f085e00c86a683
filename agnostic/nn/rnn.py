"""Recurrent layers: RNN, LSTM, GRU and their cells, as torch.nn's (batch_first, bidirectional, num_layers, dropout,
packed sequences).

Each layer projects the input of all time steps at once (one matmul per layer and direction), then runs one fused
hidden-to-gates matmul per step; everything is agnostic ops, so autograd records it and it runs on any device.
"""

import math
import numbers
import warnings

import agnostic

from .. import ops
from . import functional as F, init
from .functional import _fused_lstm
from .module import Module
from .parameter import Parameter
from .utils.rnn import PackedSequence

_GATE_CHUNKS = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ----- one time step: (input projection, state, hidden weights) -> new state; state is (h,) or (h, c) ----------
def _tanh_step(projected, state, weight_hh, bias_hh, weight_hr=None):
    return (agnostic.tanh(projected + F.linear(state[0], weight_hh, bias_hh)),)


def _relu_step(projected, state, weight_hh, bias_hh, weight_hr=None):
    return (F.relu(projected + F.linear(state[0], weight_hh, bias_hh)),)


def _lstm_step(projected, state, weight_hh, bias_hh, weight_hr=None):
    hidden, cell = state
    gates = projected + F.linear(hidden, weight_hh, bias_hh)
    size = cell.shape[-1]
    # input, forget and output gates are sigmoids; the candidate (third chunk) is a tanh
    input_gate, forget_gate = agnostic.sigmoid(gates[:, :2 * size]).chunk(2, 1)
    candidate = agnostic.tanh(gates[:, 2 * size:3 * size])
    output_gate = agnostic.sigmoid(gates[:, 3 * size:])
    cell = forget_gate * cell + input_gate * candidate
    hidden = output_gate * agnostic.tanh(cell)
    if weight_hr is not None:
        hidden = F.linear(hidden, weight_hr)
    return hidden, cell


def _gru_step(projected, state, weight_hh, bias_hh, weight_hr=None):
    hidden = state[0]
    recurrent = F.linear(hidden, weight_hh, bias_hh)
    size = hidden.shape[-1]
    reset, update = agnostic.sigmoid(projected[:, :2 * size] + recurrent[:, :2 * size]).chunk(2, 1)
    candidate = agnostic.tanh(projected[:, 2 * size:] + reset * recurrent[:, 2 * size:])
    return (candidate + update * (hidden - candidate),)


_STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


def _run_direction(step, projected_steps, state, weights, batch_sizes, reverse):
    """Run ``step`` over the time steps (backwards with ``reverse``); returns the per-step outputs in time order
    and the final state. With ``batch_sizes`` (packed input, sorted by decreasing length) step ``t`` covers only
    the first ``batch_sizes[t]`` sequences, so each sequence's final state is the one after its own last step."""
    steps = len(projected_steps)
    outputs = [None] * steps
    if batch_sizes is None:
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            state = step(projected_steps[t], state, *weights)
            outputs[t] = state[0]
        return outputs, state
    if not reverse:
        finished, current = [], state
        for t in range(steps):
            size = batch_sizes[t]
            if size < current[0].shape[0]:
                finished.append(tuple(part[size:] for part in current))
                current = tuple(part[:size] for part in current)
            current = step(projected_steps[t], current, *weights)
            outputs[t] = current[0]
        finished.append(current)
        if len(finished) == 1:
            return outputs, current
        return outputs, tuple(agnostic.cat([piece[k] for piece in reversed(finished)], 0)
                              for k in range(len(current)))
    current = tuple(part[:batch_sizes[-1]] for part in state)
    for t in range(steps - 1, -1, -1):
        size, running = batch_sizes[t], current[0].shape[0]
        if size > running:
            current = tuple(agnostic.cat([part, initial[running:size]], 0) for part, initial in zip(current, state))
        current = step(projected_steps[t], current, *weights)
        outputs[t] = current[0]
    return outputs, current


def _composed_lstm(input, hidden, cell, weight_ih, weight_hh, bias_ih, bias_hh, reverse):
    """One LSTM direction over padded ``input`` from agnostic's differentiable ops: what the fused layer computes
    (``functional._fused_lstm``), for its recorded backward."""
    pieces = F.linear(input, weight_ih, bias_ih).unbind(0)
    outputs, (final_hidden, final_cell) = _run_direction(_lstm_step, pieces, (hidden, cell),
                                                         (weight_hh, bias_hh), None, reverse)
    return agnostic.stack(outputs, 0), final_hidden, final_cell


def _permute(tensor, permutation):
    return tensor if permutation is None else tensor.index_select(1, permutation)


class RNNBase(Module):
    """The machinery shared by RNN, LSTM and GRU (``torch.nn.RNNBase``): parameters ``weight_ih_l{k}``,
    ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (``_reverse`` for the backward direction, and
    ``weight_hr_l{k}`` for an LSTM with ``proj_size``), all drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).

        >>> _ = agnostic.manual_seed(0)
        >>> lstm = agnostic.nn.RNNBase("LSTM", 3, 4, num_layers=2)
        >>> [name for name, _ in lstm.named_parameters()][:4]
        ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
    """

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and "
                          f"num_layers={num_layers}", stacklevel=2)
        for name, value, kind in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                  ("input_size", input_size, int), ("hidden_size", hidden_size, int)):
            if not isinstance(value, kind):
                raise TypeError(f"{name} should be of type {kind.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATE_CHUNKS:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _GATE_CHUNKS[mode] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input_size = input_size if layer == 0 else real_hidden_size * directions
                shapes = [("weight_ih_l{}{}", (gate_size, layer_input_size)),
                          ("weight_hh_l{}{}", (gate_size, real_hidden_size))]
                if bias:
                    shapes += [("bias_ih_l{}{}", (gate_size,)), ("bias_hh_l{}{}", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr_l{}{}", (proj_size, hidden_size))]
                names = []
                for pattern, shape in shapes:
                    name = pattern.format(layer, "_reverse" if direction == 1 else "")
                    setattr(self, name, Parameter(ops.creation.empty(*shape, device=device, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        """The parameters of each layer and direction, as lists in torch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self):
        """Nothing to do here (PyTorch packs weights for cuDNN); kept so code that calls it runs."""

    def reset_parameters(self):
        """Re-draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self):
        text = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            text += ", proj_size={proj_size}"
        if self.num_layers != 1:
            text += ", num_layers={num_layers}"
        if self.bias is not True:
            text += ", bias={bias}"
        if self.batch_first is not False:
            text += ", batch_first={batch_first}"
        if self.dropout != 0:
            text += ", dropout={dropout}"
        if self.bidirectional is not False:
            text += ", bidirectional={bidirectional}"
        return text.format(**self.__dict__)

    # ----- checks, as torch's ----------------------------------------------------------------------------------
    def _check_input(self, input, packed):
        weight_dtype = self.weight_ih_l0.dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected = 2 if packed else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")

    def _state_shapes(self, batch):
        layers = self.num_layers * (2 if self.bidirectional else 1)
        hidden = (layers, batch, self.proj_size if self.proj_size > 0 else self.hidden_size)
        return [hidden, (layers, batch, self.hidden_size)] if self.mode == "LSTM" else [hidden]

    # ----- forward ---------------------------------------------------------------------------------------------
    def _run(self, input, hx, batch_sizes):
        """The stacked layers over ``input`` ((T, B, F), or packed data (N, F) with ``batch_sizes``) from the
        initial states ``hx`` (a tuple of (layers * directions, B, H) tensors); returns (output, final states)."""
        step = _STEPS[self.mode]
        directions = 2 if self.bidirectional else 1
        initial = [state.unbind(0) for state in hx]
        finals = [[] for _ in hx]
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                weights = self.all_weights[index]
                weight_ih, weight_hh = weights[0], weights[1]
                bias_ih, bias_hh = (weights[2], weights[3]) if self.bias else (None, None)
                weight_hr = weights[-1] if self.proj_size > 0 else None
                state = tuple(states[index] for states in initial)
                reverse = direction == 1
                if self.mode == "LSTM" and _fused_lstm.supports(layer_input, weights, batch_sizes, self.proj_size):
                    output, *final = _fused_lstm.LSTMLayer.apply(layer_input, *state, weight_ih, weight_hh, bias_ih,
                                                                 bias_hh, reverse, _composed_lstm)
                    outputs.append(output)
                else:
                    projected = F.linear(layer_input, weight_ih, bias_ih)
                    pieces = projected.unbind(0) if batch_sizes is None else projected.split(batch_sizes, 0)
                    step_outputs, final = _run_direction(step, pieces, state, (weight_hh, bias_hh, weight_hr),
                                                         batch_sizes, reverse)
                    outputs.append(agnostic.stack(step_outputs, 0) if batch_sizes is None
                                   else agnostic.cat(step_outputs, 0))
                for collected, part in zip(finals, final):
                    collected.append(part)
            layer_input = outputs[0] if directions == 1 else agnostic.cat(outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, tuple(agnostic.stack(collected, 0) for collected in finals)

    def _forward(self, input, hx, name):
        """Shared forward: unbatched/batched/packed input, optional initial state(s), torch's checks."""
        is_lstm = self.mode == "LSTM"
        if isinstance(input, PackedSequence):
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch_sizes = [int(size) for size in batch_sizes.tolist()]
            self._check_input(data, packed=True)
            batch = batch_sizes[0]
            if hx is None:
                states = tuple(agnostic.zeros(shape, dtype=data.dtype, device=data.device)
                               for shape in self._state_shapes(batch))
            else:
                states = tuple(_permute(state, sorted_indices) for state in (hx if is_lstm else (hx,)))
            self._check_states(states, batch)
            output, finals = self._run(data, states, batch_sizes)
            finals = tuple(_permute(state, unsorted_indices) for state in finals)
            packed = PackedSequence(output, input.batch_sizes, sorted_indices, unsorted_indices)
            return packed, (finals if is_lstm else finals[0])
        if input.dim() not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D "
                             f"{'tensor ' if not is_lstm else ''}instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        states = None
        if hx is not None:
            states = tuple(hx) if is_lstm else (hx,)
            wanted = 3 if batched else 2
            if any(state.dim() != wanted for state in states):
                kind = "batched 3-D" if batched else "unbatched 2-D"
                if is_lstm:
                    raise RuntimeError(f"For {kind} input, hx and cx should also be {wanted}-D but got "
                                       f"({states[0].dim()}-D, {states[1].dim()}-D) tensors")
                raise RuntimeError(f"For {kind} input, hx should also be {wanted}-D but got {states[0].dim()}-D "
                                   "tensor")
            if not batched:
                states = tuple(state.unsqueeze(1) for state in states)
        self._check_input(input, packed=False)
        if self.batch_first:
            input = input.transpose(0, 1)
        batch = input.shape[1]
        if states is None:
            states = tuple(agnostic.zeros(shape, dtype=input.dtype, device=input.device)
                           for shape in self._state_shapes(batch))
        self._check_states(states, batch)
        output, finals = self._run(input, states, None)
        if self.batch_first:
            output = output.transpose(0, 1)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            finals = tuple(state.squeeze(1) for state in finals)
        return output, (finals if is_lstm else finals[0])

    def _check_states(self, states, batch):
        expected = self._state_shapes(batch)
        for position, (state, shape) in enumerate(zip(states, expected)):
            if tuple(state.shape) != shape:
                label = f"hidden[{position}] size" if self.mode == "LSTM" else "hidden size"
                raise RuntimeError(f"Expected {label} {shape}, got {list(state.shape)}")


class RNN(RNNBase):
    """An Elman RNN, ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU), as ``torch.nn.RNN``:
    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``. ``forward(input, h_0=None)`` returns ``(output, h_n)``; ``input`` is (L, N, H_in)
    ((N, L, H_in) with ``batch_first``), (L, H_in) unbatched, or a ``PackedSequence``.

        >>> _ = agnostic.manual_seed(0)
        >>> rnn = agnostic.nn.RNN(3, 5, num_layers=2)
        >>> output, h_n = rnn(agnostic.randn(7, 4, 3))
        >>> output.shape, h_n.shape
        (agnostic.Size([7, 4, 5]), agnostic.Size([2, 4, 5]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def __setattr__(self, name, value):
        if name == "nonlinearity" and "_parameters" not in self.__dict__:
            object.__setattr__(self, name, value)  # set before Module.__init__, as torch's RNN does
        else:
            super().__setattr__(name, value)

    def forward(self, input, hx=None):
        """``(output, h_n)`` for ``input`` from ``hx`` (zeros when None)."""
        return self._forward(input, hx, "RNN")


class LSTM(RNNBase):
    """A long short-term memory RNN as ``torch.nn.LSTM``: ``LSTM(input_size, hidden_size, num_layers=1, bias=True,
    batch_first=False, dropout=0.0, bidirectional=False, proj_size=0)``; gates in PyTorch's order (input, forget,
    cell, output). ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``.

        >>> _ = agnostic.manual_seed(0)
        >>> lstm = agnostic.nn.LSTM(3, 5, batch_first=True, bidirectional=True)
        >>> output, (h_n, c_n) = lstm(agnostic.randn(4, 7, 3))
        >>> output.shape, h_n.shape, c_n.shape
        (agnostic.Size([4, 7, 10]), agnostic.Size([2, 4, 5]), agnostic.Size([2, 4, 5]))
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def forward(self, input, hx=None):
        """``(output, (h_n, c_n))`` for ``input`` from ``hx = (h_0, c_0)`` (zeros when None)."""
        return self._forward(input, hx, "LSTM")


class GRU(RNNBase):
    """A gated recurrent unit RNN as ``torch.nn.GRU`` (gates in PyTorch's order: reset, update, new):
    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0, bidirectional=False)``.
    ``forward(input, h_0=None)`` returns ``(output, h_n)``.

        >>> _ = agnostic.manual_seed(0)
        >>> gru = agnostic.nn.GRU(3, 5)
        >>> output, h_n = gru(agnostic.randn(7, 3))
        >>> output.shape, h_n.shape
        (agnostic.Size([7, 5]), agnostic.Size([1, 5]))
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        """``(output, h_n)`` for ``input`` from ``hx`` (zeros when None)."""
        return self._forward(input, hx, "GRU")


# ----- cells --------------------------------------------------------------------------------------------------
class RNNCellBase(Module):
    """The parameters shared by the cells (``torch.nn.RNNCellBase``): ``weight_ih`` (chunks * hidden, input),
    ``weight_hh`` (chunks * hidden, hidden), ``bias_ih`` and ``bias_hh``, all from U(-1/sqrt(hidden), 1/sqrt(hidden)).

        >>> cell = agnostic.nn.RNNCellBase(3, 4, bias=True, num_chunks=2)
        >>> cell.weight_ih.shape, cell.bias_hh.shape
        (agnostic.Size([8, 3]), agnostic.Size([8]))
    """

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(ops.creation.empty(num_chunks * hidden_size, input_size, device=device,
                                                      dtype=dtype))
        self.weight_hh = Parameter(ops.creation.empty(num_chunks * hidden_size, hidden_size, device=device,
                                                      dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ops.creation.empty(num_chunks * hidden_size, device=device, dtype=dtype))
            self.bias_hh = Parameter(ops.creation.empty(num_chunks * hidden_size, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self):
        text = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            text += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            text += ", nonlinearity={nonlinearity}"
        return text.format(**self.__dict__)

    def reset_parameters(self):
        """Re-draw every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _cell(self, step, name, input, states):
        """Check and batch ``input`` and ``states`` (a list, or None for zeros), run ``step`` once."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected "
                               f"{self.input_size}")
        if states is None:
            zeros = agnostic.zeros(input.shape[0], self.hidden_size, dtype=input.dtype, device=input.device)
            states = (zeros,) * (2 if step is _lstm_step else 1)
        else:
            states = tuple(state if batched else state.unsqueeze(0) for state in states)
            for position, state in enumerate(states):
                if state.shape[0] != input.shape[0]:
                    raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{position} batch "
                                       f"size {state.shape[0]}")
                if state.shape[1] != self.hidden_size:
                    raise RuntimeError(f"hidden{position} has inconsistent hidden_size: got {state.shape[1]}, "
                                       f"expected {self.hidden_size}")
        result = step(F.linear(input, self.weight_ih, self.bias_ih), states, self.weight_hh, self.bias_hh)
        return result if batched else tuple(state.squeeze(0) for state in result)

    @staticmethod
    def _check_state_dims(name, label, states):
        for position, state in enumerate(states):
            if state.dim() not in (1, 2):
                which = f"hx[{position}]" if label is None else label
                raise ValueError(f"{name}: Expected {which} to be 1D or 2D, got {state.dim()}D instead")


class RNNCell(RNNCellBase):
    """One step of an Elman RNN, ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU), as
    ``torch.nn.RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')``; ``forward(input, hx=None)``.

        >>> _ = agnostic.manual_seed(0)
        >>> cell = agnostic.nn.RNNCell(3, 4, nonlinearity="relu")
        >>> cell
        RNNCell(3, 4, nonlinearity=relu)
        >>> cell(agnostic.randn(2, 3)).shape
        agnostic.Size([2, 4])
    """

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """The next hidden state for ``input`` from ``hx`` (zeros when None)."""
        if hx is not None:
            self._check_state_dims("RNNCell", "hidden", [hx])
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        step = _tanh_step if self.nonlinearity == "tanh" else _relu_step
        return self._cell(step, "RNNCell", input, None if hx is None else [hx])[0]


class LSTMCell(RNNCellBase):
    """One LSTM step, as ``torch.nn.LSTMCell(input_size, hidden_size, bias=True)``: ``forward(input, (h, c)=None)``
    returns ``(h', c')``.

        >>> _ = agnostic.manual_seed(0)
        >>> cell = agnostic.nn.LSTMCell(3, 4)
        >>> h, c = cell(agnostic.randn(2, 3))
        >>> h.shape, c.shape
        (agnostic.Size([2, 4]), agnostic.Size([2, 4]))
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """``(h', c')`` for ``input`` from ``hx = (h, c)`` (zeros when None)."""
        if hx is not None:
            self._check_state_dims("LSTMCell", None, hx)
        return self._cell(_lstm_step, "LSTMCell", input, None if hx is None else list(hx))


class GRUCell(RNNCellBase):
    """One GRU step, as ``torch.nn.GRUCell(input_size, hidden_size, bias=True)``: ``forward(input, hx=None)``.

        >>> _ = agnostic.manual_seed(0)
        >>> cell = agnostic.nn.GRUCell(3, 4)
        >>> cell(agnostic.randn(3), agnostic.zeros(4)).shape
        agnostic.Size([4])
    """

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        """The next hidden state for ``input`` from ``hx`` (zeros when None)."""
        if hx is not None:
            self._check_state_dims("GRUCell", "hidden", [hx])
        return self._cell(_gru_step, "GRUCell", input, None if hx is None else [hx])[0]


__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]
