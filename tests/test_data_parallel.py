"""nn.parallel: DataParallel and its pieces (scatter, replicate, parallel_apply, gather). The N-device machinery is
device-blind, so it runs here over a list of CPU "devices" (threads, recorded copies, gradients summed back); the
tests that need two GPUs run where they exist and skip otherwise."""

import collections
import threading

import numpy
import pytest

import agnostic
from agnostic import nn
from agnostic.nn.parallel import (DataParallel, data_parallel, gather, parallel_apply, replicate, scatter,
                                  scatter_kwargs)

TWO_CPUS = ["cpu", "cpu"]
THREE_CPUS = ["cpu", "cpu", "cpu"]
two_gpus = pytest.mark.skipif(agnostic.cuda.device_count() < 2, reason="needs two CUDA devices")
Pair = collections.namedtuple("Pair", "left right")


def _mlp():
    agnostic.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double()


# ----- scatter / gather ----------------------------------------------------------------------------------------
def test_scatter_splits_nested_structures_and_shares_other_objects():
    x = agnostic.arange(10.0).reshape(5, 2)
    marker = object()
    pieces = scatter((x, [x], {"x": x, "flag": marker}, Pair(x, 7)), TWO_CPUS)
    assert len(pieces) == 2
    for piece, rows in zip(pieces, (slice(0, 3), slice(3, 5))):
        expected = numpy.arange(10.0).reshape(5, 2)[rows]
        tensor, listed, mapping, pair = piece
        for got in (tensor, listed[0], mapping["x"], pair.left):
            numpy.testing.assert_array_equal(got.numpy(), expected)
        assert mapping["flag"] is marker and isinstance(pair, Pair) and pair.right == 7


def test_scatter_makes_fewer_chunks_than_devices_for_a_short_batch():
    pieces = scatter(agnostic.arange(2), THREE_CPUS)
    assert [p.tolist() for p in pieces] == [[0], [1]]


def test_scatter_along_another_dim():
    pieces = scatter(agnostic.arange(6).reshape(2, 3), TWO_CPUS, dim=1)
    assert [p.tolist() for p in pieces] == [[[0, 1], [3, 4]], [[2], [5]]]


def test_scatter_kwargs_pads_the_shorter_side():
    inputs, kwargs = scatter_kwargs((agnostic.arange(4),), {}, TWO_CPUS)
    assert [i[0].tolist() for i in inputs] == [[0, 1], [2, 3]] and kwargs == ({}, {})
    inputs, kwargs = scatter_kwargs((), {"x": agnostic.arange(4), "scale": 2}, TWO_CPUS)
    assert inputs == ((), ()) and [k["x"].tolist() for k in kwargs] == [[0, 1], [2, 3]]
    assert all(k["scale"] == 2 for k in kwargs)


def test_gather_joins_nested_outputs_and_keeps_none():
    outputs = [{"y": agnostic.ones(1, 2), "aux": None, "pair": (agnostic.zeros(1), agnostic.ones(1))},
               {"y": agnostic.zeros(2, 2), "aux": None, "pair": (agnostic.ones(2), agnostic.zeros(2))}]
    joined = gather(outputs, "cpu")
    assert joined["y"].tolist() == [[1, 1], [0, 0], [0, 0]] and joined["aux"] is None
    assert [t.tolist() for t in joined["pair"]] == [[0, 1, 1], [1, 0, 0]]
    assert gather([Pair(agnostic.ones(1), agnostic.zeros(1))] * 2, -1).left.tolist() == [1, 1]


def test_gather_of_scalars_warns_and_returns_a_vector():
    with pytest.warns(UserWarning, match="all input tensors were scalars"):
        result = gather([agnostic.tensor(1.0), agnostic.tensor(2.0)], "cpu")
    assert result.tolist() == [1.0, 2.0]


def test_gather_refuses_dicts_of_different_sizes():
    with pytest.raises(ValueError, match="All dicts must have the same number of keys"):
        gather([{"a": agnostic.ones(1)}, {"a": agnostic.ones(1), "b": agnostic.ones(1)}], "cpu")


def test_scatter_then_gather_is_differentiable():
    x = agnostic.randn(5, 3, dtype=agnostic.float64, requires_grad=True)

    def round_trip(x):
        return gather([piece * (i + 1) for i, piece in enumerate(scatter(x, THREE_CPUS))], "cpu")

    assert agnostic.autograd.gradcheck(round_trip, (x,))
    round_trip(x).sum().backward()
    numpy.testing.assert_array_equal(x.grad.numpy(), numpy.repeat([[1.0], [1.0], [2.0], [2.0], [3.0]], 3, axis=1))


def test_gather_of_scalars_is_differentiable():
    x = agnostic.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning):
        total = gather([(x[0] * 3).sum(), (x[1] * 5).sum()], "cpu")
    total.sum().backward()
    assert x.grad.tolist() == [3.0, 5.0]


