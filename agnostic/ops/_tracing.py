"""Tracing a function of elementwise ops for ``agnostic.fuse``: the function runs once on ``Traced`` values, and each
elementwise op it applies (an operator, a method, or a function such as ``agnostic.exp``) is recorded, with the
dtypes PyTorch's promotion gives it, instead of computed. The elementwise ops' callers (``_plans``) hand an operand
they don't know to ``Traced`` when it is one; nothing here runs on the path of ordinary tensors.

A recorded function replays on arrays of one array namespace (``Trace.program``): each op's backend function, on
operands cast to the op's compute dtype, and its result cast to the op's result dtype, as the ops' general plan does
eagerly. So a traced function gives the values its ops give one by one.
"""

import numbers

import numpy

from .. import _dtypes
from .._device import CPU
from .._tensor import TensorBase, wrap
from ._dispatch import Result, result_dtype


class NotFusable(TypeError):
    """The traced function did something that isn't an elementwise op of its inputs (the message says what)."""


class Trace:
    """The recorded ops of one function for one signature of its arguments. ``nodes`` are ``(op, operands,
    promoted, compute, result)``; an operand is a ``Traced`` (an argument or an earlier node's value) or a Python
    number; ``ops`` maps each elementwise op's names (aliases too) to its declaration."""

    def __init__(self, ops):
        self.ops = ops
        self.nodes = []
        self.arguments = []

    def argument(self, value):
        """A ``Traced`` standing for an argument: a tensor (its dtype and whether it has dimensions) or a number."""
        if isinstance(value, TensorBase):
            traced = Traced(self, ("argument", len(self.arguments)), value.dtype, value.dim() > 0)
        elif isinstance(value, (bool, numbers.Number)) and not isinstance(value, numpy.ndarray):
            traced = Traced(self, ("argument", len(self.arguments)), None, False, type(_python_number(value)))
        else:
            raise NotFusable(f"agnostic.fuse takes tensors and Python numbers as arguments, got "
                             f"{type(value).__name__}")
        self.arguments.append(traced)
        return traced

    def apply(self, op, operands):
        """Record ``op`` of ``operands`` (Traced values and Python numbers); returns the Traced result."""
        if any(isinstance(operand, TensorBase) for operand in operands):
            raise NotFusable(f"{op.name}() of a tensor the fused function did not get as an argument: pass every "
                             "tensor it reads as an argument")
        stand_ins = [operand.stand_in() if isinstance(operand, Traced) else _python_number(operand)
                     for operand in operands]
        if not any(isinstance(s, TensorBase) for s in stand_ins):
            raise NotFusable(f"{op.name}() of Python numbers only: compute it outside the fused function")
        promoted = result_dtype(*stand_ins)
        compute, result = op.types(promoted)
        if op.check_operands is not None:
            op.check_operands(*stand_ins, compute=compute)  # refusals (bool operands...) as the op gives them
        dimensioned = any(isinstance(o, Traced) and o.dimensioned for o in operands)
        self.nodes.append((op, tuple(operands), promoted, compute, result))
        return Traced(self, ("node", len(self.nodes) - 1), result, dimensioned)

    def cast(self, value, dtype):
        """Record a cast of the Traced ``value`` to ``dtype`` (``x.to(dtype)``, ``x.float()``...)."""
        self.nodes.append((None, (value,), dtype, dtype, dtype))
        return Traced(self, ("node", len(self.nodes) - 1), dtype, value.dimensioned)

    def steps(self, functions, outputs):
        """What running the trace does, worked out once: ``(steps, results)``. A step is ``(function, reads,
        truth, result dtype)`` (``function`` None for a cast; ``truth``: its operands become booleans first, as the
        eager op takes truth in the common dtype); a read is ``(source, index or constant, dtype to cast to or
        None)``, ``source`` being ``"argument"``, ``"node"`` (an earlier step's value) or ``"constant"``."""
        steps = []
        for (op, operands, promoted, compute, result), function in zip(self.nodes, functions):
            truth = op is not None and op.result == Result.LOGICAL and promoted is not compute
            reads = tuple(self._read(operand, promoted if truth else compute) for operand in operands)
            steps.append((function, reads, truth, result.numpy_dtype))
        return steps, tuple(self._read(output, output.dtype) for output in outputs)

    def program(self, functions, outputs):
        """``run(*arrays)``: the outputs' arrays, computed from the arguments' arrays (numbers as 0-dim arrays or
        NumPy scalars of their Python type) with each op's backend function ``functions[i]`` (None for a cast),
        each operand cast to the op's compute dtype and each result to its result dtype, as the eager ops do."""
        steps, results = self.steps(functions, outputs)

        def run(*arrays):
            values = []
            for function, reads, truth, result in steps:
                inputs = [_value(read, arrays, values) for read in reads]
                if truth:
                    inputs = [array.astype(numpy.bool_) for array in inputs]
                array = inputs[0] if function is None else function(*inputs)
                values.append(array if array.dtype == result else array.astype(result))
            return tuple(_value(read, arrays, values) for read in results)

        return run

    @staticmethod
    def _read(operand, dtype):
        """How a step gets an operand in ``dtype``: ``(source, index or constant, dtype to cast to or None)``."""
        if not isinstance(operand, Traced):  # a number written in the function: a constant of the dtype
            return "constant", dtype.numpy_dtype.type(operand), None
        kind, index = operand.source
        return kind, index, dtype.numpy_dtype if operand.dtype is not dtype else None


