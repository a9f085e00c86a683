"""The op registry and its one dispatcher: each op is declared once, and everything users call is made from that.

A declaration (``Elementwise``) names the op, its dtype rule, its implementation and its backward rule. From it this
module makes the public function (``agnostic.add``), the Tensor methods (``Tensor.add``, ``Tensor.add_``) and the
operators (``__add__``, ``__radd__``, ``__iadd__``), each with a real signature and docstring. They all run the same
dispatch: look up the plan for the operands' kinds (a plain tensor's dtype, a scalar's type, a tensor subclass), made
on first use by promoting, checking dtypes and choosing the backend function, then run it: one backend call and a
wrap for tensors of one dtype, casts and value checks otherwise, and an autograd node when a gradient is needed. So
what depends only on those kinds is decided once per combination (and again after ``set_default_dtype``), never per
call.
"""

import inspect

import numpy

from .. import _backend, _dtypes, _host_cache
from .._device import CPU
from .._tensor import Tensor, _check_broadcast_into, _check_writable, wrap
from ..autograd import tracking
from ..autograd.derivatives import fit
from ..autograd.grad_mode import _state as _grad_state
from ._dispatch import as_operand, check_same_device, operand_array, result_dtype

OPS = {}  # name -> declaration, every public op and alias
_DECLARED = []  # every declaration, internal ones too

_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)
_SCALARS = frozenset((bool, int, float, complex))
_ndarray = numpy.ndarray
_new_tensor = object.__new__
_LARGE_BYTES = _host_cache.MIN_BYTES  # CPU results from this size on take the op's ``large_cpu`` call


# ----- dtype rules ------------------------------------------------------------------------------------------------
class Result:
    """How an op's result dtype follows from its promoted input dtype."""

    SAME = "same"  # computed and returned in the promoted dtype
    FLOAT = "float"  # integers and bools compute in the default float dtype (``int / int`` is a float)
    BOOL = "bool"  # computed in the promoted dtype, returns bool (comparisons, isnan...)
    LOGICAL = "logical"  # truth taken in the promoted dtype, computed and returned as bool


def refuse(categories, message):
    """A dtype check refusing promoted dtypes of the given categories with ``message`` (``{name}``, ``{dtype}``)."""
    def check(name, dtype):
        if dtype.category in categories:
            # NotImplementedError is a RuntimeError, and what PyTorch raises for unsupported dtypes.
            raise NotImplementedError(message.format(name=name, dtype=dtype))
    return check


def check_can_cast(source, target, name):
    """PyTorch's rule for writing results: no float -> integer, complex -> real, or non-bool -> bool."""
    if source.category > target.category:
        raise RuntimeError(
            f"{name}: result type {source.name} can't be cast to the desired output type {target.name}; "
            f"convert self first (e.g. self.to({source!r}))"
        )


