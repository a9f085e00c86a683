"""Normalization, pooling, upsampling, pixel-shuffle and embedding-bag layers and functionals: values against NumPy
references, hand-computed values and PyTorch (with copied weights and buffers), input and parameter gradients."""

import inspect
import itertools

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(5)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False):
    tensor = agnostic.tensor(numpy.asarray(array), device=device)
    return tensor.requires_grad_() if requires_grad else tensor


def randn(*shape):
    return RNG.standard_normal(shape)


def compare_with_torch(agnostic_fn, torch_fn, arrays, device, atol=1e-10, differentiable=None):
    """Same float64 inputs to both libraries: outputs (and a returned indices tensor) and gradients agree."""
    torch = pytest.importorskip("torch")
    differentiable = differentiable or [True] * len(arrays)
    ours = [make(a, device, d) for a, d in zip(arrays, differentiable)]
    theirs = [torch.tensor(a, requires_grad=d) for a, d in zip(arrays, differentiable)]
    out, expected = agnostic_fn(*ours), torch_fn(*theirs)
    if isinstance(expected, tuple):
        assert host(out[1]).tolist() == expected[1].numpy().tolist()
        out, expected = out[0], expected[0]
    assert tuple(out.shape) == tuple(expected.shape)
    numpy.testing.assert_allclose(host(out), expected.detach().numpy(), atol=atol)
    grad = RNG.standard_normal(tuple(expected.shape))
    out.backward(make(grad, device))
    expected.backward(torch.tensor(grad))
    for mine, reference, d in zip(ours, theirs, differentiable):
        if d:
            numpy.testing.assert_allclose(host(mine.grad), reference.grad.numpy(), atol=atol)


def compare_layer_with_torch(ours, theirs, shapes, device, atol=1e-10):
    """Copy torch's state into ours, run both over several batches (train, then eval), compare outputs, input and
    parameter gradients, and buffers after each step."""
    torch = pytest.importorskip("torch")
    ours.load_state_dict({k: make(v.detach().numpy(), device) for k, v in theirs.state_dict().items()})
    for shape in shapes:
        for module in (ours, theirs):
            module.zero_grad()
        x = randn(*shape) * 2 + 1
        mine, reference = make(x, device, True), torch.tensor(x, requires_grad=True)
        out, expected = ours(mine), theirs(reference)
        numpy.testing.assert_allclose(host(out), expected.detach().numpy(), atol=atol)
        grad = randn(*expected.shape)
        out.backward(make(grad, device))
        expected.backward(torch.tensor(grad))
        numpy.testing.assert_allclose(host(mine.grad), reference.grad.numpy(), atol=atol)
        for (key, parameter), (_, their_parameter) in zip(ours.named_parameters(), theirs.named_parameters()):
            numpy.testing.assert_allclose(host(parameter.grad), their_parameter.grad.numpy(), atol=atol, err_msg=key)
        for (key, buffer), (_, their_buffer) in zip(ours.named_buffers(), theirs.named_buffers()):
            numpy.testing.assert_allclose(host(buffer), their_buffer.numpy(), atol=atol, err_msg=key)
    if _torch_at_least(torch, 2, 14):  # PyTorch 2.14's norm layers print their bias= (2.11's didn't)
        assert repr(ours) == repr(theirs)


def _torch_at_least(torch, major, minor):
    return tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (major, minor)


# ----- normalization -----------------------------------------------------------------------------------------------

NORM_CONFIGS = [
    ("BatchNorm3d", (3,), dict(), [(2, 3, 2, 3, 2)] * 2),
    ("BatchNorm3d", (3,), dict(momentum=None), [(2, 3, 2, 2, 2)] * 3),
    ("BatchNorm1d", (3,), dict(momentum=None, affine=False), [(4, 3)] * 3),
    ("InstanceNorm1d", (3,), dict(), [(2, 3, 6)]),
    ("InstanceNorm1d", (3,), dict(affine=True, track_running_stats=True, momentum=0.3), [(2, 3, 6), (3, 3, 5)]),
    ("InstanceNorm2d", (3,), dict(affine=True), [(2, 3, 4, 5)]),
    ("InstanceNorm2d", (3,), dict(track_running_stats=True), [(2, 3, 4, 5), (3, 4, 4)]),
    ("InstanceNorm3d", (2,), dict(affine=True, bias=False), [(2, 2, 3, 2, 3)]),
    ("GroupNorm", (2, 4), dict(), [(3, 4, 5)]),
    ("GroupNorm", (3, 6), dict(affine=False), [(2, 6, 2, 2)]),
    ("GroupNorm", (1, 4), dict(bias=False), [(2, 4)]),
    ("LayerNorm", ((2, 3),), dict(bias=False), [(4, 2, 3)]),
    ("LocalResponseNorm", (3,), dict(alpha=0.1), [(2, 5, 3)]),
    ("LocalResponseNorm", (4,), dict(beta=0.5, k=2.0), [(2, 5, 3, 2)]),
]


