"""Matrix products beyond matmul: addmm/addmv/addbmm/baddbmm, tensordot, kron, cross, trace, cdist, and einsum's
backward over every kind of contraction; values and gradients against NumPy and PyTorch."""

import math
import warnings

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

RNG = np.random.default_rng(7)


def _random(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _on(device, array, requires_grad=False):
    return agnostic.tensor(array, device=device, requires_grad=requires_grad)


def _host(tensor):
    return tensor.detach().cpu().numpy()


# ----- scaled sums of products ---------------------------------------------------------------------------------------
SCALED = {
    "addmm": ((3,), (2, 4), (4, 3), lambda m1, m2: m1 @ m2),
    "addmv": ((2,), (2, 4), (4,), lambda m, v: m @ v),
    "baddbmm": ((1, 2, 3), (5, 2, 4), (5, 4, 3), lambda b1, b2: b1 @ b2),
    "addbmm": ((2, 1), (5, 2, 4), (5, 4, 3), lambda b1, b2: (b1 @ b2).sum(0)),
}


@pytest.mark.parametrize("name", sorted(SCALED))
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0), (0, 3)])
def test_scaled_products_match_numpy(device, name, beta, alpha):
    input_shape, first_shape, second_shape, product = SCALED[name]
    input, first, second = _random(*input_shape), _random(*first_shape), _random(*second_shape)
    result = getattr(agnostic, name)(_on(device, input), _on(device, first), _on(device, second), beta=beta,
                                     alpha=alpha)
    np.testing.assert_allclose(_host(result), beta * input + alpha * product(first, second), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(SCALED))
def test_beta_zero_ignores_nan_in_input(device, name):
    input_shape, first_shape, second_shape, product = SCALED[name]
    first, second = _random(*first_shape), _random(*second_shape)
    input = _on(device, np.full(input_shape, np.nan))
    result = getattr(agnostic, name)(input, _on(device, first), _on(device, second), beta=0)
    np.testing.assert_allclose(_host(result), product(first, second), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(SCALED))
def test_scaled_products_gradcheck(device, name):
    input_shape, first_shape, second_shape, _ = SCALED[name]
    arguments = [_on(device, _random(*shape), requires_grad=True) for shape in (input_shape, first_shape,
                                                                                  second_shape)]
    assert gradcheck(lambda i, a, b: getattr(agnostic, name)(i, a, b, beta=0.7, alpha=-1.3), arguments)


