"""Memory formats (agnostic.channels_last...): strides, contiguity, preserve_format's rules and errors, as PyTorch's."""

import pickle

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import agnostic
import agnostic.nn.functional as F

NCHW = (2, 3, 4, 5)
NCHW_CHANNELS_LAST = (60, 1, 15, 3)  # the strides of an NHWC-contiguous buffer, by hand


def _values(shape, device, dtype=agnostic.float32):
    return agnostic.arange(int(numpy.prod(shape)), dtype=dtype, device=device).reshape(shape)


def _ops_keep_layouts(device):
    """Whether elementwise results keep their input's layout, as PyTorch's TensorIterator does: NumPy's ufuncs do
    (order='K'); CuPy's allocate C-contiguous outputs (``_get_out_args_from_optionals``), so on CUDA only the values
    are PyTorch's."""
    return device.type == "cpu"


# ----- the constants --------------------------------------------------------------------------------------------
def test_constants_print_and_pickle_as_themselves():
    for name in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        value = getattr(agnostic, name)
        assert isinstance(value, agnostic.memory_format)
        assert repr(value) == f"agnostic.{name}"
        assert pickle.loads(pickle.dumps(value)) is value
    assert agnostic.channels_last is not agnostic.contiguous_format


# ----- making tensors in a format -------------------------------------------------------------------------------
def test_to_channels_last_keeps_values_and_gives_nhwc_strides(device):
    x = _values(NCHW, device)
    y = x.to(memory_format=agnostic.channels_last)
    assert y.stride() == NCHW_CHANNELS_LAST
    assert (y.is_contiguous(), y.is_contiguous(memory_format=agnostic.channels_last)) == (False, True)
    assert y.device == device and y.shape == x.shape
    numpy.testing.assert_array_equal(y.cpu().numpy(), x.cpu().numpy())
    # the NHWC view of it is row-major: the memory holds the channels innermost
    nhwc = y.permute(0, 2, 3, 1)
    assert nhwc.is_contiguous()
    numpy.testing.assert_array_equal(nhwc.reshape(-1).cpu().numpy(),
                                     x.cpu().numpy().transpose(0, 2, 3, 1).reshape(-1))


def test_channels_last_3d_strides(device):
    y = _values((2, 3, 4, 5, 6), device).contiguous(memory_format=agnostic.channels_last_3d)
    assert y.stride() == (360, 1, 90, 18, 3)
    assert y.is_contiguous(memory_format=agnostic.channels_last_3d)
    assert not y.is_contiguous(memory_format=agnostic.channels_last)  # wrong rank: False, not an error


def test_empty_and_likes_take_memory_format(device):
    assert agnostic.empty(*NCHW, memory_format=agnostic.channels_last, device=device).stride() == NCHW_CHANNELS_LAST
    assert agnostic.empty(NCHW, device=device).stride() == (60, 20, 5, 1)
    y = _values(NCHW, device).to(memory_format=agnostic.channels_last)
    for made in (agnostic.empty_like(y), agnostic.zeros_like(y), agnostic.ones_like(y), agnostic.full_like(y, 2.5)):
        assert made.stride() == NCHW_CHANNELS_LAST and made.device == device
    assert float(agnostic.ones_like(y).sum()) == 120.0
    assert float(agnostic.full_like(y, 2.5).sum()) == 300.0
    assert float(agnostic.zeros_like(y).abs().sum()) == 0.0
    assert agnostic.zeros_like(y, memory_format=agnostic.contiguous_format).stride() == (60, 20, 5, 1)
    x = _values(NCHW, device)
    assert agnostic.ones_like(x, memory_format=agnostic.channels_last).stride() == NCHW_CHANNELS_LAST
    assert agnostic.zeros_like(x).stride() == (60, 20, 5, 1)


