"""F.linear_cross_entropy, nn.LinearCrossEntropyLoss and nn.LinearCrossEntropyOptions: the reference path against a
NumPy reference and PyTorch 2.14, the chunked path against the reference path, fallbacks, errors and the module."""

import dataclasses
import warnings

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import agnostic
import agnostic.nn.functional as F
from agnostic.nn import LinearCrossEntropyLoss, LinearCrossEntropyOptions


def chunks_of(size):
    return LinearCrossEntropyOptions(batch_chunk_size=size, chunking_method=None)


def numpy_loss(input, linear_weight, target, bias=None, weight=None, reduction="mean", ignore_index=-100):
    """Index-target cross entropy of ``input @ linear_weight.T + bias``, written out in NumPy."""
    logits = input @ linear_weight.T + (0 if bias is None else bias)
    shifted = logits - logits.max(1, keepdims=True)
    log_probabilities = shifted - numpy.log(numpy.exp(shifted).sum(1, keepdims=True))
    kept = target != ignore_index
    safe = numpy.where(kept, target, 0)
    row_weights = numpy.where(kept, 1.0 if weight is None else weight[safe], 0.0)
    losses = -row_weights * log_probabilities[numpy.arange(len(target)), safe]
    if reduction == "none":
        return losses
    return losses.sum() if reduction == "sum" else losses.sum() / row_weights.sum()


def numpy_probability_loss(input, linear_weight, target, weight=None, reduction="mean"):
    logits = input @ linear_weight.T
    shifted = logits - logits.max(1, keepdims=True)
    log_probabilities = shifted - numpy.log(numpy.exp(shifted).sum(1, keepdims=True))
    terms = -(target * log_probabilities * (1.0 if weight is None else weight)).sum(1)
    return terms.sum() if reduction == "sum" else terms.mean()


def problem(rows=7, features=3, classes=5, seed=0, ignored=(2,)):
    generator = numpy.random.default_rng(seed)
    target = generator.integers(0, classes, rows)
    target[list(ignored)] = -100
    return dict(input=generator.standard_normal((rows, features)), linear_weight=generator.standard_normal(
        (classes, features)), bias=generator.standard_normal(classes), weight=generator.random(classes) + 0.5,
        target=target, probabilities=generator.dirichlet(numpy.ones(classes), rows))


def leaves(arrays, device, dtype=agnostic.float64):
    return [agnostic.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in arrays]


def loss_and_grads(data, device, reduction, options, probabilities=False, with_bias=True, with_weight=True):
    input, linear_weight, bias = leaves((data["input"], data["linear_weight"], data["bias"]), device)
    target = agnostic.tensor(data["probabilities"] if probabilities else data["target"], device=device)
    weight = agnostic.tensor(data["weight"], device=device) if with_weight else None
    loss = F.linear_cross_entropy(input, linear_weight, target, linear_bias=bias if with_bias else None,
                                  weight=weight, reduction=reduction, options=options)
    upstream = agnostic.linspace(-1.0, 2.0, loss.numel(), dtype=agnostic.float64, device=device).reshape(loss.shape)
    loss.backward(upstream)
    grads = [input.grad, linear_weight.grad, bias.grad if with_bias else None]
    return loss.detach().cpu().numpy(), [None if g is None else g.cpu().numpy() for g in grads]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_reference_path_matches_numpy(device, reduction):
    data = problem()
    loss, _ = loss_and_grads(data, device, reduction, None)
    expected = numpy_loss(data["input"], data["linear_weight"], data["target"], data["bias"], data["weight"],
                          reduction)
    numpy.testing.assert_allclose(loss, expected, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 100])
def test_chunked_path_gives_the_reference_values_and_gradients(device, reduction, chunk):
    data = problem()
    reference, reference_grads = loss_and_grads(data, device, reduction, None)
    chunked, chunked_grads = loss_and_grads(data, device, reduction, chunks_of(chunk))
    numpy.testing.assert_allclose(chunked, reference, rtol=1e-12, atol=1e-14)
    for got, expected in zip(chunked_grads, reference_grads):
        numpy.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("with_weight", [False, True])
