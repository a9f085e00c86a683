"""Fuzzing every checkpoint loader with mutated files: each mutant raises the documented error (CheckpointError,
pickle.UnpicklingError) or loads a result equal to the original. Where a format has a checksum (PyTorch's zip: a
CRC-32 per record) any damage must be found; where it has none (PyTorch's legacy files, agnostic's first format,
safetensors), structural damage (lengths, offsets, truncation, appended bytes, header edits) must be found and a
flipped data byte must at least never escape as another error type.

Unless ``HYPOTHESIS_PROFILE=dev`` is set: derandomized, 100 examples per format and mutation kind (the ``ci`` run);
with it, 1,000 random examples each.
"""

import collections
import io
import json
import os
import pathlib
import pickle
import struct
import warnings
import zipfile

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agnostic
from agnostic.serialization import CheckpointError, _agnostic_format, load, save
from agnostic.utils import safetensors as agnostic_safetensors

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
_LONG = os.environ.get("HYPOTHESIS_PROFILE") == "dev"  # asked for by name; the default stays the bounded run
FUZZ = settings(max_examples=1000 if _LONG else 100, derandomize=not _LONG, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DOCUMENTED = (CheckpointError, pickle.UnpicklingError)


def _state():
    base = agnostic.arange(12.0).reshape(3, 4)
    return collections.OrderedDict(
        weight=agnostic.nn.Parameter(agnostic.ones(2, 3)), base=base, row=base[1], column=base[:, 2],
        steps=agnostic.tensor([3, 4]), half=agnostic.tensor([0.5, 2.0]).to(agnostic.bfloat16),
        config={"lr": 0.1, "betas": (0.9, 0.999), "name": "adam"}, count=7)


def _zip_file():
    buffer = io.BytesIO()
    save(_state(), buffer)
    return buffer.getvalue()


def _agnostic_file():
    return _agnostic_format.encode({"a": agnostic.arange(10.0),
                                    "b": [1, "two", agnostic.ones(3, dtype=agnostic.int64)]})


def _safetensors_file():
    return agnostic_safetensors.save({"a": agnostic.arange(10.0), "b": agnostic.ones(3, dtype=agnostic.int64)},
                                     metadata={"note": "x"})


FORMATS = {
    "zip": (_zip_file(), load),
    "torch-zip": ((FIXTURES / "torch_zip_v2.pt").read_bytes(), load),
    "legacy": ((FIXTURES / "torch_legacy_v1.pt").read_bytes(), load),
    "agnostic": (_agnostic_file(), load),
    "safetensors": (_safetensors_file(), agnostic_safetensors.load),
}
CHECKSUMMED = {"zip", "torch-zip"}


def _load(name, data):
    return FORMATS[name][1](io.BytesIO(data) if FORMATS[name][1] is load else data)


def _equal(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, agnostic.Tensor):
        return (a.dtype is b.dtype and a.shape == b.shape and a.stride() == b.stride()
                and a.requires_grad == b.requires_grad
                and numpy.ascontiguousarray(a.detach().numpy()).tobytes()
                == numpy.ascontiguousarray(b.detach().numpy()).tobytes())
    if isinstance(a, dict):
        same_order = list(a) == list(b) if isinstance(a, collections.OrderedDict) else set(a) == set(b)
        return same_order and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and a != a:
        return b != b
    return a == b


ORIGINALS = {name: _load(name, data) for name, (data, _) in FORMATS.items()}


def _check(name, mutant, must_match):
    try:
        result = _load(name, mutant)
    except DOCUMENTED as error:
        assert "agnostic" in str(error)
        return
    if must_match:
        assert _equal(result, ORIGINALS[name]), f"a damaged {name} file loaded as something else"


def _structural_fields(data):
    """Byte offsets of the length and offset fields of a zip's local headers, directory and end record."""
    fields = []
    for signature, offsets in ((b"PK\x03\x04", (14, 18, 22, 26, 28)), (b"PK\x01\x02", (16, 20, 24, 28, 30, 42)),
                               (b"PK\x05\x06", (8, 10, 12, 16, 20))):
        start = data.find(signature)
        while start >= 0:
            fields += [start + offset for offset in offsets]
            start = data.find(signature, start + 1)
    return fields


@pytest.mark.parametrize("name", FORMATS)
@FUZZ
@given(data=st.data())
def test_flipped_bytes(name, data):
    original = FORMATS[name][0]
    mutant = bytearray(original)
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(mutant) - 1))
        mutant[position] ^= data.draw(st.integers(1, 255))
    _check(name, bytes(mutant), must_match=name in CHECKSUMMED)


@pytest.mark.parametrize("name", FORMATS)
@FUZZ
@given(data=st.data())
def test_truncated_or_extended(name, data):
    original = FORMATS[name][0]
    if data.draw(st.booleans()):
        mutant = original[:data.draw(st.integers(0, len(original) - 1))]
    else:
        tail = data.draw(st.one_of(st.binary(min_size=1, max_size=80), st.just(original)))
        mutant = original + tail
    _check(name, mutant, must_match=True)


