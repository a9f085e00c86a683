"""Scale-out speed: all-reduce bus bandwidth through agnostic.distributed beside the engine called directly (CuPy's
NCCL communicator on GPUs, mpi4py on CPUs), and DistributedDataParallel and DataParallel training throughput against
one device.

    python benchmarks/bench_distributed.py [--quick] [--processes N] [--out FILE.md]

On a machine with G GPUs: G ranks (one per GPU, under ``python -m agnostic.distributed.run``) over NCCL, and
DataParallel over the G GPUs of one process; with one GPU these are world-size-1 rows. Without CUDA: N CPU processes
(default 2, under MPICH's ``mpiexec``) over MPI, and DataParallel's CPU path (the module itself).
Bus bandwidth follows nccl-tests: algorithm bandwidth (bytes / time) times 2 (n - 1) / n, the bytes each link
carries in a ring all-reduce (0 for one rank). Throughput: training samples per second of an MLP (width 4096, three
hidden layers, batch 4096 per device, SGD; ``--quick`` or CPU-only: width 512, batch 256), DDP with that batch on each
rank, DataParallel with that batch split over its devices; the ratio is against the same step on one device.
A measurement, not a test: the exit code is 0 unless something fails to run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = [2 ** power for power in range(10, 29, 2)]  # 1 KiB .. 256 MiB
QUICK_SIZES = [2 ** power for power in range(10, 23, 4)]  # 1 KiB .. 4 MiB


def import_agnostic():
    """agnostic, installed or (run from a checkout without installing) from this repository."""
    try:
        import agnostic
    except ImportError:
        sys.path.insert(0, ROOT)
        import agnostic
    import agnostic.distributed
    import agnostic.nn.parallel
    return agnostic


def mlp(agnostic, width, depth=3):
    layers = []
    for _ in range(depth):
        layers += [agnostic.nn.Linear(width, width), agnostic.nn.ReLU()]
    return agnostic.nn.Sequential(*layers, agnostic.nn.Linear(width, 10))


def synchronizer(agnostic, device):
    return (lambda: agnostic.cuda.synchronize(device)) if agnostic.cuda.is_available() and device.index is not None \
        else (lambda: None)


def timed(run, synchronize, steps, repeats, warmup=2):
    """Median over ``repeats`` of the seconds per call of ``run``, after ``warmup`` calls."""
    for _ in range(warmup):
        run()
    synchronize()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(steps):
            run()
        synchronize()
        times.append((time.perf_counter() - started) / steps)
    return statistics.median(times)


def training_throughput(agnostic, model, device, batch, steps, repeats):
    """Samples per second of SGD steps of ``model`` (already wrapped) on random batches of ``batch``."""
    agnostic.manual_seed(0)
    inputs = agnostic.randn(batch, model_width(model), device=device)
    labels = agnostic.randint(0, 10, (batch,), device=device)
    optimizer = agnostic.optim.SGD(model.parameters(), lr=1e-3)
    loss_fn = agnostic.nn.CrossEntropyLoss()

    def step():
        optimizer.zero_grad()
        loss_fn(model(inputs), labels).backward()
        optimizer.step()

    return batch / timed(step, synchronizer(agnostic, device), steps, repeats)


def model_width(model):
    inner = getattr(model, "module", model)
    return inner[0].in_features


# ----- the ranks (under the launcher or mpiexec) ----------------------------------------------------------------
def worker(args):
    """One rank: measure the all-reduces and DDP; rank 0 prints ``ROW {json}`` lines for the driver."""
    agnostic = import_agnostic()
    dist = agnostic.distributed
    use_cuda = agnostic.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = agnostic.device("cuda", local_rank) if use_cuda else agnostic.device("cpu")
    if use_cuda:
        agnostic.cuda.set_device(device)
    dist.init_process_group("nccl" if use_cuda else "mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    engine = "NCCL" if use_cuda else "MPI"
    synchronize = synchronizer(agnostic, device)
    direct = direct_all_reduce(agnostic, dist, use_cuda, world, rank)

    def emit(**row):
        if rank == 0:
            print("ROW " + json.dumps(row), flush=True)

    for size in (QUICK_SIZES if args.quick else SIZES):
        tensor = agnostic.ones(size // 4, dtype=agnostic.float32, device=device)
        steps = 5 if size >= 2 ** 24 else 20
        dist.barrier()
        ours = timed(lambda: dist.all_reduce(tensor), synchronize, steps, args.repeats)
        dist.barrier()
        theirs = timed(lambda: direct(tensor), synchronize, steps, args.repeats) if direct else None
        emit(kind="allreduce", engine=engine, world=world, size=size, agnostic=ours, direct=theirs)

    width, batch = args.width, args.batch
    agnostic.manual_seed(0)
    with device:
        model = mlp(agnostic, width)
    wrapped = agnostic.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank] if use_cuda else None)
    rate = training_throughput(agnostic, wrapped, device, batch, args.steps, args.repeats)
    rates = [None] * world
    dist.all_gather_object(rates, rate)
    emit(kind="ddp", engine=engine, world=world, width=width, batch=batch, samples_per_second=sum(rates))
    dist.destroy_process_group()


def direct_all_reduce(agnostic, dist, use_cuda, world, rank):
    """A function all-reducing a tensor (in place, sum) with the engine itself, or None when it can't be reached."""
    if use_cuda:
        try:
            from cupy.cuda import nccl
            import cupy
        except ImportError:
            return None
        unique_id = [nccl.get_unique_id() if rank == 0 else None]
        dist.broadcast_object_list(unique_id, src=0)
        communicator = nccl.NcclCommunicator(world, unique_id[0], rank)

        def reduce(tensor):
            array = cupy.asarray(tensor)  # the same memory (__cuda_array_interface__)
            communicator.allReduce(array.data.ptr, array.data.ptr, array.size, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                                   cupy.cuda.get_current_stream().ptr)
        return reduce
    try:
        from mpi4py import MPI
    except ImportError:
        return None
    if MPI.COMM_WORLD.Get_size() != world:  # ranks not started by one mpiexec: no shared world communicator
        return None

    def reduce(tensor):
        MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, tensor.numpy())
    return reduce


