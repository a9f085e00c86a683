"""Losses (functional and modules) against NumPy formulas, with gradcheck and PyTorch's error messages."""

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(99)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False, dtype=None):
    tensor = agnostic.tensor(numpy.asarray(array), device=device, dtype=dtype)
    return tensor.requires_grad_() if requires_grad else tensor


def reduce(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - numpy.log(numpy.exp(shifted).sum(axis, keepdims=True))


def cross_entropy_reference(x, target, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """Class-index cross entropy for (N, C, ...) logits, written from PyTorch's documented formula."""
    logp = log_softmax(x, 1)
    classes = x.shape[1]
    w = numpy.ones(classes) if weight is None else weight
    kept = target != ignore_index
    safe = numpy.where(kept, target, 0)
    picked = numpy.take_along_axis(logp, safe[:, None], 1)[:, 0]
    wn = w[safe] * kept
    nll = -picked * wn
    moved = numpy.moveaxis(logp, 1, -1)
    smooth = -(moved * w).sum(-1) * kept
    if reduction == "mean":
        nll, smooth = nll.sum() / wn.sum(), smooth.sum() / wn.sum()
    elif reduction == "sum":
        nll, smooth = nll.sum(), smooth.sum()
    return (1 - smoothing) * nll + smoothing / classes * smooth


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_and_l1(device, reduction):
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    assert numpy.allclose(host(F.mse_loss(make(x, device), make(y, device), reduction=reduction)),
                          reduce((x - y) ** 2, reduction))
    assert numpy.allclose(host(F.l1_loss(make(x, device), make(y, device), reduction=reduction)),
                          reduce(numpy.abs(x - y), reduction))
    assert numpy.allclose(host(nn.MSELoss(reduction=reduction)(make(x, device), make(y, device))),
                          reduce((x - y) ** 2, reduction))
    assert numpy.allclose(host(nn.L1Loss(reduction=reduction)(make(x, device), make(y, device))),
                          reduce(numpy.abs(x - y), reduction))
    for loss in (F.mse_loss, F.l1_loss):
        assert gradcheck(lambda a, b: loss(a, b, reduction=reduction), (make(x, device, True), make(y, device, True)))


def test_regression_losses_warn_on_broadcast_and_reject_bad_reduction(device):
    with pytest.warns(UserWarning, match=r"Using a target size \(agnostic.Size\(\[3, 1\]\)\) that is different to "
                                         r"the input size \(agnostic.Size\(\[3\]\)\)"):
        out = F.mse_loss(make(numpy.zeros(3), device), make(numpy.ones((3, 1)), device))
    assert out.item() == 1.0
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.l1_loss(make([1.0], device), make([1.0], device), reduction="foo")
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead."):
        legacy = nn.MSELoss(size_average=False)
    assert legacy.reduction == "sum"


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(device, weighted, reduction, smoothing):
    x = RNG.standard_normal((5, 4, 2))
    target = numpy.array([[0, 3], [1, -100], [2, 2], [3, 0], [-100, 1]])
    weight = RNG.uniform(0.5, 2.0, 4) if weighted else None
    got = F.cross_entropy(make(x, device), make(target, device), None if weight is None else make(weight, device),
                          reduction=reduction, label_smoothing=smoothing)
    expected = cross_entropy_reference(x, target, weight, -100, reduction, smoothing)
    assert got.shape == numpy.shape(expected) and numpy.allclose(host(got), expected)
    module = nn.CrossEntropyLoss(None if weight is None else make(weight, device), reduction=reduction,
                                 label_smoothing=smoothing)
    assert numpy.allclose(host(module(make(x, device), make(target, device))), expected)
    assert gradcheck(lambda a: F.cross_entropy(a, make(target, device), None if weight is None else
                                               make(weight, device), reduction=reduction, label_smoothing=smoothing),
                     (make(x, device, True),))


def test_cross_entropy_custom_ignore_index_and_unbatched(device):
    x = RNG.standard_normal((4, 3))
    target = numpy.array([0, 2, 1, 2])
    got = F.cross_entropy(make(x, device), make(target, device), ignore_index=2)
    assert numpy.allclose(host(got), cross_entropy_reference(x, target, ignore_index=2))
    single = F.cross_entropy(make(x[0], device), make(numpy.array(1), device))
    assert single.shape == () and numpy.isclose(single.item(), -log_softmax(x[0], 0)[1])
    all_ignored = F.cross_entropy(make(x, device), make(numpy.full(4, -100), device))
    assert numpy.isnan(all_ignored.item())


@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("rows, classes", [(6, 5), (300, 77), (20000, 3)])
@pytest.mark.parametrize("some_ignored", [True, False])
def test_cross_entropy_fast_path_matches_the_composite_one(device, dtype, reduction, rows, classes, some_ignored):
    """2-D logits with int64 targets take a fused path; with class weights of one, the general path computes the
    same thing from log_softmax and nll_loss: losses, gradients (recorded or not) and second-order gradients must
    agree. (300 rows of 77 classes: several rows per warp and several lanes per row in the CUDA kernels; 20,000
    rows: more than the one-block kernel takes.)"""
    x = RNG.standard_normal((rows, classes)) * 3
    labels = RNG.integers(0, classes, rows)
    if some_ignored:
        labels[::4] = -100
    target = make(labels, device)
    v = make(RNG.standard_normal((rows, classes)), device, dtype=dtype)
    results = []
    for weight in (None, make(numpy.ones(classes), device, dtype=dtype)):
        logits = make(x, device, True, dtype)
        loss = F.cross_entropy(logits, target, weight, reduction=reduction)
        first, = agnostic.autograd.grad(loss, logits, create_graph=True)
        second, = agnostic.autograd.grad((first * v).sum(), logits)
        F.cross_entropy(logits, target, weight, reduction=reduction).backward()  # the unrecorded gradient
        results.append([host(loss), host(first), host(second), host(logits.grad)])
    tolerance = 1e-5 if dtype is agnostic.float32 else 1e-12
    for fast, composite in zip(*results):
        assert numpy.allclose(fast, composite, rtol=tolerance, atol=tolerance)
    expected = cross_entropy_reference(x, host(target), reduction=reduction)
    assert numpy.allclose(results[0][0], expected, rtol=tolerance)
    column_major = make(x.T.copy(), device, dtype=dtype).t()  # a transposed view: not row-major
    assert numpy.allclose(host(F.cross_entropy(column_major, target, reduction=reduction)), expected, rtol=tolerance)
    labels[1] = -3
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.cross_entropy(make(x, device, dtype=dtype), make(labels, device))
    labels[1] = classes
    with pytest.raises(IndexError, match=f"Target {classes} is out of bounds."):
        F.cross_entropy(make(x, device, dtype=dtype), make(labels, device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_probabilities(device, reduction):
    x = RNG.standard_normal((3, 4))
    p = RNG.dirichlet(numpy.ones(4), 3)
    weight = RNG.uniform(0.5, 2, 4)
    for w, smoothing in ((None, 0.0), (weight, 0.1)):
        q = p * (1 - smoothing) + smoothing / 4
        per_sample = -(log_softmax(x, 1) * q * (1 if w is None else w)).sum(1)
        expected = per_sample.sum() / 3 if reduction == "mean" else reduce(per_sample, reduction)
        got = F.cross_entropy(make(x, device), make(p, device), None if w is None else make(w, device),
                              reduction=reduction, label_smoothing=smoothing)
        assert numpy.allclose(host(got), expected)
    assert gradcheck(lambda a, b: F.cross_entropy(a, b, reduction=reduction, label_smoothing=0.1),
                     (make(x, device, True), make(p, device, True)))


def test_cross_entropy_errors(device):
    x = make(numpy.zeros((3, 4)), device)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Float"):
        F.cross_entropy(x, make([1.0, 2.0, 3.0], device, dtype=agnostic.float32))
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, make(numpy.zeros((3, 4)), device), ignore_index=1)
    with pytest.raises(RuntimeError, match="Expected floating point type for target with class probabilities, got "
                                           "Long"):
        F.cross_entropy(x, make(numpy.zeros((3, 4), dtype=numpy.int64), device))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, make([1, 2, 3], device), label_smoothing=1.5)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)."):
        F.cross_entropy(x, make([1, 2], device))
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        F.cross_entropy(x, make([1, 2, 4], device))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, make([1, 2, -3], device))
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes or no classes "
                                           r"but got weight tensor of shape: \[3\]"):
        F.nll_loss(x, make([1, 2, 3], device), weight=make(numpy.ones(3), device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(device, reduction):
    logp = log_softmax(RNG.standard_normal((4, 3)), 1)
    target = numpy.array([2, 0, 1, 1])
    weight = numpy.array([0.5, 1.0, 2.0])
    losses = -logp[numpy.arange(4), target] * weight[target]
    expected = losses.sum() / weight[target].sum() if reduction == "mean" else reduce(losses, reduction)
    got = nn.NLLLoss(make(weight, device), reduction=reduction)(make(logp, device), make(target, device))
    assert numpy.allclose(host(got), expected)
    assert list(nn.NLLLoss(make(weight, device)).state_dict()) == ["weight"]
    assert gradcheck(lambda a: F.nll_loss(a, make(target, device), make(weight, device), reduction=reduction),
                     (make(logp, device, True),))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(device, reduction):
    p, y, w = RNG.uniform(0.05, 0.95, (3, 4)), RNG.uniform(0, 1, (3, 4)), RNG.uniform(0.5, 2, 4)
    losses = -w * (y * numpy.log(p) + (1 - y) * numpy.log(1 - p))
    got = F.binary_cross_entropy(make(p, device), make(y, device), make(w, device), reduction=reduction)
    assert numpy.allclose(host(got), reduce(losses, reduction))
    assert numpy.allclose(host(nn.BCELoss(make(w, device), reduction=reduction)(make(p, device), make(y, device))),
                          reduce(losses, reduction))
    assert gradcheck(lambda a, b: F.binary_cross_entropy(a, b, make(w, device), reduction=reduction),
                     (make(p, device, True), make(y, device, True)))


def test_binary_cross_entropy_edges_and_errors(device):
    x = make([0.0, 1.0, 0.5], device, True)
    loss = F.binary_cross_entropy(x, make([1.0, 0.0, 1.0], device), reduction="none")
    assert numpy.allclose(host(loss), [100.0, 100.0, numpy.log(2)])  # logs clamped at -100
    loss.sum().backward()
    assert numpy.isfinite(host(x.grad)).all() and host(x.grad)[2] == -2.0
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(make([2.0], device), make([0.0], device))
    with pytest.raises(ValueError, match="Using a target size .* that is different to the input size .* is "
                                         "deprecated. Please ensure they have the same size."):
        F.binary_cross_entropy(make([0.5], device), make([[0.0]], device))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(device, reduction):
    x, y = RNG.standard_normal((3, 4)) * 3, RNG.uniform(0, 1, (3, 4))
    w, pos = RNG.uniform(0.5, 2, (3, 1)), RNG.uniform(0.5, 3, 4)
    sig = 1 / (1 + numpy.exp(-x))
    losses = -w * (pos * y * numpy.log(sig) + (1 - y) * numpy.log(1 - sig))
    got = F.binary_cross_entropy_with_logits(make(x, device), make(y, device), make(w, device), reduction=reduction,
                                             pos_weight=make(pos, device))
    assert numpy.allclose(host(got), reduce(losses, reduction))
    module = nn.BCEWithLogitsLoss(make(w, device), reduction=reduction, pos_weight=make(pos, device))
    assert list(module.state_dict()) == ["weight", "pos_weight"]
    assert numpy.allclose(host(module(make(x, device), make(y, device))), reduce(losses, reduction))
    assert gradcheck(lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=c),
                     (make(x, device, True), make(y, device, True), make(pos, device, True)))


def test_bce_with_logits_is_stable_and_exact_at_zero(device):
    x = make([-1000.0, 0.0, 1000.0], device, True)
    loss = F.binary_cross_entropy_with_logits(x, make([1.0, 1.0, 0.0], device), reduction="none")
    assert numpy.allclose(host(loss), [1000.0, numpy.log(2), 1000.0])
    loss.sum().backward()
    assert host(x.grad).tolist() == [-1.0, -0.5, 1.0]  # sigmoid(x) - y, also at x = 0
    with pytest.raises(ValueError, match=r"Target size \(agnostic.Size\(\[2\]\)\) must be the same as input size "
                                         r"\(agnostic.Size\(\[3\]\)\)"):
        F.binary_cross_entropy_with_logits(x, make([1.0, 0.0], device))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weighted", [False, True])
def test_a_mean_loss_of_only_ignored_targets_is_nan_with_zero_gradients(device, dtype, weighted):
    """Every target ignored: 'mean' divides 0 by a total weight of 0 (NaN, as PyTorch), but the gradient is 0,
    as PyTorch's (no target contributes), on the fused and the composed paths, and for nll_loss."""
    target = agnostic.tensor([-100, -100, -100], device=device)
    weight = agnostic.ones(4, dtype=getattr(agnostic, dtype), device=device) if weighted else None
    for loss_function in (F.cross_entropy, F.nll_loss):
        logits = agnostic.ones(3, 4, dtype=getattr(agnostic, dtype), device=device, requires_grad=True)
        loss = loss_function(logits, target, weight=weight)
        loss.backward()
        assert loss.dtype == logits.dtype and bool(loss.isnan())
        assert float(logits.grad.abs().sum()) == 0.0
        with_one_kept = agnostic.ones(3, 4, dtype=getattr(agnostic, dtype), device=device, requires_grad=True)
        loss_function(with_one_kept, agnostic.tensor([1, -100, -100], device=device), weight=weight).backward()
        assert float(with_one_kept.grad[1:].abs().sum()) == 0.0 and float(with_one_kept.grad[0].abs().sum()) > 0
