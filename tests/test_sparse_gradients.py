"""Sparse weight gradients of embedding / embedding_bag (``sparse=True``), their accumulation, and the optimizers
that take them (SGD, Adagrad) or refuse them (Adam and the other dense-only optimizers), compared with PyTorch."""

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F

ROWS, DIM = 7, 4


def _weight(device, dtype=agnostic.float32):
    values = numpy.arange(ROWS * DIM, dtype=numpy.float64).reshape(ROWS, DIM) / 10 - 1
    return agnostic.nn.Parameter(agnostic.tensor(values, dtype=dtype, device=device))


def _dense(tensor):
    return tensor.to_dense().cpu().numpy() if tensor.is_sparse else tensor.cpu().numpy()


# ----- the gradient -----------------------------------------------------------------------------------------------
def test_sparse_gradient_holds_one_uncoalesced_entry_per_lookup(device):
    weight = _weight(device)
    indices = agnostic.tensor([[1, 2], [1, 4]], device=device)
    upstream = agnostic.arange(16.0, device=device).reshape(2, 2, 4)
    F.embedding(indices, weight, sparse=True).backward(upstream)
    grad = weight.grad
    assert grad.is_sparse and tuple(grad.shape) == (ROWS, DIM) and grad.dtype is agnostic.float32
    assert not grad.is_coalesced()
    assert grad._indices().cpu().tolist() == [[1, 2, 1, 4]]
    numpy.testing.assert_array_equal(grad._values().cpu().numpy(), upstream.reshape(4, 4).cpu().numpy())
    expected = numpy.zeros((ROWS, DIM), numpy.float32)
    numpy.add.at(expected, [1, 2, 1, 4], upstream.reshape(4, 4).cpu().numpy())
    numpy.testing.assert_array_equal(_dense(grad), expected)
    coalesced = grad.coalesce()
    assert coalesced.is_coalesced() and coalesced._indices().cpu().tolist() == [[1, 2, 4]]
    numpy.testing.assert_array_equal(coalesced._values().cpu().numpy(), expected[[1, 2, 4]])


def test_sparse_gradient_equals_the_dense_one(device):
    indices = agnostic.tensor([[0, 3, 3], [6, 0, 5]], device=device)
    grads = []
    for sparse in (False, True):
        weight = _weight(device, agnostic.float64)
        (F.embedding(indices, weight, sparse=sparse) ** 3).sum().backward()
        grads.append(_dense(weight.grad))
    numpy.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_padding_idx_positions_are_left_out(device):
    weight = _weight(device)
    F.embedding(agnostic.tensor([1, 2, 1, 4], device=device), weight, padding_idx=1, sparse=True).sum().backward()
    assert weight.grad._indices().cpu().tolist() == [[2, 4]]
    weight.grad = None
    F.embedding(agnostic.tensor([1, 1], device=device), weight, padding_idx=1, sparse=True).sum().backward()
    assert weight.grad._nnz() == 0 and tuple(weight.grad._indices().shape) == (1, 0)
    assert tuple(weight.grad._values().shape) == (0, DIM)
    assert not _dense(weight.grad).any()


def test_scale_grad_by_freq_is_refused_at_backward_as_pytorch(device):
    weight = _weight(device)
    output = F.embedding(agnostic.tensor([1, 1], device=device), weight, scale_grad_by_freq=True, sparse=True)
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        output.sum().backward()


def test_gradients_accumulate_over_backward_passes(device):
    weight = _weight(device)
    for indices in ([1, 2], [2, 5, 2]):
        F.embedding(agnostic.tensor(indices, device=device), weight, sparse=True).sum().backward()
    assert weight.grad.is_sparse and weight.grad._nnz() == 5
    expected = numpy.zeros((ROWS, DIM), numpy.float32)
    expected[[1, 5]] = 1
    expected[2] = 3
    numpy.testing.assert_array_equal(_dense(weight.grad), expected)
    (weight * 2).sum().backward()  # a dense gradient arriving makes the sum dense
    assert not weight.grad.is_sparse
    numpy.testing.assert_array_equal(weight.grad.cpu().numpy(), expected + 2)
    F.embedding(agnostic.tensor([0], device=device), weight, sparse=True).sum().backward()
    assert not weight.grad.is_sparse
    expected[0] += 1
    numpy.testing.assert_array_equal(weight.grad.cpu().numpy(), expected + 2)


