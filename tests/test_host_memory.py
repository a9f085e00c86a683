"""Large CPU results: glibc's malloc keeps freed large blocks (``_backends/host_memory``), so a new large array
reuses mapped pages instead of faulting in fresh ones; results equal NumPy's either way."""

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
