"""SparseAdam: lazy Adam over the rows of sparse gradients, its argument checks, and its state_dict, against a NumPy
reference and PyTorch."""

import math

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F

ROWS, DIM = 6, 3


def _batches(steps, seed=0):
    rng = numpy.random.default_rng(seed)
    return [(rng.integers(0, ROWS, size=4), rng.standard_normal((4, DIM)).astype(numpy.float32))
            for _ in range(steps)]


def _initial():
    return numpy.random.default_rng(42).standard_normal((ROWS, DIM)).astype(numpy.float32)


def _train(lib, device, options, batches, **embedding_options):
    embedding = lib.nn.Embedding(ROWS, DIM, sparse=True, device=device, **embedding_options)
    with lib.no_grad():
        embedding.weight.copy_(lib.tensor(_initial(), device=device))
    optimizer = lib.optim.SparseAdam(embedding.parameters(), **options)
    for indices, target in batches:
        optimizer.zero_grad()
        ((embedding(lib.tensor(indices, device=device)) - lib.tensor(target, device=device)) ** 2).sum().backward()
        optimizer.step()
    return embedding, optimizer


def _numpy_sparse_adam(batches, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
    """The lazy Adam of PyTorch's SparseAdam, in float64, from its definition."""
    weight = _initial().astype(numpy.float64)
    exp_avg, exp_avg_sq = numpy.zeros_like(weight), numpy.zeros_like(weight)
    beta1, beta2 = betas
    for step, (indices, target) in enumerate(batches, start=1):
        grad = numpy.zeros_like(weight)
        numpy.add.at(grad, indices, 2 * (weight[indices] - target))
        if maximize:
            grad = -grad
        rows = numpy.unique(indices)
        exp_avg[rows] = beta1 * exp_avg[rows] + (1 - beta1) * grad[rows]
        exp_avg_sq[rows] = beta2 * exp_avg_sq[rows] + (1 - beta2) * grad[rows] ** 2
        step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        weight[rows] -= step_size * exp_avg[rows] / (numpy.sqrt(exp_avg_sq[rows]) + eps)
    return weight


OPTIONS = [dict(), dict(lr=0.1), dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6), dict(lr=0.1, maximize=True)]


