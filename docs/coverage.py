"""Rewrite docs/guide/coverage.md, the coverage of PyTorch's API: ``python docs/coverage.py`` (``--capture`` first
refreshes the table of PyTorch's names from the PyTorch installed here)."""

import importlib
import sys

from agnostic import _coverage

if __name__ == "__main__":
    if "--capture" in sys.argv:
        _coverage.capture()
        importlib.invalidate_caches()
    _coverage.PAGE.write_text(_coverage.coverage_page())
