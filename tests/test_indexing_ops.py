"""Scatter/index ops (scatter_reduce, index_copy, index_fill, index_put, masked_scatter, take_along_dim, argwhere,
nonzero) and the shape helpers (meshgrid, cartesian_prod, combinations, diag_embed, rot90, and torch's behaviour of
diag, diagonal, roll, tile, repeat_interleave): values, errors and gradients against NumPy and PyTorch."""

import itertools
import warnings

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

RNG = np.random.default_rng(11)
REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def _on(device, array, requires_grad=False, dtype=None):
    return agnostic.tensor(array, device=device, requires_grad=requires_grad, dtype=dtype)


def _host(tensor):
    return tensor.detach().cpu().numpy()


def _index(device, array):
    return agnostic.tensor(np.asarray(array, dtype=np.int64), device=device)


# ----- scatter_reduce -----------------------------------------------------------------------------------------------
def _numpy_scatter_reduce(input, dim, index, src, reduce, include_self):
    """A loop over ``index``: the reference, written from PyTorch's documentation."""
    groups = {}
    for position in itertools.product(*(range(n) for n in index.shape)):
        target = list(position)
        target[dim] = index[position]
        groups.setdefault(tuple(target), []).append(src[position])
    out = input.copy()
    for target, values in groups.items():
        values = ([input[target]] if include_self else []) + values
        if reduce == "sum":
            out[target] = np.sum(values)
        elif reduce == "prod":
            out[target] = np.prod(values)
        elif reduce == "mean":
            total = np.sum(values)
            out[target] = total // len(values) if input.dtype.kind in "iu" else total / len(values)
        elif reduce == "amax":
            out[target] = np.max(values)
        else:
            out[target] = np.min(values)
    return out


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_scatter_reduce_matches_a_loop(device, reduce, include_self, dtype):
    input = RNG.integers(-5, 6, (3, 4)).astype(dtype)
    src = RNG.integers(-5, 6, (4, 5)).astype(dtype)
    for dim in (0, 1):
        index = RNG.integers(0, input.shape[dim], (3, 3))
        result = _on(device, input).scatter_reduce(dim, _index(device, index), _on(device, src), reduce,
                                                   include_self=include_self)
        assert result.dtype is getattr(agnostic, dtype)
        np.testing.assert_allclose(_host(result), _numpy_scatter_reduce(input, dim, index, src, reduce,
                                                                        include_self))


@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients_match_torch_with_ties_and_zeros(device, reduce, include_self):
    torch = pytest.importorskip("torch")
    for _ in range(4):
        # Small integers: repeated indices, ties for amax/amin and zeros for prod are all common.
        input = RNG.integers(-2, 3, (3, 4)).astype(np.float64)
        src = RNG.integers(-2, 3, (5, 4)).astype(np.float64)
        index = RNG.integers(0, 3, (5, 4))
        weights = RNG.standard_normal((3, 4))
        ours = [_on(device, input, requires_grad=True), _on(device, src, requires_grad=True)]
        theirs = [torch.tensor(input, requires_grad=True), torch.tensor(src, requires_grad=True)]
        result = ours[0].scatter_reduce(0, _index(device, index), ours[1], reduce, include_self=include_self)
        expected = theirs[0].scatter_reduce(0, torch.tensor(index), theirs[1], reduce, include_self=include_self)
        np.testing.assert_allclose(_host(result), expected.detach().numpy())
        result.backward(_on(device, weights))
        expected.backward(torch.tensor(weights))
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_scatter_reduce_gradcheck(device, reduce):
    input = RNG.standard_normal((3, 4)) + 2.0  # distinct values: amax/amin are smooth there
    src = RNG.standard_normal((2, 4)) - 2.0 if reduce == "amin" else RNG.standard_normal((2, 4))
    index = _index(device, RNG.integers(0, 3, (2, 4)))
    for include_self in (True, False):
        assert gradcheck(lambda a, b: a.scatter_reduce(0, index, b, reduce, include_self=include_self),
                         [_on(device, input, requires_grad=True), _on(device, src, requires_grad=True)])


def test_scatter_reduce_amax_shares_the_gradient_among_ties(device):
    input = _on(device, [1.0, 5.0], requires_grad=True)
    src = _on(device, [5.0, 5.0, 0.0], requires_grad=True)
    result = input.scatter_reduce(0, _index(device, [1, 1, 0]), src, "amax")
    assert result.tolist() == [1.0, 5.0]
    result.sum().backward()
    np.testing.assert_allclose(_host(input.grad), [1.0, 1 / 3])
    np.testing.assert_allclose(_host(src.grad), [1 / 3, 1 / 3, 0.0])


