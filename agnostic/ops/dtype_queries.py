"""Questions about tensors and dtypes: ``result_type``, ``can_cast``, ``is_tensor``, ``is_floating_point``..."""

from .. import _dtypes
from .._tensor import TensorBase
from ._dispatch import as_operand, result_dtype


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
