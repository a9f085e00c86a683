"""Convolution layers and functionals, 1-D to 3-D, plain and transposed: values against direct NumPy loops and
PyTorch, input and weight gradients (gradcheck in float64, and against PyTorch), layer construction and reprs."""

import itertools

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(11)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


def randn(*shape):
    return RNG.standard_normal(shape)


def conv_reference(x, w, b, stride, pads, dilation, groups):
    """Direct loops over output positions for any number of spatial dimensions; ``pads`` is (before, after) per
    dimension."""
    dims = x.ndim - 2
    x = numpy.pad(x, [(0, 0), (0, 0)] + [(pads[2 * i], pads[2 * i + 1]) for i in range(dims)])
    n, c = x.shape[:2]
    out_channels, per_group = w.shape[:2]
    kernel = w.shape[2:]
    output = [(x.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(dims)]
    out = numpy.zeros((n, out_channels, *output))
    per_out = out_channels // groups
    for o in range(out_channels):
        g = o // per_out
        for position in itertools.product(*map(range, output)):
            window = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                           for p, s, d, k in zip(position, stride, dilation, kernel))
            patch = x[(slice(None), slice(g * per_group, (g + 1) * per_group)) + window]
            out[(slice(None), o) + position] = (patch * w[o]).reshape(n, -1).sum(1)
        if b is not None:
            out[:, o] += b[o]
    return out


