"""torch's top-level linear algebra names and Tensor methods (det, slogdet, logdet, inverse, pinverse, matrix_power,
matrix_exp, cholesky_solve, cholesky_inverse, svd's old form) and einsum's sublist form."""

import numpy
import pytest

import agnostic
from agnostic.autograd import gradcheck


def _matrix(device, dtype=agnostic.float64, seed=0):
    values = numpy.random.default_rng(seed).standard_normal((3, 3)) + 3 * numpy.eye(3)
    return agnostic.tensor(values, dtype=dtype, device=device), values


def test_values_match_numpy(device):
    x, a = _matrix(device)
    numpy.testing.assert_allclose(agnostic.det(x).cpu().numpy(), numpy.linalg.det(a), rtol=1e-10)
    numpy.testing.assert_allclose(x.det().cpu().numpy(), numpy.linalg.det(a), rtol=1e-10)
    numpy.testing.assert_allclose(x.inverse().cpu().numpy(), numpy.linalg.inv(a), rtol=1e-10)
    numpy.testing.assert_allclose(x.pinverse().cpu().numpy(), numpy.linalg.pinv(a), rtol=1e-9)
    numpy.testing.assert_allclose(x.matrix_power(3).cpu().numpy(), a @ a @ a, rtol=1e-10)
    numpy.testing.assert_allclose(x.matrix_power(-1).cpu().numpy(), numpy.linalg.inv(a), rtol=1e-10)
    sign, logabsdet = x.slogdet()
    expected_sign, expected_log = numpy.linalg.slogdet(a)
    assert sign.item() == expected_sign
    assert logabsdet.item() == pytest.approx(expected_log)


def test_logdet_nan_for_negative_and_minus_inf_for_singular(device):
    assert agnostic.logdet(agnostic.tensor([[-1., 0.], [0., 1.]], device=device)).isnan().item()
    assert agnostic.logdet(agnostic.zeros(2, 2, device=device)).item() == float("-inf")
    assert agnostic.tensor([[2., 0.], [0., 3.]], device=device).logdet().item() == pytest.approx(numpy.log(6))


def test_matrix_exp_of_diagonal(device):
    x = agnostic.tensor([[1., 0.], [0., 2.]], dtype=agnostic.float64, device=device)
    numpy.testing.assert_allclose(x.matrix_exp().cpu().numpy(), numpy.diag(numpy.exp([1., 2.])), rtol=1e-12)


def test_cholesky_solve_and_inverse(device):
    x, a = _matrix(device)
    spd = a @ a.T + numpy.eye(3)
    L = numpy.linalg.cholesky(spd)
    b = numpy.arange(6.).reshape(3, 2)
    lower = agnostic.tensor(L, device=device)
    solution = agnostic.cholesky_solve(agnostic.tensor(b, device=device), lower)
    numpy.testing.assert_allclose(solution.cpu().numpy(), numpy.linalg.solve(spd, b), rtol=1e-9)
    upper = agnostic.tensor(L.T.copy(), device=device)
    numpy.testing.assert_allclose(agnostic.cholesky_solve(agnostic.tensor(b, device=device), upper, upper=True)
                                  .cpu().numpy(), numpy.linalg.solve(spd, b), rtol=1e-9)
    numpy.testing.assert_allclose(lower.cholesky_inverse().cpu().numpy(), numpy.linalg.inv(spd), rtol=1e-9)


def test_svd_old_form_returns_v(device):
    x, a = _matrix(device)
    U, S, V = agnostic.svd(x)
    numpy.testing.assert_allclose((U * S @ V.mT).cpu().numpy(), a, atol=1e-10)
    tall = agnostic.tensor(numpy.arange(6.).reshape(3, 2), device=device)
    assert tall.svd().U.shape == (3, 2) and tall.svd(some=False).U.shape == (3, 3)
    empty = agnostic.svd(tall, compute_uv=False)
    assert empty.U.shape == (3, 3) and empty.V.shape == (2, 2) and empty.U.abs().sum().item() == 0
    numpy.testing.assert_allclose(empty.S.cpu().numpy(), numpy.linalg.svd(numpy.arange(6.).reshape(3, 2))[1])


@pytest.mark.parametrize("name", ["det", "logdet", "inverse", "matrix_exp", "pinverse"])
def test_gradcheck(device, name):
    x, _ = _matrix(device)
    x.requires_grad_(True)
    assert gradcheck(lambda m: getattr(agnostic, name)(m), (x,))


def test_gradients_match_pytorch(device):
    torch = pytest.importorskip("torch")
    x, a = _matrix(device)
    x.requires_grad_(True)
    reference = torch.tensor(a, requires_grad=True)
    (x.det() + x.inverse().sum() + x.slogdet().logabsdet + x.matrix_power(2).sum()).backward()
    (reference.det() + reference.inverse().sum() + reference.slogdet().logabsdet
     + reference.matrix_power(2).sum()).backward()
    numpy.testing.assert_allclose(x.grad.cpu().numpy(), reference.grad.numpy(), rtol=1e-9)


def test_einsum_sublist_form(device):
    a = agnostic.arange(6., device=device).reshape(2, 3)
    b = agnostic.arange(12., device=device).reshape(3, 4)
    numpy.testing.assert_allclose(agnostic.einsum(a, [0, 1], b, [1, 2], [0, 2]).cpu().numpy(),
                                  (a @ b).cpu().numpy())
    assert agnostic.einsum(a, [Ellipsis, 1], [Ellipsis]).tolist() == [3., 12.]
    assert agnostic.einsum(a, [1, 0]).shape == (3, 2)  # implicit output: subscripts in order, as in PyTorch
    with pytest.raises(ValueError, match="valid range"):
        agnostic.einsum(a, [0, 60])


def test_einsum_sublist_matches_pytorch():
    torch = pytest.importorskip("torch")
    a, b = numpy.random.default_rng(1).standard_normal((2, 3, 3))
    for args in (([0, 1], [1, 2], [0, 2]), ([0, 1], [1, 0], []), ([0, 1], [2, 1], None)):
        ours = [agnostic.tensor(a), args[0], agnostic.tensor(b), args[1]]
        theirs = [torch.tensor(a), args[0], torch.tensor(b), args[1]]
        if args[2] is not None:
            ours.append(args[2]), theirs.append(args[2])
        numpy.testing.assert_allclose(agnostic.einsum(*ours).numpy(), torch.einsum(*theirs).numpy(), rtol=1e-12)