def test_preserve_format_keeps_dense_strides_and_orders_the_others(device):
    y = _values(NCHW, device).to(memory_format=agnostic.channels_last)
    assert y.clone().stride() == NCHW_CHANNELS_LAST
    assert y.to(agnostic.float64).stride() == NCHW_CHANNELS_LAST
    assert y.to(agnostic.float64).dtype == agnostic.float64
    # not dense (a slice): dense strides in the same order, by hand: W=5 outer of C=3, H=2 outer of W
    sliced = y[:, :, ::2]
    assert sliced.clone().stride() == (30, 1, 15, 3)
    assert agnostic.empty_like(sliced).stride() == (30, 1, 15, 3)
    numpy.testing.assert_array_equal(sliced.clone().cpu().numpy(), sliced.cpu().numpy())
    # any permutation, not only channels-last: PyTorch's transposed clone stays transposed
    t = _values((2, 3), device).t()
    assert t.clone().stride() == (1, 3) and not t.clone().is_contiguous()
    # broadcast (stride 0) dimensions become row-major
    assert agnostic.zeros(1, 3, 1, 1, device=device).expand(*NCHW).clone().stride() == (60, 20, 5, 1)
    # an explicit format wins
    assert y.clone(memory_format=agnostic.contiguous_format).stride() == (60, 20, 5, 1)


def test_size_one_dimensions_keep_pytorchs_strides(device):
    # (N, C, 1, 1), as after adaptive pooling: both contiguous and channels-last, and its strides say channels-last
    y = agnostic.zeros(2, 3, 1, 1, device=device).to(memory_format=agnostic.channels_last)
    assert y.stride() == (3, 1, 3, 3)
    assert y.is_contiguous() and y.is_contiguous(memory_format=agnostic.channels_last)
    assert y.clone().stride() == (3, 1, 3, 3)
    assert agnostic.empty_like(y).stride() == (3, 1, 3, 3)


# ----- when nothing is copied ----------------------------------------------------------------------------------
def test_to_and_contiguous_return_self_when_nothing_changes(device):
    y = _values(NCHW, device).to(memory_format=agnostic.channels_last)
    assert y.to(memory_format=agnostic.channels_last) is y
    assert y.contiguous(memory_format=agnostic.channels_last) is y
    assert y.to(agnostic.float32) is y
    assert y.to(device) is y
    assert y.contiguous() is not y and y.contiguous().stride() == (60, 20, 5, 1)
    # PyTorch compares the suggested format, not exact contiguity: a channels-last slice is kept as it is
    sliced = y[:, :, ::2]
    assert sliced.to(memory_format=agnostic.channels_last) is sliced
    x = _values(NCHW, device)
    assert x.contiguous() is x and x.to(memory_format=agnostic.contiguous_format) is x
    assert x.to(memory_format=agnostic.channels_last) is not x


def test_to_memory_format_with_copy_and_dtype(device):
    x = _values(NCHW, device)
    y = x.to(agnostic.float64, memory_format=agnostic.channels_last)
    assert y.dtype == agnostic.float64 and y.stride() == NCHW_CHANNELS_LAST
    z = x.to(memory_format=agnostic.contiguous_format, copy=True)
    assert z is not x and z.stride() == (60, 20, 5, 1)


def test_moving_to_the_cpu_keeps_the_format(device):
    y = _values(NCHW, device).to(memory_format=agnostic.channels_last)
    assert y.cpu().stride() == NCHW_CHANNELS_LAST
    assert y.to("cpu").is_contiguous(memory_format=agnostic.channels_last)


# ----- errors ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda d: agnostic.zeros(2, 3, device=d).to(memory_format=agnostic.channels_last),
    lambda d: agnostic.zeros(2, 3, device=d).contiguous(memory_format=agnostic.channels_last),
    lambda d: agnostic.zeros(2, 3, device=d).clone(memory_format=agnostic.channels_last),
    lambda d: agnostic.empty(2, 3, device=d, memory_format=agnostic.channels_last),
    lambda d: agnostic.empty_like(agnostic.zeros(2, 3, device=d), memory_format=agnostic.channels_last),
])
def test_channels_last_needs_rank_4(device, make):
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        make(device)


def test_channels_last_3d_needs_rank_5(device):
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d format"):
        agnostic.zeros(*NCHW, device=device).to(memory_format=agnostic.channels_last_3d)


