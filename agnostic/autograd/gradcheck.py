"""``gradcheck`` and ``gradgradcheck``: autograd's first and second derivatives against finite differences."""

import itertools
import warnings

from .._dtypes import float64
from .._tensor import TensorBase
from ..ops.creation import empty
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


def _random_grad_output(output, noncontiguous):
    """A tensor like ``output`` (double when it isn't floating/complex) of values uniform in [-1, 1), requiring
    grad; with ``noncontiguous``, a strided view (every other element of a wider tensor), as PyTorch's
    ``make_tensor(noncontiguous=True)``."""
    dtype = output.dtype if output.is_floating_point() or output.is_complex() else float64
    shape = tuple(output.shape)
    if noncontiguous and len(shape) > 0 and output.numel() > 1:
        values = empty(shape[:-1] + (2 * shape[-1],), dtype=dtype, device=output.device)[..., ::2]
    else:
        values = empty(shape, dtype=dtype, device=output.device)
    return values.uniform_(-1, 1).requires_grad_()


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False,
                  check_rev_over_rev=True, fast_mode=False, masked=False):
    """``gradcheck`` of the gradients themselves: the first derivatives of ``func`` (by ``autograd.grad`` with
    ``create_graph=True``, weighted by ``grad_outputs``) are differentiated again by autograd and compared with
    finite differences, with respect to the inputs and to ``grad_outputs`` that require grad. Without
    ``grad_outputs``, random ones in [-1, 1) are made (strided with ``gen_non_contig_grad_outputs``).

        >>> x = agnostic.tensor([0.5, 2.0], dtype=agnostic.float64, requires_grad=True)
        >>> agnostic.autograd.gradgradcheck(lambda t: t.sin() * t, (x,))
        True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError("Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    if check_fwd_over_rev:
        raise NotImplementedError("gradgradcheck: check_fwd_over_rev=True needs forward-mode AD, which agnostic "
                                  "lacks; use the default reverse-over-reverse check")
    if check_batched_grad:
        raise NotImplementedError("gradgradcheck: check_batched_grad=True needs vmap, which agnostic lacks; leave it "
                                  "False")
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    if grad_outputs is None:
        outputs = [o for o in _outputs(func, inputs) if isinstance(o, TensorBase) and o.requires_grad]
        grad_outputs = tuple(_random_grad_output(o, gen_non_contig_grad_outputs) for o in outputs)
    else:
        grad_outputs = tuple(grad_outputs) if isinstance(grad_outputs, (tuple, list)) else (grad_outputs,)
    count = len(grad_outputs)
    differentiated = [i for i, x in enumerate(inputs) if isinstance(x, TensorBase) and x.requires_grad]

    def first_derivatives(*args):
        input_args, output_grads = args[:-count], args[-count:]
        outputs = [o for o in _outputs(func, input_args) if isinstance(o, TensorBase) and o.requires_grad]
        grads = grad(outputs, [input_args[i] for i in differentiated], list(output_grads), create_graph=True,
                     allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol, fast_mode=fast_mode)