@pytest.mark.parametrize("options", OPTIONS)
def test_matches_a_numpy_lazy_adam(device, options):
    batches = _batches(5)
    embedding, _ = _train(agnostic, device, options, batches)
    numpy.testing.assert_allclose(embedding.weight.detach().cpu().numpy(), _numpy_sparse_adam(batches, **options),
                                  rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", OPTIONS)
def test_matches_pytorch(device, options):
    torch = pytest.importorskip("torch")
    batches = _batches(6, seed=3)
    for embedding_options in ({}, dict(padding_idx=1)):
        ours, ours_optimizer = _train(agnostic, device, options, batches, **embedding_options)
        theirs, theirs_optimizer = _train(torch, "cpu", options, batches, **embedding_options)
        numpy.testing.assert_allclose(ours.weight.detach().cpu().numpy(), theirs.weight.detach().numpy(), rtol=0,
                                      atol=1e-6)
        ours_state, theirs_state = ours_optimizer.state[ours.weight], theirs_optimizer.state[theirs.weight]
        assert ours_state["step"] == theirs_state["step"] == 6
        for name in ("exp_avg", "exp_avg_sq"):
            numpy.testing.assert_allclose(ours_state[name].cpu().numpy(), theirs_state[name].numpy(), rtol=1e-6,
                                          atol=1e-7)


def test_only_rows_in_the_gradient_move(device):
    embedding, optimizer = _train(agnostic, device, dict(lr=0.1), [(numpy.array([0, 2, 2]),
                                                                    numpy.ones((3, DIM), numpy.float32))])
    weight = embedding.weight.detach().cpu().numpy()
    initial = _initial()
    numpy.testing.assert_array_equal(weight[[1, 3, 4, 5]], initial[[1, 3, 4, 5]])
    assert (weight[[0, 2]] != initial[[0, 2]]).all()
    exp_avg = optimizer.state[embedding.weight]["exp_avg"].cpu().numpy()
    assert not exp_avg[[1, 3, 4, 5]].any() and exp_avg[[0, 2]].all()
    # The first step of Adam moves every touched entry by lr, whatever the gradient's size
    numpy.testing.assert_allclose(numpy.abs(weight[[0, 2]] - initial[[0, 2]]), 0.1, rtol=1e-4)


def test_an_empty_gradient_counts_a_step_and_changes_nothing(device):
    weight = agnostic.nn.Parameter(agnostic.tensor(_initial(), device=device))
    optimizer = agnostic.optim.SparseAdam([weight], lr=0.1)
    F.embedding(agnostic.tensor([2, 2], device=device), weight, padding_idx=2, sparse=True).sum().backward()
    optimizer.step()
    assert optimizer.state[weight]["step"] == 1
    numpy.testing.assert_array_equal(weight.detach().cpu().numpy(), _initial())


def test_dense_gradients_are_refused(device):
    weight = agnostic.nn.Parameter(agnostic.tensor(_initial(), device=device))
    (weight * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam "
                                           "instead"):
        agnostic.optim.SparseAdam([weight]).step()


def test_parameters_without_a_gradient_are_skipped(device):
    used = agnostic.nn.Parameter(agnostic.tensor(_initial(), device=device))
    unused = agnostic.nn.Parameter(agnostic.ones(2, device=device))
    optimizer = agnostic.optim.SparseAdam([used, unused], lr=0.1)
    F.embedding(agnostic.tensor([1], device=device), used, sparse=True).sum().backward()
    optimizer.step()
    assert unused not in optimizer.state and optimizer.state[used]["step"] == 1
    assert unused.detach().cpu().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("options, message", [
    (dict(lr=0.0), "Invalid learning rate: 0.0"),
    (dict(lr=-1.0), "Invalid learning rate: -1.0"),
    (dict(eps=0.0), "Invalid epsilon value: 0.0"),
    (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (dict(betas=(0.9, -0.1)), r"Invalid beta parameter at index 1: -0.1"),
])
def test_argument_checks(options, message):
    with pytest.raises(ValueError, match=message):
        agnostic.optim.SparseAdam([agnostic.nn.Parameter(agnostic.zeros(2))], **options)


def test_complex_and_sparse_parameters_are_refused():
    with pytest.raises(ValueError, match=r"Complex params at indices \[\[0, 1\]\]: SparseAdam does not support "
                                         "complex parameters"):
        agnostic.optim.SparseAdam([agnostic.nn.Parameter(agnostic.zeros(2)),
                                   agnostic.nn.Parameter(agnostic.zeros(2, dtype=agnostic.complex64))])
    sparse = agnostic.sparse_coo_tensor([[0]], [1.0], (3,))
    with pytest.raises(ValueError, match=r"Sparse params at indices \[\[0, 0\]\]: SparseAdam requires dense "
                                         "parameter tensors"):
        agnostic.optim.SparseAdam([sparse])


def test_defaults_and_groups_as_pytorch():
    optimizer = agnostic.optim.SparseAdam([agnostic.nn.Parameter(agnostic.zeros(2))])
    group = optimizer.state_dict()["param_groups"][0]
    assert group == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "maximize": False, "params": [0]}
    torch = pytest.importorskip("torch")
    assert group == torch.optim.SparseAdam([torch.nn.Parameter(torch.zeros(2))]).state_dict()["param_groups"][0]


def test_state_dict_round_trip_continues_the_same_run(device):
    batches = _batches(6, seed=5)
    straight, _ = _train(agnostic, device, dict(lr=0.05), batches)
    first, optimizer = _train(agnostic, device, dict(lr=0.05), batches[:3])
    saved = optimizer.state_dict()
    assert saved["state"][0]["step"] == 3 and set(saved["state"][0]) == {"step", "exp_avg", "exp_avg_sq"}
    resumed = agnostic.nn.Embedding(ROWS, DIM, sparse=True, device=device)
    with agnostic.no_grad():
        resumed.weight.copy_(first.weight)
    optimizer = agnostic.optim.SparseAdam(resumed.parameters(), lr=1.0)
    optimizer.load_state_dict(saved)
    assert optimizer.param_groups[0]["lr"] == 0.05
    for indices, target in batches[3:]:
        optimizer.zero_grad()
        ((resumed(agnostic.tensor(indices, device=device)) - agnostic.tensor(target, device=device)) ** 2
         ).sum().backward()
        optimizer.step()
    numpy.testing.assert_array_equal(resumed.weight.detach().cpu().numpy(), straight.weight.detach().cpu().numpy())


def test_lr_as_a_one_element_tensor():
    with pytest.raises(ValueError, match="Tensor lr must be 1-element"):
        agnostic.optim.SparseAdam([agnostic.nn.Parameter(agnostic.zeros(2))], lr=agnostic.tensor([0.1, 0.2]))
    batches = _batches(2)
    ours, _ = _train(agnostic, "cpu", dict(lr=agnostic.tensor(0.1)), batches)
    numpy.testing.assert_allclose(ours.weight.detach().numpy(), _numpy_sparse_adam(batches, lr=0.1), rtol=1e-5,
                                  atol=1e-6)
