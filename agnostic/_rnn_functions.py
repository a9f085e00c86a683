"""PyTorch's top-level recurrent functions (lstm, gru, rnn_tanh, rnn_relu and their *_cell forms).

They take ATen's flat parameter lists (per layer and direction: ``w_ih, w_hh[, b_ih, b_hh][, w_hr]``) and run the
same layers as ``agnostic.nn.LSTM``/``GRU``/``RNN`` (whose step functions and fused LSTM layer they reuse), on padded
input (``batch_first`` or not) or on a packed sequence's ``data`` and ``batch_sizes``.
"""

import types

from ._tensor import TensorBase
from .nn import functional as _F
from .nn import rnn as _rnn


def _layers(mode, params, has_biases, num_layers, bidirectional):
    """The modules' ``_run`` settings for a flat ``params`` list: weights grouped by layer and direction."""
    params = list(params)
    directions = 2 if bidirectional else 1
    groups = num_layers * directions
    per_group = 4 if has_biases else 2
    projected = mode == "LSTM" and len(params) == groups * (per_group + 1)
    if projected:
        per_group += 1
    if len(params) != groups * per_group:
        raise RuntimeError(f"{mode.lower()}: expected {groups * per_group} parameters ({num_layers} layer(s) x "
                           f"{directions} direction(s) x {per_group}: w_ih, w_hh{', b_ih, b_hh' if has_biases else ''}"
                           f"{', w_hr' if projected else ''}), got {len(params)}")
    weights = [params[i * per_group:(i + 1) * per_group] for i in range(groups)]
    return types.SimpleNamespace(mode=mode, bidirectional=bidirectional, num_layers=num_layers, all_weights=weights,
                                 bias=has_biases, proj_size=params[per_group - 1].shape[0] if projected else 0)


