"""sort, argsort, msort, topk, kthvalue, isclose/allclose/equal, unique, unique_consecutive, searchsorted and bucketize
behave as PyTorch's: values, indices (stable on ties), NaN placement, result types, errors and gradients."""

import math

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

NAN = math.nan


def host(tensor):
    return tensor.cpu().numpy()


def torch_or_skip():
    return pytest.importorskip("torch")


# ----- sort, argsort, msort ---------------------------------------------------------------------------------------
def test_sort_puts_nan_last_and_keeps_ties_in_order(device):
    x = agnostic.tensor([3.0, NAN, 1.0, 1.0, NAN, 2.0, -0.0, 0.0], device=device)
    values, indices = agnostic.sort(x)
    np.testing.assert_array_equal(host(indices), [6, 7, 2, 3, 5, 0, 1, 4])
    np.testing.assert_array_equal(host(values), [-0.0, 0.0, 1, 1, 2, 3, NAN, NAN])
    assert np.signbit(host(values)[0]) and not np.signbit(host(values)[1])


def test_descending_sort_puts_nan_first_and_keeps_ties_in_order(device):
    x = agnostic.tensor([3.0, NAN, 1.0, 1.0, NAN, 2.0], device=device)
    values, indices = x.sort(descending=True, stable=True)
    np.testing.assert_array_equal(host(indices), [1, 4, 0, 5, 2, 3])
    np.testing.assert_array_equal(host(values), [NAN, NAN, 3, 2, 1, 1])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_matches_torch_stable_sort(device, dtype, descending):
    torch = torch_or_skip()
    values = np.random.default_rng(0).integers(0, 4, (3, 5, 6)).astype(dtype)
    for dim in (0, 1, -1):
        ours = agnostic.tensor(values, device=device).sort(dim, descending, stable=True)
        theirs = torch.from_numpy(values).sort(dim=dim, descending=descending, stable=True)
        np.testing.assert_array_equal(host(ours.values), theirs.values.numpy())
        np.testing.assert_array_equal(host(ours.indices), theirs.indices.numpy())
        assert ours.values.dtype == getattr(agnostic, dtype) and ours.indices.dtype == agnostic.int64


def test_sort_result_is_a_named_pair_printed_as_pytorch():
    result = agnostic.tensor([2, 1]).sort()
    assert repr(result) == ("agnostic.return_types.sort(\nvalues=tensor([1, 2]),\nindices=tensor([1, 0]))")
    values, indices = result
    assert values is result.values and indices is result[1]


def test_sort_of_a_zero_dim_tensor_and_empty_dims(device):
    values, indices = agnostic.tensor(3.0, device=device).sort(-1)
    assert values.shape == () and float(values) == 3.0 and int(indices) == 0
    with pytest.raises(IndexError, match="Dimension out of range"):
        agnostic.tensor(3.0, device=device).sort(1)
    empty = agnostic.zeros(2, 0, device=device).sort(0)
    assert empty.values.shape == (2, 0) and empty.indices.dtype == agnostic.int64


def test_sort_refuses_complex(device):
    with pytest.raises(RuntimeError, match="complex"):
        agnostic.tensor([1j, 2], device=device).sort()


def test_argsort_and_msort(device):
    x = agnostic.tensor([[3, 1, 2], [0, 5, 5]], device=device)
    np.testing.assert_array_equal(host(x.argsort()), [[1, 2, 0], [0, 1, 2]])
    np.testing.assert_array_equal(host(agnostic.argsort(x, dim=1, descending=True)), [[0, 2, 1], [1, 2, 0]])
    np.testing.assert_array_equal(host(x.msort()), [[0, 1, 2], [3, 5, 5]])
    np.testing.assert_array_equal(host(agnostic.tensor(4, device=device).argsort()), 0)


def test_sort_gradient_goes_back_to_each_value_s_place(device):
    x = agnostic.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, 4.0]], device=device, requires_grad=True)
    weights = agnostic.tensor([[1.0, 10.0, 100.0], [1.0, 10.0, 100.0]], device=device)
    (x.sort(descending=True).values * weights).sum().backward()
    np.testing.assert_array_equal(host(x.grad), [[1, 100, 10], [10, 100, 1]])


