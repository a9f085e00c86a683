"""The compatibility corpus: real, public PyTorch programs (``tests/compat/``, listed with their sources, licences
and changes in its README) run to completion with agnostic, changed only at their import lines and data source.

Each program runs in a subprocess, as a user runs it, from an empty working folder. Where PyTorch is installed, the
same file runs again with its imports swapped back to ``torch`` (exactly the lines that name agnostic), and the
losses both print are compared. The two libraries draw different random numbers, so a comparison is exact only
where a program starts from fixed values; elsewhere it checks what a correct implementation must share with
PyTorch: the final loss within a stated relative tolerance, or below a bound that an untrained model is far above.

All runs start together in a pool the size of the machine's CPU count (one BLAS thread each), so the file takes
about as long as its slowest few programs.
"""

import concurrent.futures
import dataclasses
import importlib.util
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "compat"
TIMEOUT_S = 300
NUMBER = r"(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"


@dataclasses.dataclass(frozen=True)
class Program:
    """How to read a program's losses and how closely its final loss must follow PyTorch's.

    ``pattern`` captures one loss per matching line; ``at_least`` is how many the run must print. ``relative``:
    the final losses of agnostic and PyTorch agree within this relative tolerance. ``below``: both final losses
    are under this bound (set well under the loss of an untrained model, so a run that learns nothing fails).
    ``needs``: the missing or broken agnostic feature that makes the agnostic run fail (the test is then a strict
    xfail, so it turns into a failure the day the feature lands and the mark should go).
    """

    pattern: str
    at_least: int
    relative: float | None = None
    below: float | None = None
    needs: str | None = None


POLYNOMIAL = rf"^\d+ {NUMBER}$"  # "1999 8.915096282958984": step, summed squared error
PROGRAMS = {
    # Fits of sin(x) by a cubic from random initial weights: after 2,000 steps every start is near the least-squares
    # cubic (summed squared error about 8.8 over 2,000 points; an untrained start is in the hundreds or more).
    "polynomial_tensor": Program(POLYNOMIAL, 20, relative=0.25, below=15.0),
    "polynomial_autograd": Program(POLYNOMIAL, 20, relative=0.25, below=15.0),
    "polynomial_nn": Program(POLYNOMIAL, 20, relative=0.25, below=15.0),
    "polynomial_optim": Program(POLYNOMIAL, 20, relative=0.25, below=15.0),
    "polynomial_module": Program(POLYNOMIAL, 20, relative=0.25, below=15.0),
    # Fixed initial weights (torch.full): the same float32 arithmetic, so the losses agree to rounding.
    "polynomial_custom_function": Program(POLYNOMIAL, 20, relative=1e-4, below=15.0),
    # A random number of terms per step (Python's unseeded random) and random starts: only a bound is shared.
    "dynamic_net": Program(POLYNOMIAL, 3, below=1e4),
    # Runs until a batch's smooth L1 loss is under 1e-3, whatever the random target polynomial.
    "regression": Program(rf"^Loss: {NUMBER} after \d+ batches$", 1, below=1e-3),
    # Ten digit classes: chance is a test loss of ln 10 = 2.30; two epochs on 128 images get well under it.
    "mnist": Program(rf"Test set: Average loss: {NUMBER},", 2, relative=0.5, below=2.2),
    # Two epochs on 256 digits leave an RNN near chance in both libraries (PyTorch: 2.3049): the run must finish,
    # stay at chance or below, and track PyTorch's loss.
    "mnist_rnn": Program(rf"Test set: Average loss: {NUMBER},", 2, relative=0.05, below=2.35),
    # Summed binary cross-entropy + KL per image; an untrained decoder scores about 543 on these digits.
    "vae": Program(rf"====> Test set loss: {NUMBER}$", 2, relative=0.1, below=520.0),
    # LBFGS on sine waves: the first closure's MSE is about 0.5; one step brings the test loss under 0.01.
    "time_sequence_prediction": Program(rf"^test loss: {NUMBER}$", 1, below=0.01),
    # A part-of-speech LSTM tagger on two sentences: NLL starts near ln 3 = 1.1; 300 epochs bring it near 0.03.
    "sequence_models_tutorial": Program(rf"^final loss: {NUMBER}$", 1, below=0.2),
}


