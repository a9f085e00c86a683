"""``gradcheck``: compare autograd's gradients with central finite differences (use float64 inputs)."""

import itertools
import warnings

from .._tensor import TensorBase
from .functions import grad


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree.

        >>> x = agnostic.tensor([1.0, 2.0], dtype=agnostic.float64, requires_grad=True)
        >>> class Wrong(agnostic.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return grad
        >>> agnostic.autograd.gradcheck(Wrong.apply, (x,))
        Traceback (most recent call last):
            ...
        agnostic.autograd.gradcheck.GradcheckError: Jacobian mismatch ... analytical 1.0 vs numerical 2.0...
        >>> agnostic.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)
        False
    """


def _outputs(function, inputs):
    result = function(*inputs)
    return result if isinstance(result, (tuple, list)) else (result,)


def _nudge(tensor, position, value):
    """Set one element in place, behind autograd's back. On the tensor's own device: a write queued on another
    GPU's stream would race the kernels that read it."""
    with tensor.device.backend.activate():
        tensor._data[position] = value


def _numerical_columns(function, inputs, tensor, position, eps, output_positions):
    """d(output)/d(tensor[position]) by central differences, one flattened column per checked output.

    Evaluated with grad mode on, since ``function`` may itself call ``autograd.grad`` (gradients of gradients).
    """
    original = tensor._data[position].item()
    _nudge(tensor, position, original + eps)
    plus = _outputs(function, inputs)
    plus = [plus[i].detach().clone() for i in output_positions]
    _nudge(tensor, position, original - eps)
    minus = _outputs(function, inputs)
    minus = [minus[i].detach().clone() for i in output_positions]
    _nudge(tensor, position, original)
    return [((p - m) / (2 * eps)).reshape(-1) for p, m in zip(plus, minus)]


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=False, fast_mode=False):
    """True when the gradients autograd computes for ``func(*inputs)`` match finite differences for every input
    that requires grad; raises ``GradcheckError`` naming the first mismatch otherwise (``raise_exception``).

        >>> x = agnostic.tensor([0.5, 2.0], dtype=agnostic.float64, requires_grad=True)
        >>> agnostic.autograd.gradcheck(lambda t: (t.sin() * t).sum(), (x,))
        True
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    checked = [t for t in inputs if isinstance(t, TensorBase) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck expects at least one input tensor with requires_grad=True")
    for tensor in checked:
        if tensor.dtype.name not in ("float64", "complex128"):
            warnings.warn(f"gradcheck: input of dtype {tensor.dtype} is not double precision; finite differences "
                          "will be inaccurate", stacklevel=2)
    first = _outputs(func, inputs)
    output_positions = [i for i, o in enumerate(first) if isinstance(o, TensorBase) and o.requires_grad]
    outputs = [first[i] for i in output_positions]
    analytical = {}  # (input number, output number) -> rows[output element] = gradient tensor (or None)
    for output_number, output in enumerate(outputs):
        for flat_index in range(output.numel()):
            one_hot = output.detach().clone().zero_().reshape(-1)
            one_hot[flat_index] = 1.0
            grads = grad(output, checked, one_hot.reshape(output.shape), retain_graph=True, allow_unused=True)
            for input_number, tensor_grad in enumerate(grads):
                analytical.setdefault((input_number, output_number), []).append(tensor_grad)
    for input_number, tensor in enumerate(checked):
        for position in itertools.product(*(range(n) for n in tensor.shape)):
            columns = _numerical_columns(func, inputs, tensor, position, eps, output_positions)
            for output_number, column in enumerate(columns):
                for flat_index in range(column.numel()):
                    expected = column[flat_index].item()
                    row = analytical[(input_number, output_number)][flat_index]
                    got = 0.0 if row is None else row[position].item()
                    if abs(got - expected) > atol + rtol * abs(expected):
                        if not raise_exception:
                            return False
                        raise GradcheckError(
                            f"Jacobian mismatch for output {output_number} element {flat_index} with respect to "
                            f"input {input_number} element {position}: analytical {got} vs numerical {expected} "
                            f"(atol={atol}, rtol={rtol})"
                        )
    return True