@pytest.mark.parametrize("name, args, kwargs, shapes", NORM_CONFIGS,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(NORM_CONFIGS)])
def test_norm_layers_match_torch_in_train_and_eval(device, name, args, kwargs, shapes):
    torch = pytest.importorskip("torch")
    if "bias" in kwargs and "bias" not in inspect.signature(getattr(torch.nn, name)).parameters:
        pytest.skip(f"PyTorch {torch.__version__}'s {name} has no bias= (2.14's has): nothing to compare with")
    theirs = getattr(torch.nn, name)(*args, **kwargs).double()
    ours = getattr(nn, name)(*args, **kwargs).to(device, agnostic.float64)
    if ours.state_dict():
        for parameter in theirs.parameters():  # away from ones/zeros, so a swapped weight and bias would show
            parameter.data.uniform_(0.5, 1.5)
    compare_layer_with_torch(ours, theirs, shapes, device)
    ours.eval(), theirs.eval()
    compare_layer_with_torch(ours, theirs, shapes[:1], device)


def test_instance_norm_hand_computed_and_running_statistics(device):
    x = make([[[1.0, 3.0], [0.0, 10.0]]], device)
    assert numpy.allclose(host(F.instance_norm(x)), [[[-1.0, 1.0], [-1.0, 1.0]]], atol=1e-4)
    running_mean, running_var = make(numpy.zeros(2), device), make(numpy.ones(2), device)
    F.instance_norm(x.double(), running_mean, running_var, momentum=0.5)
    # per-instance means (2, 5); unbiased variances (2, 50): each moves half way from (0, 1)
    assert host(running_mean).tolist() == [1.0, 2.5] and host(running_var).tolist() == [1.5, 25.5]
    layer = nn.InstanceNorm1d(2)  # unbatched (C, L) input
    assert numpy.allclose(host(layer(make([[1.0, 3.0], [0.0, 10.0]], device))), [[-1, 1], [-1, 1]], atol=1e-4)


def test_group_norm_matches_numpy(device):
    x = randn(3, 6, 4)
    grouped = x.reshape(3, 2, -1)
    expected = ((grouped - grouped.mean(-1, keepdims=True)) / numpy.sqrt(grouped.var(-1, keepdims=True) + 1e-5))
    numpy.testing.assert_allclose(host(F.group_norm(make(x, device), 2)), expected.reshape(x.shape), atol=1e-12)
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(make(x, device), 4)
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)


def test_local_response_norm_hand_computed(device):
    x = make([[1.0, 2.0]], device).reshape(1, 2, 1)
    # size 2 averages channels (c-1, c): 1 / (1 + (0 + 1) / 2), 2 / (1 + (1 + 4) / 2)
    numpy.testing.assert_allclose(host(F.local_response_norm(x, 2, alpha=1.0, beta=1.0)).ravel(), [2 / 3, 2 / 3.5])


def test_norm_gradcheck_float64(device):
    x = make(randn(2, 4, 3), device, True)
    weight, bias = make(randn(4), device, True), make(randn(4), device, True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, weight, bias))
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (x, weight, bias))
    assert gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5), (x,))


# ----- pooling -----------------------------------------------------------------------------------------------------

