"""Padding layers, Unflatten, ParameterList/ParameterDict, RMSNorm, Bilinear, AlphaDropout/FeatureAlphaDropout, the
orthogonal/eye/dirac/sparse initializers, LPPool and MaxUnpool: values and gradients against NumPy and PyTorch, reprs,
errors."""

import math
import re
import warnings

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck
from agnostic.nn import lp_pooling, padding, unpooling

RNG = numpy.random.default_rng(11)

PAD_MODES = {"Zero": "constant", "Constant": "constant", "Reflection": "reflect", "Replication": "edge",
             "Circular": "wrap"}


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


def pad_layer(kind, dims, amount, library=None):
    name = f"{kind}Pad{dims}d"
    cls = getattr(library.nn, name) if library is not None else getattr(padding, name)
    return cls(amount, 1.5) if kind == "Constant" else cls(amount)


def numpy_pad(array, kind, amounts):
    """NumPy's np.pad with F.pad's ``(last_before, last_after, previous_before, ...)`` amounts."""
    widths = [(0, 0)] * (array.ndim - len(amounts) // 2)
    widths += [(amounts[2 * i], amounts[2 * i + 1]) for i in reversed(range(len(amounts) // 2))]
    extra = {"constant_values": 1.5} if kind == "Constant" else {}
    return numpy.pad(array, widths, mode=PAD_MODES[kind], **extra)


# ----- padding ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(PAD_MODES))
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("batched", [True, False])
def test_padding_layers_match_numpy_pad_and_pytorch(device, kind, dims, batched):
    shape = (2,) * batched + (3,) + (5, 4, 6)[:dims]
    amounts = (2, 1, 0, 3, 1, 2)[:2 * dims]
    x = RNG.standard_normal(shape)
    layer = pad_layer(kind, dims, amounts)
    out = layer(make(x, device, requires_grad=True))
    numpy.testing.assert_allclose(host(out), numpy_pad(x, kind, amounts))
    torch = pytest.importorskip("torch")
    grad = RNG.standard_normal(out.shape)
    tx = torch.tensor(x, requires_grad=True)
    expected = pad_layer(kind, dims, amounts, torch)(tx)
    expected.backward(torch.tensor(grad))
    ax = make(x, device, requires_grad=True)
    layer(ax).backward(make(grad, device))
    numpy.testing.assert_allclose(host(out), expected.detach().numpy())
    # A padded border's gradient sums several terms of order 1, on CUDA in no fixed order (atomic adds): where they
    # cancel, the sum is right to a few float64 ulps of the terms, not of the (small) sum.
    numpy.testing.assert_allclose(host(ax.grad), tx.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert repr(layer) == repr(pad_layer(kind, dims, amounts, torch))


@pytest.mark.parametrize("kind", ["Reflection", "Replication", "Circular", "Zero"])
def test_padding_gradcheck(device, kind):
    x = make(RNG.standard_normal((1, 2, 3, 4)), device, requires_grad=True)
    assert gradcheck(pad_layer(kind, 2, (1, 2, 2, 1)), (x,))


def test_padding_takes_an_int_for_every_side_and_reprs_as_pytorch():
    assert padding.ZeroPad2d(2).padding == (2, 2, 2, 2)
    assert padding.ReflectionPad1d(3).padding == (3, 3)
    assert padding.CircularPad3d(1).padding == (1,) * 6
    assert repr(padding.ConstantPad2d(1, 3.5)) == "ConstantPad2d(padding=(1, 1, 1, 1), value=3.5)"
    assert repr(padding.ZeroPad2d((1, 2, 3, 4))) == "ZeroPad2d((1, 2, 3, 4))"
    assert repr(padding.ReplicationPad1d(2)) == "ReplicationPad1d((2, 2))"
    assert isinstance(padding.ZeroPad3d(1), padding.ConstantPad3d)
    assert padding.ZeroPad1d(1).value == 0.0


def test_circular_padding_refuses_inputs_of_the_wrong_rank(device):
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        padding.CircularPad2d(1)(agnostic.zeros(2, 2, device=device))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        padding.CircularPad1d(1)(agnostic.zeros(1, 1, 2, 2, device=device))


def test_reflection_padding_as_wide_as_the_input_is_refused(device):
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        padding.ReflectionPad1d(3)(agnostic.zeros(1, 1, 3, device=device))


@pytest.mark.parametrize("amounts, expected", [((-1, 2), [1, 2, 3, 4, 1, 2]), ((2, -1), [2, 3, 0, 1, 2, 3]),
                                               ((-2, -1), [2, 3]), ((5, 0), [0, 1, 2, 3, 4, 0, 1, 2, 3, 4])])
def test_circular_pad_crops_a_negative_side_before_wrapping(device, amounts, expected):
    x = agnostic.arange(5.0, device=device).reshape(1, 1, 5)
    assert F.pad(x, amounts, mode="circular").flatten().tolist() == expected


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_negative_padding_of_every_mode_matches_pytorch(device, mode):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 3, 6, 5))
    amounts = (-1, 2, 3, -2)
    grad = RNG.standard_normal(torch.nn.functional.pad(torch.tensor(x), amounts, mode=mode).shape)
    tx = torch.tensor(x, requires_grad=True)
    torch.nn.functional.pad(tx, amounts, mode=mode).backward(torch.tensor(grad))
    ax = make(x, device, requires_grad=True)
    out = F.pad(ax, amounts, mode=mode)
    out.backward(make(grad, device))
    numpy.testing.assert_allclose(host(out), torch.nn.functional.pad(torch.tensor(x), amounts, mode=mode).numpy())
    numpy.testing.assert_allclose(host(ax.grad), tx.grad.numpy(), rtol=1e-12)


# ----- Unflatten ----------------------------------------------------------------------------------------------------

def test_unflatten_splits_one_dimension_and_passes_gradients(device):
    layer = nn.Unflatten(1, (2, -1))
    x = make(numpy.arange(24.0).reshape(2, 12), device, requires_grad=True)
    out = layer(x)
    assert out.shape == (2, 2, 6)
    numpy.testing.assert_array_equal(host(out), numpy.arange(24.0).reshape(2, 2, 6))
    (out * make(numpy.arange(24.0).reshape(2, 2, 6), device)).sum().backward()
    numpy.testing.assert_array_equal(host(x.grad), numpy.arange(24.0).reshape(2, 12))
    assert nn.Unflatten(-1, [3, 4])(agnostic.zeros(5, 12, device=device)).shape == (5, 3, 4)
    assert repr(layer) == "Unflatten(dim=1, unflattened_size=(2, -1))"


def test_unflatten_refuses_sizes_that_are_not_ints_as_pytorch():
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints, but found type int"):
        nn.Unflatten(1, 4)
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints, but found element of type float at "
                                        "pos 1"):
        nn.Unflatten(1, (2, 2.0))
    with pytest.raises(RuntimeError):
        nn.Unflatten(1, (4, 4))(agnostic.zeros(2, 6))


def test_unflatten_matches_pytorch_repr_and_errors():
    torch = pytest.importorskip("torch")
    assert repr(nn.Unflatten(1, (2, 5))) == repr(torch.nn.Unflatten(1, (2, 5)))
    for bad in (4, (2, "a")):
        with pytest.raises(TypeError) as ours:
            nn.Unflatten(0, bad)
        with pytest.raises(TypeError) as theirs:
            torch.nn.Unflatten(0, bad)
        assert str(ours.value) == str(theirs.value)


# ----- ParameterList / ParameterDict --------------------------------------------------------------------------------

def test_parameter_list_registers_tensors_as_parameters(device):
    params = nn.ParameterList([nn.Parameter(agnostic.zeros(2, 3, device=device)), agnostic.ones(4, device=device)])
    params.append(agnostic.full((2,), 3.0, device=device)).extend([agnostic.zeros(1, device=device)])
    params += [agnostic.zeros(5, device=device)]
    assert len(params) == 5
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert list(params.state_dict()) == ["0", "1", "2", "3", "4"]
    assert len(list(params.parameters())) == 5
    assert params[-3].tolist() == [3.0, 3.0]
    sliced = params[1:4:2]
    assert type(sliced) is nn.ParameterList and len(sliced) == 2 and sliced[0] is params[1]
    params[0] = agnostic.ones(1, device=device)
    assert isinstance(params[0], nn.Parameter) and params[0].tolist() == [1.0]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        params[5]
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        params.extend(agnostic.zeros(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        params(1)
    assert "0" not in dir(params)


def test_parameter_list_inside_a_module_trains_and_loads(device):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([agnostic.ones(2, device=device) for _ in range(2)])

        def forward(self, x):
            return x * self.scales[0] * self.scales[1]

    model = Model()
    assert list(model.state_dict()) == ["scales.0", "scales.1"]
    model(agnostic.full((2,), 3.0, device=device)).sum().backward()
    assert model.scales[0].grad.tolist() == [3.0, 3.0]
    other = Model()
    other.load_state_dict({"scales.0": agnostic.zeros(2), "scales.1": agnostic.full((2,), 2.0)})
    assert other.scales[1].tolist() == [2.0, 2.0] and other.scales[1].device == agnostic.device(device)


def test_parameter_dict_behaves_as_an_ordered_dict_of_parameters(device):
    params = nn.ParameterDict({"b": agnostic.zeros(2, device=device),
                               "a": nn.Parameter(agnostic.ones(3, device=device))})
    assert list(params) == ["a", "b"]  # a plain dict is added in sorted order, as PyTorch
    params.update([("c", agnostic.zeros(1, device=device))])
    params["d"] = agnostic.zeros(1, device=device)
    assert list(params.keys()) == ["a", "b", "c", "d"] and list(params.state_dict()) == ["a", "b", "c", "d"]
    assert all(isinstance(v, nn.Parameter) for v in params.values())
    assert "c" in params and params.get("missing", 7) == 7
    assert params.pop("c").shape == (1,) and "c" not in params
    assert params.popitem()[0] == "d"
    assert params.setdefault("e", agnostic.ones(2, device=device)).tolist() == [1.0, 1.0]
    merged = params | nn.ParameterDict({"z": agnostic.zeros(1, device=device)})
    assert list(merged) == ["a", "b", "e", "z"] and list(params) == ["a", "b", "e"]
    assert list(reversed(params)) == ["e", "b", "a"]
    del params["a"]
    assert len(params) == 2 and len(list(params.parameters())) == 2
    with pytest.raises(TypeError, match="not a string"):
        params[0]
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        params.update([("x", 1, 2)])
    with pytest.raises(TypeError, match="should be called with an iterable of key/value pairs, but got int"):
        params.update(3)
    params.clear()
    assert len(params) == 0 and list(params.parameters()) == []


def test_parameter_containers_repr_as_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.ParameterList([nn.Parameter(agnostic.zeros(2, 3)), agnostic.ones(2, dtype=agnostic.float64), "x"])
    theirs = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(2, 3)), torch.ones(2, dtype=torch.float64), "x"])
    assert repr(ours) == repr(theirs).replace("torch.", "agnostic.")
    ours = nn.ParameterDict({"w": agnostic.zeros(2), "v": agnostic.ones(3, 1, dtype=agnostic.float64)})
    theirs = torch.nn.ParameterDict({"w": torch.zeros(2), "v": torch.ones(3, 1, dtype=torch.float64)})
    assert repr(ours) == repr(theirs).replace("torch.", "agnostic.")
    assert repr(nn.ParameterList()) == "ParameterList()" and repr(nn.ParameterDict()) == "ParameterDict()"


# ----- RMSNorm ------------------------------------------------------------------------------------------------------

def numpy_rms_norm(x, dims, weight=None, eps=None):
    eps = numpy.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - dims, x.ndim))
    out = x / numpy.sqrt((x ** 2).mean(axis=axes, keepdims=True) + eps)
    return out if weight is None else out * weight


