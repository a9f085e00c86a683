"""PyTorch's top-level layer functions and utilities (``agnostic.conv2d``, ``agnostic.batch_norm``,
``agnostic.poisson``...): PyTorch's signatures, values equal to ``agnostic.nn.functional``'s and to PyTorch's,
gradients, and the Poisson/binomial samplers' distributions."""

import math
import warnings

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck


def _tensor(array, device, requires_grad=False):
    return agnostic.tensor(numpy.asarray(array), device=device, requires_grad=requires_grad)


def _random(shape, seed=0, low=-1.0, high=1.0):
    return numpy.random.default_rng(seed).uniform(low, high, shape)


# (name, arrays, extra arguments, functional call of agnostic.nn.functional giving the same value)
CASES = [
    ("conv1d", [(2, 3, 7), (4, 3, 3), (4,)], (2, 1, 1, 1),
     lambda x, w, b: F.conv1d(x, w, b, 2, 1)),
    ("conv2d", [(1, 2, 5, 5), (3, 2, 3, 3)], (), lambda x, w: F.conv2d(x, w)),
    ("conv3d", [(1, 2, 3, 4, 4), (2, 2, 2, 2, 2)], (None, 1, 1), lambda x, w: F.conv3d(x, w, None, 1, 1)),
    ("conv_transpose1d", [(1, 2, 5), (2, 3, 3)], (None, 2, 1, 1), lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1)),
    ("conv_transpose2d", [(1, 2, 3, 3), (2, 1, 2, 2)], (), lambda x, w: F.conv_transpose2d(x, w)),
    ("conv_transpose3d", [(1, 2, 2, 2, 2), (2, 1, 2, 2, 2)], (), lambda x, w: F.conv_transpose3d(x, w)),
    ("convolution", [(1, 2, 5, 5), (3, 2, 3, 3)], (None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
     lambda x, w: F.conv2d(x, w, None, 1, 1)),
    ("convolution", [(1, 2, 4), (2, 3, 3)], (None, [2], [0], [1], True, [1], 1),
     lambda x, w: F.conv_transpose1d(x, w, None, 2, 0, 1)),
    ("layer_norm", [(2, 3, 4)], ((4,),), lambda x: F.layer_norm(x, (4,))),
    ("group_norm", [(2, 4, 3)], (2,), lambda x: F.group_norm(x, 2)),
    ("rms_norm", [(2, 3, 4)], ((3, 4),), lambda x: F.rms_norm(x, (3, 4))),
    ("bilinear", [(3, 2), (3, 4), (5, 2, 4), (5,)], (), lambda a, b, w, c: F.bilinear(a, b, w, c)),
    ("celu", [(6,)], (0.5,), lambda x: F.celu(x, 0.5)),
    ("selu", [(6,)], (), lambda x: F.selu(x)),
    ("prelu", [(2, 3, 4), (3,)], (), lambda x, w: F.prelu(x, w)),
    ("rrelu", [(6,)], (0.1, 0.3), lambda x: F.rrelu(x, 0.1, 0.3)),
    ("threshold", [(6,)], (0.2, -3.0), lambda x: F.threshold(x, 0.2, -3.0)),
    ("hardshrink", [(6,)], (0.3,), lambda x: F.hardshrink(x, 0.3)),
    ("pixel_shuffle", [(1, 8, 2, 3)], (2,), lambda x: F.pixel_shuffle(x, 2)),
    ("pixel_unshuffle", [(1, 2, 4, 6)], (2,), lambda x: F.pixel_unshuffle(x, 2)),
    ("channel_shuffle", [(2, 6, 3)], (3,), None),
    ("native_channel_shuffle", [(2, 6, 3)], (2,), None),
    ("constant_pad_nd", [(2, 3)], ([1, 2, 0, 1], 7.0), lambda x: F.pad(x, (1, 2, 0, 1), value=7.0)),
    ("cosine_similarity", [(3, 4), (3, 4)], (1,), lambda a, b: F.cosine_similarity(a, b)),
    ("pairwise_distance", [(3, 4), (3, 4)], (1.5,), lambda a, b: F.pairwise_distance(a, b, 1.5)),
    ("pdist", [(4, 3)], (3,), lambda x: F.pdist(x, 3)),
    ("margin_ranking_loss", [(5,), (5,), (5,)], (0.2, 2), lambda a, b, t: F.margin_ranking_loss(
        a, b, t, 0.2, reduction="sum")),
    ("triplet_margin_loss", [(3, 4), (3, 4), (3, 4)], (1.0, 2, 1e-6, True, 0), lambda a, p, n: F.triplet_margin_loss(
        a, p, n, swap=True, reduction="none")),
    ("cosine_embedding_loss", [(3, 4), (3, 4), (3,)], (0.1, 1), lambda a, b, t: F.cosine_embedding_loss(
        a, b, t, 0.1)),
    ("hinge_embedding_loss", [(5,), (5,)], (0.5, 0), lambda x, t: F.hinge_embedding_loss(x, t, 0.5, reduction="none")),
    ("poisson_nll_loss", [(5,), (5,)], (True, True, 1e-8, 2), lambda x, t: F.poisson_nll_loss(
        x, t, True, True, reduction="sum")),
    ("max_pool1d", [(2, 3, 8)], (3, 2, 1), lambda x: F.max_pool1d(x, 3, 2, 1)),
    ("max_pool1d", [(2, 3, 8)], (2,), lambda x: F.max_pool1d(x, 2)),
    ("max_pool2d", [(1, 2, 5, 5)], (2, (), 0, 1, True), lambda x: F.max_pool2d(x, 2, ceil_mode=True)),
    ("max_pool3d", [(1, 1, 4, 4, 4)], (2,), lambda x: F.max_pool3d(x, 2)),
    ("avg_pool1d", [(2, 3, 8)], (3, 2, 1, False, False), lambda x: F.avg_pool1d(x, 3, 2, 1, False, False)),
    ("adaptive_avg_pool1d", [(2, 3, 7)], (3,), lambda x: F.adaptive_avg_pool1d(x, 3)),
]
# Second operands that are targets or kept positive (not noise around 0).
TARGETS = {"margin_ranking_loss": {2: "sign"}, "cosine_embedding_loss": {2: "sign"},
           "hinge_embedding_loss": {1: "sign"}, "poisson_nll_loss": {1: "count"}}