def pool_reference(x, kernel, stride, padding, ceil_mode, kind, count_include_pad=True):
    """Direct loops over windows for any number of spatial dimensions (PyTorch's ceil_mode and divisor rules)."""
    dims = x.ndim - 2
    spatial = x.shape[2:]
    output = []
    for size, k, s, p in zip(spatial, kernel, stride, padding):
        out = (size + 2 * p - k + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= size + p:
            out -= 1
        output.append(out)
    result = numpy.zeros(x.shape[:2] + tuple(output))
    for position in itertools.product(*map(range, output)):
        starts = [o * s - p for o, s, p in zip(position, stride, padding)]
        ends = [min(b + k, size + p) for b, k, size, p in zip(starts, kernel, spatial, padding)]
        inside = tuple(slice(max(b, 0), min(e, size)) for b, e, size in zip(starts, ends, spatial))
        window = x[(slice(None), slice(None)) + inside].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            result[(slice(None), slice(None)) + position] = window.max(-1)
        else:
            count = numpy.prod([e - b for b, e in zip(starts, ends)]) if count_include_pad else window.shape[-1]
            result[(slice(None), slice(None)) + position] = window.sum(-1) / count
    assert dims == len(kernel)
    return result


@pytest.mark.parametrize("dims, kernel, stride, padding, ceil_mode", [
    (1, 2, None, 0, False), (1, 3, 2, 1, True), (3, 2, None, 0, False), (3, (3, 2, 2), (2, 1, 2), (1, 0, 1), True),
])
def test_pool_1d_3d_match_direct_loops(device, dims, kernel, stride, padding, ceil_mode):
    x = randn(2, 3, *(7, 5, 6)[:dims])
    expand = (lambda v: tuple(v) if isinstance(v, tuple) else (v,) * dims)
    k, p = expand(kernel), expand(padding)
    s = k if stride is None else expand(stride)
    max_pool = getattr(F, f"max_pool{dims}d")
    avg_pool = getattr(F, f"avg_pool{dims}d")
    numpy.testing.assert_allclose(host(max_pool(make(x, device), kernel, stride, padding, ceil_mode=ceil_mode)),
                                  pool_reference(x, k, s, p, ceil_mode, "max"))
    for include in (True, False):
        out = avg_pool(make(x, device), kernel, stride, padding, ceil_mode, include)
        numpy.testing.assert_allclose(host(out), pool_reference(x, k, s, p, ceil_mode, "avg", include), atol=1e-12)


def test_pool_hand_computed_values_and_indices(device):
    x = make([[[1.0, 5.0, 2.0, 0.0, 3.0]]], device)
    values, indices = F.max_pool1d(x, 2, return_indices=True)
    assert host(values).tolist() == [[[5.0, 2.0]]] and host(indices).tolist() == [[[1, 2]]]
    assert host(F.avg_pool1d(x, 2, ceil_mode=True)).tolist() == [[[3.0, 1.0, 3.0]]]
    cube = make(numpy.arange(8.0).reshape(1, 1, 2, 2, 2), device)
    values, indices = nn.MaxPool3d(2, return_indices=True)(cube)
    assert host(values).ravel().tolist() == [7.0] and host(indices).ravel().tolist() == [7]
    assert host(F.avg_pool3d(cube, 2, divisor_override=2)).ravel().tolist() == [14.0]
    assert host(nn.AdaptiveAvgPool1d(2)(make([[[1.0, 2.0, 3.0, 4.0, 5.0]]], device))).tolist() == [[[2.0, 4.0]]]
    values, indices = F.adaptive_max_pool1d(make([[[1.0, 7.0, 3.0, 4.0, 5.0]]], device), 2, return_indices=True)
    assert host(values).tolist() == [[[7.0, 5.0]]] and host(indices).tolist() == [[[1, 4]]]


POOL_CASES = [
    ("max_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True,
                                     return_indices=True)),
    ("max_pool3d", (2, 2, 5, 6, 7), dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=1, return_indices=True)),
    ("max_pool2d", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ("avg_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 3), padding=1, ceil_mode=True,
                                      count_include_pad=False)),
    ("avg_pool2d", (2, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, divisor_override=5)),
    ("avg_pool3d", (2, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("adaptive_avg_pool1d", (2, 3, 11), dict(output_size=4)),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), dict(output_size=(3, None))),
    ("adaptive_avg_pool2d", (3, 7, 9), dict(output_size=(4, 7))),
    ("adaptive_avg_pool3d", (1, 2, 5, 6, 7), dict(output_size=(2, 4, 3))),
    ("adaptive_max_pool1d", (2, 3, 11), dict(output_size=4, return_indices=True)),
    ("adaptive_max_pool2d", (2, 3, 7, 9), dict(output_size=(3, 5), return_indices=True)),
    ("adaptive_max_pool2d", (3, 7, 9), dict(output_size=(None, 4), return_indices=True)),
    ("adaptive_max_pool3d", (1, 2, 5, 6, 7), dict(output_size=(2, 4, 3), return_indices=True)),
]


