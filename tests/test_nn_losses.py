"""The regression, ranking, embedding, probabilistic and CTC losses (functional forms and modules), with the
similarity and distance functions: values against NumPy formulas and PyTorch, input gradients against PyTorch,
gradcheck, reductions (legacy arguments too) and PyTorch's errors."""

import itertools
import math

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(11)


def host(tensor):
    return tensor.detach().cpu().numpy()


def reduce(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def sigmoid(x):
    return 1 / (1 + numpy.exp(-x))


def signs(shape):
    return numpy.where(RNG.random(shape) > 0.5, 1.0, -1.0)


def cosine(a, b, axis):
    return (a * b).sum(axis) / numpy.sqrt(((a * a).sum(axis) + 1e-12) * ((b * b).sum(axis) + 1e-12))


# name, argument arrays (a tuple of which the first `differentiable` are inputs), keyword arguments,
# NumPy reference of the unreduced loss, number of leading arguments that get gradients
def _cases():
    x, y = RNG.standard_normal((4, 5)) * 2, RNG.standard_normal((4, 5)) * 2
    probabilities = RNG.dirichlet(numpy.ones(5), 4)
    log_q = numpy.log(RNG.dirichlet(numpy.ones(5), 4))
    positive = RNG.random((4, 5)) + 0.1
    counts = RNG.integers(0, 6, (4, 5)).astype(float)
    v1, v2, t1 = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 3)), signs(6)
    a, b = RNG.standard_normal(6), RNG.standard_normal(6)
    labels = (RNG.random((4, 5)) > 0.5).astype(float)
    scores, classes = RNG.standard_normal((5, 4)), RNG.integers(0, 4, 5)
    class_weight = RNG.random(4) + 0.5

    def smooth_l1(beta):
        def loss(x, y):
            d = numpy.abs(x - y)
            return numpy.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
        return loss

    def huber(delta):
        def loss(x, y):
            d = numpy.abs(x - y)
            return numpy.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
        return loss

    def multi_margin(p, margin, weight):
        def loss(x, target):
            picked = x[numpy.arange(len(target)), target][:, None]
            z = numpy.maximum(margin - picked + x, 0) ** p
            z[numpy.arange(len(target)), target] = 0
            if weight is not None:
                z = z * weight[target][:, None]
            return z.sum(1) / x.shape[1]
        return loss

    def stirling(t):
        safe = numpy.maximum(t, 1)
        return numpy.where(t > 1, safe * numpy.log(safe) - safe + 0.5 * numpy.log(2 * math.pi * safe), 0)

    return [
        ("smooth_l1_loss", (x, y), {}, smooth_l1(1.0), 2),
        ("smooth_l1_loss", (x, y), {"beta": 0.5}, smooth_l1(0.5), 2),
        ("smooth_l1_loss", (x, y), {"beta": 0.0}, lambda x, y: numpy.abs(x - y), 2),
        ("huber_loss", (x, y), {}, huber(1.0), 2),
        ("huber_loss", (x, y), {"delta": 2.5}, huber(2.5), 2),
        ("kl_div", (log_q, probabilities), {}, lambda q, p: p * (numpy.log(p) - q), 2),
        ("kl_div", (log_q, numpy.log(probabilities)), {"log_target": True},
         lambda q, lp: numpy.exp(lp) * (lp - q), 2),
        ("poisson_nll_loss", (x, counts), {}, lambda x, t: numpy.exp(x) - t * x, 1),
        ("poisson_nll_loss", (positive, counts), {"log_input": False, "full": True},
         lambda x, t: x - t * numpy.log(x + 1e-8) + stirling(t), 1),
        ("gaussian_nll_loss", (x, y, positive), {}, lambda x, y, v: 0.5 * (numpy.log(v) + (x - y) ** 2 / v), 3),
        ("gaussian_nll_loss", (x, y, positive), {"full": True},
         lambda x, y, v: 0.5 * (numpy.log(v) + (x - y) ** 2 / v) + 0.5 * math.log(2 * math.pi), 3),
        ("soft_margin_loss", (x, signs((4, 5))), {}, lambda x, t: numpy.log1p(numpy.exp(-t * x)), 1),
        ("hinge_embedding_loss", (x, signs((4, 5))), {"margin": 1.5},
         lambda x, t: numpy.where(t == 1, x, numpy.maximum(0, 1.5 - x)), 1),
        ("margin_ranking_loss", (a, b, signs(6)), {"margin": 0.3},
         lambda a, b, t: numpy.maximum(0, -t * (a - b) + 0.3), 2),
        ("cosine_embedding_loss", (v1, v2, t1), {"margin": 0.2},
         lambda a, b, t: numpy.where(t == 1, 1 - cosine(a, b, 1), numpy.maximum(0, cosine(a, b, 1) - 0.2)), 2),
        ("multilabel_soft_margin_loss", (x, labels), {},
         lambda x, t: -(t * numpy.log(sigmoid(x)) + (1 - t) * numpy.log(sigmoid(-x))).mean(1), 1),
        ("multi_margin_loss", (scores, classes), {}, multi_margin(1, 1.0, None), 1),
        ("multi_margin_loss", (scores, classes), {"p": 2, "margin": 0.7, "weight": class_weight},
         multi_margin(2, 0.7, class_weight), 1),
        ("triplet_margin_loss", (v1, v2, RNG.standard_normal((6, 3))), {"margin": 2.0},
         lambda a, p, n: numpy.maximum(0, 2.0 + numpy.linalg.norm(a - p + 1e-6, axis=1)
                                       - numpy.linalg.norm(a - n + 1e-6, axis=1)), 3),
        ("triplet_margin_loss", (v1, v2, RNG.standard_normal((6, 3))), {"p": 1, "swap": True},
         lambda a, p, n: numpy.maximum(0, 1.0 + numpy.abs(a - p + 1e-6).sum(1)
                                       - numpy.minimum(numpy.abs(a - n + 1e-6).sum(1),
                                                       numpy.abs(p - n + 1e-6).sum(1))), 3),
    ]


