"""The recorded graph and the engine that walks it backwards: Node (a ``grad_fn``), AccumulateGrad, run_backward."""

import weakref

from .._dtypes import _BY_NUMPY as _DTYPE_OF
from .._tensor import TensorBase
from ..ops.creation import empty_like, zeros
from . import anomaly_mode
from .anomaly_mode import _state as _anomaly_state
from .grad_mode import _state as _grad_state

_new = object.__new__


class Node:
    """One recorded operation: how to turn gradients of its outputs into gradients of its inputs.

    ``next_edges`` holds, for each tensor input, ``(node, output_nr)`` of the input's own ``grad_fn`` (or its
    AccumulateGrad when the input is a leaf), or None when that input needs no gradient. Edges are captured when the
    node is made, so later in-place rebinding of an input's ``grad_fn`` does not change this node.

        >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
        >>> y = (x * 2).sum()
        >>> y.grad_fn
        <SumBackward0 object at 0x...>
        >>> y.grad_fn.name()
        'SumBackward0'
        >>> y.grad_fn.next_functions
        ((<MulBackward0 object at 0x...>, 0),)
    """

    __slots__ = ("rule", "context", "next_edges", "layout", "output_meta", "tensor_hooks", "retained_outputs",
                 "_name", "__weakref__")

    def name(self):
        """PyTorch-style name, e.g. ``'AddBackward0'``."""
        return self._name

    @property
    def next_functions(self):
        """``((node, output_nr), ...)`` for each input, ``(None, 0)`` where the input needs no gradient."""
        return tuple(edge if edge is not None else (None, 0) for edge in self.next_edges)

    def register_hook(self, hook):
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's gradients are computed."""
        raise RuntimeError("Node.register_hook is not supported; register hooks on tensors with "
                           "Tensor.register_hook instead")

    def __repr__(self):
        return f"<{self._name} object at {hex(id(self))}>"

    def apply(self, grad_outputs):
        """Gradients for each input edge, from the gradients of this node's outputs (None entries mean zero)."""
        context = self.context
        if context is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after they "
                "have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time."
            )
        context.check_versions(self._name)
        if len(grad_outputs) != 1 or grad_outputs[0] is None:  # (``None in`` would compare tensors by value)
            grad_outputs = [_zeros(meta) if grad is None else grad
                            for grad, meta in zip(grad_outputs, self.output_meta)]
        grads = self.rule(context, *grad_outputs)
        return _flatten_like(grads, self.layout)


def node(name, rule, context, next_edges, layout, output_meta):
    """A Node: ``context`` is what ``rule(context, *grads)`` reads, ``next_edges`` an edge (or None) per tensor
    input, ``layout`` where the inputs sat among the arguments (``(position, None)``, or ``(position, length)`` for
    a list), ``output_meta`` ``(shape, NumPy dtype, device)`` per output (zeros stand for a missing gradient). Made
    without ``__init__``, whose call from the class costs more: this runs for every recorded op."""
    made = _new(Node)
    made._name, made.rule, made.context, made.next_edges = name, rule, context, next_edges
    made.layout, made.output_meta, made.tensor_hooks, made.retained_outputs = layout, output_meta, None, None
    if _anomaly_state.enabled:  # debugging aid (detect_anomaly): keep the forward traceback of this node
        anomaly_mode.remember_forward(made)
    return made


