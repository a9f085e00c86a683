"""Matrix products: matmul (``@``), mm, bmm, mv, dot, outer, einsum, the scaled sums (addmm, baddbmm...),
tensordot, kron, cross, trace and cdist, with PyTorch's shape and dtype checks; each declared once with its
gradient."""

import math
import string
import warnings
from collections import namedtuple

import numpy

from .. import _dtypes
from .._tensor import TensorBase, _normalize_dim, wrap
from ..autograd.derivatives import conj
from .creation import eye, ones, zeros
from .elementwise import mul
from ._dispatch import check_same_device, check_tensor, finish, operand_array, result_dtype, write_result
from ._registry import composite, public_names
from .shape import stack


def _check_matmul_operands(name, a, b, second="other"):
    check_tensor(name, a)
    check_tensor(name, b, 2, second)
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


@composite(out=True, operator="matmul", gradients={"input": _left_gradient, "other": _right_gradient})
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
    """``a @ b`` of checked backend arrays with ``device`` current (its backend's ``matmul``). A stack of matrices
    times one matrix is one product of the stack's rows (as PyTorch folds it): NumPy would otherwise run a small
    product per matrix of the stack, outside BLAS where the matrix is a transposed view (a linear layer's weight),
    hundreds of times slower."""
    if a.ndim > 2 and b.ndim == 2:
        rows = a.reshape(math.prod(a.shape[:-1]), a.shape[-1])
        return device.backend.matmul(rows, b).reshape(a.shape[:-1] + b.shape[-1:])
    return device.backend.matmul(a, b)


@composite(out=True, gradients={"input": lambda grad, input, mat2: _left_gradient(grad, input, mat2),
                      "mat2": lambda grad, input, mat2: _right_gradient(grad, input, mat2)})
def mm(input, mat2):
    """Product of two matrices (2-D only).

        >>> agnostic.tensor([[1, 2]]).mm(agnostic.tensor([[3], [4]]))
        tensor([[11]])
    """
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm(): expected 2-D tensors, got {input.ndim}-D and {mat2.ndim}-D")
    return matmul(input, mat2)


