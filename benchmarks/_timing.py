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