def test_sort_topk_kthvalue_msort_pass_gradcheck(device):
    x = agnostic.tensor(np.random.default_rng(1).permutation(12).reshape(3, 4) / 7.0, dtype=agnostic.float64,
                        device=device, requires_grad=True)
    assert gradcheck(lambda t: t.sort(0, descending=True).values, (x,))
    assert gradcheck(lambda t: t.topk(2, dim=1, largest=False).values, (x,))
    assert gradcheck(lambda t: t.kthvalue(2, dim=0, keepdim=True).values, (x,))
    assert gradcheck(lambda t: t.kthvalue(3).values, (x,))
    assert gradcheck(lambda t: t.msort(), (x,))


def test_gradients_match_torch(device):
    torch = torch_or_skip()
    values = np.random.default_rng(2).standard_normal((4, 5))
    weights = np.random.default_rng(3).standard_normal((4, 5))
    cases = [lambda t: t.sort(1).values, lambda t: t.topk(3, 0).values, lambda t: t.kthvalue(2, 1).values,
             lambda t: t.msort()]
    for case in cases:
        ours = agnostic.tensor(values, device=device, requires_grad=True)
        theirs = torch.tensor(values, requires_grad=True)
        out, expected = case(ours), case(theirs)
        weight = weights.reshape(-1)[:expected.numel()].reshape(tuple(expected.shape))
        (out * agnostic.tensor(weight, device=device)).sum().backward()
        (expected * torch.from_numpy(weight)).sum().backward()
        np.testing.assert_allclose(host(ours.grad), theirs.grad.numpy())


# ----- topk, kthvalue ---------------------------------------------------------------------------------------------
def test_topk_largest_and_smallest_with_nan_as_largest(device):
    x = agnostic.tensor([1.0, NAN, 3.0, 2.0], device=device)
    values, indices = x.topk(2)
    np.testing.assert_array_equal(host(values), [NAN, 3.0])
    np.testing.assert_array_equal(host(indices), [1, 2])
    values, indices = agnostic.topk(x, 2, largest=False)
    np.testing.assert_array_equal(host(values), [1.0, 2.0])
    np.testing.assert_array_equal(host(indices), [0, 3])


def test_topk_takes_the_first_of_equal_values(device):
    values, indices = agnostic.tensor([1.0, 3.0, 3.0, 2.0, 3.0], device=device).topk(2)
    np.testing.assert_array_equal(host(values), [3.0, 3.0])
    np.testing.assert_array_equal(host(indices), [1, 2])


def test_topk_matches_torch_values(device):
    torch = torch_or_skip()
    values = np.random.default_rng(4).standard_normal((4, 6, 5)).astype(np.float32)
    for dim, k, largest in [(0, 2, True), (1, 6, False), (-1, 0, True), (2, 3, False)]:
        ours = agnostic.tensor(values, device=device).topk(k, dim, largest)
        theirs = torch.from_numpy(values).topk(k, dim, largest)
        np.testing.assert_array_equal(host(ours.values), theirs.values.numpy())
        np.testing.assert_array_equal(host(ours.indices), theirs.indices.numpy())  # no ties in normal samples


@pytest.mark.parametrize("k", [-1, 4])
def test_topk_k_out_of_range(device, k):
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        agnostic.tensor([1.0, 2.0, 3.0], device=device).topk(k)


def test_topk_of_a_zero_dim_tensor(device):
    values, indices = agnostic.tensor(3.0, device=device).topk(1)
    assert values.shape == () and float(values) == 3.0 and int(indices) == 0
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        agnostic.tensor(3.0, device=device).topk(2)


def test_kthvalue_values_indices_and_keepdim(device):
    x = agnostic.tensor([[3.0, 1.0, 2.0], [6.0, 5.0, 4.0]], device=device)
    values, indices = x.kthvalue(2)
    np.testing.assert_array_equal(host(values), [2.0, 5.0])
    np.testing.assert_array_equal(host(indices), [2, 1])
    kept = agnostic.kthvalue(x, 1, dim=0, keepdim=True)
    assert kept.values.shape == (1, 3)
    np.testing.assert_array_equal(host(kept.indices), [[0, 0, 0]])
    assert repr(kept).startswith("agnostic.return_types.kthvalue(")
    nan_last = agnostic.tensor([1.0, NAN, 3.0], device=device).kthvalue(3)
    assert math.isnan(float(nan_last.values)) and int(nan_last.indices) == 1


def test_kthvalue_matches_torch_values(device):
    torch = torch_or_skip()
    values = np.random.default_rng(5).integers(-3, 3, (3, 7)).astype(np.float64)
    for k in range(1, 8):
        ours = agnostic.tensor(values, device=device).kthvalue(k, 1)
        theirs = torch.from_numpy(values).kthvalue(k, 1)
        np.testing.assert_array_equal(host(ours.values), theirs.values.numpy())
        # Among ties PyTorch's pick is unspecified: ours must point at the value.
        np.testing.assert_array_equal(np.take_along_axis(values, host(ours.indices)[:, None], 1)[:, 0],
                                      theirs.values.numpy())