@pytest.mark.parametrize("sparse_first", [True, False])
def test_a_weight_used_sparsely_and_densely_in_one_graph_gets_the_dense_sum(device, sparse_first):
    weight = _weight(device)
    looked_up = F.embedding(agnostic.tensor([[1, 2], [1, 4]], device=device), weight, sparse=True).sum()
    dense = (weight * 3).sum()
    (looked_up + dense if sparse_first else dense + looked_up).backward()
    expected = numpy.full((ROWS, DIM), 3.0, numpy.float32)
    expected[1] += 2
    expected[[2, 4]] += 1
    numpy.testing.assert_array_equal(_dense(weight.grad), expected)


def test_autograd_grad_returns_the_sparse_gradient(device):
    weight = _weight(device)
    grad, = agnostic.autograd.grad(F.embedding(agnostic.tensor([3, 3], device=device), weight, sparse=True).sum(),
                                   weight)
    assert grad.is_sparse and weight.grad is None
    assert _dense(grad)[3].tolist() == [2.0] * DIM


def test_embedding_module_and_zero_grad(device):
    embedding = agnostic.nn.Embedding(ROWS, DIM, sparse=True, device=device)
    optimizer = agnostic.optim.SGD(embedding.parameters(), lr=0.1)
    embedding(agnostic.tensor([0, 6], device=device)).sum().backward()
    assert embedding.weight.grad.is_sparse
    optimizer.zero_grad()
    assert embedding.weight.grad is None
    assert "sparse=True" in repr(embedding)


def test_embedding_bag_sparse_gradient_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    cases = [dict(mode="sum"), dict(mode="mean"), dict(mode="mean", padding_idx=0),
             dict(mode="sum", per_sample_weights=[1.0, 2.0, 3.0, 4.0, 0.5]), dict(mode="sum", include_last_offset=True)]
    indices, offsets = [1, 2, 0, 1, 6], [0, 1, 1, 3]
    upstream = numpy.linspace(-1, 1, 4 * DIM).reshape(4, DIM)
    for case in cases:
        outputs = []
        for lib, dev in ((agnostic, device), (torch, "cpu")):
            weight = lib.nn.Parameter(lib.tensor(_weight("cpu").detach().numpy(), device=dev))
            kwargs = dict(case)
            if "per_sample_weights" in kwargs:
                kwargs["per_sample_weights"] = lib.tensor(kwargs["per_sample_weights"], device=dev)
            starts = offsets + [len(indices)] if kwargs.get("include_last_offset") else offsets
            bags = lib.nn.functional.embedding_bag(lib.tensor(indices, device=dev), weight,
                                                   lib.tensor(starts, device=dev), sparse=True, **kwargs)
            bags.backward(lib.tensor(upstream[:bags.shape[0]], dtype=lib.float32, device=dev))
            grad = weight.grad
            outputs.append((grad._indices().cpu().tolist(), grad._values().detach().cpu().numpy(), _dense(grad)))
        (ours_indices, ours_values, ours_dense), (their_indices, their_values, their_dense) = outputs
        assert ours_indices == their_indices, case
        numpy.testing.assert_allclose(ours_values, their_values, rtol=1e-6, atol=1e-7, err_msg=str(case))
        numpy.testing.assert_allclose(ours_dense, their_dense, rtol=1e-6, atol=1e-7, err_msg=str(case))


def test_embedding_bag_max_mode_refuses_sparse(device):
    weight = _weight(device)
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(agnostic.tensor([[0, 1]], device=device), weight, mode="max", sparse=True)


def test_embedding_bag_module_sparse_gradient(device):
    bag = agnostic.nn.EmbeddingBag(ROWS, DIM, mode="sum", sparse=True, device=device)
    bag(agnostic.tensor([[0, 3], [3, 3]], device=device)).sum().backward()
    assert bag.weight.grad.is_sparse and bag.weight.grad._indices().cpu().tolist() == [[0, 3, 3, 3]]
    dense = _dense(bag.weight.grad)
    assert dense[0].tolist() == [1.0] * DIM and dense[3].tolist() == [3.0] * DIM


