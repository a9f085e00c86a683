"""stft and istft: values against a NumPy reference and PyTorch, round trips, PyTorch's argument rules and errors,
and gradients (gradcheck, and backward against PyTorch's)."""

import warnings

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

RNG = np.random.default_rng(3)
NUMPY_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}
# (n_fft, hop_length, win_length, center, normalized, onesided, pad_mode)
CASES = [
    (8, None, None, True, False, None, "reflect"),
    (8, 3, 5, False, True, None, "reflect"),
    (16, 4, 16, True, True, False, "constant"),
    (7, 2, 6, True, False, True, "replicate"),
    (9, 2, 4, True, False, None, "circular"),
]


def _reference_stft(x, n_fft, hop, win_length, window, center, normalized, onesided, pad_mode):
    """The STFT from its definition, in NumPy: (batch, freq, frames)."""
    hop = n_fft // 4 if hop is None else hop
    win_length = n_fft if win_length is None else win_length
    left = (n_fft - win_length) // 2
    padded_window = np.zeros(n_fft, window.dtype)
    padded_window[left:left + win_length] = window
    if center:
        x = np.pad(x, [(0, 0), (n_fft // 2, n_fft // 2)], mode=NUMPY_PAD[pad_mode])
    count = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[:, t * hop:t * hop + n_fft] for t in range(count)], 1) * padded_window
    spectrum = (np.fft.rfft if onesided in (None, True) else np.fft.fft)(frames, axis=-1,
                                                                        norm="ortho" if normalized else None)
    return spectrum.transpose(0, 2, 1)


def _window(length, dtype):
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)).astype(dtype)  # periodic Hann


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES)
def test_stft_matches_numpy_and_pytorch(device, case, dtype):
    n_fft, hop, win_length, center, normalized, onesided, pad_mode = case
    x = RNG.standard_normal((2, 37)).astype(dtype)
    window = _window(win_length or n_fft, dtype)
    ours = agnostic.stft(agnostic.tensor(x, device=device), n_fft, hop, win_length,
                         agnostic.tensor(window, device=device), center, pad_mode, normalized, onesided,
                         return_complex=True)
    assert ours.dtype is (agnostic.complex64 if dtype == "float32" else agnostic.complex128)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    expected = _reference_stft(x, n_fft, hop, win_length, window, center, normalized, onesided, pad_mode)
    np.testing.assert_allclose(ours.cpu().numpy(), expected, atol=tolerance, rtol=tolerance)
    single = agnostic.stft(agnostic.tensor(x[1], device=device), n_fft, hop, win_length,
                           agnostic.tensor(window, device=device), center, pad_mode, normalized, onesided,
                           return_complex=True)
    np.testing.assert_allclose(single.cpu().numpy(), expected[1], atol=tolerance, rtol=tolerance)
    torch = pytest.importorskip("torch")
    theirs = torch.stft(torch.tensor(x), n_fft, hop, win_length, torch.tensor(window), center, pad_mode, normalized,
                        onesided, return_complex=True)
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), atol=tolerance, rtol=tolerance)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [c for c in CASES if c[3]])
def test_istft_inverts_stft_and_matches_pytorch(device, case, dtype):
    n_fft, hop, win_length, center, normalized, onesided, pad_mode = case
    x = RNG.standard_normal((2, 37)).astype(dtype)
    window = agnostic.tensor(_window(win_length or n_fft, dtype), device=device)
    spectrum = agnostic.stft(agnostic.tensor(x, device=device), n_fft, hop, win_length, window, center, pad_mode,
                             normalized, onesided, return_complex=True)
    signal = agnostic.istft(spectrum, n_fft, hop, win_length, window, center, normalized, onesided, length=37)
    assert signal.dtype is agnostic.tensor(x).dtype and tuple(signal.shape) == (2, 37)
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(signal.cpu().numpy(), x, atol=tolerance)
    torch = pytest.importorskip("torch")
    theirs = torch.istft(torch.tensor(spectrum.cpu().numpy()), n_fft, hop, win_length,
                         torch.tensor(window.cpu().numpy()), center, normalized, onesided, length=37)
    np.testing.assert_allclose(signal.cpu().numpy(), theirs.numpy(), atol=tolerance)


