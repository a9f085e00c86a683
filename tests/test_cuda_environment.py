"""CUDA_VISIBLE_DEVICES and CUDA_LAUNCH_BLOCKING are honoured, as in PyTorch."""

import os
import subprocess
import sys

import pytest

from conftest import CUDA_DEVICES

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

needs_cuda = pytest.mark.skipif(not CUDA_DEVICES, reason="no CUDA device")


def _run(code, **environment):
    env = dict(os.environ, PYTHONPATH=_REPO, **environment)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@needs_cuda
def test_cuda_visible_devices_hides_devices():
    assert _run("import agnostic; print(agnostic.cuda.device_count())", CUDA_VISIBLE_DEVICES="") == "0"
    assert _run("import agnostic; print(agnostic.cuda.device_count())", CUDA_VISIBLE_DEVICES="0") == "1"


def test_empty_cuda_visible_devices_makes_cuda_unavailable_with_a_reason():
    code = (
        "import agnostic\n"
        "print(agnostic.cuda.is_available())\n"
        "try:\n    agnostic.ones(1, device='cuda')\n"
        "except RuntimeError as error:\n    print('error:', error)\n"
    )
    output = _run(code, CUDA_VISIBLE_DEVICES="")
    assert output.splitlines()[0] == "False"
    assert "error:" in output and ("CUDA" in output or "CuPy" in output)


# Two chained 4096-square products (milliseconds of GPU work, 64 MiB each: the suite's other processes hold memory).
_LAUNCH_PROBE = (
    "import cupy, agnostic\n"
    "x = agnostic.ones(4096, 4096, device='cuda')\n"
    "x @ x\n"
    "cupy.cuda.get_current_stream().synchronize()\n"
    "y = x @ x\n"
    "y = y @ x\n"
    "print(cupy.cuda.get_current_stream().done)\n"
)


@needs_cuda
def test_launch_blocking_makes_every_op_synchronous():
    assert _run(_LAUNCH_PROBE, CUDA_LAUNCH_BLOCKING="1") == "True"


@needs_cuda
def test_without_launch_blocking_ops_are_asynchronous():
    assert _run(_LAUNCH_PROBE, CUDA_LAUNCH_BLOCKING="0") == "False"