def _operands(name, shapes):
    arrays = [_random(shape, seed) for seed, shape in enumerate(shapes)]
    for position, kind in TARGETS.get(name, {}).items():
        arrays[position] = numpy.where(arrays[position] > 0, 1.0, -1.0) if kind == "sign" else \
            numpy.round(arrays[position] * 3 + 3)
    return arrays


def _ids(cases):
    return [f"{case[0]}-{index}" for index, case in enumerate(cases)]


@pytest.mark.parametrize("name, shapes, extra, functional", CASES, ids=_ids(CASES))
def test_layer_function_matches_functional_and_pytorch(device, name, shapes, extra, functional):
    arrays = _operands(name, shapes)
    operands = [_tensor(array, device) for array in arrays]
    result = getattr(agnostic, name)(*operands, *extra)
    if functional is not None:
        numpy.testing.assert_allclose(result.cpu().numpy(), functional(*operands).cpu().numpy(), rtol=1e-6)
    torch = pytest.importorskip("torch")
    expected = getattr(torch, name)(*[torch.tensor(array) for array in arrays], *extra)
    numpy.testing.assert_allclose(result.cpu().numpy(), expected.numpy(), rtol=1e-6, atol=1e-9)


GRADIENT_CASES = [case for case in CASES if case[0] not in {"rrelu", "threshold", "hardshrink", "max_pool1d",
                                                                "max_pool2d", "max_pool3d", "margin_ranking_loss"}]


@pytest.mark.parametrize("name, shapes, extra, functional", GRADIENT_CASES, ids=_ids(GRADIENT_CASES))
def test_layer_function_gradients(device, name, shapes, extra, functional):
    arrays = _operands(name, shapes)
    targets = set(TARGETS.get(name, {}))
    operands = [_tensor(array, device, requires_grad=index not in targets) for index, array in enumerate(arrays)]
    assert gradcheck(lambda *tensors: getattr(agnostic, name)(*tensors, *extra), tuple(operands))
    if name == "native_channel_shuffle":
        return  # PyTorch has no derivative for it
    torch = pytest.importorskip("torch")
    torch_operands = [torch.tensor(array, requires_grad=index not in targets) for index, array in enumerate(arrays)]
    getattr(torch, name)(*torch_operands, *extra).sum().backward()
    getattr(agnostic, name)(*operands, *extra).sum().backward()
    for ours, theirs in zip(operands, torch_operands):
        if theirs.grad is not None:
            numpy.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-9)