CASES = _cases()
IDS = [f"{name}-{index}" for index, (name, *_) in enumerate(CASES)]


def _tensors(module, arrays, device, differentiable, dtype):
    made = []
    for index, array in enumerate(arrays):
        array = numpy.asarray(array)
        if array.dtype.kind == "f":
            tensor = module.tensor(array.astype(dtype), device=device) if module is agnostic else \
                module.tensor(array.astype(dtype))
            if index < differentiable:
                tensor.requires_grad_()
        else:
            tensor = module.tensor(array, device=device) if module is agnostic else module.tensor(array)
        made.append(tensor)
    return made


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("name, arrays, kwargs, reference, differentiable", CASES, ids=IDS)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_values_match_numpy_reference(device, name, arrays, kwargs, reference, differentiable, reduction):
    tensors = _tensors(agnostic, arrays, device, 0, "float64")
    kwargs = {key: (agnostic.tensor(value, device=device) if isinstance(value, numpy.ndarray) else value)
              for key, value in kwargs.items()}
    result = getattr(F, name)(*tensors, reduction=reduction, **kwargs)
    assert numpy.allclose(host(result), reduce(reference(*arrays), reduction), rtol=1e-10, atol=1e-12)


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
@pytest.mark.parametrize("name, arrays, kwargs, reference, differentiable", CASES, ids=IDS)
@pytest.mark.parametrize("reduction, dtype", [("none", "float32"), ("mean", "float64"), ("sum", "float32")])
def test_values_and_input_gradients_match_pytorch(device, name, arrays, kwargs, reference, differentiable,
                                                   reduction, dtype):
    torch = pytest.importorskip("torch")
    ours = _tensors(agnostic, arrays, device, differentiable, dtype)
    theirs = _tensors(torch, arrays, device, differentiable, dtype)
    kwargs_ours = {key: (agnostic.tensor(value.astype(dtype), device=device) if isinstance(value, numpy.ndarray)
                         else value) for key, value in kwargs.items()}
    kwargs_theirs = {key: (torch.tensor(value.astype(dtype)) if isinstance(value, numpy.ndarray) else value)
                     for key, value in kwargs.items()}
    result = getattr(F, name)(*ours, reduction=reduction, **kwargs_ours)
    expected = getattr(torch.nn.functional, name)(*theirs, reduction=reduction, **kwargs_theirs)
    tolerance = 2e-5 if dtype == "float32" else 1e-10
    assert result.dtype == getattr(agnostic, dtype) and tuple(result.shape) == tuple(expected.shape)
    assert numpy.allclose(host(result), expected.detach().numpy(), rtol=tolerance, atol=tolerance)
    weights = numpy.linspace(0.5, 1.5, max(result.numel(), 1)).reshape(tuple(result.shape)).astype(dtype)
    (result * agnostic.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, reference_tensor in zip(ours[:differentiable], theirs[:differentiable]):
        assert numpy.allclose(host(mine.grad), reference_tensor.grad.numpy(), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("name, arrays, kwargs, reference, differentiable",
                         [CASES[i] for i in (0, 4, 5, 9, 14, 16, 18)], ids=[IDS[i] for i in (0, 4, 5, 9, 14, 16, 18)])
def test_gradcheck(device, name, arrays, kwargs, reference, differentiable):
    tensors = _tensors(agnostic, arrays, device, differentiable, "float64")
    kwargs = {key: (agnostic.tensor(value, device=device) if isinstance(value, numpy.ndarray) else value)
              for key, value in kwargs.items()}
    others = tensors[differentiable:]
    assert gradcheck(lambda *inputs: getattr(F, name)(*inputs, *others, reduction="sum", **kwargs),
                     tuple(tensors[:differentiable]))


def test_kl_div_reductions_and_warning(device):
    log_q = agnostic.tensor(numpy.log([[0.25, 0.75], [0.5, 0.5], [0.9, 0.1]]), device=device)
    p = agnostic.tensor([[0.5, 0.5], [0.0, 1.0], [0.3, 0.7]], device=device, dtype=agnostic.float64)
    pointwise = numpy.where(host(p) > 0, host(p) * (numpy.log(numpy.where(host(p) > 0, host(p), 1)) - host(log_q)), 0)
    assert numpy.allclose(host(F.kl_div(log_q, p, reduction="batchmean")), pointwise.sum() / 3)
    assert numpy.allclose(host(nn.KLDivLoss(reduction="sum")(log_q, p)), pointwise.sum())
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        assert numpy.allclose(host(F.kl_div(log_q, p)), pointwise.mean())
    target = p.clone().requires_grad_()
    F.kl_div(log_q, target, reduction="sum").backward()
    assert numpy.isfinite(host(target.grad)).all()


def test_legacy_arguments_and_bad_reduction(device):
    x, y = agnostic.tensor([1.0, -2.0], device=device), agnostic.tensor([0.0, 0.5], device=device)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert numpy.isclose(host(F.smooth_l1_loss(x, y, size_average=False)), 0.5 + 2.0)
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert nn.SoftMarginLoss(reduce=False)(x, y).shape == (2,)
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        assert nn.KLDivLoss(size_average=False).reduction == "sum"
    for call in (lambda: F.huber_loss(x, y, reduction="avg"), lambda: F.margin_ranking_loss(x, y, y, reduction="avg"),
                 lambda: F.ctc_loss(x.reshape(2, 1, 1), agnostic.tensor([[0]]), [2], [1], reduction="avg")):
        with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
            call()


def test_errors_match_pytorch(device):
    x = agnostic.ones(3, 4, device=device)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta."):
        F.huber_loss(x, x, delta=0.0)
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -x)
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, agnostic.ones(2, device=device))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected"):
        F.cosine_embedding_loss(x, x, x)
    with pytest.raises(RuntimeError, match="All input tensors should have same dimension"):
        F.margin_ranking_loss(x, x, agnostic.ones(3, device=device))
    with pytest.raises(ValueError, match="margin must be greater than 0, got 0"):
        F.triplet_margin_loss(x, x, x, margin=0)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, agnostic.tensor([0, 1, 2], device=device), p=3)
    with pytest.raises(RuntimeError, match="target out of range"):
        F.multi_margin_loss(x, agnostic.tensor([0, 1, 4], device=device))
    with pytest.raises(RuntimeError, match=r"Expected target size \[3\], but got \[2\]"):
        F.multi_margin_loss(x, agnostic.tensor([0, 1], device=device))
    with pytest.raises(ValueError, match="Weights and input must have the same size."):
        F.mse_loss(x, x, weight=agnostic.ones(4, device=device))
    with pytest.raises(RuntimeError, match="expected common dtype to be floating point"):
        F.cosine_similarity(agnostic.tensor([[1, 2]], device=device), agnostic.tensor([[1, 2]], device=device))


