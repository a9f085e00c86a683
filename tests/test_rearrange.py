"""agnostic.func.rearrange: einops patterns against NumPy reshapes/transposes and PyTorch's torch.func.rearrange
(values, dtypes, errors, gradients); and the generic DataLoader/DistributedSampler."""

import typing

import numpy as np
import pytest

import agnostic
from agnostic._rearrange import DimensionBindError
from agnostic.autograd import gradcheck
from agnostic.func import rearrange
from agnostic.utils.data import DataLoader, DistributedSampler, Sampler

IMAGES = (4, 6, 8, 3)  # b h w c
# pattern, keyword lengths, the NumPy equivalent on an array of shape IMAGES
PATTERNS = [
    ("b h w c -> b h w c", {}, lambda a: a),
    ("b h w c -> (b h) w c", {}, lambda a: a.reshape(24, 8, 3)),
    ("b h w c -> h (b w) c", {}, lambda a: a.transpose(1, 0, 2, 3).reshape(6, 32, 3)),
    ("b h w c -> b c h w", {}, lambda a: a.transpose(0, 3, 1, 2)),
    ("b h w c -> b (c h w)", {}, lambda a: a.transpose(0, 3, 1, 2).reshape(4, 144)),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2},
     lambda a: a.reshape(4, 2, 3, 2, 4, 3).transpose(0, 1, 3, 2, 4, 5).reshape(16, 3, 4, 3)),
    ("b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2},
     lambda a: a.reshape(4, 3, 2, 4, 2, 3).transpose(0, 1, 3, 5, 2, 4).reshape(4, 3, 4, 12)),
    ("b (h h1) w c -> b h h1 w c", {"h": 3, "h1": 2}, lambda a: a.reshape(4, 3, 2, 8, 3)),
    ("b ... c -> c ... b", {}, lambda a: a.transpose(3, 1, 2, 0)),
    ("b ... -> b (...)", {}, lambda a: a.reshape(4, 144)),
    ("... c -> c (...)", {}, lambda a: a.transpose(3, 0, 1, 2).reshape(3, 192)),
    ("b h w c ... -> b ... c h w", {}, lambda a: a.transpose(0, 3, 1, 2)),
    ("b h w c -> b 1 h w () c 1", {}, lambda a: a.reshape(4, 1, 6, 8, 1, 3, 1)),
    ("b h w c -> (1 b h) (w 1) c", {}, lambda a: a.reshape(24, 8, 3)),
    ("b h w c -> (c w h b)", {}, lambda a: a.transpose(3, 2, 1, 0).reshape(-1)),
]