@composite(out=True, gradients={"input": lambda grad, input, mat2: _left_gradient(grad, input, mat2),
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


@composite(out=True, gradients={"input": lambda grad, input, vec: _left_gradient(grad, input, vec),
                      "vec": lambda grad, input, vec: _right_gradient(grad, input, vec)})
def mv(input, vec):
    """Matrix-vector product.

        >>> agnostic.tensor([[1, 2], [3, 4]]).mv(agnostic.tensor([1, -1]))
        tensor([-1, -1])
    """
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv(): expected a 2-D matrix and a 1-D vector, got {input.ndim}-D and {vec.ndim}-D")
    return matmul(input, vec)


@composite(out=True, gradients={"input": _left_gradient, "other": _right_gradient})
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


@composite(out=True, gradients={"input": _inner_gradient, "other": _inner_other_gradient})
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
    product = device.backend.run(device.backend.matmul, a, b.T)
    return wrap(product.reshape(lead_a + lead_b), device)


@composite(out="cast", aliases=("ger",), gradients={"input": lambda grad, vec2: matmul(grad, conj(vec2)),
                                         "vec2": lambda grad, input: matmul(grad.mT, conj(input))})
def outer(input, vec2):
    """Outer product of two 1-D tensors (alias ``ger``).

        >>> agnostic.tensor([1, 2]).outer(agnostic.tensor([1, 10]))
        tensor([[ 1, 10], [ 2, 20]])
    """
    device = _check_matmul_operands("outer", input, vec2, "vec2")
    xp = device.backend.xp
    return wrap(device.backend.run(xp.outer, input._data, vec2._data), device)


ger = outer


# ----- einsum ------------------------------------------------------------------------------------------------------
_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _explicit_einsum(equation, operands):
    """(input subscripts, output subscripts) of ``equation`` with ``...`` spelled out as unused letters and the
    output made explicit where it is implicit (PyTorch's rule: the ``...`` dimensions, then the letters seen once, in
    alphabetical order, capitals first)."""
    equation = equation.replace(" ", "")
    left, arrow, output = equation.partition("->")
    inputs = left.split(",")
    if len(inputs) != len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if len(operands) > len(inputs) else
                           "einsum(): fewer operands were provided than specified in the equation")
    counts = {subscripts: operand.ndim - len(subscripts.replace("...", ""))
              for subscripts, operand in zip(inputs, operands) if "..." in subscripts}
    unused = [c for c in _LETTERS if c not in equation]
    spread = "".join(unused[:max(counts.values(), default=0)])
    spelled = [s.replace("...", spread[len(spread) - counts[s]:]) if "..." in s else s for s in inputs]
    if arrow:
        output = output.replace("...", spread)
    else:
        seen = {}
        for c in left.replace("...", "").replace(",", ""):
            seen[c] = seen.get(c, 0) + 1
        output = spread + "".join(sorted(c for c, n in seen.items() if n == 1))
    return spelled, output


def _einsum_gradients(grad, equation, operands):
    """For each operand, the einsum of ``grad`` with the other operands (conjugated) back to the operand's
    subscripts: a subscript repeated within the operand (a diagonal) puts the gradient on that diagonal through an
    identity matrix, one the operand alone has (summed over) or has as a broadcast size-1 dimension through a
    vector of ones."""
    inputs, output = _explicit_einsum(equation, operands)
    full = {}  # each subscript's size in the product, after broadcasting size-1 dimensions
    for subscripts, operand in zip(inputs, operands):
        for c, size in zip(subscripts, operand.shape):
            if full.get(c, 1) == 1:
                full[c] = size
    used = set(output).union(*inputs)
    gradients = []
    for position, operand in enumerate(operands):
        spare = iter(c for c in _LETTERS if c not in used)
        terms, values = [output], [grad]
        for other_position, (subscripts, other) in enumerate(zip(inputs, operands)):
            if other_position != position:
                terms.append(subscripts)
                values.append(conj(other).expand([full[c] for c in subscripts]))
        target, seen = "", set()
        for c, size in zip(inputs[position], operand.shape):
            if c in seen:
                letter = next(spare)
                terms.append(c + letter)
                values.append(eye(full[c], dtype=grad.dtype, device=grad.device))
            elif size != full[c]:
                letter = next(spare)  # broadcast from size 1: the gradient sums over ``c``
            else:
                letter = c
            seen.add(c)
            target += letter
        present = set("".join(terms))
        for c, size in zip(target, operand.shape):
            if c not in present:
                terms.append(c)
                values.append(ones(size, dtype=grad.dtype, device=grad.device))
                present.add(c)
        gradients.append(einsum_operands(",".join(terms) + "->" + target, *values))
    return gradients


@composite(method=False, public=False, node="einsum", gradients={"operands": _einsum_gradients})
def einsum_operands(equation, *operands):
    """``einsum`` of operands given one by one (the differentiable op ``einsum`` calls). The equation goes to the
    backend spelled out, since NumPy can't sum ``...`` dimensions away (``"b...->b"``) where PyTorch can.

        >>> from agnostic.ops.linalg import einsum_operands
        >>> einsum_operands("b...->b", agnostic.ones(2, 3, 4))
        tensor([12., 12.])
    """
    device = check_same_device(*operands)
    dtype = result_dtype(*operands)
    # NumPy's einsum has no bfloat16 (ml_dtypes'): computed in float32 and rounded once, as PyTorch accumulates it
    compute = _dtypes.float32 if dtype is _dtypes.bfloat16 else dtype
    arrays = [operand_array(t if compute is dtype else t.to(compute), compute, device) for t in operands]
    inputs, output = _explicit_einsum(equation, operands)
    xp = device.backend.xp
    try:
        result = finish(device.backend.run(xp.einsum, ",".join(inputs) + "->" + output, *arrays), compute, device)
        return result if compute is dtype else result.to(dtype)
    except ValueError as error:
        raise RuntimeError(f"einsum(): {error}") from None


def _sublist_letters(sublist):
    letters = []
    for subscript in sublist:
        if subscript is Ellipsis:
            letters.append("...")
        elif isinstance(subscript, int) and 0 <= subscript < 52:
            letters.append(string.ascii_letters[subscript])
        else:
            raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52), got "
                             f"{subscript!r}")
    return "".join(letters)


def _sublist_equation(arguments):
    """(equation, operands) of einsum's sublist form: operand, sublist, operand, sublist..., [output sublist]."""
    pairs, output = arguments, None
    if len(arguments) % 2:
        pairs, output = arguments[:-1], arguments[-1]
    operands = pairs[0::2]
    inputs = ",".join(_sublist_letters(sublist) for sublist in pairs[1::2])
    return inputs + ("" if output is None else "->" + _sublist_letters(output)), operands