def test_gaussian_nll_variance_shapes_and_clamp(device):
    torch = pytest.importorskip("torch")
    x, y = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    for var in (RNG.random(3), RNG.random((3, 1)), 0.5, numpy.array([[1e-9] * 4] * 3)):
        mine = agnostic.tensor(var, device=device, requires_grad=True) if isinstance(var, numpy.ndarray) else var
        theirs = torch.tensor(var, requires_grad=True) if isinstance(var, numpy.ndarray) else var
        result = F.gaussian_nll_loss(agnostic.tensor(x, device=device), agnostic.tensor(y, device=device), mine)
        expected = torch.nn.functional.gaussian_nll_loss(torch.tensor(x), torch.tensor(y), theirs)
        assert numpy.allclose(host(result), expected.item())
        if isinstance(var, numpy.ndarray):
            result.backward()
            expected.backward()
            assert numpy.allclose(host(mine.grad), theirs.grad.numpy())


def test_weighted_regression_losses_divide_by_the_summed_weights(device):
    x, y, w = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4)), RNG.random((3, 4))
    tensors = [agnostic.tensor(a, device=device) for a in (x, y, w)]
    assert numpy.isclose(host(F.mse_loss(*tensors[:2], weight=tensors[2])), ((x - y) ** 2 * w).sum() / w.sum())
    assert numpy.isclose(host(F.l1_loss(*tensors[:2], weight=tensors[2])), (numpy.abs(x - y) * w).sum() / w.sum())
    d = numpy.abs(x - y)
    huber = numpy.where(d < 1, 0.5 * d * d, d - 0.5)
    assert numpy.isclose(host(F.huber_loss(*tensors[:2], weight=tensors[2])), (huber * w).sum() / w.sum())
    assert numpy.allclose(host(F.huber_loss(*tensors[:2], reduction="none", weight=tensors[2])), huber * w)


