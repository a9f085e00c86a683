"""The op registry: each op is declared once, and everything users call is made from that.

A declaration (``Elementwise``; ``Composite`` for ops written as functions on tensors) names the op, its dtype rule,
its implementation and its backward rule. From it this module makes the public function (``agnostic.add``), the
Tensor methods (``Tensor.add``, ``Tensor.add_``; GradTensor's recording forms where they differ) and the operators
(``__add__``, ``__radd__``, ``__iadd__``), each with a real signature and docstring (``_docstrings``).

Where the rest lives: an elementwise op runs the plan for its operands' kinds (``_plans``); device checks, promotion
and writing results are ``_dispatch``'s; gradient formulas become the engine's rules in ``_formulas``; a recorded
call's arguments are bound to their names by ``_binding``.
"""

import functools
import inspect

import numpy

from .. import _autocast, _backend, _dtypes
from .._tensor import TensorBase, _check_writable
from ..autograd import tracking
from ..autograd.derivatives import zero
from ._binding import Binding, variadic_by_name
from ._dispatch import Result, out_with_grad_error, result_dtype, signature_with_out, write_out, write_result
from ._docstrings import inplace_doc, operator_doc
from ._formulas import backward_rule, formulas_rule
from ._plans import NOTHING_RECENT, binary_caller, forget, unary_caller
from .creation import as_tensor

OPS: dict = {}  # name -> declaration, every public op and alias of the ``agnostic`` namespace
# Each public namespace's ops: ``agnostic``'s (OPS), and those of agnostic.linalg, agnostic.fft, agnostic.special...,
# whose names may repeat agnostic's with other meanings (``agnostic.linalg.norm``, ``agnostic.fft.fft``).
NAMESPACES: dict = {"agnostic": OPS}
_DECLARED: list = []  # every declaration, internal ones too

_FLOATING = 2  # the floating-point dtype category


