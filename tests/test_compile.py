"""agnostic.compile: torch.compile's entry point; models and functions run eagerly with the same results, or, in the
modes that use CUDA graphs, replay graphs of themselves with the same results."""

import warnings

import numpy
import pytest

import agnostic
from agnostic import _compile


def test_compile_returns_the_function_and_the_module_running_eagerly(device):
    def step(x):
        return (x * 2).sum()

    x = agnostic.arange(4.0, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the one-time CUDA note is checked below
        compiled = agnostic.compile(step)
        decorated = agnostic.compile(mode="max-autotune", fullgraph=True, dynamic=False)(step)
        model = agnostic.nn.Linear(4, 2).to(device)
        assert agnostic.compile(model, backend="eager") is model
        assert model.compile(mode="reduce-overhead") is None
    assert compiled is step
    # The CUDA-graph modes wrap the function on machines with CUDA (below); elsewhere they are the identity too.
    assert (decorated is step) is not agnostic.cuda.is_available()
    assert compiled(x).item() == 12.0 and decorated(x).item() == 12.0
    assert model(x).shape == (2,)


@pytest.mark.parametrize("arguments, error, message", [
    (dict(mode="fast"), RuntimeError, "Unrecognized mode=fast, should be one of: default"),
    (dict(mode="default", options={}), RuntimeError, "Either mode or options can be specified"),
    (dict(backend="tvm"), RuntimeError, "Invalid backend: 'tvm'"),
    (dict(options=["max_autotune"]), TypeError, "options must be a dict"),
])
def test_compile_checks_its_arguments_as_pytorch_does(arguments, error, message):
    with pytest.raises(error, match=message):
        agnostic.compile(lambda x: x, **arguments)
    with pytest.raises(error, match=message):
        agnostic.nn.Linear(1, 1).compile(**arguments)


def test_compile_refuses_what_it_cannot_call():
    with pytest.raises(TypeError, match="takes a function or an nn.Module, not int"):
        agnostic.compile(5)
    with pytest.raises(RuntimeError, match="Model can't be None"):
        agnostic.compile()(None)


def test_a_custom_backend_is_accepted_and_the_model_still_runs_eagerly():
    calls = []

    def backend(graph, example_inputs):
        calls.append(graph)
        return graph

    function = agnostic.compile(lambda x: x + 1, backend=backend)
    assert function(agnostic.ones(1)).item() == 2.0 and calls == []


def test_on_cuda_machines_one_warning_says_that_nothing_is_captured_and_where_graphs_are(monkeypatch):
    monkeypatch.setattr(_compile, "_warned", [])
    monkeypatch.setattr(_compile.cuda, "is_available", lambda: True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agnostic.compile(lambda x: x)
        agnostic.compile(lambda x: x)
        agnostic.compile(lambda x: x, disable=True)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "runs the model eagerly" in messages[0] and "agnostic.cuda.graph" in messages[0]
    monkeypatch.setattr(_compile, "_warned", [])
    monkeypatch.setattr(_compile.cuda, "is_available", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agnostic.compile(lambda x: x)  # the CPU: the identity, silently


# ----- on a GPU: the modes that use CUDA graphs --------------------------------------------------------------------

def _mlp(device, dropout=0.0):
    agnostic.manual_seed(0)
    return agnostic.nn.Sequential(agnostic.nn.Linear(6, 16), agnostic.nn.Tanh(), agnostic.nn.Dropout(dropout),
                                  agnostic.nn.Linear(16, 3)).to(device)


def test_reduce_overhead_replays_graphs_with_eager_values_and_gradients(cuda_device):
    model, reference = _mlp(cuda_device), _mlp(cuda_device)
    assert agnostic.compile(model, mode="reduce-overhead") is model
    rng = numpy.random.default_rng(0)
    held = []
    for _ in range(5):  # eager warm-up, capture, then replays
        host = rng.standard_normal((4, 6)).astype(numpy.float32)
        out = model(agnostic.tensor(host, device=cuda_device))
        expected = reference(agnostic.tensor(host, device=cuda_device))
        numpy.testing.assert_allclose(out.detach().cpu().numpy(), expected.detach().cpu().numpy(), rtol=1e-5,
                                      atol=1e-6)
        held.append((out.detach(), expected.detach()))
        (out ** 2).sum().backward()
        (expected ** 2).sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            numpy.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
            p.grad = q.grad = None
    for out, expected in held:  # outputs are copies: later replays don't overwrite them
        numpy.testing.assert_allclose(out.cpu().numpy(), expected.cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_reduce_overhead_follows_new_shapes_and_new_parameter_memory(cuda_device):
    model = agnostic.compile(_mlp(cuda_device), mode="reduce-overhead")
    reference = _mlp(cuda_device)
    with agnostic.no_grad():
        for batch in (2, 2, 2, 5, 5, 5, 2):
            x = agnostic.randn(batch, 6, device=cuda_device)
            numpy.testing.assert_allclose(model(x).cpu().numpy(), reference(x).cpu().numpy(), rtol=1e-5, atol=1e-6)
        for layer in (model[0], reference[0]):  # new memory for a weight: the graph is captured again
            layer.weight.data = agnostic.ones(16, 6, device=cuda_device)
        for _ in range(3):
            x = agnostic.randn(2, 6, device=cuda_device)
            numpy.testing.assert_allclose(model(x).cpu().numpy(), reference(x).cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_what_cannot_be_captured_runs_eagerly_after_one_warning(cuda_device):
    model = agnostic.compile(_mlp(cuda_device, dropout=0.5), mode="reduce-overhead")
    x = agnostic.randn(4, 6, device=cuda_device)
    model(x)
    with pytest.warns(UserWarning, match="could not capture this call as a CUDA graph.*random numbers"):
        model(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model(x).shape == (4, 3)


def test_compiled_functions_replay_too(cuda_device):
    @agnostic.compile(backend="cudagraphs")
    def scaled_sum(a, b):
        return (a * 2 + b).sum(0)

    for value in (1.0, 2.0, 3.0, 4.0):
        a = agnostic.full((3, 2), value, device=cuda_device)
        assert scaled_sum(a, agnostic.ones(3, 2, device=cuda_device)).tolist() == [3 * (2 * value + 1)] * 2


def test_arguments_of_earlier_calls_are_never_overwritten_by_later_replays(cuda_device):
    double = agnostic.compile(lambda x: x * 2, mode="reduce-overhead")
    inputs = [agnostic.full((3,), float(i), device=cuda_device) for i in range(5)]
    outputs = [double(x) for x in inputs]
    assert [x.tolist() for x in inputs] == [[float(i)] * 3 for i in range(5)]
    assert [y.tolist() for y in outputs] == [[2.0 * i] * 3 for i in range(5)]


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
def test_a_whole_training_step_is_captured_and_each_replay_repeats_its_update(cuda_device, optimizer):
    def setup():
        model = _mlp(cuda_device)
        if optimizer == "SGD":
            opt = agnostic.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        else:
            opt = agnostic.optim.Adam(model.parameters(), lr=0.01, capturable=True)

        def step(x, y):
            opt.zero_grad(set_to_none=True)
            loss = agnostic.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss.detach()

        return model, step

    (model, step), (reference, eager_step) = setup(), setup()
    compiled = agnostic.compile(step, mode="reduce-overhead")
    rng = numpy.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager would warn: the step must be captured
        for _ in range(6):  # warm-up, capture (and its replay), then four replays
            x = agnostic.tensor(rng.standard_normal((8, 6)).astype(numpy.float32), device=cuda_device)
            y = agnostic.tensor(rng.integers(0, 3, 8), device=cuda_device)
            loss, expected = compiled(x, y), eager_step(x, y)
            numpy.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-5)
    for p, q in zip(model.parameters(), reference.parameters()):
        numpy.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-4, atol=1e-6)


def test_calls_that_are_not_all_cuda_tensors_run_eagerly_after_one_warning(cuda_device):
    scale = agnostic.compile(lambda x, factor: x * factor, mode="reduce-overhead")
    x = agnostic.ones(2, device=cuda_device)
    with pytest.warns(UserWarning, match="arguments are all CUDA tensors"):
        assert scale(x, 3.0).tolist() == [3.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scale(x, 4.0).tolist() == [4.0, 4.0]