def conv_transpose_reference(x, w, b, stride, padding, output_padding, groups, dilation):
    """Each input value scatters a weight-scaled kernel into the output (then the padding is cropped)."""
    dims = x.ndim - 2
    n, c = x.shape[:2]
    per_out = w.shape[1]
    kernel = w.shape[2:]
    full = [(x.shape[2 + i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 + output_padding[i]
            for i in range(dims)]
    out = numpy.zeros((n, per_out * groups, *full))
    per_in = c // groups
    for ci in range(c):
        g = ci // per_in
        for position in itertools.product(*[range(s) for s in x.shape[2:]]):
            window = tuple(slice(p * s, p * s + d * (k - 1) + 1, d)
                           for p, s, d, k in zip(position, stride, dilation, kernel))
            value = x[(slice(None), ci) + position].reshape((n,) + (1,) * (dims + 1))
            out[(slice(None), slice(g * per_out, (g + 1) * per_out)) + window] += value * w[ci][None]
    crop = tuple(slice(p, size - p) for p, size in zip(padding, full))
    out = out[(slice(None), slice(None)) + crop]
    if b is not None:
        out += b.reshape((1, -1) + (1,) * dims)
    return out


def expand(value, dims):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


def same_pads(kernel, dilation):
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads += [total // 2, total - total // 2]
    return tuple(pads)


def compare_with_torch(agnostic_fn, torch_fn, arrays, device, atol=1e-10):
    """Same float64 inputs to both libraries: outputs and every input's gradient must agree."""
    torch = pytest.importorskip("torch")
    ours = [make(a, device, True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = agnostic_fn(*ours), torch_fn(*theirs)
    assert tuple(out.shape) == tuple(expected.shape)
    numpy.testing.assert_allclose(host(out), expected.detach().numpy(), atol=atol)
    grad = RNG.standard_normal(tuple(expected.shape))
    out.backward(make(grad, device))
    expected.backward(torch.tensor(grad))
    for mine, reference in zip(ours, theirs):
        numpy.testing.assert_allclose(host(mine.grad), reference.grad.numpy(), atol=atol)


# ----- functional convolution ------------------------------------------------------------------------------------

@pytest.mark.parametrize("stride, padding, dilation, groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (3, "valid", 1, 1), (1, "same", 2, 2), (1, "same", 1, 1),
])
def test_conv1d_matches_direct_loops(device, stride, padding, dilation, groups):
    x, w, b = randn(2, 4, 11), randn(6, 4 // groups, 4), randn(6)
    out = F.conv1d(make(x, device), make(w, device), make(b, device), stride, padding, dilation, groups)
    d = expand(dilation, 1)
    pads = same_pads((4,), d) if padding == "same" else (0, 0) if padding == "valid" else (padding, padding)
    expected = conv_reference(x, w, b, expand(stride, 1), pads, d, groups)
    assert out.shape == expected.shape
    numpy.testing.assert_allclose(host(out), expected, atol=1e-12)


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    (1, 0, 1, 1), ((1, 2, 1), (1, 0, 2), 1, 2), (2, 1, (2, 1, 1), 1), (1, "same", (1, 2, 1), 2),
])
def test_conv3d_matches_direct_loops(device, stride, padding, dilation, groups):
    x, w, b = randn(2, 4, 5, 6, 5), randn(4, 4 // groups, 2, 3, 2), randn(4)
    out = F.conv3d(make(x, device), make(w, device), make(b, device), stride, padding, dilation, groups)
    d = expand(dilation, 3)
    if padding == "same":
        pads = same_pads((2, 3, 2), d)
    else:
        pads = tuple(p for p in expand(padding, 3) for _ in range(2))
    expected = conv_reference(x, w, b, expand(stride, 3), pads, d, groups)
    assert out.shape == expected.shape
    numpy.testing.assert_allclose(host(out), expected, atol=1e-12)


def test_conv_hand_computed_values(device):
    signal = make([[[1.0, 2.0, 3.0, 4.0]]], device)
    assert host(F.conv1d(signal, make([[[1.0, -1.0]]], device))).tolist() == [[[-1.0, -1.0, -1.0]]]
    assert host(F.conv1d(signal, make([[[1.0, 1.0]]], device), padding=1, stride=2)).tolist() == [[[1.0, 5.0, 4.0]]]
    cube = make(numpy.arange(8.0).reshape(1, 1, 2, 2, 2), device)
    assert host(F.conv3d(cube, make(numpy.ones((1, 1, 2, 2, 2)), device))).item() == 28.0
    # a transposed convolution scatters each input value times the kernel: [1, 2] * [1, 10] overlapping by one
    out = F.conv_transpose1d(make([[[1.0, 2.0]]], device), make([[[1.0, 10.0]]], device))
    assert host(out).tolist() == [[[1.0, 12.0, 20.0]]]
    out = F.conv_transpose1d(make([[[1.0, 2.0]]], device), make([[[1.0, 10.0]]], device), stride=3)
    assert host(out).tolist() == [[[1.0, 10.0, 0.0, 2.0, 20.0]]]


def test_conv_unbatched_inputs(device):
    x, w = randn(3, 9), randn(2, 3, 3)
    out = F.conv1d(make(x, device), make(w, device))
    numpy.testing.assert_allclose(host(out), conv_reference(x[None], w, None, (1,), (0, 0), (1,), 1)[0])
    x3, w3 = randn(2, 3, 3, 3), randn(1, 2, 2, 2, 2)
    assert F.conv3d(make(x3, device), make(w3, device)).shape == (1, 2, 2, 2)
    assert F.conv_transpose2d(make(randn(2, 3, 3), device), make(randn(2, 1, 2, 2), device)).shape == (1, 4, 4)


@pytest.mark.parametrize("dims, stride, padding, output_padding, groups, dilation", [
    (1, 1, 0, 0, 1, 1), (1, 3, 2, 1, 2, 1), (1, 2, 1, 1, 1, 2),
    (2, 1, 0, 0, 1, 1), (2, (2, 3), (1, 0), (1, 2), 2, 1), (2, 2, 1, 1, 1, (2, 1)),
    (3, 2, (0, 1, 0), (1, 0, 1), 1, 1),
])
def test_conv_transpose_matches_scatter_loops(device, dims, stride, padding, output_padding, groups, dilation):
    spatial = (4, 3, 3)[:dims]
    x = randn(2, 4, *spatial)
    w = randn(4, 3, *(3, 2, 2)[:dims])
    b = randn(3 * groups)
    function = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[dims]
    out = function(make(x, device), make(w, device), make(b, device), stride, padding, output_padding, groups,
                   dilation)
    expected = conv_transpose_reference(x, w, b, expand(stride, dims), expand(padding, dims),
                                        expand(output_padding, dims), groups, expand(dilation, dims))
    assert out.shape == expected.shape
    numpy.testing.assert_allclose(host(out), expected, atol=1e-12)


def test_conv_transpose_is_the_adjoint_of_conv(device):
    """<conv(x), y> == <x, conv_transpose(y)> for the same weight, stride, padding and dilation."""
    x, w = randn(1, 2, 7, 6), randn(3, 2, 3, 2)
    y = randn(1, 3, 4, 3)
    forward = host(F.conv2d(make(x, device), make(w, device), stride=2, padding=1, dilation=(1, 2)))
    backward = host(F.conv_transpose2d(make(y, device), make(w, device), stride=2, padding=1, output_padding=(0, 1),
                                       dilation=(1, 2)))
    assert forward.shape == y.shape and backward.shape == x.shape
    numpy.testing.assert_allclose((forward * y).sum(), (x * backward).sum())


def test_conv_gradcheck_float64(device):
    x, w, b = make(randn(1, 2, 6), device, True), make(randn(4, 1, 3), device, True), make(randn(4), device, True)
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=1, groups=2), (x, w, b))
    x3, w3 = make(randn(1, 1, 3, 4, 3), device, True), make(randn(2, 1, 2, 2, 2), device, True)
    assert gradcheck(lambda x, w: F.conv3d(x, w, padding=(1, 0, 1), stride=(1, 2, 1)), (x3, w3))
    xt, wt, bt = make(randn(1, 2, 3, 2), device, True), make(randn(2, 2, 2, 3), device, True), make(randn(2), device,
                                                                                                   True)
    assert gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=(1, 0), output_padding=1),
                     (xt, wt, bt))


