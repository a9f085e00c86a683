"""use_deterministic_algorithms: accumulating scatters of floats on CUDA (atomic, in no fixed order) raise or warn
in deterministic mode, as PyTorch's ops without a deterministic implementation do; everything else runs."""

import pytest

import agnostic


@pytest.fixture
def deterministic():
    yield agnostic.use_deterministic_algorithms
    agnostic.use_deterministic_algorithms(False)


def _index_add(device, dtype):
    return agnostic.zeros(3, dtype=dtype, device=device).index_add(
        0, agnostic.tensor([0, 0, 2], device=device), agnostic.ones(3, dtype=dtype, device=device))


def test_flags_read_back(deterministic):
    assert not agnostic.are_deterministic_algorithms_enabled()
    deterministic(True, warn_only=True)
    assert agnostic.are_deterministic_algorithms_enabled() and agnostic.is_deterministic_algorithms_warn_only_enabled()
    deterministic(False)
    assert not agnostic.are_deterministic_algorithms_enabled()
    with pytest.raises(RuntimeError, match="expects a bool"):
        deterministic("yes")


def test_floating_accumulation_on_cuda_is_refused(cuda_device, deterministic):
    deterministic(True)
    with pytest.raises(RuntimeError, match="does not have a deterministic implementation.*warn_only=True"):
        _index_add(cuda_device, agnostic.float32)
    deterministic(True, warn_only=True)
    with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
        assert _index_add(cuda_device, agnostic.float32).tolist() == [2.0, 0.0, 1.0]


def test_deterministic_ops_still_run(device, deterministic):
    deterministic(True)
    assert _index_add(device, agnostic.int64).tolist() == [2, 0, 1]  # integer sums have one result
    if device.type == "cpu":
        assert _index_add(device, agnostic.float32).tolist() == [2.0, 0.0, 1.0]  # NumPy adds in index order
    x = agnostic.randn(4, 3, device=device)
    assert agnostic.allclose((x @ x.T).cpu(), (x @ x.T).cpu())
