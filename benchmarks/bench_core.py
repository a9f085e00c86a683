"""Core costs of agnostic against raw NumPy (CPU), raw CuPy (CUDA) and PyTorch (when importable), in one run.

    python benchmarks/bench_core.py [--device cpu|cuda|all] [--quick] [--out FILE.md]

Measures, per device:

* per-op cost of small ops on 1,000 float32 elements (``a + b``, ``a * 2.0``, ``a.sum()``, ``a[1:]``,
  ``a.reshape(10, 100)``): wall clock of a loop of N ops divided by N (on CUDA, synchronized once after the loop,
  as PyTorch's own per-op overhead measurements do), median of several interleaved repeats; raw CuPy runs with
  its own memory pool, so the difference includes agnostic's allocator (PyTorch's memory statistics);
* large ops (``a + b`` and ``relu(a)`` on 16M float32 elements, ``a @ b`` on 4096x4096 float32): median time per
  op (on CUDA, a loop of ops between device synchronizations); on CUDA also ``a + b`` against a device-to-device
  copy moving the same bytes (goal: at least 0.95x the copy's bandwidth);
* no hidden copies: ``.to(same device)``, ``from_numpy``, ``as_tensor(backend array)`` and views (``view``,
  slicing, ``transpose``, ``expand``...) share the source's memory (same data pointers) and allocate nothing
  (traced host allocations on the CPU, CuPy's memory pool on CUDA).

Prints one Markdown table; ratios are agnostic time / baseline time (lower is better). Missing a goal is reported
as FAIL but the exit code stays 0: this is a measurement, not a test. CuPy and PyTorch are optional.
"""

import argparse
import gc
import platform
import statistics
import sys
import time
import tracemalloc

import numpy

SMALL_SIZE = 1_000
SMALL_OPS = (  # (statement, what the row says)
    ("a + b", "`a + b`"),
    ("a * 2.0", "`a * 2.0`"),
    ("a.sum()", "`a.sum()`"),
    ("a[1:]", "`a[1:]`"),
    ("a.reshape(10, 100)", "`a.reshape(10, 100)`"),
)
SMALL_GOALS = {"cpu": 1.5, "cuda": 1.15}
LARGE_GOAL = 1.03
BANDWIDTH_GOAL = 0.95  # large elementwise ops reach this fraction of a device copy's bandwidth


# ----- optional libraries ---------------------------------------------------------------------------------------
def _import_torch():
    """PyTorch, or None (never required)."""
    try:
        import torch
    except Exception:  # ImportError, or a broken install (missing shared libraries...)
        return None
    return torch


def _import_agnostic():
    """agnostic, installed or (run from a checkout without installing) from this repository."""
    try:
        import agnostic
    except ImportError:
        import os

        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import agnostic
    return agnostic


def _import_cupy():
    try:
        import cupy
    except Exception:
        return None
    return cupy


class Target:
    """One device under test: the raw backend (NumPy or CuPy), agnostic's device, and PyTorch's when usable."""

    def __init__(self, name, agnostic, torch):
        self.name = name
        self.agnostic = agnostic
        self.device = agnostic.device(name)
        if name == "cpu":
            self.xp = numpy
            self.raw_name = "NumPy"
            self.sync = _no_sync
            self.raw_run = _as_is
            self.torch = torch
            self.torch_sync = _no_sync
        else:
            cupy = _import_cupy()
            self.xp = cupy
            self.raw_name = "CuPy"
            self.raw_run = _with_cupys_own_allocator(cupy)
            device_synchronize = cupy.cuda.Device().synchronize
            self.sync = device_synchronize  # every stream of the device: CuPy's, agnostic's and PyTorch's
            self.torch = torch if torch is not None and _torch_cuda_usable(torch) else None
            self.torch_sync = device_synchronize
        self.torch_device = None if self.torch is None else ("cpu" if name == "cpu" else "cuda")

    # ----- making operands ------------------------------------------------------------------------------------
    def raw(self, host_array):
        """``host_array`` (NumPy) on this device, as a raw backend array."""
        return host_array if self.xp is numpy else self.xp.asarray(host_array)

    def ours(self, raw_array):
        return self.agnostic.as_tensor(raw_array)

    def theirs(self, host_array):
        if self.torch is None:
            return None
        return self.torch.from_numpy(host_array.copy()).to(self.torch_device)


def _no_sync():
    return None


def _as_is(run):
    return run


