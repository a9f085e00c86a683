"""The op registry and its one dispatcher: each op is declared once, and everything users call is made from that.

A declaration (``Elementwise``; ``Composite`` for ops written as functions on tensors) names the op, its dtype rule,
its implementation and its backward rule. From it this module makes the public function (``agnostic.add``), the
Tensor methods (``Tensor.add``, ``Tensor.add_``; GradTensor's recording forms where they differ) and the operators
(``__add__``, ``__radd__``, ``__iadd__``), each with a real signature and docstring. They all run the same
dispatch: look up the plan for the operands' kinds (a plain tensor's dtype, a scalar's type, a tensor subclass), made
on first use by promoting, checking dtypes and choosing the backend function, then run it: one backend call and a
wrap for tensors of one dtype, casts and value checks otherwise, and an autograd node when a gradient is needed. So
what depends only on those kinds is decided once per combination (and again after ``set_default_dtype``), never per
call.
"""

import ast
import functools
import inspect
import itertools

import numpy

from .. import _backend, _dtypes, _host_cache
from .._device import CPU
from .._tensor import Tensor, _check_broadcast_into, _check_writable, wrap
from ..autograd import tracking
from ..autograd.derivatives import fit, zero
from ..autograd.grad_mode import _state as _grad_state
from ._dispatch import as_operand, check_same_device, operand_array, result_dtype

