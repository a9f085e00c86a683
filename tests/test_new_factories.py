"""Tensor.new_zeros/new_ones/new_empty/new_full/new_tensor: PyTorch's signatures, dtype and device from self."""

import numpy as np
import pytest

import agnostic


@pytest.mark.parametrize("name, value", [("new_zeros", 0), ("new_ones", 1)])
def test_sizes_as_ints_or_a_sequence_with_self_dtype_and_device(device, name, value):
    base = agnostic.ones(1, dtype=agnostic.float64, device=device)
    for args in [(2, 3), ((2, 3),), ([2, 3],), (agnostic.Size([2, 3]),)]:
        made = getattr(base, name)(*args)
        assert made.shape == (2, 3) and made.dtype is agnostic.float64 and made.device == base.device
        np.testing.assert_array_equal(made.cpu().numpy(), np.full((2, 3), value))
    assert getattr(base, name)(size=(4,)).shape == (4,)
    assert getattr(base, name)(()).shape == () and getattr(base, name)(0).shape == (0,)


def test_dtype_device_and_requires_grad_override_self(device):
    base = agnostic.ones(2, device=device, requires_grad=True)
    made = base.new_zeros(3, dtype=agnostic.int32, device="cpu")
    assert made.dtype is agnostic.int32 and made.device.type == "cpu"
    assert not base.new_ones(2).requires_grad  # a new leaf, not part of self's graph
    assert base.new_ones(2, requires_grad=True).requires_grad


def test_new_empty_has_self_dtype_and_the_shape(device):
    made = agnostic.ones(1, dtype=agnostic.int16, device=device).new_empty(2, 2)
    assert made.shape == (2, 2) and made.dtype is agnostic.int16


def test_new_full_takes_self_dtype_not_the_value(device):
    base = agnostic.tensor([1, 2], device=device)
    made = base.new_full((2, 2), 3.7)
    assert made.dtype is agnostic.int64 and made.tolist() == [[3, 3], [3, 3]]
    assert base.new_full([3], 2.5, dtype=agnostic.float32).tolist() == [2.5, 2.5, 2.5]
    with pytest.raises(TypeError, match="must be tuple of ints, not int"):
        base.new_full(2, 3)


def test_bad_sizes_raise_pytorch_errors(device):
    base = agnostic.ones(1, device=device)
    with pytest.raises(TypeError, match="tuple of ints, not float"):
        base.new_zeros(2.5)
    with pytest.raises(RuntimeError, match="negative dimension"):
        base.new_ones(-1)


def test_new_tensor_copies_with_self_dtype(device):
    base = agnostic.zeros(1, dtype=agnostic.float64, device=device)
    made = base.new_tensor([1, 2])
    assert made.dtype is agnostic.float64 and made.device == base.device and made.tolist() == [1.0, 2.0]
    source = agnostic.tensor([1.0], device=device)
    copy = base.new_tensor(source)
    copy[0] = 5
    assert source.item() == 1.0


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    base, reference = agnostic.ones(2, dtype=agnostic.float16), torch.ones(2, dtype=torch.float16)
    for name, args in [("new_zeros", (2, 1)), ("new_ones", ((3,),)), ("new_full", ((2,), 7.9))]:
        ours, theirs = getattr(base, name)(*args), getattr(reference, name)(*args)
        assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
