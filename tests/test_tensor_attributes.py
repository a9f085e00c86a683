"""The attributes PyTorch programs read off a tensor to learn its kind (is_sparse, is_meta, layout...) and the small
predicates (is_signed, is_same_size, is_nonzero, is_set_to...), as torch.Tensor's."""

import pickle

import pytest

import agnostic

NEVER = ["is_meta", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_mps", "is_xpu",
         "is_xla", "is_ipu", "is_vulkan", "is_maia", "is_mtia"]


@pytest.mark.parametrize("name", NEVER)
def test_kinds_agnostic_lacks_are_false_on_every_tensor(name, device):
    for tensor in (agnostic.zeros(2, 3, device=device), agnostic.ones(2, requires_grad=True, device=device) * 2,
                   agnostic.tensor(1, dtype=agnostic.int64, device=device)):
        assert getattr(tensor, name) is False
    with pytest.raises(AttributeError):
        setattr(agnostic.zeros(1, device=device), name, True)  # read-only, as PyTorch's


def test_pytorch_agrees_on_a_dense_tensor():
    torch = pytest.importorskip("torch")
    reference = torch.zeros(2, 3)
    for name in NEVER:
        assert getattr(reference, name) is False, name
    assert str(reference.layout) == "torch.strided" and repr(agnostic.zeros(2).layout) == "agnostic.strided"


def test_layout_is_strided(device):
    x = agnostic.zeros(2, 3, device=device)
    assert x.layout is agnostic._layout.strided and x.t().layout is x.layout
    assert pickle.loads(pickle.dumps(x.layout)) is x.layout


def test_retains_grad(device):
    x = agnostic.ones(2, requires_grad=True, device=device)
    y, z = x * 2, x * 3
    y.retain_grad()
    assert (x.retains_grad, y.retains_grad, z.retains_grad) == (False, True, False)
    assert agnostic.ones(2, device=device).retains_grad is False


def test_is_signed_follows_the_dtype(device):
    signed = [agnostic.float32, agnostic.float64, agnostic.float16, agnostic.int8, agnostic.int16, agnostic.int32,
              agnostic.int64, agnostic.complex64]
    for dtype in signed:
        assert agnostic.zeros(1, dtype=dtype, device=device).is_signed() is True, dtype
    for dtype in (agnostic.uint8, agnostic.bool):
        assert agnostic.zeros(1, dtype=dtype, device=device).is_signed() is False, dtype


def test_is_signed_matches_pytorch():
    torch = pytest.importorskip("torch")
    for name in ("float32", "int8", "uint8", "bool", "int64", "complex64", "bfloat16"):
        assert agnostic.zeros(1, dtype=getattr(agnostic, name)).is_signed() == \
            torch.zeros(1, dtype=getattr(torch, name)).is_signed(), name


def test_is_nonzero(device):
    assert agnostic.tensor([2.5], device=device).is_nonzero() is True
    assert agnostic.tensor(0, device=device).is_nonzero() is False
    assert agnostic.tensor([[True]], device=device).is_nonzero() is True
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        agnostic.ones(2, device=device).is_nonzero()
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        agnostic.ones(0, device=device).is_nonzero()


def test_is_same_size_and_is_set_to(device):
    x = agnostic.zeros(2, 3, device=device)
    assert x.is_same_size(agnostic.ones(2, 3, device=device)) and not x.is_same_size(agnostic.ones(3, 2))
    assert x.is_set_to(x) and x.is_set_to(x.view(2, 3)) and x.is_set_to(x.detach())
    assert not x.is_set_to(x.clone()) and not x.is_set_to(x.view(6)) and not x.is_set_to(x[1:])
    assert not x.is_set_to(x.t()) and not x.is_set_to(x.view(agnostic.int32))


def test_lazy_bits_and_modes_are_off(device):
    x = agnostic.tensor([1 + 2j], device=device)
    assert x.conj().is_conj() is False and (-x).is_neg() is False
    assert x.is_inference() is False and x.is_distributed() is False
    with agnostic.no_grad():
        assert agnostic.ones(1, device=device).is_inference() is False


def test_predicates_match_pytorch():
    torch = pytest.importorskip("torch")
    ours, theirs = agnostic.arange(6.0).view(2, 3), torch.arange(6.0).view(2, 3)
    assert ours.is_set_to(ours.view(2, 3)) == theirs.is_set_to(theirs.view(2, 3)) is True
    assert ours.is_set_to(ours[1:]) == theirs.is_set_to(theirs[1:]) is False
    assert ours.is_same_size(ours.t()) == theirs.is_same_size(theirs.t()) is False
    for values in ([0.0], [3], [True], 0.5):
        assert agnostic.tensor(values).is_nonzero() == torch.tensor(values).is_nonzero()
    assert ours.is_neg() == theirs.is_neg() and ours.is_inference() == theirs.is_inference()
