"""The examples train for a few steps on every device, leave their outputs, and resume on another device; a seeded
MLP run gives the same losses on CPU and CUDA; the training benchmark prints its table (``--quick``).

Each example runs in a subprocess, as a user runs it, with its outputs in a temporary folder. Nothing here imports
agnostic's submodules into the test process.
"""

import importlib.util
import json
import math
import os
import pathlib
import re
import subprocess
import sys

import pytest
import threadpoolctl

from conftest import CUDA_DEVICES

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULT_LINES = {  # what each example prints about its held-out set
    "linear_regression": r"held-out MSE: \d+\.\d+, R\^2: -?\d+\.\d+ \(200 points\)",
    "mlp_digits": r"held-out accuracy: \d+\.\d+% \(359 images\)",
    "cnn_digits": r"held-out accuracy: \d+\.\d+% \(359 images\)",
}
OTHER_DEVICE = CUDA_DEVICES[0] if CUDA_DEVICES else "cpu"  # where checkpoints saved on the CPU resume
FEW_STEPS = ["--epochs", "1", "--max-steps", "3"]


def environment():
    """The subprocesses' environment: this checkout importable, and one BLAS thread (the examples' matrices are
    tiny, and spare threads only fight over the CPUs of a busy machine)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run(script, *arguments):
    """Run ``script`` (relative to the repository) with ``arguments``; returns its standard output."""
    command = [sys.executable, str(ROOT / script), *map(str, arguments)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT, env=environment())
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result.stdout


def run_example(name, device, out, *flags):
    """Run ``examples/NAME.py`` on ``device`` with its outputs in ``out``; returns its standard output."""
    return run(f"examples/{name}.py", "--device", device, "--out", out, *flags)


def metrics(out, name):
    """The metrics file an example wrote."""
    return json.loads((out / f"{name}.json").read_text())


@pytest.mark.parametrize("name", sorted(RESULT_LINES))
def test_example_trains_a_few_steps(name, device, tmp_path):
    stdout = run_example(name, device, tmp_path, *FEW_STEPS)
    assert re.search(RESULT_LINES[name], stdout), stdout
    assert re.search(rf"model: [\d,]+ parameters on {device}\n", stdout), stdout
    assert f"batches live on {device} (inputs) and {device} (targets)" in stdout
    assert f"trained 3 steps on {device}" in stdout
    assert (tmp_path / f"{name}_loss.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (tmp_path / f"{name}.pt").stat().st_size > 0
    recorded = metrics(tmp_path, name)
    assert recorded["device"] == str(device)
    assert len(recorded["losses"]) == 3 and all(math.isfinite(loss) for loss in recorded["losses"])


@pytest.mark.parametrize("name", sorted(RESULT_LINES))
def test_checkpoint_resumes_on_another_device(name, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    run_example(name, "cpu", first, *FEW_STEPS)
    stdout = run_example(name, OTHER_DEVICE, second, "--resume", first / f"{name}.pt", "--epochs", "2",
                         "--max-steps", "3")
    assert (f"resumed from {first / name}.pt at epoch 1 (saved from cpu); its tensors now live on {OTHER_DEVICE}"
            in stdout), stdout
    assert f"trained 3 steps on {OTHER_DEVICE}; 2/2 epochs done" in stdout
    assert re.search(RESULT_LINES[name], stdout), stdout
    before, after = metrics(first, name), metrics(second, name)
    assert after["epoch"] == 2 and after["device"] == OTHER_DEVICE
    assert after["losses"][:3] == before["losses"] and len(after["losses"]) == 6
    assert (second / f"{name}.pt").exists() and (second / f"{name}_loss.png").exists()


def test_mlp_reaches_95_percent_held_out_accuracy(tmp_path):
    """The full default run (30 epochs, a few seconds on a CPU)."""
    stdout = run_example("mlp_digits", "cpu", tmp_path)
    assert metrics(tmp_path, "mlp_digits")["accuracy"] >= 0.95, stdout


def test_resumed_run_matches_an_uninterrupted_one(tmp_path):
    """Model, optimizer, shuffling and dropout generators all resume: the second epoch's losses are those of a run
    that never stopped (bit for bit on the CPU; within float tolerance after moving to CUDA)."""
    flags = ["--batch-size", "256"]  # 6 steps an epoch
    run_example("mlp_digits", "cpu", tmp_path / "straight", "--epochs", "2", *flags)
    run_example("mlp_digits", "cpu", tmp_path / "first", "--epochs", "1", *flags)
    run_example("mlp_digits", OTHER_DEVICE, tmp_path / "resumed", "--epochs", "2", *flags,
                "--resume", tmp_path / "first" / "mlp_digits.pt")
    straight = metrics(tmp_path / "straight", "mlp_digits")
    resumed = metrics(tmp_path / "resumed", "mlp_digits")
    assert len(resumed["losses"]) == len(straight["losses"]) == 12
    if OTHER_DEVICE == "cpu":
        assert resumed["losses"] == straight["losses"]
        assert resumed["accuracy"] == straight["accuracy"]
    else:
        assert resumed["losses"] == pytest.approx(straight["losses"], rel=1e-3, abs=1e-4)


def test_mlp_losses_match_on_cpu_and_cuda(cuda_device, tmp_path):
    """Same seed, same run: the device-invariant generator gives both devices the same initial weights, batches
    and dropout masks, so only float rounding differs."""
    steps = 30
    flags = ["--epochs", "2", "--max-steps", steps]
    run_example("mlp_digits", "cpu", tmp_path / "cpu", *flags)
    run_example("mlp_digits", cuda_device, tmp_path / "cuda", *flags)
    on_cpu, on_cuda = metrics(tmp_path / "cpu", "mlp_digits"), metrics(tmp_path / "cuda", "mlp_digits")
    assert len(on_cpu["losses"]) == len(on_cuda["losses"]) == steps
    assert on_cuda["losses"][0] == pytest.approx(on_cpu["losses"][0], rel=1e-5)
    assert on_cuda["losses"] == pytest.approx(on_cpu["losses"], rel=1e-3, abs=1e-4)


def test_training_benchmark_prints_its_table(tmp_path):
    out = tmp_path / "training.md"
    stdout = run("benchmarks/bench_training.py", "--quick", "--device", "cpu", "--out", out)
    assert out.read_text() == stdout
    # The first line names the BLAS libraries the products ran on (NumPy's, as threadpoolctl sees it here too)
    blas = {pool["internal_api"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas"}
    first = stdout.splitlines()[0]
    assert all(re.search(rf"BLAS: .*{api} \d", first) for api in blas), first
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in stdout.splitlines() if line.startswith("|")]
    with_torch = importlib.util.find_spec("torch") is not None
    expected = ["device", "model", "batch", "optimizer", "agnostic us/step"]
    expected += ["PyTorch us/step", "ratio", "goal", "result"] if with_torch else ["goal"]
    assert rows[0] == expected
    body = [dict(zip(expected, row)) for row in rows[2:]]
    assert [(row["model"], row["batch"], row["optimizer"]) for row in body] == [
        ("MLP", "64", "SGD momentum 0.9"), ("MLP", "64", "Adam"), ("MLP", "4,096", "SGD momentum 0.9"),
        ("MLP", "4,096", "Adam"), ("LSTM", "64", "Adam"), ("Transformer layer", "64", "Adam"),
        ("Transformer layer, dropout 0.1", "64", "Adam")]
    for row in body:
        assert row["device"] == "cpu" and re.fullmatch(r"[\d,]+", row["agnostic us/step"]), row
        if with_torch:
            assert re.fullmatch(r"[\d,]+", row["PyTorch us/step"]), row
            assert re.fullmatch(r"\d+\.\d\dx", row["ratio"]) and row["result"] in ("PASS", "FAIL"), row
