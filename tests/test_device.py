"""agnostic.device: parsing, printing, equality as torch.device; the default device (with-blocks, per thread)."""

import pickle
import threading

import pytest

import agnostic
from agnostic import device

CPU = device("cpu")


def _lists_valid_forms(message):
    """The parse errors must tell the user which spellings are accepted."""
    return "'cpu'" in message and "'cuda:1'" in message


# ----- construction -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, args, expected_type, expected_index", [
    ("cpu", (), "cpu", None),
    ("cpu:0", (), "cpu", 0),
    ("cuda", (), "cuda", None),
    ("cuda:1", (), "cuda", 1),
    ("cuda:12", (), "cuda", 12),
    ("cuda", (1,), "cuda", 1),
    ("cpu", (0,), "cpu", 0),
    (("cuda", 1), (), "cuda", 1),
    (0, (), "cuda", 0),
    (3, (), "cuda", 3),
])
def test_construction(spec, args, expected_type, expected_index):
    d = device(spec, *args)
    assert isinstance(d, agnostic.Device)
    assert d.type == expected_type
    assert d.index == expected_index


def test_index_keyword_and_type_keyword():
    assert device("cuda", index=1) == device("cuda:1")
    # torch.device(type='cuda', index=1) is valid; it is also what repr() prints.
    assert device(type="cuda", index=1) == device("cuda:1")


def test_from_another_device():
    original = device("cuda:1")
    copy = device(original)
    assert copy == original
    assert (copy.type, copy.index) == ("cuda", 1)
    assert device(CPU) == CPU


def test_int_index_is_an_int():
    assert type(device("cuda:1").index) is int
    assert type(device(2).index) is int


@pytest.mark.parametrize("spec, text, representation", [
    ("cpu", "cpu", "device(type='cpu')"),
    ("cpu:0", "cpu:0", "device(type='cpu', index=0)"),
    ("cuda", "cuda", "device(type='cuda')"),
    ("cuda:1", "cuda:1", "device(type='cuda', index=1)"),
    (("cuda", 1), "cuda:1", "device(type='cuda', index=1)"),
    (0, "cuda:0", "device(type='cuda', index=0)"),
])
def test_str_and_repr(spec, text, representation):
    d = device(spec)
    assert str(d) == text
    assert repr(d) == representation


def test_repr_round_trips_through_eval():
    for spec in ("cpu", "cpu:0", "cuda", "cuda:0", "cuda:3"):
        d = device(spec)
        assert eval(repr(d), {"device": device}) == d


def test_equality_and_hash_like_torch():
    assert device("cuda") != device("cuda:0")       # no index = "the current device", not cuda:0
    assert device("cpu") != device("cpu:0")
    assert device("cuda:1") == device("cuda", 1) == device(device("cuda:1"))
    assert device(0) == device("cuda:0")
    assert device("cuda:0") != device("cuda:1")
    assert device("cpu") != device("cuda")
    assert hash(device("cuda:1")) == hash(device("cuda", 1))
    assert len({device("cuda"), device("cuda:0"), device("cuda", 0), device(0)}) == 2
    assert {device("cpu"): 1}[device("cpu")] == 1


def test_not_equal_to_other_types():
    assert device("cpu") != "cpu"
    assert device("cuda:0") != 0
    assert device("cuda:0") != ("cuda", 0)


def test_immutable_and_picklable():
    d = device("cuda:1")
    with pytest.raises(AttributeError):
        d.index = 2
    with pytest.raises(AttributeError):
        d.type = "cpu"
    assert pickle.loads(pickle.dumps(d)) == d
    assert pickle.loads(pickle.dumps(device("cuda"))) == device("cuda")


# ----- malformed input --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "cuda:", "cuda:x", "cuda:1:2", ":1", "cuda:-1", "cuda:1.5", "cuda:+1", "cuda:01", " cuda", "cuda:1 ",
])
def test_malformed_strings_raise_and_list_valid_forms(text):
    with pytest.raises((ValueError, RuntimeError)) as excinfo:
        device(text)
    assert _lists_valid_forms(str(excinfo.value)), str(excinfo.value)


