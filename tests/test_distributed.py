"""agnostic.distributed: collectives through MPI between CPU processes started by the launcher (values checked in
tests/distributed_workers/), failures and timeouts, the rendezvous in one process, and NCCL on CUDA when present."""

import datetime
import os
import pathlib
import subprocess
import sys

import numpy
import pytest

import agnostic
import agnostic.distributed as dist

from conftest import run_launcher

WORKERS = pathlib.Path(__file__).parent / "distributed_workers"
ROOT = pathlib.Path(__file__).parent.parent
needs_mpi = pytest.mark.skipif(not dist.is_mpi_available(), reason="needs mpi4py: pip install 'agnostic-tensor[distributed]'")


def launch(nproc, script, timeout=120, **environment):
    command = [sys.executable, "-m", "agnostic.distributed.run", "--nproc-per-node", str(nproc), str(script)]
    return run_launcher(command, timeout, cwd=ROOT, env=dict(os.environ, **environment))


@needs_mpi
@pytest.mark.parametrize("nproc", [2, 3])
def test_every_collective_under_the_launcher(nproc):
    result = launch(nproc, WORKERS / "collectives.py")
    assert result.returncode == 0, result.stderr[-4000:]
    for rank in range(nproc):
        assert f"rank {rank} of {nproc}: all checks passed" in result.stdout


@needs_mpi
def test_a_raising_rank_fails_the_job_with_its_traceback():
    result = launch(2, WORKERS / "failures.py", MODE="raise")
    assert result.returncode != 0
    assert "rank 1 (local rank 1" in result.stderr and "stopped the other ranks" in result.stderr
    assert "ValueError: rank 1 broke on purpose" in result.stderr.split("last output of rank 1")[-1]
    assert "unreachable" not in result.stdout


@needs_mpi
def test_a_killed_rank_fails_the_job_within_the_timeout():
    result = launch(2, WORKERS / "failures.py", timeout=60, MODE="kill", TIMEOUT="30")
    assert result.returncode != 0
    assert "agnostic.distributed.run: rank 1" in result.stderr and "SIGKILL" in result.stderr
    assert "unreachable" not in result.stdout


@needs_mpi
def test_a_collective_that_a_rank_never_enters_times_out_naming_it():
    result = launch(2, WORKERS / "failures.py", MODE="timeout", TIMEOUT="2")
    assert result.returncode != 0
    assert "all_reduce timed out after 2 s: rank(s) [1] never entered it" in result.stderr


def test_the_launcher_sets_torchrun_environment(tmp_path):
    script = tmp_path / "show.py"
    # one write per line: the ranks share the pipe, unbuffered (-u), so print's text and newline could interleave
    script.write_text("import os\nos.write(1, (' '.join(os.environ[k] for k in ('RANK', 'LOCAL_RANK', 'WORLD_SIZE', "
                      "'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')) + '\\n').encode())\n")
    command = [sys.executable, "-m", "agnostic.distributed.run", "--nproc_per_node=2", "--no-mpiexec", str(script)]
    result = run_launcher(command, 60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    rows = sorted(line.split() for line in result.stdout.splitlines())
    assert [row[:5] for row in rows] == [["0", "0", "2", "2", "127.0.0.1"], ["1", "1", "2", "2", "127.0.0.1"]]
    assert rows[0][5] == rows[1][5] and int(rows[0][5]) > 0


@pytest.mark.parametrize("version, used", [("HYDRA build details:\n    Version: 4.3.0", True),
                                           ("mpiexec (Open MPI) 5.0.3", False)])
def test_the_launcher_runs_ranks_only_under_mpichs_mpiexec(tmp_path, monkeypatch, version, used):
    pytest.importorskip("mpi4py")
    from agnostic.distributed import run
    mpiexec = tmp_path / "mpiexec"
    mpiexec.write_text(f"#!/bin/sh\nprintf '{version}\\n'\n")
    mpiexec.chmod(0o755)
    monkeypatch.setattr(run.sys, "executable", str(tmp_path / "python"))  # mpiexec beside this Python comes first
    assert run._mpiexec() == (str(mpiexec) if used else None)


def test_the_launcher_rejects_a_bad_node_rank():
    command = [sys.executable, "-m", "agnostic.distributed.run", "--nnodes", "2", "--node-rank", "2",
               "--master-port", "1", "x.py"]
    result = run_launcher(command, 60, cwd=ROOT)
    assert result.returncode != 0 and "--node-rank 2 must be in 0..1" in result.stderr


@pytest.fixture
def single_process():
    dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=5))
    yield
    dist.destroy_process_group()


