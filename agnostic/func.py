"""agnostic.func: function transforms (grad, vjp, jacrev, jvp, vmap, functional_call...), as torch.func.

agnostic has one reverse-mode autograd and no batched tensors, so the transforms are built from what it has:

- ``grad``, ``vjp``, ``jacrev`` run the function on fresh differentiable copies of the inputs and call
  ``agnostic.autograd.grad``. Inside another transform (a nesting level above zero), or when the result depends on
  tensors that require grad outside, they build a differentiable graph (``create_graph=True``), so transforms nest
  (``grad(grad(f))``, ``jacrev(jacrev(f))``) and results stay differentiable for ordinary autograd, as in PyTorch.
- ``jvp`` and ``linearize`` compute forward-mode products with the double-vjp trick: ``J^T u`` is differentiated
  with respect to the (dummy) cotangent ``u`` in the direction of the tangent, which gives ``J t``. ``jacfwd`` and
  ``hessian`` compute their (identical) Jacobians in reverse mode.
- ``vmap`` runs the function once per batch element and stacks the results: PyTorch's semantics, not its speed.
"""

import functools
import threading
from collections import OrderedDict

from . import _coverage
from ._rearrange import rearrange
from ._tensor import TensorBase
from .autograd import functions as _autograd
from .autograd.grad_mode import enable_grad, is_grad_enabled
from .autograd.graph import AccumulateGrad
from .nn.module import Module
from .nn.normalization import _BatchNorm
from .nn.utils import stateless
from .ops import random as _random
from .ops.creation import eye, zeros, zeros_like
from .ops.shape import stack

__all__ = ["debug_unwrap", "functional_call", "functionalize", "grad", "grad_and_value", "hessian", "jacfwd",
           "jacrev", "jvp", "linearize", "rearrange", "replace_all_batch_norm_modules_", "stack_module_state", "vjp",
           "vmap"]


def __getattr__(name):
    """A PyTorch name this module lacks raises an AttributeError saying so, and where the supported ones are."""
    raise _coverage.missing_name_error(__name__, name)


# ----- pytrees: nested tuples, lists and dicts of leaves, as torch.utils._pytree ----------------------------------
class _TreeSpec:
    """The structure of a pytree: ``kind`` None for a leaf, else the container type, with its keys (dicts) or
    field type (namedtuples) as ``context`` and one spec per child. Printed as PyTorch prints its TreeSpec."""

    __slots__ = ("kind", "context", "children", "num_leaves")

    def __init__(self, kind=None, context=None, children=()):
        self.kind, self.context, self.children = kind, context, tuple(children)
        self.num_leaves = 1 if kind is None else sum(child.num_leaves for child in self.children)

    def __eq__(self, other):
        return isinstance(other, _TreeSpec) and (self.kind, self.context, self.children) == \
            (other.kind, other.context, other.children)

    def __hash__(self):
        return hash((self.kind, self.children))

    def __repr__(self):
        if self.kind is None:
            return "*"
        context = None if self.kind in (tuple, list) else self.context
        name = getattr(self.kind, "__name__", str(self.kind))
        return f"TreeSpec({name}, {context}, [{', '.join(map(repr, self.children))}])"


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _children(tree):
    """``(kind, context, children)`` of a container, or None for a leaf."""
    kind = type(tree)
    if kind in (tuple, list):
        return kind, None, list(tree)
    if kind in (dict, OrderedDict):
        return kind, list(tree), list(tree.values())
    if _is_namedtuple(tree):
        return kind, kind, list(tree)
    return None


def _flatten(tree):
    """``(leaves, spec)`` of a pytree."""
    leaves = []

    def visit(node):
        found = _children(node)
        if found is None:
            leaves.append(node)
            return _TreeSpec()
        kind, context, children = found
        return _TreeSpec(kind, context, [visit(child) for child in children])

    return leaves, visit(tree)