# ----- the driver ------------------------------------------------------------------------------------------------
def launch(args, processes, use_cuda):
    """Run the ranks and return the rows rank 0 printed."""
    script = os.path.abspath(__file__)
    flags = ["--worker", "--width", str(args.width), "--batch", str(args.batch), "--steps", str(args.steps),
             "--repeats", str(args.repeats)] + (["--quick"] if args.quick else [])
    if use_cuda:
        command = [sys.executable, "-m", "agnostic.distributed.run", "--nproc-per-node", str(processes), script]
    else:
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        command = [mpiexec if os.path.exists(mpiexec) else "mpiexec", "-n", str(processes), sys.executable, script]
    environment = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run(command + flags, capture_output=True, text=True, env=environment, timeout=args.timeout)
    if result.returncode != 0:
        raise RuntimeError(f"the ranks failed (exit {result.returncode}):\n{result.stdout[-3000:]}\n"
                           f"{result.stderr[-3000:]}")
    return [json.loads(line[4:]) for line in result.stdout.splitlines() if line.startswith("ROW ")]


def single_process_rows(args, devices):
    """One device's throughput and DataParallel's over ``devices`` (the module itself without CUDA)."""
    agnostic = import_agnostic()
    device = devices[0]
    agnostic.manual_seed(0)
    with device:
        model = mlp(agnostic, args.width)
    one = training_throughput(agnostic, model, device, args.batch, args.steps, args.repeats)
    wrapped = agnostic.nn.parallel.DataParallel(model, device_ids=[d.index for d in devices] if devices[0].index
                                                is not None else None)
    parallel = training_throughput(agnostic, wrapped, device, args.batch, args.steps, args.repeats)
    return one, parallel


def gigabytes_per_second(size, seconds):
    return size / seconds / 1e9


def report(allreduce_rows, ddp_rows, one, parallel, devices, args):
    lines = ["| engine | ranks | size | agnostic (us) | algbw (GB/s) | busbw (GB/s) | direct (us) | direct busbw "
             "(GB/s) | agnostic / direct |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for row in allreduce_rows:
        factor = 2 * (row["world"] - 1) / row["world"]
        algbw = gigabytes_per_second(row["size"], row["agnostic"])
        direct = row["direct"]
        lines.append(
            f"| {row['engine']} | {row['world']} | {size_text(row['size'])} | {row['agnostic'] * 1e6:,.1f} | "
            f"{algbw:.2f} | {algbw * factor:.2f} | "
            + (f"{direct * 1e6:,.1f} | {gigabytes_per_second(row['size'], direct) * factor:.2f} | "
               f"{row['agnostic'] / direct:.2f}x |" if direct else "n/a | n/a | n/a |"))
    lines += ["", f"MLP width {args.width} (3 hidden layers), batch {args.batch} per device, SGD:", "",
              "| what | devices | samples/s | one device (samples/s) | speed-up |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for row in ddp_rows:
        lines.append(f"| DistributedDataParallel ({row['engine']}) | {row['world']} ranks | "
                     f"{row['samples_per_second']:,.0f} | {one:,.0f} | {row['samples_per_second'] / one:.2f}x |")
    lines.append(f"| DataParallel (batch split) | {len(devices)} x {devices[0].type} | {parallel:,.0f} | {one:,.0f} | "
                 f"{parallel / one:.2f}x |")
    return "\n".join(lines)


def size_text(size):
    return f"{size // 2 ** 20} MiB" if size >= 2 ** 20 else f"{size // 2 ** 10} KiB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few steps (for tests)")
    parser.add_argument("--processes", type=int, default=2, help="CPU processes when there is no GPU")
    parser.add_argument("--width", type=int, help="MLP width (default 4096 on GPUs, 512 otherwise)")
    parser.add_argument("--batch", type=int, help="batch per device (default 4096 on GPUs, 256 otherwise)")
    parser.add_argument("--steps", type=int, help="steps per timed loop")
    parser.add_argument("--repeats", type=int, help="timed loops (the median is reported)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds the ranks may take")
    parser.add_argument("--out", help="also write the report to this file")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    agnostic = import_agnostic()
    gpus = agnostic.cuda.device_count()
    large = gpus > 0 and not args.quick
    args.width = args.width or (4096 if large else 512)
    args.batch = args.batch or (4096 if large else 256)
    args.steps = args.steps or (2 if args.quick else 10)
    args.repeats = args.repeats or (2 if args.quick else 5)
    if args.worker:
        worker(args)
        return
    devices = [agnostic.device("cuda", i) for i in range(gpus)] or [agnostic.device("cpu")]
    rows = launch(args, gpus or args.processes, gpus > 0)
    one, parallel = single_process_rows(args, devices)
    text = report([r for r in rows if r["kind"] == "allreduce"], [r for r in rows if r["kind"] == "ddp"], one,
                  parallel, devices, args)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
