"""Host-device copies and streams on CUDA: pinned vs pageable bandwidth, copy/compute overlap, stream switching cost.

Prints a Markdown table of agnostic against raw CuPy, measured in one run:
    python benchmarks/bench_transfer.py [--quick] [--out FILE.md]
"""

import argparse
import sys

from _timing import median_seconds


def _host_to_device(cupy, agnostic, size_bytes, repeats):
    count = size_bytes // 4
    pinned_raw = cupy.cuda.alloc_pinned_memory(size_bytes)
    import numpy

    host_pinned = numpy.frombuffer(pinned_raw, numpy.float32, count)
    host_pinned[:] = 1.0
    host_pageable = numpy.ones(count, numpy.float32)
    device_raw = cupy.empty(count, cupy.float32)
    stream = cupy.cuda.get_current_stream()

    def raw_pinned():
        device_raw.set(host_pinned, stream=stream)
        stream.synchronize()

    def raw_pageable():
        device_raw.set(host_pageable)
        stream.synchronize()

    tensor_pinned = agnostic.from_numpy(host_pinned)
    tensor_pageable = agnostic.from_numpy(host_pageable)

    def agnostic_pinned():
        tensor_pinned.to("cuda", non_blocking=True)
        stream.synchronize()

    def agnostic_pageable():
        tensor_pageable.to("cuda")
        stream.synchronize()

    rows = []
    for name, ours, raw in (("pinned", agnostic_pinned, raw_pinned), ("pageable", agnostic_pageable, raw_pageable)):
        ours(), raw()
        ours_seconds = median_seconds(ours, repeats)
        raw_seconds = median_seconds(raw, repeats)
        rows.append((f"host-to-device {size_bytes / 2 ** 30:g} GiB, {name} (GB/s)", size_bytes / ours_seconds / 1e9,
                     size_bytes / raw_seconds / 1e9, raw_seconds / ours_seconds, ">= 0.95x" if name == "pinned" else "",
                     "higher is better"))
    return rows


def _overlap(cupy, agnostic, size_bytes, repeats):
    """Fraction of the shorter of (copy on a side stream, matmuls on the default stream) hidden by running both."""
    source = agnostic.ones(size_bytes // 4, pin_memory=True)
    matrix = agnostic.ones(8192, 8192, device="cuda")
    side = agnostic.cuda.Stream()
    default = agnostic.cuda.current_stream()

    def compute():
        product = matrix
        for _ in range(3):
            product = product @ matrix
        return product

    def copy():
        with agnostic.cuda.stream(side):
            return source.to("cuda", non_blocking=True)

    def both():
        copied = copy()
        compute()
        return copied

    def timed(work):
        def run():
            work()
            side.synchronize()
            default.synchronize()
        run()
        return median_seconds(run, repeats)

    compute_seconds, copy_seconds, both_seconds = timed(compute), timed(copy), timed(both)
    overlap = (compute_seconds + copy_seconds - both_seconds) / min(compute_seconds, copy_seconds)
    return [(f"copy {size_bytes / 2 ** 30:g} GiB on a side stream || 3 matmuls 8192^2 (overlap of shorter)",
             overlap, None, None, ">= 0.80", f"copy {copy_seconds * 1e3:.1f} ms, compute {compute_seconds * 1e3:.1f}"
             f" ms, both {both_seconds * 1e3:.1f} ms")]


def _stream_switching(cupy, agnostic, operations):
    """Per-op cost of entering a stream context around a small op, over raw CuPy doing the same."""
    a_raw = cupy.ones(1000, cupy.float32)
    b_raw = cupy.ones(1000, cupy.float32)
    a, b = agnostic.as_tensor(a_raw), agnostic.as_tensor(b_raw)
    raw_stream = cupy.cuda.Stream(non_blocking=True)
    ours_stream = agnostic.cuda.Stream()

    def raw():
        for _ in range(operations):
            with raw_stream:
                a_raw + b_raw
        raw_stream.synchronize()

    def ours():
        for _ in range(operations):
            with agnostic.cuda.stream(ours_stream):
                a + b
        ours_stream.synchronize()

    raw(), ours()
    raw_seconds = min(median_seconds(raw, 3) for _ in range(3)) / operations
    ours_seconds = min(median_seconds(ours, 3) for _ in range(3)) / operations
    added = (ours_seconds - raw_seconds) * 1e6
    return [("stream switch + `a + b` (1,000 float32), us per op", ours_seconds * 1e6, raw_seconds * 1e6,
             raw_seconds / ours_seconds, "<= +2 us", f"added {added:.2f} us")]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)
    import agnostic

    if not agnostic.cuda.is_available():
        print("bench_transfer: no CUDA device, nothing to measure")
        return 0
    import cupy

    size = 2 ** 26 if args.quick else 2 ** 30
    repeats = 3 if args.quick else 7
    rows = _host_to_device(cupy, agnostic, size, repeats)
    rows += _overlap(cupy, agnostic, size if args.quick else 2 ** 29, repeats)
    rows += _stream_switching(cupy, agnostic, 200 if args.quick else 5000)
    lines = ["| what | agnostic | raw CuPy | ratio (CuPy/agnostic time) | goal | note |", "|---|---|---|---|---|---|"]
    for what, ours, raw, ratio, goal, note in rows:
        lines.append(f"| {what} | {ours:.3f} | {'' if raw is None else f'{raw:.3f}'} | "
                     f"{'' if ratio is None else f'{ratio:.3f}'} | {goal} | {note} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