@composite(method=False)
def einsum(equation, *operands):
    """Einstein summation over ``operands`` (given one by one or as one list; PyTorch's signature, operands promote
    to a common dtype), or in the sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (integers 0-51 for
    subscripts, ``...`` for Ellipsis, an optional output list last). ``...`` stands for broadcast dimensions; a
    subscript repeated in one operand takes its diagonal. Differentiable for every contraction.

        >>> agnostic.einsum("ij,j->i", agnostic.tensor([[1, 2], [3, 4]]), agnostic.tensor([1, 1]))
        tensor([3, 7])
    """
    if isinstance(equation, TensorBase):
        equation, operands = _sublist_equation((equation,) + operands)
    elif len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    for position, operand in enumerate(operands):
        if not isinstance(operand, TensorBase):
            raise TypeError(f"einsum(): operand {position} must be a Tensor, got {type(operand).__name__}")
    return einsum_operands(equation, *operands)


# ----- products scaled and added to a tensor ------------------------------------------------------------------------
def _scaled_sum(name, input, product, beta, alpha):
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape; with ``beta == 0`` the input is
    ignored, NaN and infinity included (as PyTorch)."""
    check_tensor(name, input)
    check_same_device(input, product)
    if input.dtype is not product.dtype:
        raise RuntimeError(f"{name}(): self and mat2 must have the same dtype, but got {input.dtype} and "
                           f"{product.dtype}; convert input with .to({product.dtype})")
    if product.dtype.category < 2 and (isinstance(alpha, float) or isinstance(beta, float)) and not (
            float(alpha).is_integer() and float(beta).is_integer()):
        raise RuntimeError(f"{name}(): for integral input tensors, arguments beta and alpha must not be floating "
                           "point numbers")
    scaled = product if alpha == 1 else (product * alpha).to(product.dtype)
    if beta == 0:
        input.expand(product.shape)  # PyTorch's error when the input doesn't broadcast
        return scaled
    base = input.expand(product.shape)
    return (base if beta == 1 else (base * beta).to(product.dtype)) + scaled


def _times(gradient, factor):
    factor = factor.conjugate() if isinstance(factor, complex) else factor
    return gradient if factor == 1 else gradient * factor


def _input_times_beta(grad, beta):
    return _times(grad, beta)


@composite(out=True, inplace=True, gradients={"input": _input_times_beta,
                      "mat1": lambda grad, mat1, mat2, alpha: _times(_left_gradient(grad, mat1, mat2), alpha),
                      "mat2": lambda grad, mat1, mat2, alpha: _times(_right_gradient(grad, mat1, mat2), alpha)})
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)`` of matrices, ``input`` broadcast to the product; ``beta=0`` ignores
    the input, NaN included.

        >>> agnostic.addmm(agnostic.ones(1, 2), agnostic.tensor([[1., 2.]]), agnostic.tensor([[1., 0.], [0., 1.]]))
        tensor([[2., 3.]])
    """
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"addmm(): mat1 and mat2 must be matrices, got {mat1.ndim}-D and {mat2.ndim}-D")
    return _scaled_sum("addmm", input, matmul(mat1, mat2), beta, alpha)


@composite(out=True, inplace=True, gradients={"input": _input_times_beta,
                      "mat": lambda grad, mat, vec, alpha: _times(_left_gradient(grad, mat, vec), alpha),
                      "vec": lambda grad, mat, vec, alpha: _times(_right_gradient(grad, mat, vec), alpha)})
def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)`` of a matrix and a vector; ``beta=0`` ignores the input.

        >>> agnostic.addmv(agnostic.tensor([1., 1.]), agnostic.tensor([[1., 2.], [3., 4.]]), agnostic.ones(2))
        tensor([4., 8.])
    """
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"addmv(): vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}")
    return _scaled_sum("addmv", input, matmul(mat, vec), beta, alpha)


def _check_batches(name, first, second):
    if first.ndim != 3 or second.ndim != 3:
        raise RuntimeError(f"{name}(): batch1 must be a 3D tensor, got {first.ndim}-D and {second.ndim}-D")
    if first.shape[0] != second.shape[0]:
        raise RuntimeError(f"{name}(): batch1 and batch2 must have same number of batches, got {first.shape[0]} "
                           f"and {second.shape[0]}")


@composite(out=True, inplace=True, gradients={
    "input": _input_times_beta,
    "batch1": lambda grad, batch1, batch2, alpha: _times(_left_gradient(grad, batch1, batch2), alpha),
    "batch2": lambda grad, batch1, batch2, alpha: _times(_right_gradient(grad, batch1, batch2), alpha)})
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``, ``input`` broadcast to the batched product.

        >>> agnostic.baddbmm(agnostic.zeros(1, 1, 2), agnostic.ones(1, 1, 3), agnostic.ones(1, 3, 2), alpha=2)
        tensor([[[6., 6.]]])
    """
    _check_batches("baddbmm", batch1, batch2)
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


