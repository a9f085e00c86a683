"""Matrix products: matmul (``@``), mm, bmm, mv, dot, outer, einsum, with PyTorch's shape and dtype checks; each
declared once with its gradient."""

import math

import numpy

from .._tensor import TensorBase, wrap
from ..autograd.derivatives import conj
from .elementwise import mul
from ._dispatch import check_same_device, finish, operand_array, result_dtype
from ._registry import composite, public_names


def _check_matmul_operands(name, a, b):
    for position, value in enumerate((a, b)):
        if not isinstance(value, TensorBase):
            raise TypeError(f"{name}(): argument {position + 1} must be a Tensor, got {type(value).__name__}")
    device = check_same_device(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{name}(): expected both operands to have the same dtype, but got {a.dtype.name} != {b.dtype.name}; "
            "convert one with .to(other.dtype)"
        )
    if a.dtype.category == 0:
        raise RuntimeError(f'{name}(): "{name}" is not implemented for bool tensors')
    if a._data.ndim == 0 or b._data.ndim == 0:
        raise RuntimeError(f"{name}(): both arguments need at least 1 dimension, got {a._data.ndim}D and "
                           f"{b._data.ndim}D")
    return device


def _shape_text(shape):
    return "x".join(str(s) for s in shape)


def _gradient_as_matrices(grad, input, other):
    """A product's gradient with the dimensions its 1-D operands lost put back (a row for ``input``, a column for
    ``other``), so that the gradients are products of matrices."""
    if other.ndim == 1:
        grad = grad.unsqueeze(-1)
    return grad.unsqueeze(-2) if input.ndim == 1 else grad


def _left_gradient(grad, input, other):
    """The gradient of ``input @ other`` for ``input``: ``grad @ conj(other).mT``."""
    columns = other.unsqueeze(-1) if other.ndim == 1 else other
    gradient = matmul(_gradient_as_matrices(grad, input, other), conj(columns).mT)
    return gradient.squeeze(-2) if input.ndim == 1 else gradient


def _right_gradient(grad, input, other):
    """The gradient of ``input @ other`` for ``other``: ``conj(input).mT @ grad``."""
    rows = input.unsqueeze(0) if input.ndim == 1 else input
    gradient = matmul(conj(rows).mT, _gradient_as_matrices(grad, input, other))
    return gradient.squeeze(-1) if other.ndim == 1 else gradient


@composite(operator="matmul", gradients={"input": _left_gradient, "other": _right_gradient})
def matmul(input, other):
    """Matrix product with NumPy/PyTorch broadcasting of batch dimensions (``@``).

        >>> agnostic.tensor([[1, 2], [3, 4]]) @ agnostic.tensor([1, 1])
        tensor([3, 7])
    """
    device = _check_matmul_operands("matmul", input, other)
    a, b = input._data, other._data
    inner_a = a.shape[-1]
    inner_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    if inner_a != inner_b:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({_shape_text(a.shape)} and {_shape_text(b.shape)}); "
            f"the last dimension of the first ({inner_a}) must equal the "
            f"{'first' if b.ndim == 1 else 'second-to-last'} dimension of the second ({inner_b})"
        )
    try:
        with device.backend.activate():
            product = matmul_arrays(device, a, b)
    except ValueError:
        raise RuntimeError(f"matmul(): batch dimensions {_shape_text(a.shape[:-2])} and "
                           f"{_shape_text(b.shape[:-2])} don't broadcast") from None
    return wrap(numpy.asarray(product) if isinstance(product, numpy.generic) else product, device)


def matmul_arrays(device, a, b):
    """``a @ b`` of checked backend arrays with ``device`` current (its backend's ``matmul``)."""
    return device.backend.matmul(a, b)


@composite(gradients={"input": lambda grad, input, mat2: _left_gradient(grad, input, mat2),
                      "mat2": lambda grad, input, mat2: _right_gradient(grad, input, mat2)})
def mm(input, mat2):
    """Product of two matrices (2-D only).

        >>> agnostic.tensor([[1, 2]]).mm(agnostic.tensor([[3], [4]]))
        tensor([[11]])
    """
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    return matmul(input, mat2)


@composite(gradients={"input": lambda grad, input, mat2: _left_gradient(grad, input, mat2),
                      "mat2": lambda grad, input, mat2: _right_gradient(grad, input, mat2)})
def bmm(input, mat2):
    """Batched product of 3-D tensors of equal batch size.

        >>> agnostic.ones(4, 2, 3).bmm(agnostic.ones(4, 3, 5)).shape
        agnostic.Size([4, 2, 5])
    """
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm(): expected 3-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


@composite(gradients={"input": lambda grad, input, vec: _left_gradient(grad, input, vec),
                      "vec": lambda grad, input, vec: _right_gradient(grad, input, vec)})
def mv(input, vec):
    """Matrix-vector product.

        >>> agnostic.tensor([[1, 2], [3, 4]]).mv(agnostic.tensor([1, -1]))
        tensor([-1, -1])
    """
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv(): expected a 2-D matrix and a 1-D vector, got {input.ndim}-D and {vec.ndim}-D")
    return matmul(input, vec)


