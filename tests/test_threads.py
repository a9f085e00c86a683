"""set_num_threads / get_num_threads: PyTorch's names and errors; they set the CPU's BLAS threads."""

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