def _unflatten(leaves, spec):
    """The pytree of structure ``spec`` holding ``leaves`` (in order)."""
    remaining = iter(leaves)

    def build(node):
        if node.kind is None:
            return next(remaining)
        children = [build(child) for child in node.children]
        if node.kind in (dict, OrderedDict):
            return node.kind(zip(node.context, children))
        if node.kind in (tuple, list):
            return node.kind(children)
        return node.kind(*children)  # a namedtuple

    return build(spec)


def _tree_map(function, tree):
    leaves, spec = _flatten(tree)
    return _unflatten([function(leaf) for leaf in leaves], spec)


def _broadcast_to_and_flatten(prefix, spec):
    """The leaves of ``prefix`` broadcast over ``spec`` (a leaf of ``prefix`` covers a whole subtree), or None when
    ``prefix``'s structure is not a prefix of ``spec``'s."""
    found = _children(prefix)
    if found is None:
        return [prefix] * spec.num_leaves
    kind, context, children = found
    if spec.kind is None or kind is not spec.kind or context != spec.context or \
            len(children) != len(spec.children):
        return None
    flat = []
    for child, child_spec in zip(children, spec.children):
        part = _broadcast_to_and_flatten(child, child_spec)
        if part is None:
            return None
        flat += part
    return flat


# ----- nesting of the differentiating transforms ----------------------------------------------------------------
class _Nesting(threading.local):
    def __init__(self):
        self.depth = 0


_nesting = _Nesting()


class _Level:
    """The body of one differentiating transform: its depth is ``outer + 1`` while it runs, and it records whether
    grad mode was on outside (which decides whether its results may carry a graph)."""

    def __enter__(self):
        self.outer_depth = _nesting.depth
        self.outer_grad = is_grad_enabled()
        self.private = {}  # id -> leaf made here: tensors whose graph ends inside this transform
        self._grad_mode = enable_grad()
        self._grad_mode.__enter__()
        _nesting.depth += 1
        return self

    def __exit__(self, *exc_info):
        _nesting.depth -= 1
        self._grad_mode.__exit__(*exc_info)

    def differentiable(self, value):
        """A tensor to differentiate with respect to, standing for ``value``: a differentiable alias when ``value``
        already requires grad (so an outer transform, or ordinary autograd, sees through it), else a new leaf."""
        if not isinstance(value, TensorBase):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
        if value.requires_grad:
            return value.view_as(value)
        leaf = value.detach().requires_grad_()
        self.private[id(leaf)] = leaf
        return leaf

    def reaches_outside(self, tensors):
        """Whether any of ``tensors`` depends, through the recorded graph, on a tensor that requires grad outside
        this transform (an outer transform's input, a closed-over parameter)."""
        stack_ = []
        for tensor in tensors:
            if isinstance(tensor, TensorBase) and tensor.requires_grad:
                if tensor.grad_fn is None:
                    if id(tensor) not in self.private:
                        return True
                else:
                    stack_.append(tensor.grad_fn)
        seen = set()
        while stack_:
            node = stack_.pop()
            if node in seen:
                continue
            seen.add(node)
            if isinstance(node, AccumulateGrad):
                if id(node.tensor) not in self.private:
                    return True
                continue
            stack_.extend(edge[0] for edge in node.next_edges if edge is not None)
        return False

    def keeps_graph(self, tensors):
        """Whether results computed from ``tensors`` must stay differentiable outside this transform."""
        if not self.outer_grad:
            return False
        return self.outer_depth > 0 or self.reaches_outside(tensors)

    def release(self, tree):
        """``tree`` as this transform returns it: tensors detached unless they must stay differentiable outside."""
        def unwrap(value):
            if isinstance(value, TensorBase) and value.requires_grad and not self.keeps_graph([value]):
                return value.detach()
            return value

        return _tree_map(unwrap, tree)