def test_chunked_probability_targets_give_the_reference_values_and_gradients(device, reduction, with_weight):
    data = problem()
    reference, reference_grads = loss_and_grads(data, device, reduction, None, True, with_weight=with_weight)
    chunked, chunked_grads = loss_and_grads(data, device, reduction, chunks_of(3), True, with_weight=with_weight)
    numpy.testing.assert_allclose(chunked, reference, rtol=1e-12)
    for got, expected in zip(chunked_grads, reference_grads):
        numpy.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-14)
    expected = numpy_probability_loss(data["input"], data["linear_weight"], data["probabilities"],
                                      data["weight"] if with_weight else None, reduction)
    without_bias, _ = loss_and_grads(data, device, reduction, chunks_of(3), True, with_bias=False,
                                     with_weight=with_weight)
    numpy.testing.assert_allclose(without_bias, expected, rtol=1e-12)


@pytest.mark.parametrize("options", [None, "chunked"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_matches_pytorch_values_and_gradients(device, options, reduction):
    torch = pytest.importorskip("torch", minversion="2.14")
    data = problem(seed=3)
    ours, our_grads = loss_and_grads(data, device, reduction, chunks_of(2) if options else None)
    tensors = [torch.tensor(data[k], requires_grad=True) for k in ("input", "linear_weight", "bias")]
    theirs = torch.nn.functional.linear_cross_entropy(
        tensors[0], tensors[1], torch.tensor(data["target"]), linear_bias=tensors[2],
        weight=torch.tensor(data["weight"]), reduction=reduction,
        options=torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None) if options else None)
    theirs.backward(torch.linspace(-1.0, 2.0, theirs.numel(), dtype=torch.float64).reshape(theirs.shape))
    numpy.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-12)
    for got, tensor in zip(our_grads, tensors):
        numpy.testing.assert_allclose(got, tensor.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_unbatched_input_gives_pytorch_shapes_on_both_paths(device):
    data = problem()
    input = agnostic.tensor(data["input"][0], device=device)
    linear_weight = agnostic.tensor(data["linear_weight"], device=device)
    target = agnostic.tensor(int(data["target"][0]), device=device)
    for options in (None, chunks_of(1)):
        loss = F.linear_cross_entropy(input, linear_weight, target, reduction="none", options=options)
        assert loss.shape == ()
        expected = numpy_loss(data["input"][:1], data["linear_weight"], data["target"][:1], reduction="none")[0]
        numpy.testing.assert_allclose(loss.item(), expected, rtol=1e-12)
    probabilities = agnostic.tensor(data["probabilities"][0], device=device)
    loss = F.linear_cross_entropy(input, linear_weight, probabilities, options=chunks_of(1))
    expected = numpy_probability_loss(data["input"][:1], data["linear_weight"], data["probabilities"][:1])
    numpy.testing.assert_allclose(loss.item(), expected, rtol=1e-12)


def test_gradcheck_on_both_paths(device):
    data = problem(rows=4, features=2, classes=3, ignored=(1,))
    input, linear_weight, bias = leaves((data["input"], data["linear_weight"], data["bias"]), device)
    target = agnostic.tensor(data["target"], device=device)
    weight = agnostic.tensor(data["weight"], device=device)
    probabilities = agnostic.tensor(data["probabilities"], device=device)
    for options in (None, chunks_of(3)):
        for reduction in ("mean", "none"):
            assert agnostic.autograd.gradcheck(
                lambda x, w, b: F.linear_cross_entropy(x, w, target, linear_bias=b, weight=weight,
                                                       reduction=reduction, options=options),
                (input, linear_weight, bias))
        assert agnostic.autograd.gradcheck(
            lambda x, w: F.linear_cross_entropy(x, w, probabilities, reduction="sum", options=options),
            (input, linear_weight))


def test_recorded_backward_of_the_chunked_path_gives_the_reference_second_derivatives(device):
    data = problem(rows=4, features=2, classes=3)
    results = []
    for options in (None, chunks_of(2)):
        input, linear_weight = leaves((data["input"], data["linear_weight"]), device)
        loss = F.linear_cross_entropy(input, linear_weight, agnostic.tensor(data["target"], device=device),
                                      options=options)
        (grad,) = agnostic.autograd.grad(loss, input, create_graph=True)
        (second,) = agnostic.autograd.grad((grad ** 2).sum(), linear_weight)
        results.append(second.cpu().numpy())
    numpy.testing.assert_allclose(results[1], results[0], rtol=1e-10)


def test_k_dimensional_loss_reshapes_the_weight_and_matches_numpy(device):
    generator = numpy.random.default_rng(5)
    input = generator.standard_normal((4, 3))
    linear_weight = generator.standard_normal((5, 2, 3))
    target = generator.integers(0, 5, (4, 2))
    loss = F.linear_cross_entropy(agnostic.tensor(input, device=device), agnostic.tensor(linear_weight, device=device),
                                  agnostic.tensor(target, device=device), reduction="none")
    assert loss.shape == (4, 2)
    for position in range(2):
        expected = numpy_loss(input, linear_weight[:, position], target[:, position], reduction="none")
        numpy.testing.assert_allclose(loss.cpu().numpy()[:, position], expected, rtol=1e-12)


@pytest.mark.parametrize("case", ["k_dimensional", "label_smoothing", "probabilities_none", "probability_grad",
                                  "int32_target"])
def test_options_the_chunked_path_cannot_take_warn_and_fall_back(device, case):
    data = problem(ignored=())
    input = agnostic.tensor(data["input"], device=device)
    linear_weight = agnostic.tensor(data["linear_weight"], device=device)
    target = agnostic.tensor(data["target"], device=device)
    keywords = {}
    if case == "k_dimensional":
        linear_weight = linear_weight.reshape(5, 1, 3)
        target = target.reshape(7, 1)
    elif case == "label_smoothing":
        keywords["label_smoothing"] = 0.1
    elif case == "probabilities_none":
        target, keywords["reduction"] = agnostic.tensor(data["probabilities"], device=device), "none"
    elif case == "probability_grad":
        target = agnostic.tensor(data["probabilities"], device=device, requires_grad=True)
    elif case == "int32_target":
        target = target.to(agnostic.int32)
    with pytest.warns(UserWarning, match="``options`` ignored"):
        try:
            fallback = F.linear_cross_entropy(input, linear_weight, target, options=LinearCrossEntropyOptions(),
                                              **keywords)
        except RuntimeError as error:  # the reference path refuses int32 class indices, as PyTorch's does
            assert case == "int32_target", error
            return
    reference = F.linear_cross_entropy(input, linear_weight, target, **keywords)
    numpy.testing.assert_allclose(fallback.detach().cpu().numpy(), reference.detach().cpu().numpy(), rtol=1e-14)


def test_the_chunked_path_takes_supported_calls_without_warning(device):
    data = problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.linear_cross_entropy(agnostic.tensor(data["input"], device=device),
                                      agnostic.tensor(data["linear_weight"], device=device),
                                      agnostic.tensor(data["target"], device=device),
                                      options=LinearCrossEntropyOptions())
    numpy.testing.assert_allclose(loss.item(), numpy_loss(data["input"], data["linear_weight"], data["target"]),
                                  rtol=1e-12)


@pytest.mark.parametrize("call, error, message", [
    (lambda x, w, t: F.linear_cross_entropy(x.reshape(7, 3, 1), w, t), RuntimeError, "dimensionality 1 or 2"),
    (lambda x, w, t: F.linear_cross_entropy(x, w[0], t), RuntimeError, "at least 2"),
    (lambda x, w, t: F.linear_cross_entropy(x, w[:, :2], t), RuntimeError, "in_features"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t, linear_bias=agnostic.zeros(4, dtype=x.dtype)), RuntimeError,
     r"expected linear_bias shape \(5,\), got \(4,\)"),
    (lambda x, w, t: F.linear_cross_entropy(x[0], w.reshape(5, 1, 3), t[0]), RuntimeError, "requires batched input"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, agnostic.softmax(x @ w.T, 1), ignore_index=0), RuntimeError,
     "ignore_index cannot be specified"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t.clamp(0) + 5, options=chunks_of(2)), IndexError,
     "out of bounds"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t[:3], options=chunks_of(2)), ValueError, "batch_size"),
    (lambda x, w, t: F.linear_cross_entropy(
        x, w, t, options=LinearCrossEntropyOptions(acc_dtype=agnostic.float32)), RuntimeError, "acc_dtype"),
    (lambda x, w, t: F.linear_cross_entropy(x, w, t, reduction="average"), ValueError, "reduction"),
])
def test_bad_arguments_raise_pytorch_errors(device, call, error, message):
    data = problem()
    with pytest.raises(error, match=message):
        call(agnostic.tensor(data["input"], device=device), agnostic.tensor(data["linear_weight"], device=device),
             agnostic.tensor(data["target"], device=device))


