"""DistributedDataParallel and DistributedSampler: several CPU processes under the launcher (MPI) train exactly as
one process on the full batch; no_sync accumulation; unused parameters; buffers and parameters synced from rank 0;
the sampler's partition; the DDP digits example."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

import agnostic
from agnostic import nn
from agnostic.utils.data import DistributedSampler

from conftest import run_launcher

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOLERANCE = 1e-10  # float64 parameters after 3 SGD steps: DDP's per-shard means averaged vs one mean over the batch

WORKER = textwrap.dedent('''
    import os
    import sys
    import agnostic
    import agnostic.distributed as dist
    from agnostic import nn
    from agnostic.nn.parallel import DistributedDataParallel
    from agnostic.utils.data import DistributedSampler

    TOLERANCE, ON_CUDA = float(sys.argv[1]), sys.argv[2] == "cuda"
    LOCAL_RANK = int(os.environ["LOCAL_RANK"])
    device = agnostic.device("cuda", LOCAL_RANK) if ON_CUDA else agnostic.device("cpu")
    if ON_CUDA:
        agnostic.cuda.set_device(device)
    dist.init_process_group("nccl" if ON_CUDA else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    agnostic.set_default_dtype(agnostic.float64)
    agnostic.set_default_device(device)

    def DDP(module, **options):
        return DistributedDataParallel(module, device_ids=[LOCAL_RANK] if ON_CUDA else None, **options)

    def model_for(seed):
        agnostic.manual_seed(seed)
        return nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))

    def close(a, b):
        return float((a - b).abs().max()) <= TOLERANCE

    def same_parameters(m1, m2):
        return all(close(p, q) for p, q in zip(m1.parameters(), m2.parameters()))

    agnostic.manual_seed(1234)  # the same global data on every rank
    inputs, targets = agnostic.randn(6 * world, 5), agnostic.randn(6 * world, 3)
    shard = slice(6 * rank, 6 * (rank + 1))

    # 1. parameters come from rank 0; training equals full-batch training (several buckets, and the default one)
    for bucket_cap_mb, as_view in ((0.0005, False), (25, False), (0.0005, True)):
        model = DDP(model_for(seed=rank), bucket_cap_mb=bucket_cap_mb, gradient_as_bucket_view=as_view)
        reference = model_for(seed=0)
        assert same_parameters(model.module, reference), "parameters were not broadcast from rank 0"
        if bucket_cap_mb < 1:
            assert len(model.reducer.buckets) > 1, "expected several buckets"
        optimizer = agnostic.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        reference_optimizer = agnostic.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        for step in range(3):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(inputs[shard]), targets[shard]).backward()
            optimizer.step()
            reference_optimizer.zero_grad()
            nn.functional.mse_loss(reference(inputs), targets).backward()
            reference_optimizer.step()
        assert same_parameters(model.module, reference), f"DDP differs from full-batch training ({bucket_cap_mb})"
        assert list(model.state_dict())[0] == "module.0.weight"

    # 2. no_sync: two local micro-batches then a synced one average the accumulated sum
    model, reference = DDP(model_for(seed=0)), model_for(seed=0)
    for micro in range(3):
        rows = slice(6 * rank + 2 * micro, 6 * rank + 2 * micro + 2)
        if micro < 2:
            with model.no_sync():
                nn.functional.mse_loss(model(inputs[rows]), targets[rows]).backward()
        else:
            nn.functional.mse_loss(model(inputs[rows]), targets[rows]).backward()
        everyone = agnostic.cat([inputs[6 * r + 2 * micro:6 * r + 2 * micro + 2] for r in range(world)])
        everyone_targets = agnostic.cat([targets[6 * r + 2 * micro:6 * r + 2 * micro + 2] for r in range(world)])
        nn.functional.mse_loss(reference(everyone), everyone_targets).backward()
    for p, q in zip(model.module.parameters(), reference.parameters()):
        assert close(p.grad, q.grad), "no_sync accumulation differs from the full-batch sum of gradients"

    # 3. find_unused_parameters: a branch used on rank 0 only, one never used
    class Branches(nn.Module):
        def __init__(self):
            super().__init__()
            self.trunk, self.sometimes, self.never = nn.Linear(5, 3), nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x, use_branch):
            y = self.trunk(x)
            return self.sometimes(y) if use_branch else y

    agnostic.manual_seed(0)
    model = DDP(Branches(), find_unused_parameters=True)
    local = model.module.sometimes.weight.detach().clone()
    out = model(inputs[shard], use_branch=rank == 0)
    out.sum().backward()
    assert model.module.never.weight.grad is None, "a parameter no rank used must keep grad None"
    agnostic.manual_seed(0)
    plain = Branches()
    plain(inputs[0:6], True).sum().backward()
    expected = plain.sometimes.weight.grad / world
    assert close(model.module.sometimes.weight.grad, expected), "locally unused parameter: wrong average"
    # a second iteration works (the reducer was reset)
    model(inputs[shard], use_branch=True).sum().backward()

    # 4. buffers follow rank 0 at every forward
    agnostic.manual_seed(rank)
    normed = nn.Sequential(nn.Linear(5, 4), nn.BatchNorm1d(4)).to(device)
    model = DDP(normed)
    mean = model.module[1].running_mean.clone()
    gathered = [None] * world
    dist.all_gather_object(gathered, mean.tolist())
    assert all(g == gathered[0] for g in gathered), "buffers were not broadcast at construction"
    model(inputs[shard] + rank).sum().backward()  # each rank's running stats now differ ...
    model(inputs[shard]).sum().backward()  # ... until this forward broadcasts rank 0's again
    assert float(model.module[1].num_batches_tracked) == 2

    # 5. the sampler's shares partition the (padded) dataset
    shares = [None] * world
    dist.all_gather_object(shares, list(DistributedSampler(range(11), seed=3)))
    flat = sorted(i for share in shares for i in share)
    assert set(flat) == set(range(11)) and len(flat) == len(shares[0]) * world, shares

    # 6. without find_unused_parameters, an unused parameter is reported at the next forward
    agnostic.manual_seed(0)
    model = DDP(Branches())
    model(inputs[shard], use_branch=False).sum().backward()
    try:
        model(inputs[shard], use_branch=False)
    except RuntimeError as error:
        assert "find_unused_parameters=True" in str(error) and "sometimes.weight" in str(error), error
    else:
        raise AssertionError("expected the unfinished-reduction error")
    print(f"DDP-OK rank {rank} of {world}", flush=True)
''')


def _launch(tmp_path, nproc, script, *args, timeout=120, launcher_flags=()):
    command = [sys.executable, "-m", "agnostic.distributed.run", "--nproc-per-node", str(nproc), *launcher_flags,
               str(script), *args]
    environment = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return run_launcher(command, timeout, cwd=tmp_path, env=environment)


def _needs_mpi():
    pytest.importorskip("mpi4py", reason="the CPU engine needs: pip install 'agnostic-tensor[distributed]'")


@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_on_cpu_processes_equals_single_process_full_batch_training(nproc, tmp_path):
    _needs_mpi()
    _run_worker(tmp_path, nproc, "cpu")


@pytest.mark.parametrize("nproc", [1, 2])
def test_ddp_on_gpus_equals_single_process_full_batch_training(nproc, tmp_path):
    if agnostic.cuda.device_count() < nproc:
        pytest.skip(f"needs {nproc} CUDA device(s)")
    _run_worker(tmp_path, nproc, "cuda", "--no-mpiexec")


def _run_worker(tmp_path, nproc, device_type, *launcher_flags):
    script = tmp_path / "ddp_worker.py"
    script.write_text(WORKER)
    result = _launch(tmp_path, nproc, script, str(TOLERANCE), device_type, launcher_flags=launcher_flags)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    for rank in range(nproc):
        assert f"DDP-OK rank {rank} of {nproc}" in output, output


# ----- DistributedSampler (one process: rank and world size given) ------------------------------------------------
@pytest.mark.parametrize("length, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (12, 4, True)])
def test_sampler_follows_pytorchs_padding_and_interleaving(length, replicas, drop_last):
    shares = [list(DistributedSampler(range(length), replicas, rank, shuffle=False, drop_last=drop_last))
              for rank in range(replicas)]
    expected_size = (length // replicas) if drop_last else -(-length // replicas)
    assert all(len(share) == expected_size for share in shares)
    padded = list(range(length)) * (-(-expected_size * replicas // length))
    assert shares == [padded[:expected_size * replicas][rank::replicas] for rank in range(replicas)]
    pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    assert shares == [list(TorchSampler(range(length), replicas, rank, shuffle=False, drop_last=drop_last))
                      for rank in range(replicas)]


def test_sampler_shuffles_the_same_on_every_rank_and_anew_each_epoch():
    def shares(epoch, seed=0):
        samplers = [DistributedSampler(range(20), 4, rank, seed=seed) for rank in range(4)]
        for sampler in samplers:
            sampler.set_epoch(epoch)
        return [list(sampler) for sampler in samplers]

    first = shares(0)
    assert sorted(sum(first, [])) == list(range(20))  # one permutation, split: every index exactly once
    assert shares(0) == first  # deterministic per epoch
    assert shares(1) != first and sorted(sum(shares(1), [])) == list(range(20))
    assert shares(0, seed=1) != first


def test_sampler_rejects_a_rank_outside_the_world():
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(4), num_replicas=3, rank=3)


def test_sampler_without_a_process_group_says_what_to_do():
    import agnostic.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedSampler(range(4))


# ----- DDP in one process (world size 1): errors and the trivial average ----------------------------------------
@pytest.fixture
def world_of_one():
    import agnostic.distributed as dist

    dist.init_process_group(None, init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


def test_ddp_with_world_size_one_equals_the_module(world_of_one, device):
    from agnostic.nn.parallel import DistributedDataParallel

    if not device.backend.host and not world_of_one.is_nccl_available():
        pytest.skip("CUDA without NCCL")
    agnostic.manual_seed(0)
    module = agnostic.nn.Linear(4, 2).to(device)
    reference = agnostic.nn.Linear(4, 2).to(device)
    reference.load_state_dict(module.state_dict())
    device_ids = None if device.backend.host else [device.index or 0]
    model = DistributedDataParallel(module, device_ids=device_ids)
    x = agnostic.randn(3, 4, device=device)
    model(x).square().sum().backward()
    reference(x).square().sum().backward()
    assert agnostic.allclose(module.weight.grad, reference.weight.grad)
    assert agnostic.allclose(module.bias.grad, reference.bias.grad)
    assert list(model.state_dict()) == ["module.weight", "module.bias"]


def test_ddp_needs_an_initialized_process_group():
    import agnostic.distributed as dist
    from agnostic.nn.parallel import DistributedDataParallel

    if dist.is_initialized():
        pytest.skip("a process group is already initialized in this process")
    with pytest.raises(RuntimeError, match="init_process_group"):
        DistributedDataParallel(agnostic.nn.Linear(2, 2))


def test_ddp_refuses_a_module_without_trainable_parameters(world_of_one):
    from agnostic.nn.parallel import DistributedDataParallel

    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DistributedDataParallel(agnostic.nn.ReLU())


def test_ddp_buckets_hold_parameters_in_reverse_order_with_a_small_first_bucket(world_of_one):
    from agnostic.nn.parallel import DistributedDataParallel

    module = nn.Sequential(*[nn.Linear(256, 256) for _ in range(8)])  # 256 KiB weights
    model = DistributedDataParallel(module, bucket_cap_mb=1)
    buckets = [bucket.params for bucket in model.reducer.buckets]
    assert [p for bucket in buckets for p in bucket] == list(module.parameters())[::-1]
    sizes = [sum(p.numel() * 4 for p in bucket) for bucket in buckets]
    assert all(size <= 2 ** 20 for size in sizes) and len(buckets) == 3, sizes


def test_ddp_device_ids_are_for_gpu_modules(world_of_one):
    from agnostic.nn.parallel import DistributedDataParallel

    with pytest.raises(ValueError, match="device_ids=None for a CPU module"):
        DistributedDataParallel(agnostic.nn.Linear(2, 2), device_ids=[0])


def test_ddp_example_with_two_processes_prints_the_single_process_accuracy(tmp_path):
    _needs_mpi()
    script = ROOT / "examples" / "ddp_digits.py"
    flags = ["--epochs", "2", "--device", "cpu", "--out", str(tmp_path)]
    single = subprocess.run([sys.executable, str(script), *flags], capture_output=True, text=True, timeout=120)
    assert single.returncode == 0, single.stdout + single.stderr
    double = _launch(tmp_path, 2, script, *flags)
    assert double.returncode == 0, double.stdout + double.stderr
    pattern = r"held-out accuracy: (\d+\.\d+)% \(359 images\)"
    single_accuracy = re.findall(pattern, single.stdout)
    double_accuracy = re.findall(pattern, double.stdout + double.stderr)
    assert single_accuracy and double_accuracy, (single.stdout, double.stdout)
    assert double_accuracy == single_accuracy, (single.stdout, double.stdout)
