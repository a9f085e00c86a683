"""Behaviour without CUDA, checked in fresh interpreters: no CuPy at all, CuPy without a usable GPU, lazy import."""

import importlib.util
import json
import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agnostic

ROOT = Path(__file__).resolve().parents[1]


def _env(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_python(code, *args, **env):
    """Run ``code`` in a fresh interpreter at the repository root; returns the CompletedProcess."""
    return subprocess.run(
        [sys.executable, *args, "-c", textwrap.dedent(code)], cwd=ROOT, env=_env(**env),
        capture_output=True, text=True, timeout=60,
    )


def run_json(code, **env):
    result = run_python(code, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# Shared by (a) and (b): what a process reports about CUDA and what asking for it raises.
_PROBE = """
import json, sys
import agnostic

report = {"is_available": agnostic.cuda.is_available(), "device_count": agnostic.cuda.device_count()}
x = agnostic.arange(6, dtype=agnostic.float32).reshape(2, 3)
report["cpu_sum"] = (x + agnostic.ones(3)).sum().item()
report["cpu_device"] = str(x.device)
report["device_construct"] = str(agnostic.device("cuda:1"))
report["seeds_silent"] = [agnostic.cuda.manual_seed(1), agnostic.cuda.manual_seed_all(1),
                          agnostic.cuda.seed(), agnostic.cuda.seed_all()]

def error_of(action):
    try:
        action()
    except Exception as error:
        return [type(error).__name__, str(error)]
    return None

report["zeros"] = error_of(lambda: agnostic.zeros(2, device="cuda"))
report["zeros_indexed"] = error_of(lambda: agnostic.zeros(2, device="cuda:0"))
report["to"] = error_of(lambda: agnostic.ones(2).to("cuda"))
report["cuda_method"] = error_of(lambda: agnostic.ones(2).cuda())
report["current_device"] = error_of(agnostic.cuda.current_device)
report["cupy_imported"] = sys.modules.get("cupy") is not None
print(json.dumps(report))
"""


def _check_common(report):
    assert report["is_available"] is False
    assert report["device_count"] == 0
    assert report["cpu_sum"] == 21.0
    assert report["cpu_device"] == "cpu"
    assert report["device_construct"] == "cuda:1"          # constructing a device never needs CUDA
    assert report["seeds_silent"] == [None, None, None, None]
    for key in ("zeros", "zeros_indexed", "to", "cuda_method", "current_device"):
        assert report[key] is not None, f"{key} did not raise"
        assert report[key][0] == "RuntimeError", (key, report[key])
    return [report[key][1] for key in ("zeros", "zeros_indexed", "to", "cuda_method", "current_device")]


def test_without_cupy():
    report = run_json("import sys\nsys.modules['cupy'] = None\n" + textwrap.dedent(_PROBE))
    for message in _check_common(report):
        assert "agnostic-tensor[cuda12]" in message, message
        assert "CuPy" in message, message
    assert report["cupy_imported"] is False


def _gpu_present():
    return agnostic.cuda.device_count() > 0


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="CuPy is not installed in this environment")
@pytest.mark.skipif(_gpu_present(), reason="a usable GPU is present")
def test_cupy_without_gpu_or_driver():
    report = run_json(_PROBE)
    assert report["cupy_imported"] is True
    for message in _check_common(report):
        lowered = message.lower()
        assert "not available" in lowered, message
        assert "no usable" in lowered and ("gpu" in lowered or "driver" in lowered), message
        assert "pip install" not in message, message       # CuPy is installed: don't tell the user to install it


def test_import_does_not_import_cupy():
    report = run_json("""
        import json, sys
        import agnostic
        import agnostic.cuda
        names = [name for name in sys.modules if name == "cupy" or name.startswith(("cupy.", "cupy_backends"))]
        print(json.dumps({"cupy_modules": names, "has_cuda_api": hasattr(agnostic.cuda, "is_available")}))
    """)
    assert report == {"cupy_modules": [], "has_cuda_api": True}


def _child_cpu_seconds(code):
    """CPU seconds (user + system) a fresh interpreter spends running ``code``: unlike wall time, not inflated
    by other processes competing for the cores. One BLAS thread, so the count does not grow with the cores
    a BLAS thread pool starts on."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = run_python(code, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                        PYTHONDONTWRITEBYTECODE="")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.returncode == 0, result.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def test_import_time():
    """What ``import agnostic`` adds to NumPy's own import, in CPU seconds (NumPy's cost, BLAS threads included,
    varies with the machine; ours is what this project controls)."""
    # As an installed package runs: from bytecode. An environment with PYTHONDONTWRITEBYTECODE set (some CI images)
    # would otherwise compile every module on every import, and time the compiler instead.
    run_python("import agnostic", PYTHONDONTWRITEBYTECODE="")   # warm the bytecode cache
    own_seconds = min(_child_cpu_seconds("import agnostic") - _child_cpu_seconds("import numpy") for _ in range(5))
    assert own_seconds < 0.5, f"import agnostic took {own_seconds:.3f} s of CPU time beyond NumPy's import"


def test_import_loads_no_cupy():
    result = run_python("import agnostic", "-X", "importtime")
    assert result.returncode == 0, result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "agnostic" in imported, result.stderr[-2000:]
    assert not any(name == "cupy" or name.startswith("cupy.") for name in imported)