def as_torch(source):
    """The program with its imports swapped back to PyTorch: ``import agnostic as torch`` -> ``import torch``, and
    ``agnostic`` -> ``torch`` on every other import line that names it. Nothing else may name agnostic."""
    lines = []
    for line in source.splitlines(keepends=True):
        if re.match(r"\s*(import|from) agnostic\b", line):
            line = re.sub(r"^(\s*)import agnostic as torch\b", r"\1import torch", line)
            line = re.sub(r"\bagnostic\b", "torch", line)
        lines.append(line)
    swapped = "".join(lines)
    code = [line.split("#")[0] for line in swapped.splitlines()]  # comments may still say agnostic
    assert not any("agnostic" in line for line in code), "agnostic named outside an import line"
    return swapped


def environment():
    """This checkout importable; one BLAS/OpenMP thread per run (the runs share the CPUs); plots to files only."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def run_program(path):
    """Run ``path`` from an empty working folder; returns the finished process (its output captured)."""
    with tempfile.TemporaryDirectory() as folder:
        try:
            return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=TIMEOUT_S,
                                  cwd=folder, env=environment())
        except subprocess.TimeoutExpired as timeout:
            return subprocess.CompletedProcess(timeout.cmd, -1, timeout.stdout or "", f"timed out after {TIMEOUT_S}s")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every program's run with agnostic and, where PyTorch is installed, with PyTorch: all started at once."""
    with_torch = importlib.util.find_spec("torch") is not None
    swapped = tmp_path_factory.mktemp("as_torch")
    jobs = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        for name in PROGRAMS:
            path = CORPUS / f"{name}.py"
            jobs[name, "agnostic"] = pool.submit(run_program, path)
            if with_torch:
                torch_path = swapped / path.name
                torch_path.write_text(as_torch(path.read_text()))
                jobs[name, "torch"] = pool.submit(run_program, torch_path)
        return {key: job.result() for key, job in jobs.items()}


def losses(result, program):
    """The losses a finished run printed (after checking it exited 0 and printed enough of them)."""
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    found = [float(value) for value in re.findall(program.pattern, result.stdout, flags=re.MULTILINE)]
    assert len(found) >= program.at_least, f"{len(found)} losses printed:\n{result.stdout[-2000:]}"
    assert all(math.isfinite(value) for value in found), found
    return found


def marked(name):
    """``name`` as a test parameter, a strict xfail where agnostic lacks what the program needs."""
    needs = PROGRAMS[name].needs
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=f"needs {needs}")) if needs else name


def test_every_program_is_listed_with_its_source_and_licence():
    files = sorted(path.stem for path in CORPUS.glob("*.py"))
    assert files == sorted(PROGRAMS)
    readme = (CORPUS / "README.md").read_text()
    for name in files:
        head = (CORPUS / f"{name}.py").read_text().split('"""')[0]
        assert re.search(r"^# Source: https://github\.com/pytorch/(tutorials|examples)/blob/[0-9a-f]{40}/", head,
                         flags=re.MULTILINE), name
        assert "# Licence: BSD-3-Clause" in head and "# Changes: " in head, name
        assert f"`{name}.py`" in readme, name


@pytest.mark.parametrize("name", [marked(name) for name in PROGRAMS])
def test_program_runs_to_completion_with_agnostic(runs, name):
    program = PROGRAMS[name]
    found = losses(runs[name, "agnostic"], program)
    if program.below is not None:
        assert found[-1] < program.below, found


@pytest.mark.parametrize("name", [marked(name) for name in PROGRAMS])
def test_program_losses_match_pytorch(runs, name):
    pytest.importorskip("torch")
    program = PROGRAMS[name]
    ours, theirs = losses(runs[name, "agnostic"], program), losses(runs[name, "torch"], program)
    if program.below is not None:
        assert theirs[-1] < program.below, f"PyTorch's own run: {theirs}"
        assert ours[-1] < program.below, (ours, theirs)
    if program.relative is not None:
        assert ours[-1] == pytest.approx(theirs[-1], rel=program.relative), (ours, theirs)


def test_as_torch_swaps_exactly_the_import_lines():
    source = ("import agnostic as torch\nimport agnostic.nn as nn\nfrom agnostic import optim\n"
              "from agnostic.optim.lr_scheduler import StepLR\nx = torch.ones(2)  # agnostic in a comment\n")
    assert as_torch(source) == ("import torch\nimport torch.nn as nn\nfrom torch import optim\n"
                                "from torch.optim.lr_scheduler import StepLR\nx = torch.ones(2)  # agnostic in a comment\n")
    with pytest.raises(AssertionError, match="outside an import line"):
        as_torch("import agnostic as torch\nprint(agnostic.__version__)\n")