def test_istft_length_trims_or_pads_and_two_sided_complex(device):
    x = RNG.standard_normal(20)
    window = agnostic.hann_window(8, dtype=agnostic.float64, device=device)
    spectrum = agnostic.stft(agnostic.tensor(x, device=device), 8, 2, window=window, return_complex=True)
    assert tuple(agnostic.istft(spectrum, 8, 2, window=window).shape) == (20,)
    np.testing.assert_allclose(agnostic.istft(spectrum, 8, 2, window=window, length=12).cpu().numpy(), x[:12])
    with pytest.warns(UserWarning, match="padded with zeros"):
        longer = agnostic.istft(spectrum, 8, 2, window=window, length=30).cpu().numpy()
    np.testing.assert_allclose(longer[:20], x, atol=1e-12)
    # frames reach 4 samples into the right (reflect) padding; past the last frame, zeros
    np.testing.assert_allclose(longer[20:24], x[18:14:-1], atol=1e-12)
    np.testing.assert_array_equal(longer[24:], 0)
    complex_signal = x + 1j * RNG.standard_normal(20)
    two_sided = agnostic.stft(agnostic.tensor(complex_signal, device=device), 8, 2, window=window)
    assert tuple(two_sided.shape) == (8, 11)
    back = agnostic.istft(two_sided, 8, 2, window=window, return_complex=True)
    assert back.dtype is agnostic.complex128
    np.testing.assert_allclose(back.cpu().numpy(), complex_signal, atol=1e-12)
    # a two-sided spectrum of a real signal inverts to real with return_complex=False
    real_two_sided = agnostic.stft(agnostic.tensor(x, device=device), 8, 2, window=window, onesided=False,
                                   return_complex=True)
    np.testing.assert_allclose(agnostic.istft(real_two_sided, 8, 2, window=window).cpu().numpy(), x, atol=1e-12)


