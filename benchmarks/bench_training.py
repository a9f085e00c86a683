"""Training-step speed of an MLP, an LSTM and a Transformer encoder layer: agnostic against PyTorch eager on the
same device.

    python benchmarks/bench_training.py [--device cpu|cuda|all] [--quick] [--out FILE.md]

One step is ``zero_grad``, forward, cross-entropy loss, ``backward`` and the optimizer's ``step`` on random float32
inputs already on the device; both libraries run the very same code. The models: a 784-256-256-10 MLP (SGD with
momentum 0.9, or Adam; batches of 64 and 4096); a one-layer LSTM (64 inputs, 256 hidden, 32 time steps, the last
step's output classified; Adam, batch 64); a Transformer encoder layer (d_model 256, 8 heads, feed-forward 1024, 32
tokens, mean-pooled and classified; Adam, batch 64), without dropout and with PyTorch's default 0.1. Time per step: a
loop of N steps (on CUDA, synchronized before and after), median of repeats; the two libraries take turns, repeat by
repeat (on the CPU after a pause that lets the other one's threads go idle). Each library runs in a process of its
own, as a user's program would: in one process, each library's thread pools (NumPy's OpenBLAS, numba's, PyTorch's
OpenMP) slowed the other's down (on a 16-core host, NumPy's matrix products of a 4096-batch step took 6.8 ms alone
and 9 to 11 ms beside PyTorch's). Each row starts fresh processes, as a program that trains that one model does, so
that no row inherits the heap an earlier row left: on the 16-core host, PyTorch's CPU Transformer step took 28 to 32
ms in a fresh process (glibc's malloc returns the freed activations to the system and faults them in again, 14,000
page faults a step) but 19 ms after the LSTM row in the same process (no faults: malloc kept the memory the LSTM's
steps had freed); agnostic's took 26 to 29 ms either way (it has malloc keep large freed blocks:
``agnostic/_backends/host_memory.py``). A worker imports its library before NumPy, as ``import agnostic as torch`` at
the top of a script does (agnostic then has NumPy's OpenBLAS threads sleep between matrix products instead of
polling: ``agnostic/_backends/openblas_wait.py``).
Goal: at most 1.5x PyTorch eager on the same device (for scale: PyTorch eager takes about 1,250 us per step at batch
64 on an H100). PyTorch is optional: without it, its columns are left out. Missing a goal prints FAIL but the exit
code stays 0: this is a measurement, not a test.
"""

import argparse
import multiprocessing
import os
import platform
import statistics
import sys
import time

SIZES = (784, 256, 256, 10)
# (model, batch, optimizer) of each row
ROWS = [("MLP", batch, optimizer) for batch in (64, 4096) for optimizer in ("SGD momentum 0.9", "Adam")] + \
    [("LSTM", 64, "Adam"), ("Transformer layer", 64, "Adam"), ("Transformer layer, dropout 0.1", 64, "Adam")]
SEQUENCE, FEATURES, HIDDEN, CLASSES = 32, 64, 256, 10
GOAL = 1.5
PAUSE = 0.2  # seconds before each CPU turn: OpenBLAS's threads spin for about 0.1 s after a call


# ----- libraries ------------------------------------------------------------------------------------------------
def import_agnostic():
    """agnostic, installed or (run from a checkout without installing) from this repository."""
    try:
        import agnostic
    except ImportError:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import agnostic
    import agnostic.nn
    import agnostic.optim
    return agnostic


def import_torch():
    """PyTorch, or None (never required)."""
    try:
        import torch
    except Exception:  # ImportError, or a broken install (missing shared libraries...)
        return None
    return torch