@pytest.mark.parametrize("name", sorted(SCALED))
def test_scaled_products_match_torch_with_gradients(device, name):
    torch = pytest.importorskip("torch")
    input_shape, first_shape, second_shape, _ = SCALED[name]
    arrays = [_random(*shape) for shape in (input_shape, first_shape, second_shape)]
    ours = [_on(device, a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    result = getattr(agnostic, name)(*ours, beta=0.5, alpha=2)
    expected = getattr(torch, name)(*theirs, beta=0.5, alpha=2)
    np.testing.assert_allclose(_host(result), expected.detach().numpy(), rtol=1e-12)
    weights = _random(*expected.shape)
    result.backward(_on(device, weights))
    expected.backward(torch.tensor(weights))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_beta_zero_gives_the_input_a_zero_gradient(device):
    input = _on(device, np.full((2, 2), np.nan), requires_grad=True)
    agnostic.addmm(input, _on(device, _random(2, 3)), _on(device, _random(3, 2)), beta=0).sum().backward()
    np.testing.assert_array_equal(_host(input.grad), np.zeros((2, 2)))


def test_addmm_in_place_and_method(device):
    first, second = _random(2, 3), _random(3, 2)
    target = _on(device, np.ones((2, 2)))
    returned = target.addmm_(_on(device, first), _on(device, second), alpha=2)
    assert returned is target
    np.testing.assert_allclose(_host(target), 1 + 2 * first @ second, rtol=1e-12)
    np.testing.assert_allclose(_host(_on(device, np.ones(3)).addmv(_on(device, first.T), _on(device, np.ones(2)))),
                               1 + first.T.sum(1), rtol=1e-12)


def test_integer_products_keep_their_dtype(device):
    a = agnostic.tensor([[1, 2], [3, 4]], device=device)
    result = agnostic.addmm(agnostic.tensor([1, 1], device=device), a, a, beta=2, alpha=3)
    assert result.dtype is agnostic.int64
    assert result.tolist() == [[23, 32], [47, 68]]


def test_scaled_product_errors(device):
    a = agnostic.ones(2, 2, device=device)
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.addmm(agnostic.ones(2, dtype=agnostic.float64, device=device), a, a)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        agnostic.addmm(a, a, agnostic.ones(3, 2, device=device))
    with pytest.raises(RuntimeError, match="expanded size"):
        agnostic.addmm(agnostic.ones(3, device=device), a, a)
    with pytest.raises(RuntimeError, match="number of batches"):
        agnostic.baddbmm(a, agnostic.ones(2, 2, 2, device=device), agnostic.ones(3, 2, 2, device=device))
    with pytest.raises(RuntimeError, match="matrices"):
        agnostic.addmm(a, agnostic.ones(2, device=device), a)


# ----- tensordot, kron ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shapes, dims", [
    (((2, 3, 4), (3, 4, 5)), 2),
    (((2, 3), (3, 4)), 1),
    (((2, 3), (4, 5)), 0),
    (((2, 3, 4), (4, 2, 5)), ([0, 2], [1, 0])),
    (((3, 4), (4, 3)), ([-1], [0])),
])
def test_tensordot_matches_numpy_and_gradcheck(device, shapes, dims):
    a, b = _random(*shapes[0]), _random(*shapes[1])
    result = agnostic.tensordot(_on(device, a), _on(device, b), dims=dims)
    np.testing.assert_allclose(_host(result), np.tensordot(a, b, axes=dims), rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda x, y: agnostic.tensordot(x, y, dims=dims),
                     [_on(device, a, requires_grad=True), _on(device, b, requires_grad=True)])


def test_tensordot_errors(device):
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        agnostic.tensordot(agnostic.ones(2, 3, device=device), agnostic.ones(2, 3, device=device), dims=1)
    with pytest.raises(RuntimeError, match="same dtype"):
        agnostic.tensordot(agnostic.ones(2, 3, device=device),
                           agnostic.ones(3, 2, dtype=agnostic.float64, device=device), dims=1)


@pytest.mark.parametrize("shapes", [((2,), (3,)), ((2, 3), (4, 5)), ((2, 2), (3,)), ((3,), (2, 2)), ((), (2,)),
                                    ((2, 1, 3), (1, 2, 2))])
def test_kron_matches_numpy_and_gradcheck(device, shapes):
    a, b = _random(*shapes[0]), _random(*shapes[1])
    np.testing.assert_allclose(_host(agnostic.kron(_on(device, a), _on(device, b))), np.kron(a, b), rtol=1e-12)
    assert gradcheck(agnostic.kron, [_on(device, a, requires_grad=True), _on(device, b, requires_grad=True)])


def test_kron_promotes_dtypes(device):
    result = agnostic.tensor([1, 2], device=device).kron(agnostic.tensor([0.5], device=device))
    assert result.dtype is agnostic.float32
    assert result.tolist() == [0.5, 1.0]


# ----- cross, trace -------------------------------------------------------------------------------------------------
def test_cross_matches_numpy_along_a_dimension(device):
    a, b = _random(4, 3, 2), _random(4, 3, 2)
    result = agnostic.cross(_on(device, a), _on(device, b), dim=1)
    np.testing.assert_allclose(_host(result), np.cross(a, b, axis=1), rtol=1e-12)
    assert gradcheck(lambda x, y: x.cross(y, dim=-2), [_on(device, a, requires_grad=True),
                                                         _on(device, b, requires_grad=True)])