def test_batch_and_instance_norm_take_atens_argument_order(device):
    x = _random((4, 3, 5))
    weight, bias = _random((3,), 1), _random((3,), 2)
    mean, variance = numpy.zeros(3), numpy.ones(3)
    ours = [_tensor(a, device) for a in (x, weight, bias, mean, variance)]
    out = agnostic.batch_norm(*ours, True, 0.1, 1e-5, False)
    expected = (x - x.mean((0, 2), keepdims=True)) / numpy.sqrt(x.var((0, 2), keepdims=True) + 1e-5)
    numpy.testing.assert_allclose(out.cpu().numpy(), expected * weight[:, None] + bias[:, None], rtol=1e-6)
    numpy.testing.assert_allclose(ours[3].cpu().numpy(), 0.1 * x.mean((0, 2)), rtol=1e-6)  # running mean updated
    with pytest.raises(RuntimeError, match="running_mean must be defined"):
        agnostic.batch_norm(ours[0], None, None, None, None, False, 0.1, 1e-5, False)
    instance = agnostic.instance_norm(ours[0], None, None, None, None, True, 0.1, 1e-5, False)
    numpy.testing.assert_allclose(instance.cpu().numpy(), F.instance_norm(ours[0]).cpu().numpy(), rtol=1e-6)
    output, save_mean, invstd = agnostic.native_batch_norm(ours[0], None, None, None, None, True, 0.1, 1e-5)
    numpy.testing.assert_allclose(save_mean.cpu().numpy(), x.mean((0, 2)), rtol=1e-6)
    numpy.testing.assert_allclose(invstd.cpu().numpy(), 1 / numpy.sqrt(x.var((0, 2)) + 1e-5), rtol=1e-6)
    assert agnostic.native_batch_norm(ours[0], None, None, ours[3], ours[4], False, 0.1, 1e-5)[1].shape == (0,)
    _, layer_mean, rstd = agnostic.native_layer_norm(ours[0], [5], None, None, 1e-5)
    assert layer_mean.shape == rstd.shape == (4, 3, 1)
    numpy.testing.assert_allclose(layer_mean.cpu().numpy()[..., 0], x.mean(-1), rtol=1e-6)
    torch = pytest.importorskip("torch")
    fresh = [_tensor(a, device) for a in (x, weight, bias, mean, variance)]
    numpy.testing.assert_allclose(agnostic.batch_norm(*fresh, True, 0.1, 1e-5, False).cpu().numpy(),
                                  torch.batch_norm(*[torch.tensor(a) for a in (x, weight, bias, mean, variance)],
                                                   True, 0.1, 1e-5, False).numpy(), rtol=1e-6)
    for ours_part, theirs_part in zip(agnostic.native_layer_norm(_tensor(x, device), [3, 5], None, None, 1e-5),
                                      torch.native_layer_norm(torch.tensor(x), [3, 5], None, None, 1e-5)):
        numpy.testing.assert_allclose(ours_part.cpu().numpy(), theirs_part.numpy(), rtol=1e-6)


