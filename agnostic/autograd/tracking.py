"""Recording: the node an op records, tensors turned into GradTensors, and in-place ops on recorded tensors.

Tensors that need no gradient stay plain ``Tensor`` objects and never pay for autograd: the operator short paths
only accept ``type(x) is Tensor``. A tensor that requires grad is a ``GradTensor`` (``TensorBase.recording``),
whose methods and operators are the recording forms the op registry (``ops/_registry.py``) makes; the public
functions check their arguments for GradTensors.
"""

from .._dtypes import _BY_NUMPY as _DTYPE_OF
from .._tensor import TensorBase, _check_writable, version_of, wrap
from ..ops._dispatch import check_can_cast
from . import graph, views
from .graph import edge_of
from .grad_mode import _state as _grad_state

_FLOATING = 2  # dtype category: floating point and complex tensors have gradients
_new = object.__new__


def make_leaf(tensor, cls=None, requires_grad=True):
    """A new leaf of class ``cls`` (GradTensor by default) sharing ``tensor``'s memory (how ``nn.Parameter`` is
    built).

        >>> leaf = agnostic.autograd.make_leaf(agnostic.zeros(2))
        >>> leaf.requires_grad, leaf.is_leaf
        (True, True)
    """
    leaf = object.__new__(cls or TensorBase.recording)
    leaf._data = tensor._data
    leaf._device = tensor._device
    if requires_grad:
        _check_can_require_grad(tensor)
        leaf.__dict__["_requires_grad"] = True
    return leaf


def _check_can_require_grad(tensor):
    if tensor.dtype.category < 2:
        raise RuntimeError("only Tensors of floating point and complex dtype can require gradients; "
                           f"got {tensor.dtype}: convert with .float() first")


def set_requires_grad(tensor, requires_grad):
    """``Tensor.requires_grad_``: only leaves may change it; a plain tensor becomes a GradTensor."""
    requires_grad = bool(requires_grad)
    if tensor._grad_fn is not None:
        if requires_grad:
            return tensor
        raise RuntimeError(
            "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in "
            "a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
        )
    if requires_grad:
        _check_can_require_grad(tensor)
        if not isinstance(tensor, TensorBase.recording):
            tensor.__class__ = TensorBase.recording
    tensor.__dict__["_requires_grad"] = requires_grad
    return tensor


class Context:
    """What a backward rule sees: the call's ``args`` and ``kwargs``, its ``result`` (detached), the versions of the
    recorded inputs whose values the rule reads, and what a rule of its own kept (``saved``). Made by ``context``."""

    __slots__ = ("args", "kwargs", "versions", "saved", "outputs")

    @property
    def result(self):
        """The op's result, detached: made when a rule reads it, from the arrays the node keeps (holding the output
        tensor itself would be a reference cycle, output -> grad_fn -> output, that only the garbage collector
        frees, and with it the output's memory)."""
        outputs = self.outputs
        if type(outputs) is list:  # several outputs: (array, device) per tensor, (value,) per anything else
            return tuple(wrap(*item) if len(item) == 2 else item[0] for item in outputs)
        return wrap(*outputs)

    def check_versions(self, node_name):
        for tensor, version in self.versions:
            if tensor._version != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{tensor.type()} {list(tensor.shape)}] is at version {tensor._version}; "
                    f"expected version {version} instead (used by {node_name}). Use .clone() before modifying it "
                    "in place."
                )


def context(args, kwargs, outputs, versions=()):
    """A Context: ``outputs`` is ``(array, device)`` of the op's output, or a list of such pairs (``(value,)`` for
    what isn't a tensor) for several outputs, or None; ``versions`` pairs each recorded input whose values the rule
    reads with its ``_version`` then. Made without ``__init__``, whose call from the class costs more: this runs
    for every recorded op."""
    made = _new(Context)
    made.args, made.kwargs, made.outputs, made.versions, made.saved = args, kwargs, outputs, versions, None
    return made


def needs_grad(args, kwargs=None):
    """True when grad mode is on and some Tensor argument requires grad."""
    if not _grad_state.enabled:
        return False
    recording = TensorBase.recording
    for arg in args:
        if isinstance(arg, recording):
            if arg._requires_grad:
                return True
        elif isinstance(arg, (list, tuple)):
            for item in arg:
                if isinstance(item, recording) and item._requires_grad:
                    return True
    if kwargs:
        return any(isinstance(v, recording) and v._requires_grad for v in kwargs.values())
    return False


def detached(value):
    """``value`` with every tensor in it (also in a list or tuple) cut from autograd; a value holding none is
    returned as it is."""
    cls = value.__class__
    if cls is TensorBase.plain:
        return value
    if isinstance(value, TensorBase):
        return wrap(value._data, value._device)
    if cls is list or cls is tuple:
        for item in value:
            if isinstance(item, (TensorBase, list, tuple)):
                items = [detached(v) for v in value]
                return items if cls is list else tuple(items)
    return value


def _differentiable(tensor):
    return _DTYPE_OF[tensor._data.dtype].category >= _FLOATING


def _attach(outputs, node):
    """Turn the differentiable outputs of a recorded op, plain tensors, into GradTensors pointing at ``node``."""
    recording = TensorBase.recording
    for number, tensor in enumerate(outputs):
        tensor.__class__ = recording
        state = tensor.__dict__
        state["_requires_grad"] = True
        state["_grad_fn"] = node
        state["_output_nr"] = number


