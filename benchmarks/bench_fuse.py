"""agnostic.fuse: a chain of elementwise ops (tanh-approximated GELU, 8 ops) fused against the same function run op
by op, and PyTorch eager running it, in one run.

    python benchmarks/bench_fuse.py [--device cpu|cuda|all] [--out FILE.md]

For each device and size (1,000, 1M and 16M float32 elements): median microseconds per call over interleaved
repeats (on CUDA, a loop of calls between two synchronizations). Prints one Markdown table; the exit code is 0 (a
measurement, not a test). PyTorch is optional.
"""

import argparse
import os
import statistics
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _timing import seconds_per_call  # noqa: E402

SIZES = (1_000, 1_000_000, 16_000_000)


def gelu_tanh(library):
    def function(x):
        return 0.5 * x * (1 + library.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    return function


def _time(run, synchronize, calls):
    """Seconds per call after one call (compilations, caches)."""
    run()
    return seconds_per_call(run, synchronize, calls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out")
    options = parser.parse_args()
    import agnostic

    try:
        import torch
    except ImportError:
        torch = None
    devices = ["cpu", "cuda"] if options.device == "all" else [options.device]
    devices = [d for d in devices if d == "cpu" or agnostic.cuda.is_available()]
    lines = ["| device | elements | agnostic eager (us) | agnostic.fuse (us) | fused / eager | PyTorch eager (us) |"
             " fused / PyTorch |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    eager, fused = gelu_tanh(agnostic), agnostic.fuse(gelu_tanh(agnostic))
    for device in devices:
        synchronize = agnostic.cuda.synchronize if device == "cuda" else (lambda: None)
        for size in SIZES:
            host = numpy.random.default_rng(0).standard_normal(size).astype(numpy.float32)
            x = agnostic.tensor(host, device=device)
            runs = {"eager": lambda: eager(x), "fused": lambda: fused(x)}
            if torch is not None and (device == "cpu" or torch.cuda.is_available()):
                t = torch.tensor(host, device=device)
                torch_function = gelu_tanh(torch)
                torch_sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
            calls = max(3, min(2000, 20_000_000 // size // (1 if device == "cuda" else 20)))
            times = {name: [] for name in (*runs, "torch")}
            for _ in range(options.repeats):
                for name, run in runs.items():
                    times[name].append(_time(run, synchronize, calls))
                if torch is not None and (device == "cpu" or torch.cuda.is_available()):
                    times["torch"].append(_time(lambda: torch_function(t), torch_sync, calls))
            median = {name: statistics.median(values) * 1e6 for name, values in times.items() if values}
            theirs = median.get("torch")
            torch_cells = ("", "") if theirs is None else (f"{theirs:.1f}", f"{median['fused'] / theirs:.2f}x")
            lines.append(f"| {device} | {size:,} | {median['eager']:.1f} | {median['fused']:.1f} | "
                         f"{median['fused'] / median['eager']:.2f}x | {torch_cells[0]} | {torch_cells[1]} |")
    table = "\n".join(lines)
    print(table)
    if options.out:
        with open(options.out, "w") as handle:
            handle.write(table + "\n")


if __name__ == "__main__":
    main()
