"""Run under the launcher: every collective on CPU tensors, checked against values computed here."""

import datetime
import os
import sys

import numpy

import agnostic
import agnostic.distributed as dist


def check(tensor, expected):
    actual = tensor.numpy()
    numpy.testing.assert_allclose(actual, numpy.asarray(expected, dtype=actual.dtype), rtol=1e-6)


def main():
    dist.init_process_group(os.environ.get("BACKEND", "mpi"), timeout=datetime.timedelta(seconds=30))
    rank, size = dist.get_rank(), dist.get_world_size()
    assert dist.is_initialized()
    assert rank == int(os.environ["RANK"]) and size == int(os.environ["WORLD_SIZE"])
    assert os.environ["LOCAL_RANK"] == str(rank) and os.environ["LOCAL_WORLD_SIZE"] == str(size)
    assert os.environ["MASTER_ADDR"] and int(os.environ["MASTER_PORT"]) > 0
    run_checks()


def run_checks():
    """Every collective against values computed here (after init_process_group, however it was called)."""
    rank, size = dist.get_rank(), dist.get_world_size()
    values = [numpy.array([1.5, -2.0, 3.0]) * (r + 1) for r in range(size)]
    mine = values[rank]
    for op, reference in [(dist.ReduceOp.SUM, sum(values)), (dist.ReduceOp.AVG, sum(values) / size),
                          (dist.ReduceOp.MAX, numpy.max(values, 0)), (dist.ReduceOp.MIN, numpy.min(values, 0)),
                          (dist.ReduceOp.PRODUCT, numpy.prod(values, 0))]:
        for dtype in (agnostic.float32, agnostic.float64, agnostic.float16, agnostic.bfloat16):
            t = agnostic.tensor(mine, dtype=dtype)
            dist.all_reduce(t, op=op)
            assert t.dtype == dtype
            numpy.testing.assert_allclose(t.float().numpy(), reference, rtol=2e-2 if dtype.itemsize == 2 else 1e-6)
    t = agnostic.tensor([rank, 10 * rank], dtype=agnostic.int64)
    dist.all_reduce(t)
    check(t, [sum(range(size)), 10 * sum(range(size))])
    t = agnostic.tensor([rank == 0, True])
    dist.all_reduce(t)
    assert t.tolist() == [True, True]
    # non-contiguous tensor, in place through its view
    base = agnostic.arange(6.0).reshape(2, 3) * (rank + 1)
    view = base.t()
    dist.all_reduce(view)
    check(base, numpy.arange(6.0).reshape(2, 3) * sum(range(1, size + 1)))
    # async
    t = agnostic.ones(4) * rank
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    check(t, [sum(range(size))] * 4)
    # broadcast / reduce
    for src in range(size):
        t = agnostic.full((2, 2), float(rank))
        dist.broadcast(t, src=src)
        check(t, numpy.full((2, 2), src))
    t = agnostic.tensor([float(rank + 1)])
    dist.reduce(t, dst=size - 1, op=dist.ReduceOp.SUM)
    check(t, [sum(range(1, size + 1))] if rank == size - 1 else [rank + 1])
    # all_gather family
    gathered = [agnostic.zeros(2, dtype=agnostic.int32) for _ in range(size)]
    dist.all_gather(gathered, agnostic.tensor([rank, -rank], dtype=agnostic.int32))
    assert [g.tolist() for g in gathered] == [[r, -r] for r in range(size)]
    output = agnostic.zeros(size * 2)
    dist.all_gather_into_tensor(output, agnostic.tensor([rank, rank + 0.5]))
    check(output, numpy.concatenate([[r, r + 0.5] for r in range(size)]))
    # reduce_scatter
    output = agnostic.zeros(2)
    dist.reduce_scatter_tensor(output, agnostic.arange(2.0 * size) * (rank + 1))
    check(output, numpy.arange(2.0 * size)[2 * rank:2 * rank + 2] * sum(range(1, size + 1)))
    output = agnostic.zeros(1)
    dist.reduce_scatter(output, [agnostic.tensor([float(r + rank)]) for r in range(size)])
    check(output, [sum(rank + r for r in range(size))])
    output = agnostic.zeros(1)
    dist.reduce_scatter(output, [agnostic.tensor([float(r + rank)]) for r in range(size)], op=dist.ReduceOp.MAX)
    check(output, [rank + size - 1])
    # gather / scatter
    target = [agnostic.zeros(3) for _ in range(size)] if rank == 0 else None
    dist.gather(agnostic.full((3,), float(rank)), target, dst=0)
    if rank == 0:
        assert [g.tolist() for g in target] == [[float(r)] * 3 for r in range(size)]
    t = agnostic.zeros(2)
    dist.scatter(t, [agnostic.full((2,), 7.0 * r) for r in range(size)] if rank == 1 else None, src=1)
    check(t, [7.0 * rank] * 2)
    # all_to_all_single, even and uneven
    output = agnostic.zeros(size)
    dist.all_to_all_single(output, agnostic.arange(float(size)) + 100 * rank)
    check(output, [100 * r + rank for r in range(size)])
    input_splits = [r + 1 for r in range(size)]  # rank sends r + 1 rows to rank r
    output_splits = [rank + 1] * size
    source = agnostic.full((sum(input_splits), 2), float(rank))
    output = agnostic.zeros(sum(output_splits), 2)
    dist.all_to_all_single(output, source, output_splits, input_splits)
    check(output, numpy.repeat(numpy.arange(size, dtype=float), rank + 1)[:, None].repeat(2, 1))
    # send / recv in a ring, blocking and async
    right, left = (rank + 1) % size, (rank - 1) % size
    received = agnostic.zeros(3)
    if rank % 2 == 0:
        dist.send(agnostic.full((3,), float(rank)), dst=right)
        source = dist.recv(received, src=left)
    else:
        source = dist.recv(received, src=left)
        dist.send(agnostic.full((3,), float(rank)), dst=right)
    assert source == left
    check(received, [left] * 3)
    receive = dist.irecv(received, src=right, tag=5)
    send = dist.isend(agnostic.full((3,), -1.0 * rank), dst=left, tag=5)
    send.wait(), receive.wait()
    check(received, [-1.0 * right] * 3)
    # groups: the first two ranks; global ranks for src
    pair = dist.new_group([0, 1])
    if rank < 2:
        assert dist.get_rank(pair) == rank and dist.get_world_size(pair) == 2
        t = agnostic.tensor([float(rank + 1)])
        dist.all_reduce(t, group=pair)
        check(t, [3.0])
        t = agnostic.tensor([float(rank)])
        dist.broadcast(t, src=1, group=pair)
        check(t, [1.0])
    else:
        assert pair is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(pair) == -1
    last = dist.new_group([size - 1])
    if rank == size - 1:
        t = agnostic.tensor([5.0])
        dist.all_reduce(t, group=last)
        check(t, [5.0])
    # objects
    objects = [None] * size
    dist.all_gather_object(objects, {"rank": rank, "text": "x" * rank})
    assert objects == [{"rank": r, "text": "x" * r} for r in range(size)]
    items = [f"from {rank}", rank] if rank == 0 else [None, None]
    dist.broadcast_object_list(items, src=0)
    assert items == ["from 0", 0]
    gathered = [None] * size if rank == 0 else None
    dist.gather_object(("g", rank), gathered, dst=0)
    if rank == 0:
        assert gathered == [("g", r) for r in range(size)]
    out = [None]
    dist.scatter_object_list(out, [{"to": r} for r in range(size)] if rank == 0 else None, src=0)
    assert out == [{"to": rank}]
    dist.barrier()
    work = dist.barrier(async_op=True)
    work.wait()
    # errors
    try:
        dist.all_reduce(agnostic.ones(1), op="sum")
    except TypeError as error:
        assert "ReduceOp" in str(error)
    else:
        raise AssertionError("a string op was accepted")
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"rank {rank} of {size}: all checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
