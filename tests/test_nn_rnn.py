"""Recurrent layers and packed sequences: values and gradients against PyTorch (a torch state_dict loaded) and a
NumPy step-by-step reference, packed input against per-sequence runs, torch's errors, and a toy task learned."""

import numpy
import pytest

import agnostic
import agnostic.nn as nn
from agnostic.autograd import gradcheck
from agnostic.nn.utils.rnn import (PackedSequence, invert_permutation, pack_padded_sequence, pack_sequence,
                                   pad_packed_sequence, pad_sequence, unpack_sequence, unpad_sequence)

RNG = numpy.random.default_rng(11)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


def from_torch(module, reference, device):
    """Load ``reference``'s (a torch module) state_dict into ``module`` and move it to ``device``."""
    result = module.load_state_dict({key: agnostic.tensor(value.detach().numpy())
                                     for key, value in reference.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    return module.to(device)


def states(result):
    return result if isinstance(result, tuple) else (result,)


def sigmoid(x):
    return 1 / (1 + numpy.exp(-x))


def numpy_layer(mode, x, weights, h0, c0=None):
    """One layer, one direction, (T, B, F) input: the textbook equations, gates in torch's order."""
    w_ih, w_hh, b_ih, b_hh = weights
    h, c, outputs = h0, c0, []
    for x_t in x:
        gi, gh = x_t @ w_ih.T + b_ih, h @ w_hh.T + b_hh
        if mode == "LSTM":
            i, f, g, o = numpy.split(gi + gh, 4, axis=1)
            c = sigmoid(f) * c + sigmoid(i) * numpy.tanh(g)
            h = sigmoid(o) * numpy.tanh(c)
        elif mode == "GRU":
            ir, iz, in_ = numpy.split(gi, 3, axis=1)
            hr, hz, hn = numpy.split(gh, 3, axis=1)
            r, z = sigmoid(ir + hr), sigmoid(iz + hz)
            n = numpy.tanh(in_ + r * hn)
            h = (1 - z) * n + z * h
        else:
            h = numpy.tanh(gi + gh)
        outputs.append(h)
    return numpy.stack(outputs), h, c


# ----- values against NumPy (no PyTorch needed) ---------------------------------------------------------------


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_one_layer_matches_the_textbook_equations(device, mode):
    layer = getattr(nn, mode)(3, 4).double().to(device)
    x = RNG.standard_normal((5, 2, 3))
    h0 = RNG.standard_normal((1, 2, 4))
    c0 = RNG.standard_normal((1, 2, 4))
    hx = (make(h0, device), make(c0, device)) if mode == "LSTM" else make(h0, device)
    output, final = layer(make(x, device), hx)
    weights = [host(getattr(layer, name)) for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")]
    expected, h, c = numpy_layer(mode, x, weights, h0[0], c0[0])
    numpy.testing.assert_allclose(host(output), expected, atol=1e-12)
    numpy.testing.assert_allclose(host(states(final)[0])[0], h, atol=1e-12)
    if mode == "LSTM":
        numpy.testing.assert_allclose(host(final[1])[0], c, atol=1e-12)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_bidirectional_backward_direction_reads_the_sequence_reversed(device, mode):
    layer = getattr(nn, mode)(3, 4, bidirectional=True).double().to(device)
    x = RNG.standard_normal((6, 2, 3))
    output, final = layer(make(x, device))
    weights = [host(getattr(layer, name + "_l0_reverse")) for name in ("weight_ih", "weight_hh", "bias_ih",
                                                                        "bias_hh")]
    zeros = numpy.zeros((2, 4))
    expected, h, _ = numpy_layer(mode, x[::-1], weights, zeros, zeros)
    numpy.testing.assert_allclose(host(output)[..., 4:], expected[::-1], atol=1e-12)
    numpy.testing.assert_allclose(host(states(final)[0])[1], h, atol=1e-12)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_cells_match_one_step_of_the_layer(device, mode):
    agnostic.manual_seed(3)
    layer = getattr(nn, mode)(3, 4).double().to(device)
    cell = getattr(nn, mode + "Cell")(3, 4).double().to(device)
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        getattr(cell, name).data.copy_(getattr(layer, name + "_l0"))
    x = make(RNG.standard_normal((1, 2, 3)), device)
    output, final = layer(x)
    stepped = states(cell(x[0]))
    numpy.testing.assert_allclose(host(stepped[0]), host(output[0]), atol=1e-14)
    if mode == "LSTM":
        numpy.testing.assert_allclose(host(stepped[1]), host(final[1][0]), atol=1e-14)


def test_shapes_and_parameter_names_follow_torch(device):
    lstm = nn.LSTM(3, 6, num_layers=2, bidirectional=True, proj_size=2, batch_first=True).to(device)
    names = [name for name, _ in lstm.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_hr_l0"]
    assert names[5] == "weight_ih_l0_reverse" and len(names) == 20
    assert lstm.weight_ih_l1.shape == (24, 4) and lstm.weight_hh_l0.shape == (24, 2)
    output, (h, c) = lstm(agnostic.randn(5, 7, 3, device=device))
    assert output.shape == (5, 7, 4) and h.shape == (4, 5, 2) and c.shape == (4, 5, 6)
    output, (h, c) = lstm(agnostic.randn(7, 3, device=device))
    assert output.shape == (7, 4) and h.shape == (4, 2) and c.shape == (4, 6)
    assert repr(lstm) == "LSTM(3, 6, proj_size=2, num_layers=2, batch_first=True, bidirectional=True)"
    bound = 1 / 6 ** 0.5
    assert all(float(p.abs().max()) <= bound for p in lstm.parameters())


def test_gradcheck_through_a_bidirectional_gru(device):
    agnostic.manual_seed(0)
    gru = nn.GRU(2, 2, bidirectional=True).double().to(device)
    x = make(RNG.standard_normal((3, 2, 2)), device, requires_grad=True)
    h0 = make(RNG.standard_normal((2, 2, 2)), device, requires_grad=True)
    checked = (gru.weight_hh_l0, gru.bias_ih_l0_reverse)
    assert gradcheck(lambda x, h0, *params: gru(x, h0)[0], (x, h0, *checked), fast_mode=True)


def test_gradcheck_through_a_packed_lstm(device):
    agnostic.manual_seed(0)
    lstm = nn.LSTM(2, 2).double().to(device)
    x = make(RNG.standard_normal((4, 3, 2)), device, requires_grad=True)

    def run(x, *params):
        output, (h, c) = lstm(pack_padded_sequence(x, [4, 2, 1]))
        return output.data, h, c
    assert gradcheck(run, (x, lstm.weight_hh_l0, lstm.bias_ih_l0))


# ----- against PyTorch ------------------------------------------------------------------------------------------

CONFIGS = [
    ("RNN", dict(nonlinearity="relu")),
    ("RNN", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(num_layers=2, bidirectional=True)),
    ("LSTM", dict(proj_size=3, batch_first=True, bias=False)),
    ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True)),
    ("GRU", dict(num_layers=3)),
    ("GRU", dict(bidirectional=True, bias=False, batch_first=True)),
]


def run_both(torch, reference, layer, x, hx, device):
    """Forward and backward (of a loss reading the output and every final state) through both; returns
    ((output, finals), (output, finals), input gradients)."""
    xt = torch.tensor(x, requires_grad=True)
    xa = make(x, device, requires_grad=True)
    hts = None if hx is None else tuple(torch.tensor(h, requires_grad=True) for h in hx)
    has = None if hx is None else tuple(make(h, device, requires_grad=True) for h in hx)

    def arg(hs):
        return None if hs is None else (hs if len(hs) == 2 else hs[0])
    out_t, fin_t = reference(xt, arg(hts))
    out_a, fin_a = layer(xa, arg(has))
    loss_t = (out_t ** 2).sum() + sum((f ** 3).sum() for f in states(fin_t))
    loss_a = (out_a ** 2).sum() + sum((f ** 3).sum() for f in states(fin_a))
    loss_t.backward()
    loss_a.backward()
    pairs = [(xt.grad, xa.grad)] + ([] if hx is None else [(t.grad, a.grad) for t, a in zip(hts, has)])
    return (out_t, states(fin_t)), (out_a, states(fin_a)), pairs


@pytest.mark.parametrize("mode,config", CONFIGS)
def test_layers_match_torch_values_and_gradients(device, mode, config):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    reference = getattr(torch.nn, mode)(4, 5, **config).double()
    layer = from_torch(getattr(nn, mode)(4, 5, **config).double(), reference, device)
    x = RNG.standard_normal((3, 6, 4) if config.get("batch_first") else (6, 3, 4))
    directions = 2 if config.get("bidirectional") else 1
    layers = config.get("num_layers", 1) * directions
    hx = [RNG.standard_normal((layers, 3, config.get("proj_size") or 5))]
    if mode == "LSTM":
        hx.append(RNG.standard_normal((layers, 3, 5)))
    for initial in (None, hx):
        for parameter in list(reference.parameters()) + list(layer.parameters()):
            parameter.grad = None
        (out_t, fin_t), (out_a, fin_a), pairs = run_both(torch, reference, layer, x, initial, device)
        numpy.testing.assert_allclose(host(out_a), out_t.detach().numpy(), atol=1e-12)
        for a, t in zip(fin_a, fin_t):
            numpy.testing.assert_allclose(host(a), t.detach().numpy(), atol=1e-12)
        for t, a in pairs:
            numpy.testing.assert_allclose(host(a), t.numpy(), atol=1e-11)
        for (name, p_t), p_a in zip(reference.named_parameters(), layer.parameters()):
            numpy.testing.assert_allclose(host(p_a.grad), p_t.grad.numpy(), atol=1e-10, err_msg=name)


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_matches_torch(device, mode):
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    reference = getattr(torch.nn, mode)(3, 4, num_layers=2).double()
    layer = from_torch(getattr(nn, mode)(3, 4, num_layers=2).double(), reference, device)
    x = RNG.standard_normal((5, 3))
    out_t, fin_t = reference(torch.tensor(x))
    out_a, fin_a = layer(make(x, device))
    numpy.testing.assert_allclose(host(out_a), out_t.detach().numpy(), atol=1e-12)
    for a, t in zip(states(fin_a), states(fin_t)):
        assert a.shape == tuple(t.shape)
        numpy.testing.assert_allclose(host(a), t.detach().numpy(), atol=1e-12)


@pytest.mark.parametrize("mode,config", CONFIGS)
def test_packed_unsorted_input_matches_torch(device, mode, config):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as torch_rnn
    torch.manual_seed(4)
    reference = getattr(torch.nn, mode)(4, 5, **config).double()
    layer = from_torch(getattr(nn, mode)(4, 5, **config).double(), reference, device)
    batch_first = config.get("batch_first", False)
    lengths = [3, 6, 1, 6]
    x = RNG.standard_normal((4, 6, 4) if batch_first else (6, 4, 4))
    xt = torch.tensor(x, requires_grad=True)
    xa = make(x, device, requires_grad=True)
    packed_t = torch_rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=False)
    packed_a = pack_padded_sequence(xa, lengths, batch_first=batch_first, enforce_sorted=False)
    assert host(packed_a.sorted_indices).tolist() == packed_t.sorted_indices.tolist()
    assert packed_a.batch_sizes.tolist() == packed_t.batch_sizes.tolist()
    layers = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    initial = [RNG.standard_normal((layers, 4, config.get("proj_size") or 5))]
    if mode == "LSTM":
        initial.append(RNG.standard_normal((layers, 4, 5)))
    initial_t = [torch.tensor(h, requires_grad=True) for h in initial]
    initial_a = [make(h, device, requires_grad=True) for h in initial]
    out_t, fin_t = reference(packed_t, tuple(initial_t) if mode == "LSTM" else initial_t[0])
    out_a, fin_a = layer(packed_a, tuple(initial_a) if mode == "LSTM" else initial_a[0])
    assert isinstance(out_a, PackedSequence)
    padded_t, lengths_t = torch_rnn.pad_packed_sequence(out_t, batch_first=batch_first, total_length=7)
    padded_a, lengths_a = pad_packed_sequence(out_a, batch_first=batch_first, total_length=7)
    assert lengths_a.tolist() == lengths_t.tolist() == lengths
    numpy.testing.assert_allclose(host(padded_a), padded_t.detach().numpy(), atol=1e-12)
    for a, t in zip(states(fin_a), states(fin_t)):
        numpy.testing.assert_allclose(host(a), t.detach().numpy(), atol=1e-12)
    ((padded_t ** 2).sum() + sum((f ** 3).sum() for f in states(fin_t))).backward()
    ((padded_a ** 2).sum() + sum((f ** 3).sum() for f in states(fin_a))).backward()
    for t, a in zip([xt] + initial_t, [xa] + initial_a):
        numpy.testing.assert_allclose(host(a.grad), t.grad.numpy(), atol=1e-11)
    for p_t, p_a in zip(reference.parameters(), layer.parameters()):
        numpy.testing.assert_allclose(host(p_a.grad), p_t.grad.numpy(), atol=1e-10)


def test_cells_match_torch(device):
    torch = pytest.importorskip("torch")
    torch.manual_seed(5)
    for name, kwargs in (("RNNCell", {"nonlinearity": "relu"}), ("RNNCell", {"bias": False}), ("LSTMCell", {}),
                         ("GRUCell", {})):
        reference = getattr(torch.nn, name)(3, 4, **kwargs).double()
        cell = from_torch(getattr(nn, name)(3, 4, **kwargs).double(), reference, device)
        x, h, c = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
        hx_t = (torch.tensor(h), torch.tensor(c)) if name == "LSTMCell" else torch.tensor(h)
        hx_a = (make(h, device), make(c, device)) if name == "LSTMCell" else make(h, device)
        for out_a, out_t in zip(states(cell(make(x, device), hx_a)), states(reference(torch.tensor(x), hx_t))):
            numpy.testing.assert_allclose(host(out_a), out_t.detach().numpy(), atol=1e-13)
        out_a, out_t = states(cell(make(x[0], device)))[0], states(reference(torch.tensor(x[0])))[0]
        assert out_a.shape == tuple(out_t.shape)
        numpy.testing.assert_allclose(host(out_a), out_t.detach().numpy(), atol=1e-13)


def test_dropout_between_layers_only_in_training(device):
    agnostic.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5).to(device)
    x = agnostic.randn(5, 2, 3, device=device)
    lstm.eval()
    first, second = lstm(x)[0], lstm(x)[0]
    assert agnostic.equal(first, second)
    lstm.train()
    assert not agnostic.equal(lstm(x)[0], first)
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)