def test_embedding_takes_the_weight_first(device):
    weight = _tensor(_random((5, 3)), device, requires_grad=True)
    indices = agnostic.tensor([[0, 2], [2, 4]], device=device)
    out = agnostic.embedding(weight, indices, 2)
    numpy.testing.assert_allclose(out.detach().cpu().numpy(), weight.detach().cpu().numpy()[indices.cpu().numpy()])
    out.sum().backward()
    numpy.testing.assert_array_equal(weight.grad.cpu().numpy()[:, 0], [1, 0, 0, 0, 1])  # the padding row: none
    assert agnostic.embedding(weight, indices).shape == (2, 2, 3)  # padding_idx -1: none


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_returns_output_and_bookkeeping(device, mode):
    weight = _random((6, 3))
    indices, offsets = numpy.array([0, 2, 1, 3, 3, 5]), numpy.array([0, 2, 2])
    ours = agnostic.embedding_bag(_tensor(weight, device), _tensor(indices, device), _tensor(offsets, device),
                                  False, mode)
    name = {0: "sum", 1: "mean", 2: "max"}[mode]
    functional = F.embedding_bag(_tensor(indices, device), _tensor(weight, device), _tensor(offsets, device),
                                 mode=name)
    numpy.testing.assert_allclose(ours[0].cpu().numpy(), functional.cpu().numpy())
    numpy.testing.assert_array_equal(ours[1].cpu().numpy(), [0, 0, 2, 2, 2, 2])
    numpy.testing.assert_array_equal(ours[2].cpu().numpy(), [2, 0, 4])
    torch = pytest.importorskip("torch")
    theirs = torch.embedding_bag(torch.tensor(weight), torch.tensor(indices), torch.tensor(offsets), False, mode)
    numpy.testing.assert_allclose(ours[0].cpu().numpy(), theirs[0].numpy())
    if mode == 2:
        numpy.testing.assert_array_equal(ours[3].cpu().numpy(), theirs[3].numpy())


def test_losses_take_reduction_as_an_int(device):
    logits, target = _random((4,)), (_random((4,), 1) > 0).astype(float)
    x, t = _tensor(logits, device), _tensor(target, device)
    for reduction, name in ((0, "none"), (1, "mean"), (2, "sum")):
        numpy.testing.assert_allclose(
            agnostic.binary_cross_entropy_with_logits(x, t, None, None, reduction).cpu().numpy(),
            F.binary_cross_entropy_with_logits(x, t, reduction=name).cpu().numpy(), rtol=1e-7)
    log_probs, probs = numpy.log([0.2, 0.8]), numpy.array([0.5, 0.5])
    numpy.testing.assert_allclose(agnostic.kl_div(_tensor(log_probs, device), _tensor(probs, device), 2).item(),
                                  numpy.sum(probs * (numpy.log(probs) - log_probs)), rtol=1e-12)
    numpy.testing.assert_allclose(agnostic.kl_div(_tensor(log_probs, device), _tensor(numpy.log(probs), device), 0,
                                                  log_target=True).cpu().numpy(),
                                  probs * (numpy.log(probs) - log_probs), rtol=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        agnostic.kl_div(x, t, 3)
    torch = pytest.importorskip("torch")
    pos_weight = numpy.array([2.0, 1.0, 0.5, 1.0])
    numpy.testing.assert_allclose(
        agnostic.binary_cross_entropy_with_logits(x, t, None, _tensor(pos_weight, device), 2).item(),
        torch.binary_cross_entropy_with_logits(torch.tensor(logits), torch.tensor(target), None,
                                               torch.tensor(pos_weight), 2).item(), rtol=1e-12)


def test_ctc_loss_matches_functional_and_pytorch(device):
    log_probs = numpy.log(numpy.random.default_rng(0).dirichlet(numpy.ones(4), (6, 2)))
    targets = numpy.array([[1, 2, 1], [3, 1, 0]])
    ours = agnostic.ctc_loss(_tensor(log_probs, device), _tensor(targets, device), [6, 5], [3, 2], 0, 0)
    functional = F.ctc_loss(_tensor(log_probs, device), _tensor(targets, device), [6, 5], [3, 2], reduction="none")
    numpy.testing.assert_allclose(ours.cpu().numpy(), functional.cpu().numpy())
    torch = pytest.importorskip("torch")
    theirs = torch.ctc_loss(torch.tensor(log_probs), torch.tensor(targets), [6, 5], [3, 2], 0, 0)
    numpy.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-7)


def test_pooling_with_indices_returns_pairs(device):
    x = _random((2, 3, 9))
    values, indices = agnostic.max_pool1d_with_indices(_tensor(x, device), 3, 2)
    numpy.testing.assert_allclose(values.cpu().numpy(), numpy.stack([x[..., i:i + 3].max(-1) for i in
                                                                     range(0, 7, 2)], -1))
    adaptive, adaptive_indices = agnostic.adaptive_max_pool1d(_tensor(x, device), 3)
    numpy.testing.assert_array_equal(adaptive_indices.cpu().numpy(), x.reshape(2, 3, 3, 3).argmax(-1) +
                                     numpy.arange(0, 9, 3))
    torch = pytest.importorskip("torch")
    for ours, theirs in ((values, torch.max_pool1d_with_indices(torch.tensor(x), 3, 2)[0]),
                         (indices, torch.max_pool1d_with_indices(torch.tensor(x), 3, 2)[1]),
                         (adaptive, torch.adaptive_max_pool1d(torch.tensor(x), 3)[0])):
        numpy.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())


