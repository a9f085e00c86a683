"""CUDA graphs: MLP and LSTM training steps run eagerly and replayed as CUDA graphs, agnostic against PyTorch, in one
run.

    python benchmarks/bench_graphs.py [--steps N] [--repeats R] [--out FILE.md]

The step is PyTorch's whole-network capture recipe: ``zero_grad(set_to_none=True)``, forward of a 784-256-256-10 MLP
on a batch of 64, cross-entropy, ``backward`` and the optimizer's ``step``: SGD (momentum 0.9), then Adam with
``capturable=True`` in both libraries (its step count on the GPU, as capture needs), on inputs already on the GPU;
then the same with Adam for the training benchmark's one-layer LSTM classifier (64 inputs, 256 hidden, 32 time
steps; PyTorch runs cuDNN's kernels, agnostic its own step kernels) and Transformer encoder layer (d_model 256, 8
heads, feed-forward 1024, 32 tokens), at batch 64.
Eager: a loop of N steps between two synchronizations; graph: the step captured once (after three warm-up steps on a
side stream) and ``replay()`` N times between two synchronizations; and agnostic's
``agnostic.compile(step, mode="reduce-overhead")`` called N times (it captures the step on its second call), against
PyTorch's graph replay. Median microseconds per step over interleaved
repeats. agnostic's graph computes its matrix products with its own tiled kernel (CuPy refuses cuBLAS during
capture), PyTorch's with cuBLAS. Needs CUDA; PyTorch is optional (its columns are left out without it). Prints one
Markdown table; the exit code is 0 (a measurement, not a test).
"""

import argparse
import os
import statistics
import sys

import numpy

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _timing import seconds_per_call  # noqa: E402
from bench_training import FEATURES, SEQUENCE, sequence_models  # noqa: E402

BATCH, SIZES = 64, (784, 256, 256, 10)
ROWS = [("MLP 784-256-256-10", "SGD"), ("MLP 784-256-256-10", "Adam"), ("LSTM 64-256, 32 steps", "Adam"),
        ("Transformer layer d256, 8 heads, 32 tokens", "Adam")]


def _model(library, model_name):
    """``(model on CUDA, one input's shape)``: the MLP, or the training benchmark's LSTM or Transformer classifier."""
    nn = library.nn
    if model_name.startswith("MLP"):
        layers = []
        for inputs, outputs in zip(SIZES, SIZES[1:]):
            layers += [nn.Linear(inputs, outputs), nn.ReLU()]
        return nn.Sequential(*layers[:-1]).cuda(), (SIZES[0],)
    lstm, encoder = sequence_models(nn)
    return (lstm() if model_name.startswith("LSTM") else encoder(0.0)).cuda(), (SEQUENCE, FEATURES)


def _step(library, model_name, optimizer_name):
    """One training step of ``library`` (agnostic or torch: the same code runs on both) on its own model and data,
    with SGD (momentum 0.9) or Adam (``capturable=True``: its step count on the GPU, so that it can be captured)."""
    library.manual_seed(0)
    model, input_shape = _model(library, model_name)
    if optimizer_name == "SGD":
        optimizer = library.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        optimizer = library.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
    rng = numpy.random.default_rng(0)
    x = library.tensor(rng.standard_normal((BATCH, *input_shape)).astype(numpy.float32), device="cuda")
    y = library.tensor(rng.integers(0, SIZES[-1], BATCH), device="cuda")

    def train(inputs, targets):
        optimizer.zero_grad(set_to_none=True)
        library.nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()

    return train, x, y


def _eager(library, model_name, optimizer_name):
    """The step, run eagerly."""
    train, x, y = _step(library, model_name, optimizer_name)
    return lambda: train(x, y)


def _compiled(library, model_name, optimizer_name):
    """The step through ``agnostic.compile(train, mode="reduce-overhead")``: warmed up, captured, then replayed."""
    train, x, y = _step(library, model_name, optimizer_name)
    compiled = library.compile(train, mode="reduce-overhead")
    return lambda: compiled(x, y)


def _graphed(cuda, step):
    """``step`` warmed up on a side stream and captured; returns the graph's replay, which keeps ``step`` (its
    model, optimizer and inputs) alive: a replay writes into their memory, which must not be freed and reused."""
    side = cuda.Stream()
    side.wait_stream(cuda.current_stream())
    with cuda.stream(side):
        for _ in range(3):
            step()
    cuda.current_stream().wait_stream(side)
    graph = cuda.CUDAGraph()
    with cuda.graph(graph):
        step()

    def replay(kept_alive=step):
        graph.replay()
    return replay


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--out", help="also write the table to this Markdown file")
    options = parser.parse_args()
    import agnostic

    if not agnostic.cuda.is_available():
        print("bench_graphs needs CUDA")
        return
    try:
        import torch
    except ImportError:
        torch = None
    libraries = {"agnostic": agnostic}
    if torch is not None and torch.cuda.is_available():
        libraries["PyTorch"] = torch
    lines = ["| training step, batch 64 | agnostic (us) | PyTorch (us) | agnostic / PyTorch |",
             "| --- | ---: | ---: | ---: |"]
    for model_name, optimizer_name in ROWS:
        candidates = {}
        for name, library in libraries.items():
            candidates[f"{name} eager"] = (_eager(library, model_name, optimizer_name), library.cuda.synchronize)
            candidates[f"{name} graph"] = (_graphed(library.cuda, _eager(library, model_name, optimizer_name)),
                                           library.cuda.synchronize)
        candidates["agnostic compile"] = (_compiled(agnostic, model_name, optimizer_name), agnostic.cuda.synchronize)
        times = {name: [] for name in candidates}
        for name, (run, synchronize) in candidates.items():
            seconds_per_call(run, synchronize, 10)
        for _ in range(options.repeats):
            for name, (run, synchronize) in candidates.items():
                times[name].append(seconds_per_call(run, synchronize, options.steps))
        median = {name: statistics.median(values) * 1e6 for name, values in times.items()}
        for mode in ("eager", "graph replay"):
            key = mode.split()[0]
            ours, theirs = median[f"agnostic {key}"], median.get(f"PyTorch {key}")
            ratio = f"{ours / theirs:.2f}x" if theirs else ""
            lines.append(f"| {model_name}, {optimizer_name}, {mode} | {ours:.1f} | {theirs or float('nan'):.1f} | "
                         f"{ratio} |")
        ours, replay, theirs = median["agnostic compile"], median["agnostic graph"], median.get("PyTorch graph")
        ratio = f"{ours / theirs:.2f}x" if theirs else ""
        lines.append(f"| {model_name}, {optimizer_name}, agnostic.compile(reduce-overhead) ({ours / replay:.2f}x "
                     f"agnostic's replay) against PyTorch's graph replay | {ours:.1f} | {theirs or float('nan'):.1f} | "
                     f"{ratio} |")
    table = "\n".join(lines)
    print(table)
    if options.out:
        with open(options.out, "w") as handle:
            handle.write(table + "\n")


if __name__ == "__main__":
    main()