def test_world_of_one_runs_collectives_in_place(single_process, device):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    t = agnostic.tensor([1.0, -2.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, -2.0]
    output = agnostic.zeros(2, device=device)
    dist.all_gather_into_tensor(output, t)
    assert output.tolist() == [1.0, -2.0]
    work = dist.broadcast(t, src=0, async_op=True)
    assert work.wait() and work.is_completed()
    objects = [None]
    dist.all_gather_object(objects, {"a": 1})
    assert objects == [{"a": 1}]


def test_errors_before_init_and_on_bad_arguments(single_process):
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(agnostic.ones(1), op="sum")
    with pytest.raises(ValueError, match="not a rank of the group"):
        dist.broadcast(agnostic.ones(1), src=3)
    with pytest.raises(ValueError, match="one tensor per rank"):
        dist.all_gather([agnostic.ones(1), agnostic.ones(1)], agnostic.ones(1))


def test_collectives_before_init_say_so():
    with pytest.raises(ValueError, match="init_process_group"):
        dist.all_reduce(agnostic.ones(1))
    with pytest.raises(ValueError, match="unknown backend"):
        dist.init_process_group("smoke-signals", rank=0, world_size=1)


def test_stores_set_get_add_wait_and_time_out():
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=datetime.timedelta(seconds=1))
    client = dist.TCPStore("127.0.0.1", server.port, timeout=datetime.timedelta(seconds=1))
    client.set("k", "v")
    assert server.get("k") == b"v" and server.add("n", 3) == 3 and client.add("n", 2) == 5
    assert client.check(["k"]) and not client.check(["k", "missing"])
    with pytest.raises(RuntimeError, match=r"missing"):
        client.wait(["missing"], timeout=0.2)
    prefixed = dist.PrefixStore("p", client)
    prefixed.set("x", b"1")
    assert server.get("p/x") == b"1" and server.delete_key("p/x") and not server.check(["p/x"])
    client.close(), server.close()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int64"])
def test_the_store_engines_average_divides_floats_and_floors_integers(dtype):
    from agnostic.distributed._store_engine import _reduce
    numpy_dtype = agnostic.bfloat16.numpy_dtype if dtype == "bfloat16" else numpy.dtype(dtype)
    arrays = [numpy.array(values, dtype=numpy_dtype) for values in ([1.5, -2, 3], [3, -4, 6])]
    if dtype == "int64":
        arrays = [numpy.array([1, -2, 3]), numpy.array([2, -4, 6])]
    average = _reduce(arrays, "avg")
    expected = [1, -3, 4] if dtype == "int64" else [2.25, -3, 4.5]  # floored, as PyTorch's integer AVG
    assert average.dtype == numpy_dtype and average.astype(numpy.float64).tolist() == expected


def test_a_bfloat16_average_written_back_is_divided_not_floored():
    from agnostic.distributed._reduction import write_back
    bfloat16 = agnostic.bfloat16.numpy_dtype
    array = numpy.array([4.5, -6, 9], dtype=bfloat16)  # the sum of two ranks, reduced in bfloat16 (NCCL has it)
    write_back(array, array, "avg", 2)()
    assert array.astype(numpy.float64).tolist() == [2.25, -3, 4.5]


