"""Complex numbers: real and imaginary parts and interleaved pairs as views, polar form, the complex sign, angles and
conjugate transposes, with PyTorch's gradients (its Wirtinger convention: ``z.grad`` is the conjugate gradient)."""

import math

from .. import _backend, _dtypes
from .._tensor import _check_writable, wrap
from ._dispatch import check_same_device, check_tensor, finish
from ._registry import composite, public_names, tensor_method
from .creation import zeros_like
from .elementwise import conj, sign, where
from .shape import broadcast_shapes, matrix_transpose

_REAL_OF = {_dtypes.complex64: _dtypes.float32, _dtypes.complex128: _dtypes.float64}
_COMPLEX_OF = {real: complex_ for complex_, real in _REAL_OF.items()}


def _as_complex(grad, input):
    """A real gradient as the complex input's (imaginary part zero); ``fit`` would warn about nothing here."""
    return grad.to(input.dtype) if input.dtype.is_complex else grad


# ----- parts as views --------------------------------------------------------------------------------------------
@composite(as_property=True, is_view=True, shape_only=True,
           gradients={"input": lambda grad, input: _as_complex(grad, input)})
def real(input):
    """The real part of each element: a view of a complex tensor (writing into it changes ``input``), and ``input``
    itself when it is real (``torch.real``, ``Tensor.real``).

        >>> z = agnostic.tensor([1 + 2j, 3 - 1j])
        >>> z.real
        tensor([1., 3.])
        >>> z.real[0] = 5
        >>> z
        tensor([5.+2.j, 3.-1.j])
    """
    check_tensor("real", input)
    if not input.dtype.is_complex:
        return input
    return wrap(input._data.real, input._device)


@composite(as_property=True, is_view=True, shape_only=True,
           gradients={"input": lambda grad, input: grad.to(input.dtype) * 1j})
def imag(input):
    """The imaginary part of each element of a complex tensor, as a view (``torch.imag``, ``Tensor.imag``); real
    tensors have none, and raise as in PyTorch.

        >>> agnostic.tensor([1 + 2j, 3 - 1j]).imag
        tensor([ 2., -1.])
    """
    check_tensor("imag", input)
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return wrap(input._data.imag, input._device)


@composite(is_view=True, shape_only=True, gradients={"input": lambda grad: view_as_complex(grad.contiguous())})
def view_as_real(input):
    """A real view of a complex tensor: a last dimension of size 2 holds each element's (real, imaginary) pair
    (``torch.view_as_real``).

        >>> agnostic.view_as_real(agnostic.tensor([1 + 2j, 3 - 1j]))
        tensor([[ 1.,  2.],
                [ 3., -1.]])
    """
    check_tensor("view_as_real", input)
    if not input.dtype.is_complex:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got {input.dtype}; "
                           "make one with agnostic.complex(real, imag) or input.to(agnostic.complex64)")
    array = input._data
    # A trailing axis of length 1 is contiguous whatever the other strides, so the pair axis can replace it.
    pairs = input._device.backend.run(array[..., None].view, _REAL_OF[input.dtype].numpy_dtype)
    return wrap(pairs, input._device)


@composite(is_view=True, shape_only=True, gradients={"input": lambda grad: view_as_real(grad)})
def view_as_complex(input):
    """A complex view of a float32/float64 tensor whose last dimension (of size 2, stride 1) holds (real,
    imaginary) pairs (``torch.view_as_complex``).

        >>> agnostic.view_as_complex(agnostic.tensor([[1.0, 2.0], [3.0, -1.0]]))
        tensor([1.+2.j, 3.-1.j])
    """
    check_tensor("view_as_complex", input)
    if input.dtype not in _COMPLEX_OF:
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {input.dtype}; convert it with .float() or .double() first")
    array = input._data
    if array.ndim == 0 or array.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (its shape is {list(array.shape)})")
    strides = input.stride()
    if strides[-1] != 1:
        raise RuntimeError(f"Tensor must have a last dimension with stride 1 (its strides are {list(strides)}); "
                           "call .contiguous() first")
    if any(stride % 2 for stride in strides[:-1]):
        raise RuntimeError(f"Tensor must have a stride divisible by 2 for all but last dimension (its strides are "
                           f"{list(strides)}); call .contiguous() first")
    if _backend.data_pointer(array) % (2 * array.itemsize):  # allocations are aligned: an odd storage offset
        raise RuntimeError("Tensor must have a storage_offset divisible by 2; call .clone() first")
    pairs = input._device.backend.run(array.view, _COMPLEX_OF[input.dtype].numpy_dtype)
    return wrap(pairs[..., 0], input._device)