def _addbmm_gradient(grad, batch1, batch2, alpha, left):
    spread = grad.unsqueeze(0).expand(batch1.shape[0], *grad.shape)
    gradient = _left_gradient(spread, batch1, batch2) if left else _right_gradient(spread, batch1, batch2)
    return _times(gradient, alpha)


@composite(out=True, inplace=True, gradients={
    "input": _input_times_beta,
    "batch1": lambda grad, batch1, batch2, alpha: _addbmm_gradient(grad, batch1, batch2, alpha, True),
    "batch2": lambda grad, batch1, batch2, alpha: _addbmm_gradient(grad, batch1, batch2, alpha, False)})
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * sum(bmm(batch1, batch2), dim=0)``: the batch's products added up into a matrix.

        >>> agnostic.addbmm(agnostic.ones(1, 1), agnostic.ones(2, 1, 3), agnostic.ones(2, 3, 1))
        tensor([[7.]])
    """
    _check_batches("addbmm", batch1, batch2)
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


def _no_float_scale_of_integers(dtype, beta, alpha):
    if dtype.category < 2:
        for name, value in (("beta", beta), ("alpha", alpha)):
            if isinstance(value, (float, complex)):
                raise RuntimeError(f"For integral input tensors, argument {name} must not be a floating point "
                                   f"number; pass an int, or convert the tensors with .float()")


@composite(out="cast", inplace=True)
def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """``beta * input + alpha * outer(vec1, vec2)``, ``input`` broadcast to the ``(n, m)`` result, dtypes promoted;
    ``beta=0`` ignores the input, NaN included (``torch.addr``; for bool tensors, ``and``/``or``).

        >>> agnostic.addr(agnostic.ones(2, 2), agnostic.tensor([1., 2.]), agnostic.tensor([1., 10.]), beta=2)
        tensor([[ 3., 12.],
                [ 4., 22.]])
    """
    for name, vector in (("vec1", vec1), ("vec2", vec2)):
        if not isinstance(vector, TensorBase):
            raise TypeError(f"addr(): argument '{name}' must be a Tensor, not {type(vector).__name__}")
        if vector.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {vector.ndim}-D")
    dtype = result_dtype(input, vec1, vec2)
    _no_float_scale_of_integers(dtype, beta, alpha)
    product = vec1.unsqueeze(1) * vec2.unsqueeze(0)
    scaled = (product if alpha == 1 else product * alpha).to(dtype)
    base = input.expand(product.shape)  # PyTorch's error when the input doesn't broadcast
    if beta == 0:
        return scaled
    return (base if beta == 1 else base * beta).to(dtype) + scaled


_CHAIN_MATMUL_WARNING = ("agnostic.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                         "agnostic.linalg.multi_dot instead, which accepts a list of two or more tensors rather than "
                         "multiple parameters.")
_chain_matmul_warned: list = []  # PyTorch warns once per process


@composite(method=False)
def chain_matmul(*matrices, out=None):
    """The product of the 2-D ``matrices``, left to right (``torch.chain_matmul``, deprecated there for
    ``linalg.multi_dot``: the first call warns once).

        >>> agnostic.chain_matmul(agnostic.tensor([[1., 2.]]), agnostic.eye(2), agnostic.tensor([[3.], [4.]]))
        tensor([[11.]])
    """
    if not _chain_matmul_warned:
        _chain_matmul_warned.append(True)
        warnings.warn(_CHAIN_MATMUL_WARNING, UserWarning, stacklevel=5)  # past the op's three wrappers
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for matrix in matrices:
        if matrix.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {matrix.ndim}, expected 2 instead.")
    result = matrices[0].clone() if len(matrices) == 1 else matrices[0]
    for matrix in matrices[1:]:
        result = matmul(result, matrix)
    return result if out is None else write_result(out, result, "chain_matmul")


# ----- other products ----------------------------------------------------------------------------------------------
def _contracted_dims(dims, a, b):
    if isinstance(dims, TensorBase):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    if len(dims) != 2:
        raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dimensions")
    dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"both dimension lists should have same length, got {len(dims_a)} and {len(dims_b)}")
    return [_normalize_dim(d, a.ndim) for d in dims_a], [_normalize_dim(d, b.ndim) for d in dims_b]


@composite(out=True, method=False)
def tensordot(a, b, dims=2):
    """Sum of products over the dimensions ``dims`` names: an int ``n`` (the last ``n`` of ``a`` with the first
    ``n`` of ``b``) or a pair of lists; the free dimensions of ``a`` then those of ``b`` remain.

        >>> agnostic.tensordot(agnostic.ones(2, 3), agnostic.ones(3, 4), dims=1).shape
        agnostic.Size([2, 4])
    """
    check_same_device(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"tensordot(): both inputs should have same dtype, got {a.dtype} and {b.dtype}")
    dims_a, dims_b = _contracted_dims(dims, a, b)
    for dim_a, dim_b in zip(dims_a, dims_b):
        if a.shape[dim_a] != b.shape[dim_b]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[dim_a]} in dim "
                               f"{dim_a} and second has size {b.shape[dim_b]} in dim {dim_b}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    inner_size = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(math.prod(a.shape[d] for d in free_a), inner_size)
    right = b.permute(dims_b + free_b).reshape(inner_size, math.prod(b.shape[d] for d in free_b))
    return matmul(left, right).reshape([a.shape[d] for d in free_a] + [b.shape[d] for d in free_b])


@composite(out="cast")
def kron(input, other):
    """Kronecker product: blocks ``input[i] * other``, in a tensor of shape ``input.shape * other.shape`` (the
    shorter shape padded with ones on the left; dtypes promote).

        >>> agnostic.kron(agnostic.tensor([1, 2]), agnostic.tensor([1, 10]))
        tensor([ 1, 10,  2, 20])
    """
    check_same_device(input, other)
    ndim = max(input.ndim, other.ndim)
    shape_a = (1,) * (ndim - input.ndim) + tuple(input.shape)
    shape_b = (1,) * (ndim - other.ndim) + tuple(other.shape)
    spread_a = [size for pair in zip(shape_a, (1,) * ndim) for size in pair]
    spread_b = [size for pair in zip((1,) * ndim, shape_b) for size in pair]
    product = input.reshape(spread_a) * other.reshape(spread_b)
    return product.reshape([size_a * size_b for size_a, size_b in zip(shape_a, shape_b)])


_CROSS_DIM_WARNING = ("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.")


@composite(out=True)
def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim`` (``input`` and ``other`` broadcast). Without ``dim``, PyTorch's
    deprecated default: the first dimension of ``input`` of size 3, with a warning (``linalg.cross`` takes -1).

        >>> agnostic.cross(agnostic.tensor([1., 0., 0.]), agnostic.tensor([0., 1., 0.]), dim=0)
        tensor([0., 0., 1.])
    """
    check_tensor("cross", input)
    check_tensor("cross", other, 2, "other")
    check_same_device(input, other)
    if dim is None:
        warnings.warn(_CROSS_DIM_WARNING, UserWarning, stacklevel=2)
        dim = next((axis for axis, size in enumerate(input.shape) if size == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input; pass dim, or use linalg.cross")
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"linalg.cross: expected both inputs to have the same dtype, got {input.dtype} and "
                           f"{other.dtype}; convert one with .to(other.dtype)")
    axis = _normalize_dim(dim, input.ndim)
    if input.shape[axis] != 3 or other.shape[axis] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[axis]} and "
                           f"{other.shape[axis]}")
    a, b = input.unbind(axis), other.unbind(axis)
    return stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]], axis)


