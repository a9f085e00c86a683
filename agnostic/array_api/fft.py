"""The standard's ``fft`` extension over ``agnostic.fft`` (``axis``/``axes`` for PyTorch's ``dim``)."""

import agnostic


def _one_axis(name, example, result):
    transform = getattr(agnostic.fft, name)

    def function(x, /, *, n=None, axis=-1, norm="backward"):
        return transform(x, n=n, dim=axis, norm=norm)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"""The standard's ``fft.{name}`` along ``axis``.

        >>> agnostic.array_api.fft.{name}({example})
        {result}
    """
    return function


def _many_axes(name, example, result):
    transform = getattr(agnostic.fft, name)

    def function(x, /, *, s=None, axes=None, norm="backward"):
        if s is not None and axes is None:
            axes = tuple(range(-len(s), 0))
        return transform(x, s=None if s is None else tuple(s), dim=None if axes is None else tuple(axes), norm=norm)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"""The standard's ``fft.{name}`` over ``axes`` (all by default).

        >>> agnostic.array_api.fft.{name}({example})
        {result}
    """
    return function


_COMPLEX = "agnostic.tensor([1.0, 0.0], dtype=agnostic.complex64)"
fft = _one_axis("fft", _COMPLEX, "tensor([1.+0.j, 1.+0.j])")
ifft = _one_axis("ifft", _COMPLEX, "tensor([0.5000+0.j, 0.5000+0.j])")
rfft = _one_axis("rfft", "agnostic.tensor([1.0, 0.0])", "tensor([1.+0.j, 1.+0.j])")
irfft = _one_axis("irfft", _COMPLEX, "tensor([0.5000, 0.5000])")
hfft = _one_axis("hfft", _COMPLEX, "tensor([1., 1.])")
ihfft = _one_axis("ihfft", "agnostic.tensor([1.0, 0.0])", "tensor([0.5000-0.j, 0.5000-0.j])")
fftn = _many_axes("fftn", _COMPLEX, "tensor([1.+0.j, 1.+0.j])")
ifftn = _many_axes("ifftn", _COMPLEX, "tensor([0.5000+0.j, 0.5000+0.j])")
rfftn = _many_axes("rfftn", "agnostic.tensor([1.0, 0.0])", "tensor([1.+0.j, 1.+0.j])")
irfftn = _many_axes("irfftn", _COMPLEX, "tensor([0.5000, 0.5000])")


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an ``n``-point ``fft``.

        >>> agnostic.array_api.fft.fftfreq(4)
        tensor([ 0.0000,  0.2500, -0.5000, -0.2500])
    """
    return agnostic.fft.fftfreq(n, d=d, dtype=dtype, device=device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies of an ``n``-point ``rfft``.

        >>> agnostic.array_api.fft.rfftfreq(4)
        tensor([0.0000, 0.2500, 0.5000])
    """
    return agnostic.fft.rfftfreq(n, d=d, dtype=dtype, device=device)


def fftshift(x, /, *, axes=None):
    """``x`` with the zero frequency moved to the centre.

        >>> agnostic.array_api.fft.fftshift(agnostic.tensor([0, 1, 2, 3]))
        tensor([2, 3, 0, 1])
    """
    return agnostic.fft.fftshift(x, dim=axes)


def ifftshift(x, /, *, axes=None):
    """The inverse of ``fftshift``.

        >>> agnostic.array_api.fft.ifftshift(agnostic.tensor([2, 3, 0, 1]))
        tensor([0, 1, 2, 3])
    """
    return agnostic.fft.ifftshift(x, dim=axes)


__all__ = ["fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]