# ----- declarations -----------------------------------------------------------------------------------------------
class Elementwise:
    """One elementwise op of one or two tensor-or-scalar operands, declared once.

    ``implementation`` is the name of a function NumPy and CuPy share (``"add"``) or ``f(xp, *arrays)`` written
    against the array namespace; ``cpu_implementation`` is an equivalent NumPy-only callable (same values), and
    ``large_cpu`` the NumPy call for large CPU results. ``check(name, dtype)`` refuses promoted dtypes;
    ``check_operands(input, other, compute)`` checks values (integer division by zero...). ``gradients`` maps each
    operand's name to its gradient formula, as PyTorch's derivatives.yaml does; a formula's parameter names say what
    it reads: ``grad``, the operands by name (``input``, ``other``) and ``result``. ``derivative(input, result)`` is
    the short form for one operand: the gradient is ``grad * conj(derivative)``.
    """

    def __init__(self, name, arity, result, implementation, *, check=None, check_operands=None, gradients=None,
                 derivative=None, cpu_implementation=None, large_cpu=None, aliases=(), operator=None,
                 reflected=True, alpha=False, python_scalars=None, kind_implementations=None, public=True,
                 doc=""):
        self.name = name
        self.arity = arity
        self.parameters = ("input", "other")[:arity]
        self.result = result
        self.check = check
        self.check_operands = check_operands
        self.aliases = aliases
        self.operator = operator
        self.reflected = reflected and arity == 2
        self.inplace = arity == 2 or result != Result.BOOL
        self.alpha = alpha
        self.doc = doc
        self._implementation = implementation
        self._cpu_implementation = cpu_implementation
        self.large_cpu = large_cpu
        # For dtypes of these NumPy kinds ("c": complex), ``f(xp, *arrays)`` replaces the backends' own function,
        # which is not PyTorch's there; such calls take the general plan.
        self.kind_implementations = kind_implementations or {}
        self._functions = {}
        # A ufunc, which takes out=, whose result has its operands' dtype: in place it writes into ``self``.
        self.writes_out = isinstance(implementation, str) and result in (Result.SAME, Result.FLOAT)
        # Whether the implementation takes Python numbers as they are (ufuncs do); else they become NumPy scalars.
        self.python_scalars = isinstance(implementation, str) if python_scalars is None else python_scalars
        self.backward = _backward_rule(self, gradients, derivative)
        self.plans = {}
        self.call = _unary_caller(self) if arity == 1 else _binary_caller(self)
        self.function = _make_function(self)
        self.method = _make_method(self)
        self.inplace_method = _make_inplace_method(self) if self.inplace else None
        _DECLARED.append(self)
        if public:
            for name_ in (name,) + aliases:
                OPS[name_] = self

    def __repr__(self):
        return f"<agnostic op {self.name}>"

    def types(self, dtype):
        """(compute dtype, result dtype) for operands promoted to ``dtype``; raises for refused dtypes."""
        if self.check is not None:
            self.check(self.name, dtype)
        result = self.result
        if result == Result.SAME:
            return dtype, dtype
        if result == Result.FLOAT:
            floating = _dtypes.get_default_dtype() if dtype.category < _FLOATING else dtype
            return floating, floating
        if result == Result.LOGICAL:
            return _dtypes.bool, _dtypes.bool
        return dtype, _dtypes.bool

    def backend_function(self, device, dtype=None):
        """The function computing this op on ``device``'s arrays of ``dtype`` (cached per array namespace)."""
        xp = _backend.namespace(device) if device is CPU else _backend.require_cupy()
        kind = dtype.numpy_dtype.kind if dtype is not None and self.kind_implementations else None
        function = self._functions.get((xp, kind))
        if function is None:
            implementation = self.kind_implementations.get(kind, self._implementation)
            if xp is numpy and self._cpu_implementation is not None and kind not in self.kind_implementations:
                function = self._cpu_implementation
            elif isinstance(implementation, str):
                function = getattr(xp, implementation)
            else:
                def function(*arrays, _implementation=implementation, _xp=xp):
                    return _implementation(_xp, *arrays)
            self._functions[(xp, kind)] = function
        return function


# ----- the dispatcher ---------------------------------------------------------------------------------------------
def _kind(value):
    """What a plan depends on for an operand that isn't a plain Tensor: a Python scalar's type, a Tensor
    subclass with its dtype, or None for anything else (converted or refused by ``_coerced``)."""
    cls = value.__class__
    if cls in _SCALARS:
        return cls
    if isinstance(value, Tensor):
        return cls, value._data.dtype
    return None


def _unary_caller(op, as_operator=False):
    """``caller(input, out=None)``: the dispatch of a one-operand op. It finds the plan for the operand's kind,
    made on first use, and runs it."""
    plans = op.plans

    def caller(input, out=None):
        key = input._data.dtype if input.__class__ is Tensor else _kind(input)
        plan = plans.get(key)
        if plan is None:
            if key is None:
                return caller(*_coerced(op, (input,), as_operator), out)
            plan = plans[key] = _make_plan(op, (input,))
        return plan(input, out)
    return caller