# ----- packed and padded sequences ----------------------------------------------------------------------------


def test_pack_and_pad_round_trip_keeps_the_original_order(device):
    padded = make([[1, 2, 0], [3, 0, 0], [4, 5, 6]], device)
    packed = pack_padded_sequence(padded, agnostic.tensor([2, 1, 3]), batch_first=True, enforce_sorted=False)
    assert host(packed.data).tolist() == [4, 1, 3, 5, 2, 6]
    assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.batch_sizes.device.type == "cpu"
    assert host(packed.sorted_indices).tolist() == [2, 0, 1]
    assert host(packed.unsorted_indices).tolist() == [1, 2, 0]
    restored, lengths = pad_packed_sequence(packed, batch_first=True, padding_value=-1)
    assert host(restored).tolist() == [[1, 2, -1], [3, -1, -1], [4, 5, 6]]
    assert lengths.tolist() == [2, 1, 3]
    sequences = unpack_sequence(packed)
    assert [host(s).tolist() for s in sequences] == [[1, 2], [3], [4, 5, 6]]


def test_pad_sequence_pads_right_or_left(device):
    a, b = make([1.0, 2.0, 3.0], device), make([4.0], device)
    assert host(pad_sequence([a, b])).tolist() == [[1, 4], [2, 0], [3, 0]]
    assert host(pad_sequence([a, b], batch_first=True, padding_value=9, padding_side="left")).tolist() == \
        [[1, 2, 3], [9, 9, 4]]
    with pytest.raises(RuntimeError, match="padding_side"):
        pad_sequence([a], padding_side="middle")
    with pytest.raises(RuntimeError, match="empty list"):
        pad_sequence([])
    padded = pad_sequence([a, b], batch_first=True)
    assert [host(s).tolist() for s in unpad_sequence(padded, [3, 1], batch_first=True)] == [[1, 2, 3], [4]]