@pytest.mark.parametrize("pattern, lengths, reference", PATTERNS, ids=[p[0] for p in PATTERNS])
def test_patterns_match_numpy_and_pytorch(device, pattern, lengths, reference):
    array = np.arange(np.prod(IMAGES), dtype=np.int32).reshape(IMAGES)
    result = rearrange(agnostic.tensor(array, device=device), pattern, **lengths)
    assert result.device == device and result.dtype == agnostic.int32
    np.testing.assert_array_equal(result.cpu().numpy(), reference(array))
    torch = pytest.importorskip("torch", minversion="2.14")  # torch.func.rearrange is new in 2.14
    from torch.func import rearrange as torch_rearrange

    expected = torch_rearrange(torch.tensor(array), pattern, **lengths)
    assert tuple(result.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(result.cpu().numpy(), expected.numpy())


def test_a_sequence_of_tensors_is_stacked_first(device):
    parts = [agnostic.tensor([1.0, 2.0], device=device), agnostic.tensor([3.0, 4.0], device=device)]
    assert rearrange(parts, "n a -> a n").tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert rearrange(tuple(parts), "n a -> (n a)").tolist() == [1.0, 2.0, 3.0, 4.0]


def test_a_permute_is_a_view_of_the_input(device):
    x = agnostic.arange(6.0, device=device).reshape(2, 3)
    transposed = rearrange(x, "a b -> b a")
    transposed[2, 1] = 100.0
    assert x[1, 2].item() == 100.0
    assert not transposed.is_contiguous()


def test_left_hand_ones_are_summed_over_as_pytorch(device):
    # PyTorch sums over a left-hand anonymous axis, which makes integers int64 (and non-unit sizes add up)
    x = agnostic.tensor([[1, 2, 3]], dtype=agnostic.int32, device=device)
    squeezed = rearrange(x, "1 b -> b")
    assert squeezed.dtype == agnostic.int64 and squeezed.tolist() == [1, 2, 3]
    assert rearrange(agnostic.tensor([[1, 2], [3, 4]], device=device), "1 b -> b").tolist() == [4, 6]
    assert rearrange(agnostic.ones(2, 1, 3, device=device), "a () b -> b a").is_contiguous()
    torch = pytest.importorskip("torch", minversion="2.14")  # torch.func.rearrange is new in 2.14
    from torch.func import rearrange as torch_rearrange

    assert torch_rearrange(torch.tensor([[1, 2], [3, 4]]), "1 b -> b").tolist() == [4, 6]
    assert torch_rearrange(torch.tensor([[1, 2, 3]], dtype=torch.int32), "1 b -> b").dtype == torch.int64


def test_zero_dimensional_tensor_without_axes_comes_back_as_it_is(device):
    x = agnostic.tensor(5.0, device=device)
    assert rearrange(x, "->") is x
    assert rearrange(x, " -> 1") is x  # as PyTorch: no axes, nothing done
    assert rearrange(x, "... -> ...") is x


def test_lengths_split_and_infer(device):
    x = agnostic.arange(24, device=device)
    assert rearrange(x, "(a b c) -> a b c", a=2, c=3).shape == (2, 4, 3)
    assert rearrange(x, "(a b) -> b a", a=-1, b=6).shape == (6, 4)  # -1: to infer, as PyTorch's dims
    assert rearrange(agnostic.ones(0, 3, device=device), "(a b) c -> a b c", a=2).shape == (2, 0, 3)


ERRORS = [  # pattern, lengths, input shape, error type, message
    ("a b", {}, (2, 3), ValueError, "single '->' separator"),
    ("a b -> a -> b", {}, (2, 3), ValueError, "single '->' separator"),
    ("a b -> a c", {}, (2, 3), ValueError, "Identifiers only on one side"),
    ("a b -> a b", {"c": 2}, (2, 3), ValueError, "Identifiers not found in rearrange expression"),
    ("a a -> a", {}, (2, 3), ValueError, "duplicate dimension 'a'"),
    ("a (b -> a b", {}, (2, 3), ValueError, "Imbalanced parentheses"),
    ("a b) -> a b", {}, (2, 3), ValueError, "Brackets are not balanced"),
    ("a ((b)) -> a b", {}, (2, 3), ValueError, "one-level"),
    ("a 2 -> a", {}, (2, 3), ValueError, "only supports unnamed axes of size 1"),
    ("a 0 -> a", {}, (2, 3), ValueError, "positive length"),
    ("a b! -> a b", {}, (2, 3), ValueError, "Unknown character '!'"),
    ("a _b -> a _b", {}, (2, 3), ValueError, "Invalid axis identifier: _b"),
    ("a 1b -> a 1b", {}, (2, 3), ValueError, "not a valid python identifier"),
    ("a .. -> a", {}, (2, 3), ValueError, "dots only inside ellipsis"),
    ("a ... ... -> a", {}, (2, 3), ValueError, "only one ellipsis"),
    ("a (...) -> a (...)", {}, (2, 3), ValueError, "Ellipsis is parenthesis in the left side"),
    ("a b -> ... a b", {}, (2, 3), ValueError, "Ellipsis found in right side, but not left side"),
    ("a b -> a b", {"\u2026": 2}, (2, 3), ValueError, "is not an allowed axis identifier"),
    ("a b c -> a b c", {}, (2, 3), ValueError, r"Number of dimensions in pattern \(3\) must be equal"),
    ("a b c ... -> a b c ...", {}, (2, 3), ValueError, r"must be less than or equal"),
    ("a b -> a b", {"b": 3.0}, (2, 3), TypeError, "axis lengths must be integers"),
    ("a b -> a b", {"b": True}, (2, 3), TypeError, "axis lengths must be integers"),
    ("a b -> a b", {"b": 4}, (2, 3), DimensionBindError, r"Dimension sizes to do not match \(3 != 4\)"),
    ("(a c) b -> a c b", {"c": 3}, (2, 3), DimensionBindError, "does not evenly fit"),
    ("(a c) b -> a c b", {}, (2, 3), DimensionBindError, "two dimensions at once"),
    ("(a b) c -> a b c", {"a": 0}, (2, 3), ZeroDivisionError, "modulo by zero"),
]


@pytest.mark.parametrize("pattern, lengths, shape, error, message", ERRORS, ids=[e[0] + str(e[1]) for e in ERRORS])
def test_bad_patterns_raise_pytorchs_errors(device, pattern, lengths, shape, error, message):
    with pytest.raises(error, match=message):
        rearrange(agnostic.ones(shape, device=device), pattern, **lengths)
    torch = pytest.importorskip("torch", minversion="2.14")  # torch.func.rearrange is new in 2.14
    from torch.func import rearrange as torch_rearrange

    with pytest.raises(Exception) as raised:
        torch_rearrange(torch.ones(shape), pattern, **lengths)
    expected = error.__name__ if error is not DimensionBindError else "DimensionBindError"
    assert type(raised.value).__name__ == expected


def test_discouraged_axis_names_warn_as_pytorch():
    with pytest.warns(RuntimeWarning, match="keywords: def"):
        rearrange(agnostic.ones(2, 3), "a def -> def a")
    with pytest.warns(FutureWarning, match="'axis' as an axis name"):
        rearrange(agnostic.ones(2, 3), "a axis -> axis a")


def test_gradients_gradcheck_and_pytorch(device):
    generator = np.random.default_rng(0)
    array = generator.standard_normal((2, 6, 3))
    pattern = "b (h h1) c -> (c h1) b h"
    x = agnostic.tensor(array, device=device, requires_grad=True)
    assert gradcheck(lambda t: rearrange(t, pattern, h1=2), (x,))
    weights = generator.standard_normal((6, 2, 3))
    (rearrange(x, pattern, h1=2) * agnostic.tensor(weights, device=device)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(),
                               weights.reshape(3, 2, 2, 3).transpose(2, 3, 1, 0).reshape(2, 6, 3))
    y = agnostic.tensor(array[:1], device=device, requires_grad=True)
    assert gradcheck(lambda t: rearrange(t, "1 h c -> c h"), (y,))
    torch = pytest.importorskip("torch", minversion="2.14")  # torch.func.rearrange is new in 2.14
    from torch.func import rearrange as torch_rearrange

    t = torch.tensor(array, requires_grad=True)
    (torch_rearrange(t, pattern, h1=2) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), t.grad.numpy())


# ----- generic DataLoader and DistributedSampler ------------------------------------------------------------------
def test_dataloader_and_distributed_sampler_are_generic():
    assert typing.get_origin(DataLoader[int]) is DataLoader
    assert typing.get_args(DistributedSampler[int]) == (int,)
    assert issubclass(DistributedSampler, Sampler)

    class IntLoader(DataLoader[int]):
        pass

    class IntSampler(DistributedSampler[int]):
        pass

    assert typing.Generic in DataLoader.__mro__
    assert [batch.tolist() for batch in IntLoader(range(5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert list(IntSampler(range(5), num_replicas=2, rank=1, shuffle=False)) == [1, 3, 0]
    loader = DataLoader[int](range(3), batch_size=3)  # a subscripted class is callable and records its argument
    assert next(iter(loader)).tolist() == [0, 1, 2]
    with pytest.raises(TypeError):
        DataLoader[int, str]
