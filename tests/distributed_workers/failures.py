"""Run under the launcher with MODE=raise|kill|timeout: one rank misbehaves, the job must fail clearly."""

import datetime
import os
import signal
import time

import agnostic
import agnostic.distributed as dist

mode = os.environ["MODE"]
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(os.environ.get("TIMEOUT", "30"))))
rank = dist.get_rank()
t = agnostic.ones(2)
dist.all_reduce(t)
if rank == 1:
    if mode == "raise":
        raise ValueError("rank 1 broke on purpose")
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "timeout":
        time.sleep(60)
dist.all_reduce(t)
print("unreachable", flush=True)
