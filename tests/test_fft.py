"""agnostic.fft: values against NumPy and PyTorch, n/s/dim/norm, result dtypes, errors and gradients."""

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

F = agnostic.fft
RNG = np.random.default_rng(1)
NORMS = [None, "backward", "ortho", "forward"]


def _random(*shape, complex=False):
    real = RNG.standard_normal(shape)
    return real + 1j * RNG.standard_normal(shape) if complex else real


def _close(tensor, expected, atol=1e-5):
    np.testing.assert_allclose(tensor.cpu().numpy(), expected, atol=atol, rtol=1e-4)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_one_dimensional_transforms_match_numpy(device, name, norm):
    takes_complex = name in ("fft", "ifft", "irfft", "hfft")
    x = _random(3, 6, complex=takes_complex)
    ours, reference = getattr(F, name), getattr(np.fft, name)
    for n in (None, 4, 9):
        _close(ours(agnostic.tensor(x, device=device), n=n, dim=-1, norm=norm), reference(x, n=n, axis=-1, norm=norm))
    _close(ours(agnostic.tensor(x, device=device), dim=0, norm=norm), reference(x, axis=0, norm=norm))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"])
def test_multi_dimensional_transforms_match_numpy(device, name, norm):
    takes_complex = not name.startswith("rfft")
    x = _random(2, 4, 6, complex=takes_complex)
    ours, reference = getattr(F, name), getattr(np.fft, name)
    _close(ours(agnostic.tensor(x, device=device), norm=norm), reference(x, norm=norm))
    s, dims = (3, 8), (0, 2)
    _close(ours(agnostic.tensor(x, device=device), s=s, dim=dims, norm=norm), reference(x, s=s, axes=dims, norm=norm))
    _close(ours(agnostic.tensor(x, device=device), s=s, norm=norm), reference(x, s=s, axes=(1, 2), norm=norm))


def test_result_dtypes_follow_pytorch(device):
    x32 = agnostic.ones(4, device=device)
    assert F.fft(x32).dtype is agnostic.complex64
    assert F.rfft(x32).dtype is agnostic.complex64
    assert F.fft(x32.double()).dtype is agnostic.complex128
    assert F.irfft(F.rfft(x32)).dtype is agnostic.float32
    assert F.hfft(x32).dtype is agnostic.float32
    assert F.ihfft(x32.double()).dtype is agnostic.complex128
    assert F.fft(agnostic.tensor([1, 2], device=device)).dtype is agnostic.complex64
    _close(F.fft(agnostic.tensor([1, 2], device=device)), [3, -1])


def test_errors(device):
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        F.fft(agnostic.ones(4, device=device), n=0)
    with pytest.raises(ValueError, match="Invalid normalization mode"):
        F.fft(agnostic.ones(4, device=device), norm="sideways")
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got ComplexFloat"):
        F.rfft(agnostic.ones(4, device=device, dtype=agnostic.complex64))
    with pytest.raises(RuntimeError, match="Unsupported dtype Half"):
        F.fft(agnostic.ones(4, device=device, dtype=agnostic.float16))
    with pytest.raises(IndexError):
        F.fft(agnostic.ones(4, device=device), dim=1)


def test_frequencies_and_shifts(device):
    _close(F.fftfreq(5, device=device), np.fft.fftfreq(5))
    _close(F.fftfreq(6, 0.5, device=device), np.fft.fftfreq(6, 0.5))
    _close(F.rfftfreq(7, 2.0, device=device), np.fft.rfftfreq(7, 2.0))
    assert F.fftfreq(4, dtype=agnostic.float64, device=device).dtype is agnostic.float64
    assert F.rfftfreq(4).dtype is agnostic.float32
    assert F.fftfreq(3, requires_grad=True).requires_grad
    x = np.arange(12.0).reshape(3, 4)
    _close(F.fftshift(agnostic.tensor(x, device=device)), np.fft.fftshift(x))
    _close(F.fftshift(agnostic.tensor(x, device=device), dim=1), np.fft.fftshift(x, axes=1))
    _close(F.ifftshift(agnostic.tensor(x, device=device)), np.fft.ifftshift(x))
    _close(F.ifftshift(F.fftshift(agnostic.tensor(x, device=device), dim=(0, 1)), dim=(0, 1)), x)