def test_scatter_reduce_prod_gradient_with_zeros(device):
    input = _on(device, [2.0, 3.0], requires_grad=True)
    src = _on(device, [0.0, 4.0, 0.0, 0.0], requires_grad=True)
    result = input.scatter_reduce(0, _index(device, [0, 0, 1, 1]), src, "prod")
    result.sum().backward()
    # Group 0: 2 * 0 * 4, one zero: its gradient is the product of the others. Group 1: two zeros: all zero.
    np.testing.assert_allclose(_host(input.grad), [0.0, 0.0])
    np.testing.assert_allclose(_host(src.grad), [8.0, 0.0, 0.0, 0.0])


def test_scatter_reduce_in_place_and_nan(device):
    target = _on(device, [1.0, 2.0, 3.0])
    returned = target.scatter_reduce_(0, _index(device, [0, 0, 2]), _on(device, [np.nan, 2.0, 1.0]), "amax")
    assert returned is target
    values = _host(target)
    assert np.isnan(values[0]) and values[1:].tolist() == [2.0, 3.0]
    small = _on(device, [1, 2], dtype=agnostic.int8)
    small.scatter_reduce_(0, _index(device, [1, 1]), _on(device, [-5, 7], dtype=agnostic.int8), "amin",
                          include_self=False)
    assert small.tolist() == [1, -5]


def test_scatter_reduce_errors(device):
    zeros = agnostic.zeros(3, device=device)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin"):
        zeros.scatter_reduce(0, _index(device, [0]), agnostic.ones(1, device=device), "max")
    with pytest.raises(RuntimeError, match="self.dtype to be equal to src.dtype"):
        zeros.scatter_reduce(0, _index(device, [0]), agnostic.ones(1, dtype=agnostic.float64, device=device), "sum")
    with pytest.raises(RuntimeError, match="int64"):
        zeros.scatter_reduce(0, agnostic.tensor([0], dtype=agnostic.int32, device=device),
                             agnostic.ones(1, device=device), "sum")
    with pytest.raises(RuntimeError, match="out of bounds"):
        zeros.scatter_reduce(0, _index(device, [3]), agnostic.ones(1, device=device), "sum")


# ----- index_copy, index_fill -------------------------------------------------------------------------------------
def test_index_copy_values_gradients_and_torch(device):
    input, source = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 2))
    index = [3, 0]
    expected = input.copy()
    expected[:, index] = source
    np.testing.assert_array_equal(_host(_on(device, input).index_copy(1, _index(device, index), _on(device, source))),
                                  expected)
    assert gradcheck(lambda a, b: a.index_copy(1, _index(device, index), b),
                     [_on(device, input, requires_grad=True), _on(device, source, requires_grad=True)])
    torch = pytest.importorskip("torch")
    ours = [_on(device, input, requires_grad=True), _on(device, source, requires_grad=True)]
    theirs = [torch.tensor(input, requires_grad=True), torch.tensor(source, requires_grad=True)]
    weights = RNG.standard_normal((3, 4))
    ours[0].index_copy(-1, _index(device, index), ours[1]).backward(_on(device, weights))
    theirs[0].index_copy(-1, torch.tensor(index), theirs[1]).backward(torch.tensor(weights))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_array_equal(_host(mine.grad), reference.grad.numpy())


def test_index_copy_in_place_scalars_and_errors(device):
    target = agnostic.zeros(3, device=device)
    assert target.index_copy_(0, agnostic.tensor(1, device=device), agnostic.tensor(5.0, device=device)) is target
    assert target.tolist() == [0.0, 5.0, 0.0]
    matrix = agnostic.zeros(3, 4, device=device)
    with pytest.raises(IndexError, match="out of bounds"):
        matrix.index_copy(1, _index(device, [-1, 0]), agnostic.ones(3, 2, device=device))
    with pytest.raises(RuntimeError, match="same dtype"):
        matrix.index_copy(1, _index(device, [1]), agnostic.ones(3, 1, dtype=agnostic.float64, device=device))
    with pytest.raises(RuntimeError, match="Number of indices"):
        matrix.index_copy(1, _index(device, [1, 2]), agnostic.ones(3, 1, device=device))
    with pytest.raises(RuntimeError, match="long tensor"):
        matrix.index_copy(1, agnostic.tensor([1], dtype=agnostic.int32, device=device),
                          agnostic.ones(3, 1, device=device))