def test_cross_default_dim_is_the_first_of_size_3_with_a_warning(device):
    a, b = _random(3, 3), _random(3, 3)
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        result = agnostic.cross(_on(device, a), _on(device, b))
    np.testing.assert_allclose(_host(result), np.cross(a, b, axis=0), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agnostic.cross(_on(device, a), _on(device, b), dim=1)


def test_cross_broadcasts_and_refuses_bad_shapes(device):
    a, b = _random(2, 1, 3), _random(1, 4, 3)
    np.testing.assert_allclose(_host(agnostic.cross(_on(device, a), _on(device, b), dim=-1)),
                               np.cross(a, b), rtol=1e-12)
    with pytest.raises(RuntimeError, match="no dimension of size 3"), pytest.warns(UserWarning):
        agnostic.cross(agnostic.ones(2, 4, device=device), agnostic.ones(2, 4, device=device))
    with pytest.raises(RuntimeError, match="must have length 3"):
        agnostic.cross(agnostic.ones(2, 4, device=device), agnostic.ones(2, 4, device=device), dim=1)


def test_cross_matches_torch(device):
    torch = pytest.importorskip("torch")
    a, b = _random(3, 5), _random(3, 5)
    with pytest.warns(UserWarning):
        ours = agnostic.cross(_on(device, a), _on(device, b))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.cross(torch.tensor(a), torch.tensor(b))
    np.testing.assert_allclose(_host(ours), theirs.numpy(), rtol=1e-12)


def test_trace(device):
    assert agnostic.tensor([[1, 2, 3], [4, 5, 6]], device=device).trace().item() == 6
    assert agnostic.tensor([[1, 2], [3, 4]], dtype=agnostic.int32, device=device).trace().dtype is agnostic.int64
    matrix = _on(device, _random(3, 4), requires_grad=True)
    matrix.trace().backward()
    np.testing.assert_array_equal(_host(matrix.grad), np.eye(3, 4))
    with pytest.raises(RuntimeError, match="expected a matrix"):
        agnostic.ones(2, 2, 2, device=device).trace()


# ----- cdist --------------------------------------------------------------------------------------------------------
def _numpy_cdist(x1, x2, p):
    difference = np.abs(x1[..., :, None, :] - x2[..., None, :, :])
    if p == 0:
        return (difference != 0).sum(-1).astype(x1.dtype)
    if p == math.inf:
        return difference.max(-1)
    return (difference ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_cdist_matches_numpy_and_gradcheck(device, p):
    x1, x2 = _random(2, 4, 3), _random(2, 5, 3)
    result = agnostic.cdist(_on(device, x1), _on(device, x2), p=p)
    np.testing.assert_allclose(_host(result), _numpy_cdist(x1, x2, p), rtol=1e-10)
    if p != 0:
        assert gradcheck(lambda a, b: agnostic.cdist(a, b, p=p), [_on(device, x1, requires_grad=True),
                                                                  _on(device, x2, requires_grad=True)])


@pytest.mark.parametrize("p", [0.0, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_cdist_gradients_match_torch_including_zero_distances(device, p):
    torch = pytest.importorskip("torch")
    x1, x2 = _random(4, 3), _random(3, 3)
    x2[1] = x1[2]  # one pair at distance zero
    ours = [_on(device, x, requires_grad=True) for x in (x1, x2)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (x1, x2)]
    weights = _random(4, 3)
    agnostic.cdist(*ours, p=p).backward(_on(device, weights))
    torch.cdist(*theirs, p=p).backward(torch.tensor(weights))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_cdist_errors(device):
    with pytest.raises(RuntimeError, match="floating-point"):
        agnostic.cdist(agnostic.ones(2, 3, dtype=agnostic.int64, device=device),
                       agnostic.ones(2, 3, dtype=agnostic.int64, device=device))
    with pytest.raises(RuntimeError, match="non-negative"):
        agnostic.cdist(agnostic.ones(2, 3, device=device), agnostic.ones(2, 3, device=device), p=-1)
    with pytest.raises(RuntimeError, match="same number of columns"):
        agnostic.cdist(agnostic.ones(2, 3, device=device), agnostic.ones(2, 4, device=device))


# ----- einsum -------------------------------------------------------------------------------------------------------
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("i,j->ij", [(2,), (3,)]),  # outer product
    ("ii->i", [(3, 3)]),  # diagonal
    ("ii", [(3, 3)]),  # trace
    ("iij->j", [(2, 2, 3)]),
    ("iji->ij", [(2, 3, 2)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),  # a subscript only one operand has
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
    ("...ij,...jk", [(1, 2, 3), (5, 3, 2)]),  # broadcast size-1 batch
    ("b...,b...->b", [(2, 3, 4), (2, 3, 4)]),  # summed over "..." (NumPy can't: the reference spells it out)
    ("ij,ij->ij", [(1, 3), (2, 3)]),  # broadcast size-1 subscript
    ("ii,i->i", [(3, 3), (3,)]),
    ("i,i,i->", [(4,), (4,), (4,)]),
    ("ij,kl->ijkl", [(2, 1), (1, 3)]),
    ("a...a->...", [(2, 3, 2)]),
]


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES)
def test_einsum_values_and_gradcheck(device, equation, shapes):
    arrays = [_random(*shape) for shape in shapes]
    reference = np.einsum(equation.replace("b...,b...", "bij,bij"), *arrays)
    np.testing.assert_allclose(_host(agnostic.einsum(equation, *[_on(device, a) for a in arrays])), reference,
                               rtol=1e-12, atol=1e-12)
    assert gradcheck(lambda *xs: agnostic.einsum(equation, *xs), [_on(device, a, requires_grad=True)
                                                                  for a in arrays])


@pytest.mark.parametrize("equation, shapes", EINSUM_CASES)
def test_einsum_gradients_match_torch(device, equation, shapes):
    torch = pytest.importorskip("torch")
    arrays = [_random(*shape) for shape in shapes]
    ours = [_on(device, a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    (agnostic.einsum(equation, *ours) ** 2).sum().backward()
    (torch.einsum(equation, *theirs) ** 2).sum().backward()
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_einsum_takes_a_list_of_operands_and_differentiates_it(device):
    a = _on(device, _random(2, 3), requires_grad=True)
    b = _on(device, _random(3), requires_grad=True)
    agnostic.einsum("ij,j->i", [a, b]).sum().backward()
    np.testing.assert_allclose(_host(a.grad), np.broadcast_to(_host(b), (2, 3)), rtol=1e-12)
    np.testing.assert_allclose(_host(b.grad), _host(a).sum(0), rtol=1e-12)


@pytest.mark.skipif(not hasattr(agnostic.Tensor, "conj"), reason="Tensor.conj, which complex gradients use, is missing")
def test_einsum_complex_gradient_is_conjugated(device):
    torch = pytest.importorskip("torch")
    a = _random(2, 3) + 1j * _random(2, 3)
    b = _random(3) + 1j * _random(3)
    ours = [_on(device, x, requires_grad=True) for x in (a, b)]
    theirs = [torch.tensor(x, requires_grad=True) for x in (a, b)]
    weights = _random(2) + 1j * _random(2)
    agnostic.einsum("ij,j->i", *ours).backward(_on(device, weights))
    torch.einsum("ij,j->i", *theirs).backward(torch.tensor(weights))
    for mine, reference in zip(ours, theirs):
        np.testing.assert_allclose(_host(mine.grad), reference.grad.numpy(), rtol=1e-10)


def test_einsum_double_backward(device):
    a = _on(device, _random(3, 3), requires_grad=True)
    (gradient,) = agnostic.autograd.grad(agnostic.einsum("ii->", a * a), a, create_graph=True)
    gradient.sum().backward()
    np.testing.assert_allclose(_host(a.grad), 2 * np.eye(3), rtol=1e-12)
