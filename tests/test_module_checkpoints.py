"""Whole-object checkpoints: ``agnostic.save(model)`` pickles the module as ``torch.save`` does, and
``agnostic.load`` gives it back with ``weights_only=False`` or with its classes admitted by ``safe_globals``, refusing
anything else without running it."""

import io
import pickle
import warnings

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
import agnostic.nn.modules  # noqa: F401  (the torch.nn.modules.* paths programs name in safe_globals)
from agnostic import serialization
from agnostic.serialization import CheckpointUnpicklingError


def _saved(obj):
    buffer = io.BytesIO()
    agnostic.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _outputs_equal(before, after, *inputs):
    before.eval()
    after.eval()
    with agnostic.no_grad():
        first, second = before(*inputs), after(*inputs)
    first = first[0] if isinstance(first, tuple) else first
    second = second[0] if isinstance(second, tuple) else second
    assert first.device == second.device
    assert agnostic.equal(first, second)


class RNNModel(nn.Module):
    """word_language_model's model: an encoder, a recurrent module and a decoder, with tied weights."""

    def __init__(self, tokens, size, layers, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(tokens, size)
        self.rnn = nn.LSTM(size, size, layers, dropout=dropout)
        self.decoder = nn.Linear(size, tokens)
        self.decoder.weight = self.encoder.weight
        self.size, self.layers = size, layers

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, batch):
        weight = next(self.parameters())
        return (weight.new_zeros(self.layers, batch, self.size), weight.new_zeros(self.layers, batch, self.size))


def test_the_word_language_model_pattern(device, tmp_path):
    agnostic.manual_seed(0)
    model = RNNModel(20, 8, 2).to(device)
    path = tmp_path / "model.pt"
    with open(path, "wb") as f:
        agnostic.save(model, f)
    with open(path, "rb") as f:
        with agnostic.serialization.safe_globals([RNNModel, nn.modules.dropout.Dropout, nn.modules.linear.Linear,
                                                  nn.modules.rnn.GRU, nn.modules.rnn.LSTM, nn.modules.rnn.RNN,
                                                  nn.modules.sparse.Embedding]):
            loaded = agnostic.load(f)
    assert serialization.get_safe_globals() == []  # the context admitted them for its block only
    loaded.rnn.flatten_parameters()
    assert type(loaded) is RNNModel and loaded.layers == 2
    assert loaded.decoder.weight is loaded.encoder.weight  # tied weights stay one parameter
    assert isinstance(loaded.decoder.weight, nn.Parameter)
    assert loaded.decoder.weight.device == model.decoder.weight.device
    tokens = agnostic.randint(0, 20, (5, 3), device=device)
    _outputs_equal(model, loaded, tokens, model.init_hidden(3))
    assert [name for name, _ in loaded.named_parameters()] == [name for name, _ in model.named_parameters()]


def test_lstm_round_trip_and_training_goes_on(device):
    agnostic.manual_seed(1)
    model = nn.LSTM(4, 6, num_layers=2, batch_first=True, bidirectional=True).to(device)
    loaded = agnostic.load(_saved(model), weights_only=False)
    x = agnostic.randn(3, 5, 4, device=device)
    _outputs_equal(model, loaded, x)
    loaded.train()
    loaded(x)[0].sum().backward()
    assert all(p.grad is not None for p in loaded.parameters())
    assert loaded.weight_ih_l0.grad.shape == model.weight_ih_l0.shape


def test_transformer_round_trip_needs_its_activation_function_too(device):
    agnostic.manual_seed(2)
    model = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), num_layers=2).to(device)
    classes = [nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.modules.activation.MultiheadAttention,
               nn.modules.linear.NonDynamicallyQuantizableLinear, nn.Linear, nn.LayerNorm, nn.Dropout, nn.ModuleList]
    with serialization.safe_globals(classes):
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL agnostic\.nn\.functional\..*relu was not an "
                                                         r"allowed global"):
            agnostic.load(_saved(model))
    with serialization.safe_globals(classes + [F.relu]):
        loaded = agnostic.load(_saved(model))
    _outputs_equal(model, loaded, agnostic.randn(5, 2, 8, device=device))


