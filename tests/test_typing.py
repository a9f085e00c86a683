"""agnostic ships its types (``py.typed``) and mypy finds no error in it, with the configuration in pyproject.toml."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_package_declares_that_it_is_typed():
    assert (ROOT / "agnostic" / "py.typed").is_file()


def test_mypy_finds_no_error_in_the_package(tmp_path):
    pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "--no-error-summary"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, "mypy errors (fix them, don't ignore them):\n" + result.stdout + result.stderr
