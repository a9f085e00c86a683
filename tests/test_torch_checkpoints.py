"""PyTorch checkpoints both ways: agnostic.load reads torch.save's zip and legacy files (committed fixtures, so
without PyTorch too), agnostic.save writes files torch.load(weights_only=True) reads, hostile globals are refused
without running, and damaged archives give a CheckpointError."""

import collections
import fractions
import io
import pathlib
import pickle
import zipfile

import numpy
import pytest

import agnostic
from agnostic import nn, optim
from agnostic.serialization import CheckpointError, add_safe_globals, clear_safe_globals, load, safe_globals, save

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def _saved(obj):
    buffer = io.BytesIO()
    save(obj, buffer)
    return buffer.getvalue()


def _rezip(data, replace=None, drop=(), add=None):
    """``data`` (a zip checkpoint) rewritten with records replaced, dropped or added, CRCs recomputed: damage the
    checksum can't see."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            if info.filename not in drop:
                target.writestr(info.filename, (replace or {}).get(info.filename, source.read(info)))
        for name, content in (add or {}).items():
            target.writestr(name, content)
    return out.getvalue()


# ----- committed fixtures: read without PyTorch ----------------------------------------------------------------
def test_reads_torch_zip_fixture(device):
    state = load(FIXTURES / "torch_zip_v2.pt", map_location=device)
    assert isinstance(state, collections.OrderedDict) and list(state)[:4] == ["weight", "row", "transposed", "base"]
    assert isinstance(state["weight"], nn.Parameter) and state["weight"].requires_grad
    assert state["weight"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert state["row"].tolist() == [3.0, 4.0, 5.0] and state["transposed"].stride() == (1, 3)
    assert state["count"].dtype is agnostic.int64 and state["count"].item() == 7
    assert state["half"].dtype is agnostic.bfloat16 and state["half"].float().tolist() == [0.5, -2.0]
    assert state["mask"].tolist() == [True, False] and state["complex"].tolist() == [1 + 2j]
    assert state["step"] == 3 and state["note"] == "hello" and state["dtype"] is agnostic.float16
    assert state["device"] == agnostic.device("cpu") and state["base"].device == agnostic.device(device)
    state["base"][1, 0] = 30.0  # row, transposed and base are views of one storage in the file
    assert state["row"][0].item() == 30.0 and state["transposed"][0, 1].item() == 30.0


def test_reads_torch_legacy_fixture():
    state = load(FIXTURES / "torch_legacy_v1.pt")
    assert state["a"].tolist() == [1.0, 2.0, 3.0] and state["a"].dtype is agnostic.float32
    assert state["b"].dtype is agnostic.int16 and state["b"].tolist() == [1, 2] and state["t"] == (1, 2.5)


def test_hostile_global_is_refused_without_running(capsys):
    with pytest.raises(pickle.UnpicklingError, match="builtins.print") as caught:
        load(FIXTURES / "torch_hostile_global.pt")
    assert isinstance(caught.value, CheckpointError) and "torch_hostile_global.pt" in str(caught.value)
    with pytest.raises(pickle.UnpicklingError):
        load(FIXTURES / "torch_hostile_global.pt", weights_only=True)
    assert capsys.readouterr().out == ""


def test_add_safe_globals_admits_a_trusted_class():
    data = _saved_with_pickled_fraction()
    with pytest.raises(pickle.UnpicklingError, match="fractions.Fraction"):
        load(io.BytesIO(data))
    with safe_globals([fractions.Fraction]):
        assert load(io.BytesIO(data))["f"] == fractions.Fraction(1, 3)
    add_safe_globals([fractions.Fraction])
    try:
        assert load(io.BytesIO(data))["f"] == fractions.Fraction(1, 3)
    finally:
        clear_safe_globals()
    assert load(io.BytesIO(data), weights_only=False)["f"] == fractions.Fraction(1, 3)


def _saved_with_pickled_fraction():
    """An agnostic checkpoint whose data.pkl also holds a Fraction (as torch.save of {'f': Fraction(1, 3)} would)."""
    data = _saved({"w": agnostic.ones(1)})
    archive = zipfile.ZipFile(io.BytesIO(data))
    pickled = archive.read("archive/data.pkl")
    fraction = pickle.dumps(fractions.Fraction(1, 3), protocol=2)[2:-1]  # without PROTO and STOP
    # {'w': ...} is EMPTY_DICT MARK ... SETITEMS STOP: add one more key before STOP
    extra = b"X\x01\x00\x00\x00f" + fraction + b"s"
    return _rezip(data, replace={"archive/data.pkl": pickled[:-1] + extra + b"."})


def test_text_mode_file_is_refused_before_decoding(tmp_path):
    path = tmp_path / "x.pt"
    save({"w": agnostic.ones(1)}, path)
    with open(path) as stream, pytest.raises(TypeError, match="binary mode"):
        load(stream)


def test_bad_arguments_of_save():
    with pytest.raises(ValueError, match="zip format"):
        save({}, io.BytesIO(), _use_new_zipfile_serialization=False)


# ----- damaged archives --------------------------------------------------------------------------------------
def _valid():
    base = agnostic.arange(8.0)
    return _saved(collections.OrderedDict(a=base, b=base[2:5], c=agnostic.ones(2, dtype=agnostic.int64)))


def _data_offset(data, name):
    info = zipfile.ZipFile(io.BytesIO(data)).getinfo(name)
    name_length, extra_length = numpy.frombuffer(data[info.header_offset + 26:info.header_offset + 30], "<u2")
    return info.header_offset + 30 + int(name_length) + int(extra_length)


@pytest.mark.parametrize("damage, message", [
    (lambda d: d + b"\0", "after the end"),
    (lambda d: d + _valid(), "after the end|expected 0"),
    (lambda d: b"PK\x03\x04" + d, "zip|byte"),
    (lambda d: d[:-30], "zip|byte"),
    (lambda d: d[:len(d) // 2], "zip|byte"),
    (lambda d: _rezip(d, drop=("archive/data/0",)), "no record data/0"),
    (lambda d: _rezip(d, add={"archive/data/9": b"\0" * 8}), "belong to no tensor"),
    (lambda d: _rezip(d, add={"archive/extra.py": b"print(1)"}), "unexpected record"),
    (lambda d: _rezip(d, add={"other/data.pkl": b"."}), "outside"),
    (lambda d: _rezip(d, replace={"archive/data/0": b"\0" * 60}), "holds 60 bytes"),
    (lambda d: _rezip(d, replace={"archive/byteorder": b"middle"}), "byteorder"),
    (lambda d: _rezip(d, replace={"archive/data.pkl": b"\x80\x02K\x01.K\x02"}), "bytes after the end"),
    (lambda d: _rezip(d, replace={"archive/data.pkl": b"\x80\x02c__builtin__\neval\n."}), "builtins.eval"),
], ids=["byte-appended", "checkpoint-appended", "prefix", "cut-end-record", "cut-half", "storage-missing",
        "storage-extra", "record-extra", "second-folder", "storage-short", "byteorder", "pickle-trailing",
        "eval-global"])
def test_damaged_zip_checkpoints(damage, message):
    with pytest.raises(CheckpointError, match=message):
        load(io.BytesIO(damage(_valid())))


def test_flipped_data_byte_fails_the_crc():
    data = bytearray(_valid())
    data[_data_offset(bytes(data), "archive/data/0") + 3] ^= 1
    with pytest.raises(CheckpointError, match="CRC"):
        load(io.BytesIO(bytes(data)))


@pytest.mark.parametrize("old, new, message", [
    (b"K\x02(K\x03t", b"K\x07(K\x03t", "reaches element 9"),  # b's offset 2 -> 7: past the storage
    (b"K\x02(K\x03t", b"K\x02(J\x00\x00\x00\x40t", "reaches element"),  # b's size 3 -> 2**30
])
def test_tensor_extents_are_checked_against_storage(old, new, message):
    data = _valid()
    pickled = zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl")
    assert old in pickled
    with pytest.raises(CheckpointError, match=message):
        load(io.BytesIO(_rezip(data, replace={"archive/data.pkl": pickled.replace(old, new, 1)})))


# ----- round trips with PyTorch ------------------------------------------------------------------------------
def _torch_resnet_block(torch):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, bias=False)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4, 2)

    block = Block()
    block.bn.running_mean.uniform_()
    block.bn.num_batches_tracked += 5
    return block


def test_torch_state_dict_to_agnostic_and_back(tmp_path):
    torch = pytest.importorskip("torch")
    block = _torch_resnet_block(torch)
    torch.save(block.state_dict(), tmp_path / "block.pt")
    state = load(tmp_path / "block.pt")
    assert list(state) == list(block.state_dict())
    assert state["bn.num_batches_tracked"].dtype is agnostic.int64 and state["bn.num_batches_tracked"].item() == 5
    for name, tensor in block.state_dict().items():
        numpy.testing.assert_array_equal(state[name].numpy(), tensor.numpy())
    assert state._metadata == block.state_dict()._metadata
    save(state, tmp_path / "back.pt")
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(back) == list(state)
    for name, tensor in block.state_dict().items():
        assert back[name].dtype == tensor.dtype and torch.equal(back[name], tensor)
    fresh = _torch_resnet_block(torch)
    fresh.load_state_dict(back)  # strict: every key and shape matches


def test_agnostic_module_state_dict_loads_in_torch(tmp_path):
    torch = pytest.importorskip("torch")
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    save(model.state_dict(), tmp_path / "model.pt")
    twin = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    twin.load_state_dict(torch.load(tmp_path / "model.pt", weights_only=True))
    x = numpy.random.default_rng(0).standard_normal((5, 4)).astype(numpy.float32)
    expected = model(agnostic.tensor(x)).detach().numpy()
    numpy.testing.assert_allclose(twin(torch.tensor(x)).detach().numpy(), expected, rtol=1e-6, atol=1e-6)


def test_adam_state_both_ways(tmp_path):
    torch = pytest.importorskip("torch")
    weights = [torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2, 2))]
    adam = torch.optim.Adam(weights, lr=0.1, amsgrad=True)
    sum(w.sum() for w in weights).backward()
    adam.step()
    torch.save(adam.state_dict(), tmp_path / "adam.pt")
    state = load(tmp_path / "adam.pt")
    params = [agnostic.ones(3), agnostic.ones(2, 2)]
    mine = optim.Adam(params, lr=0.1, amsgrad=True)
    mine.load_state_dict(state)
    assert state["param_groups"][0]["betas"] == (0.9, 0.999)
    assert state["state"][0]["exp_avg"].tolist() == pytest.approx([0.1] * 3)
    save(mine.state_dict(), tmp_path / "adam_back.pt")
    back = torch.load(tmp_path / "adam_back.pt", weights_only=True)
    again = torch.optim.Adam([torch.nn.Parameter(torch.ones(3)), torch.nn.Parameter(torch.ones(2, 2))], lr=0.1,
                             amsgrad=True)
    again.load_state_dict(back)
    assert torch.equal(again.state_dict()["state"][1]["exp_avg_sq"], adam.state_dict()["state"][1]["exp_avg_sq"])


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
                                  "float32", "float64", "complex64", "complex128"])
def test_every_dtype_both_ways(tmp_path, name):
    torch = pytest.importorskip("torch")
    values = torch.arange(-3, 5).reshape(2, 4) % 2 if name == "bool" else torch.arange(-3, 5).reshape(2, 4)
    theirs = values.to(getattr(torch, name))
    torch.save({"x": theirs, "view": theirs[:, 1:3]}, tmp_path / "t.pt")
    mine = load(tmp_path / "t.pt")
    assert mine["x"].dtype is getattr(agnostic, name)
    assert mine["view"].stride() == (4, 1) and mine["view"].shape == (2, 2)
    save(mine, tmp_path / "a.pt")
    back = torch.load(tmp_path / "a.pt", weights_only=True)
    assert back["x"].dtype == theirs.dtype and torch.equal(back["x"], theirs)
    assert torch.equal(back["view"], theirs[:, 1:3])
    assert back["view"].untyped_storage().data_ptr() == back["x"].untyped_storage().data_ptr()


def test_torch_legacy_files_and_map_location(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(5.0)[1:], "p": torch.nn.Parameter(torch.ones(2))}, tmp_path / "legacy.pt",
               _use_new_zipfile_serialization=False)
    seen = []
    state = load(tmp_path / "legacy.pt", map_location=lambda storage, location: seen.append(location))
    assert state["w"].tolist() == [1.0, 2.0, 3.0, 4.0] and isinstance(state["p"], nn.Parameter)
    assert seen == ["cpu", "cpu"]
    for location in ("cpu", agnostic.device("cpu"), {"cuda:0": "cpu"}):
        assert load(tmp_path / "legacy.pt", map_location=location)["w"].device == agnostic.device("cpu")


def test_torch_reads_what_agnostic_writes_with_containers(tmp_path):
    torch = pytest.importorskip("torch")
    x = agnostic.ones(2)
    obj = {"list": [x, 1, 2.5, None, "s", True], "tuple": (x, (1, 2)), "ordered": collections.OrderedDict(b=1, a=2),
           "bytes": b"\x00\xff", "big": 2 ** 80, "negative": -7, "inf": float("inf"), "set": {1, 2},
           "size": agnostic.zeros(2, 3).shape, "dtype": agnostic.bfloat16, "device": agnostic.device("cpu"),
           "complex": 1 - 2j, "grad": agnostic.ones(1).requires_grad_(True)}
    save(obj, tmp_path / "c.pt")
    back = torch.load(tmp_path / "c.pt", weights_only=True)
    assert back["list"][1:] == [1, 2.5, None, "s", True] and back["tuple"][1] == (1, 2)
    assert back["list"][0] is back["tuple"][0]  # one tensor object saved twice loads as one
    assert isinstance(back["ordered"], collections.OrderedDict) and list(back["ordered"]) == ["b", "a"]
    assert back["bytes"] == b"\x00\xff" and back["big"] == 2 ** 80 and back["negative"] == -7
    assert back["set"] == {1, 2} and back["size"] == torch.Size([2, 3]) and back["dtype"] is torch.bfloat16
    assert back["device"] == torch.device("cpu") and back["complex"] == 1 - 2j and back["grad"].requires_grad
    assert back["inf"] == float("inf")


def test_map_location_to_cuda_of_torch_files(cuda_device, tmp_path):
    torch = pytest.importorskip("torch")
    torch.save({"w": torch.arange(3.0)}, tmp_path / "w.pt")
    loaded = load(tmp_path / "w.pt", map_location=str(cuda_device))
    assert loaded["w"].device == cuda_device and loaded["w"].tolist() == [0.0, 1.0, 2.0]
    save(loaded, tmp_path / "cuda.pt")
    assert load(tmp_path / "cuda.pt")["w"].device == cuda_device
    assert torch.load(tmp_path / "cuda.pt", map_location="cpu", weights_only=True)["w"].tolist() == [0.0, 1.0, 2.0]


def test_bfloat16_without_ml_dtypes_names_the_package(monkeypatch):
    from agnostic import _dtypes

    present = _dtypes._numpy_dtype_of

    def missing(dtype):
        if dtype is agnostic.bfloat16:
            raise TypeError("bfloat16 needs the ml_dtypes package")
        return present(dtype)

    monkeypatch.setattr(_dtypes, "_numpy_dtype_of", missing)
    with pytest.raises(CheckpointError, match="bfloat16 tensors, which need the ml_dtypes package"):
        load(FIXTURES / "torch_zip_v2.pt")
    assert load(FIXTURES / "torch_legacy_v1.pt")["b"].tolist() == [1, 2]  # no bfloat16: loads


def test_integer_tensor_marked_requires_grad_is_refused():
    data = _saved({"c": agnostic.ones(2, dtype=agnostic.int64)})
    pickled = zipfile.ZipFile(io.BytesIO(data)).read("archive/data.pkl")
    assert pickled.count(b"\x89") == 1  # the one requires_grad=False
    with pytest.raises(pickle.UnpicklingError, match="requires_grad"):
        load(io.BytesIO(_rezip(data, replace={"archive/data.pkl": pickled.replace(b"\x89", b"\x88")})))


def test_map_location_errors_pass_through_unchanged():
    def refuse(storage, location):
        raise KeyError("no room")

    with pytest.raises(KeyError, match="no room"):
        load(io.BytesIO(_valid()), map_location=refuse)
