"""Smaller torch.nn pieces: ChannelShuffle and channel_shuffle, nn.Buffer, MaxUnpool3d, LPPool3d, the
``*_with_indices`` pooling forms and pdist, against hand/NumPy values, finite differences and PyTorch."""

import itertools

import numpy
import pytest

import agnostic
import agnostic.nn as nn
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck


def _host(tensor):
    return tensor.detach().cpu().numpy()


# ----- channel shuffle -------------------------------------------------------------------------------------------

def test_channel_shuffle_interleaves_the_groups(device):
    x = agnostic.arange(12.0, device=device).reshape(1, 6, 2)
    out = F.channel_shuffle(x, 3)
    expected = numpy.arange(12.0).reshape(1, 3, 2, 2).transpose(0, 2, 1, 3).reshape(1, 6, 2)
    numpy.testing.assert_array_equal(_host(out), expected)
    numpy.testing.assert_array_equal(_host(nn.ChannelShuffle(3)(x)), expected)
    numpy.testing.assert_array_equal(_host(F.native_channel_shuffle(x, 3)), expected)
    assert repr(nn.ChannelShuffle(3)) == "ChannelShuffle(groups=3)"


def test_channel_shuffle_gradient_is_the_inverse_permutation(device):
    x = agnostic.arange(4.0, device=device).reshape(1, 4, 1).requires_grad_()
    (F.channel_shuffle(x, 2) * agnostic.tensor([1.0, 2.0, 3.0, 4.0], device=device).reshape(1, 4, 1)).sum().backward()
    numpy.testing.assert_array_equal(_host(x.grad).ravel(), [1.0, 3.0, 2.0, 4.0])


def test_channel_shuffle_errors(device):
    with pytest.raises(RuntimeError, match="> 2 dims"):
        F.channel_shuffle(agnostic.zeros(1, 6, device=device), 2)
    with pytest.raises(RuntimeError, match="must be positive"):
        F.channel_shuffle(agnostic.zeros(1, 6, 1, device=device), 0)
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(agnostic.zeros(1, 6, 1, device=device), 4)


def test_channel_shuffle_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    data = numpy.random.default_rng(0).standard_normal((2, 8, 3, 2))
    numpy.testing.assert_array_equal(_host(F.channel_shuffle(agnostic.tensor(data, device=device), 4)),
                                     torch.nn.functional.channel_shuffle(torch.tensor(data), 4).numpy())


# ----- nn.Buffer ---------------------------------------------------------------------------------------------------

def test_buffer_assignment_registers_a_buffer(device):
    module = nn.Module()
    data = agnostic.ones(3, device=device)
    module.running = nn.Buffer(data)
    module.scratch = nn.Buffer(agnostic.zeros(2, device=device), persistent=False)
    assert list(dict(module.named_buffers())) == ["running", "scratch"]
    assert list(module.state_dict()) == ["running"]
    assert module.running.data_ptr() == data.data_ptr()  # shares memory, no copy
    assert isinstance(module.running, nn.Buffer) and not isinstance(data, nn.Buffer)
    module.running = agnostic.zeros(3, device=device)  # a plain tensor replaces a registered buffer's value
    numpy.testing.assert_array_equal(_host(module._buffers["running"]), numpy.zeros(3))
    assert module.to(agnostic.float64).running.dtype == agnostic.float64


def test_buffer_keeps_requires_grad_and_replaces_a_plain_attribute(device):
    module = nn.Module()
    module.value = 1
    module.value = nn.Buffer(agnostic.ones(2, device=device, requires_grad=True))
    assert "value" in module._buffers and module.value.requires_grad and module.value.is_leaf


def test_buffer_matches_pytorch_registration():
    torch = pytest.importorskip("torch")
    ours, theirs = nn.Module(), torch.nn.Module()
    ours.a, theirs.a = nn.Buffer(agnostic.zeros(1)), torch.nn.Buffer(torch.zeros(1))
    ours.b, theirs.b = nn.Buffer(agnostic.zeros(1), persistent=False), torch.nn.Buffer(torch.zeros(1),
                                                                                      persistent=False)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]


# ----- MaxUnpool3d ------------------------------------------------------------------------------------------------