def test_index_fill_values_gradients(device):
    input = RNG.standard_normal((3, 4))
    expected = input.copy()
    expected[[2, 0], :] = -1.5
    np.testing.assert_array_equal(_host(_on(device, input).index_fill(0, _index(device, [2, 0]), -1.5)), expected)
    expected = input.copy()
    expected[:, -1] = 2
    np.testing.assert_array_equal(_host(_on(device, input).index_fill(-1, _index(device, [-1]), 2)), expected)
    value = _on(device, 3.0, requires_grad=True)
    tensor = _on(device, input, requires_grad=True)
    (tensor.index_fill(1, _index(device, [0, 2]), value) * _on(device, input)).sum().backward()
    mask = np.zeros((3, 4), bool)
    mask[:, [0, 2]] = True
    np.testing.assert_allclose(_host(tensor.grad), np.where(mask, 0.0, input))
    np.testing.assert_allclose(_host(value.grad), input[:, [0, 2]].sum())


def test_index_fill_in_place_and_errors(device):
    target = agnostic.ones(3, dtype=agnostic.int64, device=device)
    assert target.index_fill_(0, _index(device, [1]), 0) is target
    assert target.tolist() == [1, 0, 1]
    with pytest.raises(RuntimeError, match="int64"):
        target.index_fill(0, agnostic.tensor([0], dtype=agnostic.int32, device=device), 1)
    with pytest.raises(RuntimeError, match="0-dimensional value"):
        target.index_fill(0, _index(device, [0]), agnostic.tensor([1], device=device))
    with pytest.raises(IndexError, match="out of bounds"):
        target.index_fill(0, _index(device, [3]), 1)


# ----- index_put, masked_scatter ------------------------------------------------------------------------------------
def test_index_put_values_and_accumulate(device):
    input = np.arange(12.0).reshape(3, 4)
    rows, columns = [0, 2], [1, 3]
    expected = input.copy()
    expected[rows, columns] = [10.0, 20.0]
    values = _on(device, np.array([10.0, 20.0]))
    result = _on(device, input).index_put((_index(device, rows), _index(device, columns)), values)
    np.testing.assert_array_equal(_host(result), expected)
    expected = input.copy()
    np.add.at(expected, ([0, 0, 1],), np.ones(4))
    result = _on(device, input).index_put((_index(device, [0, 0, 1]),), _on(device, np.ones(4)), accumulate=True)
    np.testing.assert_array_equal(_host(result), expected)
    masked = _on(device, input).index_put((_on(device, input > 5),), _on(device, 0.0, dtype=agnostic.float64))
    np.testing.assert_array_equal(_host(masked), np.where(input > 5, 0.0, input))


def test_index_put_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    input, values = RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    weights = RNG.standard_normal((3, 4))
    for accumulate, rows in ((False, [0, 2]), (True, [0, 0, 2])):
        ours = [_on(device, input, requires_grad=True), _on(device, values, requires_grad=True)]
        theirs = [torch.tensor(input, requires_grad=True), torch.tensor(values, requires_grad=True)]
        ours[0].index_put((_index(device, rows),), ours[1], accumulate=accumulate).backward(_on(device, weights))
        theirs[0].index_put((torch.tensor(rows),), theirs[1], accumulate=accumulate).backward(torch.tensor(weights))
        for mine, reference in zip(ours, theirs):
            np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-12)


def test_index_put_in_place_and_errors(device):
    target = agnostic.zeros(2, 2, device=device)
    assert target.index_put_((_index(device, [1]), _index(device, [0])), agnostic.tensor(5.0, device=device)) \
        is target
    assert target.tolist() == [[0.0, 0.0], [5.0, 0.0]]
    with pytest.raises(RuntimeError, match="dtypes match"):
        target.index_put((_index(device, [0]),), agnostic.ones(2, dtype=agnostic.float64, device=device))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        target.index_put((_index(device, [0]),), agnostic.ones(3, device=device), accumulate=True)
    with pytest.raises(TypeError, match="expected Tensor"):
        target.index_put((None, _index(device, [0])), agnostic.ones(2, device=device))


