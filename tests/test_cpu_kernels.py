"""The multi-core CPU kernels (numba, the ``fast-cpu`` extra): the same values as NumPy's ufuncs, bit for bit, on
the special values too; NumPy's results, and one warning naming the extra, where numba is missing; NumPy in a child
forked after the kernels ran."""

import multiprocessing
import os
import subprocess
import sys
import warnings

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from agnostic._backends import cpu_kernels, host_memory
from agnostic.optim import _fused

numba = pytest.importorskip("numba", reason="the fast-cpu extra (numba) is not installed")

FLOATS = [numpy.float32, numpy.float64]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, numpy.inf, -numpy.inf, numpy.nan, -numpy.nan, 1e-40, -1e-40, 3e38, -3e38,
           1e-310, -1e-310]


def _large(values, dtype):
    """``values`` repeated into an array just past the kernels' threshold (an odd count: a ragged last chunk)."""
    count = cpu_kernels.MIN_BYTES // numpy.dtype(dtype).itemsize + 17
    return numpy.resize(numpy.asarray(values, dtype), count)


def _assert_same_bits(result, expected):
    """Equal values, NaN where NaN, and the same sign of zero (NaN payloads may differ between instructions)."""
    assert result.dtype == expected.dtype and result.shape == expected.shape
    nan = numpy.isnan(expected)
    numpy.testing.assert_array_equal(numpy.isnan(result), nan)
    numpy.testing.assert_array_equal(result[~nan], expected[~nan])
    numpy.testing.assert_array_equal(numpy.signbit(result[~nan]), numpy.signbit(expected[~nan]))


def _special_arrays(data, dtype, count=1):
    drawn = st.lists(st.sampled_from(SPECIAL) | st.floats(allow_nan=True, width=numpy.dtype(dtype).itemsize * 8),
                     min_size=1, max_size=40)
    return [_large(data.draw(drawn), dtype) for _ in range(count)]


@pytest.fixture(autouse=True)
def kernels_loaded():
    """Every test here runs with numba's kernels in use (not NumPy's fallback)."""
    assert cpu_kernels.relu(_large([1.0], numpy.float32)) is not None
    assert cpu_kernels._kernels, "numba is installed but agnostic's kernels did not load"


@pytest.mark.parametrize("dtype", FLOATS)
@given(data=st.data())
def test_relu_and_its_gradient_equal_numpys_bit_for_bit(dtype, data):
    x, grad = _special_arrays(data, dtype, 2)
    _assert_same_bits(agnostic.relu(agnostic.from_numpy(x)).numpy(), numpy.maximum(x, dtype(0)))
    expected = numpy.where(x > 0, grad, dtype(0))
    _assert_same_bits(cpu_kernels.relu_gradient(grad, x), expected)
    y = agnostic.from_numpy(x).requires_grad_()
    agnostic.relu(y).backward(agnostic.from_numpy(grad))
    _assert_same_bits(y.grad.numpy(), expected)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("operator, ufunc", [("+", numpy.add), ("-", numpy.subtract), ("*", numpy.multiply),
                                             ("/", numpy.divide)])
