"""Host memory (``_backends/host_memory``): glibc's malloc keeps freed large blocks, so a new large array reuses
mapped pages instead of faulting in fresh ones (results equal NumPy's either way); arrays for the multi-core kernels
start on cache lines."""

import os
import resource
import subprocess
import sys

import numpy
import pytest

import agnostic
from agnostic._backends import host_memory

ON_GLIBC = host_memory._on_glibc()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A 64 MiB result, above glibc's own mmap threshold (at most 32 MiB): without the tuning, each one is fresh pages.
_FAULTS_OF_REPEATED_ADDS = """
import resource, sys
sys.path.insert(0, {root!r})
import agnostic
a, b = agnostic.rand(1 << 24), agnostic.rand(1 << 24)
for _ in range(3):
    c = a + b
    del c
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(5):
    c = a + b
    del c
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) // 5)
"""


def _faults_per_add(environment):
    result = subprocess.run([sys.executable, "-c", _FAULTS_OF_REPEATED_ADDS.format(root=ROOT)], capture_output=True,
                            text=True, timeout=120, env={**os.environ, **environment})
    assert result.returncode == 0, result.stderr
    return int(result.stdout)


@pytest.mark.skipif(not ON_GLIBC, reason="malloc is tuned on glibc only")
def test_import_tunes_malloc_on_glibc_unless_told_otherwise():
    told = os.environ.get("AGNOSTIC_MALLOC_TUNING") == "0" or any(name in os.environ
                                                                   for name in host_memory._OWN_SETTINGS)
    assert host_memory.tuned is not told


@pytest.mark.skipif(not ON_GLIBC, reason="malloc is tuned on glibc only")
def test_a_large_result_reuses_freed_pages():
    pages = (1 << 24) * 4 // resource.getpagesize()
    tuned = _faults_per_add({"AGNOSTIC_MALLOC_TUNING": "1"})
    untuned = _faults_per_add({"AGNOSTIC_MALLOC_TUNING": "0"})
    assert tuned < pages // 100, f"{tuned} page faults per 64 MiB result"
    assert untuned > tuned  # what the tuning removes (fewer than one per page where huge pages back the block)


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
    for _ in range(3):  # the later results land in freed blocks
        result = ours(agnostic.from_numpy(a), agnostic.from_numpy(b)).numpy()
        assert result.dtype == expected.dtype
        numpy.testing.assert_array_equal(result, expected)


def test_a_result_in_a_freed_block_leaves_live_views_alone():
    tensor = agnostic.ones(1024, 1024) * 3.0
    view = tensor.numpy()
    del tensor
    fresh = agnostic.ones(1024, 1024) * 5.0
    assert (view == 3).all() and (fresh.numpy() == 5).all()


# ----- arrays aligned to cache lines ------------------------------------------------------------------------------
def _address(array):
    return array.__array_interface__["data"][0]


@pytest.mark.parametrize("shape, dtype", [((3, 5), numpy.float32), ((7,), numpy.float64), ((0, 4), numpy.float32),
                                          ((2, 3, 4), numpy.int8), ((), numpy.complex128)])
def test_empty_aligned_starts_on_a_cache_line(shape, dtype):
    array = host_memory.empty_aligned(shape, dtype)
    assert (array.shape, array.dtype) == (shape, numpy.dtype(dtype))
    assert array.flags.c_contiguous and array.flags.writeable
    assert array.size == 0 or _address(array) % host_memory.CACHE_LINE == 0  # nothing to place when empty
    array[...] = 3
    assert (array == 3).all()


def test_empty_aligned_keeps_its_buffer_alive():
    array = host_memory.empty_aligned((1000,), numpy.float64)
    array[...] = numpy.arange(1000)
    others = [numpy.full(1000, -1.0) for _ in range(50)]  # would reuse a freed buffer's memory
    assert (array == numpy.arange(1000)).all() and len(others) == 50


def test_is_aligned_asks_for_a_contiguous_array_on_a_cache_line():
    array = host_memory.empty_aligned((4, 16), numpy.float32)
    assert host_memory.is_aligned(array)
    assert not host_memory.is_aligned(array.T)  # not C-contiguous
    assert not host_memory.is_aligned(array.reshape(-1)[1:])  # 4 bytes past the line


def test_a_backends_empty_gives_the_shape_and_dtype_asked(device):
    """``backend.empty``, the arrays kernels write: on the CPU on a cache line (64 bytes, PyTorch's CPU alignment),
    on CUDA CuPy's own (256-byte) allocation."""
    backend = device.backend
    with backend.activate():
        array = backend.empty((5, 6), numpy.float32)
    assert isinstance(array, backend.array_type) and array.shape == (5, 6) and array.dtype == numpy.float32
    pointer = _address(array) if backend.host else array.data.ptr
    assert pointer % (host_memory.CACHE_LINE if backend.host else 256) == 0
