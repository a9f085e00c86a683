"""nn.Fold and nn.Unfold, and the lazy modules (UninitializedParameter/Buffer, LazyLinear, LazyConv*, LazyBatchNorm*,
LazyInstanceNorm*): shapes inferred from the first input, class changes, optimizers, state_dict, PyTorch's values."""

import copy

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck


def _host(tensor):
    return tensor.detach().cpu().numpy()


# ----- Fold / Unfold ---------------------------------------------------------------------------------------------

def test_unfold_module_matches_a_numpy_im2col(device):
    image = numpy.arange(2 * 3 * 4 * 5, dtype=numpy.float64).reshape(2, 3, 4, 5)
    out = nn.Unfold(kernel_size=(2, 3), padding=1, stride=(2, 1))(agnostic.tensor(image, device=device))
    padded = numpy.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    columns = []
    for i in range(0, padded.shape[2] - 2 + 1, 2):
        for j in range(0, padded.shape[3] - 3 + 1):
            columns.append(padded[:, :, i:i + 2, j:j + 3].reshape(2, -1))
    numpy.testing.assert_array_equal(_host(out), numpy.stack(columns, axis=-1))


def test_fold_sums_overlaps_and_inverts_unfold_times_counts(device):
    image = agnostic.randn(2, 3, 5, 6, dtype=agnostic.float64, device=device)
    unfold, fold = nn.Unfold(3, dilation=1, padding=1), nn.Fold((5, 6), 3, padding=1)
    counts = fold(unfold(agnostic.ones_like(image)))
    numpy.testing.assert_allclose(_host(fold(unfold(image))), _host(image * counts), rtol=1e-12)
    assert _host(counts)[0, 0, 2, 2] == 9 and _host(counts)[0, 0, 0, 0] == 4


def test_fold_unfold_unbatched_and_repr(device):
    assert nn.Unfold(2)(agnostic.zeros(3, 4, 4, device=device)).shape == (12, 9)
    assert nn.Fold((4, 4), 2)(agnostic.zeros(12, 9, device=device)).shape == (3, 4, 4)
    assert repr(nn.Fold((3, 3), 2)) == "Fold(output_size=(3, 3), kernel_size=2, dilation=1, padding=0, stride=1)"
    assert repr(nn.Unfold(2, stride=2)) == "Unfold(kernel_size=2, dilation=1, padding=0, stride=2)"


def test_fold_and_unfold_refuse_bad_geometry_with_pytorchs_errors(device):
    with pytest.raises(RuntimeError, match="number of blocks"):
        nn.Fold((4, 4), 2)(agnostic.zeros(1, 4, 5, device=device))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D"):
        nn.Fold((3, 3), 2)(agnostic.zeros(1, 4, 4, 1, device=device))
    with pytest.raises(RuntimeError, match="sliding blocks as \\(0, 0\\)"):
        nn.Unfold(4)(agnostic.zeros(1, 1, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="stride should be greater than zero"):
        nn.Unfold(2, stride=0)(agnostic.zeros(1, 1, 3, 3, device=device))
    with pytest.raises(RuntimeError, match="pad_height: -1"):
        nn.Fold((3, 3), 2, padding=-1)(agnostic.zeros(1, 4, 4, device=device))


def test_gradcheck_fold_and_unfold(device):
    image = agnostic.randn(1, 2, 4, 4, dtype=agnostic.float64, device=device, requires_grad=True)
    columns = agnostic.randn(1, 8, 4, dtype=agnostic.float64, device=device, requires_grad=True)
    assert gradcheck(nn.Unfold(2, dilation=(1, 2), padding=(1, 0), stride=(2, 1)), (image,))
    assert gradcheck(nn.Fold((4, 4), 2, stride=2), (columns,))


def test_fold_unfold_match_pytorch(device):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(0)
    image = rng.standard_normal((2, 3, 6, 5))
    args = dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2))
    expected = torch.nn.Unfold(**args)(torch.tensor(image))
    out = nn.Unfold(**args)(agnostic.tensor(image, device=device))
    numpy.testing.assert_allclose(_host(out), expected.numpy())
    columns = rng.standard_normal(tuple(expected.shape))
    columns_t, columns_a = torch.tensor(columns, requires_grad=True), agnostic.tensor(columns, device=device,
                                                                                      requires_grad=True)
    folded_t, folded_a = torch.nn.Fold((6, 5), **args)(columns_t), nn.Fold((6, 5), **args)(columns_a)
    numpy.testing.assert_allclose(_host(folded_a), folded_t.detach().numpy(), rtol=1e-12)
    weights = rng.standard_normal(tuple(folded_t.shape))
    (folded_t * torch.tensor(weights)).sum().backward()
    (folded_a * agnostic.tensor(weights, device=device)).sum().backward()
    numpy.testing.assert_allclose(_host(columns_a.grad), columns_t.grad.numpy(), rtol=1e-12)