def test_all_ignored_targets_give_a_nan_mean_and_the_zero_gradients_of_pytorchs_reference_path(device):
    data = problem(ignored=range(7))
    loss, grads = loss_and_grads(data, device, "mean", chunks_of(3), with_weight=False)
    assert numpy.isnan(loss)
    for grad in grads:
        numpy.testing.assert_array_equal(grad, 0.0)


def test_a_second_backward_raises_unless_retain_graph_is_allowed(device):
    data = problem()
    target = agnostic.tensor(data["target"], device=device)
    input, linear_weight = leaves((data["input"], data["linear_weight"]), device)
    loss = F.linear_cross_entropy(input, linear_weight, target, options=chunks_of(2))
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="allow_retain_graph=True"):
        loss.backward()
    options = LinearCrossEntropyOptions(batch_chunk_size=2, chunking_method=None, allow_retain_graph=True)
    input, linear_weight = leaves((data["input"], data["linear_weight"]), device)
    loss = F.linear_cross_entropy(input, linear_weight, target, options=options)
    loss.backward(retain_graph=True)
    once = input.grad.clone()
    loss.backward()
    numpy.testing.assert_allclose(input.grad.cpu().numpy(), 2 * once.cpu().numpy(), rtol=1e-14)


def test_float16_chunks_accumulate_in_float32(device):
    data = problem()
    arguments = [agnostic.tensor(data[k], device=device) for k in ("input", "linear_weight")]
    target = agnostic.tensor(data["target"], device=device)
    half = [a.to(agnostic.float16).requires_grad_() for a in arguments]
    loss = F.linear_cross_entropy(*half, target, options=chunks_of(2))
    loss.backward()
    assert loss.dtype == half[0].grad.dtype == half[1].grad.dtype == agnostic.float16
    exact = [a.to(agnostic.float16).to(agnostic.float64).requires_grad_() for a in arguments]
    reference = F.linear_cross_entropy(*exact, target)
    reference.backward()
    numpy.testing.assert_allclose(loss.item(), reference.item(), rtol=2e-3)
    for got, expected in zip(half, exact):
        numpy.testing.assert_allclose(got.grad.to(agnostic.float64).cpu().numpy(), expected.grad.cpu().numpy(),
                                      rtol=1e-2, atol=2e-3)