def _with_cupys_own_allocator(cupy):
    """``raw_run(run)``: ``run`` with CuPy's default memory pool as CuPy's allocator, as in a program without
    agnostic. Once agnostic has started CUDA, CuPy allocates through agnostic's allocator (which keeps PyTorch's
    memory statistics); timing raw CuPy through it would hide that cost from the comparison."""
    pool_malloc = cupy.get_default_memory_pool().malloc

    def raw_run(run):
        def with_cupys_pool(operations, *args):
            previous = cupy.cuda.get_allocator()
            cupy.cuda.set_allocator(pool_malloc)
            try:
                return run(operations, *args)
            finally:
                cupy.cuda.set_allocator(previous)
        return with_cupys_pool
    return raw_run


def _torch_cuda_usable(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


# ----- timing ---------------------------------------------------------------------------------------------------
def _loop(statement, names):
    """A function running ``statement`` n times, with the operand names as arguments: no per-op call overhead."""
    source = f"def run(n, {', '.join(names)}):\n    for _ in range(n):\n        {statement}\n"
    scope = {}
    exec(compile(source, f"<bench {statement}>", "exec"), scope)
    return scope["run"]


def _interleaved_medians(candidates, operations, repeats, warmup=1):
    """Median seconds per op of each ``(run, args, sync)`` candidate; candidates alternate within every repeat so
    drifting clocks and caches affect them alike."""
    times = [[] for _ in candidates]
    for run, args, sync in candidates:
        for _ in range(warmup):
            run(max(operations // 10, 1), *args)
            sync()
    order = list(range(len(candidates)))
    for repeat in range(repeats):
        for i in order[repeat % len(order):] + order[:repeat % len(order)]:
            run, args, sync = candidates[i]
            sync()
            started = time.perf_counter()
            run(operations, *args)
            sync()
            times[i].append((time.perf_counter() - started) / operations)
    return [statistics.median(t) for t in times]


def _compare(target, statement, ours, raw, theirs, operations, repeats):
    """Seconds per op of ``statement`` on agnostic's, the raw backend's and PyTorch's operands (None without
    PyTorch). agnostic and the raw backend alternate; PyTorch runs after them, on its own, so its worker threads
    (which keep spinning a while after an op) don't slow the others down."""
    run = _loop(statement, ("a", "b"))
    ours_seconds, raw_seconds = _interleaved_medians(
        [(run, ours, target.sync), (target.raw_run(run), raw, target.sync)], operations, repeats)
    torch_seconds = None
    if theirs[0] is not None:
        torch_seconds, = _interleaved_medians([(run, theirs, target.torch_sync)], operations, repeats)
    return ours_seconds, raw_seconds, torch_seconds


# ----- rows -----------------------------------------------------------------------------------------------------
COLUMNS = ("device", "what", "agnostic", "{raw}", "added", "ratio", "PyTorch", "ratio vs PyTorch", "goal", "result")


class Row:
    """One line of the table: a timing (``ours``/``baseline``/``torch`` in seconds, ``goal`` a ratio), or a check
    (``finding`` text, ``passed``, ``goal`` text), or an ``error`` (always FAIL)."""

    def __init__(self, device, what, ours=None, baseline=None, torch=None, goal=None, unit="us", finding=None,
                 passed=None, error=None):
        self.device, self.what, self.ours, self.baseline, self.torch = device, what, ours, baseline, torch
        self.goal, self.unit, self.finding, self.error = goal, unit, finding, error
        if passed is None and error is None and finding is None:
            passed = bool(ours and baseline and ours / baseline <= goal)
        self.passed = bool(passed) and error is None

    def _time(self, seconds, signed=False):
        if seconds is None:
            return ""
        scale, unit = (1e6, "us") if self.unit == "us" else (1e3, "ms")
        return f"{seconds * scale:{'+' if signed else ''}.{2 if self.unit == 'us' else 1}f} {unit}"

    def cells(self):
        verdict = "PASS" if self.passed else "FAIL"
        if self.error is not None:
            goal = f"<= {self.goal:g}x" if isinstance(self.goal, float) else (self.goal or "")
            return [self.device, self.what, f"error: {self.error}", "", "", "", "", "", goal, verdict]
        if self.finding is not None:  # a no-copy check: the 'agnostic' cell says what was found
            return [self.device, self.what, self.finding, "", "", "", "", "", self.goal, verdict]
        added = self._time(self.ours - self.baseline, signed=True)
        ratio = f"{self.ours / self.baseline:.2f}x" if self.baseline else ""
        torch_ratio = f"{self.ours / self.torch:.2f}x" if self.torch else ""
        return [self.device, self.what, self._time(self.ours), self._time(self.baseline), added, ratio,
                self._time(self.torch), torch_ratio, f"<= {self.goal:g}x", verdict]


def _guarded(device, what, goal, measure):
    """``measure()``'s rows, or one FAIL row with the error (the run goes on)."""
    try:
        return measure()
    except Exception as error:  # a library error is a result to report, not a reason to stop measuring
        return [Row(device, what, goal=goal, error=f"{type(error).__name__}: {error}"[:160])]


def small_ops(target, quick):
    """Per-op wall time of small ops: agnostic vs the raw backend (and PyTorch)."""
    operations, repeats = (300, 5) if quick else (20_000, 15)
    host_a = numpy.random.default_rng(0).random(SMALL_SIZE, dtype=numpy.float32) + 1
    host_b = numpy.random.default_rng(1).random(SMALL_SIZE, dtype=numpy.float32) + 1
    raw_a, raw_b = target.raw(host_a), target.raw(host_b)
    ours_a, ours_b = target.ours(raw_a), target.ours(raw_b)
    torch_a, torch_b = target.theirs(host_a), target.theirs(host_b)
    goal = SMALL_GOALS[target.name]
    rows = []
    for statement, label in SMALL_OPS:
        what = f"{label}, {SMALL_SIZE:,} float32 (per op)"

        def measure():
            ours, raw, theirs = _compare(target, statement, (ours_a, ours_b), (raw_a, raw_b), (torch_a, torch_b),
                                         operations, repeats)
            return [Row(target.name, what, ours, raw, theirs, goal)]

        rows += _guarded(target.name, what, goal, measure)
    return rows


def large_ops(target, quick):
    """Time per large op: agnostic vs the raw backend (and PyTorch)."""
    cuda = target.name == "cuda"
    add_size = 2 ** 24
    matmul_size = 1024 if quick else 4096
    rng = numpy.random.default_rng(2)
    cases = (  # (statement, what, make host operands, ops per timed loop, repeats)
        ("a + b", f"`a + b`, {add_size // 2 ** 20}M float32",
         lambda: (rng.random(add_size, dtype=numpy.float32), rng.random(add_size, dtype=numpy.float32)),
         50 if cuda else 4, 5 if quick else 21),
        ("a @ b", f"matmul `a @ b`, {matmul_size}x{matmul_size} float32",
         lambda: (rng.random((matmul_size, matmul_size), dtype=numpy.float32),
                  rng.random((matmul_size, matmul_size), dtype=numpy.float32)),
         10 if cuda else 1, 3 if quick else 7),
    )
    rows = []
    for statement, what, make, operations, repeats in cases:
        if quick:
            operations = max(operations // 5, 1)

        def measure():
            host_a, host_b = make()
            raw_a, raw_b = target.raw(host_a), target.raw(host_b)
            ours_a, ours_b = target.ours(raw_a), target.ours(raw_b)
            torch_operands = (target.theirs(host_a), target.theirs(host_b))
            ours, raw, theirs = _compare(target, statement, (ours_a, ours_b), (raw_a, raw_b), torch_operands,
                                         operations, repeats)
            return [Row(target.name, what, ours, raw, theirs, LARGE_GOAL, unit="ms")]

        rows += _guarded(target.name, what, LARGE_GOAL, measure)
    rows += _guarded(target.name, f"`relu(a)`, {add_size // 2 ** 20}M float32", LARGE_GOAL,
                     lambda: _relu_row(target, rng.standard_normal(add_size, dtype=numpy.float32),
                                       2 if quick else 50 if cuda else 4, 5 if quick else 21))
    if cuda:
        what = f"`a + b`, {add_size // 2 ** 20}M float32, against a device-to-device copy of its bytes"
        rows += _guarded(target.name, what, 1 / BANDWIDTH_GOAL,
                         lambda: _bandwidth_row(target, what, rng.random(add_size, dtype=numpy.float32),
                                                10 if quick else 50, 5 if quick else 21))
    return rows


def _bandwidth_row(target, what, host, operations, repeats):
    """CUDA: agnostic's ``a + b`` (reading two arrays, writing one) against ``cudaMemcpyAsync`` from one device
    array to another (reading one, writing one), CuPy's ``MemoryPointer.copy_from_device_async``; the baseline is
    the copy's time scaled to ``a + b``'s bytes (x 3/2), so the ratio is the copy's bandwidth over ``a + b``'s."""
    raw = target.raw(host)
    target_array = target.xp.empty_like(raw)
    ours = (target.ours(raw), target.ours(raw.copy()))
    copy = _loop("a.data.copy_from_device_async(b.data, b.nbytes)", ("a", "b"))
    add = _loop("a + b", ("a", "b"))
    add_seconds, copy_seconds = _interleaved_medians(
        [(add, ours, target.sync), (copy, (target_array, raw), target.sync)], operations, repeats)
    return [Row(target.name, what, add_seconds, copy_seconds * 3 / 2, None, 1 / BANDWIDTH_GOAL, unit="ms")]


def _relu_row(target, host, operations, repeats):
    """``relu`` of a large array: agnostic's, the raw backend's ``maximum(a, 0)`` and PyTorch's."""
    raw = target.raw(host)
    zero = numpy.float32(0)
    torch_operands = (None, None) if target.torch is None else (target.theirs(host), target.torch.relu)
    ours, baseline, theirs = _compare(target, "b(a)", (target.ours(raw), target.agnostic.relu),
                                      (raw, lambda x: target.xp.maximum(x, zero)), torch_operands, operations,
                                      repeats)
    return [Row(target.name, f"`relu(a)`, {host.size // 2 ** 20}M float32", ours, baseline, theirs, LARGE_GOAL,
                unit="ms")]


# ----- no hidden copies -----------------------------------------------------------------------------------------
def _pointer(raw_array):
    if isinstance(raw_array, numpy.ndarray):
        return raw_array.__array_interface__["data"][0]
    return raw_array.data.ptr


class _Allocations:
    """Bytes allocated (and still held) while the block runs: traced host memory on the CPU (NumPy reports its
    buffers to tracemalloc), CuPy's default memory pool on CUDA."""

    def __init__(self, target):
        self.cuda = target.name == "cuda"
        self.pool = target.xp.get_default_memory_pool() if self.cuda else None
        self.allocated = 0

    def __enter__(self):
        gc.collect()
        if self.cuda:
            self.before = self.pool.used_bytes()
        else:
            tracemalloc.start()
            self.before = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc_info):
        if self.cuda:
            self.allocated = self.pool.used_bytes() - self.before
        else:
            self.allocated = tracemalloc.get_traced_memory()[0] - self.before
            tracemalloc.stop()
        return False


def no_copy_checks(target):
    """Rows saying whether conversions and views share memory and allocate nothing."""
    agnostic = target.agnostic
    rows_count, cols_count = 1_000, 1_000  # 4 MB of float32: a hidden copy could not go unnoticed
    host = numpy.arange(rows_count * cols_count, dtype=numpy.float32)
    raw = target.raw(host)
    raw_2d = raw.reshape(rows_count, cols_count)
    raw_row = raw[:cols_count]
    itemsize = host.itemsize
    device_text = str(target.device)
    checks = [  # (what, make the result from nothing held yet, expected data pointer)
        (f"`t.to({device_text!r})`", lambda t: t.to(device_text), raw, 0),
        ("`t.to(t.device)`", lambda t: t.to(t.device), raw, 0),
        ("`t.to(agnostic.float32)`", lambda t: t.to(agnostic.float32), raw, 0),
        ("`as_tensor(array)`", lambda t: agnostic.as_tensor(raw), raw, 0),
        ("`asarray(array)`", lambda t: agnostic.asarray(raw), raw, 0),
        ("`t.view(1000, 1000)`", lambda t: t.view(rows_count, cols_count), raw, 0),
        ("`t.reshape(1000, 1000)` (contiguous)", lambda t: t.reshape(rows_count, cols_count), raw, 0),
        ("`t[1:]`", lambda t: t[1:], raw, itemsize),
        ("`t2[10:20, ::2]`", lambda t: agnostic.as_tensor(raw_2d)[10:20, ::2], raw, 10 * cols_count * itemsize),
        ("`t2.transpose(0, 1)`", lambda t: agnostic.as_tensor(raw_2d).transpose(0, 1), raw, 0),
        ("`t2.T`", lambda t: agnostic.as_tensor(raw_2d).T, raw, 0),
        ("`t2.permute(1, 0)`", lambda t: agnostic.as_tensor(raw_2d).permute(1, 0), raw, 0),
        ("`row.expand(1000, 1000)`", lambda t: agnostic.as_tensor(raw_row).expand(rows_count, cols_count), raw, 0),
        ("`t.unsqueeze(0)`", lambda t: t.unsqueeze(0), raw, 0),
        ("`t.detach()`", lambda t: t.detach(), raw, 0),
    ]
    if target.name == "cpu":  # from_numpy is the CPU's own zero-copy entry point
        checks.insert(3, ("`from_numpy(array)`", lambda t: agnostic.from_numpy(host), raw, 0))
    else:
        checks.insert(1, ("`t.to('cuda:0')`", lambda t: t.to("cuda:0"), raw, 0))
    rows = []
    source = agnostic.as_tensor(raw)
    for what, make, base, offset in checks:
        goal = "same memory, no copy" + (" (< 4 KiB: the Tensor object)" if target.name == "cpu"
                                         else " (+0 B in the pool)")
        try:
            with _Allocations(target) as allocations:
                result = make(source)
                pointer = result.data_ptr()
            expected = _pointer(base) + offset
            shared = pointer == expected
            # Tensor objects themselves take a few hundred bytes of host memory; a copy would take megabytes.
            small = allocations.allocated <= (0 if target.name == "cuda" else 4096)
            finding = (f"{'same memory' if shared else f'data pointer moved by {pointer - _pointer(base)} B'}, "
                       f"+{allocations.allocated} B {'in the pool' if target.name == 'cuda' else 'allocated'}")
            rows.append(Row(target.name, what, goal=goal, finding=finding, passed=shared and small))
            del result
        except Exception as error:
            rows.append(Row(target.name, what, goal=goal, error=f"{type(error).__name__}: {error}"[:160]))
    return rows


# ----- main -----------------------------------------------------------------------------------------------------
def _environment(agnostic, torch, targets):
    parts = [f"Python {platform.python_version()}", f"NumPy {numpy.__version__}"]
    if any(t.name == "cuda" for t in targets):
        cupy = _import_cupy()
        parts.append(f"CuPy {cupy.__version__}")
        try:
            parts.append(agnostic.cuda.get_device_name())
        except Exception:
            pass
    parts.append(f"PyTorch {torch.__version__}" if torch is not None else "PyTorch not importable")
    parts.append(f"{platform.machine()}, {_cpu_count()} CPUs")
    return ", ".join(parts)


def _cpu_count():
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all",
                        help="which devices to measure (all: the CPU, and CUDA when available)")
    parser.add_argument("--quick", action="store_true", help="few repeats and smaller matmuls (a few seconds)")
    parser.add_argument("--out", help="also write the report (Markdown) to this file")
    args = parser.parse_args(argv)

    agnostic = _import_agnostic()
    torch = _import_torch()
    names = ["cpu"] if args.device == "cpu" else ["cuda"] if args.device == "cuda" else ["cpu", "cuda"]
    skipped = []
    if "cuda" in names and not agnostic.cuda.is_available():
        names.remove("cuda")
        try:
            agnostic.zeros(1, device="cuda")
            reason = "CUDA is not available"
        except Exception as error:  # the library's own explanation (no CuPy, no driver, no GPU)
            reason = str(error)
        skipped.append(f"cuda: not measured: {reason}")
    targets, rows = [], []
    for name in names:
        try:
            target = Target(name, agnostic, torch)
        except Exception as error:  # e.g. a CuPy that imports but cannot synchronize: report it and go on
            rows.append(Row(name, "setting up the device", error=f"{type(error).__name__}: {error}"[:160]))
            continue
        targets.append(target)
        for section in (small_ops, large_ops):
            rows += section(target, args.quick)
        rows += _guarded(name, "no-copy checks", "no copy", lambda: no_copy_checks(target))

    raw_names = " / ".join(t.raw_name for t in targets) or "NumPy"
    lines = [f"agnostic core benchmark{' (--quick)' if args.quick else ''}: "
             f"{_environment(agnostic, torch, targets)}", ""]
    lines += skipped + ([""] if skipped else [])
    header = [c.format(raw=raw_names) for c in COLUMNS]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row.cells()) + " |" for row in rows]
    lines += ["", "ratio = agnostic time / baseline time (lower is better); PyTorch columns are for information. "
              "Small ops: wall clock of a loop of N ops / N (CUDA: one device synchronize after the loop), median "
              "of interleaved repeats."]
    passed = sum(row.passed for row in rows)
    lines.append(f"{passed}/{len(rows)} rows meet their goal.")
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