# ----- uninitialized parameters and buffers ----------------------------------------------------------------------

def test_uninitialized_parameter_materializes_in_place(device):
    weight = nn.UninitializedParameter(device=device, dtype=agnostic.float64)
    assert repr(weight) == "<UninitializedParameter>" and weight.requires_grad
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized"):
        weight.shape
    same = weight
    weight.materialize((2, 3))
    assert same is weight and type(weight) is nn.Parameter
    assert tuple(weight.shape) == (2, 3) and weight.dtype == agnostic.float64 and weight.device == device
    assert weight.is_leaf and weight.requires_grad


def test_uninitialized_buffer_becomes_a_plain_tensor(device):
    buffer = nn.UninitializedBuffer(device=device)
    assert repr(buffer) == "<UninitializedBuffer>" and not buffer.requires_grad
    buffer.materialize((4,), dtype=agnostic.float16)
    assert type(buffer) is agnostic.Tensor and tuple(buffer.shape) == (4,) and buffer.dtype == agnostic.float16


def test_uninitialized_parameter_deepcopies_as_uninitialized(device):
    copied = copy.deepcopy(nn.UninitializedParameter(requires_grad=False, device=device))
    assert isinstance(copied, nn.UninitializedParameter) and not copied.requires_grad


# ----- lazy modules -----------------------------------------------------------------------------------------------

def test_lazy_linear_infers_in_features_and_becomes_linear(device):
    layer = nn.LazyLinear(4, device=device, dtype=agnostic.float64)
    assert repr(layer) == "LazyLinear(in_features=0, out_features=4, bias=True)"
    assert layer.has_uninitialized_params()
    out = layer(agnostic.ones(2, 3, dtype=agnostic.float64, device=device))
    assert type(layer) is nn.Linear and repr(layer) == "Linear(in_features=3, out_features=4, bias=True)"
    assert tuple(layer.weight.shape) == (4, 3) and layer.weight.dtype == agnostic.float64
    assert layer.weight.device == device and tuple(out.shape) == (2, 4)
    bound = 1 / numpy.sqrt(3)  # Linear's default initialization, from the inferred fan-in
    assert numpy.abs(_host(layer.weight)).max() <= bound and numpy.abs(_host(layer.weight)).max() > 0
    numpy.testing.assert_allclose(_host(out), _host(agnostic.ones(2, 3, dtype=agnostic.float64, device=device)
                                                    @ layer.weight.T + layer.bias))


def test_optimizer_built_before_the_first_forward_trains_the_materialized_parameters(device):
    layer = nn.LazyLinear(1, bias=False, device=device)
    optimizer = agnostic.optim.SGD(layer.parameters(), lr=0.5)
    data = agnostic.ones(1, 2, device=device)
    layer(data).sum().backward()
    before = _host(layer.weight).copy()
    optimizer.step()
    numpy.testing.assert_allclose(_host(layer.weight), before - 0.5, rtol=1e-6)
    assert optimizer.param_groups[0]["params"][0] is layer.weight


@pytest.mark.parametrize("name,shape,weight_shape", [
    ("LazyConv1d", (2, 3, 7), (4, 3, 3)), ("LazyConv2d", (2, 3, 7, 7), (4, 3, 3, 3)),
    ("LazyConv3d", (3, 5, 5, 5), (4, 3, 3, 3, 3)),  # unbatched: channels are dimension 0
    ("LazyConvTranspose1d", (2, 3, 7), (3, 4, 3)), ("LazyConvTranspose2d", (2, 3, 5, 5), (3, 4, 3, 3)),
    ("LazyConvTranspose3d", (1, 3, 4, 4, 4), (3, 4, 3, 3, 3))])
def test_lazy_convolutions_infer_in_channels(device, name, shape, weight_shape):
    layer = getattr(nn, name)(4, 3, device=device)
    assert repr(layer).startswith(f"{name}(0, 4, kernel_size=")
    layer(agnostic.randn(*shape, device=device))
    base = name.replace("Lazy", "")
    assert type(layer) is getattr(nn, base) and layer.in_channels == 3
    assert tuple(layer.weight.shape) == weight_shape and tuple(layer.bias.shape) == (4,)


