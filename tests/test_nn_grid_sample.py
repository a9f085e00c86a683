"""F.affine_grid and F.grid_sample: values, gradients with respect to input, grid and theta, warnings and errors,
against a NumPy reference, finite differences and (where installed) PyTorch."""

import itertools
import warnings

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

MODES_2D = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"],
                                  [True, False]))
MODES_3D = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [True, False]))


def _tensor(array, device, requires_grad=False):
    return agnostic.tensor(array, device=device, requires_grad=requires_grad)


def _host(tensor):
    return tensor.detach().cpu().numpy()


def _reference_bilinear_zeros(image, grid, align_corners):
    """Bilinear sampling of one (C, H, W) image at an (Ho, Wo, 2) grid with zeros padding, by loops."""
    channels, height, width = image.shape
    out = numpy.zeros((channels,) + grid.shape[:2])
    for i, j in numpy.ndindex(*grid.shape[:2]):
        gx, gy = grid[i, j]
        if align_corners:
            x, y = (gx + 1) / 2 * (width - 1), (gy + 1) / 2 * (height - 1)
        else:
            x, y = ((gx + 1) * width - 1) / 2, ((gy + 1) * height - 1) / 2
        x0, y0 = int(numpy.floor(x)), int(numpy.floor(y))
        for dx, dy in itertools.product((0, 1), repeat=2):
            xi, yi = x0 + dx, y0 + dy
            if 0 <= xi < width and 0 <= yi < height:
                weight = (x - x0 if dx else 1 - (x - x0)) * (y - y0 if dy else 1 - (y - y0))
                out[:, i, j] += weight * image[:, yi, xi]
    return out


@pytest.mark.parametrize("align_corners", [True, False])
def test_bilinear_zeros_matches_a_loop_reference(device, align_corners):
    rng = numpy.random.default_rng(0)
    image, grid = rng.standard_normal((2, 3, 4, 5)), rng.uniform(-1.3, 1.3, (2, 3, 2, 2))
    out = F.grid_sample(_tensor(image, device), _tensor(grid, device), align_corners=align_corners)
    expected = numpy.stack([_reference_bilinear_zeros(image[n], grid[n], align_corners) for n in range(2)])
    numpy.testing.assert_allclose(_host(out), expected, atol=1e-12)


def test_identity_affine_grid_reproduces_the_image(device):
    image = agnostic.arange(20.0, device=device).reshape(1, 1, 4, 5)
    theta = agnostic.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)
    for align_corners in (True, False):
        grid = F.affine_grid(theta, (1, 1, 4, 5), align_corners=align_corners)
        for mode in ("bilinear", "nearest", "bicubic"):
            out = F.grid_sample(image, grid, mode=mode, align_corners=align_corners)
            numpy.testing.assert_allclose(_host(out), _host(image), atol=1e-5)


def test_padding_modes_read_the_border_and_the_reflection(device):
    row = agnostic.tensor([[[[0.0, 1.0, 2.0, 3.0]]]], device=device)
    # x = 1.5 in normalized units is pixel (1.5 + 1) / 2 * 3 = 3.75 with align_corners=True: past the last pixel (3)
    grid = agnostic.tensor([[[[1.5, 0.0]]]], device=device)
    border = F.grid_sample(row, grid, padding_mode="border", align_corners=True)
    reflection = F.grid_sample(row, grid, padding_mode="reflection", align_corners=True)
    zeros = F.grid_sample(row, grid, padding_mode="zeros", align_corners=True)
    assert _host(border).item() == pytest.approx(3.0)
    assert _host(reflection).item() == pytest.approx(2.25)  # 3.75 reflects off 3 to 2.25
    assert _host(zeros).item() == pytest.approx(0.75)  # pixel 3 weighted 0.25, pixel 4 (a zero) 0.75


