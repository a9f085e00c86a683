"""Installs the Tensor and GradTensor methods, properties and operators that the op declarations make (see
``ops/_registry.py``), and the few Tensor methods that are not ops."""

from ._tensor import Tensor
from .autograd.tracking import GradTensor
from .cuda.memory import record_stream
from .ops import _registry, elementwise, indexing, linalg, random, reduction, shape  # noqa: F401  (declarations)


def install():
    for name, function in _registry.tensor_methods().items():
        setattr(Tensor, name, function)
    for name, function in _registry.tensor_methods(recording=True).items():
        setattr(GradTensor, name, function)
    Tensor.__pos__ = _pos
    Tensor.__hash__ = _hash
    Tensor.record_stream = _record_stream
    Tensor.share_memory_ = _share_memory_
    Tensor.is_shared = _is_shared


def _pos(self):
    """``+self``: ``self`` itself.

        >>> +agnostic.tensor([1, -2])
        tensor([ 1, -2])
    """
    return self


def _hash(self):
    """Tensors hash by identity, as in PyTorch (``==`` compares values elementwise), so that they can be set members
    and dict keys.

        >>> x = agnostic.zeros(2)
        >>> {x: "weights"}[x]
        'weights'
    """
    return id(self)


def _record_stream(self, stream):
    """Keep this CUDA tensor's memory from being reused until the work queued on ``stream`` when the tensor is freed
    has finished (for tensors used on a side stream), as ``torch.Tensor.record_stream``; CUDA tensors only.

        >>> x = agnostic.ones(1000, device="cuda")  # doctest: +SKIP
        >>> s = agnostic.cuda.Stream()  # doctest: +SKIP
        >>> with agnostic.cuda.stream(s):  # doctest: +SKIP
        ...     y = x * 2
        >>> x.record_stream(s)  # doctest: +SKIP
        >>> del x  # its memory waits for s's work before it is reused  # doctest: +SKIP
    """
    record_stream(self, stream)


def _share_memory_(self):
    """Move this CPU tensor's data into shared memory (a no-op on CUDA and when already shared); returns ``self``.
    Other processes it is sent to through ``agnostic.multiprocessing`` then map the same pages.

        >>> x = agnostic.zeros(2).share_memory_()
        >>> x.is_shared()
        True
    """
    from .multiprocessing.sharing import share_memory_  # lazily: see the docstring of agnostic.multiprocessing

    return share_memory_(self)


def _is_shared(self):
    """True when this tensor's memory can be seen by other processes (shared memory, or any CUDA memory).

        >>> agnostic.zeros(2).is_shared()
        False
    """
    from .multiprocessing.sharing import is_shared

    return is_shared(self)
