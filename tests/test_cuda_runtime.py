"""agnostic.cuda: torch.cuda's runtime API (availability, device selection, properties, seeding) over CuPy."""

import numpy
import pytest

import agnostic
from agnostic import cuda

HAS_CUDA = cuda.is_available()
no_cuda_only = pytest.mark.skipif(HAS_CUDA, reason="checks behaviour on machines without CUDA")


def test_is_available_and_device_count_agree():
    count = cuda.device_count()
    assert type(count) is int and count >= 0
    assert cuda.is_available() is (count > 0)
    assert cuda.device_count() == count                  # stable across calls


# ----- without CUDA ------------------------------------------------------------------------------------------

@no_cuda_only
@pytest.mark.parametrize("call", [
    cuda.current_device, cuda.init, cuda.synchronize, cuda.get_device_name, cuda.get_device_capability,
    cuda.get_device_properties, cuda.initial_seed, lambda: cuda.set_device(0), lambda: cuda.synchronize(0),
    lambda: cuda.get_device_name(0),
], ids=["current_device", "init", "synchronize", "get_device_name", "get_device_capability",
        "get_device_properties", "initial_seed", "set_device(0)", "synchronize(0)", "get_device_name(0)"])
def test_cuda_calls_raise_without_cuda(call):
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        call()


@no_cuda_only
def test_device_context_raises_without_cuda():
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        with cuda.device(0):
            pass


@no_cuda_only
def test_seeding_is_a_silent_no_op_without_cuda():
    state = agnostic.initial_seed()
    assert cuda.manual_seed(3) is None
    assert cuda.manual_seed_all(3) is None
    assert cuda.seed() is None
    assert cuda.seed_all() is None
    assert agnostic.initial_seed() == state                 # the CPU generator is untouched
    assert not cuda.is_initialized()


def test_no_op_selections_work_everywhere():
    assert cuda.set_device(-1) is None                      # negative index: no-op, as in PyTorch
    with cuda.device(None):
        pass
    with cuda.device(-1):
        pass
    with cuda.device_of(agnostic.zeros(2)):                 # a CPU tensor selects nothing
        assert agnostic.zeros(1).device == agnostic.device("cpu")


# ----- with CUDA ---------------------------------------------------------------------------------------------

def test_current_and_set_device(cuda_device):
    previous = cuda.current_device()
    assert 0 <= previous < cuda.device_count()
    try:
        for spec in (cuda_device.index, cuda_device, str(cuda_device)):
            cuda.set_device(spec)
            assert cuda.current_device() == cuda_device.index
            assert agnostic.zeros(1, device="cuda").device == cuda_device     # 'cuda' means the current device
    finally:
        cuda.set_device(previous)
    assert cuda.current_device() == previous


def test_set_device_out_of_range(cuda_device):
    with pytest.raises(RuntimeError, match="out of range"):
        cuda.set_device(cuda.device_count())
    with pytest.raises(ValueError):
        cuda.set_device("cpu")


def test_device_context_manager(cuda_device):
    previous = cuda.current_device()
    with cuda.device(cuda_device.index) as context:
        assert context is not None
        assert cuda.current_device() == cuda_device.index
        with cuda.device(0):
            assert cuda.current_device() == 0
        assert cuda.current_device() == cuda_device.index
        assert agnostic.ones(1, device="cuda").device == cuda_device
    assert cuda.current_device() == previous
    with cuda.device(cuda_device):
        assert cuda.current_device() == cuda_device.index
    with cuda.device(str(cuda_device)):
        assert cuda.current_device() == cuda_device.index
    assert cuda.current_device() == previous


def test_device_of(cuda_device):
    previous = cuda.current_device()
    t = agnostic.zeros(2, device=cuda_device)
    with cuda.device_of(t):
        assert cuda.current_device() == cuda_device.index
    assert cuda.current_device() == previous
    with cuda.device_of(agnostic.zeros(2)):
        assert cuda.current_device() == previous


def test_device_properties(cuda_device):
    index = cuda_device.index
    properties = cuda.get_device_properties(index)
    assert isinstance(properties.name, str) and properties.name
    assert properties.total_memory > 0 and properties.multi_processor_count > 0
    assert properties.major >= 3
    assert cuda.get_device_name(index) == properties.name
    assert cuda.get_device_name(cuda_device) == properties.name
    capability = cuda.get_device_capability(index)
    assert capability == (properties.major, properties.minor)
    assert all(type(value) is int for value in capability)
    assert properties.name in repr(properties)
    with cuda.device(index):
        assert cuda.get_device_name() == properties.name
    with pytest.raises(ValueError):
        cuda.get_device_properties("cpu")


def test_synchronize(cuda_device):
    t = agnostic.ones(1000, device=cuda_device) * 2
    assert cuda.synchronize() is None
    assert cuda.synchronize(cuda_device.index) is None
    assert cuda.synchronize(cuda_device) is None
    assert t.sum().item() == 2000.0


def test_init(cuda_device):
    cuda.init()
    assert cuda.is_initialized()


def test_cuda_seeding_is_reproducible(cuda_device):
    with cuda.device(cuda_device.index):
        cuda.manual_seed(123)
        assert cuda.initial_seed() == 123
        first = agnostic.rand(8, device=cuda_device).cpu().numpy()
        cuda.manual_seed(123)
        numpy.testing.assert_array_equal(agnostic.rand(8, device=cuda_device).cpu().numpy(), first)
    cuda.manual_seed_all(321)
    a = agnostic.randn(8, device=cuda_device).cpu().numpy()
    cuda.manual_seed_all(321)
    numpy.testing.assert_array_equal(agnostic.randn(8, device=cuda_device).cpu().numpy(), a)
    assert not numpy.array_equal(a, first)
    assert cuda.seed() is None and cuda.seed_all() is None


def test_legacy_cuda_types(cuda_device):
    with cuda.device(cuda_device.index):
        t = cuda.LongTensor([1, 2])
    assert t.device == cuda_device and t.dtype is agnostic.int64
    assert isinstance(t, cuda.LongTensor) and not isinstance(t, agnostic.LongTensor)
    assert t.type() == "agnostic.cuda.LongTensor"
