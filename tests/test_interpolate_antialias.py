"""F.interpolate(antialias=True): PyTorch's (PIL's) separable anti-aliased bilinear and bicubic resampling, with
gradients."""

import numpy as np
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = np.random.default_rng(0)
IMAGE = RNG.standard_normal((2, 3, 17, 23))
CALLS = [dict(size=(5, 7)), dict(scale_factor=0.3), dict(scale_factor=(0.5, 0.25)), dict(size=(30, 40)),
         dict(size=(5, 40)), dict(size=(5, 7), align_corners=True),
         dict(scale_factor=0.37, recompute_scale_factor=True), dict(size=(1, 1))]


def _box_average_reference(row, factor):
    """Bilinear anti-aliasing by an integer factor is a triangle filter of half-width ``factor``: by hand."""
    out = []
    for i in range(len(row) // factor):
        center = factor * (i + 0.5)
        positions = np.arange(len(row)) + 0.5
        weights = np.maximum(1 - np.abs(positions - center) / factor, 0)
        out.append((weights * row).sum() / weights.sum())
    return np.array(out)


def test_bilinear_downsampling_by_an_integer_factor_is_a_normalized_triangle_filter(device):
    row = np.arange(12, dtype=np.float64) ** 2
    result = F.interpolate(agnostic.tensor(row.reshape(1, 1, 1, 12), device=device), size=(1, 3), mode="bilinear",
                           antialias=True)
    np.testing.assert_allclose(result.cpu().numpy().ravel(), _box_average_reference(row, 4), rtol=1e-12)


def test_constant_images_stay_constant(device):
    for mode in ("bilinear", "bicubic"):
        result = F.interpolate(agnostic.full((1, 1, 9, 13), 2.5, device=device), size=(4, 3), mode=mode,
                               antialias=True)
        np.testing.assert_allclose(result.cpu().numpy(), 2.5, rtol=1e-6)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("call", range(len(CALLS)))
def test_matches_pytorch(device, mode, call):
    torch = pytest.importorskip("torch")
    kwargs = CALLS[call]
    ours = F.interpolate(agnostic.tensor(IMAGE, device=device), mode=mode, antialias=True, **kwargs)
    theirs = torch.nn.functional.interpolate(torch.tensor(IMAGE), mode=mode, antialias=True, **kwargs)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), rtol=1e-10, atol=1e-12)


def test_float32_stays_float32(device):
    result = F.interpolate(agnostic.ones(1, 1, 8, 8, device=device), scale_factor=0.5, mode="bicubic", antialias=True)
    assert result.dtype is agnostic.float32 and result.shape == (1, 1, 4, 4)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_gradcheck_and_backward_match_pytorch(device, mode):
    x = agnostic.tensor(IMAGE[:1, :1, :9, :11], device=device, requires_grad=True)
    assert gradcheck(lambda t: F.interpolate(t, size=(4, 5), mode=mode, antialias=True), (x,))
    upstream = RNG.standard_normal((1, 1, 4, 5))
    F.interpolate(x, size=(4, 5), mode=mode, antialias=True).backward(agnostic.tensor(upstream, device=device))
    torch = pytest.importorskip("torch")
    reference = torch.tensor(IMAGE[:1, :1, :9, :11], requires_grad=True)
    torch.nn.functional.interpolate(reference, size=(4, 5), mode=mode, antialias=True).backward(
        torch.tensor(upstream))
    np.testing.assert_allclose(x.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_other_modes_and_ranks_are_refused(device):
    with pytest.raises(NotImplementedError, match="restricted to bilinear and bicubic"):
        F.interpolate(agnostic.ones(1, 1, 4, 4, device=device), scale_factor=0.5, mode="nearest", antialias=True)
    with pytest.raises(NotImplementedError, match="4-D"):
        F.interpolate(agnostic.ones(1, 1, 4, device=device), scale_factor=0.5, mode="linear", antialias=True)