def test_masked_scatter_values_and_gradients(device):
    input, source = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 5))
    mask = np.array([True, False, True])
    expected = input.copy()
    spread = np.broadcast_to(mask, (2, 3))
    expected[spread] = source.reshape(-1)[:spread.sum()]
    result = _on(device, input).masked_scatter(_on(device, mask), _on(device, source))
    np.testing.assert_array_equal(_host(result), expected)
    assert gradcheck(lambda a, b: a.masked_scatter(_on(device, mask), b),
                     [_on(device, input, requires_grad=True), _on(device, source, requires_grad=True)])
    torch = pytest.importorskip("torch")
    ours = [_on(device, input[:1], requires_grad=True), _on(device, source, requires_grad=True)]
    theirs = [torch.tensor(input[:1], requires_grad=True), torch.tensor(source, requires_grad=True)]
    weights = RNG.standard_normal((2, 3))
    full_mask = np.array([[True, False, True], [False, True, True]])
    ours[0].masked_scatter(_on(device, full_mask), ours[1]).backward(_on(device, weights))
    theirs[0].masked_scatter(torch.tensor(full_mask), theirs[1]).backward(torch.tensor(weights))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-12)


def test_masked_scatter_in_place_and_errors(device):
    target = agnostic.zeros(2, 2, device=device)
    assert target.masked_scatter_(agnostic.tensor([False, True], device=device),
                                  agnostic.tensor([[1.0, 2.0]], device=device)) is target
    assert target.tolist() == [[0.0, 1.0], [0.0, 2.0]]
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        target.masked_scatter(agnostic.tensor([True, True], device=device), agnostic.ones(3, device=device))
    with pytest.raises(RuntimeError, match="boolean masks"):
        target.masked_scatter(agnostic.tensor([1, 0], device=device), agnostic.ones(4, device=device))
    with pytest.raises(RuntimeError, match="same dtypes"):
        target.masked_scatter(agnostic.tensor([True, True], device=device),
                              agnostic.ones(4, dtype=agnostic.float64, device=device))


# ----- take_along_dim, argwhere, nonzero ---------------------------------------------------------------------------
def test_take_along_dim_matches_numpy(device):
    input = RNG.standard_normal((3, 4, 2))
    order = np.argsort(input, axis=1)
    result = _on(device, input).take_along_dim(_index(device, order), dim=1)
    np.testing.assert_array_equal(_host(result), np.take_along_axis(input, order, axis=1))
    broadcast = np.array([[[0], [3]]])  # (1, 2, 1) broadcast against (3, ., 2)
    result = agnostic.take_along_dim(_on(device, input), _index(device, broadcast), dim=-2)
    np.testing.assert_array_equal(_host(result), np.take_along_axis(input, np.broadcast_to(broadcast, (3, 2, 2)),
                                                                    axis=1))
    flat = _index(device, [[23, 0]])
    np.testing.assert_array_equal(_host(_on(device, input).take_along_dim(flat)), input.reshape(-1)[[23, 0]])
    assert gradcheck(lambda a: a.take_along_dim(_index(device, order[:, :2]), 1),
                     [_on(device, input, requires_grad=True)])


def test_take_along_dim_errors(device):
    input = agnostic.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        input.take_along_dim(_index(device, [0]), 1)
    with pytest.raises(RuntimeError, match="should be Long"):
        input.take_along_dim(agnostic.tensor([[0]], dtype=agnostic.int32, device=device), 1)


@pytest.mark.parametrize("array", [np.array(5), np.array(0), np.zeros((0, 3)), np.array([[0, 1], [2, 0]]),
                                   np.array([[[True, False], [False, True]]])])
def test_nonzero_and_argwhere_match_torch(device, array):
    torch = pytest.importorskip("torch")
    tensor = _on(device, array)
    for ours, theirs in ((agnostic.nonzero(tensor), torch.nonzero(torch.tensor(array))),
                         (tensor.argwhere(), torch.argwhere(torch.tensor(array)))):
        assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype is agnostic.int64
        np.testing.assert_array_equal(_host(ours), theirs.numpy())
    ours, theirs = tensor.nonzero(as_tuple=True), torch.tensor(array).nonzero(as_tuple=True)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs):
        np.testing.assert_array_equal(_host(mine), reference.numpy())


def test_nonzero_as_tuple_indexes_the_nonzero_elements(device):
    array = np.array([[0, 3, 0], [4, 0, 5]])
    found = _on(device, array).nonzero(as_tuple=True)
    assert [_host(t).tolist() for t in found] == [list(a) for a in np.nonzero(array)]
    assert _host(_on(device, array)[found]).tolist() == [3, 4, 5]
    assert _host(_on(device, array).argwhere()).tolist() == np.argwhere(array).tolist()