def _binary_caller(op, as_operator=False, reflected=False):
    """``caller(input, other, out=None)``: the dispatch of a two-operand op. It finds the plan for the operands'
    kinds (a plain Tensor's dtype, a scalar's type), made on first use, and runs it. For operators, operands they
    can't take give NotImplemented, so Python tries the other side; ``reflected`` swaps the operands
    (``__radd__``)."""
    plans = op.plans

    def caller(input, other, out=None):
        if reflected:
            input, other = other, input
        kind_a = input.__class__
        kind_b = other.__class__
        key_a = input._data.dtype if kind_a is Tensor else kind_a if kind_a in _SCALARS else _kind(input)
        key_b = other._data.dtype if kind_b is Tensor else kind_b if kind_b in _SCALARS else _kind(other)
        plan = plans.get(key_a)
        if plan is not None:
            plan = plan.get(key_b)
            if plan is not None:
                return plan(input, other, out)
        if key_a is None or key_b is None:
            operands = _coerced(op, (input, other), as_operator)
            return NotImplemented if operands is NotImplemented else op.call(*operands, out)
        by_second = plans.setdefault(key_a, {})
        if key_b not in by_second:
            by_second[key_b] = _make_plan(op, (input, other))
        return by_second[key_b](input, other, out)
    return caller


def _forget_plans():
    """Plans hold result dtypes that follow the default dtype: made again after ``set_default_dtype``."""
    for op in _DECLARED:
        op.plans.clear()


_dtypes.on_default_dtype_change(_forget_plans)


def _coerced(op, operands, as_operator):
    """Operands that aren't tensors or Python scalars: NumPy scalars become Python numbers; for operators, arrays
    become tensors and anything else gives NotImplemented; for functions, a TypeError names the argument."""
    coerced = []
    for name, value in zip(op.parameters, operands):
        if isinstance(value, numpy.generic):
            value = value.item()
        elif as_operator and not isinstance(value, Tensor) and type(value) not in _SCALARS:
            if not (isinstance(value, numpy.ndarray) or _backend.is_backend_array(value)):
                return NotImplemented
            from .creation import as_tensor

            value = as_tensor(value)
        if op.arity == 1 and not isinstance(value, Tensor):
            _not_a_tensor(op, value)
        coerced.append(as_operand(value, name))
    return tuple(coerced)


def _not_a_tensor(op, value):
    raise TypeError(f"{op.name}(): argument 'input' must be a Tensor, got {type(value).__name__}")


def _make_plan(op, operands):
    """The plan for operands of these kinds: ``plan(*operands, out)``."""
    if op.arity == 1 and not isinstance(operands[0], Tensor):
        _not_a_tensor(op, operands[0])
    tensors = [x for x in operands if isinstance(x, Tensor)]
    if not tensors:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got two Python numbers")
    if any(isinstance(x, tracking.GradTensor) for x in tensors):
        return _recording_plan(op)
    if all(type(x) is Tensor for x in tensors) and len({x.dtype for x in tensors}) == 1:
        dtype = tensors[0].dtype
        if result_dtype(*operands) is dtype and op.types(dtype)[0] is dtype and \
                dtype.numpy_dtype.kind not in op.kind_implementations:
            if op.check_operands is not None:
                op.check_operands(*operands, compute=dtype)  # what depends only on the kinds (a bool operand)
            scalar_kinds = {type(x) for x in operands if not isinstance(x, Tensor)}
            if not scalar_kinds or op.python_scalars and (dtype.category >= _FLOATING or scalar_kinds <= {bool, int}):
                if op.arity == 1:
                    return _direct_unary_plan(op)
                return _direct_binary_plan(op, dtype, isinstance(operands[0], Tensor), isinstance(operands[1], Tensor))
    return _general_plan(op)