# ----- building complex tensors ----------------------------------------------------------------------------------
def _check_float_pair(name, first, second, names):
    check_tensor(name, first, 1, names[0])
    check_tensor(name, second, 2, names[1])
    if first.dtype is not second.dtype:
        raise RuntimeError(f"{name}(): expected both inputs to have one dtype, got {first.dtype} and "
                           f"{second.dtype}; convert one with .to(other.dtype)")
    if first.dtype not in _COMPLEX_OF:
        raise RuntimeError(f"{name}(): expected both inputs to be Float or Double tensors but got {first.dtype} and "
                           f"{second.dtype}; convert them with .float() or .double()")
    return check_same_device(first, second)


@composite(out=True, gradients={"real": lambda grad: grad.real, "imag": lambda grad: grad.imag})
def complex(real, imag):
    """The complex tensor ``real + imag * 1j`` of two float32 (complex64) or float64 (complex128) tensors, which
    broadcast (``torch.complex``); infinities stay where they are, unlike in ``real + imag * 1j``.

        >>> agnostic.complex(agnostic.tensor([1.0, 3.0]), agnostic.tensor([2.0, -1.0]))
        tensor([1.+2.j, 3.-1.j])
    """
    device = _check_float_pair("complex", real, imag, ("real", "imag"))
    backend = device.backend
    shape = tuple(broadcast_shapes(real._data.shape, imag._data.shape))
    result = backend.run(backend.xp.empty, shape, _COMPLEX_OF[real.dtype].numpy_dtype)

    def fill(target, real_part, imaginary_part):
        target.real[...] = real_part
        target.imag[...] = imaginary_part
    backend.run(fill, result, real._data, imag._data)
    return wrap(result, device)


@composite(out=True)
def polar(abs, angle):
    """The complex tensor of magnitudes ``abs`` and angles ``angle`` (radians): ``abs * (cos(angle) + 1j *
    sin(angle))`` (``torch.polar``); both float32 or both float64.

        >>> agnostic.polar(agnostic.tensor([2.0]), agnostic.tensor([0.0]))
        tensor([2.+0.j])
    """
    _check_float_pair("polar", abs, angle, ("abs", "angle"))
    return complex(abs * angle.cos(), abs * angle.sin())


# ----- angle and sign --------------------------------------------------------------------------------------------
def _angle_gradient(grad, input):
    if not input.dtype.is_complex:
        return zeros_like(input, dtype=grad.dtype)
    squared = (input * input.conj()).real
    return where(squared == 0, 0.0, grad * input / where(squared == 0, 1.0, squared) * 1j)


def _real_angle(xp, x, dtype):
    # PyTorch's: pi below 0, NaN kept, 0 elsewhere (-0.0 included, where NumPy's angle gives pi).
    angles = xp.where(x < 0, math.pi, 0.0).astype(dtype)
    return xp.where(x != x, x, angles) if x.dtype.kind in "fc" else angles