def test_lazy_conv_checks_groups(device):
    layer = nn.LazyConv2d(4, 3, groups=2, device=device)
    with pytest.raises(ValueError, match="divisible by groups"):
        layer(agnostic.zeros(1, 3, 5, 5, device=device))


@pytest.mark.parametrize("name,shape", [
    ("LazyBatchNorm1d", (4, 3)), ("LazyBatchNorm2d", (2, 3, 2, 2)), ("LazyBatchNorm3d", (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (2, 3, 4)), ("LazyInstanceNorm2d", (2, 3, 2, 2)), ("LazyInstanceNorm3d", (2, 3, 2, 2, 2))])
def test_lazy_norms_infer_num_features(device, name, shape):
    layer = getattr(nn, name)(device=device)
    state = layer.state_dict()
    assert isinstance(state["weight"], nn.UninitializedParameter)
    assert isinstance(state["running_mean"], nn.UninitializedBuffer)
    assert _host(state["num_batches_tracked"]) == 0
    out = layer(agnostic.randn(*shape, device=device))
    assert type(layer) is getattr(nn, name.replace("Lazy", "")) and layer.num_features == 3
    assert tuple(layer.running_var.shape) == (3,) and tuple(layer.bias.shape) == (3,)
    assert tuple(out.shape) == shape
    numpy.testing.assert_array_equal(_host(layer.weight), numpy.ones(3))


def test_lazy_norms_match_pytorch(device):
    torch = pytest.importorskip("torch", minversion="2.14")  # the norms' repr gained bias=True in PyTorch 2.14
    data = numpy.random.default_rng(1).standard_normal((4, 3, 5)).astype(numpy.float32)
    for name in ("LazyBatchNorm1d", "LazyInstanceNorm1d"):
        ours, theirs = getattr(nn, name)(device=device), getattr(torch.nn, name)()
        assert repr(ours) == repr(theirs)
        out, expected = ours(agnostic.tensor(data, device=device)), theirs(torch.tensor(data))
        assert repr(ours) == repr(theirs) and sorted(ours.state_dict()) == sorted(theirs.state_dict())
        numpy.testing.assert_allclose(_host(out), expected.detach().numpy(), atol=1e-5)
        numpy.testing.assert_allclose(_host(ours.running_var), theirs.running_var.numpy(), rtol=1e-5)


def test_lazy_reprs_match_pytorch():
    torch = pytest.importorskip("torch", minversion="2.14")
    for name, args in [("LazyLinear", (3,)), ("LazyConv2d", (4, 3)), ("LazyConvTranspose1d", (2, 5)),
                       ("LazyBatchNorm2d", ()), ("LazyInstanceNorm3d", ())]:
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))


def test_uninitialized_module_state_dict_round_trips(device):
    lazy = nn.LazyLinear(2, device=device)
    assert all(isinstance(value, nn.UninitializedParameter) for value in lazy.state_dict().values())
    other = nn.LazyLinear(2, device=device)
    result = other.load_state_dict(lazy.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert other.has_uninitialized_params()


def test_loading_a_trained_state_dict_materializes_the_lazy_module(device):
    trained = nn.Linear(5, 2, device=device)
    lazy = nn.LazyLinear(2, device=device)
    lazy.load_state_dict(trained.state_dict())
    assert not lazy.has_uninitialized_params() and tuple(lazy.weight.shape) == (2, 5)
    numpy.testing.assert_array_equal(_host(lazy.weight), _host(trained.weight))
    data = agnostic.randn(3, 5, device=device)
    numpy.testing.assert_allclose(_host(lazy(data)), _host(trained(data)), rtol=1e-6)
    assert type(lazy) is nn.Linear


def test_casting_a_lazy_module_keeps_buffers_uninitialized(device):
    layer = nn.LazyBatchNorm1d(device=device).double()
    assert isinstance(layer.running_mean, nn.UninitializedBuffer)
    layer(agnostic.randn(4, 3, dtype=agnostic.float64, device=device))
    assert layer.running_mean.dtype == agnostic.float64 and layer.weight.dtype == agnostic.float64


def test_lazy_module_mixin_needs_initialize_parameters(device):
    class Incomplete(nn.lazy.LazyModuleMixin, nn.Module):
        def forward(self, input):
            return input

    with pytest.raises(NotImplementedError, match="initialize_parameters is not implemented for Incomplete"):
        Incomplete()(agnostic.zeros(1, device=device))
