"""agnostic.compile: torch.compile's entry point; models and functions run eagerly with the same results."""

import warnings

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
    assert compiled is step and decorated is step
    assert compiled(x).item() == 12.0
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