def test_preserve_format_is_refused_where_pytorch_refuses_it(device):
    with pytest.raises(RuntimeError, match="preserve memory format is unsupported by the contiguous operator"):
        agnostic.zeros(2, 3, device=device).t().contiguous(memory_format=agnostic.preserve_format)
    # contiguous already: returned as it is, as in PyTorch
    x = agnostic.zeros(2, 3, device=device)
    assert x.contiguous(memory_format=agnostic.preserve_format) is x
    with pytest.raises(RuntimeError, match="unsupported by the empty operator"):
        agnostic.empty(2, 3, device=device, memory_format=agnostic.preserve_format)


def test_memory_format_of_the_wrong_type_is_a_type_error(device):
    x = agnostic.zeros(*NCHW, device=device)
    with pytest.raises(TypeError, match="memory_format must be an agnostic.memory_format"):
        x.clone(memory_format=1)
    with pytest.raises(TypeError, match="memory_format must be an agnostic.memory_format"):
        x.is_contiguous(memory_format="channels_last")
    with pytest.raises(TypeError, match="memory_format must be an agnostic.memory_format"):
        x.to(memory_format=agnostic.strided)


# ----- ops on channels-last tensors --------------------------------------------------------------------------------
def test_view_refuses_and_reshape_copies(device):
    y = _values(NCHW, device).to(memory_format=agnostic.channels_last)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        y.view(2, -1)
    flat = y.reshape(2, -1)
    assert flat.stride() == (60, 1)
    numpy.testing.assert_array_equal(flat.cpu().numpy(), numpy.arange(120.0).reshape(2, 60))
    assert y.permute(0, 2, 3, 1).view(-1).shape == (120,)  # the NHWC view is contiguous, so it views


def test_elementwise_ops_keep_channels_last(device):
    x = _values(NCHW, device)
    y = x.to(memory_format=agnostic.channels_last)
    for result, expected in [(y + 1, x + 1), (y * y, x * x), (agnostic.relu(y - 50), agnostic.relu(x - 50)),
                             (y.exp(), x.exp()), (y + agnostic.ones(3, 1, 1, device=device), x + 1),
                             (agnostic.where(y > 10, y, 0.0), agnostic.where(x > 10, x, 0.0))]:
        if _ops_keep_layouts(device):
            assert result.stride() == NCHW_CHANNELS_LAST
        numpy.testing.assert_allclose(result.cpu().numpy(), expected.cpu().numpy(), rtol=1e-6)


def test_nn_ops_give_the_same_values_on_channels_last_inputs(device):
    generator = numpy.random.default_rng(0)
    x = agnostic.tensor(generator.standard_normal(NCHW), dtype=agnostic.float32, device=device)
    y = x.to(memory_format=agnostic.channels_last)
    weight = agnostic.tensor(generator.standard_normal((6, 3, 3, 3)), dtype=agnostic.float32, device=device)
    mean, var = agnostic.zeros(3, device=device), agnostic.ones(3, device=device) * 2
    for op in (lambda t: F.conv2d(t, weight, padding=1), lambda t: F.max_pool2d(t, 2),
               lambda t: F.batch_norm(t, mean, var), lambda t: F.adaptive_avg_pool2d(t, 1),
               lambda t: t.sum(dim=(2, 3)), lambda t: t.flatten(1)):
        numpy.testing.assert_allclose(op(y).cpu().numpy(), op(x).cpu().numpy(), rtol=1e-5, atol=1e-5)
    if _ops_keep_layouts(device):
        assert F.max_pool2d(y, 2).stride() == (12, 1, 6, 3)
        assert F.batch_norm(y, mean, var).stride() == NCHW_CHANNELS_LAST


def test_gradients_flow_through_format_changes(device):
    x = _values(NCHW, device, agnostic.float64).requires_grad_()
    y = x.to(memory_format=agnostic.channels_last)
    (y * y).sum().backward()
    numpy.testing.assert_allclose(x.grad.cpu().numpy(), 2 * x.detach().cpu().numpy())
    assert agnostic.autograd.gradcheck(lambda t: t.contiguous(memory_format=agnostic.channels_last).clone() * 2,
                                       (agnostic.rand(1, 2, 2, 3, dtype=agnostic.float64, device=device,
                                                      requires_grad=True),))


