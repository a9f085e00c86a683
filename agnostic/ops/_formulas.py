"""Gradient formulas keyed by parameter name (``gradients={"input": lambda grad, other: ...}``), made into the
autograd engine's ``rule(context, *grads)``. A formula's parameter names say what it reads: ``grad`` (``grads``: one
per output), ``result`` and the op's parameters, bound by name from what the node saved."""

import inspect

from .._tensor import TensorBase
from ..autograd.derivatives import fit
from ..autograd.grad_mode import _state as _grad_state


def backward_rule(op, gradients, derivative):
    """The engine's rule for a declared op's formulas (``derivative``: the one-operand short form)."""
    if derivative is not None:
        gradients = {"input": _from_derivative(derivative)}
    return formulas_rule(op, gradients) if gradients else None


def _parameter_names(formula):
    return tuple(inspect.signature(formula).parameters) if formula is not None else ()


def _from_derivative(derivative):
    """The gradient formula ``grad * conj(derivative(...))``, reading what ``derivative`` reads."""
    names = _parameter_names(derivative)

    def formula(grad, *values):
        local = derivative(*values)
        return grad * (local.conj() if isinstance(local, TensorBase) and local.dtype.is_complex else local)
    formula.__signature__ = inspect.Signature(
        [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY) for name in ("grad",) + names])
    return formula


def formulas_rule(op, gradients, shape_only=False):
    """The engine's ``rule(context, *grads)`` from gradient formulas keyed by parameter name (see ``Elementwise``);
    ``shape_only`` where the formulas read no values (no ``result``, no parameter, or as declared)."""
    formulas = [(gradients.get(name), _parameter_names(gradients.get(name))) for name in op.parameters]
    read = {name for _, names in formulas for name in names}
    wants_result = "result" in read
    recompute = getattr(op, "recompute", None) or (lambda arguments: op.function(*arguments))

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
    if isinstance(argument, TensorBase):
        return fit(formula(*[values[name] for name in names]), argument) if argument._requires_grad else None
    if isinstance(argument, (list, tuple)) and any(isinstance(item, TensorBase) and item._requires_grad
                                                   for item in argument):
        grads = formula(*[values[name] for name in names])
        return [fit(grad, item) if isinstance(item, TensorBase) and item._requires_grad else None
                for grad, item in zip(grads, argument)]
    return None
