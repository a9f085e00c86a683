"""The core benchmark runs (``--quick --device cpu``) and prints its table; the README keeps the quick-start commands.

(That the API reference names everything public is ``tests/test_api_reference.py``'s job.)

Timings are never asserted: the benchmark is a measurement. Only its shape (exit code, rows, columns) and the
deterministic no-copy findings (shared data pointers) are checked.
"""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "bench_core.py"
README = ROOT / "README.md"

COLUMNS = ["device", "what", "agnostic", "NumPy", "added", "ratio", "PyTorch", "ratio vs PyTorch", "goal", "result"]
TIMING_ROWS = [
    "`a + b`, 1,000 float32 (per op)",
    "`a * 2.0`, 1,000 float32 (per op)",
    "`a.sum()`, 1,000 float32 (per op)",
    "`a[1:]`, 1,000 float32 (per op)",
    "`a.reshape(10, 100)`, 1,000 float32 (per op)",
    "`a + b`, 16M float32",
    "matmul `a @ b`, 1024x1024 float32",
]
NO_COPY_ROWS = [
    "`t.to('cpu')`", "`t.to(t.device)`", "`from_numpy(array)`", "`as_tensor(array)`", "`asarray(array)`",
    "`t.view(1000, 1000)`", "`t[1:]`", "`t2[10:20, ::2]`", "`t2.transpose(0, 1)`", "`row.expand(1000, 1000)`",
]


def _cells(line):
    """The cells of a Markdown table line (``\\|`` inside a cell is not a separator)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "core.md"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--device", "cpu", "--out", str(out)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    table = [_cells(line) for line in result.stdout.splitlines() if line.startswith("|")]
    return result, out, table


def test_exits_zero_and_prints_a_markdown_table(quick_run):
    result, _, table = quick_run
    assert result.returncode == 0, result.stderr
    assert table[0] == COLUMNS
    assert set("".join(table[1])) <= set("-:")
    assert all(len(row) == len(COLUMNS) for row in table)


def test_prints_the_expected_rows(quick_run):
    result, _, table = quick_run
    rows = {row[1]: dict(zip(COLUMNS, row)) for row in table[2:]}
    for what in TIMING_ROWS + NO_COPY_ROWS:
        assert what in rows, f"missing row {what!r} in:\n{result.stdout}"
    for what, row in rows.items():
        assert row["device"] == "cpu"
        assert row["result"] in ("PASS", "FAIL"), row
        assert not row["agnostic"].startswith("error:"), row
    for what in TIMING_ROWS:  # numbers are printed, whatever they are
        row = rows[what]
        for column in ("agnostic", "NumPy", "added"):
            assert re.fullmatch(r"[+-]?\d+\.\d+ (us|ms)", row[column]), row
        assert re.fullmatch(r"\d+\.\d\dx", row["ratio"]), row
        assert row["goal"] in ("<= 1.5x", "<= 1.03x"), row


def test_no_copy_rows_find_shared_memory(quick_run):
    _, _, table = quick_run
    rows = {row[1]: dict(zip(COLUMNS, row)) for row in table[2:]}
    for what in NO_COPY_ROWS:
        assert rows[what]["agnostic"].startswith("same memory,"), rows[what]


def test_out_file_holds_the_printed_report(quick_run):
    result, out, _ = quick_run
    assert out.read_text() == result.stdout


def test_readme_keeps_the_quick_start_commands():
    text = README.read_text()
    assert ('python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[fast-cpu,cuda12]" && '
            'python examples/quickstart.py') in text
    test_command = ('python3 -m venv .venv && . .venv/bin/activate && pip install -q -e ".[test,cuda12]" && '
                    'python -m pytest -q')
    assert test_command in text
    assert test_command in (README.parent / ".ci" / "run").read_text()