def test_stft_argument_rules(device):
    x = agnostic.tensor(RNG.standard_normal(20), dtype=agnostic.float32, device=device)
    window = agnostic.ones(8, device=device)
    with pytest.raises(RuntimeError, match="return_complex parameter be given"):
        agnostic.stft(x, 8, window=window)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        as_real = agnostic.stft(x, 8, window=window, return_complex=False)
    assert tuple(as_real.shape) == (5, 11, 2) and as_real.dtype is agnostic.float32
    with pytest.warns(UserWarning, match="window was not provided"):
        rectangular = agnostic.stft(x, 8, return_complex=True)
    np.testing.assert_allclose(rectangular.cpu().numpy(), agnostic.stft(x, 8, window=window, return_complex=True)
                               .cpu().numpy())
    assert agnostic.stft(x.to(agnostic.complex64), 8, window=window).shape == (8, 11)  # complex: two-sided
    assert x.stft(8, window=window, return_complex=True).shape == (5, 11)
    assert agnostic.stft(x, 8, window=window, center=False, return_complex=True).shape == (5, 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for call, error, message in [
            (lambda: agnostic.stft(x.long(), 8, window=window, return_complex=True), NotImplementedError,
             "floating point or complex"),
            (lambda: agnostic.stft(x.reshape(1, 1, 20), 8, return_complex=True), RuntimeError, "1D or 2D"),
            (lambda: agnostic.stft(x, 30, center=False, return_complex=True), RuntimeError, "0 < n_fft < 20"),
            (lambda: agnostic.stft(x, 8, hop_length=0, return_complex=True), RuntimeError, "hop_length > 0"),
            (lambda: agnostic.stft(x, 8, win_length=9, return_complex=True), RuntimeError, "win_length <= n_fft"),
            (lambda: agnostic.stft(x, 8, win_length=6, window=agnostic.ones(5, device=device), return_complex=True),
             RuntimeError, "size equal to win_length=6"),
            (lambda: agnostic.stft(x.to(agnostic.complex64), 8, onesided=True), RuntimeError, "onesided"),
            (lambda: agnostic.stft(x[:3], 8, return_complex=True), RuntimeError, "Padding size"),
            (lambda: agnostic.stft(x, 8, pad_mode="bogus", return_complex=True), NotImplementedError, "bogus"),
            (lambda: agnostic.stft(x, 8, align_to_window=True, return_complex=True), RuntimeError, "center = false"),
        ]:
            with pytest.raises(error, match=message):
                call()


def test_stft_align_to_window_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(30)
    window = _window(4, "float64")
    ours = agnostic.stft(agnostic.tensor(x, device=device), 8, 2, 4, agnostic.tensor(window, device=device),
                         center=False, align_to_window=True, return_complex=True)
    theirs = torch.stft(torch.tensor(x), 8, 2, 4, torch.tensor(window), center=False, align_to_window=True,
                        return_complex=True)
    np.testing.assert_allclose(ours.cpu().numpy(), theirs.numpy(), atol=1e-12)


def test_istft_errors(device):
    window = agnostic.hann_window(8, device=device)
    spectrum = agnostic.stft(agnostic.randn(20, device=device), 8, 2, window=window, return_complex=True)
    with pytest.raises(TypeError, match="complex-valued input"):
        agnostic.istft(agnostic.view_as_real(spectrum), 8, 2, window=window)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        agnostic.istft(spectrum[:0], 8, 2, window=window)
    with pytest.raises(RuntimeError, match="n_fft / 2 \\+ 1 when onesided=True"):
        agnostic.istft(spectrum, 10, 2, window=agnostic.hann_window(10, device=device))
    with pytest.raises(RuntimeError, match="match n_fft when onesided=False"):
        agnostic.istft(spectrum, 8, 2, window=window, onesided=False)
    with pytest.raises(RuntimeError, match="0 < hop_length <= win_length"):
        agnostic.istft(spectrum, 8, 9, window=window)
    with pytest.raises(RuntimeError, match="Invalid window shape"):
        agnostic.istft(spectrum, 8, 2, window=agnostic.ones(5, device=device))
    with pytest.raises(RuntimeError, match="window overlap add min"):  # periodic Hann is 0 at the first sample
        agnostic.istft(spectrum, 8, 2, window=window, center=False)
    with pytest.raises(RuntimeError, match="onesided"):
        agnostic.istft(spectrum, 8, 2, window=window, return_complex=True)
    with pytest.raises(RuntimeError, match="3 or 4 dimensions"):
        agnostic.istft(spectrum.reshape(1, 1, 5, 11), 8, 2, window=window)


def test_stft_and_istft_gradcheck(device):
    x = agnostic.tensor(RNG.standard_normal((2, 12)), device=device, requires_grad=True)
    window = agnostic.tensor(_window(6, "float64") + 0.5, device=device, requires_grad=True)

    def spectrum(signal, window):
        return agnostic.stft(signal, 8, 3, 6, window, normalized=True, return_complex=True)

    assert gradcheck(lambda s, w: agnostic.view_as_real(spectrum(s, w)), (x, window))
    assert gradcheck(lambda s, w: agnostic.view_as_real(agnostic.stft(s, 6, 2, window=w, center=False,
                                                                      onesided=False, return_complex=True)),
                     (x, agnostic.tensor(RNG.standard_normal(6) + 2, device=device, requires_grad=True)))
    frames = agnostic.tensor(RNG.standard_normal((5, 5, 2)), device=device, requires_grad=True)
    assert gradcheck(lambda f, w: agnostic.istft(agnostic.view_as_complex(f), 8, 3, 6, w, length=13), (frames, window))


def test_stft_istft_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((2, 30))
    window = _window(8, "float64") + 0.1
    upstream = RNG.standard_normal((2, 30))
    ours_x = agnostic.tensor(x, device=device, requires_grad=True)
    ours_w = agnostic.tensor(window, device=device, requires_grad=True)
    theirs_x = torch.tensor(x, requires_grad=True)
    theirs_w = torch.tensor(window, requires_grad=True)
    for module, signal, w in ((agnostic, ours_x, ours_w), (torch, theirs_x, theirs_w)):
        spectrum = module.stft(signal, 8, 2, window=w, return_complex=True)
        magnitude_weighted = spectrum * (1 + module.arange(spectrum.shape[-1], dtype=module.float64).to(signal.device))
        out = module.istft(magnitude_weighted, 8, 2, window=w, length=30)
        (out * module.tensor(upstream).to(signal.device)).sum().backward()
    np.testing.assert_allclose(ours_x.grad.cpu().numpy(), theirs_x.grad.numpy(), atol=1e-10)
    np.testing.assert_allclose(ours_w.grad.cpu().numpy(), theirs_w.grad.numpy(), atol=1e-10)
