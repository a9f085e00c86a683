"""Closed-form activations (functional forms and modules): values against NumPy formulas and PyTorch, gradients
against PyTorch (kinks included) and finite differences, in-place forms, reprs and PyTorch's errors."""

import math
import warnings

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(7)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
# Points on every kink of the piecewise activations, plus a spread of ordinary values.
KINKS = numpy.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 6.0, 20.0, 25.0])


def host(tensor):
    return tensor.detach().cpu().numpy()


def softplus_reference(x, beta=1.0, threshold=20.0):
    return numpy.where(x * beta > threshold, x, numpy.log1p(numpy.exp(numpy.minimum(x * beta, threshold))) / beta)


def sigmoid_reference(x):
    return 1 / (1 + numpy.exp(-x))


# name, keyword arguments, NumPy reference
CASES = [
    ("leaky_relu", {}, lambda x: numpy.where(x > 0, x, 0.01 * x)),
    ("leaky_relu", {"negative_slope": 0.2}, lambda x: numpy.where(x > 0, x, 0.2 * x)),
    ("elu", {}, lambda x: numpy.where(x > 0, x, numpy.expm1(numpy.minimum(x, 0)))),
    ("elu", {"alpha": 0.5}, lambda x: numpy.where(x > 0, x, 0.5 * numpy.expm1(numpy.minimum(x, 0)))),
    ("selu", {}, lambda x: SELU_SCALE * numpy.where(x > 0, x, SELU_ALPHA * numpy.expm1(numpy.minimum(x, 0)))),
    ("celu", {"alpha": 2.0}, lambda x: numpy.where(x > 0, x, 2.0 * numpy.expm1(numpy.minimum(x, 0) / 2.0))),
    ("silu", {}, lambda x: x * sigmoid_reference(x)),
    ("mish", {}, lambda x: x * numpy.tanh(softplus_reference(x))),
    ("softplus", {}, softplus_reference),
    ("softplus", {"beta": 2.0, "threshold": 5.0}, lambda x: softplus_reference(x, 2.0, 5.0)),
    ("hardswish", {}, lambda x: x * numpy.clip(x + 3, 0, 6) / 6),
    ("hardsigmoid", {}, lambda x: numpy.clip(x + 3, 0, 6) / 6),
    ("hardtanh", {}, lambda x: numpy.clip(x, -1, 1)),
    ("hardtanh", {"min_val": -0.5, "max_val": 3.0}, lambda x: numpy.clip(x, -0.5, 3.0)),
    ("relu6", {}, lambda x: numpy.clip(x, 0, 6)),
    ("logsigmoid", {}, lambda x: -numpy.logaddexp(0, -x)),
    ("softsign", {}, lambda x: x / (1 + numpy.abs(x))),
    ("tanhshrink", {}, lambda x: x - numpy.tanh(x)),
    ("softshrink", {}, lambda x: numpy.where(x > 0.5, x - 0.5, numpy.where(x < -0.5, x + 0.5, 0))),
    ("softshrink", {"lambd": 1.0}, lambda x: numpy.where(x > 1, x - 1, numpy.where(x < -1, x + 1, 0))),
    ("hardshrink", {}, lambda x: numpy.where(numpy.abs(x) > 0.5, x, 0)),
    ("threshold", {"threshold": 0.5, "value": -2.0}, lambda x: numpy.where(x > 0.5, x, -2.0)),
    ("gelu", {}, None),
    ("gelu", {"approximate": "tanh"}, None),
]
IDS = [f"{name}-{'-'.join(f'{k}={v}' for k, v in kwargs.items())}" for name, kwargs, _ in CASES]


