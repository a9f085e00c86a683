"""Autograd behaviour as torch.autograd: recording, backward, accumulation, hooks, grad modes, custom Functions."""

import numpy
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import agnostic
from agnostic.autograd import Function, gradcheck
from conftest import DEVICES


def _values(tensor):
    return tensor.detach().cpu().numpy()


def test_backward_accumulates_into_leaves(device):
    x = agnostic.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    (x * x).sum().backward()
    numpy.testing.assert_allclose(_values(x.grad), [2.0, 4.0, 6.0])
    (3 * x).sum().backward()
    numpy.testing.assert_allclose(_values(x.grad), [5.0, 7.0, 9.0])
    assert x.grad.device == device


def test_metadata_of_recorded_tensors(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    y = x + 1
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert not y.is_leaf and y.requires_grad
    assert y.grad_fn.name() == "AddBackward0"
    assert y.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    assert "grad_fn=<AddBackward0>" in repr(y)
    assert "requires_grad=True" in repr(x)
    plain = agnostic.ones(2, device=device)
    assert not plain.requires_grad and plain.grad is None and plain.is_leaf
    assert not (plain + 1).requires_grad


def test_broadcast_gradients_are_summed_back_to_input_shape(device):
    a = agnostic.ones(3, 1, device=device, requires_grad=True)
    b = agnostic.ones(4, device=device, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    numpy.testing.assert_allclose(_values(a.grad), [[4.0]] * 3)
    numpy.testing.assert_allclose(_values(b.grad), [3.0] * 4)


def test_mixed_dtypes_give_gradients_in_each_input_dtype(device):
    a = agnostic.ones(3, dtype=agnostic.float32, device=device, requires_grad=True)
    b = agnostic.ones(3, dtype=agnostic.float64, device=device, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad.dtype is agnostic.float32 and b.grad.dtype is agnostic.float64


def test_non_scalar_backward_needs_a_gradient(device):
    x = agnostic.ones(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(agnostic.tensor([1.0, 2.0, 3.0], device=device))
    numpy.testing.assert_allclose(_values(x.grad), [2.0, 4.0, 6.0])


def test_backward_twice_needs_retain_graph(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_backward_without_grad_is_an_error(device):
    with pytest.raises(RuntimeError, match="does not require grad"):
        agnostic.ones(2, device=device).sum().backward()


def test_only_floating_tensors_can_require_grad(device):
    with pytest.raises(RuntimeError, match="floating point and complex"):
        agnostic.ones(2, dtype=agnostic.int64, device=device).requires_grad_()
    with pytest.raises(RuntimeError, match="leaf variables"):
        (agnostic.ones(2, device=device, requires_grad=True) * 2).requires_grad_(False)


def test_grad_modes(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    with agnostic.no_grad():
        assert not (x * 2).requires_grad
        assert not agnostic.is_grad_enabled()
        with agnostic.enable_grad():
            assert (x * 2).requires_grad
    with agnostic.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert agnostic.is_grad_enabled()
    with agnostic.inference_mode():
        assert not (x * 2).requires_grad

    @agnostic.no_grad()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad


def test_in_place_on_a_leaf_that_requires_grad_is_refused(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x.add_(1)
    with agnostic.no_grad():
        x.add_(1)  # optimizers do this
    numpy.testing.assert_allclose(_values(x), [2.0, 2.0])


def test_in_place_on_non_leaf_records_history(device):
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 1
    y.mul_(x)
    y += 1
    y.sum().backward()
    numpy.testing.assert_allclose(_values(x.grad), [2.0, 4.0])


def test_modifying_a_saved_tensor_in_place_is_detected(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    y = x * 2
    z = y * y  # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_setitem_on_non_leaf(device):
    x = agnostic.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    y = x * 2
    y[0] = 0.0
    y.sum().backward()
    numpy.testing.assert_allclose(_values(x.grad), [0.0, 2.0, 2.0])


def test_retain_grad_and_hooks(device):
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    y = x * 3
    y.retain_grad()
    seen = []
    handle = y.register_hook(lambda g: seen.append(_values(g)))
    x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    numpy.testing.assert_allclose(_values(y.grad), [6.0, 12.0])
    numpy.testing.assert_allclose(seen[0], [6.0, 12.0])
    numpy.testing.assert_allclose(_values(x.grad), [180.0, 360.0])
    handle.remove()
    x.grad = None
    (x * 3 * 2).sum().backward()
    assert len(seen) == 1


def test_autograd_grad_leaves_dot_grad_alone(device):
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    (gx,) = agnostic.autograd.grad((x ** 3).sum(), x)
    numpy.testing.assert_allclose(_values(gx), [3.0, 12.0])
    assert x.grad is None


def test_second_derivatives_with_create_graph(device):
    x = agnostic.tensor([1.0, 2.0], dtype=agnostic.float64, device=device, requires_grad=True)
    (first,) = agnostic.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (second,) = agnostic.autograd.grad(first.sum(), x)
    numpy.testing.assert_allclose(_values(second), [6.0, 12.0])
    (first_tanh,) = agnostic.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (second_tanh,) = agnostic.autograd.grad(first_tanh.sum(), x)
    t = numpy.tanh([1.0, 2.0])
    numpy.testing.assert_allclose(_values(second_tanh), -2 * t * (1 - t * t), rtol=1e-12)


def test_unused_input_needs_allow_unused(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    unused = agnostic.ones(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        agnostic.autograd.grad((x * 2).sum(), [x, unused])
    assert agnostic.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)[1] is None


def test_detach_and_data_share_memory_without_history(device):
    x = agnostic.ones(2, device=device, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None
    d[0] = 5.0
    assert _values(y)[0] == 5.0
    assert not x.data.requires_grad
    x.data.fill_(3.0)
    assert _values(x)[0] == 3.0


class _Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x * x


def test_custom_function(device):
    x = agnostic.tensor([1.0, 2.0], dtype=agnostic.float64, device=device, requires_grad=True)
    y = _Cube.apply(x)
    assert y.grad_fn.name() == "_CubeBackward"
    y.sum().backward()
    numpy.testing.assert_allclose(_values(x.grad), [3.0, 12.0])
    assert gradcheck(_Cube.apply, (x,))


def test_gradcheck_reports_a_wrong_backward(device):
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 3

    x = agnostic.ones(2, dtype=agnostic.float64, device=device, requires_grad=True)
    with pytest.raises(agnostic.autograd.GradcheckError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, (x,))
    assert not gradcheck(Wrong.apply, (x,), raise_exception=False)


def test_move_between_devices_keeps_history(device):
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    (x.to("cpu") * 2).sum().backward()
    assert x.grad.device == device
    numpy.testing.assert_allclose(_values(x.grad), [2.0, 2.0])
    assert x.to(device) is x


@settings(max_examples=25)
@given(data=hnp.arrays(numpy.float32, hnp.array_shapes(min_dims=0, max_dims=3, max_side=5),
                       elements=st.floats(width=32, allow_nan=True, allow_infinity=True)),
       dtype=st.sampled_from(["float16", "float32", "float64"]))
def test_relu_gradient_passes_grad_where_input_is_positive(data, dtype):
    """The one-pass relu gradient: ``grad`` where the input is > 0, exactly +0 elsewhere (also for inf/nan grads
    and nan inputs), in the input's dtype, on every device. CuPy's kernels read float32 subnormals as zeros
    (-ftz=true, a documented limitation), so on CUDA a float32 subnormal input counts as 0 there."""
    with numpy.errstate(over="ignore"):  # float32 values beyond float16's range become inf, as intended
        x_host = data.astype(dtype)
        g_host = numpy.flip(data).astype(dtype)  # inf and nan gradients land on masked and kept elements
    subnormal = (x_host != 0) & (numpy.abs(x_host) < numpy.finfo(x_host.dtype).tiny)
    for device in DEVICES:
        flushed = subnormal if device != "cpu" and dtype == "float32" else numpy.zeros_like(subnormal)
        positive = (x_host > 0) & ~flushed
        expected = numpy.where(positive, g_host, numpy.zeros((), dtype))
        x = agnostic.tensor(x_host, device=device, requires_grad=True)
        agnostic.relu(x).backward(agnostic.tensor(g_host, device=device))
        assert x.grad.dtype is getattr(agnostic, dtype) and x.grad.device == agnostic.device(device)
        numpy.testing.assert_array_equal(_values(x.grad), expected)
        assert not numpy.signbit(_values(x.grad)[~positive]).any()


@pytest.mark.parametrize("shape", [(0, 3), (3, (1 << 16) // 3 + 7), (700, 300)])
def test_relu_gradient_of_large_and_empty_tensors(device, shape):
    """The CPU form works a block of 65,536 elements at a time: sizes across several blocks (and a transposed,
    non-contiguous input) give the same result as ``where``, and an empty tensor an empty gradient."""
    rng = numpy.random.default_rng(5)
    x_host = rng.standard_normal(shape[::-1]).astype(numpy.float32).T  # column-major
    g_host = rng.standard_normal(shape).astype(numpy.float32)
    x = agnostic.tensor(x_host, device=device, requires_grad=True)
    agnostic.relu(x).backward(agnostic.tensor(g_host, device=device))
    numpy.testing.assert_array_equal(_values(x.grad), numpy.where(x_host > 0, g_host, 0))


def test_relu_gradient_of_gradient_is_recorded(device):
    """With create_graph=True the relu gradient is recorded, so it can be differentiated again."""
    x = agnostic.tensor([-1.0, 2.0, 3.0], device=device, requires_grad=True)
    g = agnostic.tensor([1.0, 1.0, 1.0], device=device, requires_grad=True)
    y = agnostic.relu(x)
    grad_x, = agnostic.autograd.grad(y, x, g, create_graph=True)
    (grad_x * agnostic.tensor([5.0, 6.0, 7.0], device=device)).sum().backward()
    numpy.testing.assert_array_equal(_values(g.grad), [0.0, 6.0, 7.0])


def test_second_derivatives_through_indexing(device):
    """The gradient of ``x[key]`` is itself differentiable: d²/dw² of sum(w[1:]²) is 2 off the first element, and
    repeated advanced indices add up (sum(w[[0, 0, 2]]³): 12 w at 0, 6 w at 2)."""
    w = agnostic.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    (first,) = agnostic.autograd.grad((w[1:] * w[1:]).sum(), w, create_graph=True)
    (second,) = agnostic.autograd.grad(first.sum(), w)
    numpy.testing.assert_array_equal(second.cpu().numpy(), [0.0, 2.0, 2.0])
    (first,) = agnostic.autograd.grad((w[[0, 0, 2]] ** 3).sum(), w, create_graph=True)
    numpy.testing.assert_array_equal(first.detach().cpu().numpy(), [6.0, 0.0, 27.0])
    (second,) = agnostic.autograd.grad(first.sum(), w)
    numpy.testing.assert_array_equal(second.cpu().numpy(), [12.0, 0.0, 18.0])


@pytest.mark.parametrize("make", [
    lambda w: w + 1.0,                    # an elementwise op's plan
    lambda w: w.exp(),                    # a formula that reads the result
    lambda w: w.t(),                      # a view op
    lambda w: w.max(dim=0)[0],            # an op with several outputs
    lambda w: _Cube.apply(w),             # a custom Function
    lambda w: agnostic.nn.functional.linear(w, w),
], ids=["add", "exp", "view", "max", "function", "linear"])
def test_recorded_outputs_are_freed_when_dropped(device, make):
    """A recorded output is freed as soon as nothing refers to it (PyTorch's reference counting): its node must not
    hold it, or the output -> grad_fn -> output cycle would keep its memory until the garbage collector runs. The
    result a backward rule reads is made again from the arrays when it asks (``exp``'s gradient is its result)."""
    import gc
    import weakref

    w = agnostic.tensor([[1.0, 2.0], [3.0, 4.0]], device=device, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        output = make(w)
        node, reference = output.grad_fn, weakref.ref(output)
        del output
        assert reference() is None
        assert node is not None
    finally:
        gc.enable()
    y = w.exp()
    y.sum().backward()
    numpy.testing.assert_allclose(_values(w.grad), numpy.exp(_values(w)), rtol=1e-6)


def test_a_leaf_gradient_is_its_own_writable_memory(device):
    """As PyTorch's AccumulateGrad: ``.grad`` is laid out as its leaf and shares memory with no other leaf's
    gradient, nor with the gradient given to ``backward``: a sum's gradient reaches its input as a broadcast view of
    one number, which zero_grad(set_to_none=False) and clip_grad_norm_ must be able to write in place."""
    w = agnostic.ones(2, 3, device=device, requires_grad=True)
    w.sum().backward()
    assert w.grad.stride() == w.stride() == (3, 1)
    optimizer = agnostic.optim.SGD([w], lr=0.1)
    optimizer.zero_grad(set_to_none=False)
    numpy.testing.assert_array_equal(_values(w.grad), numpy.zeros((2, 3)))
    w.sum().backward()
    agnostic.nn.utils.clip_grad_norm_([w], 1.0)
    numpy.testing.assert_allclose(_values(w.grad), numpy.full((2, 3), 6 ** -0.5), rtol=1e-6)

    a = agnostic.zeros(3, device=device, requires_grad=True)
    b = agnostic.zeros(3, device=device, requires_grad=True)
    (a + b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()
    a.grad.add_(1)
    numpy.testing.assert_array_equal(_values(b.grad), [1.0, 1.0, 1.0])

    given = agnostic.full((3,), 2.0, device=device)
    c = agnostic.zeros(3, device=device, requires_grad=True)
    c.view(3).backward(given)
    assert c.grad.data_ptr() != given.data_ptr()
    given.zero_()
    numpy.testing.assert_array_equal(_values(c.grad), [2.0, 2.0, 2.0])

    m = agnostic.zeros(2, 3, device=device, requires_grad=True)
    (m.t() * 2).sum().backward()  # the gradient arrives transposed
    assert m.grad.stride() == (3, 1)
    numpy.testing.assert_array_equal(_values(m.grad), numpy.full((2, 3), 2.0))