@settings(max_examples=15, deadline=None)
@given(rows=st.integers(0, 9), features=st.integers(1, 4), classes=st.integers(1, 6), chunk=st.integers(1, 10),
       reduction=st.sampled_from(["mean", "sum", "none"]), seed=st.integers(0, 2 ** 16))
def test_property_any_chunk_size_gives_the_reference_path(rows, features, classes, chunk, reduction, seed):
    generator = numpy.random.default_rng(seed)
    arrays = (generator.standard_normal((rows, features)), generator.standard_normal((classes, features)))
    labels = generator.integers(-1, classes, rows)
    labels[:1] = 0  # a kept row: agnostic's reference path gives nan gradients when every row is ignored
    target = agnostic.tensor(labels, dtype=agnostic.int64)
    results = []
    for options in (None, chunks_of(chunk)):
        input, linear_weight = leaves(arrays, "cpu")
        loss = F.linear_cross_entropy(input, linear_weight, target, ignore_index=-1, reduction=reduction,
                                      options=options)
        loss.sum().backward()
        results.append([loss.detach().numpy(), input.grad.numpy(), linear_weight.grad.numpy()])
    for got, expected in zip(*results):
        numpy.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-13)


def test_options_validate_their_fields():
    with pytest.raises(ValueError, match="invalid acc_policy"):
        LinearCrossEntropyOptions(acc_policy="fast")
    with pytest.raises(ValueError, match="invalid chunking_method"):
        LinearCrossEntropyOptions(chunking_method="aspect_ratio:0")
    with pytest.raises(ValueError, match="batch_chunk_size must be positive"):
        LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(ValueError, match="acc_dtype must be one of"):
        LinearCrossEntropyOptions(acc_dtype=agnostic.int32)
    with pytest.raises(ValueError, match="give different chunk sizes"):
        LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio")._adjust(64, 8, 32,
                                                                                               agnostic.float32)
    options = LinearCrossEntropyOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.batch_chunk_size = 4