# ----- declarations -----------------------------------------------------------------------------------------------
class Elementwise:
    """One elementwise op of one or two tensor-or-scalar operands, declared once.

    ``implementation`` is the name of a function NumPy and CuPy share (``"add"``) or ``f(xp, *arrays)`` written
    against the array namespace; ``cpu_implementation`` and ``cuda_implementation`` are equivalent callables of one
    backend's arrays (same values, faster there): one for the dtypes that ``kind_implementations`` leaves to
    ``implementation``, or a dict of them by NumPy dtype kind. ``large_cpu`` computes large CPU results (from
    ``cpu_kernels.MIN_BYTES``) of a one-operand op, or of a tensor and a tensor or a number, on several threads: it
    returns the result, or None where it doesn't apply (the CPU function then runs); ``large_cuda`` likewise
    computes large CUDA results (from ``cuda_vectorized.MIN_SIZE`` elements) with a vectorized kernel.
    ``check(name, dtype)`` refuses promoted dtypes; ``check_operands(input, other, compute)`` checks values (integer
    division by zero...). ``gradients`` maps each operand's name to its gradient formula, as PyTorch's
    derivatives.yaml does; a formula's parameter names say what it reads: ``grad``, the operands by name (``input``,
    ``other``) and ``result``. ``derivative(input, result)`` is the short form for one operand: the gradient is
    ``grad * conj(derivative)``.
    """

    def __init__(self, name, arity, result, implementation, *, check=None, check_operands=None, gradients=None,
                 derivative=None, cpu_implementation=None, cuda_implementation=None, large_cpu=None, large_cuda=None,
                 aliases=(), operator=None, reflected=True, alpha=False, python_scalars=None, kind_implementations=None,
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
        self.large_cuda = large_cuda
        # For dtypes of these NumPy kinds ("c": complex), ``f(xp, *arrays)`` replaces the backends' own function,
        # which is not PyTorch's there; such calls take the general plan.
        self.kind_implementations = kind_implementations or {}
        self._functions = {}
        self.functions_by_device = {}
        # A ufunc, which takes out=, whose result has its operands' dtype: in place it writes into ``self``.
        self.writes_out = isinstance(implementation, str) and result in (Result.SAME, Result.FLOAT)
        # Whether the implementation takes Python numbers as they are (ufuncs do); else they become NumPy scalars.
        self.python_scalars = isinstance(implementation, str) if python_scalars is None else python_scalars
        self.backward = backward_rule(self, gradients, derivative)
        self.plans = {}
        self.recent = [NOTHING_RECENT]
        self.call = unary_caller(self) if arity == 1 else binary_caller(self)
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
        """The function computing this op on ``device``'s arrays of ``dtype`` (cached per array namespace, and per
        device for the direct plans, which ask on every call)."""
        if dtype is None:
            function = self.functions_by_device.get(device)
            if function is None:
                function = self.functions_by_device[device] = self._backend_function(device, None)
            return function
        return self._backend_function(device, dtype)

    def _backend_function(self, device, dtype):
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
            else:  # a partial, not a closure: called from C, it costs a Python frame less per call
                function = functools.partial(implementation, xp)
            self._functions[(xp, kind)] = function
        return function


def _forget_plans():
    """Plans hold result dtypes that follow the default dtype: made again after ``set_default_dtype``."""
    for op in _DECLARED:
        if isinstance(op, Elementwise):
            forget(op)


_dtypes.on_default_dtype_change(_forget_plans)


# ----- ops written as functions on tensors -------------------------------------------------------------------------
def _on_the_inputs_device(forward):
    """``forward`` run with its first argument's GPU as CuPy's current device, where it is a CUDA tensor: the arrays
    a composite op makes then come out beside its input, on every GPU, not only on the current one (PyTorch's
    device guard around each op)."""
    @functools.wraps(forward)
    def on_device(*args, **kwargs):
        if args and isinstance(args[0], TensorBase) and not args[0]._device.backend.host:
            with args[0]._device.backend.activate():
                return forward(*args, **kwargs)
        return forward(*args, **kwargs)
    return on_device


class Composite:
    """An op written as a Python function on tensors (``forward``), declared once.

    ``agnostic.<name>`` is the forward with its own signature and docstring (not made when ``public`` is false;
    ``namespace`` names another public module, such as ``"agnostic.linalg"``, whose op it is instead), and
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
    the outputs may share the input's memory; those that do become views of its base (``autograd.views``), so an
    in-place change of one rewrites the base's history, as in PyTorch.
    Without ``gradients`` the forward is differentiated through the recorded ops it calls (PyTorch's composite ops).

    ``overwrites``: the forward writes into its first argument (``fill_``, ``copy_``, ``__setitem__``); a call that
    needs a gradient records the out-of-place form (a copy, overwritten) and makes it the tensor's history, in which
    the tensor's old values get a zero gradient unless ``gradients`` says otherwise.

    ``out``: ``agnostic.<name>`` takes PyTorch's keyword-only ``out=`` (a tensor, or a tuple of them for ops with
    several outputs), written as ``_dispatch.write_out`` says; the forward never sees it. ``out=True``: each ``out``
    must have its result's dtype, as most of PyTorch's ops want; ``out="cast"``: a single result is cast into
    ``out``'s dtype where PyTorch's op does so (reductions, concatenations: ``sum``, ``mean``, ``cat``...).

    ``device_guard``: the forward runs with its first tensor's GPU current (PyTorch's device guard), so arrays it
    makes come out on that device. A forward that makes every array through its tensors' backends
    (``device.backend.run``, ``activate``) or through other ops needs none, and declares ``device_guard=False`` to
    skip the guard's cost; views never pay it.

    Plain tensors never pay for recording: their method is the forward itself when only ``self`` can need a gradient
    (and checks the other arguments first otherwise); GradTensor's method is the recording function.
    """

    def __init__(self, forward, *, gradients=None, shape_only=False, aliases=(), method=None, inplace=False,
                 name=None, node=None, is_view=False, public=True, as_property=False, operator=None,
                 overwrites=False, namespace="agnostic", device_guard=True, out=False):
        self.name = name or forward.__name__
        self.namespace = namespace
        self.doc = forward.__doc__
        self.signature = inspect.signature(forward)
        self.binding = Binding(self.signature)
        # Views make no arrays, and are the cheapest ops: they skip the guard's cost.
        forward = _on_the_inputs_device(forward) if device_guard and not is_view else forward
        forward = self.forward = variadic_by_name(forward, self.binding, self.name)
        self.parameters = self.binding.names
        self.aliases = aliases
        self.public = public
        self.node_name = tracking.backward_name(node or self.name)
        self.is_view = is_view
        if overwrites:
            gradients = {self.parameters[0]: zero, **(gradients or {})}
        self.backward = formulas_rule(self, gradients, shape_only) if gradients else None
        # Whether an argument besides the first can need a gradient: else a plain first argument means no recording.
        self.routes = bool(gradients) and any(parameter != self.parameters[0] for parameter in gradients)
        function = self._recording(_overwritten_copy(forward) if overwrites else forward) if gradients else forward
        self.function = _autocast.autocasting(self.name, function)
        self.method, self.grad_method = (_autocast.autocasting(self.name, m) if m else m
                                         for m in self._methods(method, overwrites))
        self.takes_out = out
        if out:  # the function's alone: PyTorch's methods take no out=
            self.function = self._with_out(self.function)
        if as_property:
            self.method = property(self.method, doc=self.doc)
            self.grad_method = self.grad_method and property(self.grad_method, doc=self.doc)
        self.inplace_method = inplace if callable(inplace) else self._inplace() if inplace else None
        self.grad_inplace_method = None
        self.operator = operator
        _DECLARED.append(self)
        if public:
            ops = NAMESPACES.setdefault(namespace, {})
            for name_ in (self.name,) + aliases:
                ops[name_] = self

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
        view_of = self if is_view else False  # how the tracking remakes a view from its base: ``self.recompute``
        first = self.parameters[0]
        only_first = not self.routes
        binding = self.binding
        needs_grad = tracking.needs_grad
        detached = tracking.detached

        def function(*args, **kwargs):
            # Nothing to record when no argument needs a gradient; that is sure without looking at them all when
            # only the first argument has a formula and it is a plain tensor.
            if only_first and args and args[0].__class__ is TensorBase.plain:
                return forward(*args, **kwargs)
            if not needs_grad(args, kwargs):
                output = forward(*args, **kwargs)
                if is_view and args and isinstance(args[0], TensorBase) and args[0]._requires_grad:  # under no_grad
                    tracking.views.mark_views(args[0], output, None, (), node_name, recorded=False)
                return output
            if kwargs.get("out") is not None:
                raise out_with_grad_error(self.name)
            plain_args = [detached(value) for value in args]
            plain_kwargs = {name: detached(value) for name, value in kwargs.items()} if kwargs else kwargs
            output = forward(*plain_args, **plain_kwargs)
            if isinstance(output, TensorBase) and output is (plain_args[0] if args else plain_kwargs.get(first)):
                return args[0] if args else kwargs[first]  # ``x.to(x.dtype)``: PyTorch returns self, recording nothing
            return tracking.record(node_name, self.backward, binding.values(args, kwargs), {}, output, view_of)
        function.__wrapped__ = self.forward
        return _named(function, self.name, self.doc, self.namespace)

    def _with_out(self, function):
        """``agnostic.<name>`` with PyTorch's keyword-only ``out=`` (``_dispatch.write_out``); Tensor's method
        takes none, as PyTorch's."""
        name = self.name
        needs_grad = tracking.needs_grad
        cast = self.takes_out == "cast"

        def with_out(*args, out=None, **kwargs):
            if out is None:
                return function(*args, **kwargs)
            if needs_grad(args, kwargs) or needs_grad(out if isinstance(out, (tuple, list)) else (out,)):
                raise out_with_grad_error(name)
            return write_out(out, function(*args, **kwargs), name, cast)
        with_out.__signature__ = signature_with_out(self.signature)
        return _named(with_out, name, self.doc, self.namespace)

    def _inplace(self):
        name = self.name + "_"
        forward = self.forward

        def inplace(target, *args, **kwargs):
            _check_writable(target)
            return write_result(target, forward(target, *args, **kwargs), name)

        method = tracking.differentiable_inplace(name, inplace, self.function)
        return _named(method, name, inplace_doc(self, name))

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
        if not isinstance(other, TensorBase):
            if not (isinstance(other, numpy.ndarray) or _backend.is_backend_array(other)):
                return NotImplemented
            other = as_tensor(other)
        return function(other, self) if reflected else function(self, other)
    return _named(operator, f"__{'r' if reflected else ''}{op.operator}__", operator_doc(op, reflected, numbers=False))


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
    """The ops TensorBase's class body declares (conversions, ``clone``, ``contiguous``: see ``_tensor._declared``)."""
    for value in list(vars(TensorBase).values()):
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
            other = _scaled(input, other, alpha)
        return call(input, other, out)
    return function


def _scaled(input, other, alpha):
    """``alpha * other`` for ``input + alpha * other``: in the dtype the sum takes, as PyTorch computes it (a
    bfloat16 ``other`` beside a float32 ``input`` is scaled in float32, not rounded to bfloat16 first)."""
    if not isinstance(other, TensorBase):
        return other * alpha
    if isinstance(input, TensorBase) and input.dtype is not other.dtype:
        common = result_dtype(input, other)
        if common is not other.dtype:
            other = other.to(common)
    return OPS["mul"].function(other, alpha)


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
            other = _scaled(self, other, alpha)
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
    return _named(method, name, inplace_doc(op, name))


def _unary_inplace(op, recorded):
    def method(self):
        if isinstance(self, TensorBase.recording):
            return recorded(self)
        _check_writable(self)
        return op.call(self, self)
    return method


def _binary_inplace(op, name, recorded):
    def method(self, other, *, alpha=1):
        if alpha != 1:
            if not op.alpha:
                raise TypeError(f"{name}() got an unexpected keyword argument 'alpha'")
            other = _scaled(self, other, alpha)
        recording = TensorBase.recording
        if isinstance(self, recording) or isinstance(other, recording):
            return recorded(self, other)
        _check_writable(self)
        return op.call(self, other, self)
    if not op.alpha:
        method.__signature__ = inspect.signature(lambda self, other: None)
    return method


def operator(op, reflected=False):
    """The ``__add__``-style method of ``op`` (``__radd__`` when ``reflected``): the dispatch itself, which takes
    ``self`` as its first operand."""
    caller = unary_caller(op, as_operator=True) if op.arity == 1 else \
        binary_caller(op, as_operator=True, reflected=reflected)
    name = f"__{'r' if reflected else ''}{op.operator}__"
    caller.__signature__ = _UNARY_OPERATOR if op.arity == 1 else _BINARY_OPERATOR  # not the dispatch's own ``out``
    return _named(caller, name, operator_doc(op, reflected))


_UNARY_OPERATOR = inspect.signature(lambda self: None)
_BINARY_OPERATOR = inspect.signature(lambda self, other: None)


def _named(function, name, doc, module="agnostic"):
    function.__name__ = function.__qualname__ = name
    function.__module__ = module
    function.__doc__ = doc
    return function


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


def declared_methods(name, module, recording=False):
    """A class ``module.name`` of every method, property and operator the declarations make (GradTensor's recording
    forms, where they differ, with ``recording``): the first base of ``agnostic.Tensor`` (and of GradTensor).

        >>> agnostic.Tensor.__mro__[1].__name__, agnostic.Tensor.add is agnostic.Tensor.__mro__[1].add
        ('TensorMethods', True)
    """
    doc = f"The methods of {'GradTensor' if recording else 'agnostic.Tensor'} that the op declarations make."
    # A class that defines __eq__ is unhashable unless it says otherwise: tensors hash by identity, as in PyTorch.
    return type(name, (), {"__slots__": (), "__module__": module, "__qualname__": name, "__doc__": doc,
                           "__hash__": TensorBase.__hash__, **tensor_methods(recording)})


def public_names(namespace):
    """The names a module's ``namespace`` binds to public ops' functions (declared there or imported), sorted: the
    ``__all__`` of each ops module, so that ``from agnostic.ops.<module> import *`` gives ``agnostic`` its ops, and of
    the modules with ops of their own (``agnostic.linalg``: see ``Composite``'s ``namespace``)."""
    ops = NAMESPACES.get(namespace["__name__"], OPS)  # the agnostic.ops modules declare agnostic's own
    return sorted(name for name, value in namespace.items() if name in ops and ops[name].function is value)


_declare_tensor_class_methods()