# ----- replicate -------------------------------------------------------------------------------------------------
def test_replicas_are_differentiable_copies_whose_gradients_reach_the_original():
    model = _mlp()
    replicas = replicate(model, TWO_CPUS)
    x = agnostic.randn(3, 4, dtype=agnostic.float64)
    for replica in replicas:
        assert replica is not model and replica[0].weight is not model[0].weight
        assert replica[0].weight.grad_fn is not None
        numpy.testing.assert_array_equal(replica[0].weight.detach().numpy(), model[0].weight.detach().numpy())
    (replicas[0](x).sum() + 2 * replicas[1](x).sum()).backward()
    reference = _mlp()
    (3 * reference(x).sum()).backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        numpy.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-12)


def test_replicate_copies_buffers_and_keeps_shared_submodules_shared():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.BatchNorm1d(2), shared)
    (replica,) = replicate(model, ["cpu"])
    assert replica[0] is replica[2] and replica[0] is not shared
    assert replica[1].running_mean is not model[1].running_mean
    assert replica[1].running_mean.tolist() == model[1].running_mean.tolist()
    (detached,) = replicate(model, ["cpu"], detach=True)
    assert detached[0].weight.grad_fn is None


# ----- parallel_apply --------------------------------------------------------------------------------------------
class _Recorder(nn.Module):
    def __init__(self, meeting=None):
        super().__init__()
        self.threads = []
        self.meeting = meeting

    def forward(self, x, offset=0):
        self.threads.append(threading.current_thread())  # the object: an ended thread's ident can be reused
        if self.meeting is not None:
            self.meeting.wait(timeout=10)  # breaks (raises) unless every replica runs at the same time
        return x + offset


def test_parallel_apply_runs_the_replicas_concurrently_off_the_calling_thread_in_order():
    for _ in range(3):  # the worker threads are reused from call to call
        meeting = threading.Barrier(2)
        modules = [_Recorder(meeting), _Recorder(meeting)]
        outputs = parallel_apply(modules, [(agnostic.ones(1),), (agnostic.zeros(1),)], ({}, {"offset": 5}),
                                 TWO_CPUS)
        assert [o.tolist() for o in outputs] == [[1.0], [5.0]]
        first, second = modules[0].threads[0], modules[1].threads[0]
        assert first is not second and threading.current_thread() not in (first, second)


def test_parallel_apply_carries_the_callers_grad_mode():
    x = agnostic.ones(2, requires_grad=True)
    with agnostic.no_grad():
        outputs = parallel_apply([nn.Identity(), _Recorder()], [(x * 2,), (x,)], None, TWO_CPUS)
    assert not outputs[0].requires_grad and not (outputs[1] * 1).requires_grad


class _Failing(nn.Module):
    def forward(self, x):
        raise KeyError("bad key")


def test_parallel_apply_raises_a_replicas_error_naming_replica_and_device():
    with pytest.raises(KeyError, match="Caught KeyError in replica 1 on device cpu") as caught:
        parallel_apply([nn.Identity(), _Failing()], [(agnostic.ones(1),), (agnostic.ones(1),)], None, TWO_CPUS)
    assert isinstance(caught.value.__cause__, KeyError)


def test_parallel_apply_checks_its_lengths():
    with pytest.raises(AssertionError, match="number of modules 2 is not equal to the number of inputs 1"):
        parallel_apply([nn.Identity(), nn.Identity()], [(agnostic.ones(1),)])


# ----- data_parallel over N devices ----------------------------------------------------------------------------
def test_data_parallel_over_three_devices_equals_the_module_on_the_whole_batch():
    model, reference = _mlp(), _mlp()
    x = agnostic.randn(7, 4, dtype=agnostic.float64)
    out = data_parallel(model, x, device_ids=THREE_CPUS, output_device="cpu")
    expected = reference(x)
    numpy.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    assert out.grad_fn.name() == "GatherBackward"
    out.square().mean().backward()
    expected.square().mean().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        numpy.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_data_parallel_passes_keyword_arguments_scattered():
    out = data_parallel(_Recorder(), agnostic.zeros(4), device_ids=TWO_CPUS,
                        module_kwargs={"offset": agnostic.arange(4.0)})
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_data_parallel_training_matches_plain_training_on_cpu_devices():
    model, reference = _mlp(), _mlp()
    optimizer = agnostic.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = agnostic.optim.SGD(reference.parameters(), lr=0.1)
    agnostic.manual_seed(1)
    x, y = agnostic.randn(8, 4, dtype=agnostic.float64), agnostic.randn(8, 3, dtype=agnostic.float64)
    for _ in range(3):
        for net, opt, run in ((model, optimizer, lambda: data_parallel(model, x, device_ids=TWO_CPUS)),
                              (reference, reference_optimizer, lambda: reference(x))):
            opt.zero_grad()
            nn.functional.mse_loss(run(), y).backward()
            opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        numpy.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-10, atol=1e-14)


