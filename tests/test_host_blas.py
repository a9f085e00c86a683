"""The BLAS shortcuts for large CPU arrays: same results as the ufuncs they replace, refusals where they don't apply,
and the optimizers and Linear unchanged whether BLAS is found or not."""

import numpy
import pytest

import agnostic
from agnostic import _host_blas

RNG = numpy.random.default_rng(21)
LARGE = _host_blas.MIN_ELEMENTS + 17


def numpy_bundles_openblas():
    blas = getattr(numpy.__config__, "CONFIG", {}).get("Build Dependencies", {}).get("blas", {})
    return blas.get("name") == "scipy-openblas"


@pytest.fixture
def without_blas(monkeypatch):
    """As on a NumPy that links another BLAS: nothing found, every call refused."""
    monkeypatch.setattr(_host_blas, "_routines", {})


def test_the_bundled_openblas_is_found_when_numpy_has_one():
    x, y = numpy.ones(LARGE, numpy.float32), numpy.zeros(LARGE, numpy.float32)
    assert _host_blas.axpy(2.0, x, y) == numpy_bundles_openblas()
    assert (y == 2).all() or not numpy_bundles_openblas()


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("alpha", [1.0, -0.01, 3.5])
def test_axpy_adds_a_multiple(dtype, alpha):
    x = RNG.standard_normal(LARGE).astype(dtype)
    y = RNG.standard_normal(LARGE).astype(dtype)
    expected = y + x * dtype(alpha)
    bound = numpy.finfo(dtype).eps * (numpy.abs(y) + numpy.abs(x * dtype(alpha)))  # a fused multiply-add's rounding
    done = _host_blas.axpy(alpha, x, y)
    assert done == numpy_bundles_openblas()
    if done:
        assert (numpy.abs(y - expected) <= bound).all()


def test_axpy_spreads_inf_and_nan_as_the_ufuncs_do():
    x = numpy.zeros(LARGE, numpy.float32)
    x[:3] = [numpy.inf, -numpy.inf, numpy.nan]
    y = numpy.ones(LARGE, numpy.float32)
    if _host_blas.axpy(0.5, x, y):
        assert y[0] == numpy.inf and y[1] == -numpy.inf and numpy.isnan(y[2]) and (y[3:] == 1).all()


@pytest.mark.parametrize("case", ["small", "zero alpha", "strided", "dtypes differ", "float16", "overlap",
                                  "read-only", "sizes differ"])
def test_axpy_refuses_what_it_cannot_do_and_leaves_y_alone(case):
    x = numpy.ones(LARGE, numpy.float32)
    y = numpy.zeros(LARGE, numpy.float32)
    alpha = 1.0
    if case == "small":
        x, y = x[:100], y[:100]
    elif case == "zero alpha":
        alpha = 0.0  # BLAS would skip the work; ufuncs turn inf * 0 into nan
    elif case == "strided":
        x, y = numpy.ones(2 * LARGE, numpy.float32)[::2], numpy.zeros(2 * LARGE, numpy.float32)[::2]
    elif case == "dtypes differ":
        x = x.astype(numpy.float64)
    elif case == "float16":
        x, y = x.astype(numpy.float16), y.astype(numpy.float16)
    elif case == "overlap":
        both = numpy.zeros(LARGE + 1, numpy.float32)
        x, y = both[1:], both[:-1]
    elif case == "read-only":
        y.flags.writeable = False
    elif case == "sizes differ":
        x = numpy.ones(LARGE + 1, numpy.float32)
    before = y.copy()
    assert _host_blas.axpy(alpha, x, y) is False
    numpy.testing.assert_array_equal(y, before)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("shape", [(LARGE // 100 + 1, 100), (3, LARGE // 300 + 1, 100)])
def test_add_row_is_exactly_the_broadcast_sum(dtype, shape):
    array = RNG.standard_normal(shape).astype(dtype)
    row = RNG.standard_normal(shape[-1]).astype(dtype)
    row[:2] = [numpy.inf, -0.0]
    expected = array + row
    assert _host_blas.add_row(array, row) == numpy_bundles_openblas()
    if numpy_bundles_openblas():
        numpy.testing.assert_array_equal(array, expected)


def test_add_row_refuses_rows_that_do_not_match():
    array = numpy.zeros((LARGE // 100 + 1, 100), numpy.float32)
    for row in (numpy.ones(99, numpy.float32), numpy.ones(100, numpy.float64), numpy.ones((1, 100), numpy.float32),
                array[0]):
        assert _host_blas.add_row(array, row) is False
    assert _host_blas.add_row(array.T, numpy.ones(array.shape[0], numpy.float32)) is False  # not C-contiguous
    assert not array.any()


def _step_results(kind, options, steps=3):
    """Parameters after a few steps on a layer large enough for the BLAS path."""
    agnostic.manual_seed(0)
    layer = agnostic.nn.Linear(256, 160)  # 40,960 weights
    optimizer = getattr(agnostic.optim, kind)(layer.parameters(), **options)
    inputs = agnostic.randn(300, 256)  # 48,000 outputs: the bias goes in through BLAS
    for _ in range(steps):
        optimizer.zero_grad()
        layer(inputs).square().mean().backward()
        optimizer.step()
    return [p.detach().numpy().copy() for p in layer.parameters()], layer(inputs).detach().numpy()


@pytest.mark.parametrize("kind, options", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5, nesterov=False, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5)),
    ("RMSprop", dict(lr=0.01, centered=True)),
])
def test_training_steps_agree_with_and_without_blas(kind, options, monkeypatch):
    with_blas = _step_results(kind, options)
    monkeypatch.setattr(_host_blas, "_routines", {})
    without = _step_results(kind, options)
    # Adam and RMSprop divide by the root of a running square: where it is near eps, a fused multiply-add's last bit
    # moves a weight by a fraction of a step (lr 0.01): the bound is half a percent of one step.
    for a, b in zip(with_blas[0] + [with_blas[1]], without[0] + [without[1]]):
        numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 if kind == "SGD" else 5e-5)


def test_linear_without_blas_adds_the_bias_with_ufuncs(without_blas):
    layer = agnostic.nn.Linear(64, 600)
    x = agnostic.randn(100, 64)
    expected = x.numpy() @ layer.weight.detach().numpy().T + layer.bias.detach().numpy()
    numpy.testing.assert_allclose(layer(x).detach().numpy(), expected, rtol=1e-5, atol=1e-5)
