"""Every differentiable core op passes gradcheck (float64, finite differences) on every device, for generated
shapes and values, and its gradients on CUDA equal those on the CPU."""

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agnostic
from agnostic.autograd import gradcheck

from conftest import DEVICES


def _index(device):
    return agnostic.tensor([0, 2, 1, 1], device=device)


# name -> (function of the inputs, input shapes as functions of a generated size n, keep values away from zero)
OPS = {
    "add": (lambda x, y: x + y, [(2, 3), (3,)], False),
    "sub_alpha": (lambda x, y: agnostic.sub(x, y, alpha=2), [(2, 3), (2, 1)], False),
    "mul": (lambda x, y: x * y, [(3,), (3,)], False),
    "div": (lambda x, y: x / y, [(2, 3), (3,)], True),
    "rdiv": (lambda x: 2.0 / x, [(3,)], True),
    "pow": (lambda x, y: x ** y, [(3,), (3,)], True),
    "rpow": (lambda x: 1.5 ** x, [(3,)], False),
    "neg": (lambda x: -x, [(3,)], False),
    "abs": (lambda x: x.abs(), [(3,)], True),
    "sqrt": (lambda x: x.sqrt(), [(3,)], True),
    "rsqrt": (lambda x: x.rsqrt(), [(3,)], True),
    "reciprocal": (lambda x: x.reciprocal(), [(3,)], True),
    "exp": (lambda x: x.exp(), [(3,)], False),
    "expm1": (lambda x: x.expm1(), [(3,)], False),
    "log": (lambda x: x.log(), [(3,)], True),
    "log2": (lambda x: x.log2(), [(3,)], True),
    "log1p": (lambda x: x.log1p(), [(3,)], True),
    "sin": (lambda x: x.sin(), [(3,)], False),
    "cos": (lambda x: x.cos(), [(3,)], False),
    "tan": (lambda x: (x * 0.3).tan(), [(3,)], False),
    "tanh": (lambda x: x.tanh(), [(3,)], False),
    "sigmoid": (lambda x: x.sigmoid(), [(3,)], False),
    "relu": (lambda x: x.relu(), [(3,)], True),
    "atan": (lambda x: x.atan(), [(3,)], False),
    "asin": (lambda x: (x * 0.3).asin(), [(3,)], False),
    "sinh": (lambda x: x.sinh(), [(3,)], False),
    "atan2": (lambda x, y: agnostic.atan2(x, y), [(3,), (3,)], True),
    "maximum": (lambda x, y: agnostic.maximum(x, y), [(3,), (3,)], False),
    "clamp": (lambda x: x.clamp(-0.5, 0.5), [(2, 3)], False),
    "where": (lambda x, y: agnostic.where(x > 0, x, y), [(2, 3), (3,)], False),
    "lerp": (lambda x, y: agnostic.lerp(x, y, 0.25), [(3,), (3,)], False),
    "softmax": (lambda x: agnostic.softmax(x, 1), [(2, 3)], False),
    "log_softmax": (lambda x: agnostic.log_softmax(x, 0), [(2, 3)], False),
    "sum": (lambda x: x.sum(1), [(2, 3)], False),
    "mean": (lambda x: x.mean((0, 1), keepdim=True), [(2, 3)], False),
    "prod": (lambda x: x.prod(0), [(2, 3)], False),
    "var": (lambda x: x.var(1), [(2, 3)], False),
    "std": (lambda x: x.std(), [(2, 3)], False),
    "max_dim": (lambda x: x.max(1)[0], [(2, 3)], False),
    "amin": (lambda x: agnostic.amin(x, 0), [(2, 3)], False),
    "norm": (lambda x: x.norm(dim=1), [(2, 3)], True),
    "logsumexp": (lambda x: agnostic.logsumexp(x, 1), [(2, 3)], False),
    "cumsum": (lambda x: x.cumsum(1), [(2, 3)], False),
    "cumprod": (lambda x: x.cumprod(0), [(3, 2)], False),
    "matmul": (lambda x, y: x @ y, [(2, 3), (3, 2)], False),
    "matvec": (lambda x, y: x @ y, [(2, 2, 3), (3,)], False),
    "outer": (lambda x, y: agnostic.outer(x, y), [(2,), (3,)], False),
    "inner": (lambda x, y: agnostic.inner(x, y), [(2, 3), (4, 1, 3)], False),
    "inner_scalar": (lambda x, y: agnostic.inner(x, y), [(), (2, 3)], False),
    "einsum": (lambda x, y: agnostic.einsum("ij,jk->ik", x, y), [(2, 3), (3, 2)], False),
    "reshape_permute": (lambda x: x.reshape(3, 2).permute(1, 0) * 2, [(2, 3)], False),
    "transpose_T": (lambda x: x.transpose(0, 1) @ x.T.T, [(2, 3)], False),
    "expand": (lambda x: x.expand(3, 3) * 2, [(1, 3)], False),
    "cat_stack": (lambda x, y: agnostic.stack([agnostic.cat([x, y]), agnostic.cat([y, x])]), [(2,), (2,)], False),
    "split_chunk": (lambda x: x.split(1, 0)[1] * x.chunk(3, 1)[0], [(2, 3)], False),
    "narrow_flip_roll": (lambda x: x.narrow(1, 1, 2).flip(0).roll(1, 1), [(2, 3)], False),
    "repeat_tile": (lambda x: x.repeat(2, 1) + x.tile((2, 1)), [(2, 3)], False),
    "getitem": (lambda x: x[1:, [0, 2, 2]], [(3, 3)], False),
    "setitem": (lambda x: _set_row(x), [(2, 3)], False),
    "gather": (lambda x: x.gather(1, agnostic.tensor([[0, 0], [2, 1]], device=x.device)), [(2, 3)], False),
    "index_select": (lambda x: x.index_select(0, _index(x.device)[:3].clamp(0, 1)), [(2, 3)], False),
    "scatter_add": (lambda x, y: x.scatter_add(1, agnostic.tensor([[0, 0], [2, 2]], device=x.device), y),
                    [(2, 3), (2, 2)], False),
    "masked_fill": (lambda x: x.masked_fill(x > 0, 1.0), [(2, 3)], False),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(0).squeeze(0).flatten() * 2, [(2, 3)], False),
    "in_place": (lambda x: _in_place(x), [(3,)], False),
    "device_round_trip": (lambda x: x.cpu().to(x.device) * x, [(3,)], False),
}