def test_max_unpool3d_puts_maxima_back(device):
    volume = agnostic.randn(2, 3, 4, 4, 4, dtype=agnostic.float64, device=device)
    pooled, indices = F.max_pool3d(volume, 2, return_indices=True)
    restored = nn.MaxUnpool3d(2)(pooled, indices)
    host, back = _host(volume), _host(restored)
    assert back.shape == host.shape
    kept = back != 0
    assert kept.sum() == 2 * 3 * 8
    numpy.testing.assert_array_equal(back[kept], host[kept])
    numpy.testing.assert_array_equal(_host(F.max_pool3d(restored, 2)), _host(pooled))
    assert repr(nn.MaxUnpool3d(2)) == "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"


def test_max_unpool3d_output_size_and_gradient(device):
    volume = agnostic.randn(1, 1, 5, 4, 5, device=device)
    pooled, indices = F.max_pool3d(volume, 2, return_indices=True)
    pooled = pooled.detach().requires_grad_()
    out = F.max_unpool3d(pooled, indices, 2, output_size=(5, 4, 5))
    assert tuple(out.shape) == (1, 1, 5, 4, 5)
    (out * 2).sum().backward()
    numpy.testing.assert_array_equal(_host(pooled.grad), numpy.full(tuple(pooled.shape), 2.0))
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool3d(pooled, indices, 2, output_size=(9, 4, 4))


def test_max_unpool3d_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    data = numpy.random.default_rng(1).standard_normal((2, 2, 5, 6, 4))
    pooled_t, indices_t = torch.nn.functional.max_pool3d(torch.tensor(data), (2, 3, 2), stride=(2, 2, 1),
                                                         padding=(1, 1, 0), return_indices=True)
    expected = torch.nn.functional.max_unpool3d(pooled_t, indices_t, (2, 3, 2), (2, 2, 1), (1, 1, 0),
                                                output_size=(5, 6, 4))
    out = F.max_unpool3d(agnostic.tensor(pooled_t.numpy(), device=device),
                         agnostic.tensor(indices_t.numpy(), device=device), (2, 3, 2), (2, 2, 1), (1, 1, 0),
                         output_size=(5, 6, 4))
    numpy.testing.assert_array_equal(_host(out), expected.numpy())


# ----- LPPool3d ---------------------------------------------------------------------------------------------------

def test_lp_pool3d_is_the_window_p_norm(device):
    data = numpy.abs(numpy.random.default_rng(2).standard_normal((1, 2, 4, 4, 2))) + 0.1
    out = nn.LPPool3d(3, (2, 2, 2))(agnostic.tensor(data, device=device))
    windows = data.reshape(1, 2, 2, 2, 2, 2, 1, 2).transpose(0, 1, 2, 4, 6, 3, 5, 7).reshape(1, 2, 2, 2, 1, 8)
    numpy.testing.assert_allclose(_host(out), (windows ** 3).sum(-1) ** (1 / 3), rtol=1e-12)
    assert repr(nn.LPPool3d(2, 2)) == "LPPool3d(norm_type=2, kernel_size=2, stride=None, ceil_mode=False)"


def test_gradcheck_lp_pool3d(device):
    data = agnostic.rand(1, 1, 3, 3, 2, dtype=agnostic.float64, device=device) + 0.5
    assert gradcheck(lambda x: F.lp_pool3d(x, 2.5, (2, 2, 1), stride=1), (data.requires_grad_(),))


def test_lp_pool3d_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    data = numpy.random.default_rng(3).standard_normal((2, 3, 4, 5, 4))
    data_t = torch.tensor(data, requires_grad=True)
    data_a = agnostic.tensor(data, device=device, requires_grad=True)
    expected = torch.nn.functional.lp_pool3d(data_t, 2, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True)
    out = F.lp_pool3d(data_a, 2, (2, 3, 2), stride=(1, 2, 2), ceil_mode=True)
    numpy.testing.assert_allclose(_host(out), expected.detach().numpy(), rtol=1e-12)
    expected.sum().backward()
    out.sum().backward()
    numpy.testing.assert_allclose(_host(data_a.grad), data_t.grad.numpy(), rtol=1e-10, atol=1e-12)


# ----- *_with_indices ---------------------------------------------------------------------------------------------

