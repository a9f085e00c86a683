"""Installs the ops as Tensor methods and operators, from tables: one place maps method names to functions."""

import numpy

from . import _backend
from ._tensor import Tensor
from .ops import _registry, creation, indexing, linalg, random, reduction, shape
from .ops import elementwise  # noqa: F401  (its declarations fill the registry that install() reads)


def _matmul_operator(reflected):
    def method(self, other):
        if isinstance(other, numpy.ndarray) or _backend.is_backend_array(other):
            other = creation.as_tensor(other)
        if not isinstance(other, Tensor):
            return NotImplemented
        return linalg.matmul(other, self) if reflected else linalg.matmul(self, other)
    return method


def _bind_others():
    names = {
        reduction: ("sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "all",
                    "any", "count_nonzero", "cumsum", "cumprod", "norm", "logsumexp"),
        shape: ("reshape", "view", "view_as", "reshape_as", "flatten", "unflatten", "permute", "transpose",
                "swapaxes", "swapdims", "t", "movedim", "moveaxis", "squeeze", "unsqueeze", "expand", "expand_as",
                "broadcast_to", "split", "chunk", "tensor_split", "unbind", "narrow", "flip", "fliplr", "flipud",
                "roll", "repeat", "tile", "repeat_interleave", "tril", "triu", "diagonal", "diag"),
        indexing: ("gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_select", "masked_fill",
                   "masked_fill_", "masked_select", "nonzero", "take", "index_add", "index_add_"),
        linalg: ("matmul", "mm", "bmm", "mv", "dot", "inner", "outer", "ger"),
        random: ("uniform_", "normal_", "bernoulli"),
    }
    return {name: getattr(module, name) for module, module_names in names.items() for name in module_names}


def _fill_(self, value):
    """Fill ``self`` with ``value`` (a number or 0-dim tensor) in place."""
    from ._tensor import _check_writable
    from .ops._dispatch import keep_negative_zero, operand_array

    _check_writable(self)
    if isinstance(value, Tensor):
        if value._data.ndim:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value._data.ndim} dimensions")
        value = value.item()
    value = keep_negative_zero(operand_array(value, self.dtype, self._device), self._device)
    with _backend.on(self._device):
        self._data[...] = value
    return self


def _zero_(self):
    """Fill ``self`` with zeros in place."""
    return _fill_(self, 0)


def install():
    methods = _registry.tensor_methods()
    methods.update(_bind_others())
    methods.update(fill_=_fill_, zero_=_zero_)
    for name, function in methods.items():
        setattr(Tensor, name, function)
    Tensor.__matmul__ = _matmul_operator(reflected=False)
    Tensor.__rmatmul__ = _matmul_operator(reflected=True)
    Tensor.__pos__ = lambda self: self
    Tensor.__getitem__ = indexing.getitem
    Tensor.__setitem__ = indexing.setitem
    Tensor.T = property(_reversed_dims, doc="All dimensions reversed (a view).")
    Tensor.mT = property(shape.matrix_transpose, doc="The last two dimensions swapped (a view).")
    Tensor.__hash__ = lambda self: id(self)
    Tensor.record_stream = _record_stream
    Tensor.share_memory_ = _share_memory_
    Tensor.is_shared = _is_shared


def _record_stream(self, stream):
    """Keep this CUDA tensor's memory from being reused until the work queued on ``stream`` when the tensor is freed
    has finished (for tensors used on a side stream), as ``torch.Tensor.record_stream``."""
    from .cuda.memory import record_stream

    record_stream(self, stream)


def _share_memory_(self):
    """Move this CPU tensor's data into shared memory (a no-op on CUDA and when already shared); returns ``self``.
    Other processes it is sent to through ``agnostic.multiprocessing`` then map the same pages."""
    from .multiprocessing.sharing import share_memory_

    return share_memory_(self)


def _is_shared(self):
    """True when this tensor's memory can be seen by other processes (shared memory, or any CUDA memory)."""
    from .multiprocessing.sharing import is_shared

    return is_shared(self)


def _reversed_dims(self):
    return shape.permute(self, tuple(reversed(range(self._data.ndim))))