def test_nearest_rounds_half_to_even_and_gives_zero_grid_gradient(device):
    row = agnostic.tensor([[[[10.0, 20.0, 30.0]]]], device=device)
    grid = agnostic.tensor([[[[-0.5, 0.0], [0.5, 0.0]]]], device=device, requires_grad=True)  # pixels 0.5 and 1.5
    out = F.grid_sample(row, grid, mode="nearest", align_corners=True)
    numpy.testing.assert_array_equal(_host(out), [[[[10.0, 30.0]]]])
    out.sum().backward()
    numpy.testing.assert_array_equal(_host(grid.grad), numpy.zeros((1, 1, 2, 2)))


@pytest.mark.parametrize("mode,padding_mode,align_corners", [
    ("bilinear", "zeros", False), ("bilinear", "border", True), ("bilinear", "reflection", False),
    ("bicubic", "zeros", True), ("bicubic", "reflection", False), ("nearest", "border", False)])
def test_gradcheck_2d(device, mode, padding_mode, align_corners):
    rng = numpy.random.default_rng(1)
    image = _tensor(rng.standard_normal((1, 2, 3, 4)), device, requires_grad=True)
    # keep sample points off pixel boundaries, where the interpolation is not differentiable
    grid = _tensor(rng.uniform(-1.4, 1.4, (1, 2, 3, 2)), device, requires_grad=mode != "nearest")
    assert gradcheck(lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding_mode,
                                                align_corners=align_corners), (image, grid))


@pytest.mark.parametrize("padding_mode", ["zeros", "reflection"])
def test_gradcheck_3d_trilinear(device, padding_mode):
    rng = numpy.random.default_rng(2)
    volume = _tensor(rng.standard_normal((1, 1, 2, 3, 3)), device, requires_grad=True)
    grid = _tensor(rng.uniform(-1.2, 1.2, (1, 2, 2, 1, 3)), device, requires_grad=True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, padding_mode=padding_mode, align_corners=False),
                     (volume, grid))


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_gradcheck_affine_grid(device, size):
    dims = len(size) - 2
    theta = _tensor(numpy.random.default_rng(3).standard_normal((size[0], dims, dims + 1)), device,
                    requires_grad=True)
    assert gradcheck(lambda t: F.affine_grid(t, size, align_corners=False), (theta,))


def test_affine_grid_hand_values(device):
    # a 90-degree rotation maps (x, y) to (-y, x)
    theta = agnostic.tensor([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]], device=device)
    grid = F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)
    numpy.testing.assert_allclose(_host(grid), [[[[0.5, -0.5], [0.5, 0.5]], [[-0.5, -0.5], [-0.5, 0.5]]]])


