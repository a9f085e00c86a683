"""Short-time Fourier transforms (stft and istft), as PyTorch's.

Both are composed of differentiable ops (a frame gather by ``index_select``, the window product, ``agnostic.fft``'s
transforms, and an overlap-add by ``index_add``), so their gradients, for the signal and for the window, come from
those ops' own, on every device.
"""

import warnings

import numpy

from .. import fft as _fft
from ._dispatch import check_tensor
from ._registry import composite, public_names
from .complex import view_as_real
from .creation import as_tensor, ones, zeros
from .indexing import index_select
from .shape import cat

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
_NO_WINDOW = ("A window was not provided. A rectangular window will be applied, which is known to cause spectral "
              "leakage. Other windows such as agnostic.hann_window or agnostic.hamming_window are recommended to "
              "reduce spectral leakage. To suppress this warning and use a rectangular window, explicitly set "
              "`window=agnostic.ones(n_fft, device=<device>)`.")


def _index(positions, device):
    return as_tensor(numpy.ascontiguousarray(positions, dtype=numpy.int64), device=device)


def _centre_padded(input, pad, mode):
    """``input`` padded by ``pad`` on both ends of its last dim, as ``F.pad(input, [pad, pad], mode)``."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}; use one of {', '.join(_PAD_MODES)}")
    size = input.shape[-1]
    if mode == "constant":
        edge = zeros(*input.shape[:-1], pad, dtype=input.dtype, device=input.device)
        return cat([edge, input, edge], -1)
    if mode == "reflect" and pad >= size:
        raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, but got: "
                           f"padding ({pad}, {pad}) at dimension 2 of input {[1] + list(input.shape)}; "
                           "use a longer signal, a smaller n_fft or pad_mode='constant'")
    if mode == "circular" and pad > size:
        raise RuntimeError("Padding value causes wrapping around more than once; use a longer signal or a smaller "
                           "n_fft")
    positions = numpy.arange(-pad, size + pad)
    if mode == "replicate":
        positions = numpy.clip(positions, 0, size - 1)
    elif mode == "circular":
        positions = positions % size
    else:
        period = 2 * (size - 1)
        folded = numpy.abs(positions) % period
        positions = numpy.where(folded >= size, period - folded, folded)
    return index_select(input, -1, _index(positions, input.device))


def _centred_window(window, win_length, n_fft, dtype, device):
    """The window (ones when None) zero-padded on both sides to ``n_fft``, centred as PyTorch centres it."""
    if window is None:
        window = ones(win_length, dtype=dtype, device=device)
    left = (n_fft - win_length) // 2
    if left == 0 and win_length == n_fft:
        return window
    parts = [zeros(left, dtype=window.dtype, device=window.device), window,
             zeros(n_fft - win_length - left, dtype=window.dtype, device=window.device)]
    return cat(parts, 0)


def _frame_positions(n_frames, n_fft, hop_length):
    """Each frame's sample positions, as one flat index: frame ``t`` covers ``t * hop_length + (0..n_fft-1)``."""
    return (numpy.arange(n_frames)[:, None] * hop_length + numpy.arange(n_fft)).reshape(-1)


def _describe(name, input, n_fft, hop_length, win_length, window):
    shown = "None" if window is None else f"{window.dtype}{list(window.shape)}"
    return (f"{name}({input.dtype}{list(input.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={shown})")