@pytest.mark.parametrize("name", FORMATS)
@FUZZ
@given(data=st.data())
def test_length_and_offset_edits(name, data):
    original = bytearray(FORMATS[name][0])
    delta = data.draw(st.integers(-64, 64).filter(bool))
    if name in ("agnostic", "safetensors"):
        (length,) = struct.unpack("<Q", original[:8])
        if data.draw(st.booleans()):
            original[:8] = struct.pack("<Q", max(length + delta, 0))
        else:  # move one number of the header (an offset, a shape entry) keeping its length field right
            header = original[8:8 + length]
            end = header.find(b'"object"')  # the structure's own numbers are values, not lengths or offsets
            numbers = [i for i, c in enumerate(header[:end if end > 0 else None]) if chr(c).isdigit()]
            position = data.draw(st.sampled_from(numbers))
            header[position] = ord(str((int(chr(header[position])) + delta) % 10))
            original[8:8 + length] = header
    elif name == "legacy":
        position = data.draw(st.integers(0, len(original) - 8))
        value = struct.unpack("<Q", original[position:position + 8])[0]
        original[position:position + 8] = struct.pack("<Q", (value + delta) % (1 << 64))
    else:
        position = data.draw(st.sampled_from(_structural_fields(bytes(original))))
        width = 2 if data.draw(st.booleans()) else 4
        value = int.from_bytes(original[position:position + width], "little")
        original[position:position + width] = ((value + delta) % (1 << 8 * width)).to_bytes(width, "little")
    _check(name, bytes(original), must_match=name != "legacy")


def _rezip(data, edit):
    source = zipfile.ZipFile(io.BytesIO(data))
    records = [(info.filename, source.read(info)) for info in source.infolist()]
    out = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(out, "w") as target:
        warnings.simplefilter("ignore")  # duplicate names are one of the edits
        for filename, content in edit(records):
            target.writestr(filename, content)
    return out.getvalue()


@pytest.mark.parametrize("name", ["zip", "torch-zip"])
@FUZZ
@given(data=st.data())
def test_zip_record_edits(name, data):
    original = FORMATS[name][0]
    kind = data.draw(st.sampled_from(["drop", "duplicate", "rename", "add", "swap", "pickle"]))

    def edit(records):
        index = data.draw(st.integers(0, len(records) - 1))
        filename, content = records[index]
        if kind == "drop":
            return records[:index] + records[index + 1:]
        if kind == "duplicate":
            return records + [records[index]]
        if kind == "rename":
            return records[:index] + [(filename + data.draw(st.sampled_from(["x", "/", "0"])), content)] \
                + records[index + 1:]
        if kind == "add":
            return records + [(records[0][0].split("/")[0] + "/" + data.draw(st.sampled_from(
                ["data/99", "extra", "data.pkl2", ".data/x/y"])), b"\0" * 8)]
        if kind == "swap":
            other = data.draw(st.integers(0, len(records) - 1))
            swapped = list(records)
            swapped[index] = (filename, records[other][1])
            swapped[other] = (records[other][0], content)
            return swapped
        pickled = bytearray(dict(records)[records[0][0].split("/")[0] + "/data.pkl"])
        position = data.draw(st.integers(0, len(pickled) - 1))
        pickled[position] ^= data.draw(st.integers(1, 255))
        return [(f, bytes(pickled) if f.endswith("/data.pkl") else c) for f, c in records]

    try:
        mutant = _rezip(original, edit)
    except (ValueError, UserWarning):
        return  # zipfile refused to write it (a duplicate name on some Python versions)
    # with recomputed CRCs a changed pickle is a crafted file, not damage: only the error type is checked
    safe_kinds = {"drop", "rename", "add"}
    _check(name, mutant, must_match=kind in safe_kinds)


@pytest.mark.parametrize("name", ["agnostic", "safetensors"])
@FUZZ
@given(data=st.data())
def test_header_edits(name, data):
    original = FORMATS[name][0]
    (length,) = struct.unpack("<Q", original[:8])
    header = json.loads(original[8:8 + length])
    body = original[8 + length:]
    kind = data.draw(st.sampled_from(["drop-key", "null", "string", "list", "nested"]))
    paths = []

    def walk(node, path):
        paths.append(path)
        if isinstance(node, dict):
            for key, value in node.items():
                walk(value, path + (key,))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, path + (i,))

    walk(header, ())
    path = data.draw(st.sampled_from(paths[1:]))
    parent = header
    for step in path[:-1]:
        parent = parent[step]
    if kind == "drop-key" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = {"null": None, "string": "x", "list": [1, [2]], "nested": {"k": [[]]},
                            "drop-key": -1}[kind]
    text = json.dumps(header).encode()
    if name == "agnostic":
        text += b" " * (-(8 + len(text)) % 64)
    # the tensor table must be checked; values inside the saved structure are data (the format has no checksum)
    _check(name, struct.pack("<Q", len(text)) + text + body, must_match=path[0] not in ("object", "__metadata__"))
