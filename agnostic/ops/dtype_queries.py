"""Questions about tensors and dtypes: ``result_type``, ``can_cast``, ``is_tensor``, ``is_floating_point``,
``is_nonzero``, ``is_same_size``..."""

from .. import _dtypes
from .._tensor import TensorBase
from ._dispatch import as_operand, check_tensor, result_dtype


def result_type(tensor, other):
    """The dtype an op on ``tensor`` and ``other`` (tensors or Python numbers) produces, as torch.result_type.

        >>> agnostic.result_type(agnostic.tensor([1, 2], dtype=agnostic.int32), 2.5)
        agnostic.float32
        >>> agnostic.result_type(agnostic.tensor([1, 2], dtype=agnostic.int8), 1000)
        agnostic.int8
        >>> half = agnostic.tensor([1.0], dtype=agnostic.float16)
        >>> agnostic.result_type(half, agnostic.tensor(1.0, dtype=agnostic.float64))
        agnostic.float16
    """
    return result_dtype(as_operand(tensor, "tensor"), as_operand(other))


def can_cast(from_, to):
    """Whether PyTorch allows writing ``from_`` results into ``to`` (no float->int, complex->real, x->bool).

        >>> agnostic.can_cast(agnostic.int32, agnostic.float16)
        True
        >>> agnostic.can_cast(agnostic.float32, agnostic.int64)
        False
    """
    return _dtypes.as_dtype(from_).category <= _dtypes.as_dtype(to).category


def is_tensor(obj):
    """True for agnostic Tensors.

        >>> agnostic.is_tensor(agnostic.zeros(1)), agnostic.is_tensor([0.0])
        (True, False)
    """
    return isinstance(obj, TensorBase)


def is_floating_point(input):
    """True when ``input``'s dtype is a floating type.

        >>> agnostic.is_floating_point(agnostic.zeros(1)), agnostic.is_floating_point(agnostic.arange(3))
        (True, False)
    """
    return input.dtype.is_floating_point


def is_complex(input):
    """True when ``input``'s dtype is complex.

        >>> agnostic.is_complex(agnostic.zeros(1, dtype=agnostic.complex64)), agnostic.is_complex(agnostic.zeros(1))
        (True, False)
    """
    return input.dtype.is_complex


def numel(input):
    """Number of elements of ``input``.

        >>> agnostic.numel(agnostic.zeros(2, 3, 4))
        24
    """
    return input.numel()


def _tensor_argument(name, input, position=1, argument="input"):
    check_tensor(name, input, position, argument)
    return input


def is_nonzero(input):
    """The truth of a one-element tensor's value; any other number of elements is a RuntimeError
    (``torch.is_nonzero``).

        >>> agnostic.is_nonzero(agnostic.tensor([0.5])), agnostic.is_nonzero(agnostic.tensor(0))
        (True, False)
    """
    return _tensor_argument("is_nonzero", input).is_nonzero()


def is_same_size(input, other):
    """True when ``input`` and ``other`` have the same shape (``torch.is_same_size``).

        >>> agnostic.is_same_size(agnostic.ones(2, 3), agnostic.zeros(2, 3))
        True
    """
    return _tensor_argument("is_same_size", input).is_same_size(_tensor_argument("is_same_size", other, 2, "other"))


def is_signed(input):
    """True when ``input``'s dtype holds negative values: signed integers, floating point and complex
    (``torch.is_signed``).

        >>> agnostic.is_signed(agnostic.ones(2)), agnostic.is_signed(agnostic.ones(2, dtype=agnostic.uint8))
        (True, False)
    """
    return _tensor_argument("is_signed", input).is_signed()


def is_conj(input):
    """False: agnostic conjugates eagerly, so no tensor carries PyTorch's lazy conjugate bit (``torch.is_conj``).

        >>> agnostic.is_conj(agnostic.tensor([1 + 2j]).conj())
        False
    """
    return _tensor_argument("is_conj", input).is_conj()


def is_neg(input):
    """False: agnostic negates eagerly, so no tensor carries PyTorch's lazy negative bit (``torch.is_neg``).

        >>> agnostic.is_neg(agnostic.ones(2))
        False
    """
    return _tensor_argument("is_neg", input).is_neg()


def is_inference(input):
    """Whether ``input`` is an inference tensor (``torch.is_inference``): always False in agnostic, whose
    ``inference_mode`` is ``no_grad`` and makes ordinary tensors.

        >>> agnostic.is_inference(agnostic.ones(2))
        False
    """
    return _tensor_argument("is_inference", input).is_inference()
