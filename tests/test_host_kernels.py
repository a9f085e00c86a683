"""The C kernels for large CPU arrays (ReLU, its gradient, Adam's update): exactly NumPy's results, on OpenBLAS's
threads or in the caller, refusals where they don't apply, and training that agrees with and without them."""

import itertools
import multiprocessing
import shutil
import sys
import warnings

import numpy
import pytest

import agnostic
from agnostic import _host_blas, _host_kernels
from agnostic.optim import _fused

RNG = numpy.random.default_rng(5)
LARGE = 4 * 16384 + 5  # split into parts wherever OpenBLAS has threads; an odd size leaves a ragged last part
SPECIAL = [numpy.nan, -numpy.nan, 0.0, -0.0, numpy.inf, -numpy.inf, 1e-45, -1e-45, 1e-310, -1e-310]

needs_kernels = pytest.mark.skipif(not _host_kernels.available(), reason="agnostic's C kernels are not built")


@pytest.fixture
def without_kernels(monkeypatch):
    """As where the C file was not built: every call refused."""
    monkeypatch.setattr(_host_kernels, "_library", False)


@pytest.fixture(params=["BLAS threads", "caller only"])
def thread_count(request):
    """The kernels split across OpenBLAS's threads, then run in the calling thread alone."""
    before = agnostic.get_num_threads()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a NumPy without OpenBLAS can't be told: the count is kept
        agnostic.set_num_threads(before if request.param == "BLAS threads" else 1)
        yield request.param
        agnostic.set_num_threads(before)


def _with_special_values(array):
    array[:len(SPECIAL)] = SPECIAL
    array[-len(SPECIAL):] = SPECIAL
    return array


def _bits(array):
    return array.view(f"u{array.dtype.itemsize}")


@pytest.mark.skipif(sys.platform == "win32" or shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="no C compiler: the kernels are optional")
def test_the_kernels_are_built_where_a_c_compiler_is():
    assert _host_kernels.available(), "pip install -e . should have built agnostic/_host_kernels.c"


@needs_kernels
def test_tasks_are_split_across_openblas_threads_where_numpy_bundles_it():
    if _host_blas.thread_dispatcher() == () or agnostic.get_num_threads() < 2:
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS, or it runs one thread")
    x = numpy.ones(LARGE, numpy.float32)
    assert _host_kernels.relu(x, numpy.empty_like(x))
    assert _host_kernels.uses_threads()  # the dispatcher passed its self-test


@needs_kernels
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_relu_is_numpys_maximum_bit_for_bit(dtype, thread_count):
    x = _with_special_values(RNG.standard_normal(LARGE).astype(dtype))
    out = numpy.empty_like(x)
    assert _host_kernels.relu(x, out)
    assert (_bits(out) == _bits(numpy.maximum(x, dtype(0)))).all()


@needs_kernels
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_relu_gradient_passes_the_gradient_where_the_input_is_positive_bit_for_bit(dtype, thread_count):
    x = _with_special_values(RNG.standard_normal(LARGE).astype(dtype))
    grad = _with_special_values(RNG.standard_normal(LARGE).astype(dtype)[::-1].copy())
    out = numpy.empty_like(x)
    assert _host_kernels.relu_gradient(grad, x, out)
    assert (_bits(out) == _bits(numpy.where(x > 0, grad, dtype(0)))).all()


@needs_kernels
def test_kernels_write_in_place():
    x = RNG.standard_normal((300, 400)).astype(numpy.float32)
    grad = RNG.standard_normal((300, 400)).astype(numpy.float32)
    expected_relu, expected_gradient = numpy.maximum(x, 0), numpy.where(x > 0, grad, 0)
    assert _host_kernels.relu_gradient(grad, x, grad)
    assert _host_kernels.relu(x, x)
    assert (x == expected_relu).all() and (grad == expected_gradient).all()


@pytest.mark.parametrize("case", ["small", "float16", "int32", "strided", "shapes differ", "dtypes differ",
                                  "overlap", "read-only", "not an array"])
def test_relu_refuses_what_it_cannot_do_and_leaves_out_alone(case):
    x = numpy.ones((LARGE,), numpy.float32)
    out = numpy.full_like(x, 7)
    if case == "small":
        x, out = x[:100], out[:100]
    elif case in ("float16", "int32"):
        x, out = x.astype(case), out.astype(case)
    elif case == "strided":
        x, out = numpy.ones((2 * LARGE,), numpy.float32)[::2], out
    elif case == "shapes differ":
        x = x.reshape(1, -1)
    elif case == "dtypes differ":
        x = x.astype(numpy.float64)
    elif case == "overlap":
        both = numpy.ones(LARGE + 1, numpy.float32)
        x, out = both[1:], both[:-1]
        out[...] = 7
    elif case == "read-only":
        out.flags.writeable = False
    elif case == "not an array":
        x = x.tolist()
    assert _host_kernels.relu(x, out) is False
    assert (out == 7).all()