def test_sequential_cnn_keeps_buffers_and_mode(device):
    agnostic.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 3)).to(device)
    model(agnostic.randn(6, 1, 8, 8, device=device))  # moves the running statistics
    model.eval()
    loaded = agnostic.load(_saved(model), weights_only=False)
    assert loaded.training is False and loaded[1].training is False
    assert agnostic.allclose(loaded[1].running_mean, model[1].running_mean)
    assert loaded[1].num_batches_tracked.item() == 1
    assert loaded.state_dict().keys() == model.state_dict().keys()
    _outputs_equal(model, loaded, agnostic.randn(2, 1, 8, 8, device=device))


def test_refusal_names_the_first_class_not_admitted_and_the_fix():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    with pytest.raises(CheckpointUnpicklingError) as refused:
        agnostic.load(_saved(model))
    message = str(refused.value)
    assert "Unsupported global: GLOBAL agnostic.nn.containers.Sequential was not an allowed global" in message
    assert "add_safe_globals([agnostic.nn.containers.Sequential])" in message and "safe_globals(" in message
    assert "weights_only=False" in message
    with serialization.safe_globals([nn.Sequential, nn.Linear]):
        with pytest.raises(pickle.UnpicklingError, match="GLOBAL agnostic.nn.activation.ReLU was not an allowed"):
            agnostic.load(_saved(model))
    serialization.add_safe_globals([nn.Sequential, nn.Linear, nn.ReLU])
    try:
        assert isinstance(agnostic.load(_saved(model))[1], nn.ReLU)
    finally:
        serialization.clear_safe_globals()


class _Payload:
    """An object whose pickle calls a function: what a malicious checkpoint does."""

    def __init__(self, log):
        self.log = log

    def __reduce__(self):
        return (_record, (self.log,))


CALLS = []


def _record(log):
    CALLS.append(log)
    return log


def test_nothing_in_the_file_runs_unless_admitted():
    buffer = _saved({"model": nn.Linear(1, 1), "payload": _Payload("ran")})
    with serialization.safe_globals([nn.Linear]):
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL .*_record was not an allowed global"):
            agnostic.load(buffer)
    assert CALLS == []
    buffer.seek(0)
    assert agnostic.load(buffer, weights_only=False)["payload"] == "ran" and CALLS == ["ran"]
    CALLS.clear()


def test_admitting_a_class_admits_building_it_not_calling_other_things():
    buffer = _saved(_Payload("x"))
    with serialization.safe_globals([_Payload]):  # the class, not the function its pickle calls
        with pytest.raises(pickle.UnpicklingError, match="_record"):
            agnostic.load(buffer)
    assert CALLS == []


class _Tags(list):
    """A list subclass: allowed ones may be appended to on load, as in PyTorch."""


def test_an_allowed_list_subclass_is_rebuilt_with_its_items():
    model = nn.Linear(1, 1)
    model.tags = _Tags(["a", "b"])
    buffer = _saved(model)
    with serialization.safe_globals([nn.Linear]):
        with pytest.raises(pickle.UnpicklingError, match="_Tags was not an allowed global"):
            agnostic.load(buffer)
    buffer.seek(0)
    with serialization.safe_globals([nn.Linear, _Tags]):
        loaded = agnostic.load(buffer).tags
    assert type(loaded) is _Tags and loaded == ["a", "b"]


def test_optimizer_round_trip_keeps_its_state_on_its_parameters():
    model = nn.Linear(3, 2)
    optimizer = agnostic.optim.Adam(model.parameters(), lr=0.01)
    model(agnostic.ones(4, 3)).sum().backward()
    optimizer.step()
    loaded = agnostic.load(_saved({"model": model, "optimizer": optimizer}), weights_only=False)
    new_model, new_optimizer = loaded["model"], loaded["optimizer"]
    assert new_optimizer.param_groups[0]["params"][0] is new_model.weight  # one object, through the memo
    assert agnostic.equal(new_optimizer.state[new_model.weight]["exp_avg"], optimizer.state[model.weight]["exp_avg"])
    assert new_optimizer.param_groups[0]["lr"] == 0.01


def test_plain_data_is_still_written_as_before():
    # a state dict needs no class admitted, and its file has no agnostic class in it
    buffer = _saved(nn.Linear(2, 2).state_dict())
    assert b"agnostic" not in buffer.getvalue()
    assert set(agnostic.load(buffer)) == {"weight", "bias"}
    assert b"agnostic.nn.linear" in _saved(nn.Linear(2, 2)).getvalue()