class AccumulateGrad:
    """The node of a leaf tensor: adds incoming gradients into ``tensor.grad``."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor

    def name(self):
        return "torch::autograd::AccumulateGrad"

    next_edges = ()

    @property
    def next_functions(self):
        return ()

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def accumulator_of(tensor):
    """The (cached) AccumulateGrad node of a leaf tensor that requires grad."""
    existing = tensor.__dict__.get("_accumulator")
    node = existing() if existing is not None else None
    if node is None:
        node = AccumulateGrad(tensor)
        tensor.__dict__["_accumulator"] = weakref.ref(node)
    return node


def edge_of(tensor):
    """Where gradients for ``tensor`` flow: ``(grad_fn, output_nr)``, its AccumulateGrad, or None."""
    state = tensor.__dict__
    view = state.get("_view")
    if view is not None and view.version != view.base._version:
        view.refresh(tensor)  # its base changed in place since its grad_fn was made
    if not state.get("_requires_grad"):
        return None
    grad_fn = state.get("_grad_fn")
    if grad_fn is not None:
        return (grad_fn, state.get("_output_nr", 0))
    return (accumulator_of(tensor), 0)


def _zeros(meta):
    shape, dtype, device = meta
    return zeros(shape, dtype=_DTYPE_OF[dtype], device=device)


def _flatten_like(grads, layout):
    if not isinstance(grads, tuple):
        grads = (grads,)
    flat = []
    for position, count in layout:
        grad = grads[position] if position < len(grads) else None
        if count is None:
            flat.append(grad)
        else:
            flat.extend(grad if grad is not None else [None] * count)
    return flat


def _dependencies(roots):
    """For every node reachable from ``roots``, how many edges point at it (nodes hash by identity)."""
    counts = {}
    stack = [node for node, _ in roots]
    seen = set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for edge in node.next_edges:
            if edge is not None:
                target = edge[0]
                counts[target] = counts.get(target, 0) + 1
                stack.append(target)
    return counts


def _add(existing, grad):
    if existing is None:
        return grad
    return existing + grad


def run_backward(roots, root_grads, retain_graph=False, create_graph=False, captured=None):
    """Propagate ``root_grads`` from ``roots`` (edges) through the graph.

    Leaves accumulate into ``.grad``; with ``captured`` (a dict edge-key -> None, for ``autograd.grad``) the
    gradients reaching those edges are stored there instead and no ``.grad`` changes.
    """
    previous_mode = _grad_state.enabled
    _grad_state.enabled = create_graph
    try:
        counts = _dependencies(roots)
        buffers = {}  # node -> {output number: gradient summed so far}
        for (node, output_nr), grad in zip(roots, root_grads):
            slots = buffers.setdefault(node, {})
            slots[output_nr] = _add(slots.get(output_nr), grad)
        given = {_memory(grad) for grad in root_grads}  # memory a leaf's .grad must not share (see _leaf_gradient)
        ready = [node for node, _ in roots if counts.get(node, 0) == 0]
        queued = set(ready)
        while ready:
            node = ready.pop()
            slots = buffers.pop(node, None) or {}
            if type(node) is AccumulateGrad:
                _accumulate(node, slots.get(0), captured, given)
                continue
            count = len(node.output_meta)
            grad_outputs = [slots.get(0)] if count == 1 else [slots.get(i) for i in range(count)]
            if not _anomaly_state.enabled:
                if node.tensor_hooks or node.retained_outputs or captured is not None:
                    grad_outputs = _run_tensor_hooks(node, grad_outputs, captured)
                input_grads = node.apply(grad_outputs)
            else:  # detect_anomaly: the same two calls, checked for NaN, errors reported with the forward traceback
                input_grads = anomaly_mode.run_checked(
                    node, lambda grads: node.apply(_run_tensor_hooks(node, grads, captured)), grad_outputs)
            if not retain_graph:
                node.context = None
            for edge, grad in zip(node.next_edges, input_grads):
                if edge is None:
                    continue
                target, output_nr = edge
                if grad is not None:
                    slots = buffers.get(target)
                    if slots is None:
                        buffers[target] = {output_nr: grad}
                    else:
                        slots[output_nr] = _add(slots.get(output_nr), grad)
                remaining = counts[target] - 1
                counts[target] = remaining
                if remaining == 0 and target not in queued:
                    queued.add(target)
                    ready.append(target)
    finally:
        _grad_state.enabled = previous_mode


def _run_tensor_hooks(node, grad_outputs, captured):
    hooks = node.tensor_hooks
    if hooks:
        for output_nr, tensor_hooks in hooks.items():
            for hook in tensor_hooks:
                grad = grad_outputs[output_nr]
                if grad is None:
                    continue
                replaced = hook(grad)
                if replaced is not None:
                    grad_outputs[output_nr] = replaced
    if node.retained_outputs and captured is None:
        for output_nr, reference in node.retained_outputs.items():
            tensor = reference()
            grad = grad_outputs[output_nr]
            if tensor is not None and grad is not None:
                tensor.grad = _add(tensor.grad, grad.detach().clone())
    if captured is not None:
        for output_nr, grad in enumerate(grad_outputs):
            key = (id(node), output_nr)
            if key in captured and grad is not None:
                captured[key] = _add(captured[key], grad)
    return grad_outputs


def _accumulate(node, grad, captured, given):
    if grad is None:
        return
    tensor = node.tensor
    state = tensor.__dict__
    for hook in state.get("_hooks") or ():
        replaced = hook(grad)
        if replaced is not None:
            grad = replaced
    if captured is not None:
        key = (id(node), 0)
        if key in captured:
            captured[key] = _add(captured[key], grad)
        return
    if not _grad_state.enabled:
        grad = _detached(grad)
    existing = state.get("grad")
    if existing is None:
        grad = _leaf_gradient(grad, tensor, given)
        if type(grad) is TensorBase.plain and grad._data.shape == tensor._data.shape:
            state["grad"] = grad  # what the ``grad`` setter checks, checked
        else:
            tensor.grad = grad
    else:
        # sparse + sparse stays sparse (indices concatenated, as PyTorch's); with a dense operand, dense
        tensor.grad = existing + grad
    for hook in tuple(state.get("_post_accumulate_grad_hooks") or ()):
        hook(tensor)


def _leaf_gradient(grad, leaf, given):
    """What a leaf without a ``.grad`` keeps of ``grad``: ``grad`` itself where it is laid out as the leaf is and its
    memory is not in ``given`` (another leaf's ``.grad``, or a gradient the caller passed to ``backward``), else a
    copy laid out as the leaf, as PyTorch's AccumulateGrad keeps it: a ``.grad`` is the leaf's own, writable memory
    (a sum's gradient, for one, reaches its inputs as a broadcast view of one number). Sparse gradients, and
    recorded ones (``create_graph``), are kept as they are."""
    if type(grad) is not TensorBase.plain:
        return grad
    memory = _memory(grad)
    if memory in given or grad._data.strides != leaf._data.strides:
        grad = empty_like(leaf, dtype=grad.dtype).copy_(grad)
        memory = _memory(grad)
    given.add(memory)
    return grad


def _memory(tensor):
    """An identity for the memory a dense tensor's array views (the array that owns it), or None."""
    if type(tensor) is not TensorBase.plain:
        return None
    array = tensor._data
    while True:
        base = getattr(array, "base", None)
        if base is None:
            return id(array)
        array = base


class RemovableHandle:
    """What ``register_hook`` and ``register_post_accumulate_grad_hook`` return: ``remove()`` unregisters the
    hook."""

    def __init__(self, hooks, hook):
        self._hooks = hooks
        self._hook = hook

    def remove(self):
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


def register_post_accumulate_grad_hook(tensor, hook):
    """Call ``hook(tensor)`` after each gradient backward accumulates into the leaf ``tensor``'s ``.grad``
    (``Tensor.register_post_accumulate_grad_hook``; not for ``autograd.grad``, which accumulates nothing)."""
    hooks = tensor.__dict__.setdefault("_post_accumulate_grad_hooks", [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def _detached(tensor):
    return tensor.detach()