def _direct_unary_plan(op):
    """A tensor whose dtype the backend function takes and returns as PyTorch would: one call, no casts."""
    cpu_function = op.backend_function(CPU)
    large_cpu = op.large_cpu
    writes_out = op.writes_out
    name = op.name

    def plan(input, out):
        device = input._device
        x = input._data
        if out is input and writes_out:
            with _backend.on(device):
                op.backend_function(device)(x, out=x)
            return out
        if device is CPU:
            array = large_cpu(x) if large_cpu is not None and x.nbytes >= _LARGE_BYTES else cpu_function(x)
            if array.__class__ is not _ndarray:
                array = numpy.asarray(array)
        else:
            with _backend.on(device):
                array = op.backend_function(device)(x)
        tensor = _new_tensor(Tensor)
        tensor._data = array
        tensor._device = device
        return tensor if out is None else write_result(out, tensor, name)
    return plan


def _direct_binary_plan(op, dtype, first_is_tensor, second_is_tensor):
    """Operands of one dtype that the backend function takes as they are: tensors' arrays, and Python scalars, which
    NumPy and CuPy convert to the tensors' dtype as PyTorch does (integers that don't fit wrap, so they take the
    general plan). One call, no casts; in place (``out`` is ``input``) the function writes into ``input``."""
    cpu_function = op.backend_function(CPU)
    large_cpu = op.large_cpu
    integers = dtype.category == _INTEGER  # a Python int must fit (bool tensors take only bool scalars here)
    check_values = op.check_operands if integers else None  # division by zero, negative powers: integers only
    general = _general_plan(op)

    def plan(input, other, out):
        if first_is_tensor:
            device = input._device
            sized = x = input._data
            if second_is_tensor:
                y = other._data
                if other._device is not device:
                    return general(input, other, out)
            else:
                y = other
                if integers and not _fits(y, x.dtype):
                    return general(input, other, out)
        else:
            device = other._device
            sized = y = other._data
            x = input
            if integers and not _fits(x, y.dtype):
                return general(input, other, out)
        if check_values is not None:
            check_values(input, other, compute=dtype)
        if out is not None:
            return _direct_into(op, device, x, y, input, out)
        try:
            if device is CPU:
                array = cpu_function(x, y) if large_cpu is None or sized.nbytes < _LARGE_BYTES else large_cpu(x, y)
                if array.__class__ is not _ndarray:
                    array = numpy.asarray(array)
            else:
                array = _on_device(op, device, sized.dtype, x, y)
        except ValueError:
            _raise_broadcast_error(x, y)
            raise
        tensor = _new_tensor(Tensor)
        tensor._data = array
        tensor._device = device
        return tensor
    return plan


def _on_device(op, device, dtype, x, y):
    with _backend.on(device):
        array = op.backend_function(device)(x, y)
        expected = dtype if op.result in (Result.SAME, Result.FLOAT) else numpy.bool_
        if array.dtype != expected:
            array = array.astype(expected)  # a CuPy without NumPy 2's weak-scalar rule
        return array


def _direct_into(op, device, x, y, input, out):
    """A direct plan's result written into ``out``: in place through the function's ``out=`` where it has one."""
    if out is input and op.writes_out:
        _check_broadcast_into(input, getattr(y, "shape", ()), op.name + "_")
        with _backend.on(device):
            broadcasting(lambda a, b: op.backend_function(device)(a, b, out=a), (x, y))
        return out
    with _backend.on(device):
        array = broadcasting(op.backend_function(device), (x, y))
        if array.__class__ is not _ndarray and device is CPU:
            array = numpy.asarray(array)
    return write_result(out, wrap(array, device), op.name)


def _fits(value, numpy_dtype):
    info = numpy.iinfo(numpy_dtype)
    return info.min <= value <= info.max