def _value(read, arrays, values):
    source, index, cast = read
    if source == "constant":
        return index
    array = arrays[index] if source == "argument" else values[index]
    return array if cast is None else array.astype(cast)


class Traced:
    """A value of a function being traced by ``agnostic.fuse``: an argument or an elementwise op's result. It has
    a dtype (None for a Python-number argument) and takes the operators, the elementwise ops' methods and the
    casts a tensor has; anything else raises ``NotFusable``."""

    __slots__ = ("trace", "source", "dtype", "dimensioned", "number_type")

    def __init__(self, trace, source, dtype, dimensioned, number_type=None):
        self.trace, self.source, self.dtype = trace, source, dtype
        self.dimensioned, self.number_type = dimensioned, number_type

    def stand_in(self):
        """What promotion sees: a one-element tensor of this dtype (0-dim when this has no dimensions), or a Python
        number of this argument's type."""
        if self.dtype is None:
            return self.number_type(1)
        return wrap(numpy.zeros((1,) if self.dimensioned else (), self.dtype.numpy_dtype), CPU)

    def _op(self, name, *operands):
        return self.trace.apply(self.trace.ops[name], operands)

    # ----- operators: as Tensor's, each one elementwise op --------------------------------------------------------
    def __add__(self, other): return self._op("add", self, other)  # noqa: E704
    def __radd__(self, other): return self._op("add", other, self)  # noqa: E704
    def __sub__(self, other): return self._op("sub", self, other)  # noqa: E704
    def __rsub__(self, other): return self._op("sub", other, self)  # noqa: E704
    def __mul__(self, other): return self._op("mul", self, other)  # noqa: E704
    def __rmul__(self, other): return self._op("mul", other, self)  # noqa: E704
    def __truediv__(self, other): return self._op("div", self, other)  # noqa: E704
    def __rtruediv__(self, other): return self._op("div", other, self)  # noqa: E704
    def __floordiv__(self, other): return self._op("floor_divide", self, other)  # noqa: E704
    def __rfloordiv__(self, other): return self._op("floor_divide", other, self)  # noqa: E704
    def __mod__(self, other): return self._op("remainder", self, other)  # noqa: E704
    def __rmod__(self, other): return self._op("remainder", other, self)  # noqa: E704
    def __pow__(self, other): return self._op("pow", self, other)  # noqa: E704
    def __rpow__(self, other): return self._op("pow", other, self)  # noqa: E704
    def __neg__(self): return self._op("neg", self)  # noqa: E704
    def __abs__(self): return self._op("abs", self)  # noqa: E704
    def __eq__(self, other): return self._op("eq", self, other)  # noqa: E704
    def __ne__(self, other): return self._op("ne", self, other)  # noqa: E704
    def __lt__(self, other): return self._op("lt", self, other)  # noqa: E704
    def __le__(self, other): return self._op("le", self, other)  # noqa: E704
    def __gt__(self, other): return self._op("gt", self, other)  # noqa: E704
    def __ge__(self, other): return self._op("ge", self, other)  # noqa: E704
    def __and__(self, other): return self._op("bitwise_and", self, other)  # noqa: E704
    def __rand__(self, other): return self._op("bitwise_and", other, self)  # noqa: E704
    def __or__(self, other): return self._op("bitwise_or", self, other)  # noqa: E704
    def __ror__(self, other): return self._op("bitwise_or", other, self)  # noqa: E704
    def __xor__(self, other): return self._op("bitwise_xor", self, other)  # noqa: E704
    def __rxor__(self, other): return self._op("bitwise_xor", other, self)  # noqa: E704
    def __invert__(self): return self._op("bitwise_not", self)  # noqa: E704

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self):
        raise NotFusable("a fused function can't branch on its tensors' values (if, and, or, bool()): use "
                         "agnostic.where-free forms such as maximum/minimum, or compute it outside")

    # ----- casts, and the elementwise ops as methods ----------------------------------------------------------
    def to(self, dtype):
        """A cast to ``dtype`` (only a dtype: a fused function stays on its device)."""
        if not isinstance(dtype, _dtypes.dtype):
            raise NotFusable("inside a fused function, .to() takes a dtype only")
        return self.trace.cast(self, dtype)

    def float(self): return self.to(_dtypes.float32)  # noqa: E704
    def double(self): return self.to(_dtypes.float64)  # noqa: E704
    def half(self): return self.to(_dtypes.float16)  # noqa: E704
    def int(self): return self.to(_dtypes.int32)  # noqa: E704
    def long(self): return self.to(_dtypes.int64)  # noqa: E704
    def bool(self): return self.to(_dtypes.bool)  # noqa: E704

    def __getattr__(self, name):
        op = self.trace.ops.get(name)
        if op is None:
            raise NotFusable(f"{name} is not an elementwise op: agnostic.fuse fuses elementwise ops only (operators "
                             "and agnostic's elementwise functions); compute it outside the fused function")
        return lambda *others: self.trace.apply(op, (self, *others))


def _python_number(value):
    """A Python number (NumPy scalars become Python's, as the ops take them)."""
    return value.item() if isinstance(value, numpy.generic) else value
