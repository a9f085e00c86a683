"""The top-level recurrent functions (agnostic.lstm, gru, rnn_tanh, rnn_relu and the *_cell forms): the nn layers'
values for the same flat parameters, NumPy cell references, PyTorch's outputs and gradients, packed data."""

import numpy
import pytest

import agnostic
from agnostic.nn.utils.rnn import pack_padded_sequence

MODULES = {"lstm": agnostic.nn.LSTM, "gru": agnostic.nn.GRU, "rnn_tanh": agnostic.nn.RNN,
           "rnn_relu": lambda *args, **kwargs: agnostic.nn.RNN(*args, nonlinearity="relu", **kwargs)}


def _numpy(tensor):
    return tensor.detach().cpu().numpy()


def _states(name, layers, batch, size, device, dtype=agnostic.float64):
    agnostic.manual_seed(1)
    h0 = agnostic.randn(layers, batch, size, device=device, dtype=dtype)
    c0 = agnostic.randn(layers, batch, size, device=device, dtype=dtype)
    return ((h0, c0) if name == "lstm" else h0), h0, c0


@pytest.mark.parametrize("name", sorted(MODULES))
@pytest.mark.parametrize("batch_first, bidirectional, num_layers", [(False, False, 1), (True, True, 2)])
def test_function_equals_the_layer_with_the_same_weights(device, name, batch_first, bidirectional, num_layers):
    agnostic.manual_seed(0)
    module = MODULES[name](3, 4, num_layers=num_layers, batch_first=batch_first, bidirectional=bidirectional)
    module = module.to(device).double()
    x = agnostic.randn(2, 5, 3, device=device, dtype=agnostic.float64)
    hx, _, _ = _states(name, num_layers * (2 if bidirectional else 1), 5 if not batch_first else 2, 4, device)
    result = getattr(agnostic, name)(x, hx, module._flat_weights, True, num_layers, 0.0, False, bidirectional,
                                     batch_first)
    output, finals = module(x, hx)
    finals = finals if name == "lstm" else (finals,)
    assert len(result) == 1 + len(finals)
    for ours, theirs in zip(result, (output,) + tuple(finals)):
        numpy.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_function_matches_pytorch_values_and_gradients(device, name):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(0)
    gates = {"lstm": 4, "gru": 3}.get(name, 1)
    shapes = []
    for layer in range(2):
        for _ in range(2):  # bidirectional
            features = 3 if layer == 0 else 8
            shapes += [(gates * 4, features), (gates * 4, 4), (gates * 4,), (gates * 4,)]
    weights = [rng.normal(size=shape) * 0.5 for shape in shapes]
    x, h0, c0 = rng.normal(size=(6, 2, 3)), rng.normal(size=(4, 2, 4)), rng.normal(size=(4, 2, 4))
    ours = [agnostic.tensor(w, device=device, requires_grad=True) for w in weights]
    theirs = [torch.tensor(w, requires_grad=True) for w in weights]
    ours_x, theirs_x = agnostic.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_hx = (agnostic.tensor(h0, device=device), agnostic.tensor(c0, device=device))
    theirs_hx = (torch.tensor(h0), torch.tensor(c0))
    if name != "lstm":
        ours_hx, theirs_hx = ours_hx[0], theirs_hx[0]
    result = getattr(agnostic, name)(ours_x, ours_hx, ours, True, 2, 0.0, True, True, False)
    expected = getattr(torch, name)(theirs_x, theirs_hx, theirs, True, 2, 0.0, True, True, False)
    for a, b in zip(result, expected):
        numpy.testing.assert_allclose(_numpy(a), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    sum(part.sin().sum() for part in result).backward()
    sum(part.sin().sum() for part in expected).backward()
    numpy.testing.assert_allclose(_numpy(ours_x.grad), theirs_x.grad.numpy(), rtol=1e-9, atol=1e-12)
    for a, b in zip(ours, theirs):
        numpy.testing.assert_allclose(_numpy(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_packed_form_equals_the_layer_on_a_packed_sequence(device, name):
    agnostic.manual_seed(0)
    module = MODULES[name](3, 4, bidirectional=True).to(device).double()
    x = agnostic.randn(5, 3, 3, device=device, dtype=agnostic.float64)
    packed = pack_padded_sequence(x, agnostic.tensor([5, 3, 2]))
    hx, _, _ = _states(name, 2, 3, 4, device)
    result = getattr(agnostic, name)(packed.data, packed.batch_sizes, hx, module._flat_weights, True, 1, 0.0, False,
                                     True)
    output, finals = module(packed, hx)
    numpy.testing.assert_allclose(_numpy(result[0]), _numpy(output.data), rtol=1e-12)
    finals = finals if name == "lstm" else (finals,)
    for ours, theirs in zip(result[1:], finals):
        numpy.testing.assert_allclose(_numpy(ours), _numpy(theirs), rtol=1e-12)


def test_lstm_with_projection_infers_it_from_the_parameter_count(device):
    agnostic.manual_seed(0)
    module = agnostic.nn.LSTM(3, 5, proj_size=2).to(device)
    x = agnostic.randn(4, 2, 3, device=device)
    hx = (agnostic.zeros(1, 2, 2, device=device), agnostic.zeros(1, 2, 5, device=device))
    output, h_n, c_n = agnostic.lstm(x, hx, module._flat_weights, True, 1, 0.0, False, False, False)
    assert output.shape == (4, 2, 2) and c_n.shape == (1, 2, 5)
    numpy.testing.assert_allclose(_numpy(output), _numpy(module(x, hx)[0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="expected 4 parameters"):
        agnostic.lstm(x, hx, module._flat_weights[:3], True, 1, 0.0, False, False, False)


def _sigmoid(x):
    return 1 / (1 + numpy.exp(-x))


def test_cells_match_numpy_references(device):
    rng = numpy.random.default_rng(4)
    x, h, c = rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    params = {gates: (rng.normal(size=(gates * 4, 3)), rng.normal(size=(gates * 4, 4)), rng.normal(size=gates * 4),
                      rng.normal(size=gates * 4)) for gates in (1, 3, 4)}

    def tensors(*arrays):
        return [agnostic.tensor(a, device=device) for a in arrays]

    w_ih, w_hh, b_ih, b_hh = params[4]
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh
    i, f, g, o = _sigmoid(gates[:, :4]), _sigmoid(gates[:, 4:8]), numpy.tanh(gates[:, 8:12]), _sigmoid(gates[:, 12:])
    want_c = f * c + i * g
    hy, cy = agnostic.lstm_cell(*tensors(x), tuple(tensors(h, c)), *tensors(*params[4]))
    numpy.testing.assert_allclose(_numpy(cy), want_c, rtol=1e-12)
    numpy.testing.assert_allclose(_numpy(hy), o * numpy.tanh(want_c), rtol=1e-12)

    w_ih, w_hh, b_ih, b_hh = params[3]
    gi, gh = x @ w_ih.T + b_ih, h @ w_hh.T + b_hh
    r, z = _sigmoid(gi[:, :4] + gh[:, :4]), _sigmoid(gi[:, 4:8] + gh[:, 4:8])
    n = numpy.tanh(gi[:, 8:] + r * gh[:, 8:])
    numpy.testing.assert_allclose(_numpy(agnostic.gru_cell(*tensors(x, h, *params[3]))), (1 - z) * n + z * h,
                                  rtol=1e-12)

    pre = x @ params[1][0].T + params[1][2] + h @ params[1][1].T + params[1][3]
    numpy.testing.assert_allclose(_numpy(agnostic.rnn_tanh_cell(*tensors(x, h, *params[1]))), numpy.tanh(pre),
                                  rtol=1e-12)
    numpy.testing.assert_allclose(_numpy(agnostic.rnn_relu_cell(*tensors(x, h, *params[1]))),
                                  numpy.maximum(pre, 0), rtol=1e-12)
    no_bias = agnostic.rnn_tanh_cell(*tensors(x, h, params[1][0], params[1][1]))
    numpy.testing.assert_allclose(_numpy(no_bias), numpy.tanh(x @ params[1][0].T + h @ params[1][1].T), rtol=1e-12)


def test_cells_match_pytorch_with_gradients(device):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(5)
    for name, gates in (("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)):
        arrays = [rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(gates * 4, 3)),
                  rng.normal(size=(gates * 4, 4)), rng.normal(size=gates * 4), rng.normal(size=gates * 4)]
        ours = [agnostic.tensor(a, device=device, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        if name == "lstm_cell":
            c = rng.normal(size=(2, 4))
            ours_out = agnostic.lstm_cell(ours[0], (ours[1], agnostic.tensor(c, device=device)), *ours[2:])
            theirs_out = torch.lstm_cell(theirs[0], (theirs[1], torch.tensor(c)), *theirs[2:])
        else:
            ours_out, theirs_out = (getattr(agnostic, name)(*ours),), (getattr(torch, name)(*theirs),)
        sum((o * o).sum() for o in ours_out).backward()
        sum((o * o).sum() for o in theirs_out).backward()
        for a, b in zip(ours_out, theirs_out):
            numpy.testing.assert_allclose(_numpy(a), b.detach().numpy(), rtol=1e-10, err_msg=name)
        for a, b in zip(ours, theirs):
            numpy.testing.assert_allclose(_numpy(a.grad), b.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_lstm_function_passes_gradcheck(device):
    agnostic.manual_seed(0)
    module = agnostic.nn.LSTM(2, 3).to(device).double()
    weights = [w.detach().requires_grad_() for w in module._flat_weights]
    x = agnostic.randn(3, 2, 2, device=device, dtype=agnostic.float64, requires_grad=True)
    h0 = agnostic.zeros(1, 2, 3, device=device, dtype=agnostic.float64)

    def run(x, *weights):
        return agnostic.lstm(x, (h0, h0), list(weights), True, 1, 0.0, False, False, False)[0]
    assert agnostic.autograd.gradcheck(run, (x, *weights))


def test_bad_arguments_are_refused(device):
    h0 = agnostic.zeros(1, 1, 2, device=device)
    weights = [agnostic.eye(2, device=device), agnostic.zeros(2, 2, device=device)]
    with pytest.raises(RuntimeError, match="3 dimensions"):
        agnostic.rnn_tanh(agnostic.ones(1, 2, device=device), h0, weights, False, 1, 0.0, False, False, False)
    with pytest.raises(TypeError, match="missing required"):
        agnostic.rnn_tanh(agnostic.ones(1, 1, 2, device=device), h0, weights)