def test_unit_size_affine_grid_is_centered(device):
    theta = agnostic.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], device=device)
    with pytest.warns(UserWarning, match="unit-size grids"):
        grid = F.affine_grid(theta, (1, 1, 1, 3), align_corners=True)
    numpy.testing.assert_allclose(_host(grid), [[[[-1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]]])


def test_align_corners_none_warns_as_pytorch(device):
    image, grid = agnostic.zeros(1, 1, 2, 2, device=device), agnostic.zeros(1, 1, 1, 2, device=device)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(image, grid)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.affine_grid(agnostic.zeros(1, 2, 3, device=device), (1, 1, 2, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.grid_sample(image, grid, align_corners=False)


def test_bad_arguments_raise_pytorchs_errors(device):
    image = agnostic.zeros(2, 3, 4, 5, device=device)
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(image, agnostic.zeros(2, 1, 1, 2, device=device), mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(image, agnostic.zeros(2, 1, 1, 2, device=device), padding_mode="edge", align_corners=False)
    with pytest.raises(RuntimeError, match="same batch size"):
        F.grid_sample(image, agnostic.zeros(1, 1, 1, 2, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match="size 2 in last dimension"):
        F.grid_sample(image, agnostic.zeros(2, 1, 1, 3, device=device), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        F.grid_sample(agnostic.zeros(1, 1, 2, 2, 2, device=device), agnostic.zeros(1, 1, 1, 1, 3, device=device),
                      mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match="non-empty spatial"):
        F.grid_sample(agnostic.zeros(2, 3, 0, 5, device=device), agnostic.zeros(2, 1, 1, 2, device=device),
                      align_corners=False)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(image, agnostic.zeros(2, 1, 1, 2, dtype=agnostic.float64, device=device), align_corners=False)
    with pytest.raises(ValueError, match="floating point"):
        F.affine_grid(agnostic.zeros(1, 2, 3, dtype=agnostic.int64, device=device), (1, 1, 2, 2),
                      align_corners=False)
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(agnostic.zeros(1, 3, 4, device=device), (1, 1, 2, 2), align_corners=False)
    with pytest.raises(NotImplementedError, match="4D and 5D"):
        F.affine_grid(agnostic.zeros(1, 2, 3, device=device), (1, 1, 2), align_corners=False)


@pytest.mark.parametrize("mode,padding_mode,align_corners", MODES_2D)
def test_2d_values_and_gradients_match_pytorch(device, mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(4)
    image, grid = rng.standard_normal((2, 3, 4, 5)), rng.uniform(-1.6, 1.6, (2, 3, 4, 2))
    weights = rng.standard_normal((2, 3, 3, 4))
    _compare_with_pytorch(torch, device, image, grid, weights, mode, padding_mode, align_corners)


@pytest.mark.parametrize("mode,padding_mode,align_corners", MODES_3D)
def test_3d_values_and_gradients_match_pytorch(device, mode, padding_mode, align_corners):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(5)
    image, grid = rng.standard_normal((2, 2, 3, 4, 5)), rng.uniform(-1.6, 1.6, (2, 2, 3, 2, 3))
    weights = rng.standard_normal((2, 2, 2, 3, 2))
    _compare_with_pytorch(torch, device, image, grid, weights, mode, padding_mode, align_corners)


def _compare_with_pytorch(torch, device, image, grid, weights, mode, padding_mode, align_corners):
    image_t, grid_t = torch.tensor(image, requires_grad=True), torch.tensor(grid, requires_grad=True)
    expected = torch.nn.functional.grid_sample(image_t, grid_t, mode=mode, padding_mode=padding_mode,
                                               align_corners=align_corners)
    (expected * torch.tensor(weights)).sum().backward()
    image_a, grid_a = _tensor(image, device, True), _tensor(grid, device, True)
    out = F.grid_sample(image_a, grid_a, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    (out * _tensor(weights, device)).sum().backward()
    numpy.testing.assert_allclose(_host(out), expected.detach().numpy(), atol=1e-12)
    numpy.testing.assert_allclose(_host(image_a.grad), image_t.grad.numpy(), atol=1e-12)
    numpy.testing.assert_allclose(_host(grid_a.grad), grid_t.grad.numpy(), atol=1e-11)


@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 3, 4, 5, 6), (2, 1, 1, 5)])
@pytest.mark.parametrize("align_corners", [True, False])
def test_affine_grid_matches_pytorch(device, size, align_corners):
    torch = pytest.importorskip("torch")
    dims = len(size) - 2
    theta = numpy.random.default_rng(6).standard_normal((2, dims, dims + 1))
    theta_t, theta_a = torch.tensor(theta, requires_grad=True), _tensor(theta, device, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unit-size warning
        expected = torch.nn.functional.affine_grid(theta_t, size, align_corners=align_corners)
        out = F.affine_grid(theta_a, size, align_corners=align_corners)
    weights = numpy.random.default_rng(7).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(weights)).sum().backward()
    (out * _tensor(weights, device)).sum().backward()
    numpy.testing.assert_allclose(_host(out), expected.detach().numpy(), atol=1e-12)
    numpy.testing.assert_allclose(_host(theta_a.grad), theta_t.grad.numpy(), atol=1e-12)


def test_float32_keeps_its_dtype_and_device(device):
    image = agnostic.randn(1, 2, 3, 3, device=device)
    grid = agnostic.rand(1, 2, 2, 2, device=device) * 2 - 1
    out = F.grid_sample(image, grid, align_corners=False)
    assert out.dtype == agnostic.float32 and out.device == device and tuple(out.shape) == (1, 2, 2, 2)