def test_pack_sequence_matches_torch_and_checks_order(device):
    torch = pytest.importorskip("torch")
    from torch.nn.utils import rnn as torch_rnn
    sequences = [RNG.standard_normal((n, 2)) for n in (2, 5, 5, 1)]
    packed_t = torch_rnn.pack_sequence([torch.tensor(s) for s in sequences], enforce_sorted=False)
    packed_a = pack_sequence([make(s, device) for s in sequences], enforce_sorted=False)
    numpy.testing.assert_array_equal(host(packed_a.data), packed_t.data.numpy())
    assert host(packed_a.unsorted_indices).tolist() == packed_t.unsorted_indices.tolist()
    assert host(invert_permutation(packed_a.sorted_indices)).tolist() == packed_t.unsorted_indices.tolist()
    assert repr(pack_sequence([agnostic.tensor([1, 2]), agnostic.tensor([3])])) == \
        repr(torch_rnn.pack_sequence([torch.tensor([1, 2]), torch.tensor([3])])).replace("torch", "agnostic")
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pack_sequence([make(s, device) for s in sequences])
    with pytest.raises(RuntimeError, match="greater than 0"):
        pack_padded_sequence(make(numpy.zeros((3, 2)), device), [3, 0])
    with pytest.raises(RuntimeError, match="equal to batch_size"):
        pack_padded_sequence(make(numpy.zeros((3, 2)), device), [3, 2, 1])
    with pytest.raises(ValueError, match="total_length"):
        pad_packed_sequence(packed_a, total_length=2)