# ----- shape helpers ------------------------------------------------------------------------------------------------
def test_meshgrid_matches_numpy(device):
    a, b, c = np.arange(2), np.arange(3) + 10, np.arange(4) + 100
    for indexing in ("ij", "xy"):
        ours = agnostic.meshgrid(_on(device, a), _on(device, b), _on(device, c), indexing=indexing)
        for mine, reference in zip(ours, np.meshgrid(a, b, c, indexing=indexing)):
            np.testing.assert_array_equal(_host(mine), reference)
    as_list = agnostic.meshgrid([_on(device, a), _on(device, b)], indexing="xy")
    assert [tuple(t.shape) for t in as_list] == [(3, 2), (3, 2)]


def test_meshgrid_warns_without_indexing_and_defaults_to_ij(device):
    with pytest.warns(UserWarning, match="it will be required to pass the indexing argument"):
        first, second = agnostic.meshgrid(_on(device, np.arange(2)), _on(device, np.arange(3)))
    assert tuple(first.shape) == (2, 3) and first.tolist() == [[0, 0, 0], [1, 1, 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agnostic.meshgrid(_on(device, np.arange(2)), indexing="ij")


def test_meshgrid_errors_and_gradient(device):
    with pytest.raises(RuntimeError, match="indexing must be one of"):
        agnostic.meshgrid(agnostic.ones(2, device=device), indexing="zz")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        agnostic.meshgrid(agnostic.ones(2, 2, device=device), indexing="ij")
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.meshgrid(agnostic.ones(2, device=device), agnostic.ones(2, dtype=agnostic.float64, device=device),
                          indexing="ij")
    x = _on(device, [1.0, 2.0], requires_grad=True)
    y = _on(device, [1.0, 2.0, 3.0], requires_grad=True)
    grid_x, grid_y = agnostic.meshgrid(x, y, indexing="xy")
    (grid_x * grid_y).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0] and y.grad.tolist() == [3.0, 3.0, 3.0]


def test_cartesian_prod_matches_itertools(device):
    a, b, c = [1, 2], [3, 4, 5], [6, 7]
    result = agnostic.cartesian_prod(_on(device, a), _on(device, b), _on(device, c))
    assert result.tolist() == [list(p) for p in itertools.product(a, b, c)]
    single = _on(device, a)
    assert agnostic.cartesian_prod(single).tolist() == a
    with pytest.raises(RuntimeError, match="1D vector"):
        agnostic.cartesian_prod(agnostic.ones(2, 2, device=device))


@pytest.mark.parametrize("r, with_replacement", [(2, False), (3, False), (1, False), (2, True), (3, True), (5, False)])
def test_combinations_match_itertools(device, r, with_replacement):
    values = [1.5, -2.0, 3.0, 4.0]
    result = agnostic.combinations(_on(device, values), r=r, with_replacement=with_replacement)
    choose = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    expected = [list(c) for c in choose(values, r)]
    assert result.tolist() == expected
    assert tuple(result.shape) == (len(expected), r)


def test_combinations_edges_gradient_and_torch(device):
    assert tuple(agnostic.combinations(agnostic.arange(3, device=device), r=0).shape) == (0,)
    assert tuple(agnostic.combinations(agnostic.arange(0, device=device)).shape) == (0, 2)
    with pytest.raises(RuntimeError, match="non-negative"):
        agnostic.combinations(agnostic.arange(3, device=device), r=-1)
    with pytest.raises(RuntimeError, match="1D vector"):
        agnostic.combinations(agnostic.ones(2, 2, device=device))
    values = _on(device, [1.0, 2.0, 3.0], requires_grad=True)
    agnostic.combinations(values, with_replacement=True).sum().backward()
    assert values.grad.tolist() == [4.0, 4.0, 4.0]
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(_host(agnostic.combinations(agnostic.arange(5, device=device), 3)),
                                  torch.combinations(torch.arange(5), 3).numpy())


@pytest.mark.parametrize("shape, offset, dim1, dim2", [((3,), 0, -2, -1), ((2, 3), 1, 0, 2), ((2, 3), -2, 2, 0),
                                                       ((2, 3, 2), 0, 1, -1), ((4,), 3, 0, 1)])
def test_diag_embed_inverts_diagonal_and_matches_torch(device, shape, offset, dim1, dim2):
    input = RNG.standard_normal(shape)
    result = agnostic.diag_embed(_on(device, input), offset, dim1, dim2)
    np.testing.assert_array_equal(_host(result.diagonal(offset, dim1, dim2)), input)
    assert float(np.abs(_host(result)).sum()) == pytest.approx(float(np.abs(input).sum()))
    assert gradcheck(lambda a: a.diag_embed(offset, dim1, dim2), [_on(device, input, requires_grad=True)])
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(_host(result), torch.diag_embed(torch.tensor(input), offset, dim1, dim2).numpy())


def test_diag_embed_refuses_identical_dims(device):
    with pytest.raises(RuntimeError, match="cannot be identical"):
        agnostic.diag_embed(agnostic.ones(3, device=device), dim1=0, dim2=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        agnostic.diag_embed(agnostic.tensor(3.0, device=device))


@pytest.mark.parametrize("k", [-3, -1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_rot90_matches_numpy(device, k, dims):
    input = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(_host(agnostic.rot90(_on(device, input), k, dims)), np.rot90(input, k, dims))


def test_rot90_gradient_and_errors(device):
    assert gradcheck(lambda a: a.rot90(1, (1, 0)), [_on(device, RNG.standard_normal((2, 3)), requires_grad=True)])
    with pytest.raises(RuntimeError, match="total dims >= 2"):
        agnostic.ones(3, device=device).rot90()
    with pytest.raises(RuntimeError, match="dims to be different"):
        agnostic.ones(2, 2, device=device).rot90(1, (0, 0))
    with pytest.raises(RuntimeError, match="rotation dims == 2"):
        agnostic.ones(2, 2, device=device).rot90(1, (0, 1, 2))


def test_diag_and_diagonal_errors_as_torch(device):
    with pytest.raises(RuntimeError, match="Supports 1D or 2D tensors. Got 3D"):
        agnostic.ones(2, 2, 2, device=device).diag()
    with pytest.raises(RuntimeError, match="Got 0D"):
        agnostic.tensor(3, device=device).diag()
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical"):
        agnostic.ones(2, 3, device=device).diagonal(0, 1, 1)
    np.testing.assert_array_equal(_host(agnostic.arange(24, device=device).reshape(2, 3, 4).diagonal(1, -1, 0)),
                                  np.arange(24).reshape(2, 3, 4).diagonal(1, -1, 0))


def test_roll_shift_tuples(device):
    array = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(_host(_on(device, array).roll((1, -1), (0, 1))), np.roll(array, (1, -1), (0, 1)))
    np.testing.assert_array_equal(_host(_on(device, array).roll((5,))), np.roll(array, 5))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        _on(device, array).roll((1, 2))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        _on(device, array).roll(1, (0, 1))


def test_tile_takes_ints_and_tuples(device):
    array = np.arange(3)
    tensor = _on(device, array)
    np.testing.assert_array_equal(_host(tensor.tile(2)), np.tile(array, 2))
    np.testing.assert_array_equal(_host(tensor.tile(2, 2)), np.tile(array, (2, 2)))
    np.testing.assert_array_equal(_host(agnostic.tile(tensor, (2, 1, 2))), np.tile(array, (2, 1, 2)))
    source = _on(device, RNG.standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda a: a.tile(2, 1, 2), [source])


def test_repeat_interleave_as_torch(device):
    array = np.arange(12).reshape(3, 4)
    tensor = _on(device, array)
    np.testing.assert_array_equal(_host(tensor.repeat_interleave(_index(device, [1, 0, 2]), dim=0)),
                                  np.repeat(array, [1, 0, 2], axis=0))
    np.testing.assert_array_equal(_host(tensor.repeat_interleave(_index(device, [2]), dim=1)),
                                  np.repeat(array, 2, axis=1))
    assert agnostic.repeat_interleave(_index(device, [1, 0, 2])).tolist() == [0, 2, 2]
    assert tensor.repeat_interleave(_index(device, [1, 0, 2]), dim=0, output_size=3).shape == (3, 4)
    assert agnostic.tensor(5, device=device).repeat_interleave(3).tolist() == [5, 5, 5]
    with pytest.raises(RuntimeError, match="non-negative"):
        tensor.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="same size as input along dim"):
        tensor.repeat_interleave(_index(device, [1, 2]), dim=0)
    source = _on(device, RNG.standard_normal((2, 3)), requires_grad=True)
    assert gradcheck(lambda a: a.repeat_interleave(_index(device, [2, 0, 1]), dim=1), [source])
