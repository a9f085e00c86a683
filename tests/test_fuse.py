"""agnostic.fuse: a function of elementwise ops traced once per signature and run as one kernel on CUDA (CuPy's
fusion), giving the dtypes and values of the same function run op by op."""

import warnings

import numpy
import pytest

import agnostic


def _host(tensor):
    return tensor.detach().cpu().numpy()


def _assert_as_eager(fused, eager):
    """The fused result is the eager one: exactly on the CPU (the same NumPy calls); on CUDA to the last bit or
    two, since the compiler may contract ``a * b + c`` inside one kernel into a fused multiply-add (one rounding
    where separate kernels round twice)."""
    assert fused.dtype is eager.dtype and fused.shape == eager.shape and fused.device == eager.device
    ours, theirs = _host(fused), _host(eager)
    if fused.device.type == "cpu" or not fused.dtype.is_floating_point:
        numpy.testing.assert_array_equal(ours, theirs)
    else:
        tolerance = 4 * float(numpy.finfo(theirs.dtype).eps)
        numpy.testing.assert_allclose(ours, theirs, rtol=tolerance, atol=tolerance)


def gelu_tanh(x):
    return 0.5 * x * (1 + agnostic.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def mixed(a, b, scale):
    return (a * scale + b).sigmoid(), agnostic.maximum(a, b).to(agnostic.float64), (a > b) == (b < a)


def softplus_like(x, beta):
    return agnostic.log1p(agnostic.exp(x * beta)) / beta - x.abs() * 0


FUNCTIONS = {"gelu_tanh": (gelu_tanh, 1), "mixed": (mixed, 3), "softplus_like": (softplus_like, 2)}


def _arguments(name, dtype, device, rng):
    shapes = {"gelu_tanh": [(3, 5)], "mixed": [(3, 5), (5,), 2.5], "softplus_like": [(4, 1, 3), 0.5]}[name]
    arguments = []
    for index, shape in enumerate(shapes):
        if isinstance(shape, float):
            arguments.append(shape)
            continue
        values = rng.standard_normal(shape) * 3
        second_dtype = agnostic.float32 if (name == "mixed" and index == 1) else dtype
        arguments.append(agnostic.tensor(values, dtype=second_dtype, device=device))
    return arguments


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_a_fused_function_gives_the_dtypes_and_values_of_its_ops_run_one_by_one(device, name, dtype):
    function, _ = FUNCTIONS[name]
    fused = agnostic.fuse(function)
    rng = numpy.random.default_rng(0)
    for _ in range(2):  # traced once, then run from the trace
        arguments = _arguments(name, getattr(agnostic, dtype), device, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no fallback to the unfused function
            got = fused(*arguments)
        expected = function(*arguments)
        got, expected = (got, expected) if isinstance(got, tuple) else ((got,), (expected,))
        assert len(got) == len(expected)
        for ours, theirs in zip(got, expected):
            _assert_as_eager(ours, theirs)


def test_integer_and_zero_dim_arguments_promote_as_the_ops_do(device):
    fused = agnostic.fuse(lambda a, b, k: (a * k + b) / 2)
    a = agnostic.arange(6, device=device).reshape(2, 3)
    for b, k in ((agnostic.tensor(1.5, device=device), 3), (agnostic.tensor(2, device=device), 2.0),
                 (agnostic.tensor([1, 2, 3], dtype=agnostic.int8, device=device), True)):
        _assert_as_eager(fused(a, b, k), (a * k + b) / 2)


def test_a_call_that_needs_gradients_runs_the_function_itself(device):
    fused = agnostic.fuse(gelu_tanh)
    x = agnostic.tensor([-1.0, 0.5, 2.0], device=device, requires_grad=True)
    fused(x).sum().backward()
    reference = x.detach().clone().requires_grad_()
    gelu_tanh(reference).sum().backward()
    numpy.testing.assert_array_equal(_host(x.grad), _host(reference.grad))


@pytest.mark.parametrize("function, says", [
    (lambda x: x.sum(), "sum is not an elementwise op"),
    (lambda x: x * 2 if x > 0 else x, "can't branch on its tensors' values"),
    (lambda x: x + _CAPTURED, "pass every tensor it reads as an argument"),
    (lambda x: 3, "returns what its elementwise ops compute"),
], ids=["reduction", "branch", "captured tensor", "constant"])
def test_what_cannot_be_fused_runs_unfused_after_one_warning(device, function, says):
    fused = agnostic.fuse(function)
    x = agnostic.tensor([1.5], device=device)
    with pytest.warns(UserWarning, match=f"agnostic.fuse runs .* unfused: .*{says}"):
        first = fused(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = fused(x)
    for result in (first, second):
        expected = function(x)
        if isinstance(expected, agnostic.Tensor):
            numpy.testing.assert_array_equal(_host(result), _host(expected))
        else:
            assert result == expected


_CAPTURED = agnostic.tensor(1.0)  # 0-dim: usable beside a tensor on any device, as in PyTorch


def test_operands_on_two_devices_are_refused_as_the_ops_refuse_them(cuda_device):
    fused = agnostic.fuse(lambda a, b: a + b)
    with pytest.raises(RuntimeError, match="same device"):
        fused(agnostic.ones(2), agnostic.ones(2, device=cuda_device))


def test_refusals_of_the_ops_are_theirs():
    fused = agnostic.fuse(lambda a, b: a - b)
    with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with two bool tensors is not supported"):
        fused(agnostic.tensor([True]), agnostic.tensor([False]))


def test_decorator_with_a_kernel_name_and_a_signature_per_dtype(device):
    @agnostic.fuse(kernel_name="scaled_square")
    def scaled_square(x, factor):
        return x * x * factor

    for dtype in (agnostic.float32, agnostic.int64, agnostic.float64):
        x = agnostic.arange(4, device=device).to(dtype)
        got = scaled_square(x, 2)
        assert got.dtype is dtype and _host(got).tolist() == [0, 2, 8, 18]
    assert scaled_square.__name__ == "scaled_square"