def test_gradcheck_through_the_sparse_gradient(device):
    indices = agnostic.tensor([[0, 2, 2]], device=device)

    def lookup(weight):
        return F.embedding(indices, weight, sparse=True).sin()

    weight = agnostic.randn(4, 3, dtype=agnostic.float64, device=device, requires_grad=True)
    numeric = numpy.zeros((4, 3))
    base = weight.detach().cpu().numpy()
    for row in range(4):
        for column in range(3):
            shifted = base.copy()
            shifted[row, column] += 1e-6
            step = lookup(agnostic.tensor(shifted, device=device)).sum() - lookup(weight.detach()).sum()
            numeric[row, column] = step.item() / 1e-6
    lookup(weight).sum().backward()
    numpy.testing.assert_allclose(_dense(weight.grad), numeric, rtol=1e-4, atol=1e-6)
    dense_weight = weight.detach().clone().requires_grad_()
    assert agnostic.autograd.gradcheck(lambda w: F.embedding(indices, w).sin(), (dense_weight,))


def test_sparse_gradient_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    indices = [[1, 2, 0], [1, 4, 1]]
    upstream = numpy.linspace(-2, 2, 6 * DIM).reshape(2, 3, DIM)
    results = []
    for lib, dev in ((agnostic, device), (torch, "cpu")):
        weight = lib.nn.Parameter(lib.tensor(_weight("cpu").detach().numpy(), device=dev))
        output = lib.nn.functional.embedding(lib.tensor(indices, device=dev), weight, padding_idx=0, sparse=True)
        output.backward(lib.tensor(upstream, dtype=lib.float32, device=dev))
        results.append((weight.grad._indices().cpu().tolist(), weight.grad._values().cpu().numpy(),
                        weight.grad.is_coalesced()))
    assert results[0][0] == results[1][0] and results[0][2] == results[1][2]
    numpy.testing.assert_array_equal(results[0][1], results[1][1])


# ----- optimizers ---------------------------------------------------------------------------------------------
def _train(lib, device, optimizer_name, options, steps=4, **embedding_options):
    rng = numpy.random.default_rng(0)
    embedding = lib.nn.Embedding(ROWS, DIM, sparse=True, device=device, **embedding_options)
    with lib.no_grad():
        embedding.weight.copy_(lib.tensor(rng.standard_normal((ROWS, DIM)), dtype=lib.float32, device=device))
    optimizer = getattr(lib.optim, optimizer_name)(embedding.parameters(), **options)
    for _ in range(steps):
        indices = lib.tensor(rng.integers(0, ROWS, size=(3, 2)), device=device)
        target = lib.tensor(rng.standard_normal((3, 2, DIM)), dtype=lib.float32, device=device)
        optimizer.zero_grad()
        ((embedding(indices) - target) ** 2).sum().backward()
        optimizer.step()
    return embedding.weight.detach().cpu().numpy(), optimizer


def _untouched_rows_stay(optimizer_name, options, device):
    """A reference without PyTorch: rows never looked up keep their initial value."""
    rng = numpy.random.default_rng(1)
    embedding = agnostic.nn.Embedding(ROWS, DIM, sparse=True, device=device)
    before = embedding.weight.detach().cpu().numpy().copy()
    optimizer = getattr(agnostic.optim, optimizer_name)(embedding.parameters(), **options)
    for _ in range(3):
        optimizer.zero_grad()
        indices = agnostic.tensor(rng.integers(0, 3, size=4), device=device)
        (embedding(indices) ** 2).sum().backward()
        optimizer.step()
    after = embedding.weight.detach().cpu().numpy()
    numpy.testing.assert_array_equal(after[3:], before[3:])
    assert (after[:3] != before[:3]).any()


SGD_OPTIONS = [dict(lr=0.1), dict(lr=0.1, momentum=0.9), dict(lr=0.1, momentum=0.9, nesterov=True),
               dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)]
ADAGRAD_OPTIONS = [dict(lr=0.1), dict(lr=0.2, lr_decay=0.1, initial_accumulator_value=0.2, eps=1e-6, maximize=True)]


@pytest.mark.parametrize("options", SGD_OPTIONS)
def test_sgd_with_sparse_gradients_matches_pytorch(device, options):
    torch = pytest.importorskip("torch")
    for embedding_options in ({}, dict(padding_idx=2)):
        ours, _ = _train(agnostic, device, "SGD", options, **embedding_options)
        theirs, _ = _train(torch, "cpu", "SGD", options, **embedding_options)
        numpy.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("name, options", [("SGD", SGD_OPTIONS[0]), ("SGD", SGD_OPTIONS[1]),
                                           ("Adagrad", ADAGRAD_OPTIONS[0]), ("SparseAdam", dict(lr=0.1))])
