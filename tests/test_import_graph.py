"""agnostic's modules import each other as a DAG: no module needs, while it is being imported, a module that needs
it back. Imports inside functions would hide such cycles: agnostic's modules import each other at module level, but for
``agnostic.multiprocessing`` and the numba kernels, which ``import agnostic`` doesn't load (LAZY); function-level
imports are left for optional or platform dependencies (CuPy, ml_dtypes...)."""

import ast
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agnostic"



# Loaded on first use, so that ``import agnostic`` stays fast: the importing module may not import them at module
# level (a test below checks that ``import agnostic`` doesn't load them).
LAZY = frozenset({"agnostic.multiprocessing", "agnostic.multiprocessing.sharing",
                  "agnostic.multiprocessing.cuda_ipc", "agnostic._backends.numba_kernels",
                  "agnostic._backends.numba_attention",
                  "agnostic._pytorch_names",  # PyTorch's names: read when a missing name's error is made
                  # the Array API namespace, built on the public API: loaded by Tensor.__array_namespace__
                  "agnostic.array_api", "agnostic.array_api._helpers", "agnostic.array_api._info",
                  "agnostic.array_api.linalg", "agnostic.array_api.fft"})


def _module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(name, path):
    """``(module-level imports, function-level imports)`` of agnostic modules, as sets of module names. Importing
    a submodule runs its packages first; a module's own packages are already being imported, so they don't count."""
    tree = ast.parse(path.read_text())
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    top = {id(node) for node in tree.body}
    outer, inner = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        targets = [target for target in targets if target in MODULES]
        if id(node) in top:
            for target in targets:  # with the packages that importing it runs first
                parts = target.split(".")
                outer |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
        else:
            inner.add(max(targets, key=len, default=None))
    own = {name} | {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
    return {t for t in outer if t in MODULES} - own, inner - own - {None}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycle():
    """One import cycle as a list of module names, or None."""
    state = {}

    def visit(name, trail):
        state[name] = "open"
        for target in sorted(GRAPH[name][0]):
            if state.get(target) == "open":
                return trail[trail.index(target):] + [target]
            if target not in state:
                found = visit(target, trail + [target])
                if found:
                    return found
        state[name] = "done"
        return None

    for name in sorted(GRAPH):
        if name not in state:
            found = visit(name, [name])
            if found:
                return found
    return None


def test_the_module_level_imports_form_a_dag():
    cycle = _cycle()
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_agnostic_modules_import_each_other_at_module_level():
    deferred = sorted((name, target) for name, (outer, inner) in GRAPH.items() for target in inner - outer
                      if target not in LAZY)
    assert not deferred, f"function-level imports of agnostic modules (layer the modules instead): {deferred}"


def test_the_lazy_modules_are_not_loaded_by_import_agnostic():
    code = "import sys, agnostic; print(sorted(name for name in sys.modules if name in %r))" % sorted(LAZY)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.stdout.split() == ["[]"]