def test_similarity_and_distances(device):
    torch = pytest.importorskip("torch")
    a, b = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 5))
    b[1] = 0.0
    norms = numpy.maximum(numpy.linalg.norm(a, axis=1), 1e-8) * numpy.maximum(numpy.linalg.norm(b, axis=1), 1e-8)
    ours = [agnostic.tensor(v, device=device, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    result = F.cosine_similarity(*ours)
    expected = torch.nn.functional.cosine_similarity(*theirs)
    assert numpy.allclose(host(result), (a * b).sum(1) / norms)
    assert numpy.allclose(host(nn.CosineSimilarity(dim=0)(*ours)), torch.nn.CosineSimilarity(dim=0)(*theirs).detach())
    assert numpy.allclose(host(F.cosine_similarity(ours[0], ours[1][:1])),
                          torch.nn.functional.cosine_similarity(theirs[0], theirs[1][:1]).detach())
    result.sum().backward()
    expected.sum().backward()
    for mine, reference in zip(ours, theirs):
        assert numpy.allclose(host(mine.grad), reference.grad.numpy())
    for p, keepdim in itertools.product((1.0, 2.0, 3.0, math.inf), (False, True)):
        distance = F.pairwise_distance(*ours, p=p, keepdim=keepdim)
        reference = torch.nn.functional.pairwise_distance(*theirs, p=p, keepdim=keepdim)
        assert tuple(distance.shape) == tuple(reference.shape)
        assert numpy.allclose(host(distance), reference.detach().numpy())
    assert numpy.allclose(host(nn.PairwiseDistance()(*ours)), numpy.linalg.norm(a - b + 1e-6, axis=1))
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        normalized = F.normalize(ours[1], p=p, dim=dim)
        reference = torch.nn.functional.normalize(theirs[1], p=p, dim=dim)
        assert numpy.allclose(host(normalized), reference.detach().numpy())
    assert numpy.allclose(host(F.normalize(ours[0])), a / numpy.linalg.norm(a, axis=1, keepdims=True))
    assert gradcheck(lambda u, v: F.cosine_similarity(u, v), (ours[0], agnostic.tensor(a[::-1].copy(), device=device,
                                                                                      requires_grad=True)))
    assert gradcheck(lambda u: F.normalize(u, dim=1), (ours[0],))


def test_binary_cross_entropy_with_logits_pos_weight_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x, t = RNG.standard_normal((4, 3)) * 3, (RNG.random((4, 3)) > 0.5).astype(float)
    pos_weight, weight = RNG.random(3) * 3, RNG.random((4, 3))
    for reduction in ("none", "mean", "sum"):
        ours = agnostic.tensor(x, device=device, requires_grad=True)
        theirs = torch.tensor(x, requires_grad=True)
        result = F.binary_cross_entropy_with_logits(ours, agnostic.tensor(t, device=device),
                                                    agnostic.tensor(weight, device=device), reduction=reduction,
                                                    pos_weight=agnostic.tensor(pos_weight, device=device))
        expected = torch.nn.functional.binary_cross_entropy_with_logits(
            theirs, torch.tensor(t), torch.tensor(weight), reduction=reduction, pos_weight=torch.tensor(pos_weight))
        reference = -weight * (pos_weight * t * numpy.log(sigmoid(x)) + (1 - t) * numpy.log(sigmoid(-x)))
        assert numpy.allclose(host(result), reduce(reference, reduction))
        result.sum().backward()
        expected.sum().backward()
        assert numpy.allclose(host(ours.grad), theirs.grad.numpy())


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_probability_targets_and_smoothing_match_pytorch(device, smoothing):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4, 2))
    probabilities = numpy.moveaxis(RNG.dirichlet(numpy.ones(4), (3, 2)), -1, 1)
    indices = RNG.integers(0, 4, (3, 2))
    weight = RNG.random(4) + 0.5
    for target, kwargs in ((probabilities, {}), (indices, {}), (indices, {"weight": weight}),
                           (probabilities, {"weight": weight})):
        for reduction in ("none", "mean", "sum"):
            ours = agnostic.tensor(x, device=device, requires_grad=True)
            theirs = torch.tensor(x, requires_grad=True)
            result = F.cross_entropy(ours, agnostic.tensor(target, device=device), reduction=reduction,
                                     label_smoothing=smoothing,
                                     **{k: agnostic.tensor(v, device=device) for k, v in kwargs.items()})
            expected = torch.nn.functional.cross_entropy(theirs, torch.tensor(target), reduction=reduction,
                                                         label_smoothing=smoothing,
                                                         **{k: torch.tensor(v) for k, v in kwargs.items()})
            assert numpy.allclose(host(result), expected.detach().numpy())
            result.sum().backward()
            expected.sum().backward()
            assert numpy.allclose(host(ours.grad), theirs.grad.numpy())