def _raise_broadcast_error(*arrays):
    """PyTorch's RuntimeError when a backend's ValueError came from shapes that don't broadcast."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape")]
    if len(shapes) > 1 and not _broadcastable(shapes):
        raise broadcast_error(*shapes) from None


def _general_plan(op):
    """Any operands: device check, promotion, casts and value checks on every call."""
    def plan(*operands_and_out):
        return _compute(op, operands_and_out[:-1], operands_and_out[-1])
    return plan


def _compute(op, operands, out):
    tensors = [x for x in operands if isinstance(x, Tensor)]
    device = check_same_device(*tensors)
    promoted = result_dtype(*operands)
    compute, result = op.types(promoted)
    if op.check_operands is not None:
        op.check_operands(*operands, compute=compute)
    if op.result == Result.LOGICAL and promoted is not compute:
        # As PyTorch: truth is taken in the common dtype (a float64 1e-300 beside a float16 tensor is 0 there).
        arrays = [_truth(operand_array(x, promoted, device), device) for x in operands]
    else:
        arrays = [operand_array(x, compute, device) for x in operands]
    with _backend.on(device):
        array = broadcasting(op.backend_function(device, compute), arrays)
        if array.__class__ is not _ndarray and device is CPU:
            array = numpy.asarray(array)
        if array.dtype != result.numpy_dtype:
            array = array.astype(result.numpy_dtype)
    result_tensor = wrap(array, device)
    return write_result(out, result_tensor, op.name) if out is not None else result_tensor


def _truth(array, device):
    with _backend.on(device):
        return array.astype(numpy.bool_)


def broadcasting(function, arrays):
    """Call a backend function, turning its broadcasting ValueError into PyTorch's RuntimeError."""
    try:
        return function(*arrays)
    except ValueError:
        _raise_broadcast_error(*arrays)
        raise


def _broadcastable(shapes):
    try:
        numpy.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def broadcast_error(*shapes):
    """PyTorch's error for shapes that don't broadcast, naming the first mismatching dimension."""
    shapes = [tuple(shape) for shape in shapes]
    ndim = max(len(shape) for shape in shapes)
    padded = [(1,) * (ndim - len(shape)) + shape for shape in shapes]
    for dim in range(ndim):
        sizes = [shape[dim] for shape in padded if shape[dim] != 1]
        if len(set(sizes)) > 1:
            return RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({sizes[1]}) "
                                f"at non-singleton dimension {dim}")
    return RuntimeError(f"shapes {[list(shape) for shape in shapes]} cannot be broadcast together")


def write_result(target, result, name):
    """Store an out-of-place result into ``target`` after PyTorch's in-place checks (shape and castability)."""
    if result._device is not target._device:
        raise RuntimeError(
            f"{name}: the result is on {result._device} but the output tensor is on {target._device}; "
            "move the inputs to the output's device first"
        )
    _check_broadcast_into(target, result._data.shape, name)
    check_can_cast(result.dtype, target.dtype, name)
    with _backend.on(target._device):
        _backend.namespace(target._device).copyto(target._data, result._data, casting="unsafe")
    return target


# ----- autograd ---------------------------------------------------------------------------------------------------
def _recording_plan(op):
    """Operands among which some may require grad: the plain result, recorded when grad mode is on and a gradient
    is needed. ``out=`` is refused then, as PyTorch refuses it."""
    node_name = tracking.backward_name(op.name)

    def plan(*operands_and_out):
        operands, out = operands_and_out[:-1], operands_and_out[-1]
        if not tracking.needs_grad(operands):
            plain = tuple(_plain(x) for x in operands)
            result = op.call(*plain, plain[0] if out is operands[0] else out)  # in place stays in place
            return result if out is None else out
        if out is not None:
            raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        output = op.call(*[_plain(x) for x in operands])
        if op.backward is None:
            return output
        return tracking.record(node_name, op.backward, operands, {}, output)
    return plan


def _plain(value):
    return wrap(value._data, value._device) if isinstance(value, tracking.GradTensor) else value


def _backward_rule(op, gradients, derivative):
    """The engine's rule for a declared op's formulas (``derivative``: the one-operand short form)."""
    if derivative is not None:
        gradients = {"input": _from_derivative(derivative)}
    return _formulas_rule(op, gradients) if gradients else None


def _parameter_names(formula):
    return tuple(inspect.signature(formula).parameters) if formula is not None else ()