def _recurrent(mode, name, args, kwargs):
    """Both of ATen's forms: ``(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)`` and the packed ``(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
    bidirectional)``; returns ``(output, *final states)``."""
    args = list(args)
    second = args[1] if len(args) > 1 else kwargs.get("batch_sizes", kwargs.get("hx"))
    third = args[2] if len(args) > 2 else kwargs.get("hx", kwargs.get("params"))
    packed = isinstance(second, TensorBase) and (mode == "LSTM" or isinstance(third, TensorBase))
    if packed:
        names = ("data", "batch_sizes", "hx", "params", "has_biases", "num_layers", "dropout", "train",
                 "bidirectional")
    else:
        names = ("input", "hx", "params", "has_biases", "num_layers", "dropout", "train", "bidirectional",
                 "batch_first")
    if len(args) > len(names):
        raise TypeError(f"{name}() takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
    bound = dict(zip(names, args), **kwargs)
    missing = [key for key in names if key not in bound]
    if missing:
        raise TypeError(f"{name}() missing required argument(s): {', '.join(missing)}")
    input = bound["data"] if packed else bound["input"]
    settings = _layers(mode, bound["params"], bound["has_biases"], bound["num_layers"], bound["bidirectional"])
    settings.dropout, settings.training = float(bound["dropout"]), bool(bound["train"])
    states = tuple(bound["hx"]) if mode == "LSTM" else (bound["hx"],)
    if packed:
        batch_sizes = [int(size) for size in bound["batch_sizes"].tolist()]
        if input.dim() != 2:
            raise RuntimeError(f"{name}: packed data must have 2 dimensions (N, features), got {input.dim()}")
        output, finals = _rnn.RNNBase._run(settings, input, states, batch_sizes)
        return (output,) + finals
    if input.dim() != 3:
        raise RuntimeError(f"{name}: input must have 3 dimensions (sequence, batch, features), got {input.dim()}; "
                           "unsqueeze the batch dimension of an unbatched input")
    batch_first = bool(bound["batch_first"])
    if batch_first:
        input = input.transpose(0, 1)
    output, finals = _rnn.RNNBase._run(settings, input, states, None)
    if batch_first:
        output = output.transpose(0, 1)
    return (output,) + finals


def lstm(*args, **kwargs):
    """A stacked LSTM over a sequence, as ``torch.lstm(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` (or ``torch.lstm(data, batch_sizes, hx, params, ...)`` for packed data):
    ``hx = (h_0, c_0)``, ``params`` ATen's flat weight list (``nn.LSTM``'s ``_flat_weights``); returns
    ``(output, h_n, c_n)``.

        >>> _ = agnostic.manual_seed(0)
        >>> module = agnostic.nn.LSTM(3, 4, num_layers=2)
        >>> x, h0 = agnostic.randn(5, 2, 3), agnostic.zeros(2, 2, 4)
        >>> output, h_n, c_n = agnostic.lstm(x, (h0, h0), module._flat_weights, True, 2, 0.0, False, False, False)
        >>> agnostic.allclose(output, module(x)[0]), h_n.shape
        (True, agnostic.Size([2, 2, 4]))
    """
    return _recurrent("LSTM", "lstm", args, kwargs)


def gru(*args, **kwargs):
    """A stacked GRU over a sequence, as ``torch.gru(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` (or ``torch.gru(data, batch_sizes, hx, params, ...)``); returns
    ``(output, h_n)``.

        >>> _ = agnostic.manual_seed(0)
        >>> module = agnostic.nn.GRU(3, 4, batch_first=True, bidirectional=True)
        >>> x, h0 = agnostic.randn(2, 5, 3), agnostic.zeros(2, 2, 4)
        >>> output, h_n = agnostic.gru(x, h0, module._flat_weights, True, 1, 0.0, False, True, True)
        >>> agnostic.allclose(output, module(x)[0]), output.shape
        (True, agnostic.Size([2, 5, 8]))
    """
    return _recurrent("GRU", "gru", args, kwargs)


def rnn_tanh(*args, **kwargs):
    """A stacked Elman RNN with tanh, as ``torch.rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` (or the packed form); returns ``(output, h_n)``.

        >>> weights = [agnostic.eye(2), agnostic.zeros(2, 2)]
        >>> output, h_n = agnostic.rnn_tanh(agnostic.ones(1, 1, 2), agnostic.zeros(1, 1, 2), weights, False, 1, 0.0,
        ...                                 False, False, False)
        >>> output
        tensor([[[0.7616, 0.7616]]])
    """
    return _recurrent("RNN_TANH", "rnn_tanh", args, kwargs)


def rnn_relu(*args, **kwargs):
    """A stacked Elman RNN with ReLU, as ``torch.rnn_relu(input, hx, params, has_biases, num_layers, dropout,
    train, bidirectional, batch_first)`` (or the packed form); returns ``(output, h_n)``.

        >>> weights = [-agnostic.eye(2), agnostic.eye(2)]
        >>> output, h_n = agnostic.rnn_relu(agnostic.tensor([[[1.0, -2.0]]]), agnostic.zeros(1, 1, 2), weights,
        ...                                 False, 1, 0.0, False, False, False)
        >>> output
        tensor([[[0., 2.]]])
    """
    return _recurrent("RNN_RELU", "rnn_relu", args, kwargs)


def _cell(step, input, states, w_ih, w_hh, b_ih, b_hh):
    return step(_F.linear(input, w_ih, b_ih), states, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step, as ``torch.lstm_cell``: ``hx = (h, c)``; returns ``(h', c')``.

        >>> h, c = agnostic.lstm_cell(agnostic.ones(1, 1), (agnostic.zeros(1, 1), agnostic.zeros(1, 1)),
        ...                           agnostic.ones(4, 1), agnostic.zeros(4, 1))
        >>> h, c
        (tensor([[0.3696]]), tensor([[0.5568]]))
    """
    return _cell(_rnn._lstm_step, input, tuple(hx), w_ih, w_hh, b_ih, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step, as ``torch.gru_cell``; returns ``h'``.

        >>> agnostic.gru_cell(agnostic.ones(1, 1), agnostic.zeros(1, 1), agnostic.ones(3, 1), agnostic.zeros(3, 1))
        tensor([[0.2048]])
    """
    return _cell(_rnn._gru_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with tanh, ``tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)``, as ``torch.rnn_tanh_cell``.

        >>> agnostic.rnn_tanh_cell(agnostic.ones(1, 1), agnostic.ones(1, 1), agnostic.ones(1, 1), agnostic.ones(1, 1))
        tensor([[0.9640]])
    """
    return _cell(_rnn._tanh_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with ReLU, ``relu(input w_ih^T + b_ih + hx w_hh^T + b_hh)``, as ``torch.rnn_relu_cell``.

        >>> agnostic.rnn_relu_cell(agnostic.ones(1, 1), -3 * agnostic.ones(1, 1), agnostic.ones(1, 1),
        ...                        agnostic.ones(1, 1))
        tensor([[0.]])
    """
    return _cell(_rnn._relu_step, input, (hx,), w_ih, w_hh, b_ih, b_hh)[0]


__all__ = ["gru", "gru_cell", "lstm", "lstm_cell", "rnn_relu", "rnn_relu_cell", "rnn_tanh", "rnn_tanh_cell"]
