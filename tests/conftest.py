"""Shared fixtures: a ``device`` fixture over every available device, and Hypothesis profiles."""

import os
import signal
import subprocess

import pytest
from hypothesis import HealthCheck, settings

import agnostic

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("gpu", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


def available_devices():
    """``cpu`` plus every visible CUDA device."""
    return ["cpu"] + [f"cuda:{i}" for i in range(agnostic.cuda.device_count())]


DEVICES = available_devices()
CUDA_DEVICES = DEVICES[1:]


def run_launcher(command, timeout, **options):
    """``subprocess.run`` of an ``agnostic.distributed.run`` command that, past ``timeout``, stops the launcher with
    SIGTERM (which stops its ranks) before raising: a SIGKILLed launcher would leave its ranks running, holding the
    GPUs and slowing every later test."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGTERM)
            try:
                process.communicate(timeout=30)
            finally:
                process.kill()
            raise
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def pytest_configure(config):
    """With several GPUs, a CuPy kernel launched on one for an array on another is an error: it races the other
    GPU's stream and leaves its result on the wrong device. CuPy only warns about it (peer access); fail instead."""
    if len(CUDA_DEVICES) > 1:
        config.addinivalue_line(
            "filterwarnings", "error:The device where the array resides:cupy._util.PerformanceWarning"
        )


@pytest.fixture(params=DEVICES)
def device(request):
    """Each available device in turn (cpu always; each CUDA device when present)."""
    return agnostic.device(request.param)


@pytest.fixture(params=CUDA_DEVICES or [pytest.param(None, marks=pytest.mark.skip(reason="no CUDA device"))])
def cuda_device(request):
    """Each CUDA device; the test is skipped on machines without one."""
    return agnostic.device(request.param)