def test_loss_modules_hold_their_options(device):
    torch = pytest.importorskip("torch")
    x, y = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    t = signs(4)
    pairs = [
        (nn.SmoothL1Loss(beta=0.5), torch.nn.SmoothL1Loss(beta=0.5), (x, y)),
        (nn.HuberLoss(reduction="sum", delta=0.5), torch.nn.HuberLoss(reduction="sum", delta=0.5), (x, y)),
        (nn.PoissonNLLLoss(full=True), torch.nn.PoissonNLLLoss(full=True), (x, numpy.abs(y) * 3)),
        (nn.GaussianNLLLoss(full=True), torch.nn.GaussianNLLLoss(full=True), (x, y, numpy.abs(y))),
        (nn.CosineEmbeddingLoss(0.1), torch.nn.CosineEmbeddingLoss(0.1), (x, y, t)),
        (nn.MarginRankingLoss(0.2), torch.nn.MarginRankingLoss(0.2), (x[:, 0], y[:, 0], t)),
        (nn.HingeEmbeddingLoss(0.5), torch.nn.HingeEmbeddingLoss(0.5), (x, numpy.sign(y))),
        (nn.SoftMarginLoss(), torch.nn.SoftMarginLoss(), (x, numpy.sign(y))),
        (nn.MultiLabelSoftMarginLoss(), torch.nn.MultiLabelSoftMarginLoss(), (x, (y > 0).astype(float))),
        (nn.MultiMarginLoss(p=2, margin=0.5), torch.nn.MultiMarginLoss(p=2, margin=0.5),
         (x, numpy.array([0, 1, 2, 1]))),
        (nn.TripletMarginLoss(swap=True), torch.nn.TripletMarginLoss(swap=True), (x, y, x[::-1].copy())),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), torch.nn.KLDivLoss(reduction="batchmean",
                                                                                  log_target=True), (x, y)),
    ]
    for ours, theirs, arrays in pairs:
        result = ours(*(agnostic.tensor(a, device=device) for a in arrays))
        expected = theirs(*(torch.tensor(a) for a in arrays))
        assert numpy.allclose(host(result), expected.numpy()), type(ours).__name__
        assert repr(ours) == repr(theirs)