# ----- against PyTorch ---------------------------------------------------------------------------------------------
def test_matches_pytorch_on_the_formats(device):
    torch = pytest.importorskip("torch")
    x = _values(NCHW, device)
    reference = torch.arange(120.0).reshape(NCHW)
    for fmt, torch_fmt in ((agnostic.channels_last, torch.channels_last),
                           (agnostic.contiguous_format, torch.contiguous_format)):
        ours, theirs = x.to(memory_format=fmt), reference.to(memory_format=torch_fmt)
        assert ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()
        assert ours.is_contiguous(memory_format=agnostic.channels_last) == theirs.is_contiguous(
            memory_format=torch.channels_last)
        numpy.testing.assert_array_equal(ours.cpu().numpy(), theirs.numpy())
        assert agnostic.empty_like(ours).stride() == torch.empty_like(theirs).stride()
    five = _values((2, 3, 4, 5, 6), device).to(memory_format=agnostic.channels_last_3d)
    assert five.stride() == torch.zeros(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d).stride()
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.zeros(2, 3).to(memory_format=torch.channels_last)  # the message we copy


@st.composite
def _strided_4d(draw):
    """A 4-D tensor's shape and a view of it: permuted, sliced or expanded, as programs make them."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=4, max_size=4)))
    order = draw(st.permutations(range(4)))
    step = draw(st.integers(1, 2))
    sliced_dim = draw(st.integers(0, 3))
    expanded = draw(st.booleans())
    return shape, order, step, sliced_dim, expanded


def _view(tensor, order, step, sliced_dim, expanded):
    made = tensor.permute(*order)
    index = [slice(None)] * 4
    index[sliced_dim] = slice(None, None, step)
    made = made[tuple(index)]
    if expanded:
        made = made[:, :1].expand(made.shape[0], 3, *made.shape[2:])
    return made


@settings(max_examples=60, deadline=None)
@given(_strided_4d())
def test_stride_rules_match_pytorch_on_any_view(case):
    torch = pytest.importorskip("torch")
    shape, *how = case
    ours = _view(agnostic.arange(int(numpy.prod(shape)), dtype=agnostic.float32).reshape(shape), *how)
    theirs = _view(torch.arange(int(numpy.prod(shape)), dtype=torch.float32).reshape(shape), *how)
    assert ours.stride() == theirs.stride()
    for fmt, torch_fmt in ((agnostic.contiguous_format, torch.contiguous_format),
                           (agnostic.channels_last, torch.channels_last)):
        assert ours.is_contiguous(memory_format=fmt) == theirs.is_contiguous(memory_format=torch_fmt)
        assert (ours.to(memory_format=fmt) is ours) == (theirs.to(memory_format=torch_fmt) is theirs)
        assert ours.to(memory_format=fmt).stride() == theirs.to(memory_format=torch_fmt).stride()
        assert ours.contiguous(memory_format=fmt).stride() == theirs.contiguous(memory_format=torch_fmt).stride()
    assert ours.clone().stride() == theirs.clone().stride()
    assert agnostic.empty_like(ours).stride() == torch.empty_like(theirs).stride()
    assert ours.to(agnostic.float64).stride() == theirs.to(torch.float64).stride()
    numpy.testing.assert_array_equal(ours.clone().numpy(), theirs.clone().numpy())


def test_pytorch_program_runs_unchanged_with_channels_last(device):
    """The lines CNN scripts write, with agnostic for torch."""
    torch = agnostic
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(4, 2)).to(device)
    x = torch.randn(2, 3, 8, 8, device=device)
    expected = model(x)
    x = x.to(memory_format=torch.channels_last)
    assert x.is_contiguous(memory_format=torch.channels_last)
    numpy.testing.assert_allclose(model(x).detach().cpu().numpy(), expected.detach().cpu().numpy(),
                                  rtol=1e-5, atol=1e-5)