WITH_INDICES = [("max_pool1d_with_indices", (2, 3, 9), (3,), {"stride": 2, "padding": 1}),
                ("max_pool2d_with_indices", (2, 3, 6, 7), (3,), {"stride": 2, "dilation": 2}),
                ("max_pool3d_with_indices", (1, 2, 4, 5, 6), (2,), {"ceil_mode": True}),
                ("adaptive_max_pool1d_with_indices", (2, 3, 9), (4,), {}),
                ("adaptive_max_pool2d_with_indices", (2, 3, 7, 6), ((3, 4),), {}),
                ("adaptive_max_pool3d_with_indices", (1, 2, 5, 4, 6), ((2, 3, 4),), {})]


@pytest.mark.parametrize("name,shape,args,kwargs", WITH_INDICES)
def test_with_indices_forms_always_return_values_and_indices(device, name, shape, args, kwargs):
    data = agnostic.randn(*shape, device=device)
    values, indices = getattr(F, name)(data, *args, **kwargs)
    plain = getattr(F, name.replace("_with_indices", ""))(data, *args, **kwargs, return_indices=True)
    numpy.testing.assert_array_equal(_host(values), _host(plain[0]))
    numpy.testing.assert_array_equal(_host(indices), _host(plain[1]))
    flat = data.reshape(*shape[:2], -1)
    numpy.testing.assert_array_equal(_host(flat.gather(2, indices.reshape(*shape[:2], -1))),
                                     _host(values.reshape(*shape[:2], -1)))


@pytest.mark.parametrize("name,shape,args,kwargs", WITH_INDICES)
def test_with_indices_forms_match_pytorch(device, name, shape, args, kwargs):
    torch = pytest.importorskip("torch")
    data = numpy.random.default_rng(4).standard_normal(shape)
    expected_values, expected_indices = getattr(torch.nn.functional, name)(torch.tensor(data), *args, **kwargs)
    values, indices = getattr(F, name)(agnostic.tensor(data, device=device), *args, **kwargs)
    numpy.testing.assert_array_equal(_host(values), expected_values.numpy())
    numpy.testing.assert_array_equal(_host(indices), expected_indices.numpy())


# ----- pdist ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 2.0, 3.0, float("inf")])
def test_pdist_is_the_upper_triangle_of_pairwise_distances(device, p):
    data = numpy.random.default_rng(5).standard_normal((5, 3))
    out = F.pdist(agnostic.tensor(data, device=device), p)
    expected = []
    for i, j in itertools.combinations(range(5), 2):
        difference = numpy.abs(data[i] - data[j])
        expected.append(numpy.count_nonzero(difference) if p == 0 else difference.max() if p == float("inf")
                        else (difference ** p).sum() ** (1 / p))
    numpy.testing.assert_allclose(_host(out), expected, rtol=1e-12)


def test_gradcheck_pdist(device):
    data = agnostic.randn(4, 3, dtype=agnostic.float64, device=device, requires_grad=True)
    for p in (1.5, 2.0, 3.0):
        assert gradcheck(lambda x: F.pdist(x, p), (data,))


def test_pdist_edge_cases_and_errors(device):
    assert tuple(F.pdist(agnostic.zeros(1, 3, device=device)).shape) == (0,)
    with pytest.raises(RuntimeError, match="2D tensors"):
        F.pdist(agnostic.zeros(2, 2, 2, device=device))
    with pytest.raises(RuntimeError, match="floating-point"):
        F.pdist(agnostic.zeros(2, 2, dtype=agnostic.int64, device=device))
    with pytest.raises(RuntimeError, match="non-negative p"):
        F.pdist(agnostic.zeros(2, 2, device=device), -1)


def test_pdist_matches_pytorch_with_repeated_rows(device):
    torch = pytest.importorskip("torch")
    data = numpy.random.default_rng(6).standard_normal((5, 3))
    data[3] = data[1]  # a zero distance: PyTorch's gradient there is zero, not NaN
    for p in (0.5, 1.0, 2.0, float("inf")):
        data_t = torch.tensor(data, requires_grad=True)
        data_a = agnostic.tensor(data, device=device, requires_grad=True)
        torch.pdist(data_t, p).sum().backward()
        out = F.pdist(data_a, p)
        out.sum().backward()
        numpy.testing.assert_allclose(_host(out), torch.pdist(torch.tensor(data), p).numpy(), rtol=1e-12)
        numpy.testing.assert_allclose(_host(data_a.grad), data_t.grad.numpy(), rtol=1e-10, atol=1e-12)
