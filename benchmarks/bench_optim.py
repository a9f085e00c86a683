"""Optimizer step time for a 784-256-256-10 MLP's parameters: agnostic against PyTorch (when importable).

    python benchmarks/bench_optim.py [--device cpu|cuda|all] [--quick] [--out FILE.md]

For each device, ``SGD(lr=0.01, momentum=0.9)`` and ``Adam(lr=1e-3)`` over the six parameters of the MLP (266,610
float32 elements), with fixed gradients: median wall-clock time per ``step()`` over several repeats of a loop of
steps (on CUDA, synchronized once after each loop). Columns:

* agnostic: the default path (on CUDA one fused multi-tensor kernel per step);
* agnostic per-tensor: ``foreach=False``, ordinary array operations tensor by tensor (CUDA only);
* PyTorch: its default (foreach on CUDA, a per-tensor loop on the CPU), and on CUDA ``fused=True``;
* max |diff|: the largest difference between agnostic's and PyTorch's parameters after the measured steps
  (both ran the same number of steps from the same values and gradients).

Prints one Markdown table; ratios are agnostic time / PyTorch time (lower is better). This is a measurement, not a
test: the exit code is 0 whenever the table could be produced. CuPy and PyTorch are optional.
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy

SHAPES = [(256, 784), (256,), (256, 256), (256,), (10, 256), (10,)]
OPTIMIZERS = (("SGD momentum", "SGD", dict(lr=0.01, momentum=0.9)), ("Adam", "Adam", dict(lr=1e-3)))


def _import_agnostic():
    try:
        import agnostic
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import agnostic
    import agnostic.optim  # noqa: F401
    return agnostic


def _import_torch():
    try:
        import torch
    except Exception:  # ImportError, or a broken install
        return None
    return torch


def _cuda_usable(agnostic, torch):
    ours = agnostic.cuda.device_count() > 0
    try:
        theirs = torch is not None and bool(torch.cuda.is_available())
    except Exception:
        theirs = False
    return ours, theirs


class Candidate:
    """One optimizer over its own copy of the parameters: ``run(n)`` takes n steps; ``values()`` reads them back."""

    def __init__(self, step, sync, values):
        self.step, self.sync, self.values = step, sync, values

    def run(self, n):
        step = self.step
        for _ in range(n):
            step()


def _ours(agnostic, device, name, options, init, grads, **extra):
    params = [agnostic.tensor(x, device=device) for x in init]
    for p, g in zip(params, grads):
        p.grad = agnostic.tensor(g, device=device)
    optimizer = getattr(agnostic.optim, name)(params, **options, **extra)
    sync = (lambda: None) if device == "cpu" else _cupy_sync()
    return Candidate(optimizer.step, sync, lambda: [p.cpu().numpy() for p in params])


def _theirs(torch, device, name, options, init, grads, **extra):
    params = [torch.tensor(x, device=device, requires_grad=True) for x in init]
    for p, g in zip(params, grads):
        p.grad = torch.tensor(g, device=device)
    optimizer = getattr(torch.optim, name)(params, **options, **extra)
    sync = (lambda: None) if device == "cpu" else torch.cuda.synchronize

    def step():
        with torch.no_grad():
            optimizer.step()
    return Candidate(step, sync, lambda: [p.detach().cpu().numpy() for p in params])


def _cupy_sync():
    import cupy

    return cupy.cuda.Device().synchronize


def _median_step(candidates, steps, repeats):
    """Median seconds per step of each candidate; candidates alternate within every repeat."""
    times = [[] for _ in candidates]
    for candidate in candidates:
        candidate.run(3)  # warm up: state allocation, kernel compilation
        candidate.sync()
    for repeat in range(repeats):
        order = list(range(len(candidates)))
        order = order[repeat % len(order):] + order[:repeat % len(order)]
        for index in order:
            candidate = candidates[index]
            candidate.sync()
            started = time.perf_counter()
            candidate.run(steps)
            candidate.sync()
            times[index].append((time.perf_counter() - started) / steps)
    return [statistics.median(t) for t in times]


def _us(seconds):
    return "" if seconds is None else f"{seconds * 1e6:.1f} us"


def measure(agnostic, torch, device, quick):
    """The table rows of one device."""
    rng = numpy.random.default_rng(0)
    init = [rng.standard_normal(s).astype(numpy.float32) * 0.05 for s in SHAPES]
    grads = [rng.standard_normal(s).astype(numpy.float32) * 0.01 for s in SHAPES]
    steps, repeats = (20, 3) if quick else (200, 7)
    rows = []
    for label, name, options in OPTIMIZERS:
        candidates = {"agnostic": _ours(agnostic, device, name, options, init, grads)}
        if device != "cpu":
            candidates["per-tensor"] = _ours(agnostic, device, name, options, init, grads, foreach=False)
        if torch is not None:
            candidates["torch"] = _theirs(torch, device, name, options, init, grads)
            if device != "cpu":
                candidates["torch fused"] = _theirs(torch, device, name, options, init, grads, fused=True)
        seconds = dict(zip(candidates, _median_step(list(candidates.values()), steps, repeats)))
        difference = ""
        if "torch" in candidates:
            ours_values, torch_values = candidates["agnostic"].values(), candidates["torch"].values()
            difference = f"{max(float(numpy.abs(a - b).max()) for a, b in zip(ours_values, torch_values)):.1e}"
        ratio = f"{seconds['agnostic'] / seconds['torch']:.2f}x" if "torch" in seconds else ""
        rows.append([device, label, _us(seconds["agnostic"]), _us(seconds.get("per-tensor")),
                     _us(seconds.get("torch")), _us(seconds.get("torch fused")), ratio, difference])
    return rows


COLUMNS = ["device", "optimizer", "agnostic", "agnostic per-tensor", "PyTorch", "PyTorch fused",
           "ratio vs PyTorch", "max |diff|"]


def _table(rows):
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all")
    parser.add_argument("--quick", action="store_true", help="few steps and repeats (a few seconds)")
    parser.add_argument("--out", help="also write the report (Markdown) to this file")
    args = parser.parse_args(argv)
    agnostic, torch = _import_agnostic(), _import_torch()
    ours_cuda, torch_cuda = _cuda_usable(agnostic, torch)
    devices = ["cpu"] if args.device == "cpu" else ["cuda"] if args.device == "cuda" else ["cpu", "cuda"]
    rows, notes = [], []
    for device in devices:
        if device == "cuda" and not ours_cuda:
            notes.append("CUDA: skipped (no usable CUDA device for agnostic)")
            continue
        device_torch = torch if device == "cpu" or torch_cuda else None
        try:
            rows += measure(agnostic, device_torch, device, args.quick)
        except Exception as error:  # report and go on: a measurement, not a test
            rows.append([device, "error", f"{type(error).__name__}: {error}", "", "", "", "", ""])
    environment = (f"Python {platform.python_version()}, NumPy {numpy.__version__}, "
                   f"PyTorch {getattr(torch, '__version__', 'not installed')}, {platform.machine()}, "
                   f"{os.cpu_count()} CPUs")
    report = "\n".join([f"Optimizer step, 784-256-256-10 MLP parameters ({environment})", "", _table(rows)] +
                       ([""] + notes if notes else []))
    print(report)
    if args.out:
        with open(args.out, "w") as stream:
            stream.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