@pytest.mark.parametrize("k", [0, 4])
def test_kthvalue_k_out_of_range(device, k):
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 0"):
        agnostic.tensor([1.0, 2.0, 3.0], device=device).kthvalue(k)


def test_kthvalue_of_an_empty_dim(device):
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        agnostic.zeros(2, 0, device=device).kthvalue(1, 1)


# ----- isclose, allclose, equal -----------------------------------------------------------------------------------
def test_isclose_tolerances_infinities_and_nan(device):
    inf = math.inf
    a = agnostic.tensor([1.0, 1.0, NAN, inf, -inf, 100.0], device=device)
    b = agnostic.tensor([1.0 + 1e-6, 1.1, NAN, inf, inf, 100.0005], device=device)
    np.testing.assert_array_equal(host(agnostic.isclose(a, b)), [True, False, False, True, False, True])
    np.testing.assert_array_equal(host(a.isclose(b, equal_nan=True)), [True, False, True, True, False, True])
    np.testing.assert_array_equal(host(a.isclose(b, rtol=0, atol=0)), [False, False, False, True, False, False])


def test_isclose_compares_integers_without_wrapping(device):
    a = agnostic.tensor([1, 2], dtype=agnostic.uint8, device=device)
    b = agnostic.tensor([2, 1], dtype=agnostic.uint8, device=device)
    np.testing.assert_array_equal(host(agnostic.isclose(a, b, atol=1)), [True, True])
    np.testing.assert_array_equal(host(agnostic.isclose(a, b)), [False, False])
    flags = agnostic.tensor([True, False], device=device)
    np.testing.assert_array_equal(host(flags.isclose(agnostic.tensor([True, True], device=device))), [True, False])


def test_isclose_matches_torch_and_numpy(device):
    torch = torch_or_skip()
    rng = np.random.default_rng(6)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = (a + rng.choice([0, 1e-7, 1e-5, 1e-3], size=a.shape)).astype(np.float32)
    for rtol, atol in [(1e-5, 1e-8), (1e-3, 0), (0, 1e-4)]:
        ours = host(agnostic.isclose(agnostic.tensor(a, device=device), agnostic.tensor(b, device=device), rtol, atol))
        np.testing.assert_array_equal(ours, torch.isclose(torch.from_numpy(a), torch.from_numpy(b), rtol, atol).numpy())
        np.testing.assert_array_equal(ours, np.isclose(a, b, rtol, atol))


def test_isclose_broadcasts_and_refuses_mixed_dtypes_and_negative_tolerances(device):
    a = agnostic.tensor([1.0, 2.0], device=device)
    assert agnostic.isclose(a, agnostic.tensor([[1.0], [2.0]], device=device)).shape == (2, 2)
    with pytest.raises(RuntimeError, match="int64 did not match float32"):
        agnostic.isclose(agnostic.tensor([1, 2], device=device), a)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        agnostic.isclose(a, a, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        a.allclose(a, atol=-1)
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\) must be Tensor, not float"):
        agnostic.isclose(a, 1.0)


def test_allclose_returns_a_python_bool(device):
    a = agnostic.tensor([1.0, 2.0], device=device)
    assert agnostic.allclose(a, agnostic.tensor([1.0, 2.0 + 1e-7], device=device)) is True
    assert a.allclose(agnostic.tensor([1.0, 2.1], device=device)) is False
    assert agnostic.allclose(agnostic.tensor([NAN], device=device), agnostic.tensor([NAN], device=device),
                             equal_nan=True) is True


def test_equal_promotes_and_needs_the_same_shape(device):
    a = agnostic.tensor([1.0, 2.0], device=device)
    assert agnostic.equal(a, agnostic.tensor([1, 2], device=device)) is True
    assert a.equal(agnostic.tensor([1.0, 2.5], device=device)) is False
    assert a.equal(agnostic.tensor([[1.0, 2.0]], device=device)) is False
    assert agnostic.tensor([256], device=device).equal(agnostic.tensor([0], dtype=agnostic.uint8, device=device)) \
        is False
    assert agnostic.tensor([NAN], device=device).equal(agnostic.tensor([NAN], device=device)) is False
    assert agnostic.tensor([0.0], device=device).equal(agnostic.tensor([-0.0], device=device)) is True


