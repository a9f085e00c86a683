"""Installs the ops as Tensor methods and operators, from tables: one place maps method names to functions."""

from . import _backend
from ._tensor import Tensor
from .ops import creation, elementwise, indexing, linalg, random, reduction, shape


def _matmul_operator(reflected):
    def method(self, other):
        other = elementwise.coerce_operand(other)
        if other is None or not isinstance(other, Tensor):
            return NotImplemented
        return linalg.matmul(other, self) if reflected else linalg.matmul(self, other)
    return method


def _bind_elementwise():
    methods = dict(elementwise.unary_functions)
    methods.update(elementwise.binary_functions)
    methods.update(elementwise.unary_inplace_methods)
    methods.update(elementwise.binary_inplace_methods)
    for name in ("add", "sub", "div"):
        methods[name] = getattr(elementwise, name)
    methods.update(
        add_=lambda self, other, *, alpha=1: elementwise.binary_inplace_methods["add_"](
            self, other if alpha == 1 else elementwise.mul(other, alpha) if isinstance(other, Tensor)
            else other * alpha),
        sub_=lambda self, other, *, alpha=1: elementwise.binary_inplace_methods["sub_"](
            self, other if alpha == 1 else elementwise.mul(other, alpha) if isinstance(other, Tensor)
            else other * alpha),
        div_=lambda self, other, *, rounding_mode=None: (
            elementwise.binary_inplace_methods["div_"](self, other) if rounding_mode is None
            else elementwise._write_result(self, elementwise.div(self, other, rounding_mode=rounding_mode), "div_")),
        mul_=elementwise.binary_inplace_methods["mul_"],
        true_divide=elementwise.div, true_divide_=elementwise.binary_inplace_methods["div_"],
        multiply=elementwise.mul, subtract=elementwise.sub, divide=elementwise.div,
        negative=elementwise.negative, absolute=elementwise.absolute, arctan2=elementwise.atan2,
        greater=elementwise.gt, greater_equal=elementwise.ge, less=elementwise.lt, less_equal=elementwise.le,
        not_equal=elementwise.ne, where=lambda self, condition, other: elementwise.where(condition, self, other),
        clamp=elementwise.clamp, clip=elementwise.clamp, clamp_=elementwise.clamp_, clip_=elementwise.clamp_,
        lerp=elementwise.lerp, nan_to_num=elementwise.nan_to_num,
        softmax=elementwise.softmax, log_softmax=elementwise.log_softmax,
    )
    return methods


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


_OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
    "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor", "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift", "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
}
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_IN_PLACE = {"__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
             "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
             "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
             "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_"}


def install():
    methods = _bind_elementwise()
    methods.update(_bind_others())
    methods.update(fill_=_fill_, zero_=_zero_)
    for name, function in methods.items():
        setattr(Tensor, name, function)
    for operator, op_name in _OPERATORS.items():
        setattr(Tensor, f"__{operator}__", elementwise.make_operator(op_name))
        if operator not in _COMPARISONS:
            setattr(Tensor, f"__r{operator}__", elementwise.make_operator(op_name, reflected=True))
    Tensor.__matmul__ = _matmul_operator(reflected=False)
    Tensor.__rmatmul__ = _matmul_operator(reflected=True)
    for name, method_name in _IN_PLACE.items():
        setattr(Tensor, name, methods[method_name])
    Tensor.__neg__ = elementwise.neg
    Tensor.__pos__ = lambda self: self
    Tensor.__abs__ = elementwise.abs
    Tensor.__invert__ = _invert
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


def _invert(self):
    from . import _dtypes

    if self.dtype is _dtypes.bool:
        return elementwise.logical_not(self)
    return elementwise.bitwise_not(self)


def _reversed_dims(self):
    return shape.permute(self, tuple(reversed(range(self._data.ndim))))