def test_a_missing_mpi_engine_names_the_extra():
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import agnostic.distributed as dist\n"
            "assert not dist.is_mpi_available()\n"
            "try:\n    dist.init_process_group('mpi', init_method='tcp://127.0.0.1:0', rank=0, world_size=1)\n"
            "except RuntimeError as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert "pip install 'agnostic-tensor[distributed]'" in result.stdout, result.stderr


def _spawned_rank(rank, port, world_size):
    sys.path.insert(0, str(WORKERS))
    import collectives
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # not under an MPI process manager: the store engine
        dist.init_process_group(init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=30))
    collectives.run_checks()


def test_processes_started_by_multiprocessing_spawn_run_every_collective():
    """The PyTorch pattern: mp.spawn + tcp:// + explicit rank and world_size. MPICH 5.0 cannot connect processes
    that no MPI process manager started (pmodels/mpich#7805), so their CPU collectives go through the store."""
    import socket

    import agnostic.multiprocessing as mp
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(_spawned_rank, args=(port, 3), nprocs=3)


# ---- CUDA: NCCL (world size 1 in-process and through the launcher; 2-GPU runs skip below two GPUs)

needs_cuda = pytest.mark.skipif(agnostic.cuda.device_count() < 1, reason="needs a CUDA device")
needs_two_gpus = pytest.mark.skipif(agnostic.cuda.device_count() < 2, reason="needs two CUDA devices")


@needs_cuda
def test_nccl_world_of_one_in_process():
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    try:
        t = agnostic.tensor([1.0, 2.0], device="cuda")
        dist.all_reduce(t)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        dist.broadcast(t, src=0)
        assert t.tolist() == [1.0, 2.0]
        output = agnostic.zeros(2, device="cuda", dtype=agnostic.bfloat16)
        dist.all_gather_into_tensor(output, t.bfloat16())
        assert output.float().tolist() == [1.0, 2.0]
        flag = agnostic.tensor([True, False], device="cuda")
        dist.all_reduce(flag)
        assert flag.tolist() == [True, False]
        with pytest.raises(RuntimeError, match="no backend for cpu tensors"):
            dist.all_reduce(agnostic.ones(1))
    finally:
        dist.destroy_process_group()


@needs_cuda
def test_nccl_world_of_one_under_the_launcher():
    result = launch(1, WORKERS / "cuda_collectives.py", NCCL_DEBUG="WARN")  # a failure then shows NCCL's reason
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    assert "rank 0 of 1: cuda checks passed" in result.stdout


@needs_two_gpus
def test_nccl_on_every_gpu_under_the_launcher():
    count = agnostic.cuda.device_count()
    result = launch(count, WORKERS / "cuda_collectives.py")
    assert result.returncode == 0, result.stderr[-4000:]
    for rank in range(count):
        assert f"rank {rank} of {count}: cuda checks passed" in result.stdout


@needs_two_gpus
@pytest.mark.parametrize("mode", ["raise", "kill"])
def test_a_failing_rank_fails_an_nccl_job_within_the_timeout(mode):
    result = launch(2, WORKERS / "failures.py", timeout=90, MODE=mode, BACKEND="nccl", TIMEOUT="30")
    assert result.returncode != 0
    assert "agnostic.distributed.run: rank 1" in result.stderr
    assert ("SIGKILL" if mode == "kill" else "ValueError: rank 1 broke on purpose") in result.stderr
    assert "unreachable" not in result.stdout


@needs_two_gpus
def test_mixed_backend_runs_cpu_through_mpi_and_cuda_through_nccl():
    result = launch(2, WORKERS / "cuda_collectives.py", BACKEND="cpu:mpi,cuda:nccl")
    assert result.returncode == 0, result.stderr[-4000:]


def test_reduce_matches_numpy_for_every_op(single_process):
    values = numpy.array([3.0, -1.0, 0.5])
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.PRODUCT, dist.ReduceOp.MIN, dist.ReduceOp.MAX):
        t = agnostic.tensor(values)
        dist.reduce(t, dst=0, op=op)
        numpy.testing.assert_array_equal(t.numpy(), values)
