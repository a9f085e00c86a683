"""Run under the launcher on GPUs (one per rank): NCCL collectives on CUDA tensors, and object collectives."""

import os

import numpy

import agnostic
import agnostic.distributed as dist

local_rank = int(os.environ["LOCAL_RANK"])
agnostic.cuda.set_device(local_rank)
dist.init_process_group(os.environ.get("BACKEND", "nccl"))
rank, size = dist.get_rank(), dist.get_world_size()
device = f"cuda:{local_rank}"
for op, reference in [(dist.ReduceOp.SUM, sum(range(1, size + 1))), (dist.ReduceOp.MAX, size),
                      (dist.ReduceOp.AVG, sum(range(1, size + 1)) / size)]:
    t = agnostic.full((5,), float(rank + 1), device=device)
    dist.all_reduce(t, op=op)
    numpy.testing.assert_allclose(t.cpu().numpy(), [reference] * 5)
t = agnostic.full((3,), float(rank), device=device)
dist.broadcast(t, src=size - 1)
assert t.tolist() == [float(size - 1)] * 3
output = agnostic.zeros(2 * size, device=device)
dist.all_gather_into_tensor(output, agnostic.tensor([rank, rank], dtype=agnostic.float32, device=device))
assert output.tolist() == [float(r) for r in range(size) for _ in range(2)]
output = agnostic.zeros(1, device=device)
dist.reduce_scatter_tensor(output, agnostic.arange(float(size), device=device))
assert output.tolist() == [float(rank * size)]
output = agnostic.zeros(size, device=device)
dist.all_to_all_single(output, agnostic.arange(float(size), device=device) + 10 * rank)
assert output.tolist() == [10.0 * r + rank for r in range(size)]
work = dist.all_reduce(agnostic.ones(2, device=device), async_op=True)
work.wait()
agnostic.cuda.synchronize()
assert work.is_completed()
if size > 1:
    received = agnostic.zeros(2, device=device)
    if rank == 0:
        dist.send(agnostic.full((2,), 9.0, device=device), dst=1)
    elif rank == 1:
        dist.recv(received, src=0)
        assert received.tolist() == [9.0, 9.0]
objects = [None] * size
dist.all_gather_object(objects, rank)
assert objects == list(range(size))
dist.barrier()
dist.destroy_process_group()
print(f"rank {rank} of {size}: cuda checks passed", flush=True)