@pytest.mark.parametrize("name, args", [
    ("conv1d", dict(stride=2, padding=1, dilation=2, groups=2)),
    ("conv3d", dict(stride=(1, 2, 1), padding=(1, 0, 1), groups=2)),
    ("conv3d", dict(padding="same", dilation=(2, 1, 1))),
    ("conv_transpose1d", dict(stride=3, padding=2, output_padding=1, groups=2, dilation=1)),
    ("conv_transpose2d", dict(stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2)),
    ("conv_transpose3d", dict(stride=2, padding=1, output_padding=1)),
])
def test_conv_values_and_gradients_match_torch(device, name, args):
    dims = int(name[-2])
    spatial = (9, 6, 5)[:dims]
    x = randn(2, 4, *spatial)
    if name.startswith("conv_transpose"):
        w, b = randn(4, 3, *(3, 2, 3)[:dims]), randn(3 * args.get("groups", 1))
    else:
        w, b = randn(6, 4 // args.get("groups", 1), *(3, 2, 3)[:dims]), randn(6)
    torch = pytest.importorskip("torch")
    compare_with_torch(lambda x, w, b: getattr(F, name)(x, w, b, **args),
                       lambda x, w, b: getattr(torch.nn.functional, name)(x, w, b, **args), [x, w, b], device)


def test_conv_errors_name_the_problem(device):
    with pytest.raises(RuntimeError, match="Expected 2D \\(unbatched\\) or 3D \\(batched\\) input to conv1d"):
        F.conv1d(make(randn(1, 1, 2, 5), device), make(randn(1, 1, 2), device))
    with pytest.raises(RuntimeError, match="expected input\\[1, 3, 5\\] to have 2 channels"):
        F.conv1d(make(randn(1, 3, 5), device), make(randn(1, 2, 2), device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv3d(make(randn(1, 1, 2, 2, 2), device), make(randn(1, 1, 3, 1, 1), device))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(make(randn(1, 1, 2, 2), device), make(randn(1, 1, 2, 2), device), output_padding=1)
    with pytest.raises(RuntimeError, match="expected padding to be a single integer value or a list of 1 values"):
        F.conv1d(make(randn(1, 1, 5), device), make(randn(1, 1, 2), device), padding=(1, 1))
    with pytest.raises(RuntimeError, match="expected weight to be 4-dimensional"):
        F.conv_transpose2d(make(randn(1, 1, 2, 2), device), make(randn(1, 1, 2), device))


# ----- layers --------------------------------------------------------------------------------------------------

LAYER_CONFIGS = [
    ("Conv1d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 10)),
    ("Conv1d", (3, 2, 4), dict(padding="same", padding_mode="reflect", dilation=2), (2, 3, 9)),
    ("Conv1d", (3, 2, 3), dict(padding=2, padding_mode="circular", bias=False), (1, 3, 5)),
    ("Conv3d", (2, 4, (2, 3, 2)), dict(stride=(1, 2, 1), padding=(1, 1, 0)), (1, 2, 4, 6, 5)),
    ("Conv3d", (2, 2, 3), dict(padding=1, padding_mode="replicate", groups=2), (1, 2, 3, 4, 3)),
    ("ConvTranspose1d", (4, 2, 4), dict(stride=2, padding=1), (2, 4, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1), (1, 4, 3, 4)),
    ("ConvTranspose2d", (2, 3, (2, 3)), dict(dilation=(2, 1), bias=False), (2, 2, 3, 3)),
    ("ConvTranspose3d", (2, 2, 2), dict(stride=2), (1, 2, 2, 3, 2)),
]


@pytest.mark.parametrize("name, args, kwargs, shape", LAYER_CONFIGS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYER_CONFIGS)])
def test_conv_layers_match_torch_with_copied_weights(device, name, args, kwargs, shape):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs).to(device, agnostic.float64)
    assert repr(ours) == repr(theirs)
    assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    ours.load_state_dict({k: make(v.detach().numpy(), device) for k, v in theirs.state_dict().items()})
    x = randn(*shape)
    mine, reference = make(x, device, True), torch.tensor(x, requires_grad=True)
    out, expected = ours(mine), theirs(reference)
    numpy.testing.assert_allclose(host(out), expected.detach().numpy(), atol=1e-10)
    grad = randn(*expected.shape)
    out.backward(make(grad, device))
    expected.backward(torch.tensor(grad))
    numpy.testing.assert_allclose(host(mine.grad), reference.grad.numpy(), atol=1e-10)
    for (key, parameter), (_, their_parameter) in zip(ours.named_parameters(), theirs.named_parameters()):
        numpy.testing.assert_allclose(host(parameter.grad), their_parameter.grad.numpy(), atol=1e-10, err_msg=key)


def test_conv_layer_initialization_bounds(device):
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias alike."""
    agnostic.manual_seed(3)
    layer = nn.Conv3d(4, 8, 3).to(device)
    bound = 1 / numpy.sqrt(4 * 27)
    for parameter in (layer.weight, layer.bias):
        values = host(parameter)
        assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    transposed = nn.ConvTranspose2d(4, 6, 2, groups=2)
    assert transposed.weight.shape == (4, 3, 2, 2)
    assert numpy.abs(host(transposed.bias)).max() <= 1 / numpy.sqrt(3 * 4)


def test_conv_transpose_output_size_argument(device):
    layer = nn.ConvTranspose2d(2, 1, 3, stride=2, padding=1).to(device)
    x = make(randn(1, 2, 4, 4).astype(numpy.float32), device)
    assert layer(x).shape == (1, 1, 7, 7)
    assert layer(x, output_size=(8, 7)).shape == (1, 1, 8, 7)
    assert layer(x, output_size=[1, 1, 8, 8]).shape == (1, 1, 8, 8)
    with pytest.raises(ValueError, match="valid sizes range from 7 to 8"):
        layer(x, output_size=(9, 9))


def test_conv_layer_argument_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv1d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv3d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose1d'):
        nn.ConvTranspose1d(1, 1, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv1d(1, 1, 3, padding_mode="mirror")
