"""The recorded graph and the engine that walks it backwards: Node (a ``grad_fn``), AccumulateGrad, run_backward."""

import weakref

from ..ops.creation import zeros
from . import anomaly_mode
from .anomaly_mode import _state as _anomaly_state
from .grad_mode import _state as _grad_state


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

    def __init__(self, name, rule, context, next_edges, layout, output_meta):
        self._name = name
        self.rule = rule
        self.context = context
        self.next_edges = next_edges
        self.layout = layout
        self.output_meta = output_meta
        self.tensor_hooks = None
        self.retained_outputs = None
        if _anomaly_state.enabled:  # debugging aid (detect_anomaly): keep the forward traceback of this node
            anomaly_mode.remember_forward(self)

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
        filled = [grad if grad is not None else _zeros(meta) for grad, meta in zip(grad_outputs, self.output_meta)]
        grads = self.rule(context, *filled)
        return _flatten_like(grads, self.layout)


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
    view = tensor.__dict__.get("_view")
    if view is not None and view.version != view.base._version:
        view.refresh(tensor)  # its base changed in place since its grad_fn was made
    if not tensor._requires_grad:
        return None
    grad_fn = tensor._grad_fn
    if grad_fn is not None:
        return (grad_fn, tensor._output_nr)
    return (accumulator_of(tensor), 0)


def _zeros(meta):
    shape, dtype, device = meta
    return zeros(shape, dtype=dtype, device=device)


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
        aliased = {id(grad) for grad in root_grads}  # gradients that must be copied before a leaf keeps them
        ready = [node for node, _ in roots if counts.get(node, 0) == 0]
        queued = set(ready)
        while ready:
            node = ready.pop()
            slots = buffers.pop(node, None) or {}
            if isinstance(node, AccumulateGrad):
                _accumulate(node, slots.get(0), captured, aliased)
                continue
            grad_outputs = [slots.get(i) for i in range(len(node.output_meta))]
            if not _anomaly_state.enabled:
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


def _accumulate(node, grad, captured, aliased):
    if grad is None:
        return
    tensor = node.tensor
    for hook in tensor.__dict__.get("_hooks") or ():
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
    if tensor.grad is None:
        # One gradient object may reach several leaves (``a + b`` passes it to both): each leaf gets its own.
        if id(grad) in aliased:
            grad = grad.clone()
        aliased.add(id(grad))
        tensor.grad = grad
    else:
        # sparse + sparse stays sparse (indices concatenated, as PyTorch's); with a dense operand, dense
        tensor.grad = tensor.grad + grad
    for hook in tuple(tensor.__dict__.get("_post_accumulate_grad_hooks") or ()):
        hook(tensor)


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
