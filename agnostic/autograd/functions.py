"""The user-facing autograd API: backward, grad, custom Function, tensor hooks and retain_grad."""

import weakref

from .._tensor import TensorBase
from ..ops.creation import ones_like, zeros_like
from . import graph, views
from .grad_mode import _state as _grad_state, enable_grad
from .tracking import needs_grad, record

_new = object.__new__


def _as_tuple(value):
    if value is None:
        return ()
    return (value,) if isinstance(value, TensorBase) else tuple(value)


def _root_gradients(outputs, grad_outputs):
    grads = []
    for output, grad in zip(outputs, grad_outputs + (None,) * (len(outputs) - len(grad_outputs))):
        if not output._requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if grad is None:
            if output.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs; pass gradient= "
                                   "(a tensor shaped like the output)")
            grad = ones_like(output)
        elif grad.shape != output.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {tuple(grad.shape)} and output[0] "
                               f"has a shape of {tuple(output.shape)}.")
        grads.append(grad)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves they depend on (or only of ``inputs``).

        >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
        >>> agnostic.autograd.backward((x * x).sum())
        >>> x.grad
        tensor([2., 4.])
        >>> y = x * 3
        >>> agnostic.autograd.backward(y, grad_tensors=agnostic.tensor([1.0, 0.5]))
        >>> x.grad
        tensor([5.0000, 5.5000])
    """
    tensors = _as_tuple(tensors)
    grads = _root_gradients(tensors, _as_tuple(grad_tensors))
    retain_graph = create_graph if retain_graph is None else retain_graph
    roots = [graph.edge_of(t) for t in tensors]
    if inputs is None:
        graph.run_backward(roots, grads, retain_graph, create_graph)
        return
    inputs = _as_tuple(inputs)
    results = grad(tensors, inputs, grads, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    for tensor, result in zip(inputs, results):
        if result is not None:
            tensor.grad = result if tensor.grad is None else tensor.grad + result


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned (no ``.grad`` is changed).

        >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
        >>> (dx,) = agnostic.autograd.grad((x ** 3).sum(), x, create_graph=True)
        >>> dx
        tensor([ 3., 12.], grad_fn=<MulBackward0>)
        >>> agnostic.autograd.grad(dx.sum(), x)
        (tensor([ 6., 12.]),)
        >>> x.grad is None
        True
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    for tensor in inputs:
        if not tensor._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    grads = _root_gradients(outputs, _as_tuple(grad_outputs))
    retain_graph = create_graph if retain_graph is None else retain_graph
    edges = [graph.edge_of(t) for t in inputs]
    captured = {(id(node), number): None for node, number in edges}
    graph.run_backward([graph.edge_of(t) for t in outputs], grads, retain_graph, create_graph, captured)
    results = []
    for tensor, (node, number) in zip(inputs, edges):
        result = captured[(id(node), number)]
        if result is None:
            if materialize_grads:
                result = zeros_like(tensor)
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
        elif not create_graph:
            result = result.detach()
        results.append(result)
    return tuple(results)


def register_hook(tensor, hook):
    """``Tensor.register_hook``: call ``hook(grad)`` whenever the gradient of ``tensor`` is computed."""
    if not tensor._requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = tensor._grad_fn
    if node is None:
        hooks = tensor.__dict__.setdefault("_hooks", [])
    else:
        if node.tensor_hooks is None:
            node.tensor_hooks = {}
        hooks = node.tensor_hooks.setdefault(tensor._output_nr, [])
    hooks.append(hook)
    return graph.RemovableHandle(hooks, hook)


def retain_grad(tensor):
    """``Tensor.retain_grad``: keep the gradient of a non-leaf tensor in its ``.grad``."""
    if not tensor._requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    node = tensor._grad_fn
    if node is None:
        return
    if node.retained_outputs is None:
        node.retained_outputs = {}
    node.retained_outputs[tensor._output_nr] = weakref.ref(tensor)


class FunctionCtx:
    """The ``ctx`` of a custom Function: ``save_for_backward``, ``saved_tensors``, ``needs_input_grad``.

        >>> class Scale(agnostic.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x, factor):
        ...         ctx.factor = factor
        ...         return x * factor
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad * ctx.factor, None
        >>> x = agnostic.ones(2, requires_grad=True)
        >>> Scale.apply(x, 3.0).sum().backward()
        >>> x.grad
        tensor([3., 3.])
    """

    # Defaults of what a forward may set; ``Function.apply`` makes each context with its ``needs_input_grad``.
    to_save = ()
    non_differentiable = ()
    materialize_grads = True

    def save_for_backward(self, *tensors):
        self.to_save = tensors

    @property
    def saved_tensors(self):
        return self.to_save

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = value


class Function:
    """Custom differentiable operations, as ``torch.autograd.Function``: define static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)`` (one gradient, or None, per forward argument) and call ``apply``.

        >>> class Cube(agnostic.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x ** 3
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return grad * 3 * x ** 2
        >>> x = agnostic.tensor([1.0, 2.0], requires_grad=True)
        >>> y = Cube.apply(x)
        >>> y.grad_fn
        <CubeBackward object at 0x...>
        >>> y.sum().backward()
        >>> x.grad
        tensor([ 3., 12.])
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grad_outputs) to be "
                                  "differentiated")

    @classmethod
    def apply(cls, *args, **kwargs):
        track = needs_grad(args, kwargs)
        ctx = _new(FunctionCtx)
        ctx.needs_input_grad = tuple([isinstance(a, TensorBase) and a._requires_grad for a in args])
        # Forward under no_grad (inlined: this runs for every custom op). Inputs keep their history (nothing records
        # under no_grad), so tensors saved for backward can be differentiated again when the backward itself is
        # recorded (create_graph=True).
        previous, _grad_state.enabled = _grad_state.enabled, False
        try:
            output = cls.forward(ctx, *args, **kwargs)
        finally:
            _grad_state.enabled = previous
        if not track:
            return output

        def rule(context, *grads):
            result = cls.backward(ctx, *grads)
            return result if isinstance(result, tuple) else (result,)

        if isinstance(output, TensorBase):
            excluded = ctx.non_differentiable
            tracked = () if excluded and any(t is output for t in excluded) else (output,)
        else:
            excluded = {id(t) for t in ctx.non_differentiable}
            tracked = tuple([o for o in output if isinstance(o, TensorBase) and id(o) not in excluded])
        if not tracked:
            return output
        for tensor in tracked:
            view = tensor.__dict__.get("_view")
            if view is not None and view.refusal == views.NO_GRAD:  # a view made by the forward, under no_grad:
                del tensor.__dict__["_view"], tensor.__dict__["_is_view"]  # recorded here as an output of its own
        record(cls.__name__ + "Backward", rule, args, kwargs, tracked if len(tracked) > 1 else tracked[0])
        return output


def recomputed_gradients(compute, inputs, grad_outputs):
    """The gradients of ``compute(*inputs)``'s outputs (a tensor or a tuple), weighted by ``grad_outputs`` (None
    where an output got none), with respect to each of ``inputs``, as recorded ops; None for an input that is None or
    doesn't require grad. A fused Function's backward calls it under ``create_graph=True`` with its composed form,
    so that higher-order gradients stay exact."""
    with enable_grad():
        results = compute(*inputs)
        results = results if isinstance(results, tuple) else (results,)
        pairs = [(result, grad_output) for result, grad_output in zip(results, grad_outputs) if grad_output is not None]
        wanted = [tensor for tensor in inputs if tensor is not None and tensor.requires_grad]
        grads = grad([result for result, _ in pairs], wanted, [grad_output for _, grad_output in pairs],
                     create_graph=True, allow_unused=True)
    by_tensor = dict(zip(map(id, wanted), grads))
    return tuple(None if tensor is None else by_tensor.get(id(tensor)) for tensor in inputs)
