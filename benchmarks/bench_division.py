"""PyTorch's divisions (floor_divide, remainder, fmod, div(rounding_mode="trunc"), complex ``/``): agnostic against
the backend's own ufunc (NumPy's or CuPy's, whose values differ from PyTorch's in places), PyTorch, and on CUDA the
step-by-step ``_division`` formula that agnostic's one kernel per op replaced.

Two sizes: 1,000 elements (the host's time per call: ``--calls`` calls, then one synchronize) and 16M elements (the
device's: a few calls back to back, then one synchronize; the median of ``--repeats`` rounds). Prints a Markdown
table of microseconds; CUDA rows are skipped without a GPU.

    python benchmarks/bench_division.py [--device cpu|cuda|all] [--repeats N] [--calls N] [--quick]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing
import agnostic
from agnostic.ops import _division

try:
    import torch
except ImportError:
    torch = None

SMALL, LARGE, QUICK_LARGE = 1000, 16 * 2 ** 20, 2 ** 20
LARGE_CALLS = 5
CASES = (  # (op, dtype, agnostic's call, the backend's own function, PyTorch's call, the _division formula)
    ("floor_divide", "float32", agnostic.floor_divide, "floor_divide", "floor_divide", "floor_divide"),
    ("floor_divide", "float16", agnostic.floor_divide, "floor_divide", "floor_divide", "floor_divide"),
    ("floor_divide", "int32", agnostic.floor_divide, "floor_divide", "floor_divide", "floor_divide"),
    ("floor_divide", "int64", agnostic.floor_divide, "floor_divide", "floor_divide", "floor_divide"),
    ("remainder", "float32", agnostic.remainder, "remainder", "remainder", "remainder"),
    ("remainder", "int32", agnostic.remainder, "remainder", "remainder", "remainder"),
    ("fmod", "float32", agnostic.fmod, "fmod", "fmod", "fmod"),
    ("fmod", "int32", agnostic.fmod, "fmod", "fmod", "fmod"),
    ("div trunc", "float32", lambda a, b: agnostic.div(a, b, rounding_mode="trunc"), "trunc_of_true_divide",
     "div_trunc", "trunc_divide"),
    ("div trunc", "int32", lambda a, b: agnostic.div(a, b, rounding_mode="trunc"), "floor_divide", "div_trunc",
     "trunc_divide"),
    ("a / b", "complex64", lambda a, b: a / b, "true_divide", "true_divide", "complex_divide"),
)


def _operands(dtype, count, rng):
    if dtype.startswith("complex"):
        parts = rng.standard_normal((4, count)).astype(numpy.float32)
        return (parts[0] + 1j * parts[1]).astype(dtype), (parts[2] + 1j * parts[3]).astype(dtype)
    if dtype.startswith("int"):
        a = rng.integers(-1000, 1000, count).astype(dtype)
        b = rng.integers(1, 50, count).astype(dtype) * rng.choice(numpy.array([-1, 1], dtype), count)
        return a, b
    return (rng.standard_normal(count) * 100).astype(dtype), (rng.standard_normal(count) * 3 + 0.1).astype(dtype)


def _backend_function(xp, name):
    if name == "trunc_of_true_divide":
        return lambda a, b: xp.trunc(xp.true_divide(a, b))
    return getattr(xp, name)


def _torch_function(name):
    if name == "div_trunc":
        return lambda a, b: torch.div(a, b, rounding_mode="trunc")
    return getattr(torch, name)


def _per_call(function, arguments, synchronize, count, calls, repeats):
    """Microseconds per call, calls back to back and then one synchronize, so that what is measured is the slower
    side: the host's time per call for small arrays (``calls`` calls), the device's for large ones (``LARGE_CALLS``,
    the host's launches hidden behind the previous kernels). The median of the rounds."""
    function(*arguments)
    synchronize()
    calls, rounds = (calls, max(3, repeats // 4)) if count <= SMALL else (LARGE_CALLS, repeats)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(calls):
            function(*arguments)
        synchronize()
        times.append((time.perf_counter() - started) / calls)
    return statistics.median(times) * 1e6


def _rows(device, sizes, repeats, calls):
    cuda = device != "cpu"
    if cuda:
        import cupy

        xp, synchronize = cupy, lambda: cupy.cuda.get_current_stream().synchronize()
        torch_device = "cuda" if torch is not None and torch.cuda.is_available() else None
    else:
        xp, synchronize, torch_device = numpy, lambda: None, "cpu" if torch is not None else None
    torch_synchronize = (lambda: torch.cuda.synchronize()) if cuda else (lambda: None)
    rng = numpy.random.default_rng(0)
    rows = []
    for count in sizes:
        for op, dtype, ours, own, theirs, formula in CASES:
            a, b = _operands(dtype, count, rng)
            ta, tb = agnostic.tensor(a, device=device), agnostic.tensor(b, device=device)
            xa, xb = ta._data, tb._data
            measure = (synchronize, count, calls, repeats)
            times = {"agnostic": _per_call(ours, (ta, tb), *measure),
                     "own": _per_call(_backend_function(xp, own), (xa, xb), *measure)}
            if cuda:
                times["formula"] = _per_call(getattr(_division, formula), (xp, xa, xb), *measure)
            if torch_device is not None:
                pa, pb = torch.from_numpy(a).to(torch_device), torch.from_numpy(b).to(torch_device)
                times["torch"] = _per_call(_torch_function(theirs), (pa, pb), torch_synchronize, count, calls, repeats)
            rows.append((device, f"{op} {dtype}, {count:,}", own.replace("_of_", "(") + (")" if "_of_" in own else ""),
                         times))
    return rows


def _cell(value):
    return "" if value is None else f"{value:,.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="1M elements instead of 16M, fewer repeats")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.calls = min(args.repeats, 5), min(args.calls, 20)
    sizes = (SMALL, QUICK_LARGE if args.quick else LARGE)
    devices = []
    if args.device in ("cpu", "all"):
        devices.append("cpu")
    if args.device in ("cuda", "all"):
        if agnostic.cuda.is_available():
            devices.append("cuda")
        else:
            print(f"(CUDA rows skipped: {agnostic._backend.cuda_unavailable_reason()})", file=sys.stderr)
    print("| device | what (us per call) | agnostic | backend's own | own | formula, one ufunc a step | PyTorch |"
          " agnostic - own |")
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for device in devices:
        with numpy.errstate(all="ignore"):  # NumPy's own ufuncs warn on what PyTorch's formulas give quietly
            rows = _rows(device, sizes, args.repeats, args.calls)
        for device_name, what, own_name, times in rows:
            print(f"| {device_name} | {what} | {_cell(times['agnostic'])} | {own_name} | {_cell(times['own'])} | "
                  f"{_cell(times.get('formula'))} | {_cell(times.get('torch'))} | "
                  f"{times['agnostic'] - times['own']:+,.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