# ----- unique, unique_consecutive ---------------------------------------------------------------------------------
def test_unique_sorted_with_inverse_and_counts(device):
    x = agnostic.tensor([[3, 1], [2, 1], [3, 3]], device=device)
    values, inverse, counts = agnostic.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(values), [1, 2, 3])
    np.testing.assert_array_equal(host(inverse), [[2, 0], [1, 0], [2, 2]])
    np.testing.assert_array_equal(host(counts), [2, 1, 3])
    expected, expected_inverse, expected_counts = np.unique(host(x), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(values), expected)
    np.testing.assert_array_equal(host(inverse).reshape(-1), expected_inverse.reshape(-1))
    np.testing.assert_array_equal(host(counts), expected_counts)
    only_counts = x.unique(return_counts=True)
    assert isinstance(only_counts, tuple) and len(only_counts) == 2
    assert isinstance(x.unique(sorted=False), agnostic.Tensor)


def test_unique_keeps_every_nan(device):
    values, inverse, counts = agnostic.tensor([NAN, 1.0, NAN, 1.0], device=device).unique(
        return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(values), [1.0, NAN, NAN])
    np.testing.assert_array_equal(host(inverse), [1, 0, 2, 0])
    np.testing.assert_array_equal(host(counts), [2, 1, 1])


def test_unique_along_a_dim(device):
    x = agnostic.tensor([[1, 2], [1, 2], [0, 5]], device=device)
    rows, inverse, counts = x.unique(dim=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(rows), [[0, 5], [1, 2]])
    np.testing.assert_array_equal(host(inverse), [1, 1, 0])
    np.testing.assert_array_equal(host(counts), [1, 2])
    columns, inverse = agnostic.unique(x, dim=1, return_inverse=True)
    np.testing.assert_array_equal(host(columns), host(x))
    np.testing.assert_array_equal(host(inverse), [0, 1])
    np.testing.assert_array_equal(host(agnostic.unique(agnostic.tensor([[2, 1], [1, 9], [2, 0]], device=device),
                                                       dim=0)), [[1, 9], [2, 0], [2, 1]])


def test_unique_matches_torch(device):
    torch = torch_or_skip()
    values = np.random.default_rng(7).integers(0, 3, (4, 3, 2))
    for dim in (None, 0, 1, 2, -1):
        ours = agnostic.tensor(values, device=device).unique(return_inverse=True, return_counts=True, dim=dim)
        theirs = torch.from_numpy(values).unique(return_inverse=True, return_counts=True, dim=dim)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(host(a), b.numpy())


def test_unique_edge_cases(device):
    values, inverse, counts = agnostic.tensor(5, device=device).unique(return_inverse=True, return_counts=True)
    assert values.shape == (1,) and inverse.shape == () and host(counts).tolist() == [1]
    empty = agnostic.zeros(0, 3, device=device).unique(dim=0, return_inverse=True, return_counts=True)
    assert [tuple(t.shape) for t in empty] == [(0, 3), (0,), (0,)]
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        agnostic.zeros(2, 0, device=device).unique(dim=0)
    with pytest.raises(IndexError, match="no dimensions"):
        agnostic.tensor(5, device=device).unique(dim=0)
    with pytest.raises(NotImplementedError, match="complex"):
        agnostic.tensor([1j], device=device).unique()


def test_unique_consecutive(device):
    x = agnostic.tensor([1, 1, 2, 2, 3, 1, 1, 2], device=device)
    values, inverse, counts = x.unique_consecutive(return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(host(values), [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(host(inverse), [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(host(counts), [2, 2, 1, 2, 1])
    rows, inverse, counts = agnostic.unique_consecutive(
        agnostic.tensor([[1, 2], [1, 2], [0, 5], [1, 2]], device=device), return_inverse=True, return_counts=True,
        dim=0)
    np.testing.assert_array_equal(host(rows), [[1, 2], [0, 5], [1, 2]])
    np.testing.assert_array_equal(host(inverse), [0, 0, 1, 2])
    np.testing.assert_array_equal(host(counts), [2, 1, 1])
    np.testing.assert_array_equal(host(agnostic.tensor([NAN, NAN, 1.0], device=device).unique_consecutive()),
                                  [NAN, NAN, 1.0])


# ----- searchsorted, bucketize ------------------------------------------------------------------------------------
def test_searchsorted_left_and_right(device):
    sequence = agnostic.tensor([1, 3, 5, 7, 9], device=device)
    values = agnostic.tensor([3, 6, 9, 0, 10], device=device)
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, values)), [1, 3, 4, 0, 5])
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, values, right=True)), [2, 3, 5, 0, 5])
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, values, side="right")),
                                  np.searchsorted(host(sequence), host(values), side="right"))
    result = agnostic.searchsorted(sequence, values, out_int32=True)
    assert result.dtype == agnostic.int32


