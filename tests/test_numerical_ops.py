"""gradient and histogramdd: values against NumPy and PyTorch, spacing/dim/edge_order and bins/range/weight/density
rules, PyTorch's errors, and gradient's autograd (gradcheck, and backward against PyTorch's)."""

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

RNG = np.random.default_rng(5)


def _numpy(tensors):
    return [t.cpu().numpy() for t in tensors]


# ----- gradient ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_matches_numpy(device, edge_order):
    x = RNG.standard_normal((4, 5, 6))
    result = agnostic.gradient(agnostic.tensor(x, device=device), edge_order=edge_order)
    assert isinstance(result, tuple) and len(result) == 3
    for ours, expected in zip(_numpy(result), np.gradient(x, edge_order=edge_order)):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    steps = agnostic.gradient(agnostic.tensor(x, device=device), spacing=[0.5, 2.0], dim=(0, -1),
                              edge_order=edge_order)
    for ours, expected in zip(_numpy(steps), np.gradient(x, 0.5, 2.0, axis=(0, 2), edge_order=edge_order)):
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-12)
    coordinates = np.cumsum(RNG.uniform(0.1, 1.0, 5))
    uneven = agnostic.gradient(agnostic.tensor(x, device=device),
                               spacing=[agnostic.tensor(coordinates, device=device)], dim=1, edge_order=edge_order)
    np.testing.assert_allclose(uneven[0].cpu().numpy(), np.gradient(x, coordinates, axis=1, edge_order=edge_order),
                               rtol=1e-12, atol=1e-12)


def test_gradient_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 7)).astype(np.float32)
    coordinates = np.array([0.0, 1.0, 1.5, 3.0, 4.5, 5.0, 7.0], np.float32)
    for kwargs in ({}, {"spacing": 2.0}, {"spacing": [3.0], "dim": 1, "edge_order": 2}, {"dim": [1, 0]}):
        ours = agnostic.gradient(agnostic.tensor(x, device=device), **kwargs)
        theirs = torch.gradient(torch.tensor(x), **kwargs)
        for a, b in zip(_numpy(ours), theirs):
            assert a.dtype == np.float32
            np.testing.assert_allclose(a, b.numpy(), rtol=1e-6, atol=1e-6)
    for edge_order in (1, 2):
        ours = agnostic.gradient(agnostic.tensor(x, device=device), dim=1, edge_order=edge_order,
                                 spacing=[agnostic.tensor(coordinates, device=device)])
        theirs = torch.gradient(torch.tensor(x), dim=1, edge_order=edge_order, spacing=[torch.tensor(coordinates)])
        np.testing.assert_allclose(ours[0].cpu().numpy(), theirs[0].numpy(), rtol=1e-5, atol=1e-5)


def test_gradient_dtypes_and_shapes(device):
    integers = agnostic.gradient(agnostic.tensor([[1, 2, 4, 8]], device=device), dim=1)
    assert integers[0].dtype is agnostic.float32
    np.testing.assert_allclose(integers[0].cpu().numpy(), [[1.0, 1.5, 3.0, 4.0]])
    complex_input = agnostic.gradient(agnostic.tensor([1 + 1j, 2 + 0j, 4 - 2j], device=device))
    assert complex_input[0].dtype is agnostic.complex64
    np.testing.assert_allclose(complex_input[0].cpu().numpy(), np.gradient(np.array([1 + 1j, 2 + 0j, 4 - 2j])))
    assert agnostic.gradient(agnostic.tensor(3.0, device=device)) == ()
    zero_dim_step = agnostic.gradient(agnostic.tensor([0.0, 2.0, 4.0], device=device), spacing=agnostic.tensor(2.0))
    np.testing.assert_allclose(zero_dim_step[0].cpu().numpy(), [1.0, 1.0, 1.0])


