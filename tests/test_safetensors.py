"""agnostic.utils.safetensors: files safetensors.torch reads and writes, bfloat16 round trips, shared and
non-contiguous tensors refused as safetensors.torch refuses them, nested state through the documented metadata."""

import io
import json
import struct

import numpy
import pytest

import agnostic
from agnostic import optim
from agnostic.serialization import CheckpointError
from agnostic.utils import safetensors as st


@pytest.mark.parametrize("dtype", [agnostic.bool, agnostic.uint8, agnostic.int8, agnostic.int16, agnostic.int32,
                                   agnostic.int64, agnostic.float16, agnostic.bfloat16, agnostic.float32,
                                   agnostic.float64, agnostic.complex64])
def test_round_trip_every_dtype(device, dtype, tmp_path):
    values = agnostic.arange(-2, 4, device=device).reshape(2, 3)
    tensor = (values % 2 == 0) if dtype is agnostic.bool else values.to(dtype)
    st.save_file({"x": tensor, "empty": agnostic.zeros(0, 2, device=device).to(dtype)}, tmp_path / "a.safetensors")
    loaded = st.load_file(tmp_path / "a.safetensors", device=device)
    assert loaded["x"].dtype is dtype and loaded["x"].device == agnostic.device(device)
    assert loaded["x"].tolist() == tensor.tolist() and loaded["empty"].shape == (0, 2)


def test_layout_matches_the_safetensors_spec():
    data = st.save({"w": agnostic.tensor([1.0, 2.0])}, metadata={"note": "hi"})
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    assert header["w"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["__metadata__"] == {"note": "hi"}
    assert numpy.frombuffer(data[8 + length:], "<f4").tolist() == [1.0, 2.0]


def test_both_ways_with_safetensors_torch():
    torch = pytest.importorskip("torch")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    data = st.save({"w": agnostic.arange(6.0).reshape(2, 3), "h": agnostic.ones(2, dtype=agnostic.bfloat16)})
    theirs = safetensors_torch.load(data)
    assert torch.equal(theirs["w"], torch.arange(6.0).reshape(2, 3)) and theirs["h"].dtype == torch.bfloat16
    back = st.load(safetensors_torch.save({"b": torch.tensor([0.5, -1.5], dtype=torch.bfloat16)}))
    assert back["b"].dtype is agnostic.bfloat16 and back["b"].float().tolist() == [0.5, -1.5]


def test_shared_and_non_contiguous_tensors_are_refused():
    x = agnostic.arange(6.0).reshape(2, 3)
    with pytest.raises(RuntimeError, match="share memory"):
        st.save({"a": x, "row": x[1]})
    with pytest.raises(ValueError, match="non contiguous"):
        st.save({"t": x.t()})
    with pytest.raises(ValueError, match="save_state_file"):
        st.save({"nested": {"a": x}})
    with pytest.raises(ValueError, match="complex128"):
        st.save({"c": agnostic.zeros(1, dtype=agnostic.complex128)})
    assert set(st.load(st.save({"a": x, "b": x[1].clone()}))) == {"a", "b"}


def test_optimizer_state_through_metadata(tmp_path):
    params = [agnostic.ones(3), agnostic.ones(2)]
    adam = optim.Adam(params, lr=0.1)
    for p in params:
        p.grad = agnostic.ones_like(p)
    adam.step()
    path = tmp_path / "adam.safetensors"
    st.save_state_file({"optimizer": adam.state_dict(), "epoch": 3, "best": float("inf")}, path)
    names = set(st.load_file(path))  # other tools see the flattened tensors
    assert "optimizer.state.0.exp_avg" in names and "optimizer.state.1.exp_avg_sq" in names
    loaded = st.load_state_file(path)
    assert loaded["epoch"] == 3 and loaded["best"] == float("inf")
    assert loaded["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)
    fresh = optim.Adam([agnostic.ones(3), agnostic.ones(2)], lr=0.1)
    fresh.load_state_dict(loaded["optimizer"])
    assert fresh.state[fresh.param_groups[0]["params"][0]]["exp_avg"].tolist() == pytest.approx([0.1] * 3)
    assert json.loads(st.metadata_of(path)[st.STRUCTURE_KEY])["dict"][1] == ["epoch", 3]


@pytest.mark.parametrize("damage", [
    lambda d: d[:-1], lambda d: d + b"\0", lambda d: struct.pack("<Q", 10 ** 12) + d[8:],
    lambda d: d[:8] + d[8:].replace(b'"F32"', b'"X32"'), lambda d: d[:8] + d[8:].replace(b"[0,8]", b"[1,9]"),
    lambda d: b"", lambda d: d[:8] + b"[" * (len(d) - 8),
], ids=["truncated", "appended", "header-length", "dtype", "offsets", "empty", "nested"])
def test_damaged_files_raise_checkpoint_error(damage):
    data = st.save({"w": agnostic.tensor([1.0, 2.0])})
    with pytest.raises(CheckpointError, match="not a valid safetensors file|doesn't support"):
        st.load(damage(data))


def test_damaged_structure_metadata(tmp_path):
    path = tmp_path / "s.safetensors"
    st.save_file({"a": agnostic.ones(1)}, path, metadata={st.STRUCTURE_KEY: '{"tensor": "missing"}'})
    with pytest.raises(CheckpointError, match="bad structure node"):
        st.load_state_file(path)
    st.save_file({"a": agnostic.ones(1)}, path)
    with pytest.raises(CheckpointError, match="no 'agnostic.structure'"):
        st.load_state_file(path)
    with pytest.raises(TypeError, match="binary mode"):
        st.load_file(io.StringIO("x"))
