"""Passing a 256 MiB tensor between processes through ``agnostic.multiprocessing.Queue``, against pickling its bytes.

A tensor on a queue moves a handle (a descriptor, a segment name or a CUDA IPC handle), not its data, so the
transfer costs a small, size-independent fraction of ``pickle.dumps`` + ``pickle.loads`` of the same bytes (goal:
under 5%). The first transfer of a CPU tensor also moves it into shared memory, once; it is shown apart.

Prints a Markdown table (CPU with each sharing strategy; CUDA when a GPU is present), measured in one run:
    python benchmarks/bench_multiprocessing.py [--quick] [--out FILE.md]
"""

import argparse
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy  # noqa: E402

import agnostic  # noqa: E402
import agnostic.multiprocessing as mp  # noqa: E402
from _timing import median_seconds  # noqa: E402

GOAL = 0.05


def echo(inbox, outbox):
    """Child: rebuild each tensor received, answer with its element count (CUDA: after touching it on the GPU)."""
    while True:
        tensor = inbox.get()
        if tensor is None:
            return
        if tensor.is_cuda:
            tensor[:1].sum().item()
        outbox.put(tensor.numel())
        del tensor


def _pickle_seconds(size_bytes, repeats):
    array = numpy.ones(size_bytes // 4, numpy.float32)
    return median_seconds(lambda: pickle.loads(pickle.dumps(array)), repeats)


def _queue_seconds(make_tensor, repeats):
    """(first transfer, median of the next ones) through a spawn-context Queue to a child that rebuilds it."""
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = context.Process(target=echo, args=(inbox, outbox), daemon=True)
    child.start()
    try:
        inbox.put(agnostic.zeros(1, device=make_tensor().device))  # the child is up and has imported everything
        outbox.get(timeout=120)
        tensor = make_tensor()

        def transfer():
            inbox.put(tensor)
            assert outbox.get(timeout=120) == tensor.numel()

        first = median_seconds(transfer, 1)
        steady = median_seconds(transfer, repeats)
        inbox.put(None)
        child.join(120)
    finally:
        if child.is_alive():
            child.kill()
            child.join()
    return first, steady


def _row(what, seconds, baseline, first=None):
    ratio = seconds / baseline
    return (what, f"{first * 1e3:.1f}" if first is not None else "", f"{seconds * 1e3:.2f}", f"{baseline * 1e3:.1f}",
            f"{ratio * 100:.2f}%", f"< {GOAL * 100:.0f}%", "pass" if ratio < GOAL else "FAIL")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    arguments = parser.parse_args()
    repeats = 3 if arguments.quick else 10
    size_bytes = 256 << 20
    count = size_bytes // 4
    baseline = _pickle_seconds(size_bytes, repeats)
    rows = []
    previous = mp.get_sharing_strategy()
    for strategy in sorted(mp.get_all_sharing_strategies()):
        mp.set_sharing_strategy(strategy)
        first, steady = _queue_seconds(lambda: agnostic.ones(count), repeats)
        rows.append(_row(f"cpu, {strategy}", steady, baseline, first))
    mp.set_sharing_strategy(previous)
    if agnostic.cuda.is_available():
        first, steady = _queue_seconds(lambda: agnostic.ones(count, device="cuda"), repeats)
        agnostic.cuda.ipc_collect()
        rows.append(_row(f"cuda:{agnostic.cuda.current_device()}, CUDA IPC", steady, baseline, first))
    header = ("tensor, how", "first transfer (ms)", "queue transfer (ms)", "pickle.dumps+loads of the bytes (ms)",
              "ratio", "goal", "result")
    lines = [
        f"256 MiB float32 tensor through `agnostic.multiprocessing` Queue (spawn) vs pickling its bytes; "
        f"median of {repeats}",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    text = "\n".join(lines)
    print(text)
    if arguments.out:
        with open(arguments.out, "w") as file:
            file.write(text + "\n")
    return 0 if all(row[-1] == "pass" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
