"""Run under the launcher with MODE=raise|kill|timeout: one rank misbehaves, the job must fail clearly.
BACKEND=nccl runs the collectives on each rank's GPU instead of between CPU processes over MPI."""

import datetime
import os
import signal
import time

import agnostic
import agnostic.distributed as dist

mode = os.environ["MODE"]
backend = os.environ.get("BACKEND", "mpi")
device = "cpu"
if backend == "nccl":
    device = f"cuda:{os.environ['LOCAL_RANK']}"
    agnostic.cuda.set_device(device)
dist.init_process_group(backend, timeout=datetime.timedelta(seconds=float(os.environ.get("TIMEOUT", "30"))))
rank = dist.get_rank()
t = agnostic.ones(2, device=device)
dist.all_reduce(t)
if rank == 1:
    if mode == "raise":
        raise ValueError("rank 1 broke on purpose")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "timeout":
        time.sleep(60)
dist.all_reduce(t)
if device != "cpu":
    agnostic.cuda.synchronize()
print("unreachable", flush=True)
