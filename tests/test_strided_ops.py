"""Strided views and their relatives (as_strided, storage_offset, empty_strided, the *_scatter ops, index_reduce, put,
the unsafe splits, the *_copy forms, Tensor.new, resize_): PyTorch's values, errors, memory sharing and gradients on
every device, checked against NumPy references and, where installed, PyTorch itself."""

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck


def _on(device, values, dtype=None):
    return agnostic.tensor(values, dtype=dtype, device=device)


def _float64(device, shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    return agnostic.tensor(values, dtype=agnostic.float64, device=device, requires_grad=True)


# ----- storage_offset, as_strided ---------------------------------------------------------------------------------
def test_storage_offset_counts_elements_from_the_allocation(device):
    x = agnostic.arange(12, device=device).reshape(3, 4)
    assert x.storage_offset() == 0
    assert x[2:].storage_offset() == 8
    assert x[1:, 2:].storage_offset() == 6
    assert x.t()[1].storage_offset() == 1
    assert x.reshape(-1)[5:][2:].storage_offset() == 7
    assert x.clone()[1].storage_offset() == 4


def test_as_strided_is_a_view_of_the_memory(device):
    x = agnostic.arange(10.0, device=device)
    view = agnostic.as_strided(x, (2, 3), (3, 1), 1)
    expected = np.lib.stride_tricks.as_strided(np.arange(10.0)[1:], (2, 3), (24, 8))
    np.testing.assert_array_equal(view.cpu().numpy(), expected)
    assert view.stride() == (3, 1) and view.storage_offset() == 1
    view[1, 2] = -1.0
    assert x[6].item() == -1.0  # written through to the base


def test_as_strided_offset_defaults_to_the_inputs_and_is_absolute_when_given(device):
    x = agnostic.arange(10, device=device)
    tail = x[4:]
    assert tail.as_strided((3,), (2,)).tolist() == [4, 6, 8]
    assert tail.as_strided((3,), (2,), 0).tolist() == [0, 2, 4]  # from the allocation's start, not the view's


def test_as_strided_overlapping_and_zero_strides(device):
    x = agnostic.arange(5, device=device)
    assert x.as_strided((3, 3), (1, 1)).tolist() == [[0, 1, 2], [1, 2, 3], [2, 3, 4]]
    assert x.as_strided((2, 2), (0, 1), 3).tolist() == [[3, 4], [3, 4]]
    assert x.as_strided((0, 4), (1, 1), 5).shape == (0, 4)


def test_as_strided_refuses_what_pytorch_refuses(device):
    x = agnostic.arange(10.0, device=device)
    # Past the end by more than CuPy's pool rounds an allocation up to (512 bytes), which is what CUDA checks.
    with pytest.raises(RuntimeError, match=r"sizes \[40, 40\], strides \[3, 1\], storage offset 0, and itemsize 4 "
                                           r"requiring a storage size of 628 are out of bounds for storage of size"):
        x.as_strided((40, 40), (3, 1))
    with pytest.raises(RuntimeError, match="storage offset 2, and itemsize 4 requiring a storage size of 60 are out "
                                           "of bounds for storage of size 40"):
        x[2:].as_strided((4, 4), (3, 1))
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        x.as_strided((2,), (-1,))
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        x.as_strided((2,), (1,), -1)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        x.as_strided((2, 2), (1,))


def test_as_strided_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = agnostic.arange(24.0, device=device), torch.arange(24.0)
    cases = [((2, 3), (4, 1), None), ((3, 2), (1, 5), 2), ((4,), (0,), 7), ((2, 2, 2), (6, 2, 1), 3)]
    for size, stride, offset in cases:
        got = ours[1:].as_strided(size, stride, offset)
        want = theirs[1:].as_strided(size, stride, offset)
        assert got.tolist() == want.tolist() and got.stride() == want.stride()
        assert got.storage_offset() == want.storage_offset()


def test_as_strided_gradcheck(device):
    x = _float64(device, (10,))
    assert gradcheck(lambda a: a.as_strided((3, 2), (2, 1), 1), (x,))
    assert gradcheck(lambda a: a.as_strided((3, 3), (1, 1)), (x,))  # overlapping windows add up
    assert gradcheck(lambda a: a[2:].as_strided((2, 2), (1, 2)), (x,))
    assert gradcheck(lambda a: a.reshape(2, 5).t().as_strided((2, 2), (5, 1), 0), (x,))


def test_as_strided_backward_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(1).standard_normal(12)
    ours = agnostic.tensor(values, device=device, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    weights = np.arange(1.0, 10.0).reshape(3, 3)
    (ours.as_strided((3, 3), (2, 1), 1) * agnostic.tensor(weights, device=device)).sum().backward()
    (theirs.as_strided((3, 3), (2, 1), 1) * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(ours.grad.cpu().numpy(), theirs.grad.numpy())
    expanded = agnostic.tensor(values[:3], device=device, requires_grad=True)
    expanded_torch = torch.tensor(values[:3], requires_grad=True)
    (expanded.expand(2, 3).as_strided((2, 2), (1, 1)) * 2).sum().backward()
    (expanded_torch.expand(2, 3).as_strided((2, 2), (1, 1)) * 2).sum().backward()
    np.testing.assert_allclose(expanded.grad.cpu().numpy(), expanded_torch.grad.numpy())


def test_as_strided_in_place(device):
    x = agnostic.arange(6, device=device)
    view = x[1:]
    assert view.as_strided_((2, 2), (1, 2)) is view
    assert view.tolist() == [[1, 3], [2, 4]] and view.storage_offset() == 1
    with pytest.raises(RuntimeError, match="requires grad"):
        agnostic.ones(3, requires_grad=True).as_strided_((2,), (1,))


def test_as_strided_scatter(device):
    x = agnostic.arange(4.0, device=device)
    result = agnostic.as_strided_scatter(x, _on(device, [10.0, 20.0]), (2,), (2,), 1)
    assert result.tolist() == [0.0, 10.0, 2.0, 20.0] and x.tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
        x.as_strided_scatter(_on(device, [1.0, 2.0, 3.0]), (2,), (2,), 1)
    a, b = _float64(device, (3, 4)), _float64(device, (2, 2), seed=1)
    assert gradcheck(lambda a, b: agnostic.as_strided_scatter(a, b, (2, 2), (4, 1), 5), (a, b))


# ----- empty_strided, new, resize_, output_nr ---------------------------------------------------------------------
def test_empty_strided(device):
    made = agnostic.empty_strided((2, 3), (1, 2), dtype=agnostic.float64, device=device)
    assert made.shape == (2, 3) and made.stride() == (1, 2) and made.dtype == agnostic.float64
    assert made.device == agnostic.device(device) and made.storage_offset() == 0
    made.copy_(agnostic.arange(6.0, device=device).reshape(2, 3))
    assert made.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    other = agnostic.ones(1, dtype=agnostic.int32, device=device).new_empty_strided((2, 2), (2, 1))
    assert other.dtype == agnostic.int32 and other.stride() == (2, 1) and other.device == made.device
    assert agnostic.empty_strided((0, 3), (3, 1), device=device).shape == (0, 3)
    assert agnostic.empty_strided((2,), (1,), requires_grad=True).requires_grad


def test_new_legacy_constructor(device):
    x = agnostic.tensor([1.5], device=device)
    assert x.new(2, 3).shape == (2, 3) and x.new(2, 3).dtype == agnostic.float32
    assert x.new(agnostic.Size([4])).shape == (4,)
    data = x.new([1, 2])
    assert data.tolist() == [1.0, 2.0] and data.dtype == agnostic.float32 and data.device == x.device
    assert x.new((1, 2)).tolist() == [1.0, 2.0]  # a tuple is data, as in PyTorch
    assert x.new().shape == (0,)
    assert agnostic.tensor([1, 2], device=device).new([1.5]).tolist() == [1]
    other = agnostic.tensor([3.0, 4.0], device=device)
    alias = x.new(other)
    alias[0] = 7.0
    assert other[0].item() == 7.0  # shares memory
    with pytest.raises(TypeError, match="data must be a sequence"):
        x.new(2.5)
    with pytest.raises(TypeError):
        x.new(agnostic.tensor([1, 2], device=device))


def test_resize_keeps_leading_elements(device):
    x = agnostic.arange(6.0, device=device)
    view = x[:]
    assert x.resize_(2, 2) is x
    assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]] and x.stride() == (2, 1)
    x[0, 0] = 9.0
    assert view[0].item() == 9.0  # shrinking keeps the memory
    x.resize_(3)
    assert x.tolist() == [9.0, 1.0, 2.0]
    x.resize_(8)
    assert x.shape == (8,) and x[:6].tolist() == [9.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    tail = agnostic.arange(6.0, device=device)[2:]
    tail.resize_(2)
    assert tail.tolist() == [2.0, 3.0] and tail.storage_offset() == 2
    shaped = agnostic.arange(5, device=device).resize_as_(agnostic.zeros(2, 2))
    assert shaped.tolist() == [[0, 1], [2, 3]]
    transposed = agnostic.arange(6, device=device).reshape(2, 3).t()
    assert transposed.resize_(3, 2).stride() == (1, 3)  # same shape: nothing changes, as in PyTorch


def test_resize_refuses_tensors_that_require_grad(device):
    leaf = agnostic.zeros(2, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        leaf.resize_(3)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        (leaf * 2).resize_as_(agnostic.zeros(3))


def test_resize_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    ours, theirs = agnostic.arange(12, device=device), torch.arange(12)
    for sizes in [(3, 2), (5,), (2, 2, 2), (12,), (1, 3)]:
        ours.resize_(*sizes)
        theirs.resize_(*sizes)
        assert ours.tolist() == theirs.tolist() and ours.stride() == theirs.stride()


def test_output_nr(device):
    pieces = agnostic.arange(4.0, device=device, requires_grad=True).split(2)
    assert [piece.output_nr for piece in pieces] == [0, 1]
    assert agnostic.zeros(2, device=device).output_nr == 0


# ----- the scattering forms of views ------------------------------------------------------------------------------
def test_slice_scatter_values(device):
    base = np.zeros((4, 5))
    src = np.arange(8.0).reshape(4, 2)
    expected = base.copy()
    expected[:, 1:5:2] = src
    got = agnostic.slice_scatter(_on(device, base), _on(device, src), dim=1, start=1, step=2)
    np.testing.assert_array_equal(got.cpu().numpy(), expected)
    assert _on(device, base).slice_scatter(_on(device, np.ones((2, 5))), start=-2)[2:].sum().item() == 10
    ints = agnostic.zeros(2, 2, device=device).slice_scatter(agnostic.ones(1, 2, dtype=agnostic.int64, device=device),
                                                          end=1)
    assert ints.dtype == agnostic.float32 and ints.tolist() == [[1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(RuntimeError, match=r"src size = \[4, 1\], slice size = \[4, 2\]"):
        agnostic.slice_scatter(_on(device, base), agnostic.ones(4, 1, dtype=agnostic.float64, device=device), 1, 0,
                               None, 3)
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        agnostic.slice_scatter(_on(device, base), _on(device, src), 1, step=0)


def test_select_and_diagonal_scatter_values(device):
    x = agnostic.zeros(4, 3, device=device)
    assert agnostic.select_scatter(x, agnostic.ones(3, device=device), 0, -1)[3].tolist() == [1.0, 1.0, 1.0]
    assert x.select_scatter(agnostic.ones(4, device=device), 1, 1)[:, 1].tolist() == [1.0] * 4
    with pytest.raises(IndexError, match="out of range"):
        agnostic.select_scatter(x, agnostic.ones(3, device=device), 0, 4)
    with pytest.raises(RuntimeError, match=r"src size = \[4\], slice size = \[3\]"):
        agnostic.select_scatter(x, agnostic.ones(4, device=device), 0, 1)
    expected = np.zeros((4, 3))
    expected[[2, 3], [0, 1]] = [5.0, 6.0]
    got = agnostic.diagonal_scatter(x, _on(device, [5.0, 6.0]), -2)
    np.testing.assert_array_equal(got.cpu().numpy(), expected)
    batched = agnostic.zeros(2, 2, 3, device=device).diagonal_scatter(agnostic.ones(3, 2, device=device), 0, 0, 1)
    assert batched[0, 0].tolist() == [1.0] * 3 and batched[0, 1].tolist() == [0.0] * 3
    with pytest.raises(RuntimeError, match=r"src size = \[3\], slice size = \[2\]"):
        agnostic.diagonal_scatter(x, agnostic.ones(3, device=device), 1)


def test_scatter_forms_gradcheck(device):
    a = _float64(device, (4, 5))
    assert gradcheck(lambda a, b: agnostic.slice_scatter(a, b, 1, 1, None, 2), (a, _float64(device, (4, 2), 1)))
    assert gradcheck(lambda a, b: agnostic.select_scatter(a, b, 1, -2), (a, _float64(device, (4,), 2)))
    assert gradcheck(lambda a, b: agnostic.diagonal_scatter(a, b, 1), (a, _float64(device, (4,), 3)))


def test_scatter_forms_match_pytorch(device):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(4).standard_normal((3, 4))
    cases = [("slice_scatter", (2, 4), (0, 1, 3)), ("select_scatter", (4,), (0, 1)),
             ("diagonal_scatter", (3,), (1,))]
    for name, src_shape, args in cases:
        src = np.random.default_rng(5).standard_normal(src_shape)
        ours = [agnostic.tensor(v, device=device, requires_grad=True) for v in (values, src)]
        theirs = [torch.tensor(v, requires_grad=True) for v in (values, src)]
        got = getattr(agnostic, name)(*ours, *args)
        want = getattr(torch, name)(*theirs, *args)
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy())
        (got * got).sum().backward()
        (want * want).sum().backward()
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(mine.grad.cpu().numpy(), reference.grad.numpy())


# ----- index_reduce and put ---------------------------------------------------------------------------------------
def _index_reduce_reference(values, dim, index, source, reduce, include_self):
    """index_reduce written out with NumPy, one slice at a time."""
    values, source = np.moveaxis(values.copy(), dim, 0), np.moveaxis(source, dim, 0)
    groups = {}
    for position, target in enumerate(index):
        groups.setdefault(target, []).append(source[position])
    for target, slices in groups.items():
        stack = ([values[target]] if include_self else []) + slices
        combine = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
        values[target] = combine(np.stack(stack), axis=0)
    return np.moveaxis(values, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_values(device, reduce, include_self):
    rng = np.random.default_rng(6)
    values, source = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    index = [0, 3, 0, 1, 3]
    got = agnostic.index_reduce(_on(device, values), 1, _on(device, index), _on(device, source), reduce,
                                include_self=include_self)
    expected = _index_reduce_reference(values, 1, index, source, reduce, include_self)
    np.testing.assert_allclose(got.cpu().numpy(), expected, rtol=1e-12)


def test_index_reduce_integers_and_in_place(device):
    x = _on(device, [5, 7, -9])
    assert x.index_reduce(0, _on(device, [0, 0, 2]), _on(device, [2, 4, 4]), "mean").tolist() == [3, 7, -3]
    target = agnostic.ones(3, device=device)
    assert target.index_reduce_(0, _on(device, [1, 1]), _on(device, [2.0, 3.0]), "prod") is target
    assert target.tolist() == [1.0, 6.0, 1.0]


def test_index_reduce_errors(device):
    x = agnostic.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of prod, mean, amax or amin but got sum"):
        x.index_reduce(0, _on(device, [0, 0]), agnostic.ones(2, 3, device=device), "sum")
    with pytest.raises(RuntimeError, match=r"Number of indices \(2\) should be equal to source.size\(dim\): \(3\)"):
        x.index_reduce(0, _on(device, [0, 0]), agnostic.ones(3, 3, device=device), "prod")
    for bad in ([0, 2], [-1, 0]):
        with pytest.raises(IndexError, match="index out of range in self"):
            x.index_reduce(0, _on(device, bad), agnostic.ones(2, 3, device=device), "prod")
    with pytest.raises(RuntimeError, match="source tensor shape must match self tensor shape"):
        x.index_reduce(0, _on(device, [0, 1]), agnostic.ones(2, 2, device=device), "prod")
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index but got: Float"):
        x.index_reduce(0, _on(device, [0.0, 1.0]), agnostic.ones(2, 3, device=device), "prod")
    with pytest.raises(RuntimeError, match=r"self \(Float\) and source \(Double\) must have the same scalar type"):
        x.index_reduce(0, _on(device, [0, 1]), agnostic.ones(2, 3, dtype=agnostic.float64, device=device), "prod")


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_gradients(device, reduce):
    a, b = _float64(device, (4, 3)), _float64(device, (5, 3), seed=7)
    index = _on(device, [0, 2, 0, 3, 2])
    assert gradcheck(lambda a, b: a.index_reduce(0, index, b, reduce), (a, b))
    torch = pytest.importorskip("torch")
    ours = [agnostic.tensor(t.detach().cpu().numpy(), device=device, requires_grad=True) for t in (a, b)]
    theirs = [torch.tensor(t.detach().cpu().numpy(), requires_grad=True) for t in (a, b)]
    got = ours[0].index_reduce(0, index, ours[1], reduce, include_self=False)
    want = theirs[0].index_reduce(0, torch.tensor([0, 2, 0, 3, 2]), theirs[1], reduce, include_self=False)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy())
    got.sum().backward()
    want.sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(mine.grad.cpu().numpy(), reference.grad.numpy())


def test_put_values(device):
    x = agnostic.zeros(2, 3, device=device)
    got = x.put(_on(device, [-1, 0]), _on(device, [1.0, 2.0]))
    assert got.tolist() == [[2.0, 0.0, 0.0], [0.0, 0.0, 1.0]] and x.sum().item() == 0
    summed = agnostic.put(x, _on(device, [[1, 1]]), _on(device, [1.0, 2.0]), accumulate=True)
    assert summed.tolist() == [[0.0, 3.0, 0.0], [0.0, 0.0, 0.0]]
    assert x.put_(_on(device, [4]), _on(device, [5.0])) is x and x[1, 1].item() == 5.0
    view = agnostic.zeros(3, 4, device=device)[:, 1:3]
    view.put_(_on(device, [1, 4]), _on(device, [1.0, 2.0]))  # positions in the view's own flattened order
    assert view.tolist() == [[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]]


def test_put_errors(device):
    x = agnostic.zeros(2, 3, device=device)
    with pytest.raises(IndexError, match="tried to access index 10 on a tensor of 6 elements"):
        x.put(_on(device, [10]), _on(device, [1.0]))
    with pytest.raises(RuntimeError, match="Expected a long tensor for index, but got Float"):
        x.put(_on(device, [1.0]), _on(device, [1.0]))
    with pytest.raises(IndexError, match=r"source.numel\(\) = 1, index.numel\(\) = 2"):
        x.put(_on(device, [1, 2]), _on(device, [1.0]))
    with pytest.raises(RuntimeError, match="same dtype, but got self.dtype = Float and source.dtype = Long"):
        x.put(_on(device, [1]), _on(device, [1]))


def test_put_gradients(device):
    a, b = _float64(device, (2, 3)), _float64(device, (3,), seed=8)
    assert gradcheck(lambda a, b: a.put(_on(device, [5, 0, 2]), b), (a, b))
    assert gradcheck(lambda a, b: a.put(_on(device, [1, 1, -1]), b, accumulate=True), (a, b))


# ----- splits -----------------------------------------------------------------------------------------------------
def test_splits(device):
    x = agnostic.arange(10, device=device).reshape(2, 5)
    pieces = agnostic.split_with_sizes(x, [2, 3], 1)
    assert [p.tolist() for p in pieces] == [[[0, 1], [5, 6]], [[2, 3, 4], [7, 8, 9]]]
    pieces[0][0, 0] = 100
    assert x[0, 0].item() == 100  # views
    assert [p.shape for p in x.unsafe_split(2, 1)] == [(2, 2), (2, 2), (2, 1)]
    assert [p.shape for p in x.unsafe_chunk(2)] == [(1, 5), (1, 5)]
    assert [p.tolist() for p in x.unsafe_split_with_sizes([1, 4], 1)][0] == [[100], [5]]
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum exactly to 5"):
        x.split_with_sizes([2, 2], 1)


def test_unsafe_split_pieces_may_change_in_place_with_grad(device):
    x = _float64(device, (6,))
    pieces = x.unsafe_split(2)
    changed = pieces[1] * 1
    changed.mul_(3)
    (pieces[0].sum() + changed.sum() + (pieces[2] * 2).sum()).backward()
    assert x.grad.tolist() == [1.0, 1.0, 3.0, 3.0, 2.0, 2.0]
    assert gradcheck(lambda a: a.unsafe_split_with_sizes([1, 5])[1], (x,))


# ----- the *_copy forms -------------------------------------------------------------------------------------------
COPIES = [
    ("view_copy", (3, 2), ((6,),)), ("expand_copy", (1, 3), ((2, 3),)), ("permute_copy", (2, 3, 4), ((2, 0, 1),)),
    ("t_copy", (2, 3), ()), ("transpose_copy", (2, 3, 4), (0, 2)), ("squeeze_copy", (2, 1, 3), (1,)),
    ("unsqueeze_copy", (2, 3), (1,)), ("diagonal_copy", (3, 4), (1,)), ("select_copy", (3, 4), (1, 2)),
    ("detach_copy", (2, 3), ()), ("alias_copy", (2, 3), ()), ("narrow_copy", (4, 3), (0, 1, 2)),
    ("unfold_copy", (7,), (0, 3, 2)), ("as_strided_copy", (12,), ((2, 3), (1, 2), 1)),
    ("slice_copy", (5, 2), (0, 1, None, 2)), ("unbind_copy", (2, 3), (1,)), ("split_copy", (5, 2), (2,)),
    ("split_with_sizes_copy", (5, 2), ([1, 4],)),
]


@pytest.mark.parametrize("name, shape, args", COPIES, ids=[case[0] for case in COPIES])
def test_copies_are_fresh_contiguous_tensors(device, name, shape, args):
    torch = pytest.importorskip("torch")
    values = np.arange(float(np.prod(shape))).reshape(shape)
    source = agnostic.tensor(values, device=device)
    got = getattr(agnostic, name)(source, *args)
    want = getattr(torch, name)(torch.tensor(values), *args)
    pieces = got if isinstance(got, tuple) else (got,)
    expected = want if isinstance(want, tuple) else (want,)
    assert len(pieces) == len(expected)
    for piece, reference in zip(pieces, expected):
        assert piece.tolist() == reference.tolist() and piece.is_contiguous()
        piece.fill_(-1.0)
    np.testing.assert_array_equal(source.cpu().numpy(), values)  # the input is untouched: no memory shared


@pytest.mark.parametrize("name, shape, args", [case for case in COPIES if case[0] not in ("detach_copy",)],
                         ids=[case[0] for case in COPIES if case[0] != "detach_copy"])
def test_copies_differentiate_as_their_views(device, name, shape, args):
    x = _float64(device, shape)

    def copied(a):
        result = getattr(agnostic, name)(a, *args)
        return sum(piece.sum() * (position + 1) for position, piece in enumerate(result)) \
            if isinstance(result, tuple) else result
    assert gradcheck(copied, (x,))


def test_complex_view_copies(device):
    pairs = agnostic.tensor([[1.0, 2.0], [3.0, -4.0]], device=device)
    made = agnostic.view_as_complex_copy(pairs)
    assert made.tolist() == [1 + 2j, 3 - 4j]
    made[0] = 0
    assert pairs[0, 0].item() == 1.0
    back = agnostic.view_as_real_copy(made)
    assert back.tolist() == [[0.0, 0.0], [3.0, -4.0]] and back.is_contiguous()
    assert agnostic.arange(6, device=device).narrow_copy(0, 2, 3).tolist() == [2, 3, 4]


def test_detach_copy_is_cut_from_the_graph(device):
    x = _float64(device, (3,))
    copy = agnostic.detach_copy(x)
    assert not copy.requires_grad and copy.tolist() == x.tolist()