def test_dropout_functions_and_their_in_place_forms(device):
    x = agnostic.ones(200, 4, 3, device=device)
    assert agnostic.dropout(x, 0.5, False) is x
    _ = agnostic.manual_seed(3)
    dropped = agnostic.dropout(x, 0.5, True)
    _ = agnostic.manual_seed(3)
    numpy.testing.assert_array_equal(dropped.cpu().numpy(), F.dropout(x, 0.5, True).cpu().numpy())
    assert set(numpy.unique(dropped.cpu().numpy())) == {0.0, 2.0}
    channels = agnostic.feature_dropout(x, 0.5, True).cpu().numpy()
    assert (channels == channels[..., :1]).all() and 0.3 < (channels[..., 0] == 0).mean() < 0.7
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        agnostic.feature_dropout(agnostic.ones(3, device=device), 0.5, True)
    _ = agnostic.manual_seed(4)
    alpha = agnostic.alpha_dropout(x, 0.2, True)
    _ = agnostic.manual_seed(4)
    numpy.testing.assert_array_equal(alpha.cpu().numpy(), F.alpha_dropout(x, 0.2, True).cpu().numpy())
    feature_alpha = agnostic.feature_alpha_dropout(x, 0.2, True).cpu().numpy()
    assert (feature_alpha == feature_alpha[..., :1]).all()
    for function in (agnostic.dropout_, agnostic.feature_dropout_, agnostic.alpha_dropout_,
                     agnostic.feature_alpha_dropout_):
        y = agnostic.ones(4, 2, device=device)
        assert function(y, 1.0, True) is y
        assert (y.cpu().numpy() == y.cpu().numpy()[0, 0]).all() and y.cpu().numpy()[0, 0] != 1.0


def test_in_place_activations_write_into_their_input(device):
    values = numpy.array([-2.0, -0.5, 0.5, 2.0])
    for name, extra in (("celu_", (0.7,)), ("selu_", ()), ("threshold_", (0.0, 9.0)), ("rrelu_", (0.1, 0.3))):
        x = _tensor(values, device)
        assert getattr(agnostic, name)(x, *extra) is x
        numpy.testing.assert_allclose(x.cpu().numpy(), getattr(F, name[:-1])(_tensor(values, device),
                                                                             *extra).cpu().numpy())


def test_rrelu_training_draws_slopes_from_the_generator(device):
    x = _tensor(-numpy.ones(1000), device)
    generator = agnostic.Generator(device).manual_seed(5)
    slopes = -agnostic.rrelu(x, 0.1, 0.3, True, generator).cpu().numpy()
    assert 0.1 <= slopes.min() and slopes.max() <= 0.3 and abs(slopes.mean() - 0.2) < 0.01
    again = -agnostic.rrelu(x, 0.1, 0.3, True, agnostic.Generator(device).manual_seed(5)).cpu().numpy()
    numpy.testing.assert_array_equal(slopes, again)
    y = x.clone()
    agnostic.rrelu_(y, 0.1, 0.3, True, agnostic.Generator(device).manual_seed(5))
    numpy.testing.assert_array_equal(-y.cpu().numpy(), slopes)