def _from_derivative(derivative):
    """The gradient formula ``grad * conj(derivative(...))``, reading what ``derivative`` reads."""
    names = _parameter_names(derivative)

    def formula(grad, *values):
        local = derivative(*values)
        return grad * (local.conj() if isinstance(local, Tensor) and local.dtype.is_complex else local)
    formula.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY) for name in ("grad",) + names])
    return formula


# ----- ops written as functions on tensors -------------------------------------------------------------------------
class Composite:
    """An op written as a Python function (``forward``), declared once: ``agnostic.<name>`` keeps the forward's own
    signature and docstring, ``Tensor.<name>`` is the function with ``self`` first (or ``method`` where the order
    differs), and ``Tensor.<name>_`` is made when ``inplace`` (True, or the in-place method itself).

    With ``gradients`` (formulas keyed by parameter name, reading what their parameter names say: ``grad``,
    ``result`` and the op's parameters, as for ``Elementwise``), a call with an argument that requires grad binds the
    arguments to their names once, runs the forward on plain tensors and records one node. Without, the forward is
    differentiated through the recorded ops it calls (PyTorch's composite ops).
    """

    def __init__(self, forward, *, gradients=None, aliases=(), method=None, inplace=False):
        self.name = forward.__name__
        self.doc = forward.__doc__
        self.forward = forward
        self.signature = inspect.signature(forward)
        self.parameters = tuple(name for name in self.signature.parameters if name != "out")
        self.aliases = aliases
        self.backward = _formulas_rule(self, gradients) if gradients else None
        self.function = self._recording() if gradients else forward
        self.method = _named(method, self.name, method.__doc__) if method else self.function
        self.inplace_method = inplace if callable(inplace) else self._inplace() if inplace else None
        for name in (self.name,) + aliases:
            OPS[name] = self

    def __repr__(self):
        return f"<agnostic op {self.name}>"

    def _recording(self):
        forward = self.forward
        node_name = tracking.backward_name(self.name)

        def function(*args, **kwargs):
            if not tracking.needs_grad(args, kwargs):
                return forward(*args, **kwargs)
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            if bound.arguments.get("out") is not None:
                raise RuntimeError(f"{self.name}(): functions with out=... arguments don't support automatic "
                                   "differentiation, but one of the arguments requires grad.")
            values = tuple(bound.arguments[name] for name in self.parameters)
            output = forward(*[_plain(value) for value in values])
            return tracking.record(node_name, self.backward, values, {}, output)
        function.__wrapped__ = forward
        function.__signature__ = self.signature
        return _named(function, self.name, forward.__doc__)

    def _inplace(self):
        name = self.name + "_"
        forward = self.forward

        def inplace(target, *args, **kwargs):
            _check_writable(target)
            return write_result(target, forward(target, *args, **kwargs), name)

        method = tracking.differentiable_inplace(name, inplace, self.function)
        return _named(method, name, f"In-place :func:`{self.name}`: the result is written into ``self``, which keeps "
                                    f"its shape and dtype.")


def _formulas_rule(op, gradients):
    """The engine's ``rule(context, grad)`` from gradient formulas keyed by parameter name (see ``Elementwise``)."""
    formulas = [(gradients.get(name), _parameter_names(gradients.get(name))) for name in op.parameters]
    read = {name for _, names in formulas for name in names}
    wants_result = "result" in read

    def rule(context, grad):
        arguments = context.args
        values = dict(zip(op.parameters, arguments))
        values["grad"] = grad
        if wants_result:
            # Under create_graph the result is recomputed, so that it is recorded too.
            values["result"] = op.function(*arguments) if _grad_state.enabled else context.result
        return tuple(
            fit(formula(*[values[name] for name in names]), argument)
            if formula is not None and isinstance(argument, Tensor) and argument._requires_grad else None
            for (formula, names), argument in zip(formulas, arguments)
        )
    rule.shape_only = not (wants_result or read & set(op.parameters))
    rule.__name__ = f"{op.name}_backward"
    return rule