def _set_row(x):
    y = x * 1.5
    y[0] = x[1] * x[0]
    return y


def _in_place(x):
    y = x * 1.0
    y.mul_(x).add_(x)
    return y.exp_()


def _inputs(shapes, values, positive, device):
    tensors = []
    for shape in shapes:
        count = int(numpy.prod(shape))
        raw = numpy.array(values[:count], dtype=numpy.float64).reshape(shape)
        if positive:
            raw = numpy.abs(raw) + 0.5
        tensors.append(agnostic.tensor(raw, device=device, requires_grad=True))
    return tensors


def _gradients(function, inputs):
    output = function(*inputs)
    return agnostic.autograd.grad(output.sum() if output.numel() != 1 else output, inputs, allow_unused=True)


@pytest.mark.parametrize("name", sorted(OPS))
@settings(max_examples=4, deadline=None)
@given(values=st.lists(st.floats(-2.0, 2.0).filter(lambda v: abs(v) > 0.05 and abs(abs(v) - 0.5) > 0.01),
                       min_size=24, max_size=24, unique=True))
def test_gradcheck_on_every_device(name, values):
    function, shapes, positive = OPS[name]
    reference = None
    for device in DEVICES:
        inputs = _inputs(shapes, values, positive, device)
        assert gradcheck(function, inputs, eps=1e-6, atol=1e-5, rtol=1e-3), (name, device)
        gradients = [None if g is None else g.cpu().numpy() for g in _gradients(function, inputs)]
        if reference is None:
            reference = gradients
        else:
            for on_cpu, on_device in zip(reference, gradients):
                numpy.testing.assert_allclose(on_device, on_cpu, rtol=1e-10, atol=1e-12)