def test_tensor_utilities(device):
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    copy = agnostic.clone(x)
    assert copy is not x and copy.requires_grad
    copy.sum().backward()
    numpy.testing.assert_array_equal(x.grad.cpu().numpy(), [1.0, 1.0])
    assert not agnostic.detach(x).requires_grad
    y = x * 2
    assert agnostic.detach_(y) is y and not y.requires_grad
    assert agnostic.fill(x, 7).tolist() == [7.0, 7.0]
    assert agnostic.fill(agnostic.zeros(2, dtype=agnostic.int32), 3).dtype is agnostic.int32
    assert agnostic.get_device(x) == (-1 if x.device.type == "cpu" else x.device.index)
    assert agnostic.typename(x) == x.type()
    assert agnostic.typename(3) == "int" and agnostic.typename(agnostic.nn.Linear) == "agnostic.nn.linear.Linear"
    assert agnostic.typename(agnostic.nn.Linear(1, 1)) == "agnostic.nn.linear.Linear"
    assert agnostic.is_storage(x) is False
    z = agnostic.tensor([4, 9], device=device)
    assert agnostic.gcd_(z, agnostic.tensor([6, 6], device=device)) is z and z.tolist() == [2, 3]
    assert agnostic.lcm_(z, agnostic.tensor([4, 4], device=device)) is z and z.tolist() == [4, 12]
    s = agnostic.tensor([0.0, 0.5], device=device)
    assert agnostic.sinc_(s) is s and s.cpu().numpy()[1] == pytest.approx(2 / math.pi, rel=1e-6)
    v = agnostic.ones(2, device=device)
    agnostic.addmv_(v, agnostic.tensor([[1.0, 2.0], [3.0, 4.0]], device=device), agnostic.ones(2, device=device),
                    beta=2)
    assert v.tolist() == [5.0, 9.0]
    c = agnostic.tensor([1 + 2j, 3 - 1j], device=device)
    assert agnostic.conj_physical_(c) is c and c.tolist() == [1 - 2j, 3 + 1j]
    r = agnostic.tensor([1.0], device=device)
    assert agnostic.conj_physical_(r) is r and r.tolist() == [1.0]
    target = agnostic.zeros(3, device=device)
    agnostic.index_put_(target, (agnostic.tensor([0, 0, 2], device=device),), agnostic.tensor(1.0, device=device),
                        True)
    assert target.tolist() == [2.0, 0.0, 1.0]


