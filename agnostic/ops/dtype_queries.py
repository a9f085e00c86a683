"""Questions about tensors and dtypes: ``result_type``, ``can_cast``, ``is_tensor``, ``is_floating_point``..."""

from .. import _dtypes
from .._tensor import Tensor
from ._dispatch import as_operand, result_dtype


def result_type(tensor, other):
    """The dtype an op on ``tensor`` and ``other`` (tensors or Python numbers) produces, as torch.result_type."""
    return result_dtype(as_operand(tensor, "tensor"), as_operand(other))


def can_cast(from_, to):
    """Whether PyTorch allows writing ``from_`` results into ``to`` (no float->int, complex->real, x->bool)."""
    return _dtypes.as_dtype(from_).category <= _dtypes.as_dtype(to).category


def is_tensor(obj):
    """True for agnostic Tensors."""
    return isinstance(obj, Tensor)


def is_floating_point(input):
    """True when ``input``'s dtype is a floating type."""
    return input.dtype.is_floating_point


def is_complex(input):
    """True when ``input``'s dtype is complex."""
    return input.dtype.is_complex


def numel(input):
    """Number of elements of ``input``."""
    return input.numel()
