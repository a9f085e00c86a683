"""Matrix products: matmul (``@``), mm, bmm, mv, dot, outer, einsum, with PyTorch's shape and dtype checks."""

import math

import numpy

from .. import _backend, _host_cache
from .._device import CPU
from .._tensor import Tensor, wrap
from ._dispatch import call, check_same_device, finish, operand_array, result_dtype


def _check_matmul_operands(name, a, b):
    for position, value in enumerate((a, b)):
        if not isinstance(value, Tensor):
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


def matmul(input, other):
    """Matrix product with NumPy/PyTorch broadcasting of batch dimensions (``@``)."""
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
        with _backend.on(device):
            product = matmul_arrays(device, a, b)
    except ValueError:
        raise RuntimeError(f"matmul(): batch dimensions {_shape_text(a.shape[:-2])} and "
                           f"{_shape_text(b.shape[:-2])} don't broadcast") from None
    return wrap(numpy.asarray(product) if isinstance(product, numpy.generic) else product, device)


def matmul_arrays(device, a, b):
    """``a @ b`` of checked backend arrays with ``device`` current; a large 2-D product on the CPU reuses a freed
    buffer rather than fresh pages (see _host_cache)."""
    if device is not CPU:
        return _backend.require_cupy().matmul(a, b)
    if a.ndim == 2 and b.ndim == 2 and a.shape[0] * b.shape[1] * a.itemsize >= _host_cache.MIN_BYTES:
        return numpy.matmul(a, b, out=_host_cache.empty((a.shape[0], b.shape[1]), a.dtype))
    return numpy.matmul(a, b)


def mm(input, mat2):
    """Product of two matrices (2-D only)."""
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    return matmul(input, mat2)


def bmm(input, mat2):
    """Batched product of 3-D tensors of equal batch size."""
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(f"bmm(): expected 3-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm(): batch sizes differ: {input.shape[0]} and {mat2.shape[0]}")
    return matmul(input, mat2)


def mv(input, vec):
    """Matrix-vector product."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv(): expected a 2-D matrix and a 1-D vector, got {input.ndim}-D and {vec.ndim}-D")
    return matmul(input, vec)


def dot(input, other):
    """Inner product of two 1-D tensors of the same size."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def inner(input, other):
    """Sum of products over the last dimension: shape ``input.shape[:-1] + other.shape[:-1]``; a 0-dim operand
    multiplies, as ``torch.inner``."""
    device = check_same_device(input, other)
    if input.ndim == 0 or other.ndim == 0:
        from .elementwise import mul

        return mul(input, other)
    _check_matmul_operands("inner", input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    lead_a, lead_b = tuple(input.shape[:-1]), tuple(other.shape[:-1])
    a = input._data.reshape(math.prod(lead_a), input.shape[-1])
    b = other._data.reshape(math.prod(lead_b), other.shape[-1])
    product = call(device, _backend.namespace(device).matmul, a, b.T)
    return wrap(product.reshape(lead_a + lead_b), device)


def outer(input, vec2):
    """Outer product of two 1-D tensors."""
    device = _check_matmul_operands("outer", input, vec2)
    xp = _backend.namespace(device)
    return wrap(call(device, xp.outer, input._data, vec2._data), device)


ger = outer


def einsum(equation, *operands):
    """Einstein summation over ``operands`` (PyTorch's signature; operands promote to a common dtype)."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    device = check_same_device(*operands)
    dtype = result_dtype(*operands)
    arrays = [operand_array(t, dtype, device) for t in operands]
    xp = _backend.namespace(device)
    try:
        return finish(call(device, xp.einsum, equation, *arrays), dtype, device)
    except ValueError as error:
        raise RuntimeError(f"einsum(): {error}") from None