def record(name, rule, args, kwargs, output, is_view=False):
    """Record ``output = op(*args, **kwargs)`` with backward ``rule``; returns the output, now tracked."""
    if isinstance(output, TensorBase):
        if not _differentiable(output):
            return output
        outputs = (output,)
        kept = output._data, output._device
    else:
        outputs = [item for item in output if isinstance(item, TensorBase) and _differentiable(item)]
        if not outputs:
            return output
        kept = [(item._data, item._device) if isinstance(item, TensorBase) else (item,) for item in output]
    # One pass over the arguments: where each tensor sits (``layout``: position, and length for a list or tuple),
    # the edge its gradient takes, and the version of each recorded one whose values the rule will read.
    layout, edges, versions = [], [], []
    recording = TensorBase.recording
    reads_values = not getattr(rule, "shape_only", False)
    for position, arg in enumerate(args):
        if isinstance(arg, TensorBase):
            layout.append((position, None))
            edges.append(edge_of(arg))
            if reads_values and isinstance(arg, recording):
                versions.append((arg, version_of(arg)))
        elif isinstance(arg, (list, tuple)) and any(isinstance(item, TensorBase) for item in arg):
            layout.append((position, len(arg)))
            for item in arg:
                if isinstance(item, TensorBase):
                    edges.append(edge_of(item))
                    if reads_values and isinstance(item, recording):
                        versions.append((item, version_of(item)))
                else:
                    edges.append(None)
    meta = [(t._data.shape, t._data.dtype, t._device) for t in outputs]
    node = graph.node(name, rule, context(args, kwargs, kept, versions), edges, layout, meta)
    _attach(outputs, node)
    if is_view:
        views.mark_views(args[0], output, getattr(is_view, "recompute", None), args[1:], name)
    return output


def _inplace_on_view(op_name, view_tensor, view, out_of_place, args, kwargs):
    """An in-place op on a view, recorded: the result is written through the view, the base's history becomes a
    CopySlices node over its old one and the op's, and the view's is made again from the base (PyTorch's rebase)."""
    if view.refusal:
        raise RuntimeError(views.refusal_message(view_tensor, view.refusal))
    base = view.base
    if base._grad_fn is None and base._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an in-place operation.")
    if view.steps is None:
        raise RuntimeError(f"{op_name}: in-place modification of this view is not supported while it needs a "
                           "gradient; use the out-of-place op, or .clone() the view first")
    _check_writable(view_tensor)
    result = out_of_place(differentiable_clone(view_tensor), *args, **kwargs)
    if result.dtype is not view_tensor.dtype:
        check_can_cast(result.dtype, view_tensor.dtype, op_name)
    detached(view_tensor).copy_(detached(result))
    rebase = context((), {}, None)
    rebase.saved = (view.steps, base.stride())
    edges = [edge_of(base), edge_of(result)]
    node = graph.node("CopySlices", views.copy_slices_rule, rebase, edges, [(0, None), (1, None)],
                      [(base._data.shape, base._data.dtype, base._device)])
    if base._grad_fn is not None:
        views.move_retained(base, node, 0)
    if not isinstance(base, TensorBase.recording):
        base.__class__ = TensorBase.recording
    base.__dict__.update(_requires_grad=True, _grad_fn=node, _output_nr=0)
    bump_version(view_tensor)
    view.refresh(view_tensor)
    return view_tensor


def backward_name(op_name):
    """PyTorch's node names: ``add`` -> ``AddBackward0``."""
    return "".join(part.capitalize() for part in op_name.strip("_").split("_")) + "Backward0"


def differentiable_inplace(op_name, inplace_forward, out_of_place):
    """Wrap an in-place method: without grad it runs as is (bumping the version); with grad it computes the
    recorded out-of-place result on a copy of ``self`` and makes that ``self``'s new history."""

    def recorded(self, *args, **kwargs):
        view = self.__dict__.get("_view")
        if not needs_grad((self,) + args, kwargs):
            if view is not None or isinstance(self, TensorBase.recording):
                bump_version(self)
            inplace_forward(self, *args, **kwargs)
            return self
        if view is not None:
            return _inplace_on_view(op_name, self, view, out_of_place, args, kwargs)
        if self._grad_fn is None and self._requires_grad:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        result = out_of_place(differentiable_clone(self), *args, **kwargs)
        if result.dtype is not self.dtype:
            check_can_cast(result.dtype, self.dtype, op_name)
        detached(self).copy_(detached(result))
        bump_version(self)
        if self._grad_fn is not None:
            views.move_retained(self, result._grad_fn, result._output_nr)
        if not isinstance(self, TensorBase.recording):
            self.__class__ = TensorBase.recording
        self.__dict__.update(_requires_grad=True, _grad_fn=result._grad_fn, _output_nr=result._output_nr)
        return self

    recorded.__name__ = recorded.__qualname__ = op_name
    recorded.__doc__ = inplace_forward.__doc__
    recorded.__wrapped__ = inplace_forward  # its signature
    return recorded


def bump_version(tensor):
    """One more in-place change of ``tensor``'s memory: a view counts it on its base, whose count views share."""
    view = tensor.__dict__.get("_view")
    owner = tensor if view is None else view.base
    owner.__dict__["_version"] = owner._version + 1


def _clone_rule(context, grad):
    return (grad,)


_clone_rule.shape_only = True  # type: ignore[attr-defined]  # read by the engine


def differentiable_clone(tensor):
    """A recorded copy of ``tensor`` (the gradient passes through unchanged)."""
    copy = tensor.detach().clone()
    if not needs_grad((tensor,)):
        return copy
    return record("CloneBackward0", _clone_rule, (tensor,), {}, copy)