OPS: dict = {}  # name -> declaration, every public op and alias
_DECLARED: list = []  # every declaration, internal ones too

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
    against the array namespace; ``cpu_implementation`` and ``cuda_implementation`` are equivalent callables of one
    backend's arrays (same values, faster there): one for the dtypes that ``kind_implementations`` leaves to
    ``implementation``, or a dict of them by NumPy dtype kind. ``large_cpu`` is the NumPy call for large CPU results.
    ``check(name, dtype)`` refuses promoted dtypes; ``check_operands(input, other, compute)`` checks values (integer
    division by zero...). ``gradients`` maps each operand's name to its gradient formula, as PyTorch's
    derivatives.yaml does; a formula's parameter names say what it reads: ``grad``, the operands by name (``input``,
    ``other``) and ``result``. ``derivative(input, result)`` is the short form for one operand: the gradient is
    ``grad * conj(derivative)``.
    """

    def __init__(self, name, arity, result, implementation, *, check=None, check_operands=None, gradients=None,
                 derivative=None, cpu_implementation=None, cuda_implementation=None, large_cpu=None, aliases=(),
                 operator=None, reflected=True, alpha=False, python_scalars=None, kind_implementations=None,
                 public=True, doc=""):
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
        # Backends with an implementation of their own (same values, faster there), by backend type.
        self.backend_implementations = {backend: own for backend, own in (
            ("cpu", cpu_implementation), ("cuda", cuda_implementation)) if own is not None}
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
        backend = device.backend
        xp = backend.xp
        kind = dtype.numpy_dtype.kind if dtype is not None and self.kind_implementations else None
        function = self._functions.get((xp, kind))
        if function is None:
            implementation = self.kind_implementations.get(kind, self._implementation)
            own = self.backend_implementations.get(backend.type)
            if isinstance(own, dict):
                own = own.get(kind)
            elif kind in self.kind_implementations:
                own = None
            if own is not None:
                function = own
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
        if isinstance(op, Elementwise):
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
        backend = device.backend
        x = input._data
        if out is input and writes_out:
            backend.run(op.backend_function(device), x, out=x)
            return out
        if backend.host:  # NumPy's own call, inline: the hot path
            array = large_cpu(x) if large_cpu is not None and x.nbytes >= _LARGE_BYTES else cpu_function(x)
            if array.__class__ is not _ndarray:
                array = numpy.asarray(array)
        else:
            array = backend.run(op.backend_function(device), x)
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
            if device.backend.host:  # NumPy's own call, inline: the hot path
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
    backend = device.backend
    array = backend.run(op.backend_function(device), x, y)
    expected = dtype if op.result in (Result.SAME, Result.FLOAT) else numpy.bool_
    if array.dtype != expected:
        array = backend.run(array.astype, expected)  # a CuPy without NumPy 2's weak-scalar rule
    return array


def _direct_into(op, device, x, y, input, out):
    """A direct plan's result written into ``out``: in place through the function's ``out=`` where it has one."""
    if out is input and op.writes_out:
        _check_broadcast_into(input, getattr(y, "shape", ()), op.name + "_")
        with device.backend.activate():
            broadcasting(lambda a, b: op.backend_function(device)(a, b, out=a), (x, y))
        return out
    array = device.backend.run(broadcasting, op.backend_function(device), (x, y))
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
    backend = device.backend
    array = backend.run(broadcasting, op.backend_function(device, compute), arrays)
    if array.dtype != result.numpy_dtype:
        array = backend.run(array.astype, result.numpy_dtype)
    result_tensor = wrap(array, device)
    return write_result(out, result_tensor, op.name) if out is not None else result_tensor


def _truth(array, device):
    with device.backend.activate():
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
    with target._device.backend.activate():
        target._device.backend.xp.copyto(target._data, result._data, casting="unsafe")
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
    """An op written as a Python function on tensors (``forward``), declared once.

    ``agnostic.<name>`` is the forward with its own signature and docstring (not made when ``public`` is false), and
    ``Tensor.<name>`` the same function with ``self`` first (``method``: another function where the order differs,
    False for none; ``as_property``: a property, as ``T``). ``name`` is the op's name when it isn't the forward's.
    ``inplace`` makes ``Tensor.<name>_``: True for the result written into ``self``, or the in-place method itself
    (see also ``in_place_of``). ``operator`` names the operator that calls the op (``@`` for ``"matmul"``: both
    ``__matmul__`` and ``__rmatmul__``).

    ``gradients`` maps parameter names to gradient formulas, as for ``Elementwise``; a formula's parameter names say
    what it reads: ``grad`` (``grads``: one per output, for ops with several), ``result`` and the op's parameters. A
    call with an argument that requires grad binds the arguments to their names once, runs the forward on plain
    tensors and records one node, named after ``node`` (the op's name by default). ``shape_only``: the formulas read
    their tensor arguments only for shapes, dtypes and devices, so those may change in place afterwards. ``is_view``:
    the outputs share the input's memory, so in-place changes to them are refused while they need a gradient.
    Without ``gradients`` the forward is differentiated through the recorded ops it calls (PyTorch's composite ops).

    ``overwrites``: the forward writes into its first argument (``fill_``, ``copy_``, ``__setitem__``); a call that
    needs a gradient records the out-of-place form (a copy, overwritten) and makes it the tensor's history, in which
    the tensor's old values get a zero gradient unless ``gradients`` says otherwise.

    Plain tensors never pay for recording: their method is the forward itself when only ``self`` can need a gradient
    (and checks the other arguments first otherwise); GradTensor's method is the recording function.
    """

    def __init__(self, forward, *, gradients=None, shape_only=False, aliases=(), method=None, inplace=False,
                 name=None, node=None, is_view=False, public=True, as_property=False, operator=None,
                 overwrites=False):
        self.name = name or forward.__name__
        self.doc = forward.__doc__
        self.forward = forward
        self.signature = inspect.signature(forward)
        self.binding = _Binding(self.signature)
        self.parameters = self.binding.names
        self.aliases = aliases
        self.public = public
        self.node_name = tracking.backward_name(node or self.name)
        self.is_view = is_view
        if overwrites:
            gradients = {self.parameters[0]: zero, **(gradients or {})}
        self.backward = _formulas_rule(self, gradients, shape_only) if gradients else None
        # Whether an argument besides the first can need a gradient: else a plain first argument means no recording.
        self.routes = bool(gradients) and any(parameter != self.parameters[0] for parameter in gradients)
        self.function = self._recording(_overwritten_copy(forward) if overwrites else forward) if gradients \
            else forward
        self.method, self.grad_method = self._methods(method, overwrites)
        if as_property:
            self.method = property(self.method, doc=self.doc)
            self.grad_method = self.grad_method and property(self.grad_method, doc=self.doc)
        self.inplace_method = inplace if callable(inplace) else self._inplace() if inplace else None
        self.grad_inplace_method = None
        self.operator = operator
        _DECLARED.append(self)
        if public:
            for name_ in (self.name,) + aliases:
                OPS[name_] = self

    def __repr__(self):
        return f"<agnostic op {self.name}>"

    def _methods(self, method, overwrites):
        """(Tensor's method, GradTensor's where it differs)."""
        if method is False:
            return None, None
        if method is not None:
            return _named(method, self.name, method.__doc__), None
        if self.backward is None:
            return self.forward, None
        recording = tracking.differentiable_inplace(self.name, self.forward, self.function) if overwrites \
            else self.function
        return (_routing(self.forward, recording) if self.routes else self.forward), recording

    def recompute(self, values):
        """The op's recorded result for its parameters' ``values`` (what a node saved), for ``create_graph``."""
        return self.binding.call(self.function, dict(zip(self.parameters, values)))

    def _recording(self, forward):
        node_name = self.node_name
        is_view = self.is_view
        first = self.parameters[0]
        only_first = not self.routes
        binding = self.binding
        needs_grad = tracking.needs_grad
        detached = tracking.detached

        def function(*args, **kwargs):
            # Nothing to record when no argument needs a gradient; that is sure without looking at them all when
            # only the first argument has a formula and it is a plain tensor.
            if only_first and args and args[0].__class__ is Tensor or not needs_grad(args, kwargs):
                return forward(*args, **kwargs)
            if kwargs.get("out") is not None:
                raise RuntimeError(f"{self.name}(): functions with out=... arguments don't support automatic "
                                   "differentiation, but one of the arguments requires grad.")
            plain_args = [detached(value) for value in args]
            plain_kwargs = {name: detached(value) for name, value in kwargs.items()} if kwargs else kwargs
            output = forward(*plain_args, **plain_kwargs)
            if isinstance(output, Tensor) and output is (plain_args[0] if args else plain_kwargs.get(first)):
                return args[0] if args else kwargs[first]  # ``x.to(x.dtype)``: PyTorch returns self, recording nothing
            return tracking.record(node_name, self.backward, binding.values(args, kwargs), {}, output, is_view)
        function.__wrapped__ = self.forward
        return _named(function, self.name, self.doc)

    def _inplace(self):
        name = self.name + "_"
        forward = self.forward

        def inplace(target, *args, **kwargs):
            _check_writable(target)
            return write_result(target, forward(target, *args, **kwargs), name)

        method = tracking.differentiable_inplace(name, inplace, self.function)
        return _named(method, name, _inplace_doc(self, name))

    def tensor_methods(self, recording=False):
        """``{name: method}`` of Tensor (GradTensor's where they differ, with ``recording``)."""
        methods = {}
        method = self.grad_method if recording else self.method
        inplace_method = self.grad_inplace_method if recording else self.inplace_method
        for name in (self.name,) + self.aliases:
            if method is not None:
                methods[name] = method
            if inplace_method is not None:
                methods[name + "_"] = inplace_method
        if self.operator is not None:
            forward = self.function if recording else self.method
            methods[f"__{self.operator}__"] = _composite_operator(self, forward, reflected=False)
            methods[f"__r{self.operator}__"] = _composite_operator(self, self.function, reflected=True)
        return methods


class _Binding:
    """A forward's parameters sorted once by how they are passed, to bind a call's arguments to their names and to
    call the forward again with them, without ``inspect``'s per-call work."""

    def __init__(self, signature):
        kind = inspect.Parameter
        parameters = signature.parameters.values()
        self.signature = signature
        self.positional = tuple(p.name for p in parameters
                                if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD))
        self.variadic = next((p.name for p in parameters if p.kind is kind.VAR_POSITIONAL), None)
        self.keyword_only = tuple(p.name for p in parameters if p.kind is kind.KEYWORD_ONLY)
        self.var_keyword = next((p.name for p in parameters if p.kind is kind.VAR_KEYWORD), None)
        self.by_keyword = frozenset(p.name for p in parameters if p.kind in (kind.POSITIONAL_OR_KEYWORD,
                                                                                 kind.KEYWORD_ONLY))
        self.defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        self.count = len(signature.parameters)
        self.names = tuple(name for name in signature.parameters if name != "out")  # what a node records
        # The common call, by position only: its values are the arguments, then the declared defaults.
        self.by_position = self.var_keyword is None and "out" not in signature.parameters
        self.required = sum(1 for p in parameters if p.default is p.empty and p.kind is not kind.KEYWORD_ONLY)
        self.default_values = tuple(self.defaults.get(name) for name in self.names)

    def bind(self, args, kwargs):
        """``{name: value}`` of every parameter, defaults filled in. A variadic parameter given one sequence holds its
        items, as PyTorch's ``*dims`` take either form (``permute(x, 1, 0)``, ``permute(x, (1, 0))``)."""
        positional = self.positional
        if self.var_keyword is None and (self.variadic is not None or len(args) <= len(positional)):
            arguments = dict(zip(positional, args))
            if self.variadic is not None:
                arguments[self.variadic] = self._items(args[len(positional):])
            for name, value in kwargs.items():
                if name in arguments or name not in self.by_keyword:
                    break
                arguments[name] = value
            else:
                for name, default in self.defaults.items():
                    arguments.setdefault(name, default)
                if len(arguments) == self.count:
                    return arguments
        bound = self.signature.bind(*args, **kwargs)  # Python's TypeError for a call that doesn't fit
        bound.apply_defaults()
        arguments = bound.arguments
        if self.variadic is not None:
            arguments[self.variadic] = self._items(arguments[self.variadic])
        return arguments

    def values(self, args, kwargs):
        """The call's value of each parameter (but ``out``), in order: what a node records."""
        if not kwargs and self.by_position:
            count = len(self.positional)
            if self.variadic is None:
                if self.required <= len(args) <= count:
                    return tuple(args) + self.default_values[len(args):]
            elif len(args) >= count:
                return tuple(args[:count]) + (self._items(args[count:]),) + self.default_values[count + 1:]
        arguments = self.bind(args, kwargs)
        return tuple([arguments[name] for name in self.names])

    @staticmethod
    def _items(values):
        return tuple(values[0]) if len(values) == 1 and isinstance(values[0], (list, tuple)) else values

    def call(self, function, arguments):
        """``function(...)`` with ``arguments`` (by name) passed as the forward takes them."""
        args = [arguments[name] for name in self.positional]
        if self.variadic is not None:
            args.extend(arguments[self.variadic])
        kwargs = {name: arguments[name] for name in self.keyword_only if name in arguments}
        if self.var_keyword is not None:
            kwargs.update(arguments[self.var_keyword])
        return function(*args, **kwargs)


def _overwritten_copy(overwrite):
    """The out-of-place form of an op that writes into its first argument: a copy, overwritten."""
    def out_of_place(target, *args, **kwargs):
        copy = target.clone()
        overwrite(copy, *args, **kwargs)
        return copy
    return out_of_place


def _routing(forward, recording):
    """A plain tensor's method for an op whose other arguments may need a gradient (``x.matmul(w)``): calls with one
    go to the recording form, the others straight to the forward."""
    needs_grad = tracking.needs_grad

    def method(self, *args, **kwargs):
        if needs_grad(args, kwargs):
            return recording(self, *args, **kwargs)
        return forward(self, *args, **kwargs)
    return functools.update_wrapper(method, forward)


def _composite_operator(op, function, reflected):
    """``__<operator>__`` (``__r<operator>__`` when ``reflected``) calling ``function``: arrays become tensors, and
    other operands give NotImplemented, so Python tries the other side."""
    def operator(self, other):
        if not isinstance(other, Tensor):
            if not (isinstance(other, numpy.ndarray) or _backend.is_backend_array(other)):
                return NotImplemented
            from .creation import as_tensor

            other = as_tensor(other)
        return function(other, self) if reflected else function(self, other)
    return _named(operator, f"__{'r' if reflected else ''}{op.operator}__", _operator_doc(op, reflected))


def _formulas_rule(op, gradients, shape_only=False):
    """The engine's ``rule(context, *grads)`` from gradient formulas keyed by parameter name (see ``Elementwise``);
    ``shape_only`` where the formulas read no values (no ``result``, no parameter, or as declared)."""
    formulas = [(gradients.get(name), _parameter_names(gradients.get(name))) for name in op.parameters]
    read = {name for _, names in formulas for name in names}
    wants_result = "result" in read
    recompute = op.recompute if isinstance(op, Composite) else lambda arguments: op.function(*arguments)

    def rule(context, *grads):
        arguments = context.args
        values = dict(zip(op.parameters, arguments))
        values["grad"] = grads[0]
        values["grads"] = grads
        if wants_result:
            # Under create_graph the result is recomputed, so that it is recorded too.
            values["result"] = recompute(arguments) if _grad_state.enabled else context.result
        return tuple(_gradient(formula, names, values, argument)
                     for (formula, names), argument in zip(formulas, arguments))
    rule.shape_only = shape_only or not (wants_result or read & set(op.parameters))
    rule.__name__ = f"{op.name}_backward"
    return rule


def _gradient(formula, names, values, argument):
    """One argument's gradient from its formula, fitted to the argument (a tensor, or a sequence of tensors)."""
    if formula is None:
        return None
    if isinstance(argument, Tensor):
        return fit(formula(*[values[name] for name in names]), argument) if argument._requires_grad else None
    if isinstance(argument, (list, tuple)) and any(isinstance(item, Tensor) and item._requires_grad
                                                   for item in argument):
        grads = formula(*[values[name] for name in names])
        return [fit(grad, item) if isinstance(item, Tensor) and item._requires_grad else None
                for grad, item in zip(grads, argument)]
    return None


def composite(**declaration):
    """Declare the decorated function as an op (see ``Composite``); returns its public function."""
    def declare(forward):
        return Composite(forward, **declaration).function
    return declare


def tensor_method(**declaration):
    """Declare the decorated function as an op that is a Tensor method only (``view``, ``fill_``); returns it."""
    def declare(forward):
        Composite(forward, public=False, **declaration)
        return forward
    return declare


def in_place_of(function):
    """Declare the decorated function as ``Tensor.<name>_``, the in-place form of the op whose public function is
    ``function``: it writes into ``self``; where a gradient is needed, the op's recorded result is written instead
    and becomes ``self``'s history."""
    op = next(op for op in _DECLARED if op.function is function)

    def declare(inplace):
        recording = tracking.differentiable_inplace(inplace.__name__, inplace, op.function)
        op.inplace_method = _routing(inplace, recording) if op.routes else inplace
        op.grad_inplace_method = recording
        return inplace
    return declare


def _declare_tensor_class_methods():
    """The ops Tensor's class body declares (conversions, ``clone``, ``copy_``: see ``_tensor._declared``)."""
    for value in list(vars(Tensor).values()):
        declaration = getattr(value, "declaration", None)
        if declaration is not None:
            Composite(value, public=False, **declaration)


# ----- what users call --------------------------------------------------------------------------------------------
def _make_function(op):
    """``agnostic.<name>(input[, other], *, out=None)``; ``add`` and ``sub`` also take ``alpha``."""
    make = _unary_function if op.arity == 1 else _scaling_function if op.alpha else _binary_function
    return _named(make(op.call), op.name, op.doc)


def _unary_function(call):
    def function(input, *, out=None):
        return call(input, out)
    return function


def _binary_function(call):
    def function(input, other, *, out=None):
        return call(input, other, out)
    return function


def _scaling_function(call):
    def function(input, other, *, alpha=1, out=None):
        if alpha != 1:
            other = _scaled(other, alpha)
        return call(input, other, out)
    return function


def _scaled(other, alpha):
    return OPS["mul"].function(other, alpha) if isinstance(other, Tensor) else other * alpha


def _make_method(op):
    """``Tensor.<name>(self[, other])``: the function with ``self`` as its first operand."""
    make = _unary_method if op.arity == 1 else _scaling_method if op.alpha else _binary_method
    return _named(make(op.call), op.name, op.doc)


def _unary_method(call):
    def method(self):
        return call(self)
    return method


def _binary_method(call):
    def method(self, other):
        return call(self, other)
    return method


def _scaling_method(call):
    def method(self, other, *, alpha=1):
        if alpha != 1:
            other = _scaled(other, alpha)
        return call(self, other)
    return method


def _make_inplace_method(op):
    """``Tensor.<name>_``: the result written into ``self`` (same shape and dtype), recorded when needed."""
    name = op.name + "_"

    def inplace(self, *operands):
        _check_writable(self)
        return op.call(self, *operands, self)

    recorded = tracking.differentiable_inplace(name, inplace, op.function)
    method = _unary_inplace(op, recorded) if op.arity == 1 else _binary_inplace(op, name, recorded)
    return _named(method, name, _inplace_doc(op, name))


def _unary_inplace(op, recorded):
    GradTensor = tracking.GradTensor

    def method(self):
        if isinstance(self, GradTensor):
            return recorded(self)
        _check_writable(self)
        return op.call(self, self)
    return method


def _binary_inplace(op, name, recorded):
    GradTensor = tracking.GradTensor

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
    return method


def operator(op, reflected=False):
    """The ``__add__``-style method of ``op`` (``__radd__`` when ``reflected``): the dispatch itself, which takes
    ``self`` as its first operand."""
    caller = _unary_caller(op, as_operator=True) if op.arity == 1 else \
        _binary_caller(op, as_operator=True, reflected=reflected)
    name = f"__{'r' if reflected else ''}{op.operator}__"
    return _named(caller, name, _operator_doc(op, reflected))


def _named(function, name, doc):
    function.__name__ = function.__qualname__ = name
    function.__module__ = "agnostic"
    function.__doc__ = doc
    return function


# ----- docstrings of the methods and operators made from a declaration ---------------------------------------------
# Each shows the op's own first example rewritten for it: where ``sub``'s docstring shows
# ``agnostic.sub(agnostic.tensor([5.0, 7.0]), 2)`` and its result, ``Tensor.sub_`` shows ``x.sub_(2)`` on
# ``x = agnostic.tensor([5.0, 7.0])``, ``__sub__`` shows ``agnostic.tensor([5.0, 7.0]) - 2`` and ``__rsub__`` the
# same subtraction with a NumPy array on the left. The result printed is the example's (nothing is computed here),
# adjusted where ``self`` keeping its dtype changes it. So an op's first example is one call of it, without keywords
# where it has an operator; ``tests/test_api_reference.py`` runs them all.
_BINARY_SYNTAX = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
                  "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<", "rshift": ">>", "eq": "==",
                  "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_UNARY_SYNTAX = {"neg": "-{}", "invert": "~{}", "abs": "abs({})"}


def _inplace_doc(op, name):
    """``Tensor.<name>``'s docstring, for the in-place form of ``op``."""
    result = getattr(op, "result", None)
    augmented = result in (Result.SAME, Result.FLOAT) and op.operator in _BINARY_SYNTAX  # ``__isub__`` is ``sub_``
    doc = f"In-place :func:`{op.name}`" + (f" (``self {_BINARY_SYNTAX[op.operator]}= other``)" if augmented else "") \
        + ": the result is written into ``self``, which keeps its shape and dtype."
    example = _example(op)
    if example is None:
        return doc
    (first, *rest), keywords, printed = example
    if result == Result.FLOAT:
        first = _as_floats(first)  # ``self`` must hold a floating result
    elif result in (Result.BOOL, Result.LOGICAL):
        printed = _bools_as_integers(printed)  # the truth values in the integer ``self``
    return doc + _example_text([f"x = {first}", f"x.{name}({', '.join(rest + keywords)})"], printed)


def _operator_doc(op, reflected):
    """``Tensor.__<operator>__``'s docstring (``__r<operator>__``'s when ``reflected``), for ``op``."""
    if op.operator in _UNARY_SYNTAX:
        doc = f"``{_syntax(op.operator, 'self')}``: :func:`{op.name}`."
    elif reflected:
        other = "a NumPy or CuPy array" if isinstance(op, Composite) else "a Python number or a NumPy or CuPy array"
        doc = (f"``{_syntax(op.operator, 'other', 'self')}``, for an ``other`` that is {other} (made a tensor): "
               f":func:`{op.name}` with the operands swapped.")
    else:
        doc = f"``{_syntax(op.operator, 'self', 'other')}``: :func:`{op.name}`."
    example = _example(op)
    if example is None or example[1]:  # operators take no keywords
        return doc
    operands, _, printed = example
    if reflected:  # the same operation, with the left operand an array, so that Python calls ``__r<operator>__``
        first, second = operands
        operands = [f"{first}.numpy()", second if "agnostic." in second else f"agnostic.tensor({second})"]
    return doc + _example_text([_syntax(op.operator, *operands)], printed)


def _syntax(operator, *operands):
    """Python's syntax for ``__<operator>__`` on these operands' sources: ``self - other``, ``-self``."""
    if operator in _UNARY_SYNTAX:
        return _UNARY_SYNTAX[operator].format(*operands)
    return f"{operands[0]} {_BINARY_SYNTAX[operator]} {operands[1]}"


@functools.cache  # an op's in-place method and its operators all read it
def _example(op):
    """The first example in ``op``'s docstring, as (its operands' sources, its keyword arguments' sources, the lines
    it prints); ``agnostic.sub(x, 2)``, ``x.sub(2)`` and ``x - 2`` all give ``(["x", "2"], [], ["tensor(...)"])``.
    None when that example is not a call or an operator, or is skipped."""
    lines = (op.doc or "").splitlines()
    index = next((index for index, line in enumerate(lines) if line.lstrip().startswith(">>> ")), None)
    if index is None or "doctest:" in lines[index]:
        return None
    code = lines[index].lstrip()[4:]
    try:
        expression = ast.parse(code, mode="eval").body
    except SyntaxError:  # a statement (``x = ...``)
        return None
    keywords = []
    if isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute):
        function = expression.func.value
        module = isinstance(function, ast.Name) and function.id == "agnostic"
        operands = expression.args if module else [function, *expression.args]
        keywords = expression.keywords
    elif isinstance(expression, ast.BinOp):
        operands = [expression.left, expression.right]
    elif isinstance(expression, ast.UnaryOp):
        operands = [expression.operand]
    else:
        return None
    indent = len(lines[index]) - len(lines[index].lstrip())
    printed = [line[indent:] for line in itertools.takewhile(_is_printed, lines[index + 1:])]
    return [code[node.col_offset:node.end_col_offset] for node in operands], \
        [code[node.col_offset:node.end_col_offset] for node in keywords], printed  # one line of ASCII: offsets index it


def _is_printed(line):
    return line.strip() and not line.lstrip().startswith(">>>")


def _example_text(sources, printed):
    return "\n\n" + "\n".join([f"    >>> {source}" for source in sources] + [f"    {line}" for line in printed]) + "\n"


def _as_floats(source):
    """``agnostic.tensor([7, -7])`` as ``agnostic.tensor([7.0, -7.0])``."""
    tree = ast.parse(source, mode="eval")
    integers = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and type(node.value) is int]
    for node in integers:
        node.value = float(node.value)
    return ast.unparse(tree) if integers else source