def composite(*, gradients=None, aliases=(), method=None, inplace=False):
    """Declare the decorated function as an op (see ``Composite``); returns its public function."""
    def declare(forward):
        return Composite(forward, gradients=gradients, aliases=aliases, method=method, inplace=inplace).function
    return declare


# ----- what users call --------------------------------------------------------------------------------------------
def _make_function(op):
    """``agnostic.<name>(input[, other], *, out=None)``; ``add`` and ``sub`` also take ``alpha``."""
    if op.arity == 1:
        def function(input, *, out=None):
            return op.call(input, out)
    elif op.alpha:
        def function(input, other, *, alpha=1, out=None):
            if alpha != 1:
                other = _scaled(other, alpha)
            return op.call(input, other, out)
    else:
        def function(input, other, *, out=None):
            return op.call(input, other, out)
    return _named(function, op.name, op.doc)


def _scaled(other, alpha):
    return OPS["mul"].function(other, alpha) if isinstance(other, Tensor) else other * alpha


def _make_method(op):
    """``Tensor.<name>(self[, other])``: the function with ``self`` as its first operand."""
    if op.arity == 1:
        def method(self):
            return op.call(self)
    elif op.alpha:
        def method(self, other, *, alpha=1):
            if alpha != 1:
                other = _scaled(other, alpha)
            return op.call(self, other)
    else:
        def method(self, other):
            return op.call(self, other)
    return _named(method, op.name, op.doc)


def _make_inplace_method(op):
    """``Tensor.<name>_``: the result written into ``self`` (same shape and dtype), recorded when needed."""
    name = op.name + "_"

    def inplace(self, *operands):
        _check_writable(self)
        return op.call(self, *operands, self)

    recorded = tracking.differentiable_inplace(name, inplace, op.function)
    GradTensor = tracking.GradTensor
    if op.arity == 1:
        def method(self):
            if isinstance(self, GradTensor):
                return recorded(self)
            _check_writable(self)
            return op.call(self, self)
    else:
        def method(self, other, *, alpha=1):
            if alpha != 1:
                if not op.alpha:
                    raise TypeError(f"{name}() got an unexpected keyword argument 'alpha'")
                other = _scaled(other, alpha)
            if isinstance(self, GradTensor) or isinstance(other, GradTensor):
                return recorded(self, other)
            _check_writable(self)
            return op.call(self, other, self)
        if not op.alpha:
            method.__signature__ = inspect.signature(lambda self, other: None)
    return _named(method, name, f"In-place :func:`{op.name}`: the result is written into ``self``, which keeps its "
                                f"shape and dtype.")


def operator(op, reflected=False):
    """The ``__add__``-style method of ``op`` (``__radd__`` when ``reflected``): the dispatch itself, which takes
    ``self`` as its first operand."""
    caller = _unary_caller(op, as_operator=True) if op.arity == 1 else \
        _binary_caller(op, as_operator=True, reflected=reflected)
    name = f"__{'r' if reflected else ''}{op.operator}__"
    return _named(caller, name, f"``{op.operator}`` operator: :func:`{op.name}`.")


def _named(function, name, doc):
    function.__name__ = function.__qualname__ = name
    function.__module__ = "agnostic"
    function.__doc__ = doc
    return function


def tensor_methods():
    """Every Tensor method and operator the declarations make: ``{name: function}``."""
    methods = {}
    for name, op in OPS.items():
        methods[name] = op.method
        if op.inplace_method is not None:
            methods[name + "_"] = op.inplace_method
    for op in _DECLARED:  # internal ops too: true division is the operator ``/`` under the composite ``div``
        if op.operator is None:
            continue
        methods[f"__{op.operator}__"] = operator(op)
        if op.reflected:
            methods[f"__r{op.operator}__"] = operator(op, reflected=True)
        if op.arity == 2 and op.result in (Result.SAME, Result.FLOAT):
            methods[f"__i{op.operator}__"] = op.inplace_method
    return methods
