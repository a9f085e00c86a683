"""The reuse of large CPU result buffers: a buffer comes back only once nothing refers to it, and results computed
into reused buffers equal NumPy's."""

import numpy
import pytest

import agnostic
from agnostic import _host_cache


def _address(array):
    return array.__array_interface__["data"][0]


def test_freed_buffer_is_reused():
    first = _host_cache.empty((512, 1024), numpy.float32)
    address = _address(first)
    del first
    again = _host_cache.empty((1024, 512), numpy.float32)
    assert _address(again) == address


def test_buffer_in_use_by_a_view_is_not_reused():
    first = _host_cache.empty((512, 1024), numpy.float32)
    address = _address(first)
    first[:] = 7
    view = first[10:20]
    del first
    other = _host_cache.empty((512, 1024), numpy.float32)
    other[:] = 0
    assert _address(other) != address
    assert (view == 7).all()


def test_tensor_numpy_view_keeps_its_buffer():
    tensor = agnostic.ones(1024, 1024) * 3.0
    view = tensor.numpy()
    address = _address(view)
    del tensor
    fresh = agnostic.ones(1024, 1024) * 5.0
    assert _address(fresh.numpy()) != address
    assert (view == 3).all()


def test_small_arrays_are_plain_numpy():
    small = _host_cache.empty((8, 8), numpy.float64)
    assert small.base is None and small.shape == (8, 8)


_LARGE_OPS = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul scalar": (lambda a, b: a * 2.5, lambda a, b: a * numpy.float32(2.5)),
    "rsub scalar": (lambda a, b: 1.0 - a, lambda a, b: numpy.float32(1.0) - a),
    "gt": (lambda a, b: a > b, lambda a, b: a > b),
    "relu": (lambda a, b: agnostic.relu(a), lambda a, b: numpy.maximum(a, numpy.float32(0))),
    "exp": (lambda a, b: agnostic.exp(a), lambda a, b: numpy.exp(a)),
    "matmul": (lambda a, b: a @ b.t(), lambda a, b: a @ b.T),
}


@pytest.mark.parametrize("name", sorted(_LARGE_OPS))
def test_large_results_equal_numpy(name):
    ours, reference = _LARGE_OPS[name]
    generator = numpy.random.default_rng(0)
    a, b = (generator.standard_normal((600, 512)).astype(numpy.float32) for _ in range(2))
    expected = reference(a, b)
    for _ in range(3):  # the later results land in reused buffers
        result = ours(agnostic.from_numpy(a), agnostic.from_numpy(b)).numpy()
        assert result.dtype == expected.dtype
        numpy.testing.assert_array_equal(result, expected)
