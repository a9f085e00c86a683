"""End-to-end checks that the package imports lazily and basic arithmetic agrees with NumPy on every device."""

import subprocess
import sys

import numpy

import agnostic


def test_import_does_not_import_cupy():
    code = "import sys, agnostic; print('cupy' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_add_matches_numpy(device):
    a = agnostic.arange(6, dtype=agnostic.float32, device=device).reshape(2, 3)
    b = agnostic.tensor([1.0, 2.0, 3.0], device=device)
    result = a + b
    assert result.device == device
    numpy.testing.assert_array_equal(result.cpu().numpy(), numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
                                     + numpy.array([1, 2, 3], numpy.float32))