@pytest.mark.parametrize("shape, normalized", [((4, 5), (5,)), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("eps", [None, 1e-2])
def test_rms_norm_matches_numpy_and_pytorch(device, shape, normalized, eps):
    x = RNG.standard_normal(shape)
    weight = RNG.standard_normal(normalized)
    layer = nn.RMSNorm(list(normalized), eps=eps, dtype=agnostic.float64, device=device)
    with agnostic.no_grad():
        layer.weight.copy_(make(weight, device))
    ax = make(x, device, requires_grad=True)
    out = layer(ax)
    numpy.testing.assert_allclose(host(out), numpy_rms_norm(x, len(normalized), weight, eps), rtol=1e-12)
    torch = pytest.importorskip("torch")
    grad = RNG.standard_normal(shape)
    out.backward(make(grad, device))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(weight, requires_grad=True)
    torch.nn.functional.rms_norm(tx, list(normalized), tw, eps).backward(torch.tensor(grad))
    numpy.testing.assert_allclose(host(ax.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    numpy.testing.assert_allclose(host(layer.weight.grad), tw.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_rms_norm_gradcheck(device):
    x = make(RNG.standard_normal((3, 4)), device, requires_grad=True)
    weight = make(RNG.standard_normal(4), device, requires_grad=True)
    assert gradcheck(lambda a, w: F.rms_norm(a, (4,), w, 1e-3), (x, weight))


def test_rms_norm_computes_half_precision_in_float32_with_float32_epsilon(device):
    x = numpy.array([[1e-4, -2e-4, 0.0]], dtype=numpy.float16)
    out = F.rms_norm(make(x, device), [3])
    assert out.dtype == agnostic.float16
    expected = numpy_rms_norm(x.astype(numpy.float32), 1).astype(numpy.float16)
    numpy.testing.assert_allclose(host(out).astype(numpy.float32), expected.astype(numpy.float32), rtol=1e-3)


def test_rms_norm_layer_shape_repr_and_errors(device):
    layer = nn.RMSNorm(3, device=device)
    assert list(layer.state_dict()) == ["weight"] and layer.weight.tolist() == [1.0, 1.0, 1.0]
    assert repr(layer) == "RMSNorm((3,), eps=None, elementwise_affine=True)"
    bare = nn.RMSNorm([2, 3], eps=1e-3, elementwise_affine=False)
    assert bare.weight is None and list(bare.parameters()) == []
    assert repr(bare) == "RMSNorm((2, 3), eps=0.001, elementwise_affine=False)"
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.rms_norm(agnostic.zeros(2, 3, device=device), (4,))
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.rms_norm(agnostic.zeros(2, 3, device=device), (3,), agnostic.ones(2, device=device))


# ----- Bilinear -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_bilinear_matches_einsum_and_pytorch(device, batch):
    x1, x2 = RNG.standard_normal(batch + (3,)), RNG.standard_normal(batch + (2,))
    weight, bias = RNG.standard_normal((5, 3, 2)), RNG.standard_normal(5)
    a1, a2, aw, ab = (make(v, device, requires_grad=True) for v in (x1, x2, weight, bias))
    out = F.bilinear(a1, a2, aw, ab)
    numpy.testing.assert_allclose(host(out), numpy.einsum("...i,oij,...j->...o", x1, weight, x2) + bias,
                                  rtol=1e-12)
    torch = pytest.importorskip("torch")
    grad = RNG.standard_normal(out.shape)
    out.backward(make(grad, device))
    t1, t2, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x1, x2, weight, bias))
    torch.nn.functional.bilinear(t1, t2, tw, tb).backward(torch.tensor(grad))
    for ours, theirs in ((a1, t1), (a2, t2), (aw, tw), (ab, tb)):
        numpy.testing.assert_allclose(host(ours.grad), theirs.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_bilinear_gradcheck(device):
    inputs = [make(RNG.standard_normal(shape), device, requires_grad=True)
              for shape in ((2, 3), (2, 4), (2, 3, 4), (2,))]
    assert gradcheck(F.bilinear, tuple(inputs))


def test_bilinear_layer_initialization_and_repr(device):
    agnostic.manual_seed(0)
    layer = nn.Bilinear(16, 3, 4, device=device)
    assert layer.weight.shape == (4, 16, 3) and layer.bias.shape == (4,)
    assert float(layer.weight.abs().max()) <= 0.25 and float(layer.bias.abs().max()) <= 0.25
    assert float(layer.weight.abs().max()) > 0.2
    assert repr(layer) == "Bilinear(in1_features=16, in2_features=3, out_features=4, bias=True)"
    assert nn.Bilinear(2, 2, 1, bias=False).bias is None
    assert layer(agnostic.ones(7, 16, device=device), agnostic.ones(7, 3, device=device)).shape == (7, 4)


def test_bilinear_errors_match_pytorch():
    cases = [((2, 3), (3, 4), (5, 3, 4), None), ((2, 3), (2, 4), (5, 3, 5), None), ((2, 3), (2, 4), (5, 4, 4), None),
             ((2, 3), (2, 4), (5, 3, 4), (4,)), ((2, 3), (2, 2, 4), (5, 3, 4), None)]
    torch = pytest.importorskip("torch")
    for s1, s2, sw, sb in cases:
        args = [numpy.zeros(s) for s in (s1, s2, sw)] + [None if sb is None else numpy.zeros(sb)]
        with pytest.raises(RuntimeError) as ours:
            F.bilinear(*(None if a is None else agnostic.tensor(a) for a in args))
        with pytest.raises(RuntimeError) as theirs:
            torch.nn.functional.bilinear(*(None if a is None else torch.tensor(a) for a in args))
        assert str(ours.value) == str(theirs.value)


# ----- AlphaDropout / FeatureAlphaDropout ---------------------------------------------------------------------------

ALPHA = 1.7580993408473766


def alpha_affine(p):
    scale = 1 / math.sqrt((ALPHA ** 2 * p + 1) * (1 - p))
    return scale, ALPHA * scale * p, -ALPHA * scale * (1 - p)  # scale, shift of kept, value of dropped (x = 0)


def test_alpha_dropout_keeps_mean_and_variance(device):
    agnostic.manual_seed(3)
    x = agnostic.randn(200000, device=device, dtype=agnostic.float64)
    for p in (0.1, 0.5):
        out = host(F.alpha_dropout(x, p, training=True))
        assert abs(out.mean()) < 0.01 and abs(out.var() - 1) < 0.02


def test_alpha_dropout_sends_each_element_to_one_of_two_affine_values(device):
    p = 0.3
    scale, shift, dropped = alpha_affine(p)
    x = RNG.standard_normal(5000)
    ax = make(x, device, requires_grad=True)
    out = F.alpha_dropout(ax, p, training=True)
    kept = numpy.isclose(host(out), x * scale + shift, rtol=1e-12)
    assert numpy.all(kept | numpy.isclose(host(out), dropped, rtol=1e-12))
    assert abs(kept.mean() - (1 - p)) < 0.03
    out.sum().backward()
    numpy.testing.assert_allclose(host(ax.grad), numpy.where(kept, scale, 0.0), rtol=1e-12)


def test_alpha_dropout_is_reproducible_with_manual_seed(device):
    x = agnostic.randn(64, device=device)
    agnostic.manual_seed(5)
    first = F.alpha_dropout(x, 0.5, training=True)
    agnostic.manual_seed(5)
    assert agnostic.equal(first, F.alpha_dropout(x, 0.5, training=True))


def test_alpha_dropout_modes_and_edge_probabilities(device):
    x = agnostic.randn(3, 4, device=device)
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False, as PyTorch's
    assert F.alpha_dropout(x, 0.0, training=True) is x
    assert host(F.alpha_dropout(x, 1.0, training=True)).tolist() == [[0.0] * 4] * 3
    layer = nn.AlphaDropout(0.4)
    assert repr(layer) == "AlphaDropout(p=0.4, inplace=False)"
    assert agnostic.equal(layer.eval()(x), x)
    assert not agnostic.equal(layer.train()(x), x)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.alpha_dropout(x, 1.5, training=True)
    y = x.clone()
    agnostic.manual_seed(2)
    returned = F.alpha_dropout(y, 0.5, training=True, inplace=True)
    agnostic.manual_seed(2)
    assert returned is y and agnostic.equal(y, F.alpha_dropout(x, 0.5, training=True))


def test_feature_alpha_dropout_draws_once_per_channel(device):
    p = 0.5
    scale, shift, dropped = alpha_affine(p)
    x = agnostic.zeros(8, 6, 3, 2, device=device, dtype=agnostic.float64)
    agnostic.manual_seed(1)
    out = host(nn.FeatureAlphaDropout(p)(x))
    assert numpy.all(out == out[:, :, :1, :1])  # one value per (sample, channel)
    values = numpy.unique(numpy.round(out, 12))
    numpy.testing.assert_allclose(values, sorted([dropped, shift]), rtol=1e-12)
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        F.feature_alpha_dropout(agnostic.zeros(3, device=device), 0.5, training=True)
    assert repr(nn.FeatureAlphaDropout()) == "FeatureAlphaDropout(p=0.5, inplace=False)"


# ----- init ---------------------------------------------------------------------------------------------------------

def test_eye_and_dirac_fill_as_pytorch(device):
    numpy.testing.assert_array_equal(host(nn.init.eye_(agnostic.empty(2, 4, device=device))), numpy.eye(2, 4))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.eye_(agnostic.empty(2, 2, 2))
    torch = pytest.importorskip("torch")
    for shape, groups in (((4, 2, 3), 1), ((6, 2, 3, 3), 2), ((4, 3, 1, 2, 3), 2), ((2, 5, 3), 1)):
        ours = nn.init.dirac_(agnostic.empty(shape, device=device), groups)
        numpy.testing.assert_array_equal(host(ours), torch.nn.init.dirac_(torch.empty(shape), groups).numpy())
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        nn.init.dirac_(agnostic.empty(3, 2, 3), groups=2)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        nn.init.dirac_(agnostic.empty(3, 2))


def test_a_dirac_weight_makes_the_convolution_the_identity(device):
    weight = nn.init.dirac_(agnostic.empty(3, 3, 3, 3, device=device, dtype=agnostic.float64))
    x = make(RNG.standard_normal((2, 3, 5, 5)), device)
    numpy.testing.assert_allclose(host(F.conv2d(x, weight, padding=1)), host(x), atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(device, shape):
    agnostic.manual_seed(0)
    weight = nn.init.orthogonal_(agnostic.empty(shape, device=device, dtype=agnostic.float64), gain=2.0)
    matrix = host(weight).reshape(shape[0], -1)
    gram = matrix @ matrix.T if matrix.shape[0] <= matrix.shape[1] else matrix.T @ matrix
    numpy.testing.assert_allclose(gram, 4.0 * numpy.eye(min(matrix.shape)), atol=1e-10)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        nn.init.orthogonal_(agnostic.empty(3))


def test_sparse_zeroes_the_same_number_of_entries_in_every_column(device):
    agnostic.manual_seed(0)
    weight = host(nn.init.sparse_(agnostic.empty(10, 6, device=device), sparsity=0.25, std=0.5))
    assert ((weight == 0).sum(axis=0) == 3).all()  # ceil(0.25 * 10)
    assert 0.2 < weight[weight != 0].std() < 1.0
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        nn.init.sparse_(agnostic.empty(2, 2, 2), 0.5)


def test_deprecated_initializer_names_warn_as_pytorch():
    torch = pytest.importorskip("torch")
    names = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
             "kaiming_normal", "orthogonal", "sparse"]
    assert all(hasattr(torch.nn.init, name) for name in names)
    for name in names:
        args = {"constant": (agnostic.empty(2, 2), 0.5), "sparse": (agnostic.empty(2, 2), 0.5),
                "dirac": (agnostic.empty(2, 2, 3),)}.get(name, (agnostic.empty(2, 2),))
        with pytest.warns(FutureWarning, match=rf"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
            assert getattr(nn.init, name)(*args) is args[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.init.eye_(agnostic.empty(2, 2))


# ----- LPPool / MaxUnpool -------------------------------------------------------------------------------------------

def numpy_lp_pool1d(x, p, kernel, stride):
    starts = range(0, x.shape[-1] - kernel + 1, stride)
    return numpy.stack([(x[..., s:s + kernel] ** p).sum(-1) ** (1 / p) for s in starts], axis=-1)


@pytest.mark.parametrize("p, stride", [(2, None), (3.0, 1), (1, 2)])
def test_lp_pool1d_matches_the_window_norm_and_pytorch(device, p, stride):
    x = numpy.abs(RNG.standard_normal((2, 3, 7))) + 0.1
    layer = lp_pooling.LPPool1d(p, 3, stride=stride)
    ax = make(x, device, requires_grad=True)
    out = layer(ax)
    numpy.testing.assert_allclose(host(out), numpy_lp_pool1d(x, p, 3, stride or 3), rtol=1e-10)
    torch = pytest.importorskip("torch")
    tx = torch.tensor(x, requires_grad=True)
    expected = torch.nn.LPPool1d(p, 3, stride=stride)(tx)
    grad = RNG.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(grad))
    out.backward(make(grad, device))
    numpy.testing.assert_allclose(host(ax.grad), tx.grad.numpy(), rtol=1e-10)
    assert repr(layer) == repr(torch.nn.LPPool1d(p, 3, stride=stride))


def test_lp_pool2d_matches_pytorch_including_ceil_mode_and_unbatched(device):
    torch = pytest.importorskip("torch")
    for shape, kwargs in (((2, 3, 5, 6), {}), ((3, 5, 5), {"stride": 2, "ceil_mode": True})):
        x = RNG.standard_normal(shape)
        tx = torch.tensor(x, requires_grad=True)
        expected = torch.nn.functional.lp_pool2d(tx, 2, (2, 3), **kwargs)
        grad = RNG.standard_normal(tuple(expected.shape))
        expected.backward(torch.tensor(grad))
        ax = make(x, device, requires_grad=True)
        out = lp_pooling.LPPool2d(2, (2, 3), **kwargs)(ax)
        out.backward(make(grad, device))
        numpy.testing.assert_allclose(host(out), expected.detach().numpy(), rtol=1e-10)
        numpy.testing.assert_allclose(host(ax.grad), tx.grad.numpy(), rtol=1e-10)


def test_lp_pool_special_norms_and_gradcheck(device):
    from agnostic.nn.functional import _lp_pooling
    x = make(numpy.array([[[1.0, -4.0, 2.0, 0.5]]]), device, requires_grad=True)
    assert _lp_pooling.lp_pool1d(x, math.inf, 2).tolist() == [[[4.0, 2.0]]]
    assert _lp_pooling.lp_pool1d(x, -math.inf, 2).tolist() == [[[1.0, 0.5]]]
    with pytest.raises(ValueError, match="norm_type must be a non-zero value, but got 0"):
        _lp_pooling.lp_pool1d(x, 0, 2)
    positive = make(numpy.abs(RNG.standard_normal((1, 2, 4, 4))) + 0.5, device, requires_grad=True)
    assert gradcheck(lambda t: _lp_pooling.lp_pool2d(t, 3, 2), (positive,))


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("batched", [True, False])
def test_max_unpool_puts_maxima_back_as_pytorch(device, dims, batched):
    torch = pytest.importorskip("torch")
    shape = (2,) * batched + (3,) + (6, 5)[:dims]
    x = RNG.standard_normal(shape)
    pool = getattr(torch.nn, f"MaxPool{dims}d")(2, stride=2, return_indices=True)
    unpool_args = dict(kernel_size=2, stride=2)
    t_pooled, t_indices = pool(torch.tensor(x))
    t_pooled.requires_grad_()
    t_size = list(shape[-dims:])
    expected = getattr(torch.nn, f"MaxUnpool{dims}d")(**unpool_args)(t_pooled, t_indices, output_size=t_size)
    grad = RNG.standard_normal(tuple(expected.shape))
    expected.backward(torch.tensor(grad))
    pooled = make(t_pooled.detach().numpy(), device, requires_grad=True)
    indices = make(t_indices.numpy(), device)
    layer = getattr(unpooling, f"MaxUnpool{dims}d")(**unpool_args)
    out = layer(pooled, indices, output_size=t_size)
    assert out.shape == tuple(shape)
    numpy.testing.assert_array_equal(host(out), expected.detach().numpy())
    out.backward(make(grad, device))
    numpy.testing.assert_array_equal(host(pooled.grad), t_pooled.grad.numpy())
    assert repr(layer) == repr(getattr(torch.nn, f"MaxUnpool{dims}d")(**unpool_args))


def test_max_unpool_round_trip_keeps_only_the_maxima(device):
    x = make(numpy.array([[[[1.0, 5.0, 2.0, 0.0], [3.0, 4.0, 8.0, 7.0]]]]), device)
    pooled, indices = F.max_pool2d(x, 2, return_indices=True)
    restored = unpooling.MaxUnpool2d(2)(pooled, indices)
    assert restored.tolist() == [[[[0.0, 5.0, 0.0, 0.0], [0.0, 0.0, 8.0, 0.0]]]]


def test_max_unpool_errors_match_pytorch():
    torch = pytest.importorskip("torch")
    from agnostic.nn.functional import _unpooling
    x = numpy.arange(16.0).reshape(1, 1, 4, 4)
    t_pooled, t_indices = torch.nn.functional.max_pool2d(torch.tensor(x), 2, return_indices=True)
    pooled, indices = agnostic.tensor(t_pooled.numpy()), agnostic.tensor(t_indices.numpy())
    cases = [((indices * 10, 2), {}), ((indices[..., :1], 2), {}), ((indices, 2), {"output_size": [7, 4]}),
             ((indices, 2), {"output_size": [1, 2, 3]})]
    for (idx, kernel), kwargs in cases:
        t_idx = torch.tensor(idx.numpy())
        with pytest.raises(Exception) as theirs:
            torch.nn.functional.max_unpool2d(t_pooled, t_idx, kernel, **kwargs)
        with pytest.raises(type(theirs.value)) as ours:
            _unpooling.max_unpool2d(pooled, idx, kernel, **kwargs)
        # which invalid index PyTorch names depends on its threads: compare the messages without it
        ours_text, theirs_text = (re.sub(r"index: \d+", "index: N", str(e.value)) for e in (ours, theirs))
        assert ours_text == theirs_text
    with pytest.raises(RuntimeError, match="indices should be type int64"):
        _unpooling.max_unpool2d(pooled, indices.float(), 2)