def test_gradient_errors(device):
    x = agnostic.ones(2, 4, device=device)
    for call, error, message in [
        (lambda: agnostic.gradient(x, edge_order=3), RuntimeError, "edge_order=1 and edge_order=2"),
        (lambda: agnostic.gradient(x[:, :1]), RuntimeError, "at least edge_order\\+1"),
        (lambda: agnostic.gradient(x, edge_order=2), RuntimeError, "at least edge_order\\+1"),
        (lambda: agnostic.gradient(x, spacing=[1.0, 2.0, 3.0]), RuntimeError, "'self.dim\\(\\) = 2'"),
        (lambda: agnostic.gradient(x, spacing=[1.0, 2.0], dim=1), RuntimeError, "same length"),
        (lambda: agnostic.gradient(x, spacing=[agnostic.ones(1, 4, device=device)], dim=1), RuntimeError,
         "one dimension"),
        (lambda: agnostic.gradient(x, spacing=[agnostic.ones(3, device=device)], dim=1), RuntimeError,
         "as many elements"),
        (lambda: agnostic.gradient(x, dim=[1, 1]), RuntimeError, "appears multiple times"),
        (lambda: agnostic.gradient(x, dim=5), IndexError, "out of range"),
        (lambda: agnostic.gradient(agnostic.tensor(1.0, device=device), dim=0), IndexError, "no dimensions"),
    ]:
        with pytest.raises(error, match=message):
            call()


def test_gradient_gradcheck(device):
    x = agnostic.tensor(RNG.standard_normal((3, 5)), device=device, requires_grad=True)
    coordinates = agnostic.tensor([0.0, 0.5, 1.5, 2.0, 3.5], dtype=agnostic.float64, device=device,
                                  requires_grad=True)
    for edge_order in (1, 2):
        assert gradcheck(lambda t: agnostic.gradient(t, spacing=1.5, edge_order=edge_order), (x,))
        assert gradcheck(lambda t, c: agnostic.gradient(t, spacing=[c], dim=1, edge_order=edge_order)[0],
                         (x, coordinates))


def test_gradient_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 6))
    coordinates = np.cumsum(RNG.uniform(0.2, 1.0, 6))
    upstream = RNG.standard_normal((2, 4, 6))
    ours_x = agnostic.tensor(x, device=device, requires_grad=True)
    ours_c = agnostic.tensor(coordinates, device=device, requires_grad=True)
    theirs_x, theirs_c = torch.tensor(x, requires_grad=True), torch.tensor(coordinates, requires_grad=True)
    first = agnostic.gradient(ours_x, spacing=2.0, dim=0, edge_order=2)[0]
    second = agnostic.gradient(ours_x, spacing=[ours_c], dim=1, edge_order=2)[0]
    ((first * agnostic.tensor(upstream[0], device=device)).sum()
     + (second * agnostic.tensor(upstream[1], device=device)).sum()).backward()
    first = torch.gradient(theirs_x, spacing=2.0, dim=0, edge_order=2)[0]
    second = torch.gradient(theirs_x, spacing=[theirs_c], dim=1, edge_order=2)[0]
    ((first * torch.tensor(upstream[0])).sum() + (second * torch.tensor(upstream[1])).sum()).backward()
    np.testing.assert_allclose(ours_x.grad.cpu().numpy(), theirs_x.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ours_c.grad.cpu().numpy(), theirs_c.grad.numpy(), rtol=1e-10, atol=1e-10)


# ----- histogramdd ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bins", [4, [2, 3, 5]])
@pytest.mark.parametrize("range_", [None, [-1.0, 1.0, -2.0, 2.0, 0.0, 0.5]])
@pytest.mark.parametrize("density", [False, True])
def test_histogramdd_matches_numpy(device, bins, range_, density):
    points = RNG.standard_normal((200, 3))
    weights = RNG.uniform(0, 1, 200)
    numpy_range = None if range_ is None else np.reshape(range_, (3, 2))
    for weight in (None, weights):
        result = agnostic.histogramdd(agnostic.tensor(points, device=device), bins, range=range_, density=density,
                                      weight=None if weight is None else agnostic.tensor(weight, device=device))
        hist, edges = np.histogramdd(points, bins, range=numpy_range, weights=weight, density=density)
        assert result.hist.dtype is agnostic.float64 and len(result.bin_edges) == 3
        np.testing.assert_allclose(result.hist.cpu().numpy(), hist, rtol=1e-12, atol=1e-12)
        for ours, expected in zip(result.bin_edges, edges):
            np.testing.assert_allclose(ours.cpu().numpy(), expected, rtol=1e-12, atol=1e-12)