def torch_has_cuda(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


class Library:
    """One library under test on one device: its module, device and synchronize function."""

    def __init__(self, module, device_type):
        self.module = module
        self.device = module.device(device_type)
        self.synchronize = module.cuda.synchronize if device_type == "cuda" else (lambda: None)


# ----- one training step ----------------------------------------------------------------------------------------
def _mlp(nn):
    layers = []
    for inputs, outputs in zip(SIZES, SIZES[1:]):
        layers += [nn.Linear(inputs, outputs), nn.ReLU()]
    return nn.Sequential(*layers[:-1]), (SIZES[0],)


def sequence_models(nn):
    """The LSTM and Transformer classifiers, as Module subclasses of the library being measured."""
    class LSTMClassifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(FEATURES, HIDDEN, batch_first=True)
            self.head = nn.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            output, _ = self.lstm(x)
            return self.head(output[:, -1])

    class EncoderClassifier(nn.Module):
        def __init__(self, dropout):
            super().__init__()
            self.embed = nn.Linear(FEATURES, HIDDEN)
            self.layer = nn.TransformerEncoderLayer(HIDDEN, 8, dim_feedforward=4 * HIDDEN, dropout=dropout,
                                                    batch_first=True)
            self.head = nn.Linear(HIDDEN, CLASSES)

        def forward(self, x):
            return self.head(self.layer(self.embed(x)).mean(dim=1))

    return LSTMClassifier, EncoderClassifier


def build_model(nn, name):
    """(model, the shape of one input) for a row's model name."""
    if name == "MLP":
        return _mlp(nn)
    lstm, encoder = sequence_models(nn)
    return (lstm() if name == "LSTM" else encoder(0.1 if "dropout" in name else 0.0)), (SEQUENCE, FEATURES)


def training_step(library, model_name, batch, optimizer_name):
    """A function running one training step of the model with ``library`` (agnostic and PyTorch share this code)."""
    lib = library.module
    nn, device = lib.nn, library.device
    lib.manual_seed(0)
    model, input_shape = build_model(nn, model_name)
    model = model.to(device)
    if optimizer_name == "Adam":
        optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    images = lib.randn(batch, *input_shape, device=device)
    labels = lib.randint(0, CLASSES, (batch,), device=device)

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        optimizer.step()

    return step


class Worker:
    """One library on one device, in a process of its own: it builds a training step and times loops of it, on
    command. A library that fails to import or to run reports its error instead of a time (``RuntimeError``)."""

    def __init__(self, name, device_type):
        context = multiprocessing.get_context("spawn")  # no CUDA state or thread pool inherited from this process
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, name, device_type), daemon=True)
        self.process.start()
        child.close()
        self.call("ready")

    def call(self, *message):
        """Send a command and return its answer (``build``: nothing; ``run``: seconds for that many steps)."""
        self.connection.send(message)
        outcome, value = self.connection.recv()
        if outcome == "error":
            raise RuntimeError(value)
        return value

    def close(self):
        self.connection.send(None)
        self.process.join(timeout=30)


def _serve(connection, name, device_type):
    """The worker process: answers ``ready``, ``build(model, batch, optimizer_name)`` and ``run(steps)`` until
    None."""
    library = step = None
    while (message := connection.recv()) is not None:
        try:
            command, *arguments = message
            if library is None:
                library = Library(import_agnostic() if name == "agnostic" else import_torch(), device_type)
            answer = None
            if command == "build":
                step = training_step(library, *arguments)
                step()  # the library's error, if any, shows here
                library.synchronize()
            elif command == "run":
                started = time.perf_counter()
                for _ in range(arguments[0]):
                    step()
                library.synchronize()
                answer = time.perf_counter() - started
            connection.send(("ok", answer))
        except Exception as error:  # a library error is a result to report, not a reason to stop measuring
            connection.send(("error", f"{type(error).__name__}: {error}"[:160]))


def seconds_per_step(workers, steps, repeats, warmup, pause=0.0):
    """For each worker (its step built): the median over ``repeats`` of the time of ``steps`` steps divided by
    ``steps``, after ``warmup`` steps (the first steps allocate optimizer state and compile kernels). The workers
    take turns, repeat by repeat, so a machine that speeds up or slows down meanwhile affects them alike; ``pause``
    seconds before each turn let the previous one's worker threads go idle."""
    for worker in workers:
        worker.call("run", warmup)
    times = [[] for _ in workers]
    for _ in range(repeats):
        for worker, samples in zip(workers, times):
            time.sleep(pause)
            samples.append(worker.call("run", steps) / steps)
    return [statistics.median(samples) for samples in times]


def loop_sizes(device_type, batch, quick):
    """(steps per timed loop, repeats, warm-up steps): enough work to time, little enough to finish quickly."""
    if quick:
        return (3, 2, 1) if batch <= 64 else (1, 2, 1)
    if device_type == "cuda":
        return (100, 15, 5) if batch <= 64 else (20, 9, 3)
    return (50, 9, 5) if batch <= 64 else (5, 9, 2)


# ----- table ------------------------------------------------------------------------------------------------------
def measure(device_type, model, batch, optimizer_name, ours, theirs, quick):
    """One table row: agnostic's and (when importable) PyTorch's seconds per step, or the error met."""
    sizes = loop_sizes(device_type, batch, quick)
    row = {"device": device_type, "model": model, "batch": batch, "optimizer": optimizer_name}
    workers = [ours] + ([theirs] if theirs is not None else [])
    try:
        ours.call("build", model, batch, optimizer_name)
    except RuntimeError as error:
        row["error"] = str(error)
        workers = workers[1:]
    if theirs is not None:
        theirs.call("build", model, batch, optimizer_name)
    # On the CPU each turn starts after a pause, so that the other library's worker threads (OpenBLAS's, numba's,
    # PyTorch's OpenMP) have stopped spinning.
    pause = 0.0 if device_type == "cuda" or quick else PAUSE
    seconds = seconds_per_step(workers, *sizes, pause=pause) if workers else []
    if "error" not in row:
        row["agnostic"] = seconds.pop(0)
    if theirs is not None:
        row["torch"] = seconds[0]
    return row