@pytest.mark.parametrize("name, kwargs, reference", CASES[:-2], ids=IDS[:-2])
@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 5)])
def test_values_match_numpy_reference(device, name, kwargs, reference, shape):
    x = RNG.standard_normal(shape) * 4
    result = getattr(F, name)(agnostic.tensor(x, device=device), **kwargs)
    assert result.shape == shape and result.dtype == agnostic.float64
    assert numpy.allclose(host(result), reference(x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name, kwargs, reference", CASES, ids=IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_and_gradients_match_pytorch_at_the_kinks(device, name, kwargs, reference, dtype):
    torch = pytest.importorskip("torch")
    x = numpy.concatenate([KINKS, -KINKS, RNG.standard_normal(20) * 5]).astype(dtype)
    ours = agnostic.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    result = getattr(F, name)(ours, **kwargs)
    expected = getattr(torch.nn.functional, name)(theirs, **kwargs)
    # float64 is held to 1e-7: PyTorch's hardsigmoid gradient multiplies by a 1/6 rounded to float32.
    tolerance = 1e-6 if dtype == "float32" else 1e-7
    assert result.dtype == getattr(agnostic, dtype)
    assert numpy.allclose(host(result), expected.detach().numpy(), rtol=tolerance * 10, atol=tolerance)
    weights = numpy.linspace(-1, 2, x.size).astype(dtype)
    (result * agnostic.tensor(weights, device=device)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    # float32 gradients: NumPy 2.5's float32 tanh is 1 ulp short of -1 near saturation (-0.99999994 at -20.5), and
    # tanh-GELU's gradient multiplies that ulp by x * inner'(x) (about 50 at x = -7.4): 2e-6 where PyTorch gives 0.
    gradient_tolerance = 1e-5 if dtype == "float32" else tolerance
    assert numpy.allclose(host(ours.grad), theirs.grad.numpy(), rtol=tolerance * 10, atol=gradient_tolerance)


def test_kink_gradients_are_pytorchs_hand_checked(device):
    x = agnostic.tensor([-3.0, 0.0, 3.0, 6.0], device=device, requires_grad=True)
    F.hardtanh(x, 0.0, 6.0).sum().backward()
    assert host(x.grad).tolist() == [0.0, 0.0, 1.0, 0.0]
    x.grad = None
    F.hardswish(x).sum().backward()
    assert host(x.grad).tolist() == [0.0, 0.5, 1.0, 1.0]
    x.grad = None
    F.hardsigmoid(x).sum().backward()
    assert numpy.allclose(host(x.grad), [0.0, 1 / 6, 0.0, 0.0])
    x.grad = None
    F.elu(x, alpha=0.5).sum().backward()
    assert numpy.allclose(host(x.grad), [0.5 * math.exp(-3), 0.5, 1.0, 1.0])
    x.grad = None
    F.leaky_relu(x, 0.1).sum().backward()
    assert numpy.allclose(host(x.grad), [0.1, 0.1, 1.0, 1.0])


def test_large_inputs_keep_finite_gradients(device):
    x = agnostic.tensor([-1000.0, -50.0, 50.0, 1000.0], device=device, requires_grad=True)
    for function in (F.softplus, F.mish, F.elu, F.selu, F.celu, F.silu, F.logsigmoid):
        x.grad = None
        out = function(x)
        out.sum().backward()
        assert numpy.isfinite(host(x.grad)).all(), function.__name__
    assert host(F.softplus(x)).tolist()[2:] == [50.0, 1000.0]
    assert host(F.mish(x))[3] == 1000.0


@pytest.mark.parametrize("function", [F.elu, F.selu, F.celu, F.silu, F.mish, F.softplus, F.softsign, F.tanhshrink,
                                      F.logsigmoid, lambda t: F.softplus(t, beta=0.5, threshold=3.0),
                                      lambda t: F.glu(t, 0), lambda t: F.softmin(t, dim=1)])
def test_gradcheck(device, function):
    x = agnostic.tensor(RNG.standard_normal((4, 3)) * 2, device=device, dtype=agnostic.float64, requires_grad=True)
    assert gradcheck(function, (x,))


def test_prelu_gradcheck_in_input_and_weight(device):
    x = agnostic.tensor(RNG.standard_normal((2, 3, 4)) + 0.05, device=device, requires_grad=True)
    weight = agnostic.tensor([0.25, -0.5, 2.0], device=device, dtype=agnostic.float64, requires_grad=True)
    assert gradcheck(F.prelu, (x, weight))


@pytest.mark.parametrize("name", ["leaky_relu", "elu", "selu", "celu", "hardtanh", "relu6", "threshold", "silu",
                                  "mish", "hardswish", "hardsigmoid", "rrelu"])
def test_inplace_forms_write_into_the_input_and_differentiate_like_pytorch(device, name):
    torch = pytest.importorskip("torch")
    extra = {"threshold": {"threshold": 0.1, "value": -1.0}}.get(name, {})
    x = RNG.standard_normal(12) * 3
    ours_leaf = agnostic.tensor(x, device=device, requires_grad=True)
    theirs_leaf = torch.tensor(x, requires_grad=True)
    ours, theirs = ours_leaf * 2, theirs_leaf * 2
    out = getattr(F, name)(ours, inplace=True, **extra)
    expected = getattr(torch.nn.functional, name)(theirs, inplace=True, **extra)
    assert out is ours
    assert numpy.allclose(host(ours), theirs.detach().numpy())
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    assert numpy.allclose(host(ours_leaf.grad), theirs_leaf.grad.numpy())
    plain = agnostic.tensor(x, device=device)
    assert getattr(F, name)(plain, inplace=True, **extra) is plain
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        getattr(F, name)(agnostic.tensor(x, device=device, requires_grad=True), inplace=True, **extra)


def test_underscore_forms(device):
    for function, reference in ((F.elu_, F.elu), (F.selu_, F.selu), (F.celu_, F.celu), (F.leaky_relu_, F.leaky_relu),
                                (F.hardtanh_, F.hardtanh)):
        x = agnostic.tensor([-2.0, 0.5, 3.0], device=device)
        expected = host(reference(x))
        assert function(x) is x and numpy.allclose(host(x), expected)
    x = agnostic.tensor([-2.0, 0.5], device=device)
    assert F.threshold_(x, 0.0, 7.0) is x and host(x).tolist() == [7.0, 0.5]


def test_rrelu_draws_slopes_in_training_only(device):
    x = agnostic.tensor(-numpy.ones(1000), device=device)
    slopes = -host(F.rrelu(x, 0.1, 0.3, training=True))
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and slopes.std() > 0.03
    assert numpy.allclose(host(F.rrelu(x, 0.1, 0.3)), -0.2)
    layer = nn.RReLU(0.1, 0.3)
    assert host(layer(x)).std() > 0.03
    assert numpy.allclose(host(layer.eval()(x)), -0.2)


def test_softmin_glu_and_prelu_values(device):
    x = numpy.array([[1.0, 2.0, 3.0, 4.0], [0.0, -1.0, 5.0, 2.0]])
    exp = numpy.exp(-x)
    assert numpy.allclose(host(F.softmin(agnostic.tensor(x, device=device), dim=1)), exp / exp.sum(1, keepdims=True))
    assert numpy.allclose(host(nn.Softmin(dim=0)(agnostic.tensor(x, device=device))), exp / exp.sum(0))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        F.softmin(agnostic.tensor(x, device=device))
    half = agnostic.tensor(x, device=device)
    assert numpy.allclose(host(F.glu(half)), x[:, :2] * sigmoid_reference(x[:, 2:]))
    assert numpy.allclose(host(F.glu(half, 0)), x[:1] * sigmoid_reference(x[1:]))
    assert numpy.allclose(host(F.prelu(half, agnostic.tensor([0.5], dtype=half.dtype, device=device))),
                          numpy.where(x > 0, x, 0.5 * x))
    images = RNG.standard_normal((2, 3, 2, 2))
    slopes = numpy.array([0.1, 0.2, 0.3])
    expected = numpy.where(images > 0, images, slopes[None, :, None, None] * images)
    assert numpy.allclose(host(F.prelu(agnostic.tensor(images, device=device), agnostic.tensor(slopes, device=device))),
                          expected)


def test_prelu_module_learns_one_slope_per_channel_like_pytorch(device):
    torch = pytest.importorskip("torch")
    layer = nn.PReLU(3, init=0.1, device=device)
    reference = torch.nn.PReLU(3, init=0.1)
    assert repr(layer) == repr(reference) == "PReLU(num_parameters=3)"
    assert layer.weight.requires_grad and host(layer.weight).tolist() == pytest.approx([0.1] * 3)
    assert [name for name, _ in layer.named_parameters()] == ["weight"]
    x = RNG.standard_normal((4, 3, 5)).astype("float32")
    layer(agnostic.tensor(x, device=device)).pow(2).sum().backward()
    reference(torch.tensor(x)).pow(2).sum().backward()
    assert numpy.allclose(host(layer.weight.grad), reference.weight.grad.numpy(), rtol=1e-5)
    layer.weight.data.fill_(0.5)
    layer.reset_parameters()
    assert host(layer.weight).tolist() == pytest.approx([0.1] * 3)


def test_module_reprs_match_pytorch():
    torch = pytest.importorskip("torch")
    pairs = [("LeakyReLU", (0.2, True)), ("LeakyReLU", ()), ("ELU", (0.5,)), ("CELU", (1.0, True)), ("SELU", (True,)),
             ("SELU", ()), ("SiLU", ()), ("Mish", (True,)), ("Softplus", (2.0, 10.0)), ("Hardswish", (True,)),
             ("Hardsigmoid", ()), ("Hardtanh", (-2.0, 2.0)), ("ReLU6", (True,)), ("LogSigmoid", ()),
             ("Softmin", (1,)), ("GLU", ()), ("PReLU", ()), ("Softsign", ()), ("Tanhshrink", ()),
             ("Softshrink", (1.0,)), ("Hardshrink", ()), ("Threshold", (0.1, 20.0)), ("Threshold", (0.1, 2, True)),
             ("RReLU", ()), ("Softmax2d", ()), ("GELU", ("tanh",))]
    for name, arguments in pairs:
        assert repr(getattr(nn, name)(*arguments)) == repr(getattr(torch.nn, name)(*arguments)), name


@pytest.mark.parametrize("name, kwargs", [("LeakyReLU", {"negative_slope": 0.3}), ("ELU", {"alpha": 0.7}),
                                          ("SELU", {}), ("CELU", {"alpha": 0.5}), ("SiLU", {}), ("Mish", {}),
                                          ("Softplus", {"beta": 3.0}), ("Hardswish", {}), ("Hardsigmoid", {}),
                                          ("Hardtanh", {"min_val": -2.0}), ("ReLU6", {}), ("LogSigmoid", {}),
                                          ("Softsign", {}), ("Tanhshrink", {}), ("Softshrink", {"lambd": 0.3}),
                                          ("Hardshrink", {"lambd": 0.3}), ("Threshold", {"threshold": 0.2,
                                                                                        "value": 9.0}),
                                          ("GLU", {"dim": 1}), ("Softmin", {"dim": 1}), ("Softmax2d", {})])
def test_modules_compute_their_functional_form(device, name, kwargs):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 4, 3, 2)).astype("float32") * 3
    result = getattr(nn, name)(**kwargs)(agnostic.tensor(x, device=device))
    expected = getattr(torch.nn, name)(**kwargs)(torch.tensor(x))
    assert numpy.allclose(host(result), expected.numpy(), rtol=1e-5, atol=1e-6)


def test_errors_match_pytorch(device):
    x = agnostic.tensor([[1.0, 2.0, 3.0]], device=device)
    with pytest.raises(RuntimeError, match="Halving dimension must be even, but dimension 1 is size 3"):
        F.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(agnostic.tensor(1.0, device=device))
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size. Found parameter "
                                           "numbers = 2 and channel size = 3."):
        F.prelu(agnostic.ones(2, 3, device=device), agnostic.ones(2, device=device))
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(x, 2.0, 1.0)
    with pytest.raises(AssertionError, match=r"max_val \(1.0\) must be greater than min_val \(2.0\)"):
        nn.Hardtanh(2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, alpha=0.0)
    with pytest.raises(NotImplementedError, match="convert the input with .float()"):
        F.elu(agnostic.tensor([1, -2], device=device))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
            assert nn.Hardtanh(min_value=-3.0).min_val == -3.0


