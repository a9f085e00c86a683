"""agnostic.fft: discrete Fourier transforms (fft, rfft, fftn and their inverses, fftfreq, fftshift), as torch.fft,
with PyTorch's ``n``/``dim``/``norm`` arguments, result dtypes and gradients on every device."""

import numpy

from . import _dtypes
from ._tensor import TensorBase, _normalize_dim, wrap
from .ops._dispatch import finish
from .ops._registry import composite, public_names
from .ops.creation import arange, as_tensor, zeros
from .ops.shape import cat

# The adjoint of a transform normalized one way is the opposite transform normalized the other way.
_DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


# ----- checks -----------------------------------------------------------------------------------------------------
def _check_norm(norm):
    if norm is None:
        return "backward"
    if norm not in _DUAL:
        raise ValueError(f'Invalid normalization mode: "{norm}"; use "backward" (default), "ortho" or "forward"')
    return norm


def _check_input(input):
    if not isinstance(input, TensorBase):
        raise TypeError(f"fft: argument 'input' must be a Tensor, got {type(input).__name__}")
    if input.dtype in (_dtypes.float16, _dtypes.bfloat16):
        raise RuntimeError(f"Unsupported dtype {_TORCH_NAMES[input.dtype.name]}; convert with .float()")


def _floating(input):
    """Integer and bool inputs as the default float dtype, as PyTorch's transforms take them."""
    _check_input(input)
    return input if input.dtype.category >= 2 else input.to(_dtypes.get_default_dtype())


def _complex_dtype(dtype):
    if dtype.is_complex:
        return dtype
    return _dtypes.complex128 if dtype is _dtypes.float64 else _dtypes.complex64