@pytest.mark.parametrize("name, shape, kwargs", POOL_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(POOL_CASES)])
def test_pool_functionals_match_torch(device, name, shape, kwargs):
    torch = pytest.importorskip("torch")
    compare_with_torch(lambda x: getattr(F, name)(x, **kwargs),
                       lambda x: getattr(torch.nn.functional, name)(x, **kwargs), [randn(*shape)], device)


POOL_LAYERS = [
    ("MaxPool1d", (3,), dict(stride=2, return_indices=True)), ("MaxPool3d", (2,), dict()),
    ("AvgPool1d", (3,), dict(padding=1)), ("AvgPool3d", ((1, 2, 2),), dict(stride=1)),
    ("AdaptiveAvgPool1d", (3,), dict()), ("AdaptiveAvgPool2d", ((2, 3),), dict()), ("AdaptiveAvgPool3d", (2,), dict()),
    ("AdaptiveMaxPool1d", (3,), dict()), ("AdaptiveMaxPool2d", (3,), dict(return_indices=True)),
    ("AdaptiveMaxPool3d", ((1, 2, 3),), dict()),
]


@pytest.mark.parametrize("name, args, kwargs", POOL_LAYERS, ids=[c[0] for c in POOL_LAYERS])
def test_pool_layers_match_torch(device, name, args, kwargs):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    dims = 3 if "3d" in name else 2 if "2d" in name else 1
    compare_with_torch(ours, theirs, [randn(2, 2, *(6, 7, 5)[:dims])], device)


def test_pool_gradcheck_float64_and_errors(device):
    x = make(randn(1, 1, 3, 3, 4) / 3, device, True)
    assert gradcheck(lambda x: F.avg_pool3d(x, 2, stride=1, padding=1, count_include_pad=False), (x,))
    assert gradcheck(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 3)), (x,))
    assert gradcheck(lambda x: F.adaptive_max_pool3d(x, (3, 2, 3)), (x,))
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size"):
        F.max_pool1d(make(randn(1, 1, 5), device), 2, padding=2)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.avg_pool3d(make(randn(1, 1, 1, 4, 4), device), 2)
    with pytest.raises(RuntimeError, match="Expected 2D or 3D \\(batch mode\\) tensor"):
        F.max_pool1d(make(randn(5), device), 2)


# ----- upsampling and pixel shuffle ------------------------------------------------------------------------------

def test_interpolate_hand_computed_values(device):
    row = make([[[1.0, 2.0]]], device)
    assert host(F.interpolate(row, scale_factor=2)).tolist() == [[[1.0, 1.0, 2.0, 2.0]]]
    assert host(F.interpolate(row, size=4, mode="linear")).tolist() == [[[1.0, 1.25, 1.75, 2.0]]]
    assert host(F.interpolate(row, size=3, mode="linear", align_corners=True)).tolist() == [[[1.0, 1.5, 2.0]]]
    plane = make(numpy.array([[[[0.0, 2.0], [4.0, 6.0]]]]), device)
    corners = host(nn.UpsamplingBilinear2d(size=3)(plane))
    assert corners.tolist() == [[[[0.0, 1.0, 2.0], [2.0, 3.0, 4.0], [4.0, 5.0, 6.0]]]]
    assert host(F.interpolate(plane, size=(1, 1), mode="area")).item() == 3.0
    nearest = host(nn.UpsamplingNearest2d(scale_factor=2)(plane))
    assert nearest[0, 0].tolist() == numpy.kron([[0.0, 2.0], [4.0, 6.0]], numpy.ones((2, 2))).tolist()


INTERPOLATE_CASES = [
    (mode, dims, sizing, align)
    for mode, dims_list in [("nearest", (1, 2, 3)), ("nearest-exact", (1, 2)), ("linear", (1,)), ("bilinear", (2,)),
                            ("bicubic", (2,)), ("trilinear", (3,)), ("area", (1, 2))]
    for dims in dims_list
    for sizing in (dict(scale_factor=2), dict(scale_factor=0.6), dict(size=7), dict(scale_factor=1.7,
                                                                                      recompute_scale_factor=True))
    for align in ((None,) if mode in ("nearest", "nearest-exact", "area") else (False, True))
]


