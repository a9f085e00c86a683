"""save/load: round trips of tensors and nested structures, map_location as PyTorch's, and files that are crafted,
truncated or corrupt give clear errors and never run code."""

import collections
import io
import json
import pathlib
import struct

import numpy
import pytest

import agnostic
from agnostic import optim
from agnostic.serialization import load, save

from conftest import CUDA_DEVICES


def _round_trip(obj, **load_options):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **load_options)


@pytest.mark.parametrize("dtype", [agnostic.bool, agnostic.uint8, agnostic.int8, agnostic.int16, agnostic.int32,
                                   agnostic.int64, agnostic.float16, agnostic.float32, agnostic.float64,
                                   agnostic.complex64, agnostic.complex128])
def test_tensor_round_trip_keeps_dtype_shape_and_values(device, dtype):
    values = numpy.arange(-3, 9).reshape(3, 4) % (2 if dtype is agnostic.bool else 256 if dtype is agnostic.uint8
                                                  else 1000)
    tensor = agnostic.tensor(values, device=device).to(dtype)
    loaded = _round_trip(tensor)
    assert loaded.dtype is dtype and loaded.shape == (3, 4) and loaded.device == agnostic.device(device)
    assert loaded.tolist() == tensor.tolist()


def test_special_tensors():
    scalar, empty = agnostic.tensor(2.5), agnostic.zeros(0, 3)
    transposed = agnostic.arange(6).reshape(2, 3).t()
    loaded = _round_trip([scalar, empty, transposed])
    assert loaded[0].shape == () and loaded[0].item() == 2.5
    assert loaded[1].shape == (0, 3)
    assert loaded[2].tolist() == [[0, 3], [1, 4], [2, 5]] and loaded[2].is_contiguous()
    loaded[2][0, 0] = 9  # loaded tensors own writable memory
    assert loaded[2][0, 0].item() == 9


def test_nested_structures_and_python_values():
    x = agnostic.ones(2)
    obj = {"a": [x, (1, 2.5, None, "text", True)], 3: {"nested": collections.OrderedDict(z=1, y=x)},
           (1, "k"): b"\x00bytes", "inf": float("inf"), "nan": float("nan"), "dtype": agnostic.float16,
           "device": agnostic.device("cpu"), "big": 2 ** 70, "empty": {}}
    loaded = _round_trip(obj)
    assert list(loaded) == list(obj)
    assert isinstance(loaded["a"][1], tuple) and loaded["a"][1] == (1, 2.5, None, "text", True)
    assert isinstance(loaded[3]["nested"], collections.OrderedDict) and list(loaded[3]["nested"]) == ["z", "y"]
    assert loaded[(1, "k")] == b"\x00bytes" and loaded["inf"] == float("inf") and loaded["nan"] != loaded["nan"]
    assert loaded["dtype"] is agnostic.float16 and loaded["device"] == agnostic.device("cpu")
    assert loaded["big"] == 2 ** 70 and loaded["empty"] == {}
    assert loaded["a"][0] is loaded[3]["nested"]["y"]  # the same tensor object loads as one object


def test_paths_and_file_objects(tmp_path):
    tensor = agnostic.arange(5)
    save({"t": tensor}, tmp_path / "a.agn")
    save({"t": tensor}, str(tmp_path / "b.agn"))
    assert load(tmp_path / "a.agn")["t"].tolist() == [0, 1, 2, 3, 4]
    assert load(str(tmp_path / "b.agn"))["t"].tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "a.agn", "rb") as stream:
        assert load(stream)["t"].tolist() == [0, 1, 2, 3, 4]
    assert (tmp_path / "a.agn").read_bytes() == (tmp_path / "b.agn").read_bytes()


def test_layout_is_safetensors_style():
    buffer = io.BytesIO()
    save({"w": agnostic.tensor([1.0, 2.0])}, buffer)
    data = buffer.getvalue()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    assert header["format"] == "agnostic" and (8 + length) % 8 == 0
    entry = header["tensors"][0]
    assert entry["dtype"] == "float32" and entry["shape"] == [2] and entry["device"] == "cpu"
    begin, end = entry["offsets"]
    assert numpy.frombuffer(data[8 + length + begin:8 + length + end], "<f4").tolist() == [1.0, 2.0]