@pytest.mark.parametrize("shape", [(64, 8, 32), (64, 32, 8), (1000, 64, 50000), (3, 5, 7), (0, 4, 4)])
@pytest.mark.parametrize("fields", [{}, {"chunking_method": "aspect_ratio:4"}, {"batch_chunk_size": 16},
                                    {"acc_policy": "accurate"}])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("prob_target", [False, True])
def test_options_resolve_as_pytorch_does(shape, fields, dtype, prob_target):
    torch = pytest.importorskip("torch", minversion="2.14")
    num_batches, in_features, num_classes = shape
    theirs = torch.nn.LinearCrossEntropyOptions(**fields)._adjust(
        num_batches, in_features, num_classes, getattr(torch, dtype), torch.device("cpu"), prob_target)
    ours = LinearCrossEntropyOptions(**fields)._adjust(
        num_batches, in_features, num_classes, getattr(agnostic, dtype), agnostic.device("cpu"), prob_target)
    assert (ours.batch_chunk_size, ours.chunking_method, ours.acc_policy, str(ours.acc_dtype).split(".")[-1]) == \
        (theirs.batch_chunk_size, theirs.chunking_method, theirs.acc_policy, str(theirs.acc_dtype).split(".")[-1])


def test_module_loads_a_pytorch_state_dict_and_gives_its_loss_and_gradients(device):
    torch = pytest.importorskip("torch", minversion="2.14")
    torch.manual_seed(0)
    theirs = torch.nn.LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True,
                                             weight=torch.rand(4, dtype=torch.float64) + 0.5, dtype=torch.float64)
    ours = LinearCrossEntropyLoss(3, 4, out_features=(2,), bias=True, weight=agnostic.ones(4, dtype=agnostic.float64),
                                  dtype=agnostic.float64).to(device)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: agnostic.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert ours.extra_repr() == theirs.extra_repr()
    assert ours.linear.weight.shape == (8, 3) and ours.linear.bias.shape == (8,)
    generator = numpy.random.default_rng(1)
    input, target = generator.standard_normal((5, 3)), generator.integers(0, 4, (5, 2))
    x = agnostic.tensor(input, device=device, requires_grad=True)
    loss = ours(x, agnostic.tensor(target, device=device))
    loss.backward()
    tx = torch.tensor(input, requires_grad=True)
    expected = theirs(tx, torch.tensor(target))
    expected.backward()
    numpy.testing.assert_allclose(loss.item(), expected.item(), rtol=1e-12)
    numpy.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-10)
    numpy.testing.assert_allclose(ours.linear.weight.grad.cpu().numpy(), theirs.linear.weight.grad.numpy(),
                                  rtol=1e-10)


def test_module_with_options_takes_the_chunked_path_and_matches_numpy(device):
    module = LinearCrossEntropyLoss(3, 5, bias=True, dtype=agnostic.float64, options=chunks_of(2)).to(device)
    data = problem()
    loss = module(agnostic.tensor(data["input"], device=device), agnostic.tensor(data["target"], device=device))
    assert "options=LinearCrossEntropyOptions(allow_retain_graph=False, batch_chunk_size=2" in repr(module)
    expected = numpy_loss(data["input"], module.linear.weight.detach().cpu().numpy(), data["target"],
                          module.linear.bias.detach().cpu().numpy())
    numpy.testing.assert_allclose(loss.item(), expected, rtol=1e-12)
    assert loss.grad_fn is not None


def test_module_checks_its_arguments():
    with pytest.raises(RuntimeError, match=r"expected weight shape to be \(3,\)"):
        LinearCrossEntropyLoss(2, 3, weight=agnostic.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing to be in range"):
        LinearCrossEntropyLoss(2, 3, label_smoothing=1.5)