@composite()
def trace(input):
    """Sum of the main diagonal of a matrix (integer traces are int64, as sums are).

        >>> agnostic.tensor([[1, 2], [3, 4]]).trace()
        tensor(5)
    """
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return input.diagonal().sum()


def _distance_terms(grad, x1, x2, p, result):
    """``d result[..., i, j] / d x1[..., i, j, :]`` times ``grad``, for each pair (PyTorch's ``_cdist_backward``: a
    zero gradient where the distance is zero; for p=inf every coordinate reaching the maximum gets it)."""
    difference = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    distance = result.unsqueeze(-1)
    if p == 0:
        return difference * 0
    if p == 1:
        terms = difference.sign()
    elif p == math.inf:
        terms = difference.sign() * (difference.abs() == distance)
    else:
        nonzero = distance != 0
        safe = distance.where(nonzero, 1.0)
        if p == 2:
            terms = difference / safe
        else:
            terms = difference * difference.abs().pow(p - 2) / safe.pow(p - 1)
        terms = terms.where(nonzero, 0.0)
    return terms * grad.unsqueeze(-1)


@composite(method=False, gradients={
    "x1": lambda grad, x1, x2, p, result: _distance_terms(grad, x1, x2, p, result).sum(-2),
    "x2": lambda grad, x1, x2, p, result: -_distance_terms(grad, x1, x2, p, result).sum(-3)})
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between each row of ``x1`` (``[B, P, M]``) and each row of ``x2`` (``[B, R, M]``): a
    ``[B, P, R]`` tensor (batch dimensions broadcast). Computed from the differences, so exact for every
    ``compute_mode``.

        >>> agnostic.cdist(agnostic.tensor([[0., 0.]]), agnostic.tensor([[3., 4.], [0., 1.]]))
        tensor([[5., 1.]])
    """
    check_same_device(x1, x2)
    for position, x in enumerate((x1, x2), start=1):
        if x.dtype.category != 2:
            raise RuntimeError(f"cdist only supports floating-point dtypes, X{position} got: {x.dtype}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, X{position} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist(): X1 and X2 must have the same dtype, got {x1.dtype} and {x2.dtype}")
    difference = (x1.unsqueeze(-2) - x2.unsqueeze(-3)).abs()
    if p == 0:
        return (difference != 0).sum(-1).to(x1.dtype)
    if p == 1:
        return difference.sum(-1)
    if p == 2:
        return (difference * difference).sum(-1).sqrt()
    if p == math.inf:
        return difference.amax(-1) if difference.shape[-1] else difference.sum(-1)
    return difference.pow(p).sum(-1).pow(1 / p)


# ----- torch's top-level linear algebra (torch.det, x.inverse()...) ---------------------------------------------------
# They call torch.linalg's functions, which ``agnostic/linalg.py`` registers here as it loads: that module imports
# this one (the Tensor class is built from the ops modules first), so this one can't import it. Their gradients are
# those of the ``agnostic.linalg`` ops they call.
linalg_functions: dict = {}


def _linalg(name):
    return linalg_functions[name]


def return_type(name, fields):
    """A named tuple printed as PyTorch's ``torch.return_types.<name>``."""
    base = namedtuple(name, fields)
    base.__repr__ = lambda self: (f"agnostic.return_types.{name}(\n"
                                  + ",\n".join(f"{field}={getattr(self, field)!r}" for field in fields) + ")")
    return base