@composite(gradients={"input": _left_gradient, "other": _right_gradient})
def dot(input, other):
    """Inner product of two 1-D tensors of the same size.

        >>> agnostic.tensor([1, 2, 3]).dot(agnostic.tensor([4, 5, 6]))
        tensor(32)
    """
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def _inner_gradient(grad, input, other):
    """The gradient of ``inner(input, other)`` for ``input`` (for ``other``, with the operands exchanged and ``grad``
    transposed accordingly)."""
    if input.ndim == 0 or other.ndim == 0:  # inner with a scalar is a product
        return grad * conj(other)
    rows = grad.reshape(math.prod(input.shape[:-1]), math.prod(other.shape[:-1]))
    return matmul(rows, conj(other.reshape(-1, other.shape[-1]))).reshape(input.shape)


def _inner_other_gradient(grad, input, other):
    if input.ndim == 0 or other.ndim == 0:
        return grad * conj(input)
    rows = grad.reshape(math.prod(input.shape[:-1]), math.prod(other.shape[:-1]))
    return matmul(rows.mT, conj(input.reshape(-1, input.shape[-1]))).reshape(other.shape)


@composite(gradients={"input": _inner_gradient, "other": _inner_other_gradient})
def inner(input, other):
    """Sum of products over the last dimension: shape ``input.shape[:-1] + other.shape[:-1]``; a 0-dim operand
    multiplies, as ``torch.inner``.

        >>> agnostic.tensor([[1, 2], [3, 4]]).inner(agnostic.tensor([1, 1]))
        tensor([3, 7])
    """
    device = check_same_device(input, other)
    if input.ndim == 0 or other.ndim == 0:
        return mul(input, other)
    _check_matmul_operands("inner", input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    lead_a, lead_b = tuple(input.shape[:-1]), tuple(other.shape[:-1])
    a = input._data.reshape(math.prod(lead_a), input.shape[-1])
    b = other._data.reshape(math.prod(lead_b), other.shape[-1])
    product = device.backend.run(device.backend.xp.matmul, a, b.T)
    return wrap(product.reshape(lead_a + lead_b), device)


@composite(aliases=("ger",), gradients={"input": lambda grad, vec2: matmul(grad, conj(vec2)),
                                         "vec2": lambda grad, input: matmul(grad.mT, conj(input))})
def outer(input, vec2):
    """Outer product of two 1-D tensors (alias ``ger``).

        >>> agnostic.tensor([1, 2]).outer(agnostic.tensor([1, 10]))
        tensor([[ 1, 10], [ 2, 20]])
    """
    device = _check_matmul_operands("outer", input, vec2)
    xp = device.backend.xp
    return wrap(device.backend.run(xp.outer, input._data, vec2._data), device)


ger = outer


def _einsum_gradients(grad, equation, operands):
    """For each operand, the einsum of ``grad`` with the others (conjugated) back to the operand's subscripts."""
    inputs, output = _parse_einsum(equation.replace(" ", ""))
    gradients = []
    for position, operand in enumerate(operands):
        other_subscripts = [s for i, s in enumerate(inputs) if i != position]
        available = set(output).union(*other_subscripts)
        target = "".join(dict.fromkeys(c for c in inputs[position] if c in available))
        others = [conj(o) for i, o in enumerate(operands) if i != position]
        reduced = einsum(",".join([output] + other_subscripts) + "->" + target, grad, *others)
        gradients.append(_einsum_expand(reduced, target, inputs[position], operand))
    return gradients


def _parse_einsum(equation):
    """An equation's input subscripts and output subscripts (implicit output: subscripts seen once, sorted)."""
    if "..." in equation:
        raise RuntimeError("einsum backward: equations with '...' are not supported; spell the dimensions out")
    left, _, output = equation.partition("->")
    inputs = left.split(",")
    if "->" not in equation:
        counts = {}
        for subscripts in inputs:
            for c in subscripts:
                counts[c] = counts.get(c, 0) + 1
        output = "".join(sorted(c for c, n in counts.items() if n == 1))
    return inputs, output


def _einsum_expand(reduced, target, subscripts, operand):
    """Broadcast a gradient over ``target`` subscripts back to the operand's ``subscripts``."""
    if target == subscripts:
        return reduced
    if len(set(subscripts)) != len(subscripts):
        raise RuntimeError("einsum backward: a subscript repeated within one operand (a diagonal) is not supported")
    sizes = {c: operand.shape[i] for i, c in enumerate(subscripts)}
    order = [target.index(c) for c in subscripts if c in target]
    shape = [sizes[c] if c in target else 1 for c in subscripts]
    return reduced.permute(order).reshape(shape).expand(operand.shape)


@composite(method=False, gradients={"operands": _einsum_gradients})
def einsum(equation, *operands):
    """Einstein summation over ``operands`` (PyTorch's signature; operands promote to a common dtype).

        >>> agnostic.einsum("ij,j->i", agnostic.tensor([[1, 2], [3, 4]]), agnostic.tensor([1, 1]))
        tensor([3, 7])
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    device = check_same_device(*operands)
    dtype = result_dtype(*operands)
    arrays = [operand_array(t, dtype, device) for t in operands]
    xp = device.backend.xp
    try:
        return finish(device.backend.run(xp.einsum, equation, *arrays), dtype, device)
    except ValueError as error:
        raise RuntimeError(f"einsum(): {error}") from None


__all__ = public_names(globals())
