"""Cost of agnostic's counting CUDA allocator over CuPy's default memory pool, per allocation and free.

Every CUDA op allocates its result, so the bookkeeping behind ``agnostic.cuda.memory_stats`` must stay cheap
(goal: under 2 us added per allocation + free). Measured in one run, interleaved, median of several repeats:

* allocation + free through the allocator itself (``allocator(4096)``, result dropped);
* allocation + free of a 4 KiB CuPy array (``cupy.empty(4096, uint8)``, dropped);
* a small op that allocates its result (CuPy ``a + b`` on 1,000 float32), synchronized once per loop.

    python benchmarks/bench_alloc.py [--quick] [--out FILE.md]
"""

import argparse
import statistics
import sys
import time


def _seconds_per_call(run, calls, repeats):
    """Median over ``repeats`` of the wall clock of ``run(calls)`` divided by ``calls``."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run(calls)
        times.append((time.perf_counter() - started) / calls)
    return statistics.median(times)


def _compare(cupy, ours, default, run, calls, repeats):
    """Per-call seconds of ``run`` under agnostic's allocator and under CuPy's default pool, interleaved."""
    timings = {ours: [], default: []}
    for _ in range(repeats):
        for allocator in (ours, default):
            cupy.cuda.set_allocator(allocator)
            run(calls // 10)  # warm the pool and the caches under this allocator
            timings[allocator].append(_seconds_per_call(run, calls, 3))
    cupy.cuda.set_allocator(ours)
    return min(timings[ours]), min(timings[default])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repeats")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    import agnostic
    from agnostic.cuda import memory

    if not agnostic.cuda.is_available():
        print("bench_alloc: no CUDA device, nothing to measure")
        return 0
    memory.install()
    agnostic.cuda.init()
    import cupy

    ours = cupy.cuda.get_allocator()
    if ours is not memory._allocator.malloc:
        raise SystemExit("bench_alloc: agnostic's allocator is not CuPy's current allocator")
    default = cupy.get_default_memory_pool().malloc
    calls, repeats = (20_000, 3) if args.quick else (100_000, 7)
    a, b = cupy.ones(1000, cupy.float32), cupy.ones(1000, cupy.float32)
    stream = cupy.cuda.get_current_stream()

    def allocator_calls(count):
        allocate = cupy.cuda.get_allocator()
        for _ in range(count):
            allocate(4096)

    def arrays(count):
        for _ in range(count):
            cupy.empty(4096, cupy.uint8)

    def adds(count):
        for _ in range(count):
            a + b
        stream.synchronize()

    rows = []
    for what, run in (("allocator(4096) + free", allocator_calls), ("cupy.empty(4096, uint8) + free", arrays),
                      ("CuPy `a + b`, 1,000 float32 (allocates its result)", adds)):
        ours_seconds, default_seconds = _compare(cupy, ours, default, run, calls, repeats)
        added = (ours_seconds - default_seconds) * 1e6
        rows.append((f"{what}, us per call", ours_seconds * 1e6, default_seconds * 1e6, added,
                     "< +2 us", "PASS" if added < 2 else "FAIL"))
    before = memory.memory_stats()
    arrays(1000)
    after = memory.memory_stats()
    counted = after["allocation.all.allocated"] - before["allocation.all.allocated"]
    rows.append(("allocations counted for 1,000 arrays", counted, None, None, "== 1000",
                 "PASS" if counted == 1000 else "FAIL"))

    lines = ["| what | agnostic allocator | CuPy default pool | added (us) | goal | |", "|---|---|---|---|---|---|"]
    for what, ours_value, default_value, added, goal, verdict in rows:
        lines.append(f"| {what} | {ours_value:.3f} | {'' if default_value is None else f'{default_value:.3f}'} | "
                     f"{'' if added is None else f'{added:+.3f}'} | {goal} | {verdict} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
