"""Random-number throughput: agnostic's Philox stream against each backend's own generator.

CUDA: 64M float32 ``rand``/``randn`` against ``cupy.random`` (goal <= 1.2x). CPU: 16M float32 against
``numpy.random.Generator(PCG64)`` ``random``/``standard_normal`` (goal <= 1.5x). Prints a Markdown table of medians
(the two sides alternate, so drifting clocks hit both alike); CUDA rows are skipped without a usable GPU.

    python benchmarks/bench_random.py [--device cpu|cuda|all] [--repeats N] [--quick]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
import agnostic  # noqa: E402


def _seconds(run, synchronize):
    started = time.perf_counter()
    run()
    synchronize()
    return time.perf_counter() - started


def _compare(ours, theirs, repeats, synchronize=lambda: None):
    """Median seconds of ``ours`` and ``theirs``, measured alternately after one warm-up call each."""
    ours(), theirs()
    synchronize()
    ours_times, their_times = [], []
    for _ in range(repeats):
        ours_times.append(_seconds(ours, synchronize))
        their_times.append(_seconds(theirs, synchronize))
    return statistics.median(ours_times), statistics.median(their_times)


def _cpu_rows(count, repeats):
    numpy_generator = numpy.random.Generator(numpy.random.PCG64(0))
    cases = [
        ("rand float32", lambda: agnostic.rand(count), lambda: numpy_generator.random(count, dtype=numpy.float32),
         "random", 1.5),
        ("randn float32", lambda: agnostic.randn(count),
         lambda: numpy_generator.standard_normal(count, dtype=numpy.float32), "standard_normal", 1.5),
        ("rand float64", lambda: agnostic.rand(count, dtype=agnostic.float64), lambda: numpy_generator.random(count),
         "random", None),
        ("randn float64", lambda: agnostic.randn(count, dtype=agnostic.float64),
         lambda: numpy_generator.standard_normal(count), "standard_normal", None),
        ("randint [0, 1000)", lambda: agnostic.randint(0, 1000, (count,)),
         lambda: numpy_generator.integers(0, 1000, count), "integers", None),
    ]
    size = f"{count // 2 ** 20}M" if count >= 2 ** 20 else str(count)
    return [(f"cpu {name}, {size}", *_compare(ours, theirs, repeats), f"numpy PCG64 {baseline}", goal)
            for name, ours, theirs, baseline, goal in cases]


def _cuda_rows(count, repeats):
    import cupy

    stream_sync = cupy.cuda.get_current_stream().synchronize
    state = cupy.random.RandomState(0)
    cases = [
        ("rand float32", lambda: agnostic.rand(count, device="cuda"),
         lambda: state.random_sample(count, dtype=numpy.float32), "random_sample", 1.2),
        ("randn float32", lambda: agnostic.randn(count, device="cuda"),
         lambda: state.standard_normal(count, dtype=numpy.float32), "standard_normal", 1.2),
        ("rand float64", lambda: agnostic.rand(count, dtype=agnostic.float64, device="cuda"),
         lambda: state.random_sample(count, dtype=numpy.float64), "random_sample", None),
        ("randn float64", lambda: agnostic.randn(count, dtype=agnostic.float64, device="cuda"),
         lambda: state.standard_normal(count, dtype=numpy.float64), "standard_normal", None),
    ]
    size = f"{count // 2 ** 20}M"
    return [(f"cuda {name}, {size}", *_compare(ours, theirs, repeats, stream_sync), f"cupy.random {baseline}", goal)
            for name, ours, theirs, baseline, goal in cases]


def _table(rows):
    lines = ["| benchmark | agnostic (ms) | baseline | baseline (ms) | ratio | goal |",
             "|---|---:|---|---:|---:|---|"]
    for name, ours, theirs, baseline, goal in rows:
        ratio = ours / theirs
        verdict = "" if goal is None else f"<= {goal}x " + ("ok" if ratio <= goal else "MISSED")
        lines.append(f"| {name} | {ours * 1e3:.2f} | {baseline} | {theirs * 1e3:.2f} | {ratio:.2f}x | {verdict} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=21)
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    options = parser.parse_args(argv)
    repeats = 5 if options.quick else options.repeats
    rows = []
    if options.device in ("cpu", "all"):
        rows += _cpu_rows(2 ** 20 if options.quick else 16 * 2 ** 20, repeats)
    if options.device in ("cuda", "all"):
        if agnostic.cuda.is_available():
            rows += _cuda_rows(2 ** 22 if options.quick else 64 * 2 ** 20, repeats)
        else:
            print(f"(CUDA rows skipped: {agnostic._backend.cuda_unavailable_reason()})", file=sys.stderr)
    print(_table(rows))


if __name__ == "__main__":
    main()