def test_sparse_updates_leave_rows_never_looked_up_alone(device, name, options):
    _untouched_rows_stay(name, options, device)


def test_sgd_without_momentum_is_a_row_update(device):
    weight = _weight(device)
    before = weight.detach().cpu().numpy().copy()
    optimizer = agnostic.optim.SGD([weight], lr=0.5)
    F.embedding(agnostic.tensor([3, 3, 5], device=device), weight, sparse=True).sum().backward()
    optimizer.step()
    expected = before.copy()
    expected[3] -= 1.0
    expected[5] -= 0.5
    numpy.testing.assert_allclose(weight.detach().cpu().numpy(), expected, rtol=1e-6)


def test_sgd_momentum_buffer_stays_sparse_and_bounded(device):
    _, optimizer = _train(agnostic, device, "SGD", dict(lr=0.1, momentum=0.9), steps=6)
    buffer = next(iter(optimizer.state.values()))["momentum_buffer"]
    assert buffer.is_sparse
    assert buffer._nnz() <= ROWS + 6  # coalesced rows plus the last gradient's entries


def test_sgd_mixes_sparse_and_dense_parameters(device):
    torch = pytest.importorskip("torch")
    results = []
    for lib, dev in ((agnostic, device), (torch, "cpu")):
        embedding = lib.nn.Embedding(ROWS, DIM, sparse=True, device=dev)
        linear = lib.nn.Linear(DIM, 1, device=dev)
        with lib.no_grad():
            embedding.weight.copy_(lib.tensor(_weight("cpu").detach().numpy(), device=dev))
            linear.weight.fill_(0.5)
            linear.bias.fill_(-0.25)
        optimizer = lib.optim.SGD(list(embedding.parameters()) + list(linear.parameters()), lr=0.1, momentum=0.9)
        for indices in ([1, 2], [2, 6, 0], [1]):
            optimizer.zero_grad()
            (linear(embedding(lib.tensor(indices, device=dev))) ** 2).sum().backward()
            optimizer.step()
        results.append([p.detach().cpu().numpy() for p in (embedding.weight, linear.weight, linear.bias)])
    for ours, theirs in zip(*results):
        numpy.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)


def test_sgd_refuses_weight_decay_with_sparse_gradients_as_pytorch(device):
    weight = _weight(device)
    F.embedding(agnostic.tensor([1], device=device), weight, sparse=True).sum().backward()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        agnostic.optim.SGD([weight], lr=0.1, weight_decay=0.1).step()


@pytest.mark.parametrize("options", ADAGRAD_OPTIONS)
def test_adagrad_with_sparse_gradients_matches_pytorch(device, options):
    torch = pytest.importorskip("torch")
    for embedding_options in ({}, dict(padding_idx=2)):
        ours, ours_optimizer = _train(agnostic, device, "Adagrad", options, **embedding_options)
        theirs, theirs_optimizer = _train(torch, "cpu", "Adagrad", options, **embedding_options)
        numpy.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-6)
        ours_sum = next(iter(ours_optimizer.state.values()))["sum"].cpu().numpy()
        theirs_sum = next(iter(theirs_optimizer.state.values()))["sum"].numpy()
        numpy.testing.assert_allclose(ours_sum, theirs_sum, rtol=1e-6)


def test_adagrad_sparse_update_by_hand(device):
    weight = _weight(device)
    before = weight.detach().cpu().numpy().copy()
    optimizer = agnostic.optim.Adagrad([weight], lr=0.5, eps=0.0)
    F.embedding(agnostic.tensor([4, 4], device=device), weight, sparse=True).sum().backward()
    optimizer.step()
    state_sum = optimizer.state[weight]["sum"].cpu().numpy()
    assert state_sum[4].tolist() == [4.0] * DIM and not numpy.delete(state_sum, 4, axis=0).any()
    expected = before.copy()
    expected[4] -= 0.5  # g / sqrt(g * g) with the repeated index's gradient summed first (g = 2)
    numpy.testing.assert_allclose(weight.detach().cpu().numpy(), expected, rtol=1e-6)


def test_adagrad_refuses_weight_decay_with_sparse_gradients(device):
    weight = _weight(device)
    F.embedding(agnostic.tensor([1], device=device), weight, sparse=True).sum().backward()
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        agnostic.optim.Adagrad([weight], weight_decay=0.1).step()