def ctc_brute_force(log_probs, target, blank=0):
    """``-log`` of the summed probability of every path of length T that collapses to ``target``."""
    steps, classes = log_probs.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        collapsed = [label for index, label in enumerate(path)
                     if label != blank and (index == 0 or label != path[index - 1])]
        if collapsed == list(target):
            total += math.exp(sum(log_probs[t, label] for t, label in enumerate(path)))
    return -math.log(total) if total > 0 else math.inf


def log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - numpy.log(numpy.exp(shifted).sum(axis, keepdims=True))


def test_ctc_loss_matches_enumerating_every_alignment(device):
    log_probs = log_softmax(RNG.standard_normal((5, 3, 3)), 2)
    targets = numpy.array([[1, 2], [1, 1], [2, 0]])
    target_lengths, input_lengths = [2, 2, 1], [5, 4, 3]
    losses = F.ctc_loss(agnostic.tensor(log_probs, device=device), agnostic.tensor(targets, device=device),
                        input_lengths, target_lengths, reduction="none")
    expected = [ctc_brute_force(log_probs[:input_lengths[n], n], targets[n, :target_lengths[n]]) for n in range(3)]
    assert numpy.allclose(host(losses), expected, rtol=1e-10)
    mean = F.ctc_loss(agnostic.tensor(log_probs, device=device), agnostic.tensor(targets, device=device),
                      agnostic.tensor(input_lengths), agnostic.tensor(target_lengths))
    assert numpy.isclose(host(mean), numpy.mean(numpy.array(expected) / numpy.array(target_lengths)))
    impossible = F.ctc_loss(agnostic.tensor(log_probs[:2], device=device), agnostic.tensor([[1, 1]], device=device)
                            .expand(3, 2), [2, 2, 2], [2, 2, 2], reduction="none")
    assert numpy.isinf(host(impossible)).all()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("layout", ["padded", "concatenated", "unbatched"])