slogdet_result = return_type("slogdet", ["sign", "logabsdet"])
svd_result = return_type("svd", ["U", "S", "V"])


@composite()
def det(input):
    """Determinant of a square matrix or a batch of them (``linalg.det``).

        >>> agnostic.tensor([[2., 1.], [1., 2.]]).det()
        tensor(3.)
    """
    return _linalg("det")(input)


@composite()
def slogdet(input):
    """Sign and natural logarithm of the absolute value of the determinant (``linalg.slogdet``), as the named tuple
    ``(sign, logabsdet)``.

        >>> agnostic.tensor([[-2., 0.], [0., 1.]]).slogdet().sign
        tensor(-1.)
    """
    return slogdet_result(*_linalg("slogdet")(input))


@composite()
def logdet(input):
    """Natural logarithm of the determinant: NaN where a real determinant is negative, -inf where it is zero.

        >>> agnostic.tensor([[-1., 0.], [0., 1.]]).logdet()
        tensor(nan)
    """
    sign, logabsdet = _linalg("slogdet")(input)
    if input.dtype.is_complex:
        return logabsdet + sign.log()
    return logabsdet.where(sign >= 0, math.nan)


@composite(out=True)
def inverse(input):
    """Inverse of a square matrix or a batch of them (``linalg.inv``): a RuntimeError for a singular one.

        >>> agnostic.tensor([[2., 0.], [0., 4.]]).inverse()
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    return _linalg("inv")(input)


@composite()
def pinverse(input, rcond=1e-15):
    """Moore-Penrose pseudo-inverse, singular values below ``rcond`` times the largest taken as zero
    (``linalg.pinv(input, rtol=rcond)``).

        >>> agnostic.tensor([[1., 0.], [0., 0.]]).pinverse()
        tensor([[1., 0.],
                [0., 0.]])
    """
    return _linalg("pinv")(input, rtol=rcond)


@composite(out=True)
def matrix_power(input, n):
    """``input`` to the integer power ``n`` (``n < 0``: of its inverse; 0: the identity), as ``linalg.matrix_power``.

        >>> agnostic.tensor([[1., 1.], [0., 1.]]).matrix_power(3)
        tensor([[1., 3.],
                [0., 1.]])
    """
    return _linalg("matrix_power")(input, n)


@composite()
def matrix_exp(input):
    """Matrix exponential of a square matrix or a batch of them (``linalg.matrix_exp``).

        >>> agnostic.zeros(2, 2).matrix_exp()
        tensor([[1., 0.],
                [0., 1.]])
    """
    return _linalg("matrix_exp")(input)


def _cholesky_factor(input2, upper):
    """``A`` of a Cholesky factor: ``L @ L^H``, or ``U^H @ U`` where ``upper``."""
    return conj(input2).mT.matmul(input2) if upper else input2.matmul(conj(input2).mT)


@composite(out="cast")
def cholesky_solve(input, input2, upper=False):
    """Solution ``X`` of ``A X = input`` where ``input2`` is ``A``'s Cholesky factor (lower, or upper with
    ``upper=True``), batches broadcasting.

        >>> L = agnostic.tensor([[2., 0.], [0., 2.]])
        >>> agnostic.cholesky_solve(agnostic.ones(2, 1), L)
        tensor([[0.2500],
                [0.2500]])
    """
    if input.ndim < 2 or input2.ndim < 2:
        raise RuntimeError(f"cholesky_solve: b and u need at least 2 dimensions, got {input.ndim} and {input2.ndim}")
    return _linalg("solve")(_cholesky_factor(input2, upper), input)


@composite(out="cast")
def cholesky_inverse(input, upper=False):
    """Inverse of ``A`` from its Cholesky factor ``input`` (lower, or upper with ``upper=True``).

        >>> agnostic.cholesky_inverse(agnostic.tensor([[2., 0.], [0., 1.]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    return _linalg("inv")(_cholesky_factor(input, upper))


@composite(out=True)
def svd(input, some=True, compute_uv=True):
    """Singular value decomposition in ``torch.svd``'s older form: ``(U, S, V)`` with ``input = U diag(S) V^H``
    (``V``, not ``Vh``); ``some=True`` gives the reduced ``U`` and ``V``, and ``compute_uv=False`` zero-filled ones
    of the full shapes.

        >>> agnostic.tensor([[3., 0.], [0., 4.]]).svd().S
        tensor([4., 3.])
    """
    if not compute_uv:
        values = _linalg("svdvals")(input)
        rows, columns = input.shape[-2], input.shape[-1]
        batch, where = tuple(input.shape[:-2]), {"dtype": input.dtype, "device": input.device}
        return svd_result(zeros(batch + (rows, rows), **where), values, zeros(batch + (columns, columns), **where))
    U, S, Vh = _linalg("svd")(input, full_matrices=not some)
    return svd_result(U, S, conj(Vh).mT)



lu_unpack_result = return_type("lu_unpack", ["P", "L", "U"])
lu_result = return_type("lu", ["LU", "pivots"])  # torch.lu's plain tuple, as a named one
lu_with_info_result = return_type("lu_with_info", ["LU", "pivots", "infos"])


def _permutation_rows(pivots, rows):
    """For LAPACK's 1-based ``pivots`` (..., k) of matrices with ``rows`` rows, ``order`` (..., rows) with
    ``P^T A = A[order]``: the row exchanges applied in turn to ``0, 1, ..., rows - 1``."""
    xp = pivots._device.backend.xp

    def exchanges(swaps):
        positions = xp.arange(rows)
        order = xp.broadcast_to(positions, swaps.shape[:-1] + (rows,)).copy()
        for i in range(swaps.shape[-1]):
            j = swaps[..., i:i + 1].astype(numpy.int64) - 1
            at_i, at_j = order[..., i:i + 1], xp.take_along_axis(order, j, -1)
            order = xp.where(positions == j, at_i, order)
            order[..., i:i + 1] = at_j
        return order
    return pivots._device.backend.run(exchanges, pivots._data)


@composite(out=True, method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` from ``linalg.lu_factor``'s packed ``LU_data`` (..., m, n) and int32 ``LU_pivots``, as
    ``torch.lu_unpack``: ``P`` (m x m) a permutation matrix, ``L`` (m x k) unit lower triangular, ``U`` (k x n)
    upper triangular, k = min(m, n); empty tensors for the parts not asked for.

        >>> LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> agnostic.lu_unpack(LU, pivots).L
        tensor([[1.0000, 0.0000],
                [0.3333, 1.0000]])
    """
    check_tensor("lu_unpack", LU_data, 1, "LU_data")
    check_tensor("lu_unpack", LU_pivots, 2, "LU_pivots")
    device = check_same_device(LU_data, LU_pivots)
    if LU_pivots.dtype.name != "int32":
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                           "Note: this function is intended to be used with the output produced by "
                           "torch.linalg.lu_factor")
    if LU_data.ndim < 2:
        raise RuntimeError(f"torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: "
                           f"{list(LU_data.shape)} instead")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    k = min(m, n)
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (k,):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.shape == {list(LU_data.shape[:-2]) + [k]} "
                           f"(LU_data's batch and min(m, n)), got {list(LU_pivots.shape)}")
    empty = zeros(0, dtype=LU_data.dtype, device=LU_data.device)
    L = U = P = empty
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=LU_data.dtype, device=LU_data.device)
        U = LU_data[..., :k, :].triu()
    if unpack_pivots:
        order = _permutation_rows(LU_pivots, m)
        xp = device.backend.xp
        one_hot = device.backend.run(lambda o: xp.arange(m)[:, None] == o[..., None, :], order)
        P = wrap(one_hot, device).to(LU_data.dtype)
    return lu_unpack_result(P, L, U)


@composite()
def lu(A, pivot=True, get_infos=False):
    """``(LU, pivots)``, or ``(LU, pivots, infos)`` with ``get_infos``: the deprecated ``torch.lu``
    (``linalg.lu_factor_ex`` without its checks).

        >>> agnostic.tensor([[1.0, 2.0], [3.0, 4.0]]).lu().pivots
        tensor([2, 2], dtype=agnostic.int32)
    """
    LU, pivots, info = _linalg("lu_factor_ex")(A, pivot=pivot)
    return lu_with_info_result(LU, pivots, info) if get_infos else lu_result(LU, pivots)


@composite(out=True)
def lu_solve(input, LU_data, LU_pivots):
    """The solution ``X`` of ``A X = input`` from ``A``'s ``LU_data`` and ``LU_pivots`` (``linalg.lu_factor``'s):
    the deprecated ``torch.lu_solve`` (``linalg.lu_solve(LU_data, LU_pivots, input)``).

        >>> LU, pivots = agnostic.linalg.lu_factor(agnostic.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> agnostic.ones(2, 1).lu_solve(LU, pivots)
        tensor([[0.5000],
                [0.2500]])
    """
    return _linalg("lu_solve")(LU_data, LU_pivots, input)

triangular_solve_result = return_type("triangular_solve", ["solution", "cloned_coefficient"])
qr_result = return_type("qr", ["Q", "R"])


@composite(out=True)
def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """``(solution, cloned_coefficient)``: the solution ``X`` of ``A X = input`` (``A^T X = input`` with
    ``transpose``) for triangular ``A``, and a copy of ``A``; the deprecated ``torch.triangular_solve`` (it warns:
    use ``linalg.solve_triangular(A, input, upper=upper)``, whose arguments are the other way round).

        >>> A = agnostic.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> agnostic.tensor([[3.0], [4.0]]).triangular_solve(A).solution
        tensor([[1.],
                [1.]])
    """
    warnings.warn("torch.triangular_solve is deprecated in favor of torch.linalg.solve_triangular and will be removed "
                  "in a future PyTorch release: X = torch.triangular_solve(B, A).solution should be replaced with "
                  "X = torch.linalg.solve_triangular(A, B).", UserWarning, stacklevel=4)
    coefficient = A.mT if transpose else A
    solution = _linalg("solve_triangular")(coefficient, input, upper=upper != bool(transpose),
                                           unitriangular=unitriangular)
    return triangular_solve_result(solution, A.clone())


@composite()
def cholesky(input, upper=False):
    """The Cholesky factor of each positive-definite matrix of ``input``, lower (``upper``: upper); the deprecated
    ``torch.cholesky`` of PyTorch 2.x before its removal (it warns: use ``linalg.cholesky(A)``, or
    ``linalg.cholesky(A).mH`` for the upper factor).

        >>> agnostic.tensor([[4.0, 2.0], [2.0, 2.0]]).cholesky()
        tensor([[2., 0.],
                [1., 1.]])
    """
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed in a future "
                  "PyTorch release: L = torch.cholesky(A) should be replaced with L = torch.linalg.cholesky(A), and "
                  "U = torch.cholesky(A, upper=True) with U = torch.linalg.cholesky(A).mH", UserWarning, stacklevel=4)
    return _linalg("cholesky")(input, upper=upper)


@composite()
def qr(input, some=True):
    """``(Q, R)`` of each matrix of ``input``, reduced (``some=False``: complete); the deprecated ``torch.qr`` of
    PyTorch 2.x before its removal (it warns: use ``linalg.qr(A, mode='reduced')``, or ``mode='complete'``).

        >>> agnostic.tensor([[3.0, 1.0], [4.0, 2.0]]).qr().R.abs()
        tensor([[5.0000, 2.2000],
                [0.0000, 0.4000]])
    """
    mode = "reduced" if some else "complete"
    warnings.warn(f"torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a future PyTorch "
                  f"release: Q, R = torch.qr(A, some={some}) should be replaced with Q, R = torch.linalg.qr(A, "
                  f"mode='{mode}')", UserWarning, stacklevel=4)
    return qr_result(*_linalg("qr")(input, mode=mode))


__all__ = public_names(globals())

