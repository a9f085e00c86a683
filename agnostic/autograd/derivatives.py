"""Helpers the ops' gradient formulas share (the formulas themselves live with their ops, in ``agnostic/ops``).

Formulas are written with agnostic's own (recordable) ops, so that ``create_graph=True`` gives higher derivatives.
"""

from .._tensor import TensorBase
from ..ops.creation import zeros_like


def fit(grad, like):
    """``grad`` summed back to ``like``'s shape (undoing broadcasting), in ``like``'s dtype and on its device."""
    if not isinstance(like, TensorBase) or grad is None:
        return None
    shape = like._data.shape
    if grad._data.shape != shape:
        lead = grad.ndim - len(shape)
        dims = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and grad.shape[i + lead] != 1)
        if dims:
            grad = grad.sum(dim=dims, keepdim=True)
        grad = grad.reshape(shape)
    if grad.dtype is not like.dtype:
        grad = grad.to(like.dtype)
    if grad._device is not like._device:
        grad = grad.to(like._device)
    return grad


def conj(x):
    """The complex conjugate of a complex tensor; anything else as it is (the gradients of products use it)."""
    return x.conj() if isinstance(x, TensorBase) and x.dtype.is_complex else x


def passes_through(grad):
    """The gradient of an op that moves, copies or converts its input: the output's, as it is (``fit`` casts it
    back to the input's dtype and device)."""
    return grad


def zero(grad):
    """The gradient of an input whose values don't reach the output (all overwritten): zeros."""
    return zeros_like(grad)