def test_ctc_loss_values_and_gradients_match_pytorch(device, reduction, layout):
    torch = pytest.importorskip("torch")
    steps, batch, classes = 12, 3, 5
    logits = RNG.standard_normal((steps, batch, classes)).astype("float32")
    target_lengths, input_lengths = numpy.array([4, 1, 3]), numpy.array([12, 9, 7])
    targets = RNG.integers(1, classes, (batch, 4))
    targets[0, 2] = targets[0, 1]
    if layout == "concatenated":
        targets = numpy.concatenate([targets[n, :target_lengths[n]] for n in range(batch)])
    if layout == "unbatched":
        logits, targets, input_lengths, target_lengths = logits[:, 0], targets[0], input_lengths[:1], target_lengths[:1]
        input_lengths, target_lengths = input_lengths.reshape(()), target_lengths.reshape(())
    ours = agnostic.tensor(logits, device=device, requires_grad=True)
    theirs = torch.tensor(logits, requires_grad=True)
    result = nn.CTCLoss(blank=0, reduction=reduction)(
        F.log_softmax(ours, -1), agnostic.tensor(targets, device=device), agnostic.tensor(input_lengths),
        agnostic.tensor(target_lengths))
    expected = torch.nn.CTCLoss(blank=0, reduction=reduction)(
        theirs.log_softmax(-1), torch.tensor(targets), torch.tensor(input_lengths), torch.tensor(target_lengths))
    assert tuple(result.shape) == tuple(expected.shape)
    assert numpy.allclose(host(result), expected.detach().numpy(), rtol=1e-5)
    result.sum().backward()
    expected.sum().backward()
    assert numpy.allclose(host(ours.grad), theirs.grad.numpy(), atol=1e-6)


def test_ctc_gradient_of_log_probs_themselves_is_pytorchs(device):
    torch = pytest.importorskip("torch")
    log_probs = log_softmax(RNG.standard_normal((6, 2, 4)), 2)
    ours = agnostic.tensor(log_probs, device=device, requires_grad=True)
    theirs = torch.tensor(log_probs, requires_grad=True)
    targets, lengths = numpy.array([[1, 3], [2, 2]]), ([6, 5], [2, 2])
    F.ctc_loss(ours, agnostic.tensor(targets, device=device), *lengths, blank=0, reduction="sum").backward()
    torch.nn.functional.ctc_loss(theirs, torch.tensor(targets), *lengths, reduction="sum").backward()
    assert numpy.allclose(host(ours.grad), theirs.grad.numpy())


def test_ctc_zero_infinity_and_blank(device):
    torch = pytest.importorskip("torch")
    log_probs = log_softmax(RNG.standard_normal((3, 2, 4)), 2)
    targets = numpy.array([[1, 1, 2], [1, 2, 3]])
    ours = agnostic.tensor(log_probs, device=device, requires_grad=True)
    loss = F.ctc_loss(ours, agnostic.tensor(targets, device=device), [3, 3], [3, 3], reduction="none",
                      zero_infinity=True)
    expected = torch.nn.functional.ctc_loss(torch.tensor(log_probs), torch.tensor(targets), [3, 3], [3, 3],
                                            reduction="none", zero_infinity=True)
    assert host(loss)[0] == 0.0 and numpy.allclose(host(loss), expected.numpy())
    loss.sum().backward()
    assert host(ours.grad)[:, 0].tolist() == [[0.0] * 4] * 3
    blank_last = F.ctc_loss(agnostic.tensor(log_probs, device=device), agnostic.tensor([[0, 1], [2, 0]],
                            device=device), [3, 3], [2, 2], blank=3, reduction="none")
    reference = torch.nn.functional.ctc_loss(torch.tensor(log_probs), torch.tensor([[0, 1], [2, 0]]), [3, 3], [2, 2],
                                             blank=3, reduction="none")
    assert numpy.allclose(host(blank_last), reference.numpy())
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(agnostic.tensor(log_probs, device=device), agnostic.tensor(targets), [3, 3], [3, 3], blank=4)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 3, but got value 4"):
        F.ctc_loss(agnostic.tensor(log_probs, device=device), agnostic.tensor(targets), [4, 3], [3, 3])