# ----- DataParallel: without CUDA or with one GPU, the module itself --------------------------------------------
@pytest.mark.skipif(agnostic.cuda.device_count() >= 2, reason="two GPUs: the parallel path runs instead")
def test_dataparallel_with_one_device_or_none_equals_the_module():
    model = _mlp()
    wrapped = DataParallel(model)
    device = next(model.parameters()).device  # moved to cuda:0 when one GPU is visible
    x = agnostic.randn(5, 4, dtype=agnostic.float64)
    out = wrapped(x)
    assert out.device == device
    numpy.testing.assert_allclose(out.detach().cpu().numpy(), model(x.to(device)).detach().cpu().numpy())
    out.sum().backward()
    assert model[0].weight.grad is not None


def test_dataparallel_state_dict_keys_carry_the_module_prefix():
    model = _mlp()
    wrapped = DataParallel(model)
    assert wrapped.module is model
    assert list(wrapped.state_dict()) == ["module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"]
    other = DataParallel(nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).double())
    other.load_state_dict(wrapped.state_dict())
    assert other.module[0].weight.tolist() == model[0].weight.tolist()


def test_dataparallel_takes_pytorchs_arguments():
    wrapped = DataParallel(nn.Linear(2, 2), device_ids=None, output_device=None, dim=0)
    assert wrapped.dim == 0
    if not agnostic.cuda.is_available():
        assert wrapped.device_ids == []


# ----- two GPUs -------------------------------------------------------------------------------------------------
@two_gpus
def test_dataparallel_on_two_gpus_trains_as_one_gpu_on_the_full_batch():
    model, reference = _mlp().to("cuda:0"), _mlp().to("cuda:0")
    wrapped = DataParallel(model, device_ids=[0, 1])
    optimizer = agnostic.optim.SGD(model.parameters(), lr=0.1)
    reference_optimizer = agnostic.optim.SGD(reference.parameters(), lr=0.1)
    agnostic.manual_seed(2)
    x, y = agnostic.randn(16, 4, dtype=agnostic.float64), agnostic.randn(16, 3, dtype=agnostic.float64)
    for _ in range(3):
        optimizer.zero_grad()
        out = wrapped(x.to("cuda:0"))
        assert out.device == agnostic.device("cuda:0")
        nn.functional.mse_loss(out, y.to("cuda:0")).backward()
        optimizer.step()
        reference_optimizer.zero_grad()
        nn.functional.mse_loss(reference(x.to("cuda:0")), y.to("cuda:0")).backward()
        reference_optimizer.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.grad.device == agnostic.device("cuda:0")
        numpy.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-10, atol=1e-14)


@two_gpus
@pytest.mark.parametrize("output_device, expected", [(1, "cuda:1"), ("cuda:1", "cuda:1"), (-1, "cpu"),
                                                      (agnostic.device("cpu"), "cpu")])
def test_dataparallel_gathers_on_the_output_device(output_device, expected):
    wrapped = DataParallel(_mlp().to("cuda:0"), device_ids=["cuda:0", agnostic.device("cuda:1")],
                           output_device=output_device)
    out = wrapped(agnostic.randn(6, 4, dtype=agnostic.float64))
    assert out.device == agnostic.device(expected) and out.shape == (6, 3)
    out.sum().backward()
    assert wrapped.module[0].weight.grad.device == agnostic.device("cuda:0")


@two_gpus
def test_dataparallel_raises_a_replicas_error_naming_its_gpu():
    class FailsOnSecondGpu(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            if x.get_device() == 1:
                raise ValueError("boom")
            return self.linear(x)

    wrapped = DataParallel(FailsOnSecondGpu().to("cuda:0"), device_ids=[0, 1])
    with pytest.raises(ValueError, match="Caught ValueError in replica 1 on device cuda:1"):
        wrapped(agnostic.randn(4, 4, device="cuda:0"))


@two_gpus
def test_dataparallel_refuses_a_module_off_the_first_gpu():
    wrapped = DataParallel(nn.Linear(2, 2).to("cuda:1"), device_ids=[0, 1])
    with pytest.raises(RuntimeError, match=r"on device cuda:0 \(device_ids\[0\]\) but found one of them on device: "
                                           r"cuda:1"):
        wrapped(agnostic.ones(4, 2))


@two_gpus
def test_dataparallel_runs_each_replica_on_its_own_device():
    seen = {}

    class Where(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(2, 2)

        def forward(self, x):
            seen[x.get_device()] = (agnostic.cuda.current_device(), self.linear.weight.get_device())
            return self.linear(x)

    DataParallel(Where().to("cuda:0"), device_ids=[0, 1])(agnostic.ones(4, 2, device="cuda:0"))
    assert seen == {0: (0, 0), 1: (1, 1)}
