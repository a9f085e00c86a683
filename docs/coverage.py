"""Rewrite docs/guide/coverage.md, the coverage of PyTorch's API: ``python docs/coverage.py`` (``--capture`` first
refreshes agnostic/_pytorch_names.py, the table of PyTorch's public names, from the PyTorch installed here)."""

import importlib
import pathlib
import sys

from agnostic import _coverage


def capture():
    """Rewrite ``_pytorch_names.py`` from the PyTorch installed here (a maintainer's step; needs PyTorch)."""
    import torch

    lines = ['"""The public names of PyTorch\'s main modules and of ``torch.Tensor``, captured from PyTorch by',
             "``python docs/coverage.py --capture``: what the coverage page compares agnostic against, and how a",
             'missing name\'s error knows that PyTorch has it. Generated: do not edit."""', "",
             f'PYTORCH_VERSION = "{torch.__version__.split("+")[0]}"', "", "NAMES = {"]
    for torch_module in _coverage.MIRRORS:
        if torch_module == "torch.Tensor":
            names = [name for name in dir(torch.Tensor) if not name.startswith("_")]
        else:
            module = importlib.import_module(torch_module)
            names = getattr(module, "__all__", None) or [name for name in dir(module) if not name.startswith("_")]
        names = sorted({name for name in names if not name.startswith("_")})
        lines.append(f'    "{torch_module}": (')
        line = "       "
        for name in names:
            item = f' "{name}",'
            if len(line) + len(item) > 120:
                lines.append(line)
                line = "       "
            line += item
        lines += [line, "    ),"]
    lines.append("}")
    (pathlib.Path(_coverage.__file__).parent / "_pytorch_names.py").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if "--capture" in sys.argv:
        capture()
        importlib.invalidate_caches()
    _coverage.PAGE.write_text(_coverage.coverage_page())