def test_histogramdd_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    points = RNG.standard_normal((50, 2)).astype(np.float32)
    weight = RNG.uniform(0, 1, 50).astype(np.float32)
    edges = [np.array([-2.0, -0.5, 0.0, 3.0], np.float32), np.array([-1.0, 1.0], np.float32)]
    calls = [({"bins": 3}, {"bins": 3}),
             ({"bins": [2, 4], "range": [0.0, 1.0, -1.0, 1.0], "density": True},) * 2,
             ({"bins": [agnostic.tensor(e, device=device) for e in edges], "weight": agnostic.tensor(weight,
                                                                                                    device=device)},
              {"bins": [torch.tensor(e) for e in edges], "weight": torch.tensor(weight)})]
    for ours_kwargs, theirs_kwargs in calls:
        ours = agnostic.histogramdd(agnostic.tensor(points, device=device), **ours_kwargs)
        theirs = torch.histogramdd(torch.tensor(points), **theirs_kwargs)
        assert ours.hist.dtype is agnostic.float32
        np.testing.assert_allclose(ours.hist.cpu().numpy(), theirs.hist.numpy(), rtol=1e-5, atol=1e-6)
        for a, b in zip(ours.bin_edges, theirs.bin_edges):
            # one float32 step of the range apart at most (PyTorch's versions place edges near 0 differently)
            np.testing.assert_allclose(a.cpu().numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_histogramdd_edges_of_ranges(device):
    constant = agnostic.histogramdd(agnostic.ones(2, 2, device=device), bins=2)
    np.testing.assert_allclose(constant.bin_edges[0].cpu().numpy(), [0.5, 1.0, 1.5])  # widened by a half each way
    np.testing.assert_allclose(constant.hist.cpu().numpy(), [[0, 0], [0, 2]])
    empty = agnostic.histogramdd(agnostic.ones(0, 2, device=device), bins=2)
    np.testing.assert_allclose(empty.bin_edges[1].cpu().numpy(), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(empty.hist.cpu().numpy(), 0)
    # NaN coordinates and points outside the range are left out; the last edge counts in the last bin
    points = agnostic.tensor([[0.0, float("nan")], [1.0, 1.0], [2.0, 0.0]], device=device)
    clipped = agnostic.histogramdd(points, bins=[2, 2], range=[0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(clipped.hist.cpu().numpy(), [[0, 0], [0, 1]])
    batched = agnostic.histogramdd(agnostic.tensor(RNG.standard_normal((2, 5, 3)), device=device), bins=2)
    assert batched.hist.sum().item() == 10
    assert "agnostic.return_types.histogramdd(" in repr(clipped)


def test_histogramdd_errors(device):
    points = agnostic.tensor([[0.0, 1.0], [1.0, 0.0]], device=device)
    for call, error, message in [
        (lambda: agnostic.histogramdd(points, bins=[2]), RuntimeError, "innermost dimension"),
        (lambda: agnostic.histogramdd(points, bins=[2, 0]), RuntimeError, "bins must be > 0"),
        (lambda: agnostic.histogramdd(points, bins=2, range=[0.0, 1.0, 0.0]), RuntimeError, "should have 4 elements"),
        (lambda: agnostic.histogramdd(points, bins=2, range=[1.0, 0.0, 0.0, 1.0]), RuntimeError,
         "min should not exceed max"),
        (lambda: agnostic.histogramdd(points, bins=2, range=[float("nan"), 0.0, 0.0, 1.0]), RuntimeError,
         "not finite"),
        (lambda: agnostic.histogramdd(points.long(), bins=2), NotImplementedError, "not implemented"),
        (lambda: agnostic.histogramdd(points[0], bins=2), RuntimeError, "at least 2 dimensions"),
        (lambda: agnostic.histogramdd(points, bins=2, weight=agnostic.ones(3, device=device)), RuntimeError,
         "excluding its innermost dimension"),
        (lambda: agnostic.histogramdd(points, bins=2, weight=agnostic.ones(2, dtype=agnostic.float64,
                                                                          device=device)), RuntimeError,
         "same dtype"),
        (lambda: agnostic.histogramdd(points, bins=[agnostic.tensor([0.0, 1.0], dtype=agnostic.float64,
                                                                    device=device)] * 2), RuntimeError,
         "same dtype"),
    ]:
        with pytest.raises(error, match=message):
            call()
