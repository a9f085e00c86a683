"""agnostic ships its types (``py.typed``, and the stub of the Tensor methods the op declarations make) and mypy finds
no error in it, with the configuration in pyproject.toml."""

import pathlib
import subprocess
import sys

import pytest

from agnostic.ops import _stubs

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


def test_the_stub_of_the_declared_methods_is_current():
    assert _stubs.STUB.read_text() == _stubs.stub_text(), \
        "the op declarations changed: write the stub again with python -m agnostic.ops._stubs"


def test_type_checkers_see_the_declared_methods(tmp_path):
    pytest.importorskip("mypy", reason="mypy comes with the test extra: pip install -e '.[test]'")
    program = tmp_path / "program.py"
    program.write_text("import agnostic\n"
                       "x: agnostic.Tensor = agnostic.ones(2)\n"
                       "x.add(1).sum().backward()\n"
                       "x.no_such_method()\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(program)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.stdout.count("error:") == 1 and '"Tensor" has no attribute "no_such_method"' in result.stdout, \
        result.stdout