def test_optimizer_and_scheduler_state_round_trip():
    params = [agnostic.ones(3), agnostic.ones(2)]
    opt = optim.Adam(params, lr=0.1, amsgrad=True)
    for p in params:
        p.grad = agnostic.ones_like(p)
    opt.step()
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=2)
    loaded = _round_trip({"optimizer": opt.state_dict(), "scheduler": scheduler.state_dict()})
    state = loaded["optimizer"]
    assert set(state["state"]) == {0, 1} and state["param_groups"][0]["betas"] == (0.9, 0.999)
    assert state["state"][0]["step"].item() == 1.0 and state["state"][0]["step"].dtype is agnostic.float32
    fresh = optim.Adam([agnostic.ones(3), agnostic.ones(2)], lr=0.1, amsgrad=True)
    fresh.load_state_dict(state)
    assert fresh.state[fresh.param_groups[0]["params"][0]]["exp_avg"].tolist() == pytest.approx([0.1] * 3)
    assert loaded["scheduler"]["step_size"] == 2


def test_unsupported_objects_are_refused():
    with pytest.raises(TypeError, match="can't save an object of type .*set"):
        save({1, 2}, io.BytesIO())
    with pytest.raises(TypeError, match="state_dict"):
        save({"model": object()}, io.BytesIO())


# ----- map_location ----------------------------------------------------------------------------------------------
def _saved_on(location):
    """A checkpoint whose tensor claims to come from ``location`` (rewritten by hand: any machine can make one)."""
    buffer = io.BytesIO()
    save({"w": agnostic.tensor([1.0, 2.0])}, buffer)
    data = buffer.getvalue()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    header["tensors"][0]["device"] = location
    return _with_header(header, data[8 + length:])


def test_saved_cuda_tensors_need_map_location_without_cuda():
    if CUDA_DEVICES:
        pytest.skip("this machine has CUDA")
    data = _saved_on("cuda:0")
    with pytest.raises(RuntimeError, match="map_location"):
        load(io.BytesIO(data))
    for location in ("cpu", agnostic.device("cpu"), {"cuda:0": "cpu"}):
        loaded = load(io.BytesIO(data), map_location=location)
        assert loaded["w"].device == agnostic.device("cpu") and loaded["w"].tolist() == [1.0, 2.0]


def test_missing_cuda_index_is_explained():
    data = _saved_on(f"cuda:{len(CUDA_DEVICES) + 3}")
    with pytest.raises(RuntimeError, match="map_location"):
        load(io.BytesIO(data))


def test_callable_map_location():
    seen = []

    def place(tensor, location):
        seen.append((location, tensor.device))
        return tensor * 2

    assert load(io.BytesIO(_saved_on("cuda:1")), map_location=place)["w"].tolist() == [2.0, 4.0]
    assert seen == [("cuda:1", agnostic.device("cpu"))]
    assert load(io.BytesIO(_saved_on("cpu")), map_location=lambda t, loc: None)["w"].tolist() == [1.0, 2.0]


def test_map_location_to_cuda(cuda_device):
    loaded = _round_trip({"w": agnostic.arange(3.0)}, map_location=str(cuda_device))
    assert loaded["w"].device == cuda_device and loaded["w"].tolist() == [0.0, 1.0, 2.0]
    back = _round_trip({"w": loaded["w"]})
    assert back["w"].device == cuda_device
    to_cpu = _round_trip({"w": loaded["w"]}, map_location={str(cuda_device): "cpu"})
    assert to_cpu["w"].device == agnostic.device("cpu")


def test_invalid_map_location():
    with pytest.raises(TypeError, match="map_location must be"):
        _round_trip(agnostic.ones(1), map_location=3.5)


# ----- hostile and damaged files ----------------------------------------------------------------------------------
def _valid_file():
    buffer = io.BytesIO()
    save({"a": agnostic.arange(10.0), "b": [1, "two"]}, buffer)
    return buffer.getvalue()


def _with_header(header, body=b""):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -1, -8])
def test_truncated_files(cut):
    data = _valid_file()
    with pytest.raises(RuntimeError, match="not a valid agnostic checkpoint"):
        load(io.BytesIO(data[:cut]))