@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_transforms_gradcheck(device, norm):
    x = agnostic.tensor(_random(2, 5), device=device, requires_grad=True)
    # chains of transforms whose output is real, so that finite differences see every gradient
    assert gradcheck(lambda t: F.irfft(F.fft(t, n=6, norm=norm), norm=norm), (x,))
    assert gradcheck(lambda t: F.irfft(F.ifft(t, norm=norm), n=7, norm=norm), (x,))
    assert gradcheck(lambda t: F.irfft(F.rfft(t, n=4, norm=norm), n=5, norm=norm), (x,))
    assert gradcheck(lambda t: F.hfft(F.ihfft(t, norm=norm), n=4, norm=norm), (x,))
    assert gradcheck(lambda t: F.irfftn(F.fftn(t, s=(3, 4), norm=norm), norm=norm), (x,))
    assert gradcheck(lambda t: F.irfft2(F.rfft2(t, norm=norm), s=(2, 5), norm=norm), (x,))
    assert gradcheck(lambda t: F.hfft(F.ifftn(t, dim=0, norm=norm), norm=norm), (x,))


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "rfftn", "irfftn"])
def test_backward_matches_pytorch(device, name):
    torch = pytest.importorskip("torch")
    takes_complex = name in ("irfft", "hfft", "irfftn")
    x = _random(3, 6)
    ours_input = agnostic.tensor(x, device=device, requires_grad=True)
    theirs_input = torch.tensor(x, requires_grad=True)
    kwargs = {"norm": "ortho"}
    if takes_complex:  # a complex input made from the real leaf, so that the gradient reaches it
        ours_out = getattr(F, name)(F.fft(ours_input), **kwargs)
        theirs_out = getattr(torch.fft, name)(torch.fft.fft(theirs_input), **kwargs)
    else:
        ours_out = getattr(F, name)(ours_input, **kwargs)
        theirs_out = getattr(torch.fft, name)(theirs_input, **kwargs)
    assert tuple(ours_out.shape) == tuple(theirs_out.shape)
    grad = _random(*theirs_out.shape, complex=theirs_out.is_complex())
    ours_out.backward(agnostic.tensor(grad, device=device))
    theirs_out.backward(torch.tensor(grad))
    _close(ours_input.grad, theirs_input.grad.numpy())


def test_values_match_pytorch(device):
    torch = pytest.importorskip("torch")
    x = _random(4, 6).astype(np.float32)
    for name in ("fft", "rfft", "ihfft", "fftn", "rfft2"):
        ours = getattr(F, name)(agnostic.tensor(x, device=device))
        theirs = getattr(torch.fft, name)(torch.tensor(x))
        assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
        _close(ours, theirs.resolve_conj().numpy(), atol=1e-4)


@pytest.mark.parametrize("name", ["hfft", "irfft", "fft", "ifft2"])
def test_real_input_to_a_complex_transform_gets_a_real_gradient(device, name):
    torch = pytest.importorskip("torch")
    x = _random(4, 5)
    ours_input = agnostic.tensor(x, device=device, requires_grad=True)
    theirs_input = torch.tensor(x, requires_grad=True)
    ours_out = getattr(F, name)(ours_input, norm="forward")
    theirs_out = getattr(torch.fft, name)(theirs_input, norm="forward")
    grad = _random(*theirs_out.shape, complex=theirs_out.is_complex())
    ours_out.backward(agnostic.tensor(grad, device=device))
    theirs_out.backward(torch.tensor(grad))
    assert ours_input.grad.dtype is agnostic.float64
    _close(ours_input.grad, theirs_input.grad.numpy())