@composite(gradients={"input": _angle_gradient})
def angle(input):
    """The argument (phase, radians in (-pi, pi]) of each element; a real tensor's is 0 for x >= 0 and pi for x < 0
    (``torch.angle``); integers give the default float dtype, complex numbers their real dtype.

        >>> agnostic.angle(agnostic.tensor([1j, -1 + 0j, 1 + 0j]))
        tensor([1.5708, 3.1416, 0.0000])
    """
    check_tensor("angle", input)
    dtype = input.dtype
    if dtype.is_complex:
        dtype = _REAL_OF[dtype]
    elif not dtype.is_floating_point:
        dtype = _dtypes.get_default_dtype()
    backend = input._device.backend
    if input.dtype.is_complex:
        return finish(backend.run(backend.xp.angle, input._data), dtype, input._device)
    return finish(backend.run(_real_angle, backend.xp, input._data, dtype.numpy_dtype), dtype, input._device)


def _sgn_gradient(grad, input, result):
    if not input.dtype.is_complex:
        return zeros_like(input, dtype=grad.dtype)
    magnitude = input.abs()
    safe = where(magnitude == 0, 1.0, magnitude)
    return where(magnitude == 0, 0.0, (grad - result * result * grad.conj()) / (2 * safe))


def _complex_sign(xp, z):
    magnitude = xp.abs(z)
    return z / xp.where(magnitude == 0, 1, magnitude).astype(z.dtype)  # z is 0 where its magnitude is


@composite(out=True, inplace=True, gradients={"input": _sgn_gradient})
def sgn(input):
    """The sign of each element: ``z / abs(z)`` for complex numbers (0 at 0), ``sign`` for real ones
    (``torch.sgn``).

        >>> agnostic.sgn(agnostic.tensor([3 + 4j, 0j]))
        tensor([0.6000+0.8000j, 0.0000+0.0000j])
    """
    check_tensor("sgn", input)
    if not input.dtype.is_complex:
        return sign(input)
    backend = input._device.backend
    return finish(backend.run(_complex_sign, backend.xp, input._data), input.dtype, input._device)


# ----- conjugate transposes --------------------------------------------------------------------------------------
@composite()
def adjoint(input):
    """The conjugate transpose of each matrix (the last two dimensions swapped, then conjugated):
    ``torch.adjoint``, ``Tensor.mH``. A view for real tensors; agnostic conjugates complex ones into a copy.

        >>> agnostic.adjoint(agnostic.tensor([[1 + 1j, 2 + 0j]]))
        tensor([[1.-1.j],
                [2.-0.j]])
    """
    check_tensor("adjoint", input)
    if input.ndim < 2:
        raise RuntimeError(f"adjoint() is only supported on matrices or batches of matrices. Got {input.ndim}-D "
                           "tensor.")
    return conj(input.transpose(-2, -1))


@tensor_method(name="mH", as_property=True)
def matrix_adjoint(input):
    """The conjugate transpose of each matrix of a batch (PyTorch's ``Tensor.mH``): ``adjoint``.

        >>> agnostic.ones(5, 2, 3).mH.shape
        agnostic.Size([5, 3, 2])
    """
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got {input.ndim}-D "
                           "tensor.")
    return conj(matrix_transpose(input))


@tensor_method(name="H", as_property=True)
def conjugate_transpose(input):
    """The conjugate transpose of a matrix (PyTorch's ``Tensor.H``; ``mH`` for batches).

        >>> agnostic.tensor([[1 + 2j, 3 + 0j]]).H
        tensor([[1.-2.j],
                [3.-0.j]])
    """
    if input.ndim == 0:
        return conj(input)
    if input.ndim != 2:
        hint = "; for batches of matrices, consider using tensor.mH" if input.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {input.ndim}-D tensor{hint}")
    return conj(input.t())


@tensor_method(overwrites=True, gradients={"input": lambda grad: conj(grad)})
def conj_physical_(input):
    """Conjugate ``input`` in place (a real tensor is left as it is), as ``Tensor.conj_physical_``.

        >>> x = agnostic.tensor([1 + 2j, 3 - 1j])
        >>> x.conj_physical_() is x, x
        (True, tensor([1.-2.j, 3.+1.j]))
    """
    check_tensor("conj_physical_", input)
    if input.dtype.is_complex:
        _check_writable(input)
        backend = input._device.backend
        backend.run(backend.xp.conjugate, input._data, out=input._data)
    return input


__all__ = public_names(globals())