def _check_size(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _dims_and_sizes(input, s, dim, default_dims=None):
    """PyTorch's rule for ``s``/``dim``: both given (same length); ``dim`` alone; ``s`` alone (the last len(s)
    dims); neither (``default_dims``, or every dim)."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_normalize_dim(d, input.ndim, allow_scalar=False) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"FFT dims must be unique, got {list(dim)}")
        if s is not None and len(s) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same length: got s={list(s)}, "
                               f"dim={list(dim)}")
    elif s is not None:
        if len(s) > input.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {input.ndim} dimensions.")
        dims = list(range(input.ndim - len(s), input.ndim))
    elif default_dims is not None:
        dims = [_normalize_dim(d, input.ndim, allow_scalar=False) for d in default_dims]
    else:
        dims = list(range(input.ndim))
    sizes = [input.shape[d] if s is None or s[i] == -1 else s[i] for i, d in enumerate(dims)]
    for size in sizes:
        _check_size(size)
    return dims, sizes


def _resized(x, dims, sizes):
    """``x`` trimmed or zero-padded at the end of each of ``dims`` to ``sizes`` (what a transform's ``n`` does)."""
    for d, size in zip(dims, sizes):
        have = x.shape[d]
        if have > size:
            x = x.narrow(d, 0, size)
        elif have < size:
            shape = list(x.shape)
            shape[d] = size - have
            x = cat([x, zeros(shape, dtype=x.dtype, device=x.device)], d)
    return x


# ----- the three transforms everything else is made of -----------------------------------------------------------
def _real_part_gradient(grad, input):
    return grad.to(input.dtype)


@composite(public=False, method=False, gradients={"input": _real_part_gradient})
def _real_part(input):
    """The real part of a complex tensor (as real); its gradient is the real gradient as complex.

        >>> agnostic.fft._real_part(agnostic.tensor([1.0 + 2.0j]))
        tensor([1.])
    """
    device = input._device
    return finish(device.backend.run(device.backend.xp.real, input._data), input.dtype.to_real(), device)


@composite(public=False, method=False, gradients={"input": lambda grad: _conjugate(grad)})
def _conjugate(input):
    """The complex conjugate of a complex tensor, differentiable.

        >>> agnostic.fft._conjugate(agnostic.tensor([1.0 + 2.0j]))
        tensor([1.-2.j])
    """
    device = input._device
    return wrap(device.backend.run(device.backend.xp.conj, input._data), device)


def _complex_gradient(grad, input, dims, sizes, norm, forward):
    back = _complex_transform(grad, dims, None, _DUAL[norm], not forward)
    back = _resized(back, dims, [input.shape[d] for d in dims])
    return back if input.dtype.is_complex else _real_part(back)


@composite(public=False, method=False, gradients={"input": _complex_gradient})
def _complex_transform(input, dims, sizes, norm, forward):
    """The complex-to-complex transform over ``dims`` (sizes ``sizes``: trimmed or zero-padded; None: as they are),
    forward or inverse, normalized as ``norm`` says; its gradient is the opposite transform, normalized the other way.

        >>> agnostic.fft._complex_transform(agnostic.ones(2), [0], None, "backward", True)
        tensor([2.+0.j, 0.+0.j])
    """
    input = _floating(input)
    device = input._device
    xp = device.backend.xp
    function = xp.fft.fftn if forward else xp.fft.ifftn
    result = device.backend.run(function, input._data, s=sizes, axes=dims, norm=norm)
    return finish(result, _complex_dtype(input.dtype), device)


def _real_to_complex_gradient(grad, input, n, dim, norm):
    full = _resized(grad, [dim], [n])
    back = _real_part(_complex_transform(full, [dim], None, _DUAL[norm], False))
    return _resized(back, [dim], [input.shape[dim]])


@composite(public=False, method=False, gradients={"input": _real_to_complex_gradient})
def _real_to_complex(input, n, dim, norm):
    """The one-sided transform of a real input along ``dim`` (length ``n``): its first n // 2 + 1 frequencies.

        >>> agnostic.fft._real_to_complex(agnostic.ones(4), 4, 0, "backward")
        tensor([4.+0.j, 0.+0.j, 0.+0.j])
    """
    device = input._device
    result = device.backend.run(device.backend.xp.fft.rfft, input._data, n=n, axis=dim, norm=norm)
    return finish(result, _complex_dtype(input.dtype), device)


def _complex_to_real_gradient(grad, input, n, dim, norm):
    # PyTorch's fft_c2r_backward: the one-sided transform of grad, the frequencies that stand for two doubled.
    half = _real_to_complex(grad, n, dim, _DUAL[norm])
    doubled = n - half.shape[dim]
    if doubled > 0:
        weights = numpy.ones(half.shape[dim], half.dtype.to_real().numpy_dtype)
        weights[1:1 + doubled] = 2
        shape = [1] * half.ndim
        shape[dim] = half.shape[dim]
        half = half * as_tensor(weights.reshape(shape), device=half.device)
    half = _resized(half, [dim], [input.shape[dim]])
    return half if input.dtype.is_complex else _real_part(half)


@composite(public=False, method=False, gradients={"input": _complex_to_real_gradient})
def _complex_to_real(input, n, dim, norm):
    """The real signal of length ``n`` along ``dim`` whose one-sided transform is ``input``.

        >>> agnostic.fft._complex_to_real(agnostic.tensor([4.0 + 0j, 0j, 0j]), 4, 0, "backward")
        tensor([1., 1., 1., 1.])
    """
    device = input._device
    result = device.backend.run(device.backend.xp.fft.irfft, input._data, n=n, axis=dim, norm=norm)
    return finish(result, input.dtype.to_real(), device)


def _one_dim(input, n, dim):
    _check_size(n)
    dim = _normalize_dim(dim, input.ndim, allow_scalar=False)
    return (input.shape[dim] if n is None else n), dim


def _check_real(name, input):
    if input.dtype.is_complex:
        raise RuntimeError(f"{name} expects a real input tensor, but got {_TORCH_NAMES[input.dtype.name]}")


# ----- public transforms ------------------------------------------------------------------------------------------
@composite(namespace="agnostic.fft", method=False)
def fft(input, n=None, dim=-1, norm=None):
    """The one-dimensional discrete Fourier transform along ``dim`` (``n``: trimmed or zero-padded to that length),
    as ``torch.fft.fft``; complex64 for float32 (and integer) input.

        >>> agnostic.fft.fft(agnostic.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j])
    """
    input = _floating(input)
    n, dim = _one_dim(input, n, dim)
    return _complex_transform(input, [dim], [n], _check_norm(norm), True)


@composite(namespace="agnostic.fft", method=False)
def ifft(input, n=None, dim=-1, norm=None):
    """The one-dimensional inverse discrete Fourier transform along ``dim``, as ``torch.fft.ifft``.

        >>> agnostic.fft.ifft(agnostic.tensor([4.0, 0.0, 0.0, 0.0]))
        tensor([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j])
    """
    input = _floating(input)
    n, dim = _one_dim(input, n, dim)
    return _complex_transform(input, [dim], [n], _check_norm(norm), False)


@composite(namespace="agnostic.fft", method=False)
def fftn(input, s=None, dim=None, norm=None):
    """The n-dimensional discrete Fourier transform over ``dim`` (every dim by default; with ``s`` alone, the last
    ``len(s)``), as ``torch.fft.fftn``.

        >>> agnostic.fft.fftn(agnostic.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    input = _floating(input)
    dims, sizes = _dims_and_sizes(input, s, dim)
    return _complex_transform(input, dims, sizes, _check_norm(norm), True)


@composite(namespace="agnostic.fft", method=False)
def ifftn(input, s=None, dim=None, norm=None):
    """The n-dimensional inverse discrete Fourier transform, as ``torch.fft.ifftn``.

        >>> agnostic.fft.ifftn(agnostic.tensor([[4.0, 0.0], [0.0, 0.0]]))
        tensor([[1.+0.j, 1.+0.j],
                [1.+0.j, 1.+0.j]])
    """
    input = _floating(input)
    dims, sizes = _dims_and_sizes(input, s, dim)
    return _complex_transform(input, dims, sizes, _check_norm(norm), False)


@composite(namespace="agnostic.fft", method=False)
def fft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional discrete Fourier transform over ``dim``, as ``torch.fft.fft2``.

        >>> agnostic.fft.fft2(agnostic.ones(2, 2))[0, 0]
        tensor(4.+0.j)
    """
    return fftn(input, s, dim, norm)


@composite(namespace="agnostic.fft", method=False)
def ifft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional inverse discrete Fourier transform over ``dim``, as ``torch.fft.ifft2``.

        >>> agnostic.fft.ifft2(agnostic.tensor([[4.0, 0.0], [0.0, 0.0]]))[1, 1]
        tensor(1.+0.j)
    """
    return ifftn(input, s, dim, norm)


@composite(namespace="agnostic.fft", method=False)
def rfft(input, n=None, dim=-1, norm=None):
    """The one-dimensional transform of a real input: its n // 2 + 1 non-negative frequencies, as
    ``torch.fft.rfft``.

        >>> agnostic.fft.rfft(agnostic.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([10.+0.j, -2.+2.j, -2.+0.j])
    """
    input = _floating(input)
    _check_real("rfft", input)
    n, dim = _one_dim(input, n, dim)
    return _real_to_complex(input, n, dim, _check_norm(norm))


@composite(namespace="agnostic.fft", method=False)
def irfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``rfft``: a real signal of length ``n`` (default ``2 * (input.size(dim) - 1)``), as
    ``torch.fft.irfft``.

        >>> agnostic.fft.irfft(agnostic.tensor([10.0 + 0j, -2.0 + 2j, -2.0 + 0j]))
        tensor([1., 2., 3., 4.])
    """
    input = _floating(input)
    _check_size(n)
    dim = _normalize_dim(dim, input.ndim, allow_scalar=False)
    n = 2 * (input.shape[dim] - 1) if n is None else n
    _check_size(n)
    return _complex_to_real(_resized(input, [dim], [n // 2 + 1]), n, dim, _check_norm(norm))


@composite(namespace="agnostic.fft", method=False)
def rfftn(input, s=None, dim=None, norm=None):
    """The n-dimensional transform of a real input, one-sided over the last of ``dim``, as ``torch.fft.rfftn``.

        >>> agnostic.fft.rfftn(agnostic.ones(2, 4)).shape
        agnostic.Size([2, 3])
    """
    input = _floating(input)
    _check_real("rfftn", input)
    dims, sizes = _dims_and_sizes(input, s, dim)
    norm = _check_norm(norm)
    half = _real_to_complex(input, sizes[-1], dims[-1], norm)
    return _complex_transform(half, dims[:-1], sizes[:-1], norm, True) if len(dims) > 1 else half


@composite(namespace="agnostic.fft", method=False)
def irfftn(input, s=None, dim=None, norm=None):
    """The inverse of ``rfftn``: a real result, ``s[-1]`` long (default ``2 * (input.size(dim[-1]) - 1)``) over
    the last of ``dim``, as ``torch.fft.irfftn``.

        >>> agnostic.fft.irfftn(agnostic.fft.rfftn(agnostic.ones(2, 4)))
        tensor([[1., 1., 1., 1.],
                [1., 1., 1., 1.]])
    """
    input = _floating(input)
    dims, sizes = _dims_and_sizes(input, s, dim)
    last = 2 * (input.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else s[-1]
    _check_size(last)
    norm = _check_norm(norm)
    if len(dims) > 1:
        input = _complex_transform(input, dims[:-1], sizes[:-1], norm, False)
    return _complex_to_real(_resized(input, dims[-1:], [last // 2 + 1]), last, dims[-1], norm)


@composite(namespace="agnostic.fft", method=False)
def rfft2(input, s=None, dim=(-2, -1), norm=None):
    """The two-dimensional transform of a real input over ``dim``, as ``torch.fft.rfft2``.

        >>> agnostic.fft.rfft2(agnostic.ones(2, 2))
        tensor([[4.+0.j, 0.+0.j],
                [0.+0.j, 0.+0.j]])
    """
    return rfftn(input, s, dim, norm)


@composite(namespace="agnostic.fft", method=False)
def irfft2(input, s=None, dim=(-2, -1), norm=None):
    """The inverse of ``rfft2``, as ``torch.fft.irfft2``.

        >>> agnostic.fft.irfft2(agnostic.fft.rfft2(agnostic.ones(2, 2)))
        tensor([[1., 1.],
                [1., 1.]])
    """
    return irfftn(input, s, dim, norm)


@composite(namespace="agnostic.fft", method=False)
def hfft(input, n=None, dim=-1, norm=None):
    """The transform of a signal with Hermitian symmetry given by its first half (a real result of length ``n``,
    default ``2 * (input.size(dim) - 1)``), as ``torch.fft.hfft``.

        >>> agnostic.fft.hfft(agnostic.tensor([1.0, 2.0, 3.0]))
        tensor([ 8., -2.,  0., -2.])
    """
    input = _floating(input)
    if input.dtype.is_complex:
        input = _conjugate(input)
    return irfft(input, n, dim, _DUAL[_check_norm(norm)])


@composite(namespace="agnostic.fft", method=False)
def ihfft(input, n=None, dim=-1, norm=None):
    """The inverse of ``hfft``: the one-sided spectrum of a real signal, conjugated and normalized as an inverse,
    as ``torch.fft.ihfft``.

        >>> agnostic.fft.ihfft(agnostic.tensor([8.0, -2.0, 0.0, -2.0]))
        tensor([1.-0.j, 2.-0.j, 3.-0.j])
    """
    input = _floating(input)
    _check_real("ihfft", input)
    return _conjugate(rfft(input, n, dim, _DUAL[_check_norm(norm)]))


# ----- frequencies and shifts -------------------------------------------------------------------------------------
@composite(namespace="agnostic.fft", method=False)
def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an ``n``-point transform with sample spacing ``d``: 0, 1, ..., then the negative
    ones, over ``d * n``, as ``torch.fft.fftfreq`` (the default float dtype).

        >>> agnostic.fft.fftfreq(5)
        tensor([ 0.0000,  0.2000,  0.4000, -0.4000, -0.2000])
    """
    dtype = dtype or _dtypes.get_default_dtype()
    steps = cat([arange(0, (n - 1) // 2 + 1, dtype=dtype, device=device),
                 arange(-(n // 2), 0, dtype=dtype, device=device)])
    result = steps / (d * n)
    return result.requires_grad_() if requires_grad else result


@composite(namespace="agnostic.fft", method=False)
def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an ``n``-point ``rfft``, as ``torch.fft.rfftfreq``.

        >>> agnostic.fft.rfftfreq(5)
        tensor([0.0000, 0.2000, 0.4000])
    """
    dtype = dtype or _dtypes.get_default_dtype()
    result = arange(0, n // 2 + 1, dtype=dtype, device=device) / (d * n)
    return result.requires_grad_() if requires_grad else result


def _shift(input, dim, sign):
    if dim is None:
        dims = list(range(input.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return input.clone()
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return input.roll(shifts, dims)


@composite(namespace="agnostic.fft", method=False)
def fftshift(input, dim=None):
    """The zero frequency moved to the middle of each of ``dim`` (every dim by default), as ``torch.fft.fftshift``.

        >>> agnostic.fft.fftshift(agnostic.fft.fftfreq(4))
        tensor([-0.5000, -0.2500,  0.0000,  0.2500])
    """
    return _shift(input, dim, 1)


@composite(namespace="agnostic.fft", method=False)
def ifftshift(input, dim=None):
    """The inverse of ``fftshift``, as ``torch.fft.ifftshift``.

        >>> agnostic.fft.ifftshift(agnostic.tensor([-0.5, -0.25, 0.0, 0.25]))
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return _shift(input, dim, -1)


__all__ = public_names(globals())
