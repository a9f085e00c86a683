"""set_num_threads / get_num_threads: PyTorch's names and errors; they set the CPU's BLAS threads."""

import os
import subprocess
import sys
import warnings

import numpy
import pytest
import threadpoolctl

import agnostic
from agnostic import _threads


@pytest.fixture
def restore_threads():
    before = agnostic.get_num_threads()
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agnostic.set_num_threads(before)


def test_get_num_threads_is_a_positive_int():
    count = agnostic.get_num_threads()
    assert type(count) is int and count >= 1


@pytest.mark.parametrize("count", [1, 2, numpy.int64(3)])
def test_set_num_threads_is_what_get_num_threads_reports(count, restore_threads):
    agnostic.set_num_threads(count)
    assert agnostic.get_num_threads() == int(count)
    blas = [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
    assert blas and set(blas) == {int(count)}  # every BLAS library itself was told
    a = agnostic.randn(300, 200)
    b = agnostic.randn(200, 100)
    numpy.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-5)


_LATER_LIBRARY = """
import sys, numpy, threadpoolctl, agnostic
from agnostic._backends import cpu_kernels
agnostic.set_num_threads(1)
loaded_before = "scipy.linalg" in sys.modules
{work}
pools = [pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"]
print(loaded_before, "scipy.linalg" in sys.modules, bool(cpu_kernels._kernels), agnostic.get_num_threads(), *pools)
"""


@pytest.mark.parametrize("work, numba_loads", [
    ("agnostic.linalg.lu_factor(agnostic.eye(3))", False),  # SciPy's LAPACK
    ("agnostic.relu(agnostic.from_numpy(numpy.ones(1 << 22, numpy.float32)))", True),  # numba's first kernel
])
def test_the_count_holds_in_blas_libraries_loaded_after_it_was_set(work, numba_loads):
    # SciPy's OpenBLAS loads with numba's first kernel or a linear-algebra op; it starts with a thread per core.
    result = subprocess.run([sys.executable, "-c", _LATER_LIBRARY.format(work=work)], capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
                                agnostic.__file__))})
    assert result.returncode == 0, result.stderr
    loaded_before, loaded_after, numba_loaded, count, *pools = result.stdout.split()
    if numba_loads and numba_loaded == "False":
        pytest.skip("numba is not installed: no kernel loads SciPy's OpenBLAS")
    assert (loaded_before, loaded_after) == ("False", "True")  # SciPy's linear algebra loaded after the count was set
    assert count == "1" and pools and set(pools) == {"1"}


@pytest.mark.parametrize("value, message", [
    (0, "set_num_threads expects a positive integer"),
    (-2, "set_num_threads expects a positive integer"),
    (True, "set_num_threads expects an int, but got bool"),
    (2.5, "set_num_threads expects an int, but got float"),
    ("2", "set_num_threads expects an int, but got str"),
])
def test_set_num_threads_refuses_what_pytorch_refuses(value, message, restore_threads):
    before = agnostic.get_num_threads()
    with pytest.raises(RuntimeError, match=message):
        agnostic.set_num_threads(value)
    assert agnostic.get_num_threads() == before


def test_without_a_blas_to_tell_the_count_is_kept_and_a_warning_says_how(monkeypatch):
    monkeypatch.setattr(_threads, "_blas_pools", lambda: threadpoolctl.ThreadpoolController().select(internal_api="none"))
    monkeypatch.setattr(_threads, "_requested", None)
    with pytest.warns(RuntimeWarning, match="OMP_NUM_THREADS"):
        agnostic.set_num_threads(3)
    assert agnostic.get_num_threads() == 3