@pytest.mark.parametrize("text", ["gpu", "tpu", "CUDA", "Cpu", "", "gpu:0", "mps"])
def test_unknown_types_raise_and_list_valid_forms(text):
    with pytest.raises((ValueError, RuntimeError)) as excinfo:
        device(text)
    assert _lists_valid_forms(str(excinfo.value)), str(excinfo.value)


@pytest.mark.parametrize("args", [(-1,), ("cuda", -1), ("cuda", -5)])
def test_negative_indices_raise_and_list_valid_forms(args):
    with pytest.raises((ValueError, RuntimeError)) as excinfo:
        device(*args)
    message = str(excinfo.value)
    assert "negative" in message
    assert _lists_valid_forms(message), message


def test_index_given_twice_raises():
    with pytest.raises((ValueError, RuntimeError), match="index"):
        device("cuda:1", 2)


@pytest.mark.parametrize("spec", [1.0, None, [0], object()])
def test_wrong_argument_types_raise_type_error(spec):
    with pytest.raises(TypeError):
        device(spec)


def test_non_int_index_raises_type_error():
    with pytest.raises(TypeError):
        device("cuda", "1")


# ----- default device ---------------------------------------------------------------------------------------

@pytest.fixture
def restore_default_device():
    yield
    agnostic.set_default_device(None)


def test_default_device_is_cpu():
    assert agnostic.get_default_device() == CPU
    assert agnostic.zeros(2).device == CPU


def test_with_block_sets_default_device_of_factories(device):
    with device as entered:
        assert entered is device
        assert agnostic.get_default_device() == device
        made = [
            agnostic.zeros(2), agnostic.ones(2), agnostic.empty(2), agnostic.full((2,), 1.0), agnostic.arange(3),
            agnostic.linspace(0, 1, 3), agnostic.eye(2), agnostic.tensor([1, 2]), agnostic.rand(2),
            agnostic.randn(2), agnostic.randint(0, 3, (2,)), agnostic.randperm(3),
        ]
        for tensor in made:
            assert tensor.device == device
        assert agnostic.zeros(2, device="cpu").device == CPU    # an explicit device= wins
    assert agnostic.get_default_device() == CPU
    assert agnostic.zeros(2).device == CPU


@pytest.mark.skipif(agnostic.cuda.is_available(), reason="checks the error on machines without CUDA")
def test_with_cuda_block_without_cuda_makes_factories_fail():
    with agnostic.device("cuda"):
        with pytest.raises(RuntimeError, match="CuPy|CUDA"):
            agnostic.zeros(2)
    assert agnostic.zeros(2).device == CPU


def test_with_blocks_nest():
    with device("cuda:1"):
        assert agnostic.get_default_device() == device("cuda:1")
        with device("cpu"):
            assert agnostic.get_default_device() == CPU
            assert agnostic.zeros(1).device == CPU
            with device("cuda:2"):
                assert agnostic.get_default_device() == device("cuda:2")
            assert agnostic.get_default_device() == CPU
        assert agnostic.get_default_device() == device("cuda:1")
    assert agnostic.get_default_device() == CPU


def test_with_block_restores_on_exception():
    with pytest.raises(ZeroDivisionError):
        with device("cuda:1"):
            1 / 0
    assert agnostic.get_default_device() == CPU


def test_with_block_is_per_thread():
    seen = {}

    def worker():
        seen["default"] = agnostic.get_default_device()
        seen["made"] = agnostic.zeros(2).device
        with device("cuda:3"):
            seen["inner"] = agnostic.get_default_device()
            entered.set()
            release.wait(5)
        seen["after"] = agnostic.get_default_device()

    entered, release = threading.Event(), threading.Event()
    with device("cuda:1"):
        thread = threading.Thread(target=worker)
        thread.start()
        assert entered.wait(5)
        # The worker's with-block is open right now: it must not leak into this thread.
        assert agnostic.get_default_device() == device("cuda:1")
        release.set()
        thread.join(5)
    assert not thread.is_alive()
    assert seen == {"default": CPU, "made": CPU, "inner": device("cuda:3"), "after": CPU}
    assert agnostic.get_default_device() == CPU