def test_ctc_gradcheck_through_log_softmax(device):
    logits = agnostic.tensor(RNG.standard_normal((5, 2, 3)), device=device, requires_grad=True)
    targets = agnostic.tensor([[1, 2], [2, 2]], device=device)
    assert gradcheck(lambda x: F.ctc_loss(F.log_softmax(x, 2), targets, [5, 4], [2, 1]), (logits,))


def multilabel_margin_reference(x, target):
    """PyTorch's loop, in NumPy: each target (until the first -1, repeats included) against each non-target."""
    losses = []
    for scores, labels in zip(x, target):
        kept = []
        for label in labels:
            if label < 0:
                break
            kept.append(label)
        total = sum(max(0.0, 1 - scores[j] + scores[i]) for j in kept for i in range(len(scores)) if i not in kept)
        losses.append(total / len(scores))
    return numpy.array(losses)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin_loss_matches_numpy_and_pytorch(device, reduction):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((5, 6))
    target = RNG.integers(-1, 6, (5, 6))
    target[0] = [2, 2, 5, -1, 0, 0]
    target[1, 0] = -1
    ours = agnostic.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    result = F.multilabel_margin_loss(ours, agnostic.tensor(target, device=device), reduction=reduction)
    expected = torch.nn.functional.multilabel_margin_loss(theirs, torch.tensor(target), reduction=reduction)
    assert numpy.allclose(host(result), reduce(multilabel_margin_reference(x, target), reduction))
    assert numpy.allclose(host(result), expected.detach().numpy())
    result.sum().backward()
    expected.sum().backward()
    assert numpy.allclose(host(ours.grad), theirs.grad.numpy())
    single = nn.MultiLabelMarginLoss(reduction=reduction)(ours[0], agnostic.tensor(target[0], device=device))
    assert single.shape == () and numpy.isclose(host(single), multilabel_margin_reference(x[:1], target[:1])[0])
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        F.multilabel_margin_loss(ours, agnostic.tensor(target[:, :3], device=device))


def test_triplet_margin_with_distance_loss(device):
    torch = pytest.importorskip("torch")
    a, p, n = (RNG.standard_normal((4, 3)) for _ in range(3))

    def manhattan(x, y):
        return (x - y).abs().sum(-1)

    for swap in (False, True):
        ours = [agnostic.tensor(v, device=device, requires_grad=True) for v in (a, p, n)]
        theirs = [torch.tensor(v, requires_grad=True) for v in (a, p, n)]
        result = F.triplet_margin_with_distance_loss(*ours, distance_function=manhattan, margin=1.5, swap=swap)
        expected = torch.nn.functional.triplet_margin_with_distance_loss(*theirs, distance_function=manhattan,
                                                                          margin=1.5, swap=swap)
        negative = numpy.abs(a - n).sum(1) if not swap else numpy.minimum(numpy.abs(a - n).sum(1),
                                                                            numpy.abs(p - n).sum(1))
        assert numpy.isclose(host(result), numpy.maximum(0, 1.5 + numpy.abs(a - p).sum(1) - negative).mean())
        assert numpy.isclose(host(result), expected.item())
        result.backward()
        expected.backward()
        for mine, reference in zip(ours, theirs):
            assert numpy.allclose(host(mine.grad), reference.grad.numpy())
    module = nn.TripletMarginWithDistanceLoss(reduction="none")
    default = module(*(agnostic.tensor(v, device=device) for v in (a, p, n)))
    assert numpy.allclose(host(default), host(F.triplet_margin_loss(*(agnostic.tensor(v, device=device)
                                                                        for v in (a, p, n)), reduction="none")))
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0.0)