@pytest.mark.parametrize("mode, dims, sizing, align", INTERPOLATE_CASES)
def test_interpolate_matches_torch(device, mode, dims, sizing, align):
    torch = pytest.importorskip("torch")
    x = randn(2, 2, *(5, 4, 3)[:dims])
    compare_with_torch(lambda x: F.interpolate(x, mode=mode, align_corners=align, **sizing),
                       lambda x: torch.nn.functional.interpolate(x, mode=mode, align_corners=align, **sizing),
                       [x], device)


def test_upsample_layers_reprs_and_errors(device):
    torch = pytest.importorskip("torch")
    for ours, theirs in [(nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2)),
                         (nn.Upsample(size=(3, 4), mode="bilinear"), torch.nn.Upsample(size=(3, 4), mode="bilinear")),
                         (nn.UpsamplingBilinear2d(scale_factor=2), torch.nn.UpsamplingBilinear2d(scale_factor=2)),
                         (nn.PixelShuffle(2), torch.nn.PixelShuffle(2)),
                         (nn.PixelUnshuffle(3), torch.nn.PixelUnshuffle(3))]:
        assert repr(ours) == repr(theirs)
    x = make(randn(1, 1, 4), device)
    with pytest.raises(NotImplementedError, match="Got 3D input, but bilinear mode needs 4D input"):
        F.interpolate(x, scale_factor=2, mode="bilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, scale_factor=0.1)


def test_pixel_shuffle_round_trip_and_values(device):
    x = make(numpy.arange(4.0).reshape(1, 4, 1, 1), device)
    assert host(F.pixel_shuffle(x, 2)).tolist() == [[[[0.0, 1.0], [2.0, 3.0]]]]
    y = randn(2, 3, 8, 6, 9)
    shuffled = F.pixel_shuffle(make(y, device), 2)
    assert shuffled.shape == (2, 3, 2, 12, 18)
    numpy.testing.assert_array_equal(host(F.pixel_unshuffle(shuffled, 2)), y)
    compare_with_torch(lambda t: F.pixel_shuffle(t, 3), lambda t: pytest.importorskip("torch").pixel_shuffle(t, 3),
                       [randn(2, 9, 2, 3)], device)
    with pytest.raises(RuntimeError, match="input.size\\(-3\\)=5 is not divisible by 4"):
        F.pixel_shuffle(make(randn(1, 5, 2, 2), device), 2)
    with pytest.raises(RuntimeError, match="pixel_unshuffle expects height to be divisible by downscale_factor"):
        F.pixel_unshuffle(make(randn(1, 5, 3, 2), device), 2)


# ----- embedding and embedding bag -------------------------------------------------------------------------------

def test_embedding_padding_row_gets_no_gradient_and_max_norm(device):
    layer = nn.Embedding(5, 3, padding_idx=1).to(device, agnostic.float64)
    layer(make([[1, 2, 1], [3, 1, 4]], device)).sum().backward()
    grad = host(layer.weight.grad)
    assert grad[1].tolist() == [0.0, 0.0, 0.0] and grad[2].tolist() == [1.0, 1.0, 1.0]
    weight = make(numpy.array([[3.0, 4.0], [0.3, 0.4]]), device)
    out = F.embedding(make([0, 1], device), weight, max_norm=1.0)
    numpy.testing.assert_allclose(host(out), [[0.6, 0.8], [0.3, 0.4]], atol=1e-6)
    numpy.testing.assert_allclose(host(weight)[0], [0.6, 0.8], atol=1e-6)  # renormalized in place, as PyTorch
    frozen = nn.Embedding.from_pretrained(make(numpy.eye(3), device))
    assert not frozen.weight.requires_grad and host(frozen(make([2], device))).tolist() == [[0.0, 0.0, 1.0]]


def test_embedding_bag_hand_computed(device):
    weight = make([[1.0, 0.0], [0.0, 2.0], [4.0, 4.0]], device)
    indices, offsets = make([0, 1, 2, 2], device), make([0, 3], device)
    assert host(F.embedding_bag(indices, weight, offsets, mode="sum")).tolist() == [[5.0, 6.0], [4.0, 4.0]]
    assert host(F.embedding_bag(indices, weight, offsets, mode="max")).tolist() == [[4.0, 4.0], [4.0, 4.0]]
    mean = host(F.embedding_bag(indices, weight, make([0, 0, 2], device), mode="mean"))
    assert mean.tolist() == [[0.0, 0.0], [0.5, 1.0], [4.0, 4.0]]  # an empty bag gives zeros
    padded = F.embedding_bag(make([[0, 1], [2, 1]], device), weight, mode="mean", padding_idx=1)
    assert host(padded).tolist() == [[1.0, 0.0], [4.0, 4.0]]  # the padding index is not counted
    weighted = F.embedding_bag(indices, weight, offsets, mode="sum", per_sample_weights=make([1.0, 2.0, 0.5, 0.5],
                                                                                             device))
    assert host(weighted).tolist() == [[3.0, 6.0], [2.0, 2.0]]


EMBEDDING_BAG_CASES = [
    (mode, layout, extra)
    for mode in ("sum", "mean", "max")
    for layout in ("offsets", "2d", "last_offset")
    for extra in ({}, {"padding_idx": 4})
] + [("sum", "offsets", {"per_sample_weights": True}), ("sum", "2d", {"per_sample_weights": True, "padding_idx": 0}),
     ("mean", "2d", {"scale_grad_by_freq": True}), ("mean", "offsets", {"max_norm": 1.0})]


@pytest.mark.parametrize("mode, layout, extra", EMBEDDING_BAG_CASES)
def test_embedding_bag_matches_torch(device, mode, layout, extra):
    torch = pytest.importorskip("torch")
    if "scale_grad_by_freq" in extra and not _torch_at_least(torch, 2, 14):
        pytest.skip(f"PyTorch {torch.__version__} scales the mean's gradient by frequency otherwise than 2.14 (and "
                    "test_embedding_bag_scales_gradients_by_frequency by hand)")
    extra = dict(extra)
    weighted = extra.pop("per_sample_weights", False)
    if layout == "2d":
        indices, offsets = numpy.array([[1, 2, 4], [4, 6, 0]]), None
    else:
        indices, offsets = numpy.array([1, 2, 4, 4, 6, 0]), numpy.array([0, 0, 2, 5] + ([6] if layout == "last_offset"
                                                                                         else []))
        extra["include_last_offset"] = layout == "last_offset"
    arrays = [randn(7, 3)] + ([randn(*indices.shape)] if weighted else [])

    def ours(weight, *sample_weights):
        return F.embedding_bag(make(indices, device), weight, None if offsets is None else make(offsets, device),
                               mode=mode, per_sample_weights=sample_weights[0] if weighted else None, **extra)

    def theirs(weight, *sample_weights):
        return torch.nn.functional.embedding_bag(torch.tensor(indices), weight,
                                                 None if offsets is None else torch.tensor(offsets), mode=mode,
                                                 per_sample_weights=sample_weights[0] if weighted else None, **extra)

    compare_with_torch(ours, theirs, arrays, device)


def test_embedding_bag_scales_gradients_by_frequency(device):
    weight = make(numpy.zeros((7, 1)), device, True)
    bags = F.embedding_bag(make(numpy.array([[1, 2, 4], [4, 6, 0]]), device), weight, mode="mean",
                           scale_grad_by_freq=True)
    bags.backward(make(numpy.array([[3.0], [6.0]]), device))
    # each row's gradient: the mean's share of its bags' gradients (1/3 of 3 or 6), divided by how often it occurs
    assert host(weight.grad).ravel().tolist() == [2.0, 1.0, 1.0, 0.0, 1.5, 0.0, 2.0]


def test_embedding_bag_layer_and_errors(device):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=2, max_norm=1.0)
    ours = nn.EmbeddingBag(10, 3, mode="max", padding_idx=2, max_norm=1.0).to(device)
    assert repr(ours) == repr(theirs) and ours.weight.shape == (10, 3)
    assert host(ours.weight)[2].tolist() == [0.0, 0.0, 0.0]
    pretrained = nn.EmbeddingBag.from_pretrained(make([[1.0, 2.0], [3.0, 4.0]], device), mode="sum")
    assert host(pretrained(make([[0, 1]], device))).tolist() == [[4.0, 6.0]]
    assert not pretrained.weight.requires_grad
    weight = make(randn(5, 2), device)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor"):
        F.embedding_bag(make([1, 2], device), weight)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(make([[1, 2]], device), weight, make([0], device))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(make([1, 2], device), weight, make([1], device))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(make([[1, 2]], device), weight, per_sample_weights=make([[1.0, 1.0]], device))