def test_set_default_device(restore_default_device):
    agnostic.set_default_device("cuda:1")
    assert agnostic.get_default_device() == device("cuda:1")
    with device("cpu"):                                  # a with-block overrides the global default
        assert agnostic.get_default_device() == CPU
        assert agnostic.zeros(1).device == CPU
    assert agnostic.get_default_device() == device("cuda:1")
    agnostic.set_default_device(device("cpu"))
    assert agnostic.get_default_device() == CPU
    agnostic.set_default_device("cuda")
    assert agnostic.get_default_device() == device("cuda")
    agnostic.set_default_device(None)
    assert agnostic.get_default_device() == CPU


def test_set_default_device_applies_to_factories(device, restore_default_device):
    agnostic.set_default_device(device)
    assert agnostic.zeros(2).device == device
    assert agnostic.tensor([1.0]).device == device
    agnostic.set_default_device(None)
    assert agnostic.zeros(2).device == CPU


def test_set_default_device_rejects_malformed():
    with pytest.raises((ValueError, RuntimeError)):
        agnostic.set_default_device("gpu")
    assert agnostic.get_default_device() == CPU


# ----- default dtype ----------------------------------------------------------------------------------------

@pytest.fixture
def restore_default_dtype():
    saved = agnostic.get_default_dtype()
    yield
    agnostic.set_default_dtype(saved)


def test_default_dtype_is_float32():
    assert agnostic.get_default_dtype() is agnostic.float32
    assert agnostic.zeros(1).dtype is agnostic.float32
    assert agnostic.tensor([1.5]).dtype is agnostic.float32


def test_set_default_dtype(restore_default_dtype):
    agnostic.set_default_dtype(agnostic.float64)
    assert agnostic.get_default_dtype() is agnostic.float64
    assert agnostic.zeros(1).dtype is agnostic.float64
    assert agnostic.tensor([1.5]).dtype is agnostic.float64
    assert agnostic.arange(2.0).dtype is agnostic.float64
    assert agnostic.tensor([1j]).dtype is agnostic.complex128
    assert agnostic.tensor([1]).dtype is agnostic.int64                # integers are unaffected
    agnostic.set_default_dtype(agnostic.float16)
    assert agnostic.ones(1).dtype is agnostic.float16
    agnostic.set_default_dtype(agnostic.float32)
    assert agnostic.zeros(1).dtype is agnostic.float32


@pytest.mark.parametrize("name", ["int32", "int64", "uint8", "bool", "complex64", "complex128"])
def test_set_default_dtype_accepts_only_floating_types(name, restore_default_dtype):
    with pytest.raises(TypeError, match="floating"):
        agnostic.set_default_dtype(getattr(agnostic, name))
    assert agnostic.get_default_dtype() is agnostic.float32


# ----- CUDA indices checked at use --------------------------------------------------------------------------

def test_cuda_index_beyond_device_count_raises_at_use():
    count = agnostic.cuda.device_count()
    far = device("cuda", count)                  # constructing is fine, as in PyTorch
    assert far.index == count
    with pytest.raises(RuntimeError) as excinfo:
        agnostic.zeros(1, device=far)
    message = str(excinfo.value)
    if count:
        assert "out of range" in message and str(count) in message, message
    else:
        assert "CuPy" in message, message      # says why: not installed, or no usable GPU/driver


@pytest.mark.skipif(agnostic.cuda.is_available(), reason="checks the error on machines without CUDA")
@pytest.mark.parametrize("spec", ["cuda", "cuda:0", 0])
def test_cuda_without_cuda_raises_with_reason(spec):
    d = device(spec)
    with pytest.raises(RuntimeError, match="CuPy"):
        agnostic.zeros(1, device=d)
    with pytest.raises(RuntimeError, match="CuPy"):
        agnostic.tensor([1.0]).to(d)