@composite()
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None, align_to_window=None):
    """The short-time Fourier transform (``torch.stft``): the DFT of each ``n_fft``-sample frame of ``input``
    (1-D, or 2-D with a batch dim), frames ``hop_length`` apart (``n_fft // 4`` by default), each multiplied by
    ``window`` (``win_length`` samples, zero-padded to ``n_fft`` on both sides; ones when None).

    ``center`` pads ``n_fft // 2`` samples on both ends (``pad_mode``) so that frame ``t`` is centred on sample
    ``t * hop_length``; ``normalized`` multiplies by ``n_fft ** -0.5``; ``onesided`` (default for real input and
    window) keeps the ``n_fft // 2 + 1`` non-redundant frequencies. The result is ``(B?, N, T)`` complex, or
    ``(B?, N, T, 2)`` real with ``return_complex=False`` (deprecated); real input must say which.

        >>> window = agnostic.hann_window(4)
        >>> spectrum = agnostic.stft(agnostic.arange(8.0), 4, hop_length=2, window=window, return_complex=True)
        >>> spectrum.shape
        agnostic.Size([3, 5])
        >>> spectrum[:, 1]
        tensor([ 4.+0.j, -2.+1.j,  0.+0.j])
    """
    check_tensor("stft", input)
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_input = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_input:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release; pass "
                               "return_complex=True")
        return_complex = True
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    described = _describe("stft", input, n_fft, hop_length, win_length, window)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f"{described}: expected a tensor of floating point or complex values; convert "
                                  "the signal with .float() first")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{described}: expected a 1D or 2D tensor (a signal, or a batch of signals), but got "
                           f"{input.ndim} dimensions; reshape it to (batch, length)")
    if window is None:
        warnings.warn(_NO_WINDOW, UserWarning, stacklevel=3)
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated; use return_complex=True and "
                      "agnostic.view_as_real on the result for the old format", UserWarning, stacklevel=3)
    signal = input if input.ndim == 2 else input.unsqueeze(0)
    if center:
        signal = _centre_padded(signal, n_fft // 2, pad_mode)
    length = signal.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"{described}: expected 0 < n_fft < {length}, but got n_fft={n_fft}; use a smaller n_fft "
                           "or a longer signal")
    if hop_length <= 0:
        raise RuntimeError(f"{described}: expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise RuntimeError(f"{described}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{described}: expected a 1D window tensor of size equal to win_length={win_length}, "
                           f"but got window with size {list(window.shape)}")
    padded_window = _centred_window(window, win_length, n_fft, input.dtype, input.device)
    if align_to_window and win_length < n_fft:
        # frames start where the window's non-zero part starts, rather than where its zero padding does
        left = (n_fft - win_length) // 2
        signal = cat([zeros(signal.shape[0], left, dtype=signal.dtype, device=signal.device), signal,
                      zeros(signal.shape[0], n_fft - win_length - left, dtype=signal.dtype, device=signal.device)],
                     -1)
        length = signal.shape[-1]
    n_frames = 1 + (length - n_fft) // hop_length
    frames = index_select(signal, -1, _index(_frame_positions(n_frames, n_fft, hop_length), signal.device))
    frames = frames.reshape(signal.shape[0], n_frames, n_fft) * padded_window
    complex_frames = frames.dtype.is_complex
    onesided = not complex_frames if onesided is None else onesided
    norm = "ortho" if normalized else "backward"
    if complex_frames:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex; pass onesided=False")
        spectrum = _fft.fft(frames, dim=-1, norm=norm)
    else:
        spectrum = (_fft.rfft if onesided else _fft.fft)(frames, dim=-1, norm=norm)
    spectrum = spectrum.transpose(1, 2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else view_as_real(spectrum.contiguous())


@composite()
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False, onesided=None,
          length=None, return_complex=False):
    """The inverse short-time Fourier transform (``torch.istft``): the least-squares signal whose ``stft`` (same
    arguments) is ``input``, a complex ``(B?, N, T)`` tensor. Each frame's inverse DFT is multiplied by the window,
    overlap-added, and divided by the overlap-added squared window, which must not vanish anywhere (the NOLA
    condition). ``length`` trims or zero-pads the result; ``return_complex`` for a two-sided complex signal.

        >>> window = agnostic.hann_window(4)
        >>> signal = agnostic.arange(8.0)
        >>> spectrum = agnostic.stft(signal, 4, hop_length=1, window=window, return_complex=True)
        >>> agnostic.istft(spectrum, 4, hop_length=1, window=window, length=8)
        tensor([0., 1., 2., 3., 4., 5., 6., 7.])
    """
    check_tensor("istft", input)
    if not input.dtype.is_complex:
        raise TypeError("istft requires a complex-valued input tensor matching the output from stft with "
                        "return_complex=True; convert a (..., 2) real tensor with agnostic.view_as_complex")
    hop_length = n_fft >> 2 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    described = _describe("istft", input, n_fft, hop_length, win_length, window)
    if input.ndim < 2:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{max(input.ndim, 1)}, "
                         f"{max(input.ndim, 1) - 1}], but got -{3 - input.ndim})")
    fft_size, n_frames = input.shape[-2], input.shape[-1]
    if input.numel() == 0:
        raise RuntimeError(f"{described}: input tensor cannot be empty.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{described}: expected a tensor with 3 or 4 dimensions, but got {input.ndim + 1} (a "
                           "complex (freq, frames) or (batch, freq, frames) tensor)")
    onesided = fft_size != n_fft if onesided is None else onesided
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{described}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{described}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise RuntimeError(f"{described}: expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{described}: expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win_length):
        raise RuntimeError(f"{described}: Invalid window shape. window has to be 1D and length of `win_length`")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied. Please provide the same "
                      "window used by stft to make the inversion lossless. To suppress this warning and use a "
                      "rectangular window, explicitly set `window=agnostic.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=3)
    padded_window = _centred_window(window, win_length, n_fft, input.dtype.to_real(), input.device)
    frames = (input if input.ndim == 3 else input.unsqueeze(0)).transpose(1, 2)  # (batch, frames, freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex; pass onesided=False")
        frames = _fft.ifft(frames, dim=-1, norm=norm)
    else:
        if window is not None and window.dtype.is_complex:
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = frames[..., :n_fft // 2 + 1]
        frames = _fft.irfft(frames, n=n_fft, dim=-1, norm=norm)
    frames = frames * padded_window
    expected_length = n_fft + hop_length * (n_frames - 1)
    positions = _index(_frame_positions(n_frames, n_fft, hop_length), input.device)
    batch = frames.shape[0]
    signal = zeros(batch, expected_length, dtype=frames.dtype, device=frames.device).index_add(
        1, positions, frames.reshape(batch, n_frames * n_fft))
    squared = (padded_window * padded_window).expand(n_frames, n_fft).reshape(-1)
    envelope = zeros(expected_length, dtype=squared.dtype, device=squared.device).index_add(0, positions, squared)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = expected_length - n_fft // 2 if center else expected_length
    signal, envelope = signal[:, start:end], envelope[start:end]
    if envelope.numel() and bool(envelope.abs().min() < 1e-11):
        raise RuntimeError(f"{described}: window overlap add min: {float(envelope.abs().min()):g}; the squared "
                           "window's overlap-add must not vanish anywhere (NOLA): use a smaller hop_length, another "
                           "window, or center=True")
    signal = signal / envelope
    if input.ndim == 2:
        signal = signal.squeeze(0)
    if end > expected_length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is being padded with zeros "
                      "in the tail. Please check your center and hop_length settings.", UserWarning, stacklevel=3)
        tail = zeros(*signal.shape[:-1], end - expected_length, dtype=signal.dtype, device=signal.device)
        signal = cat([signal, tail], -1)
    return signal


__all__ = public_names(globals())