def test_pytorch_refuses_an_agnostic_module_file_and_reads_state_dicts(tmp_path):
    torch = pytest.importorskip("torch")
    model = nn.Linear(2, 3)
    with pytest.raises(pickle.UnpicklingError, match="agnostic.nn.linear.Linear"):
        torch.load(_saved(model))
    state = torch.load(_saved(model.state_dict()))
    assert state["weight"].tolist() == model.weight.tolist()


def test_unpicklable_objects_fail_as_with_pytorch():
    model = nn.Linear(1, 1)
    model.callback = lambda x: x  # a lambda can't be pickled by name, in PyTorch either
    with pytest.raises((pickle.PicklingError, AttributeError), match="lambda"):
        agnostic.save(model, io.BytesIO())


def _torch_module_file(torch, model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return buffer


def test_a_pytorch_whole_module_file_loads_as_agnostic_layers():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    cases = [
        (torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                             torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(64, 3)), (2, 1, 8, 8)),
        (torch.nn.LSTM(4, 5, 2), (3, 2, 4)),
        (torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2,
                                     enable_nested_tensor=False), (5, 2, 8)),
    ]
    for model, shape in cases:
        model.eval()
        loaded = agnostic.load(_torch_module_file(torch, model), weights_only=False)
        assert type(loaded).__name__ == type(model).__name__ and type(loaded).__module__.startswith("agnostic.nn")
        x = numpy.random.default_rng(0).standard_normal(shape).astype(numpy.float32)
        with torch.no_grad():
            expected = model(torch.from_numpy(x))
        with agnostic.no_grad():
            got = loaded.eval()(agnostic.tensor(x))
        expected, got = (expected[0], got[0]) if isinstance(expected, tuple) else (expected, got)
        numpy.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_a_pytorch_module_file_under_safe_globals_uses_agnostic_classes():
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU())
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.nn.modules.container.Sequential was not an "
                                                     "allowed global"):
        agnostic.load(_torch_module_file(torch, model))
    # the program, written for PyTorch, names the classes by PyTorch's paths: agnostic's objects under them
    with serialization.safe_globals([nn.modules.container.Sequential, nn.modules.linear.Linear,
                                     nn.modules.activation.ReLU]):
        loaded = agnostic.load(_torch_module_file(torch, model))
    assert isinstance(loaded, nn.Sequential) and isinstance(loaded[0], nn.Linear)
    assert loaded[0].weight.tolist() == model[0].weight.tolist() and loaded[1](agnostic.tensor([-1.0])).item() == 0


def test_a_pytorch_class_agnostic_lacks_is_named():
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Container is deprecated in PyTorch
        model = torch.nn.Sequential(torch.nn.Container())
    with pytest.raises(pickle.UnpicklingError, match="pickles torch.nn.modules.container.Container, "
                                                     "a PyTorch object agnostic has no counterpart"):
        agnostic.load(_torch_module_file(torch, model), weights_only=False)


class _Holder(nn.Module):
    """A module with a buffer and a view of it as an attribute: what a pickled module's tensors look like."""

    def __init__(self, values):
        super().__init__()
        self.register_buffer("values", values)
        self.view = values[..., ::2] if values.ndim else values


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(0, 4), max_size=3),
       dtype=st.sampled_from(["float32", "float64", "float16", "int64", "int8", "uint8", "bool", "complex64"]))
def test_module_tensors_of_any_shape_and_dtype_round_trip(shape, dtype):
    values = agnostic.arange(int(numpy.prod(shape)) if shape else 1).reshape(shape).to(getattr(agnostic, dtype))
    loaded = agnostic.load(_saved(_Holder(values)), weights_only=False)
    assert loaded.values.dtype is values.dtype and loaded.values.shape == values.shape
    assert loaded.values.tolist() == values.tolist()
    assert loaded.view.tolist() == (values[..., ::2] if values.ndim else values).tolist()
    if values.numel() > 1 and values.ndim:  # the view still shares the buffer's memory, as in the saved module
        loaded.values.view(-1)[0] = 1
        assert loaded.view.reshape(-1)[0].item() == 1