def _bools_as_integers(printed):
    """A printed 1-D bool tensor as the integer tensor of its truth values (``tensor([0, 1, 0])``): the examples of
    comparisons and logical ops take integer tensors."""
    items = printed[0][printed[0].index("[") + 1:printed[0].rindex("]")].split(",")
    return ["tensor([" + ", ".join("1" if item.strip() == "True" else "0" for item in items) + "])"]


def tensor_methods(recording=False):
    """Every Tensor method, property and operator the declarations make: ``{name: function}``; with ``recording``,
    GradTensor's, where they differ (the forms that record a node)."""
    methods = {}
    for op in _DECLARED:
        if isinstance(op, Composite):
            methods.update(op.tensor_methods(recording))
    if recording:
        return methods
    for name, op in OPS.items():
        if isinstance(op, Elementwise):
            methods[name] = op.method
            if op.inplace_method is not None:
                methods[name + "_"] = op.inplace_method
    for op in _DECLARED:  # internal ops too: true division is the operator ``/`` under the composite ``div``
        if not isinstance(op, Elementwise) or op.operator is None:
            continue
        methods[f"__{op.operator}__"] = operator(op)
        if op.reflected:
            methods[f"__r{op.operator}__"] = operator(op, reflected=True)
        if op.arity == 2 and op.result in (Result.SAME, Result.FLOAT):
            methods[f"__i{op.operator}__"] = op.inplace_method
    return methods


def public_functions():
    """``{name: function}`` of every public op and alias: what ``agnostic.<name>`` is."""
    return {name: op.function for name, op in OPS.items()}


_declare_tensor_class_methods()
