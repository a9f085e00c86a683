"""Timing shared by the benchmark scripts."""

import statistics
import time


def median_seconds(run, repeats):
    """The median wall-clock seconds of ``repeats`` calls of ``run()``."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def seconds_per_call(run, synchronize, calls):
    """Wall-clock seconds per call of ``calls`` calls of ``run()`` between two ``synchronize()`` (a device's: the
    calls queue work that the second one waits for)."""
    synchronize()
    started = time.perf_counter()
    for _ in range(calls):
        run()
    synchronize()
    return (time.perf_counter() - started) / calls