def test_packed_run_equals_each_sequence_run_alone(device):
    agnostic.manual_seed(1)
    gru = nn.GRU(2, 3, num_layers=2, bidirectional=True).double().to(device)
    sequences = [make(RNG.standard_normal((n, 2)), device) for n in (3, 5, 1)]
    output, h_n = gru(pack_sequence(sequences, enforce_sorted=False))
    padded, _ = pad_packed_sequence(output)
    for index, sequence in enumerate(sequences):
        alone, h_alone = gru(sequence)
        numpy.testing.assert_allclose(host(padded[:sequence.shape[0], index]), host(alone), atol=1e-12)
        numpy.testing.assert_allclose(host(h_n[:, index]), host(h_alone), atol=1e-12)
    assert float(padded[1:, 2].abs().sum()) == 0.0


# ----- errors ----------------------------------------------------------------------------------------------------


def test_bad_arguments_raise_torchs_errors(device):
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    rnn = nn.RNN(3, 4).to(device)
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 2"):
        rnn(agnostic.zeros(5, 2, 2, device=device))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        rnn(agnostic.zeros(1, 5, 2, 3, device=device))
    with pytest.raises(RuntimeError, match="Expected hidden size \\(1, 2, 4\\), got \\[1, 3, 4\\]"):
        rnn(agnostic.zeros(5, 2, 3, device=device), agnostic.zeros(1, 3, 4, device=device))
    with pytest.raises(RuntimeError, match="hx should also be 3-D"):
        rnn(agnostic.zeros(5, 2, 3, device=device), agnostic.zeros(2, 4, device=device))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        rnn(agnostic.zeros(5, 2, 3, dtype=agnostic.float64, device=device))
    with pytest.raises(RuntimeError, match="Expected hidden\\[1\\] size"):
        nn.LSTM(3, 4).to(device)(agnostic.zeros(5, 2, 3, device=device),
                                  (agnostic.zeros(1, 2, 4, device=device), agnostic.zeros(1, 1, 4, device=device)))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 2 expected 3"):
        nn.LSTMCell(3, 4).to(device)(agnostic.zeros(2, 2, device=device))
    with pytest.raises(RuntimeError, match="hidden0 has inconsistent hidden_size: got 5, expected 4"):
        nn.GRUCell(3, 4).to(device)(agnostic.zeros(2, 3, device=device), agnostic.zeros(2, 5, device=device))


# ----- learning ---------------------------------------------------------------------------------------------------


def test_an_lstm_learns_to_recall_the_first_input(device):
    agnostic.manual_seed(0)
    lstm, head = nn.LSTM(1, 8, batch_first=True).to(device), nn.Linear(8, 1).to(device)
    optimizer = agnostic.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.05)
    x = make(RNG.uniform(-1, 1, (32, 5, 1)).astype(numpy.float32), device)
    target = x[:, 0]
    losses = []
    for _ in range(60):
        optimizer.zero_grad()
        output, _ = lstm(x)
        loss = ((head(output[:, -1]) - target) ** 2).mean()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]