@given(data=st.data())
def test_arithmetic_of_two_tensors_equals_numpys_bit_for_bit(dtype, operator, ufunc, data):
    x, y = _special_arrays(data, dtype, 2)
    a, b = agnostic.from_numpy(x), agnostic.from_numpy(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # division by zero gives inf/nan silently, as in PyTorch
        result = {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[operator]
    with numpy.errstate(all="ignore"):
        _assert_same_bits(result.numpy(), ufunc(x, y))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("operator, ufunc", [("+", numpy.add), ("-", numpy.subtract), ("*", numpy.multiply),
                                             ("/", numpy.divide)])
@given(data=st.data(), number=st.sampled_from(SPECIAL) | st.floats(allow_nan=True, width=32) | st.integers(-5, 5))
def test_arithmetic_of_a_tensor_and_a_number_equals_numpys_bit_for_bit(dtype, operator, ufunc, data, number):
    x, = _special_arrays(data, dtype)
    a = agnostic.from_numpy(x)
    assert cpu_kernels.binary("add", x, number) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = {"+": a + number, "-": a - number, "*": a * number, "/": a / number}[operator]
    with numpy.errstate(all="ignore"):
        _assert_same_bits(result.numpy(), ufunc(x, dtype(number)))


# (shape of a random array, the strided view of it taken): at least MIN_BYTES in float32, with at least as many rows
# as a machine has threads (up to 256: the copies share rows among the threads)
_STRIDED = {
    "transposed": ((256, 128, 10), lambda a: a.transpose(0, 2, 1)),
    "expanded": ((256, 1, 160), lambda a: numpy.broadcast_to(a, (256, 10, 160))),
    "sliced 4-D": ((256, 2, 10, 320), lambda a: a[:, :, :, ::2]),
    "sliced 2-D": ((400, 1200), lambda a: a[:, 100:1100]),
}


def _assert_numpys_result(result, expected):
    """NumPy's bits, laid out as NumPy lays out the result (its strides)."""
    _assert_same_bits(result, expected)
    assert result.strides == expected.strides


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", sorted(_STRIDED))
@pytest.mark.parametrize("name, ufunc", [("add", numpy.add), ("sub", numpy.subtract), ("mul", numpy.multiply),
                                         ("div", numpy.divide)])
def test_strided_operands_give_numpys_bits_and_layout(dtype, layout, name, ufunc, monkeypatch):
    """A transposed, expanded or sliced operand (2-D to 4-D) goes through the kernels, reordered as NumPy's result
    and copied dense on all cores where it still isn't, with NumPy's bits and NumPy's result layout: beside a dense
    operand, another strided one, or a number; relu too."""
    monkeypatch.setattr(cpu_kernels, "MIN_STRIDED_THREADS", 1)  # whatever this machine's count
    rng = numpy.random.default_rng(0)
    shape, view = _STRIDED[layout]
    strided = view(rng.standard_normal(shape).astype(dtype))
    dense = rng.standard_normal(strided.shape).astype(dtype)
    assert not strided.flags.c_contiguous and strided.nbytes >= cpu_kernels.MIN_BYTES
    for x, y in ((strided, dense), (dense, strided), (strided, strided)):
        _assert_numpys_result(cpu_kernels.binary(name, x, y), ufunc(x, y))
    _assert_numpys_result(cpu_kernels.binary(name, strided, 3), ufunc(strided, dtype(3)))
    _assert_numpys_result(cpu_kernels.relu(strided), numpy.maximum(strided, 0))
    if layout != "expanded":  # a read-only view: not a tensor's memory
        operator = {"add": "__add__", "sub": "__sub__", "mul": "__mul__", "div": "__truediv__"}[name]
        tensor = agnostic.from_numpy(strided)
        _assert_numpys_result(getattr(tensor, operator)(agnostic.from_numpy(dense)).numpy(), ufunc(strided, dense))
        _assert_numpys_result(getattr(tensor, operator)(tensor).numpy(), ufunc(strided, strided))


def test_strided_operands_keep_numpys_pass_on_fewer_threads_than_a_copy_takes(monkeypatch):
    """Below MIN_STRIDED_THREADS, operands that would need a copy go to NumPy; transposed operands of a transposed
    result need none, and take the kernels on any number of threads."""
    monkeypatch.setattr(cpu_kernels, "MIN_STRIDED_THREADS", numba.get_num_threads() + 1)
    rng = numpy.random.default_rng(0)
    shape, view = _STRIDED["sliced 2-D"]
    sliced = view(rng.standard_normal(shape).astype(numpy.float32))
    assert cpu_kernels.binary("add", sliced, sliced) is None and cpu_kernels.relu(sliced) is None
    dense = numpy.ascontiguousarray(sliced)
    assert cpu_kernels.binary("add", dense, dense) is not None
    _assert_numpys_result((agnostic.from_numpy(sliced) + agnostic.from_numpy(dense)).numpy(), sliced + dense)
    shape, view = _STRIDED["transposed"]
    transposed = view(rng.standard_normal(shape).astype(numpy.float32))
    _assert_numpys_result(cpu_kernels.binary("add", transposed, transposed), transposed + transposed)
    _assert_numpys_result(cpu_kernels.relu(transposed), numpy.maximum(transposed, 0))
    ordered = numpy.ascontiguousarray(transposed)  # C's order: a result in it would take a copy of ``transposed``
    assert cpu_kernels.binary("add", transposed, ordered) is None


def test_the_kernels_take_large_contiguous_floats_of_one_dtype_and_shape():
    large = _large([1.5, -2.0], numpy.float32)
    assert cpu_kernels.binary("add", large, large) is not None
    assert cpu_kernels.binary("add", large[::2], large[::2]) is None  # strided and 1-D: no strided copy
    assert cpu_kernels.binary("add", large[:8], large[:8]) is None  # too small to gain from threads
    ints = numpy.ones(cpu_kernels.MIN_BYTES, numpy.int32)
    assert cpu_kernels.binary("add", ints, ints) is None  # a dtype without a kernel
    assert cpu_kernels.binary("add", large, large.astype(numpy.float64)) is None  # dtypes differ
    assert cpu_kernels.binary("add", large, large[:-1]) is None  # broadcasting: NumPy's
    assert cpu_kernels.relu(large.reshape(-1, 1)[::2]) is None
    # where the kernels don't apply, agnostic's results are NumPy's
    numpy.testing.assert_array_equal((agnostic.from_numpy(large[::2]) * 2).numpy(), large[::2] * 2)
    numpy.testing.assert_array_equal(agnostic.relu(agnostic.from_numpy(ints)).numpy(), numpy.maximum(ints, 0))
    row = numpy.ones((1, large.size), numpy.float32)
    numpy.testing.assert_array_equal((agnostic.from_numpy(large) + agnostic.from_numpy(row)).numpy(), large + row)


def test_linear_layer_bias_add_equals_numpys():
    layer = agnostic.nn.Linear(300, 512)
    x = agnostic.randn(2048, 300)
    with agnostic.no_grad():
        out = layer(x).numpy()
    matrix = x.numpy() @ layer.weight.detach().numpy().T
    assert matrix.nbytes >= cpu_kernels.MIN_BYTES
    numpy.testing.assert_array_equal(out, matrix + layer.bias.detach().numpy())


# ----- row kernels (softmax, layer_norm) and stacks of small matrix products ----------------------------------------
def _rows(dtype, cols, seed=0):
    """A C-contiguous array of rows just past the row kernels' threshold, with an odd row count."""
    count = cpu_kernels.MIN_FUSED_BYTES // (numpy.dtype(dtype).itemsize * cols) + 3
    return numpy.random.default_rng(seed).standard_normal((count, cols)).astype(dtype) * 4


def _composed_softmax(x, logarithm):
    """NumPy's composed form, computed in float64 (the reference the kernels' float64 sums approach)."""
    with numpy.errstate(invalid="ignore"):  # inf - inf in the rows of infinities
        shifted = x.astype(numpy.float64) - x.max(axis=-1, keepdims=True)
        total = numpy.exp(shifted).sum(axis=-1, keepdims=True)
        return shifted - numpy.log(total) if logarithm else numpy.exp(shifted) / total


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("logarithm", [False, True])
@pytest.mark.parametrize("cols", [1, 7, 32, 1000])
def test_softmax_rows_and_their_gradient_match_numpys_composed_form(dtype, logarithm, cols):
    x, grad = _rows(dtype, cols), _rows(dtype, cols, seed=1)
    x[0, 0], x[1, :] = numpy.nan, -numpy.inf  # a NaN spreads over its row; a row of -inf gives NaN, as NumPy's
    x[2, 0] = numpy.inf
    result = cpu_kernels.softmax_rows(x, logarithm)
    expected = _composed_softmax(x, logarithm)
    assert result is not None and result.dtype == dtype
    tolerance = 1e-6 if dtype == numpy.float32 else 1e-13
    numpy.testing.assert_allclose(result, expected, rtol=tolerance, atol=tolerance)
    y = result.astype(numpy.float64)
    g = grad.astype(numpy.float64)
    expected_grad = g - numpy.exp(y) * g.sum(-1, keepdims=True) if logarithm else y * (g - (g * y).sum(-1, keepdims=True))
    gradient = cpu_kernels.softmax_backward_rows(grad, result, logarithm)
    numpy.testing.assert_allclose(gradient, expected_grad, rtol=tolerance * 10, atol=tolerance * 10)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_rows_and_their_gradient_match_pytorch(dtype, affine):
    torch = pytest.importorskip("torch")
    x, grad = _rows(dtype, 96), _rows(dtype, 96, seed=1)
    rng = numpy.random.default_rng(2)
    weight, bias = (rng.standard_normal(96).astype(dtype) for _ in range(2)) if affine else (None, None)
    tensors = [torch.from_numpy(a.copy()).requires_grad_() if a is not None else None for a in (x, weight, bias)]
    expected = torch.nn.functional.layer_norm(tensors[0], (96,), tensors[1], tensors[2], eps=1e-5)
    expected.backward(torch.from_numpy(grad))
    out, mean, rstd = cpu_kernels.layer_norm_rows(x, weight, bias, 1e-5)
    tolerance = 2e-5 if dtype == numpy.float32 else 1e-12
    numpy.testing.assert_allclose(out, expected.detach().numpy(), rtol=tolerance, atol=tolerance)
    grad_input, grad_weight, grad_bias = cpu_kernels.layer_norm_backward_rows(grad, x, weight, mean, rstd)
    numpy.testing.assert_allclose(grad_input, tensors[0].grad.numpy(), rtol=tolerance * 10, atol=tolerance * 10)
    assert grad_weight.dtype == grad_bias.dtype == dtype
    normalized = (x.astype(numpy.float64) - x.mean(1, keepdims=True, dtype=numpy.float64)) / numpy.sqrt(
        x.var(1, keepdims=True, dtype=numpy.float64) + 1e-5)
    # the parameters' gradients whether or not the layer has them: summed in float64, within a float's rounding
    numpy.testing.assert_allclose(grad_weight, (grad * normalized).sum(0), rtol=tolerance, atol=tolerance * 10)
    numpy.testing.assert_allclose(grad_bias, grad.astype(numpy.float64).sum(0), rtol=tolerance, atol=tolerance * 10)
    if affine:
        numpy.testing.assert_allclose(grad_weight, tensors[1].grad.numpy(), rtol=1e-4, atol=1e-3)
        numpy.testing.assert_allclose(grad_bias, tensors[2].grad.numpy(), rtol=1e-4, atol=1e-3)


def test_agnostic_layer_norm_and_log_softmax_through_the_row_kernels_match_pytorch():
    torch = pytest.importorskip("torch")
    x = _rows(numpy.float32, 64)
    cotangent = _rows(numpy.float32, 64, seed=3)
    ours = agnostic.from_numpy(x.copy()).requires_grad_()
    norm = agnostic.nn.LayerNorm(64)
    agnostic.log_softmax(norm(ours), dim=-1).backward(agnostic.from_numpy(cotangent))
    theirs = torch.from_numpy(x.copy()).requires_grad_()
    torch_norm = torch.nn.LayerNorm(64)
    expected = torch.log_softmax(torch_norm(theirs), -1)
    expected.backward(torch.from_numpy(cotangent))
    with agnostic.no_grad():
        numpy.testing.assert_allclose(agnostic.log_softmax(norm(ours), dim=-1).numpy(), expected.detach().numpy(),
                                      rtol=1e-5, atol=1e-5)
    numpy.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-4)
    numpy.testing.assert_allclose(norm.weight.grad.numpy(), torch_norm.weight.grad.numpy(), rtol=1e-3, atol=1e-3)


def test_row_kernels_decline_what_they_dont_take():
    x = _rows(numpy.float32, 32)
    assert cpu_kernels.softmax_rows(x[:4], False) is None  # too small to gain from threads
    assert cpu_kernels.softmax_rows(numpy.asfortranarray(x), False) is None  # not C-contiguous
    assert cpu_kernels.softmax_rows(x.astype(numpy.float16), False) is None
    assert cpu_kernels.layer_norm_rows(x, numpy.ones(31, numpy.float32), None, 1e-5) is None  # wrong weight length
    assert cpu_kernels.softmax_backward_rows(x.astype(numpy.float64), x, False) is None  # dtypes differ


def _stack(shape, dtype, transposed, seed):
    rng = numpy.random.default_rng(seed)
    if not transposed:
        return rng.standard_normal(shape).astype(dtype)
    return rng.standard_normal(shape[:-2] + shape[:-3:-1]).astype(dtype).swapaxes(-1, -2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layouts", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("shape", [((512, 32, 32), (512, 32, 16)), ((4, 600, 5, 8), (4, 600, 8, 12))])
def test_batched_matmul_equals_numpys_loop(dtype, layouts, shape):
    a, b = _stack(shape[0], dtype, layouts[0], 0), _stack(shape[1], dtype, layouts[1], 1)
    result = cpu_kernels.batched_matmul(a, b)
    assert result is not None and result.shape == numpy.matmul(a, b).shape and result.dtype == dtype
    tolerance = 1e-5 if dtype == numpy.float32 else 1e-12
    numpy.testing.assert_allclose(result, numpy.matmul(a, b), rtol=tolerance, atol=tolerance)
    # and through agnostic's matmul, with its gradients
    ta, tb = agnostic.from_numpy(a).requires_grad_(), agnostic.from_numpy(b).requires_grad_()
    (ta @ tb).sum().backward()
    numpy.testing.assert_allclose(ta.grad.numpy(), numpy.ones(result.shape, dtype) @ b.swapaxes(-1, -2),
                                  rtol=tolerance, atol=tolerance)


def test_batched_matmul_declines_what_numpys_loop_does_better():
    small = numpy.ones((4, 8, 8), numpy.float32)
    big = numpy.ones((64, 128, 128), numpy.float32)
    assert cpu_kernels.batched_matmul(small, small) is None  # too little work for threads
    assert cpu_kernels.batched_matmul(big, big) is None  # large products: BLAS's own threads
    stack = numpy.ones((1024, 32, 32), numpy.float32)
    assert cpu_kernels.batched_matmul(stack, stack[:1]) is None  # broadcast batch
    assert cpu_kernels.batched_matmul(stack, stack.astype(numpy.float64)) is None
    assert cpu_kernels.batched_matmul(stack[0], stack[0]) is None  # 2-D: BLAS


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("view", [
    lambda x: x.reshape(64, 64, 96)[:, :, 32:],  # a slice of the last axis (attention's chunk of a projection)
    lambda x: x.reshape(64, 48, 2, 64).transpose(1, 0, 3, 2),
    lambda x: x.reshape(4096, 96).T,
], ids=["sliced-3d", "transposed-4d", "transposed-2d"])
def test_strided_copies_and_concatenations_equal_numpys(dtype, view):
    source = view(numpy.random.default_rng(0).standard_normal(64 * 64 * 96).astype(dtype))
    assert source.nbytes >= cpu_kernels.MIN_BYTES or dtype == numpy.float32
    copied = cpu_kernels.contiguous(source)
    if source.nbytes >= cpu_kernels.MIN_BYTES:
        assert copied is not None and copied.flags.c_contiguous
        numpy.testing.assert_array_equal(copied, source)
    tensor = agnostic.from_numpy(source)
    numpy.testing.assert_array_equal(tensor.reshape(-1).numpy(), source.reshape(-1))
    for axis in range(source.ndim):
        pieces = [source, source[(slice(None),) * axis + (slice(1, None),)]]
        numpy.testing.assert_array_equal(agnostic.cat([agnostic.from_numpy(p) for p in pieces], axis).numpy(),
                                         numpy.concatenate(pieces, axis))


def test_a_reshape_that_can_be_a_view_stays_one():
    source = numpy.zeros((4096, 96), numpy.float32)[:, :64]
    reshaped = agnostic.from_numpy(source).reshape(4096, 8, 8)
    assert numpy.shares_memory(reshaped.numpy(), source)


def _printed_by_child(code, environment, unset):
    """What ``code`` prints, split into words, in a Python child with ``environment`` and without ``unset``."""
    env = {key: value for key, value in os.environ.items() if key not in unset}
    env.update(environment, PYTHONPATH=os.path.dirname(os.path.dirname(agnostic.__file__)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def _threading_layer_in_child(environment, first=""):
    code = f"""{first}
import os, numpy, agnostic
from agnostic._backends import cpu_kernels, host_memory
cpu_kernels.relu(numpy.ones(1 << 20, numpy.float32))
print(cpu_kernels._kernels.numba.threading_layer(), os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"))
"""
    return _printed_by_child(code, environment, unset=("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_THREADING_LAYER"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="OpenMP's load is checked on Linux only")
def test_the_threads_are_passive_openmp_where_agnostic_loads_it_else_the_workqueue():
    layer, policy, spin_count = _threading_layer_in_child({})
    # set while OpenMP loads, then removed (children don't inherit them); workqueue: where numba has no OpenMP layer
    assert layer in ("omp", "workqueue") and policy == spin_count == "None"
    assert _threading_layer_in_child({"GOMP_SPINCOUNT": "5"})[1:] == ["None", "5"]  # the user's own count stays
    # the user's spinning policy, or an OpenMP runtime already loaded with a policy agnostic can't know
    assert _threading_layer_in_child({"OMP_WAIT_POLICY": "active"}) == ["workqueue", "active", "None"]
    layer, *_ = _threading_layer_in_child({}, first="""
import ctypes
try:
    ctypes.CDLL("libgomp.so.1")
except OSError:  # no GNU OpenMP here: numba has no omp layer either
    pass""")
    assert layer == "workqueue"
    assert _threading_layer_in_child({"NUMBA_THREADING_LAYER": "workqueue"})[0] == "workqueue"


# ----- optimizer updates: numba's loop and the whole-array evaluation of one per-element function ----------------
_UPDATES = {
    _fused.SGD: [(dict(weight_decay=0.1, momentum=0.9, one_minus_dampening=0.7, neg_lr=-0.1),
                  dict(maximize=maximize, nesterov=nesterov, first=first))
                 for maximize in (0, 1) for nesterov in (0, 1) for first in (0, 1)]
    + [(dict(weight_decay=0.0, momentum=0.0, one_minus_dampening=1.0, neg_lr=-0.1),
        dict(maximize=0, nesterov=0, first=1))],
    _fused.ADAM: [(dict(weight_decay=weight_decay, decay=0.99, one_minus_beta1=one_minus_beta1,
                        beta1_complement=1 - one_minus_beta1, beta2=0.9, one_minus_beta2=0.1,
                        bias_correction2_sqrt=0.3, eps=1e-8, neg_step_size=-0.01),
                   dict(maximize=maximize, decoupled=decoupled, amsgrad=amsgrad))
                  for weight_decay in (0.0, 0.1) for one_minus_beta1 in (0.1, 0.7)
                  for maximize in (0, 1) for decoupled in (0, 1) for amsgrad in (0, 1)],
    _fused.RMSPROP: [(dict(weight_decay=0.1, alpha=0.9, one_minus_alpha=0.1, alpha_complement=0.9, eps=1e-8,
                           momentum=momentum, neg_lr=-0.01), dict(maximize=maximize, centered=centered))
                     for momentum in (0.0, 0.5) for maximize in (0, 1) for centered in (0, 1)],
}
_CASES = [(update, scalars, flags) for update, cases in _UPDATES.items() for scalars, flags in cases]


@pytest.mark.parametrize("update", list(_UPDATES), ids=lambda update: update.name)
def test_each_update_function_unpacks_what_its_cuda_kernel_declares(update):
    code = update.element.__code__
    assert code.co_varnames[:code.co_argcount] == ("i", *update.lists, "scalars", "flags")
    # its first locals are the scalars and flags, unpacked in the kernel's order
    names = (*update.scalars, *update.flags)
    assert code.co_varnames[code.co_argcount:code.co_argcount + len(names)] == names


def _update_arrays(update, scalars, flags, dtype, seed):
    rng = numpy.random.default_rng(seed)
    count = cpu_kernels.MIN_FUSED_BYTES // numpy.dtype(dtype).itemsize + 5
    arrays = [numpy.asarray(rng.standard_normal(count), dtype) for _ in update.lists]
    for index in range(2, len(arrays)):  # averages of squares stay positive, above the squared mean
        arrays[index] = numpy.abs(arrays[index]) + dtype(1)
    if update is _fused.RMSPROP:
        arrays[4] *= dtype(0.01)
    unused = {"momentum_buffer": scalars.get("momentum", 1) == 0,
              "max_exp_avg_sq": not flags.get("amsgrad", 1),
              "grad_avg": not flags.get("centered", 1)}
    return [None if unused.get(name) else array for name, array in zip(update.lists, arrays)]


@pytest.mark.parametrize("everyone", [False, True], ids=["calling-thread", "all-threads"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("update, scalars, flags", _CASES, ids=lambda value: getattr(value, "name", ""))
def test_numbas_loop_equals_the_whole_array_update_bit_for_bit(update, scalars, flags, dtype, everyone, monkeypatch):
    """On the calling thread alone (below the parallel threshold) and on all threads, the loop gives NumPy's
    whole-array update bit for bit, and leaves the kernels' thread count as it was."""
    monkeypatch.setattr(cpu_kernels, "_parallel_update", lambda threads: 0 if everyone else float("inf"))
    threads = numba.get_num_threads()
    arrays = _update_arrays(update, scalars, flags, dtype, seed=len(scalars) + sum(flags.values()))
    typed_scalars = tuple(dtype(scalars[name]) for name in update.scalars)
    typed_flags = tuple(flags[name] for name in update.flags)
    by_numpy = tuple(None if a is None else a.copy() for a in arrays)
    update.element(..., *by_numpy, typed_scalars, typed_flags)
    assert cpu_kernels.update(update.element, arrays, typed_scalars, typed_flags)
    assert numba.get_num_threads() == threads
    for ours, theirs in zip(arrays, by_numpy):
        if ours is not None:
            numpy.testing.assert_array_equal(ours, theirs)


def test_updates_take_every_thread_from_a_size_that_falls_with_the_thread_count(monkeypatch):
    """From MIN_UPDATE_BYTES an update is one compiled pass; on the calling thread alone up to 4 MiB on 2 threads,
    1 MiB on 4, MIN_FUSED_BYTES on 8 or more (one thread: always alone)."""
    assert [cpu_kernels._parallel_update(threads) for threads in (1, 2, 4, 8, 16)] == \
        [float("inf"), 4 << 20, 1 << 20, cpu_kernels.MIN_FUSED_BYTES, cpu_kernels.MIN_FUSED_BYTES]
    kernels = cpu_kernels._loaded()
    asked = []
    monkeypatch.setattr(cpu_kernels, "_loops", {_fused.SGD.element: lambda *args: asked.append(args[-1])})
    monkeypatch.setattr(kernels.numba, "get_num_threads", lambda: 2)
    scalars, flags = (numpy.float32(0.1),) * 4, (0, 0, 0)
    for count in (cpu_kernels.MIN_UPDATE_BYTES // 4 - 1, cpu_kernels.MIN_UPDATE_BYTES // 4, (4 << 20) // 4 - 1,
                  (4 << 20) // 4):
        done = cpu_kernels.update(_fused.SGD.element, [numpy.zeros(count, numpy.float32)] * 3, scalars, flags)
        asked.append(done)
    assert asked == [False, 1, True, 1, True, 2, True]


def test_an_update_the_kernel_cannot_take_is_left_to_numpy():
    arrays = _update_arrays(_fused.SGD, dict(momentum=0.9), dict(first=0), numpy.float32, seed=0)
    scalars, flags = (numpy.float32(0.1),) * 4, (0, 0, 0)
    assert not cpu_kernels.update(_fused.SGD.element, [a[::2] for a in arrays], scalars, flags)  # strided
    assert not cpu_kernels.update(_fused.SGD.element, [a[:100] for a in arrays], scalars, flags)  # small


def test_large_parameters_train_as_pytorch_does():
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(3)
    init = rng.standard_normal((300, 400)).astype(numpy.float32)
    grads = [rng.standard_normal(init.shape).astype(numpy.float32) for _ in range(3)]
    ours = agnostic.nn.Parameter(agnostic.from_numpy(init.copy()))
    theirs = torch.nn.Parameter(torch.from_numpy(init.copy()))
    optimizers = (agnostic.optim.Adam([ours], lr=1e-2, amsgrad=True), torch.optim.Adam([theirs], lr=1e-2,
                                                                                      amsgrad=True))
    for grad in grads:
        ours.grad, theirs.grad = agnostic.from_numpy(grad.copy()), torch.from_numpy(grad.copy())
        for optimizer in optimizers:
            optimizer.step()
    numpy.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6, atol=1e-6)


# ----- threads, fork, and no numba --------------------------------------------------------------------------------
def test_set_num_threads_sets_the_kernels_threads():
    before = agnostic.get_num_threads()
    try:
        agnostic.set_num_threads(1)
        assert numba.get_num_threads() == 1
        x = _large([-1.0, 2.0], numpy.float32)
        numpy.testing.assert_array_equal(agnostic.relu(agnostic.from_numpy(x)).numpy(), numpy.maximum(x, 0))
    finally:
        agnostic.set_num_threads(before)
    assert numba.get_num_threads() == min(before, numba.config.NUMBA_NUM_THREADS)


def _relu_in_child(queue):
    x = _large([-1.0, 2.0], numpy.float32)
    queue.put((cpu_kernels._kernels, bool((agnostic.relu(agnostic.from_numpy(x)).numpy() == numpy.maximum(x, 0))
                                          .all())))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_child_forked_after_the_kernels_ran_uses_numpy():
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_relu_in_child, args=(queue,))
    child.start()
    kernels, correct = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0 and kernels is False and correct


def test_without_numba_results_are_numpys_and_one_warning_names_the_extra():
    code = """
import sys, warnings
sys.modules["numba"] = None  # as if not installed
import numpy, agnostic
x = agnostic.randn(1 << 20)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    results = [agnostic.relu(x), x + x, x * x]
    optimizer = agnostic.optim.Adam([agnostic.nn.Parameter(x.clone())])
    optimizer.param_groups[0]["params"][0].grad = x.clone()
    optimizer.step()
a = x.numpy()
assert numpy.array_equal(results[0].numpy(), numpy.maximum(a, 0))
assert numpy.array_equal(results[1].numpy(), a + a) and numpy.array_equal(results[2].numpy(), a * a)
print(len(caught)); print(caught[0].message)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(agnostic.__file__))})
    assert result.returncode == 0, result.stderr
    count, message = result.stdout.strip().split("\n", 1)
    assert count == "1"
    assert "numba is not installed" in message and 'pip install "agnostic-tensor[fast-cpu]"' in message


# ----- OpenBLAS's idle threads ------------------------------------------------------------------------------------
def _openblas_wait_in_child(environment, first=""):
    code = f"""{first}
import os, agnostic
print(agnostic._openblas_wait.shortened, os.environ.get("OPENBLAS_THREAD_TIMEOUT"))
"""
    return _printed_by_child(code, environment, unset=("OPENBLAS_THREAD_TIMEOUT", "AGNOSTIC_OPENBLAS_TUNING"))


def test_import_agnostic_shortens_openblas_polling_only_where_numpy_is_not_loaded_yet():
    assert _openblas_wait_in_child({}) == ["True", "None"]  # set while NumPy loaded, then removed
    assert _openblas_wait_in_child({}, first="import numpy") == ["False", "None"]  # too late: left alone
    assert _openblas_wait_in_child({"OPENBLAS_THREAD_TIMEOUT": "20"}) == ["False", "20"]  # the user's own
    assert _openblas_wait_in_child({"AGNOSTIC_OPENBLAS_TUNING": "0"}) == ["False", "None"]


def _ulps(result, exact):
    """|result - exact| in units of the float32 spacing at ``exact`` (float64 reference values)."""
    spacing = numpy.spacing(numpy.abs(exact).astype(numpy.float32)).astype(numpy.float64)
    return numpy.abs(result.astype(numpy.float64) - exact) / spacing


def test_the_lstm_cells_tanh_is_within_7_ulp_of_the_exact_one():
    from agnostic._backends import numba_kernels

    @numba.njit(error_model="numpy")
    def tanh_all(x, out):
        for i in range(x.size):
            out[i] = numba_kernels.tanh32(x[i])

    rng = numpy.random.default_rng(0)
    magnitudes = numpy.concatenate([numpy.linspace(0, 12, 2_000_001), 10.0 ** rng.uniform(-30, 1.5, 1_000_000)])
    x = numpy.concatenate([magnitudes, -magnitudes]).astype(numpy.float32)
    result = numpy.empty_like(x)
    tanh_all(x, result)
    assert _ulps(result, numpy.tanh(x.astype(numpy.float64))).max() <= 7
    special = numpy.array([numpy.nan, numpy.inf, -numpy.inf, 0.0, -0.0, 100.0, -100.0], numpy.float32)
    result = numpy.empty_like(special)
    tanh_all(special, result)
    _assert_same_bits(result, numpy.array([numpy.nan, 1, -1, 0.0, -0.0, 1, -1], numpy.float32))


def _lstm_step(batch, size, seed=0):
    rng = numpy.random.default_rng(seed)
    arrays = {"projected": rng.standard_normal((batch, 4 * size)) * 3,
              "recurrent": rng.standard_normal((batch, 4 * size))}
    for name in ("cell_prev", "grad_hidden", "grad_output", "grad_cell"):
        arrays[name] = rng.standard_normal((batch, size))
    return {name: array.astype(numpy.float32) for name, array in arrays.items()}


@pytest.mark.parametrize("batch, size", [(1, 1), (3, 5), (64, 256)])
def test_the_lstm_cell_kernels_match_the_numpy_forms(batch, size):
    from agnostic._backends import cpu_ops
    step = _lstm_step(batch, size)
    results = {}
    for name, forward, backward in (("numpy", cpu_ops._lstm_cell_forward, cpu_ops._lstm_cell_backward),
                                    ("kernel", cpu_kernels.lstm_cell_forward, cpu_kernels.lstm_cell_backward)):
        gates = numpy.full((batch, 4 * size), numpy.nan, numpy.float32)
        cell, hidden, grad_cell_prev = (numpy.full((batch, size), numpy.nan, numpy.float32) for _ in range(3))
        grad_gates = numpy.full_like(gates, numpy.nan)
        assert forward(step["projected"], step["recurrent"], step["cell_prev"], gates, cell, hidden) in (None, True)
        assert backward(gates, cell, step["cell_prev"], step["grad_hidden"], step["grad_output"], step["grad_cell"],
                        grad_cell_prev, grad_gates) in (None, True)
        results[name] = gates, cell, hidden, grad_cell_prev, grad_gates
    for numpys, kernels in zip(results["numpy"], results["kernel"]):
        numpy.testing.assert_allclose(kernels, numpys, rtol=2e-6, atol=2e-6)


def test_the_lstm_cell_kernels_take_float32_only():
    from agnostic._backends import cpu_ops
    step = {name: array.astype(numpy.float64) for name, array in _lstm_step(2, 3).items()}
    gates, cell, hidden = numpy.empty((2, 12)), numpy.empty((2, 3)), numpy.empty((2, 3))
    assert cpu_kernels.lstm_cell_forward(step["projected"], step["recurrent"], step["cell_prev"], gates, cell,
                                         hidden) is False
    cpu_ops.lstm_forward_steps(step["projected"][None], step["cell_prev"], step["cell_prev"],
                               numpy.ones((12, 3)), numpy.empty((2, 12)), gates[None], cell[None], hidden[None], False)
    expected = numpy.tanh(step["projected"] + step["cell_prev"] @ numpy.ones((3, 12)))[:, 6:9]  # the candidate gate
    numpy.testing.assert_allclose(gates[:, 6:9], expected, rtol=1e-15)  # float64: NumPy's own tanh


def _lstm_layer(batch, size, steps=5, seed=1):
    """A float32 LSTM layer direction's arrays: input projection, first states, weight and output gradients."""
    rng = numpy.random.default_rng(seed)
    arrays = {"projected": rng.standard_normal((steps, batch, 4 * size)) * 2,
              "first_hidden": rng.standard_normal((batch, size)), "first_cell": rng.standard_normal((batch, size)),
              "weight_hh": rng.standard_normal((4 * size, size)) / numpy.sqrt(size),
              "grad_outputs": rng.standard_normal((steps, batch, size)),
              "grad_hidden": rng.standard_normal((batch, size)), "grad_cell": rng.standard_normal((batch, size))}
    return {name: array.astype(numpy.float32) for name, array in arrays.items()}


def _run_lstm_layer(layer, reverse):
    """Forward and backward of ``_lstm_layer``'s layer through ``cpu_ops``: every array they write."""
    from agnostic._backends import cpu_ops
    steps, batch, width = layer["projected"].shape
    size = width // 4
    written = {"gates": numpy.full((steps, batch, width), numpy.nan, numpy.float32),
               "cells": numpy.full((steps, batch, size), numpy.nan, numpy.float32),
               "outputs": numpy.full((steps, batch, size), numpy.nan, numpy.float32),
               "grad_gates": numpy.full((steps, batch, width), numpy.nan, numpy.float32),
               "grad_hidden": layer["grad_hidden"].copy(), "grad_cell": layer["grad_cell"].copy()}
    cpu_ops.lstm_forward_steps(layer["projected"], layer["first_hidden"], layer["first_cell"], layer["weight_hh"],
                               numpy.empty((batch, width), numpy.float32), written["gates"], written["cells"],
                               written["outputs"], reverse)
    cpu_ops.lstm_backward_steps(written["gates"], written["cells"], layer["first_cell"], layer["weight_hh"],
                                layer["grad_outputs"], written["grad_hidden"], written["grad_cell"],
                                numpy.empty((batch, size), numpy.float32), written["grad_gates"], reverse)
    return written


@pytest.mark.parametrize("partition", ["units", "rows"])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("batch, size, threads", [(1, 1, 1), (3, 5, 2), (6, 9, 2), (9, 70, 2), (9, 70, 1),
                                                 (64, 256, 16)])
def test_the_lstm_layer_kernels_match_the_step_by_step_layer(batch, size, threads, reverse, partition, monkeypatch):
    """One kernel for every step, each thread owning a slice of the hidden units (or of the batch rows), gives each
    step's BLAS product and cell pass's values: every slicing, from four units (one row) per thread to all on one,
    sizes that fill no whole block of four weight rows or four batch rows, and reductions longer than one chunk
    (4 * 256 > ``_CHUNK``)."""
    layer = _lstm_layer(batch, size)
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", 0)  # no weight is small enough: the steps' path
    stepwise = _run_lstm_layer(layer, reverse)
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", 1 << 30)
    monkeypatch.setattr(cpu_kernels, "core_cache_bytes", lambda: 1 << 40 if partition == "rows" else 0)
    from agnostic._backends import numba_kernels
    chosen = {}
    for name in ("lstm_forward_rows", "lstm_forward_sequence", "lstm_backward_rows", "lstm_backward_sequence"):
        kernel = getattr(numba_kernels, name)
        monkeypatch.setattr(numba_kernels, name, lambda *arrays, kernel=kernel, name=name:
                            chosen.setdefault(name, kernel(*arrays)))
    previous_threads = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        sliced = _run_lstm_layer(layer, reverse)
    finally:
        numba.set_num_threads(previous_threads)
    kind = "rows" if partition == "rows" and batch >= min(threads, numba.config.NUMBA_NUM_THREADS) else "sequence"
    assert sorted(chosen) == [f"lstm_backward_{kind}", f"lstm_forward_{kind}"]
    for name, expected in stepwise.items():
        assert not numpy.isnan(sliced[name]).any(), name
        numpy.testing.assert_allclose(sliced[name], expected, rtol=1e-4, atol=1e-5, err_msg=name)


def _off_a_cache_line(array, offset):
    """A copy of ``array`` whose data starts ``offset`` bytes past a cache line."""
    raw = numpy.empty(array.nbytes + 128, numpy.uint8)
    start = -raw.__array_interface__["data"][0] % 64 + offset
    copy = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


@pytest.mark.parametrize("offset", [4, 16, 32])
def test_the_lstm_layer_kernels_give_the_same_values_off_cache_lines(offset, monkeypatch):
    """The kernels take aligned copies of what their products read (``host_memory.aligned``) and write any
    layout: arrays starting off a cache line give the aligned arrays' values, bit for bit."""
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", 1 << 30)
    layer = _lstm_layer(9, 70)
    expected = _run_lstm_layer(layer, False)
    shifted = _run_lstm_layer({name: _off_a_cache_line(array, offset) for name, array in layer.items()}, False)
    for name, values in expected.items():
        numpy.testing.assert_array_equal(shifted[name], values, err_msg=name)


def test_the_lstm_layer_kernels_take_float32_weights_that_fit_the_threads_caches(monkeypatch):
    """Where a thread's share of the hidden-to-gates weight exceeds ``LSTM_MAX_WEIGHT_SHARE``, numba is missing or
    the layer is float64, the steps' path runs."""
    size = 64
    weight = numpy.empty((4 * size, size), numpy.float32)
    slices = min(numba.get_num_threads(), size // 4)
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", -(-weight.nbytes // slices))
    assert cpu_kernels._lstm_sequence_kernels(weight) is not None
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", -(-weight.nbytes // slices) - 1)
    assert cpu_kernels._lstm_sequence_kernels(weight) is None
    monkeypatch.undo()
    assert cpu_kernels._lstm_sequence_kernels(weight.astype(numpy.float64)) is None
    monkeypatch.setattr(cpu_kernels, "_lstm_kernels", lambda weight: None)
    assert cpu_kernels._lstm_sequence_kernels(weight) is None


def test_the_lstm_threads_share_the_batch_rows_where_each_gets_one_and_the_weight_fits_a_cores_cache(monkeypatch):
    """Slices of the batch rows (no barrier a step) where there are at least as many rows as threads and the whole
    hidden-to-gates weight fits a core's second-level cache; else slices of the hidden units (0)."""
    from agnostic._backends import numba_kernels
    threads = numba.get_num_threads()
    weight = numpy.empty((1024, 256), numpy.float32)  # 1 MiB
    monkeypatch.setattr(cpu_kernels, "core_cache_bytes", lambda: 1 << 20)
    assert cpu_kernels._lstm_row_groups(numba_kernels, weight, threads) == threads
    assert cpu_kernels._lstm_row_groups(numba_kernels, weight, 64 * threads) == threads
    if threads > 1:
        assert cpu_kernels._lstm_row_groups(numba_kernels, weight, threads - 1) == 0
    monkeypatch.setattr(cpu_kernels, "core_cache_bytes", lambda: (1 << 20) - 1)
    assert cpu_kernels._lstm_row_groups(numba_kernels, weight, 64 * threads) == 0


def test_the_core_cache_size_is_the_second_level_data_cache_linux_describes(tmp_path):
    """``core_cache_bytes`` reads the level-2 data or unified cache of Linux's description, in K, M or bytes, and
    says 0 where there is none or no description."""
    def describe(folder, caches):
        for index, (level, kind, size) in enumerate(caches):
            entry = folder / f"index{index}"
            entry.mkdir(parents=True)
            for name, value in (("level", level), ("type", kind), ("size", size)):
                (entry / name).write_text(f"{value}\n")
        return str(folder)
    server = describe(tmp_path / "server", [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"),
                                            (3, "Unified", "320M")])
    assert cpu_kernels.core_cache_bytes(server) == 2 << 20
    assert cpu_kernels.core_cache_bytes(describe(tmp_path / "bytes", [(2, "Data", "1048576")])) == 1 << 20
    assert cpu_kernels.core_cache_bytes(describe(tmp_path / "mega", [(2, "Unified", "1M")])) == 1 << 20
    assert cpu_kernels.core_cache_bytes(describe(tmp_path / "l1", [(1, "Data", "32K"), (2, "Instruction", "1M")])) == 0
    assert cpu_kernels.core_cache_bytes(str(tmp_path / "missing")) == 0
    assert cpu_kernels.core_cache_bytes(describe(tmp_path / "odd", [(2, "Unified", "lots")])) == 0


@pytest.mark.parametrize("make", [
    lambda: numpy.random.default_rng(0).standard_normal((1024, 256)).astype(numpy.float32).T,  # large: all cores
    lambda: numpy.arange(15, dtype=numpy.float32).reshape(3, 5).T,  # small: NumPy's copy
    lambda: numpy.arange(40, dtype=numpy.float32).view(numpy.uint8)[4:-4].view(numpy.float32),  # 4 bytes in
], ids=["transposed, large", "transposed, small", "offset"])
def test_aligned_copies_what_is_strided_or_off_a_cache_line(make):
    """What the LSTM kernels read (the transposed weight of the backward...): dense, equal, on a cache line."""
    source = make()
    copy = cpu_kernels.aligned(source)
    assert copy is not source and host_memory.is_aligned(copy)
    numpy.testing.assert_array_equal(copy, source)
    assert cpu_kernels.aligned(copy) is copy


class _HeldOnce:
    """``_one_at_a_time`` as numba's workqueue layer has it (a lock), failing where a holder takes it again."""

    held = False

    def __enter__(self):
        assert not self.held, "the kernels' lock was taken by its own holder: a deadlock under the workqueue layer"
        self.held = True

    def __exit__(self, *exc_info):
        self.held = False


def test_no_kernel_call_takes_the_workqueue_lock_it_holds(monkeypatch):
    """Under numba's workqueue layer (where an OpenMP runtime was loaded first, PyTorch's...), kernel calls take a
    lock one at a time; a copy made while holding it (the LSTM backward's transposed weight) would wait forever."""
    monkeypatch.setattr(cpu_kernels, "_one_at_a_time", _HeldOnce())
    monkeypatch.setattr(cpu_kernels, "LSTM_MAX_WEIGHT_SHARE", 1 << 30)
    monkeypatch.setattr(cpu_kernels, "MIN_STRIDED_THREADS", 1)
    written = _run_lstm_layer(_lstm_layer(64, 256, steps=2), False)  # a transposed weight of 1 MiB: copied on all cores
    assert not numpy.isnan(written["grad_gates"]).any()
    shape, view = _STRIDED["transposed"]
    strided = view(numpy.ones(shape, numpy.float32))
    assert cpu_kernels.binary("add", strided, strided) is not None