def _gradients(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` where an output that needs no gradient or an unused input gives zeros (as torch.func)."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    pairs = [(output, cotangent) for output, cotangent in zip(outputs, grad_outputs) if output.requires_grad]
    if not pairs:
        return tuple(zeros_like(tensor) for tensor in inputs)
    results = _autograd.grad([output for output, _ in pairs], list(inputs), [cotangent for _, cotangent in pairs],
                             retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    return tuple(zeros_like(tensor) if result is None else result for result, tensor in zip(results, inputs))


# ----- argnums ---------------------------------------------------------------------------------------------------
def _wrap_argnum(argnum, count):
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -count <= argnum < count:
        return argnum % count
    raise RuntimeError(f"Got argnum={argnum}, but only {count} positional inputs")


def _checked_argnums(argnums, count):
    if isinstance(argnums, int):
        return _wrap_argnum(argnums, count)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    wrapped = tuple(_wrap_argnum(argnum, count) for argnum in argnums)
    if not wrapped:
        raise RuntimeError("argnums must be non-empty")
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return wrapped


def _differentiated(level, args, argnums):
    """``(new args, the differentiated part)``: the arguments at ``argnums`` replaced by differentiable tensors
    (the part is one pytree for an int ``argnums``, a tuple of them for a tuple)."""
    argnums = _checked_argnums(argnums, len(args))
    args = list(args)
    positions = (argnums,) if isinstance(argnums, int) else argnums
    for position in positions:
        args[position] = _tree_map(level.differentiable, args[position])
    part = args[argnums] if isinstance(argnums, int) else tuple(args[position] for position in argnums)
    return tuple(args), part


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _check_tensor_outputs(flat_outputs, output, api):
    if not flat_outputs:
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {output})")
    for value in flat_outputs:
        if not isinstance(value, TensorBase):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type "
                               f"{type(value)}")


def _check_real(api, values, is_input):
    for position, value in enumerate(_flatten(values)[0]):
        if isinstance(value, TensorBase) and value.dtype.is_complex:
            kind = "inputs" if is_input else "outputs"
            raise RuntimeError(f"{api}: Expected all {kind} to be real but received complex tensor at flattened "
                               f"input idx: {position}")


# ----- reverse mode ----------------------------------------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning ``(gradient, value)`` of ``func``'s scalar output, with respect to the arguments at
    ``argnums`` (an int, or a tuple of ints for a tuple of gradients), as ``torch.func.grad_and_value``. Arguments
    may be pytrees (dicts, lists, tuples) of tensors: the gradient has the same structure. With ``has_aux``,
    ``func`` returns ``(output, aux)`` and the result is ``(gradient, (value, aux))``.

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> agnostic.func.grad_and_value(lambda x: (x ** 2).sum())(x)
        (tensor([2., 4.]), tensor(5.))
    """
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        with _Level() as level:
            args, part = _differentiated(level, args, argnums)
            output, aux = _split_aux(func(*args, **kwargs), has_aux, api)
            if not isinstance(output, TensorBase):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                                   f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            flat_inputs, spec = _flatten(part)
            create_graph = level.keeps_graph([output])
            gradient = _unflatten(_gradients([output], flat_inputs, create_graph=create_graph), spec)
            value = level.release(output)
            if has_aux:
                return gradient, (value, level.release(aux))
            return gradient, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of ``func``'s scalar output with respect to the arguments at ``argnums``
    (an int, or a tuple of ints for a tuple of gradients), as ``torch.func.grad``. Arguments may be pytrees of
    tensors; with ``has_aux`` ``func`` returns ``(output, aux)`` and the result is ``(gradient, aux)``. Transforms
    nest: ``grad(grad(f))`` is the second derivative, ``vmap(grad(f))`` per-sample gradients.

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> agnostic.func.grad(lambda x: (x ** 3).sum())(x)
        tensor([ 3., 12.])
        >>> agnostic.func.grad(lambda x: agnostic.func.grad(lambda y: y ** 3)(x))(agnostic.tensor(2.0))
        tensor(12.)
    """
    transform = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = transform(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


def _vjp(func, primals, argnums, has_aux, api="vjp(f, *primals)"):
    """``(output, vjp_fn, aux, internals)``: the body of vjp and jacrev."""
    with _Level() as level:
        if argnums is None:
            primals = _tree_map(level.differentiable, primals)
            part = primals
        else:
            primals, part = _differentiated(level, primals, argnums)
        output, aux = _split_aux(func(*primals), has_aux, api)
        flat_outputs, output_spec = _flatten(output)
        _check_tensor_outputs(flat_outputs, output, api)
        for value in flat_outputs:
            if not (value.is_floating_point() or value.is_complex()):
                raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                                   f"Tensor with dtype {value.dtype}")
        flat_inputs, input_spec = _flatten(part)
        create_graph = level.keeps_graph(flat_outputs)
    returned_output, returned_aux = level.release(output), level.release(aux) if has_aux else None
    default_create_graph = create_graph

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_cotangents, cotangent_spec = _flatten(cotangents)
        if cotangent_spec != output_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cotangent_spec}, primal output: "
                               f"{output_spec}")
        keep = (default_create_graph if create_graph is None else create_graph) and is_grad_enabled()
        with enable_grad():
            results = _gradients(flat_outputs, flat_inputs, flat_cotangents, create_graph=keep,
                                 retain_graph=retain_graph)
        return _unflatten(results, input_spec)

    return returned_output, vjp_fn, returned_aux, (flat_outputs, output_spec, flat_inputs, input_spec, create_graph)


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``, as ``torch.func.vjp``: ``vjp_fn(cotangents)`` (cotangents shaped like the
    output, same pytree structure) returns the vector-Jacobian products, a tuple with one entry per primal. It may
    be called several times. With ``has_aux``, ``func`` returns ``(output, aux)`` and the result is
    ``(output, vjp_fn, aux)``.

        >>> x = agnostic.tensor([1.0, 2.0])
        >>> output, vjp_fn = agnostic.func.vjp(agnostic.sin, x)
        >>> vjp_fn(agnostic.ones(2))[0] == agnostic.cos(x)
        tensor([True, True])
    """
    output, vjp_fn, aux, _ = _vjp(func, primals, None, has_aux)
    return (output, vjp_fn, aux) if has_aux else (output, vjp_fn)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of ``func`` with respect to the arguments at ``argnums``, computed in
    reverse mode (one vector-Jacobian product per output element), as ``torch.func.jacrev``. For an output of shape
    ``O`` and an input of shape ``I`` the Jacobian has shape ``O + I``; a pytree of outputs gives the same pytree of
    Jacobians, a tuple ``argnums`` a tuple per output. ``chunk_size`` is accepted (the products run one at a time).

        >>> A = agnostic.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> agnostic.func.jacrev(lambda x: A @ x)(agnostic.tensor([1.0, 1.0]))
        tensor([[1., 2.],
                [3., 4.]])
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        _check_real("jacrev", args, is_input=True)
        output, _, aux, internals = _vjp(func, args, argnums, has_aux)
        flat_outputs, output_spec, flat_inputs, input_spec, create_graph = internals
        _check_real("jacrev", flat_outputs, is_input=False)
        per_output = []
        for value in flat_outputs:
            jacobians = _jacobian_of(value, flat_inputs, create_graph)
            per_output.append(_unflatten(jacobians, input_spec))
        result = _unflatten(per_output, output_spec)
        return (result, aux) if has_aux else result

    return wrapper


def _jacobian_of(output, inputs, create_graph):
    """For each input, the Jacobian of ``output`` with respect to it (shape ``output.shape + input.shape``)."""
    count = output.numel()
    if count == 0 or not output.requires_grad:
        return [zeros(tuple(output.shape) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
                for tensor in inputs]
    basis = eye(count, dtype=output.dtype, device=output.device)
    with enable_grad():
        rows = [_gradients([output], inputs, [basis[index].reshape(output.shape)], create_graph=create_graph,
                           retain_graph=True) for index in range(count)]
    return [stack([row[position] for row in rows]).reshape(tuple(output.shape) + tuple(tensor.shape))
            for position, tensor in enumerate(inputs)]


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to the arguments at ``argnums``, as ``torch.func.jacfwd``. The
    Jacobian is one matrix however it is computed, and agnostic computes it in reverse mode (``jacrev``): the same
    values and shapes, the cost of one vector-Jacobian product per output element. ``randomness`` is checked and
    otherwise unused (``func`` runs once).

        >>> agnostic.func.jacfwd(lambda x: x ** 2)(agnostic.tensor([1.0, 3.0]))
        tensor([[2., 0.],
                [0., 6.]])
    """
    _check_randomness(randomness)
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func, argnums=0):
    """The Hessian of ``func``'s scalar output with respect to the arguments at ``argnums``
    (``jacfwd(jacrev(func))``), as ``torch.func.hessian``.

        >>> A = agnostic.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> agnostic.func.hessian(lambda x: x @ A @ x)(agnostic.tensor([1.0, -1.0]))
        tensor([[4., 2.],
                [2., 6.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


# ----- forward mode (the double-vjp trick) ----------------------------------------------------------------------
def _check_tangent_shapes(flat_primals, flat_tangents):
    for primal, tangent in zip(flat_primals, flat_tangents):
        if tuple(primal.shape) != tuple(tangent.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(primal.shape)} while the "
                               f"given forward gradient is of size {list(tangent.shape)}.")


def _check_tensors(values, api, name):
    if not values:
        raise RuntimeError(f"{api}: Expected {name} to contain at least one Tensor.")
    for value in values:
        if not isinstance(value, TensorBase):
            raise RuntimeError(f"{api}: Expected {name} to only contain Tensors, got {type(value)}")


def _linearized(func, primals, api, has_aux=False, strict=False):
    """Run ``func`` on ``primals`` and build ``J^T u`` for dummy cotangents ``u`` (differentiable in ``u``);
    returns ``(output, aux, push, level)`` where ``push(flat_tangents, create_graph)`` gives ``J t`` per output."""
    with _Level() as level:
        primals = _tree_map(level.differentiable, primals)
        flat_primals, _ = _flatten(primals)
        output, aux = _split_aux(func(*primals), has_aux, api)
        flat_outputs, output_spec = _flatten(output)
        _check_tensor_outputs(flat_outputs, output, api)
        if strict and not all(value.requires_grad for value in flat_outputs):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                               "inputs. This is not allowed with strict=True.")
        connected = [value for value in flat_outputs if value.requires_grad]
        dummies = [zeros_like(value).requires_grad_() for value in connected]
        products = _autograd.grad(connected, flat_primals, dummies, create_graph=True, allow_unused=True) \
            if connected else [None] * len(flat_primals)

    def push(flat_tangents, create_graph):
        pairs = [(product, tangent) for product, tangent in zip(products, flat_tangents)
                 if product is not None and product.requires_grad]
        results = [None] * len(connected)
        if pairs:
            with enable_grad():
                results = _autograd.grad([product for product, _ in pairs], dummies,
                                         [tangent for _, tangent in pairs], retain_graph=True,
                                         create_graph=create_graph, allow_unused=True)
        found = iter(results)
        tangents_out = [next(found) if value.requires_grad else None for value in flat_outputs]
        return _unflatten([zeros_like(value) if tangent is None else tangent
                           for tangent, value in zip(tangents_out, flat_outputs)], output_spec)

    return output, aux, push, level, flat_primals


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J t)``: the output and the Jacobian-vector product in the direction ``tangents`` (same
    structure and shapes as ``primals``, a tuple), as ``torch.func.jvp``. agnostic has no forward-mode autograd:
    the product is computed with the double-vjp trick (differentiating ``J^T u`` with respect to ``u``), which costs
    two reverse passes and gives the same values. With ``has_aux`` the result is ``(output, jvp_out, aux)``.

        >>> x = agnostic.tensor([0.0, 1.0])
        >>> agnostic.func.jvp(lambda x: x ** 2, (x,), (agnostic.ones(2),))
        (tensor([0., 1.]), tensor([0., 2.]))
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primal_spec = _flatten(primals)
    flat_tangents, tangent_spec = _flatten(tangents)
    if primal_spec != tangent_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           "if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{primal_spec} and tangents with structure {tangent_spec}")
    _check_tensors(flat_primals, api, "primals")
    _check_tensors(flat_tangents, api, "tangents")
    _check_tangent_shapes(flat_primals, flat_tangents)
    output, aux, push, level, _ = _linearized(func, primals, api, has_aux, strict)
    flat_outputs = _flatten(output)[0]
    tangent_out = push(flat_tangents, level.keeps_graph(flat_outputs + list(flat_tangents)))
    output = level.release(output)
    if has_aux:
        return output, tangent_out, level.release(aux)
    return output, tangent_out


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)``, as ``torch.func.linearize``: ``jvp_fn(*tangents)`` gives the Jacobian-vector
    product at ``primals``, reusing the graph built once (double-vjp trick, see ``jvp``).

        >>> output, jvp_fn = agnostic.func.linearize(lambda x: x ** 2, agnostic.tensor([1.0, 2.0]))
        >>> jvp_fn(agnostic.ones(2))
        tensor([2., 4.])
    """
    output, _, push, level, flat_primals = _linearized(func, primals, "linearize")
    primal_spec = _flatten(primals)[1]
    keep = level.keeps_graph(_flatten(output)[0])

    def jvp_fn(*tangents):
        flat_tangents, tangent_spec = _flatten(tangents)
        if tangent_spec != primal_spec:
            raise RuntimeError(f"Expected the tangents {tangent_spec} to have the same argspec as the primals "
                               f"{primal_spec}")
        for position, (tangent, primal) in enumerate(zip(flat_tangents, flat_primals)):
            for what, mine, theirs in (("shape", tangent.shape, primal.shape),
                                       ("device", tangent.device, primal.device),
                                       ("dtype", tangent.dtype, primal.dtype)):
                if mine != theirs:
                    raise RuntimeError(f"tangent:{position} with {what} {mine} in flattened pytree doesn't match "
                                       f"the {what} {theirs} of the corresponding primal.")
        return push(flat_tangents, keep and is_grad_enabled())

    return level.release(output), jvp_fn


# ----- vmap ------------------------------------------------------------------------------------------------------
def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def _function_name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_function_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _generator_states():
    return {device: (generator._seed, generator._offset)
            for device, generator in list(_random._default_generators.items())}


def _restore_generators(states):
    """Put the default generators back to ``states`` (one made since then back to its start)."""
    for device, generator in list(_random._default_generators.items()):
        with generator._lock:
            generator._seed, generator._offset = states.get(device, (generator._seed, 0))


def _drew_random(before):
    """Whether a default generator moved since ``before`` (a new one counts from its start)."""
    for device, generator in list(_random._default_generators.items()):
        seed, offset = before.get(device, (generator._seed, 0))
        if (generator._seed, generator._offset) != (seed, offset):
            return True
    return False


def _batched_inputs(func, in_dims, args):
    """``(batch size, flat in_dims, flat args, args spec)``, validated as PyTorch's vmap does."""
    name = _function_name(func)
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                         f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    flat_args, spec = _flatten(args)
    flat_in_dims = _broadcast_to_and_flatten(in_dims, spec)
    if flat_in_dims is None:
        raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                         f"structure of `inputs`. in_dims has structure {_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for position, (arg, in_dim) in enumerate(zip(flat_args, flat_in_dims)):
        if in_dim is None:
            continue
        if not isinstance(in_dim, int) or isinstance(in_dim, bool):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             "in_dim must be either an integer dimension or None.")
        if not isinstance(arg, TensorBase):
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for an input but "
                             f"the input is of type {type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if not -arg.dim() <= in_dim < arg.dim():
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={in_dim} for some input, "
                             f"but that input is a Tensor of dimensionality {arg.dim()} so expected in_dim to "
                             f"satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        flat_in_dims[position] = in_dim % arg.dim()
    sizes = [arg.shape[in_dim] for arg, in_dim in zip(flat_args, flat_in_dims) if in_dim is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(size != sizes[0] for size in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0], flat_in_dims, flat_args, spec


def _check_out_dims(func, out_dims):
    for out_dim in _flatten(out_dims)[0]:
        if out_dim is not None and (not isinstance(out_dim, int) or isinstance(out_dim, bool)):
            raise ValueError(f"vmap({_function_name(func)}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                             "None or a python collection of ints representing where in the outputs the vmapped "
                             "dimension should appear.")


def _flat_out_dims(func, out_dims, output, spec):
    def incompatible():
        return ValueError(f"vmap({_function_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is not "
                          "compatible with the structure of `outputs`. out_dims has structure "
                          f"{_flatten(out_dims)[1]} but outputs has structure {spec}.")

    if isinstance(output, TensorBase):  # a single tensor also takes out_dims=(d,), as PyTorch
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return list(out_dims)
        if out_dims is None or isinstance(out_dims, int):
            return [out_dims]
        raise incompatible()
    flat = _broadcast_to_and_flatten(out_dims, spec)
    if flat is None:
        raise incompatible()
    return flat


def _same_value(first, other):
    if first is other:
        return True
    if isinstance(first, TensorBase) and isinstance(other, TensorBase):
        return tuple(first.shape) == tuple(other.shape) and bool((first == other).all())
    return first == other


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a batch dimension of its inputs, as ``torch.vmap``/``torch.func.vmap``: ``in_dims``
    says which dimension of each argument is the batch (an int for all, or a tuple with one entry per argument, each
    an int, None for an unbatched argument, or a pytree matching the argument), ``out_dims`` where the batch goes in
    each output. Batch sizes must agree; outputs must be tensors (or pytrees of them).

    agnostic has no batching rules: ``vmap`` runs ``func`` once per batch element (the argument sliced along its
    batch dimension) and stacks the results, so it is correct but no faster than a Python loop (``chunk_size`` is
    accepted for compatibility). It composes with the other transforms (``vmap(grad(f))`` gives per-sample
    gradients) and gradients flow through its result. ``randomness='error'`` raises PyTorch's error when ``func``
    draws from a default generator (draws from an explicit ``generator=`` go unnoticed), ``'different'`` lets each
    element draw its own numbers, ``'same'`` gives every element the same draws. Unlike PyTorch's, code that reads
    values (``.item()``, data-dependent branches) works inside ``func``; an output with ``out_dims=None`` must be
    the same for every element.

        >>> x = agnostic.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> agnostic.func.vmap(agnostic.dot)(x, x)
        tensor([ 5., 25.])
        >>> agnostic.func.vmap(lambda row, scale: row * scale, in_dims=(1, None))(x, 10.0)
        tensor([[10., 30.],
                [20., 40.]])
    """
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        _check_out_dims(func, out_dims)
        batch_size, flat_in_dims, flat_args, spec = _batched_inputs(func, in_dims, args)
        before = _generator_states()
        empty = batch_size == 0
        outputs = []
        for index in range(max(batch_size, 1)):
            if randomness == "same" and index:
                _restore_generators(before)
            sliced = [arg if in_dim is None else
                      (zeros(tuple(arg.shape[:in_dim]) + tuple(arg.shape[in_dim + 1:]), dtype=arg.dtype,
                             device=arg.device) if empty else arg.select(in_dim, index))
                      for arg, in_dim in zip(flat_args, flat_in_dims)]
            outputs.append(func(*_unflatten(sliced, spec), **kwargs))
            if randomness == "error" and _drew_random(before):
                raise RuntimeError("vmap: called random operation while in randomness error mode. Please either use "
                                   "the 'same' or 'different' randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
        if empty:
            _restore_generators(before)
        return _stacked(func, outputs, out_dims, empty)

    return wrapped


def _stacked(func, outputs, out_dims, empty):
    name = _function_name(func)
    flat_first, spec = _flatten(outputs[0])
    flat_outputs = [flat_first]
    for output in outputs[1:]:
        flat, other_spec = _flatten(output)
        if other_spec != spec:
            raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures for different "
                             f"batch elements ({spec} and {other_spec}); it must return the same structure")
        flat_outputs.append(flat)
    flat_dims = _flat_out_dims(func, out_dims, outputs[0], spec)
    results = []
    for position, out_dim in enumerate(flat_dims):
        values = [flat[position] for flat in flat_outputs]
        if out_dim is None:
            if not all(_same_value(values[0], value) for value in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            results.append(values[0])
            continue
        if not isinstance(values[0], TensorBase):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(values[0])}. "
                             "Did you mean to set out_dims= to None for output?")
        joined = stack(values, dim=out_dim)
        results.append(joined.narrow(out_dim, 0, 0) if empty else joined)
    return _unflatten(results, spec)


# ----- modules ---------------------------------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with its parameters and buffers replaced by the given tensors (a dict
    ``{"dotted.name": tensor}``, or a tuple of dicts with distinct keys), as ``torch.func.functional_call``: the
    module's own tensors come back afterwards and gradients flow to the tensors passed. ``args`` that is not a tuple
    is the single positional argument. See ``agnostic.nn.utils.stateless.functional_call`` for ``tie_weights`` and
    ``strict``.

        >>> layer = agnostic.nn.Linear(2, 1)
        >>> weights = {"weight": agnostic.ones(1, 2), "bias": agnostic.zeros(1)}
        >>> agnostic.func.functional_call(layer, weights, agnostic.tensor([[1.0, 2.0]]))
        tensor([[3.]])
    """
    if isinstance(parameter_and_buffer_dicts, dict):
        merged = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        if not all(isinstance(part, dict) for part in parameter_and_buffer_dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
        merged = tuple(parameter_and_buffer_dicts)
    else:
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    return stateless._functional_call(module, merged, args, kwargs, tie_weights=tie_weights, strict=strict)


def _stacked_leaf(tensors, name):
    requiring = [tensor.requires_grad for tensor in tensors]
    if any(requiring) and not all(requiring):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = stack(tensors)
    return result.detach().requires_grad_() if all(requiring) else result


def stack_module_state(models):
    """``(params, buffers)``: dicts of the models' parameters and buffers, each stacked along a new first dimension
    (one entry per model), as ``torch.func.stack_module_state``, for ensembling with ``vmap`` and
    ``functional_call``. Stacked parameters are new leaves (an optimizer can train them).

        >>> models = [agnostic.nn.Linear(3, 2) for _ in range(4)]
        >>> params, buffers = agnostic.func.stack_module_state(models)
        >>> params["weight"].shape, params["weight"].is_leaf, buffers
        (agnostic.Size([4, 2, 3]), True, {})
    """
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(model.training for model in models) or not any(model.training for model in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if not all(type(model) is type(models[0]) for model in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(model.named_parameters()) for model in models]
    params = {name: _stacked_leaf([each[name] for each in all_params], name) for name in all_params[0]}
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {name: _stacked_leaf([each[name] for each in all_buffers], name) for name in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every BatchNorm module in ``root`` stop tracking running statistics (``running_mean``/``running_var``
    None), in place, and return ``root``, as ``torch.func.replace_all_batch_norm_modules_``: what lets a model with
    BatchNorm run under ``vmap`` in PyTorch.

        >>> model = agnostic.func.replace_all_batch_norm_modules_(agnostic.nn.Sequential(agnostic.nn.BatchNorm1d(3)))
        >>> model[0].running_mean is None, model[0].track_running_stats
        (True, False)
    """
    if not isinstance(root, Module):
        raise TypeError(f"replace_all_batch_norm_modules_ expects an agnostic.nn.Module, got {type(root).__name__}")
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """``func`` itself (checked ``remove``), as ``torch.func.functionalize`` seen from outside: PyTorch rewrites
    in-place operations into out-of-place ones for graph compilers; agnostic runs eagerly, has no such graph to
    produce, and the function's results are the same.

        >>> def f(x):
        ...     y = x.clone()
        ...     y.add_(1)
        ...     return y
        >>> agnostic.func.functionalize(f)(agnostic.zeros(2))
        tensor([1., 1.])
    """
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are 'mutations' and 'mutations_and_views'.")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapped


def debug_unwrap(tensor, *, recurse=True):
    """``tensor`` itself, as ``torch.func.debug_unwrap`` outside any transform: agnostic's transforms don't wrap
    tensors (they work on ordinary ones), so there is nothing to unwrap.

        >>> x = agnostic.ones(2)
        >>> agnostic.func.debug_unwrap(x) is x
        True
    """
    return tensor