def test_gelu_forms_match_formulas(device):
    x = RNG.standard_normal(50) * 3
    erf = numpy.vectorize(math.erf)
    exact = x * 0.5 * (1 + erf(x / math.sqrt(2)))
    approximate = 0.5 * x * (1 + numpy.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert numpy.allclose(host(F.gelu(agnostic.tensor(x, device=device))), exact, atol=1e-12)
    assert numpy.allclose(host(nn.GELU("tanh")(agnostic.tensor(x, device=device))), approximate, atol=1e-12)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(agnostic.tensor(x, device=device), approximate="fast")


def test_gumbel_softmax_samples_the_softmax_and_passes_its_gradient_straight_through(device):
    agnostic.manual_seed(3)
    logits = numpy.array([1.0, 2.0, 0.5])
    ours = agnostic.tensor(logits, device=device, requires_grad=True)
    hard = F.gumbel_softmax(ours.expand(20000, 3), hard=True)
    assert set(numpy.unique(host(hard))) == {0.0, 1.0} and (host(hard).sum(1) == 1).all()
    probabilities = numpy.exp(logits) / numpy.exp(logits).sum()
    assert numpy.allclose(host(hard).mean(0), probabilities, atol=0.015)
    soft = F.gumbel_softmax(ours.expand(4, 3), tau=0.5)
    assert numpy.allclose(host(soft).sum(1), 1.0) and (host(soft) > 0).all()
    soft.sum().backward()
    assert numpy.allclose(host(ours.grad), 0.0, atol=1e-12)
    ours.grad = None
    (F.gumbel_softmax(ours, hard=True) * agnostic.tensor([1.0, 0.0, 0.0], device=device)).sum().backward()
    assert numpy.abs(host(ours.grad)).sum() > 0
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(ours, eps=1e-5)