@pytest.mark.parametrize("data", [
    b"\x80\x02}q\x00.",  # a pickle
    struct.pack("<Q", 2 ** 63) + b"{}",  # an absurd header length
    struct.pack("<Q", 4) + b"\xff\xfe\x00\x01",  # not UTF-8
    struct.pack("<Q", 5) + b"{oops",  # not JSON
    _with_header([1, 2]),
    _with_header({"format": "pickle"}),
    _with_header({"format": "agnostic", "version": 1, "tensors": "x", "object": None}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"tensor": 0}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"tensor": True}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"__reduce__": "os.system"}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"dict": [[[1], 2]]}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"dict": "x"}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"bytes": "zz"}}),
    _with_header({"format": "agnostic", "version": 1, "tensors": [], "object": {"device": "tpu:0"}}),
    _with_header({"format": "agnostic", "version": 1, "object": {"tensor": 0},
                  "tensors": [{"dtype": "object", "shape": [1], "offsets": [0, 8], "device": "cpu"}]}, b"\0" * 8),
    _with_header({"format": "agnostic", "version": 1, "object": {"tensor": 0},
                  "tensors": [{"dtype": "float32", "shape": [4], "offsets": [0, 8], "device": "cpu"}]}, b"\0" * 8),
    _with_header({"format": "agnostic", "version": 1, "object": {"tensor": 0},
                  "tensors": [{"dtype": "float32", "shape": [2], "offsets": [4, 12], "device": "cpu"}]}, b"\0" * 8),
    _with_header({"format": "agnostic", "version": 1, "object": {"tensor": 0},
                  "tensors": [{"dtype": "float32", "shape": [-2], "offsets": [0, 8], "device": "cpu"}]}, b"\0" * 8),
    _with_header({"format": "agnostic", "version": 1, "object": {"tensor": 0},
                  "tensors": [{"dtype": "float32", "shape": [0, 2 ** 70], "offsets": [0, 0], "device": "cpu"}]}),
    _with_header({"format": "agnostic", "version": 1, "object": None, "tensors": [{"dtype": "float32"}]}),
    struct.pack("<Q", 100_003) + b'{"format":"agnostic","version":1,"tensors":[],"object":' + b"[" * 50_000
    + b"]" * 50_000 + b"}",
], ids=lambda data: repr(data[8:60]))
def test_crafted_files_give_clear_errors(data):
    with pytest.raises(RuntimeError, match="not a valid agnostic checkpoint"):
        load(io.BytesIO(data))


def test_newer_format_version_is_named():
    with pytest.raises(RuntimeError, match="format version 99"):
        load(io.BytesIO(_with_header({"format": "agnostic", "version": 99})))


def test_flipped_bytes_never_escape_as_other_errors():
    data = bytearray(_valid_file())
    for position in range(0, 8 + struct.unpack("<Q", data[:8])[0], 3):
        damaged = bytearray(data)
        damaged[position] ^= 0x5A
        try:
            load(io.BytesIO(bytes(damaged)))
        except RuntimeError as error:
            assert "agnostic.load" in str(error)


def test_text_mode_file_is_refused(tmp_path):
    path = pathlib.Path(tmp_path / "x.agn")
    save(agnostic.ones(1), path)
    with open(path, encoding="latin-1") as stream, pytest.raises(TypeError, match="binary mode"):
        load(stream)


def test_parameters_and_requires_grad_survive():
    nn = pytest.importorskip("agnostic.nn")
    weight = nn.Parameter(agnostic.ones(2, 3))
    frozen = nn.Parameter(agnostic.zeros(1), requires_grad=False)
    leaf = agnostic.ones(2).requires_grad_(True)
    loaded = _round_trip([weight, frozen, leaf, agnostic.ones(1)])
    assert isinstance(loaded[0], nn.Parameter) and loaded[0].requires_grad
    assert isinstance(loaded[1], nn.Parameter) and not loaded[1].requires_grad
    assert not isinstance(loaded[2], nn.Parameter) and loaded[2].requires_grad and loaded[2].is_leaf
    assert not loaded[3].requires_grad


def test_module_state_dict_round_trip(tmp_path):
    nn = pytest.importorskip("agnostic.nn")
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    save(model.state_dict(), tmp_path / "model.agn")
    state = load(tmp_path / "model.agn")
    assert isinstance(state, collections.OrderedDict) and list(state) == list(model.state_dict())
    other = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    other.load_state_dict(state)
    x = agnostic.randn(5, 4)
    assert other(x).tolist() == model(x).tolist()