def _adam_scalars(dtype, maximize, decoupled, amsgrad, weight_decay, beta1):
    step = 3
    s = _fused._typed(dict(weight_decay=weight_decay, decay=1 - 1e-3 * weight_decay, one_minus_beta1=1 - beta1,
                           beta1_complement=beta1, beta2=0.999, one_minus_beta2=1 - 0.999,
                           bias_correction2_sqrt=(1 - 0.999 ** step) ** 0.5, eps=1e-8,
                           neg_step_size=-1e-3 / (1 - beta1 ** step)), numpy.dtype(dtype))
    s.__dict__.update(maximize=maximize, decoupled=decoupled, amsgrad=amsgrad)
    return s


def _adam_arrays(dtype, size, amsgrad):
    arrays = [RNG.standard_normal(size), RNG.standard_normal(size), 0.1 * RNG.standard_normal(size),
              0.01 * RNG.random(size), 0.01 * RNG.random(size) if amsgrad else None]
    arrays = [None if a is None else a.astype(dtype) for a in arrays]
    arrays[0][:3] = [numpy.nan, numpy.inf, 0.0]
    arrays[1][3:6] = [numpy.nan, -numpy.inf, -0.0]
    return arrays


def _numpy_adam(arrays, s, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(_host_kernels, "_library", False)
        patch.setattr(_host_blas, "_routines", {})  # ufuncs alone, no fused multiply-add in BLAS's axpy
        scratch = _fused._Scratch(agnostic.device("cpu").backend, arrays[0].size, arrays[0].dtype)
        scratch.use(arrays[0].shape)
        _fused._adam_host(numpy, arrays, s, scratch)


@needs_kernels
@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("maximize, decoupled, amsgrad, weight_decay, beta1",
                         list(itertools.product((0, 1), (0, 1), (0, 1), (0.0, 0.01), (0.9, 0.3))))
def test_adam_kernel_is_the_ufunc_update_bit_for_bit(dtype, maximize, decoupled, amsgrad, weight_decay, beta1,
                                                     thread_count, monkeypatch):
    s = _adam_scalars(dtype, maximize, decoupled, amsgrad, weight_decay, beta1)
    kernel = _adam_arrays(dtype, LARGE, amsgrad)
    ufuncs = [None if a is None else a.copy() for a in kernel]
    assert _host_kernels.adam(kernel, s)
    _numpy_adam(ufuncs, s, monkeypatch)
    for a, b in zip(kernel, ufuncs):
        if a is not None:
            assert (_bits(a) == _bits(b)).all() or numpy.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("case", ["float16", "strided", "sizes differ", "state shared", "grad is the param"])
def test_adam_kernel_refuses_what_it_cannot_do(case):
    arrays = _adam_arrays(numpy.float32, 1000, False)
    if case == "float16":
        arrays = [None if a is None else a.astype(numpy.float16) for a in arrays]
    elif case == "strided":
        arrays[2] = numpy.zeros(2000, numpy.float32)[::2]
    elif case == "sizes differ":
        arrays[3] = arrays[3][:-1]
    elif case == "state shared":
        arrays[3] = arrays[2]
    elif case == "grad is the param":
        arrays[1] = arrays[0]
    before = [None if a is None else a.copy() for a in arrays]
    assert _host_kernels.adam(arrays, _adam_scalars(numpy.float32, 0, 0, 0, 0.0, 0.9)) is False
    for a, b in zip(arrays, before):
        assert a is None or numpy.array_equal(a, b, equal_nan=True)


def _train(steps=3):
    """Weights and loss after a few Adam steps of a Linear+ReLU stack large enough for the kernels."""
    agnostic.manual_seed(0)
    model = agnostic.nn.Sequential(agnostic.nn.Linear(64, 600), agnostic.nn.ReLU(), agnostic.nn.Linear(600, 4))
    optimizer = agnostic.optim.Adam(model.parameters(), lr=1e-2, amsgrad=True)
    inputs, targets = agnostic.randn(128, 64), agnostic.randint(0, 4, (128,))
    for _ in range(steps):
        optimizer.zero_grad()
        loss = agnostic.nn.functional.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
    return [p.detach().numpy().copy() for p in model.parameters()] + [loss.detach().numpy()]


def test_training_agrees_with_and_without_the_kernels(monkeypatch):
    with_kernels = _train()
    monkeypatch.setattr(_host_kernels, "_library", False)
    without = _train()
    for a, b in zip(with_kernels, without):
        numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _relu_in_child(queue):
    x = numpy.linspace(-1, 1, LARGE, dtype=numpy.float32)
    out = numpy.empty_like(x)
    queue.put((_host_kernels.relu(x, out), float(out.sum())))


@needs_kernels
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork on this platform")
def test_a_forked_child_runs_the_kernels():
    x = numpy.linspace(-1, 1, LARGE, dtype=numpy.float32)
    assert _host_kernels.relu(x, numpy.empty_like(x))  # the parent's OpenBLAS threads are up before the fork
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_relu_in_child, args=(queue,))
    child.start()
    done, total = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0 and done
    assert total == pytest.approx(float(numpy.maximum(x, 0).sum()))