@pytest.mark.parametrize("name, message", [
    ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", "RMSprop does not support sparse gradients"),
])
def test_dense_optimizers_refuse_sparse_gradients_as_pytorch(device, name, message):
    weight = _weight(device)
    before = weight.detach().cpu().numpy().copy()
    F.embedding(agnostic.tensor([1], device=device), weight, sparse=True).sum().backward()
    with pytest.raises(RuntimeError, match=message):
        getattr(agnostic.optim, name)([weight]).step()
    numpy.testing.assert_array_equal(weight.detach().cpu().numpy(), before)


def test_sparse_gradient_to_dense_then_dense_optimizer(device):
    weight = _weight(device)
    F.embedding(agnostic.tensor([1, 1], device=device), weight, sparse=True).sum().backward()
    weight.grad = weight.grad.to_dense()
    agnostic.optim.Adam([weight], lr=0.1).step()
    changed = (weight.detach().cpu().numpy() != _weight("cpu").detach().numpy()).any(axis=1)
    assert changed.tolist() == [False, True, False, False, False, False, False]


# ----- what users do next with a sparse gradient -----------------------------------------------------------------
def test_clip_grad_norm_of_a_sparse_gradient_is_its_dense_norm(device):
    """Repeated rows add up before the norm is taken; the clipped gradient's dense norm is max_norm."""
    embedding = agnostic.nn.Embedding(5, 3, sparse=True).to(device)
    embedding(agnostic.tensor([0, 2, 2], device=device)).sum().backward()
    dense_norm = float(embedding.weight.grad.to_dense().norm())
    total = agnostic.nn.utils.clip_grad_norm_(embedding.parameters(), 0.5)
    assert abs(float(total) - dense_norm) < 1e-5
    assert abs(float(embedding.weight.grad.to_dense().norm()) - 0.5) < 1e-5
    torch = pytest.importorskip("torch", minversion="2.14")  # earlier releases refuse sparse gradients here
    reference = torch.nn.Embedding(5, 3, sparse=True)
    reference(torch.tensor([0, 2, 2])).sum().backward()
    assert abs(float(torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)) - dense_norm) < 1e-5


def test_a_sparse_gradient_can_be_assigned_and_zeroed_in_place(device):
    embedding = agnostic.nn.Embedding(4, 2, sparse=True).to(device)
    embedding(agnostic.tensor([1, 3], device=device)).sum().backward()
    grad = embedding.weight.grad
    embedding.weight.grad = None
    embedding.weight.grad = grad
    with pytest.raises(RuntimeError, match="different size"):
        embedding.weight.grad = agnostic.sparse_coo_tensor([[0]], [[1.0, 1.0]], (3, 2), device=device)
    agnostic.optim.SGD(embedding.parameters(), lr=0.1).zero_grad(set_to_none=False)
    assert embedding.weight.grad.is_sparse and embedding.weight.grad._nnz() == 0
    assert float(embedding.weight.grad.to_dense().abs().sum()) == 0.0


@pytest.mark.parametrize("name", ["Adadelta", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop", "Adafactor"])
def test_optimizers_without_a_sparse_update_refuse_sparse_gradients(device, name):
    embedding = agnostic.nn.Embedding(4, 2, sparse=True).to(device)
    embedding(agnostic.tensor([1, 3], device=device)).sum().backward()
    optimizer = getattr(agnostic.optim, name)(embedding.parameters())
    with pytest.raises(RuntimeError, match=f"{name} does not support sparse gradients"):
        optimizer.step()


def test_lbfgs_takes_a_sparse_gradient_as_its_dense_form(device):
    embedding = agnostic.nn.Embedding(4, 2, sparse=True).to(device)
    dense = agnostic.nn.Embedding(4, 2).to(device)
    dense.weight.data.copy_(embedding.weight.data)
    indices = agnostic.tensor([1, 3, 3], device=device)
    for module in (embedding, dense):
        optimizer = agnostic.optim.LBFGS(module.parameters(), lr=0.1, max_iter=3)

        def closure(module=module, optimizer=optimizer):
            optimizer.zero_grad()
            loss = (module(indices) ** 2).sum()
            loss.backward()
            return loss
        optimizer.step(closure)
    numpy.testing.assert_allclose(embedding.weight.detach().cpu().numpy(), dense.weight.detach().cpu().numpy(),
                                  rtol=1e-5, atol=1e-6)