def test_searchsorted_promotes_and_takes_scalars(device):
    sequence = agnostic.tensor([1, 3, 5], device=device)
    scalar = agnostic.searchsorted(sequence, 3.5)
    assert scalar.shape == () and int(scalar) == 2 and scalar.dtype == agnostic.int64
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, agnostic.tensor([[2.5, 3.0]], device=device))),
                                  [[1, 1]])


def test_searchsorted_batched_rows(device):
    sequence = agnostic.tensor([[1, 3, 5], [2, 4, 6]], device=device)
    values = agnostic.tensor([[3, 6, 1], [1, 7, 2]], device=device)
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, values, side="right")), [[2, 3, 1], [0, 3, 1]])
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, values)), [[1, 3, 0], [0, 3, 0]])


def test_searchsorted_with_sorter_and_nan(device):
    np.testing.assert_array_equal(host(agnostic.searchsorted(
        agnostic.tensor([5, 1, 3], device=device), agnostic.tensor([3, 6], device=device),
        sorter=agnostic.tensor([1, 2, 0], device=device))), [1, 3])
    # PyTorch's binary search: a NaN value goes past everything, and a NaN in the sequence sends the search right.
    sequence = agnostic.tensor([1.0, 2.0, NAN], device=device)
    np.testing.assert_array_equal(host(agnostic.searchsorted(sequence, agnostic.tensor([NAN, 1.5, 3.0],
                                                                                      device=device))), [3, 1, 3])


def test_searchsorted_errors(device):
    sequence = agnostic.tensor([1, 3, 5], device=device)
    values = agnostic.tensor([3], device=device)
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        agnostic.searchsorted(sequence, values, side="left", right=True)
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right'"):
        agnostic.searchsorted(sequence, values, side="up")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        agnostic.searchsorted(sequence.reshape(1, 3), agnostic.tensor([[1], [2]], device=device))
    with pytest.raises(RuntimeError, match="scalar only when boundaries tensor dimension is 1"):
        agnostic.searchsorted(sequence.reshape(1, 3), 3)
    with pytest.raises(RuntimeError, match="positive dimension"):
        agnostic.searchsorted(agnostic.tensor(1.0, device=device), values)
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype"):
        agnostic.searchsorted(sequence, values, sorter=agnostic.tensor([0, 1, 2], dtype=agnostic.int32,
                                                                       device=device))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        agnostic.searchsorted(sequence, values, sorter=agnostic.tensor([0, 1, 3], device=device))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        agnostic.searchsorted(sequence, values, sorter=agnostic.tensor([0, 1], device=device))
    with pytest.raises(NotImplementedError):
        agnostic.searchsorted(agnostic.tensor([1j], device=device), agnostic.tensor([1j], device=device))


def test_searchsorted_matches_torch(device):
    torch = torch_or_skip()
    rng = np.random.default_rng(8)
    sequence = np.sort(rng.integers(0, 10, (2, 3, 9)), axis=-1)
    values = rng.integers(-1, 11, (2, 3, 4))
    for right in (False, True):
        ours = agnostic.searchsorted(agnostic.tensor(sequence, device=device), agnostic.tensor(values, device=device),
                                     right=right)
        theirs = torch.searchsorted(torch.from_numpy(sequence), torch.from_numpy(values), right=right)
        np.testing.assert_array_equal(host(ours), theirs.numpy())


def test_bucketize(device):
    boundaries = agnostic.tensor([1, 3, 5, 7, 9], device=device)
    values = agnostic.tensor([[3, 6], [9, 0]], device=device)
    np.testing.assert_array_equal(host(agnostic.bucketize(values, boundaries)), [[1, 3], [4, 0]])
    np.testing.assert_array_equal(host(agnostic.bucketize(values, boundaries, right=True)), [[2, 3], [5, 0]])
    scalar = agnostic.bucketize(3, boundaries, out_int32=True)
    assert scalar.shape == () and int(scalar) == 1 and scalar.dtype == agnostic.int32
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension"):
        agnostic.bucketize(values, boundaries.reshape(1, 5))
    assert not hasattr(agnostic.Tensor, "bucketize") and not hasattr(agnostic.Tensor, "searchsorted")