def test_range_includes_its_end_and_warns():
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        values = agnostic.range(1, 2, 0.25)
    assert values.dtype is agnostic.get_default_dtype()
    assert values.tolist() == [1.0, 1.25, 1.5, 1.75, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert agnostic.range(0, 3, dtype=agnostic.int64).tolist() == [0, 1, 2, 3]
        assert agnostic.range(3, 0, -1).tolist() == [3.0, 2.0, 1.0, 0.0]
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            agnostic.range(0, 3, -1)
        torch = pytest.importorskip("torch")
        numpy.testing.assert_array_equal(agnostic.range(-1, 1.5, 0.3).numpy(), torch.range(-1, 1.5, 0.3).numpy())


def test_frombuffer_shares_the_buffers_memory():
    buffer = bytearray(numpy.arange(5, dtype=numpy.int32).tobytes())
    tensor = agnostic.frombuffer(buffer, dtype=agnostic.int32, count=3, offset=4)
    assert tensor.tolist() == [1, 2, 3]
    buffer[4] = 9
    assert tensor.tolist() == [9, 2, 3]
    with pytest.raises(ValueError, match="multiple of element size"):
        agnostic.frombuffer(bytearray(5), dtype=agnostic.int32)
    with pytest.warns(UserWarning, match="not writable"):
        assert agnostic.frombuffer(b"\x01\x02", dtype=agnostic.uint8).tolist() == [1, 2]


def test_settings_and_build_flags():
    assert agnostic.set_flush_denormal(True) is False
    assert agnostic.get_num_interop_threads() >= 1
    assert agnostic.init_num_threads() is None
    assert agnostic.is_inference_mode_enabled() is False
    with agnostic.inference_mode():
        assert agnostic.is_inference_mode_enabled() is True
        with agnostic.inference_mode(False):  # as PyTorch: the inner region is not in inference mode
            assert agnostic.is_inference_mode_enabled() is False
        assert agnostic.is_inference_mode_enabled() is True
    assert agnostic.is_inference_mode_enabled() is False
    for flag in ("has_lapack", "has_mkl", "has_openmp", "has_spectral"):
        assert isinstance(getattr(agnostic, flag), bool)
    assert agnostic.has_lapack and agnostic.has_spectral
    assert agnostic.OutOfMemoryError is agnostic.cuda.OutOfMemoryError
    assert agnostic.GradScaler is agnostic.amp.GradScaler
    agnostic.set_warn_always(True)
    try:
        assert agnostic.is_warn_always_enabled()
    finally:
        agnostic.set_warn_always(False)
    assert not agnostic.is_warn_always_enabled()


def test_set_num_interop_threads_can_be_set_once(monkeypatch):
    from agnostic import _torch_level

    monkeypatch.setitem(_torch_level._interop_threads, "count", None)
    agnostic.set_num_interop_threads(3)
    assert agnostic.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads"):
        agnostic.set_num_interop_threads(2)


def test_set_default_tensor_type_sets_the_default_dtype():
    try:
        with pytest.warns(UserWarning, match="set_default_tensor_type\\(\\) is deprecated"):
            agnostic.set_default_tensor_type("torch.DoubleTensor")
        assert agnostic.ones(1).dtype is agnostic.float64 and agnostic.ones(1).device.type == "cpu"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agnostic.set_default_tensor_type(agnostic.FloatTensor)
            assert agnostic.ones(1).dtype is agnostic.float32
            with pytest.raises(TypeError, match="only floating-point types"):
                agnostic.set_default_tensor_type(agnostic.LongTensor)
    finally:
        agnostic.set_default_dtype(agnostic.float32)


def test_autocast_state_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert agnostic.get_autocast_cpu_dtype() is agnostic.bfloat16
        assert agnostic.get_autocast_gpu_dtype() is agnostic.float16
        assert agnostic.is_autocast_cpu_enabled() is False
    with pytest.warns(DeprecationWarning, match="is_autocast_enabled\\('cpu'\\)"):
        agnostic.is_autocast_cpu_enabled()
    weight = agnostic.randn(3, 3)
    try:
        agnostic.set_autocast_dtype("cpu", agnostic.float16)
        # as PyTorch: the dtype set while autocast is off is the one reported, and the one a region uses
        assert agnostic.get_autocast_dtype("cpu") is agnostic.float16
        with agnostic.autocast("cpu"):
            assert (agnostic.ones(2, 3) @ weight).dtype is agnostic.float16
        agnostic.set_autocast_enabled("cpu", True)
        assert agnostic.is_autocast_enabled("cpu") and agnostic.get_autocast_dtype("cpu") is agnostic.float16
        assert (agnostic.ones(2, 3) @ weight).dtype is agnostic.float16  # ops autocast
    finally:
        agnostic.set_autocast_enabled("cpu", False)
        agnostic.set_autocast_dtype("cpu", agnostic.bfloat16)
    assert not agnostic.is_autocast_enabled("cpu")
    assert (agnostic.ones(2, 3) @ weight).dtype is agnostic.float32
    assert agnostic.autocast_increment_nesting() == 1 and agnostic.autocast_increment_nesting() == 2
    assert agnostic.autocast_decrement_nesting() == 1 and agnostic.autocast_decrement_nesting() == 0
    agnostic.set_autocast_cache_enabled(False)
    try:
        assert agnostic.is_autocast_cache_enabled() is False
    finally:
        agnostic.set_autocast_cache_enabled(True)
    assert agnostic.is_autocast_cache_enabled()
    agnostic.clear_autocast_cache()


def test_cond_calls_the_branch_its_predicate_picks(device):
    x = agnostic.tensor([1.0, 2.0], device=device)
    assert agnostic.cond(True, lambda t: t + 1, lambda t: t - 1, (x,)).tolist() == [2.0, 3.0]
    assert agnostic.cond(x.sum() < 0, lambda t: t + 1, lambda t: t - 1, [x]).tolist() == [0.0, 1.0]
    with pytest.raises(RuntimeError, match="single-element"):
        agnostic.cond(x > 0, lambda t: t, lambda t: t, (x,))


# ----- Poisson and binomial: seeded distribution checks -----------------------------------------------------------
def _chi_square_p_value(samples, probabilities):
    """The p-value of a chi-square goodness-of-fit test over the outcomes expected at least 5 times each."""
    stats = pytest.importorskip("scipy.stats")
    samples = samples.astype(numpy.int64)
    counts = numpy.bincount(samples, minlength=len(probabilities))[:len(probabilities)]
    expected = probabilities * len(samples)
    kept = expected >= 5
    statistic = ((counts[kept] - expected[kept]) ** 2 / expected[kept]).sum()
    return stats.chi2(kept.sum() - 1).sf(statistic)


@pytest.mark.parametrize("rate", [0.7, 4.0, 9.5, 10.0, 45.0])
def test_poisson_samples_follow_the_poisson_distribution(device, rate):
    stats = pytest.importorskip("scipy.stats")
    _ = agnostic.manual_seed(11)
    samples = agnostic.poisson(agnostic.full((20000,), rate, device=device)).cpu().numpy()
    outcomes = numpy.arange(int(rate * 3 + 20))
    assert _chi_square_p_value(samples, stats.poisson(rate).pmf(outcomes)) > 1e-4
    assert abs(samples.mean() - rate) < 5 * math.sqrt(rate / 20000)


def test_poisson_edge_cases_and_dtype(device):
    _ = agnostic.manual_seed(0)
    rates = agnostic.tensor([0.0, 1e6, float("nan")], dtype=agnostic.float32, device=device)
    samples = agnostic.poisson(rates)
    assert samples.dtype is agnostic.float32
    values = samples.cpu().numpy()
    assert values[0] == 0 and abs(values[1] - 1e6) < 6 * 1e3 and math.isnan(values[2])
    with pytest.raises(RuntimeError, match="non-negative"):
        agnostic.poisson(agnostic.tensor([-1.0], device=device))
    with pytest.raises(RuntimeError, match="floating-point"):
        agnostic.poisson(agnostic.tensor([1], device=device))


def test_poisson_draws_repeat_with_the_seed(device):
    rates = agnostic.tensor([0.5, 3.0, 20.0, 500.0] * 50, device=device)
    first = agnostic.poisson(rates, generator=agnostic.Generator(device).manual_seed(7))
    second = agnostic.poisson(rates, generator=agnostic.Generator(device).manual_seed(7))
    numpy.testing.assert_array_equal(first.cpu().numpy(), second.cpu().numpy())
    # The values the CPU draws: every device draws these (the same Philox stream, the same algorithm).
    assert agnostic.poisson(agnostic.tensor([1.0, 4.0, 100.0], device=device),
                            generator=agnostic.Generator(device).manual_seed(0)).tolist() == \
        agnostic.poisson(agnostic.tensor([1.0, 4.0, 100.0]), generator=agnostic.Generator().manual_seed(0)).tolist()


@pytest.mark.parametrize("count, probability", [(5, 0.3), (30, 0.2), (100, 0.3), (1000, 0.9), (50, 0.5), (40, 0.97)])
def test_binomial_samples_follow_the_binomial_distribution(device, count, probability):
    stats = pytest.importorskip("scipy.stats")
    _ = agnostic.manual_seed(12)
    samples = agnostic.binomial(agnostic.full((20000,), float(count), device=device),
                                agnostic.full((20000,), probability, device=device)).cpu().numpy()
    assert samples.min() >= 0 and samples.max() <= count
    assert _chi_square_p_value(samples, stats.binom(count, probability).pmf(numpy.arange(count + 1))) > 1e-4


def test_binomial_edge_cases_and_broadcasting(device):
    _ = agnostic.manual_seed(0)
    count = agnostic.tensor([[5.0], [0.0]], device=device)
    probability = agnostic.tensor([0.0, 1.0, 0.5], device=device)
    samples = agnostic.binomial(count, probability)
    assert samples.shape == (2, 3)
    assert samples[:, :2].tolist() == [[0.0, 5.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        agnostic.binomial(agnostic.tensor([5], device=device), probability)
    numpy.testing.assert_array_equal(
        agnostic.binomial(agnostic.tensor([10.0, 400.0], device=device), agnostic.tensor([0.3, 0.4], device=device),
                          generator=agnostic.Generator(device).manual_seed(1)).cpu().numpy(),
        agnostic.binomial(agnostic.tensor([10.0, 400.0]), agnostic.tensor([0.3, 0.4]),
                          generator=agnostic.Generator().manual_seed(1)).numpy())


def test_names_agree_with_pytorchs_signatures():
    torch = pytest.importorskip("torch")
    from agnostic import _autocast_legacy, _sampling, _torch_level

    for name in _torch_level.__all__ + _autocast_legacy.__all__ + _sampling.__all__:
        assert hasattr(torch, name), name