def cells(row, with_torch):
    """The Markdown cells of one row."""
    head = [row["device"], row["model"], f"{row['batch']:,}", row["optimizer"]]
    if "error" in row:
        ours = f"error: {row['error']}".replace("|", "/")
    else:
        ours = f"{row['agnostic'] * 1e6:,.0f}"
    if not with_torch:
        return head + [ours, f"<= {GOAL:g}x PyTorch"]
    if "torch" not in row:
        return head + [ours, f"n/a (PyTorch has no {row['device']})", "", f"<= {GOAL:g}x", ""]
    theirs = f"{row['torch'] * 1e6:,.0f}"
    if "error" in row:
        return head + [ours, theirs, "", f"<= {GOAL:g}x", "FAIL"]
    ratio = row["agnostic"] / row["torch"]
    return head + [ours, theirs, f"{ratio:.2f}x", f"<= {GOAL:g}x", "PASS" if ratio <= GOAL else "FAIL"]


def table(rows, with_torch):
    """The Markdown table of all rows."""
    columns = ["device", "model", "batch", "optimizer", "agnostic us/step"]
    columns += ["PyTorch us/step", "ratio", "goal", "result"] if with_torch else ["goal"]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cells(row, with_torch)) + " |" for row in rows]
    return lines


def environment(agnostic, torch, device_types):
    """One line naming the versions, the GPU and the CPU threads."""
    import numpy  # here, not at the top: each worker imports its library first (see the module's docstring)

    parts = [f"Python {platform.python_version()}", f"NumPy {numpy.__version__}"]
    if "cuda" in device_types:
        import cupy

        parts += [f"CuPy {cupy.__version__}", agnostic.cuda.get_device_name()]
    if torch is None:
        parts.append("PyTorch not importable")
    else:
        parts.append(f"PyTorch {torch.__version__} ({torch.get_num_threads()} CPU threads)")
    parts.append(f"{platform.machine()}, {len(os.sched_getaffinity(0))} CPUs")
    parts += blas_kernels()
    parts += [f"{name}={os.environ[name]}" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE")
              if name in os.environ]
    return ", ".join(parts)


def blas_kernels():
    """The BLAS libraries loaded (NumPy's, SciPy's) and the kernels they run (OpenBLAS's ``architecture``): they set
    the CPU rows' matrix products, and an environment's ``OPENBLAS_CORETYPE`` changes them (AVX2 kernels on an
    AVX-512 processor: its products take up to twice as long)."""
    import threadpoolctl

    names = {f"{pool['internal_api']} {pool['version']}"
             + (f" ({pool['architecture']} kernels)" if pool.get("architecture") else "")
             for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"}
    return [f"BLAS: {' and '.join(sorted(names))}"] if names else []


def main(argv=None):
    """Measure every (device, batch, optimizer) row and print the report."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "all"), default="all",
                        help="which devices to measure (all: the CPU, and CUDA when available)")
    parser.add_argument("--quick", action="store_true", help="few steps and repeats (for tests)")
    parser.add_argument("--model", action="append", choices=sorted({row[0] for row in ROWS}),
                        help="measure only this model's rows (repeatable; default: every model)")
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)

    agnostic, torch = import_agnostic(), import_torch()
    device_types, notes = [], []
    if args.device in ("cpu", "all"):
        device_types.append("cpu")
    if args.device in ("cuda", "all"):
        if agnostic.cuda.is_available():
            device_types.append("cuda")
        else:
            notes.append("CUDA skipped: agnostic.cuda.is_available() is False.")
    rows = []
    for device_type in device_types:
        usable = torch is not None and (device_type == "cpu" or torch_has_cuda(torch))
        for model, batch, optimizer_name in ROWS:
            if args.model and model not in args.model:
                continue
            # Fresh workers for each row: no row inherits another's memory or thread state (see the docstring).
            ours = Worker("agnostic", device_type)
            theirs = Worker("torch", device_type) if usable else None
            rows.append(measure(device_type, model, batch, optimizer_name, ours, theirs, args.quick))
            for worker in (ours, theirs):
                if worker is not None:
                    worker.close()
    with_torch = torch is not None
    lines = [f"agnostic training-step benchmark{' (--quick)' if args.quick else ''}: MLP "
             f"{'-'.join(map(str, SIZES))}, LSTM and Transformer layer, float32; "
             f"{environment(agnostic, torch, device_types)}", ""]
    lines += notes + ([""] if notes else [])
    lines += table(rows, with_torch)
    lines += ["", "us/step: wall clock of a loop of steps / steps (CUDA: synchronized after the loop), median of "
              "repeats; ratio = agnostic / PyTorch eager (lower is better)."]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
