"""The API reference names everything public, and every public name's docstring shows an example that runs.

The reference is built from the docstrings by ``mkdocs build --strict`` (``mkdocs.yml``; the ``docs`` extra, which the
``test`` extra includes); its objects inventory must list every public name. The examples are collected with
``doctest`` and run on the CPU (``ELLIPSIS``, ``NORMALIZE_WHITESPACE``); lines that need a GPU are marked
``# doctest: +SKIP``.
"""

import contextlib
import datetime
import doctest
import importlib
import inspect
import io
import pathlib
import subprocess
import sys

import pytest

import agnostic

ROOT = pathlib.Path(__file__).resolve().parents[1]

PUBLIC_MODULES = [
    "agnostic", "agnostic.autograd", "agnostic.nn", "agnostic.nn.functional", "agnostic.nn.init", "agnostic.optim",
    "agnostic.optim.lr_scheduler", "agnostic.utils.data", "agnostic.cuda", "agnostic.cuda.streams",
    "agnostic.cuda.graphs",
    "agnostic.cuda.memory", "agnostic.cuda.comm", "agnostic.cuda.nvtx", "agnostic.accelerator",
    "agnostic.multiprocessing", "agnostic.linalg", "agnostic.fft", "agnostic.special", "agnostic.nn.utils",
    "agnostic.nn.utils.rnn", "agnostic.nn.utils.parametrizations", "agnostic.amp", "agnostic.cuda.amp",
    "agnostic.nn.parallel", "agnostic.distributed", "agnostic.serialization", "agnostic.utils.dlpack",
    "agnostic.utils.safetensors", "agnostic.backends", "agnostic.backends.cuda", "agnostic.backends.cudnn",
    "agnostic.array_api", "agnostic.array_api.linalg", "agnostic.array_api.fft", "agnostic.optim.swa_utils",
    "agnostic.nn.utils.parametrize", "agnostic.nn.utils.stateless", "agnostic.autograd.anomaly_mode",
    "agnostic.func", "agnostic.sparse", "agnostic.storage", "agnostic.cuda.random", "agnostic.cuda.profiler",
    "agnostic.cuda.jiterator", "agnostic.cuda.nccl", "agnostic.nn.grad",
]
# Python's plumbing on Tensor, not API: no docstring of their own, and not listed in the reference.
TENSOR_PLUMBING = {"__dict__", "__doc__", "__module__", "__slots__", "__weakref__", "__init_subclass__",
                   "__array_priority__"}


def public_names(module_name):
    """The public names of a module: its ``__all__``, or (``agnostic`` itself) every name without ``_`` that isn't
    a module, or (a module without ``__all__``) the names without ``_`` of the objects it defines."""
    module = importlib.import_module(module_name)
    if hasattr(module, "__all__"):
        names = list(module.__all__)
    else:
        names = [name for name in dir(module) if not name.startswith("_")]
        if module_name != "agnostic":
            names = [name for name in names if getattr(getattr(module, name), "__module__", None) == module_name]
    return sorted(name for name in names if not inspect.ismodule(getattr(module, name)))


def tensor_names():
    """Tensor's public methods and properties, and the operators and Python protocols agnostic defines on it."""
    names = {name for name in dir(agnostic.Tensor) if not name.startswith("_")}
    for klass in agnostic.Tensor.__mro__[:-1]:
        names |= {name for name in vars(klass) if name.startswith("__") and name.endswith("__")}
    return sorted(names - TENSOR_PLUMBING)


def public_objects():
    """``{qualified name: object}`` of everything public (properties as the property object)."""
    objects = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in public_names(module_name):
            objects[f"{module_name}.{name}"] = getattr(module, name)
    for name in tensor_names():
        objects[f"agnostic.Tensor.{name}"] = inspect.getattr_static(agnostic.Tensor, name)
    return objects


def _docstring(obj):
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    return inspect.cleandoc(getattr(obj, "__doc__", None) or "")


def _from_python(obj):
    """Names ``agnostic.multiprocessing`` re-exports from the standard library keep Python's own docstrings."""
    function = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    module = getattr(function, "__module__", None) or type(obj).__module__
    return callable(function) and not module.startswith("agnostic")


def _plain_value(obj):
    """Numbers, strings, None and durations (``array_api.pi``, ``backends.cudnn.benchmark``) can't carry a docstring
    of their own: their module's documents them."""
    return isinstance(obj, (bool, int, float, str, type(None), datetime.timedelta))


def _without_example():
    return {name for name, obj in public_objects().items()
            if not _from_python(obj) and not _plain_value(obj) and ">>>" not in _docstring(obj)}


# ----- the reference ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference_inventory(tmp_path_factory):
    """The objects inventory of a fresh ``mkdocs build --strict`` (which fails on any warning)."""
    for module, what in (("mkdocs", "mkdocs"), ("mkdocstrings_handlers.python", "mkdocstrings-python")):
        pytest.importorskip(module, reason=f"{what} is not installed: pip install -e '.[docs]' builds the reference")
    from mkdocstrings import Inventory

    site = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(site)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    with open(site / "objects.inv", "rb") as file:
        return set(Inventory.parse_sphinx(file))


def test_the_reference_lists_every_public_name(reference_inventory):
    expected = set(public_objects())
    # mkdocs.yml merges __init__ into its class (the signature shown is the constructor's).
    expected -= {"agnostic.Tensor.__init__"}
    missing = sorted(expected - reference_inventory)
    assert not missing, f"missing from the API reference (see mkdocs.yml and docs/reference/): {missing}"


def test_public_names_cover_the_modules_the_reference_documents():
    """Each public module has a reference page, and the public names include what the issue names."""
    pages = {path.read_text().split("\n::: ", 1)[1].split()[0] for path in (ROOT / "docs" / "reference").glob("*.md")}
    assert set(PUBLIC_MODULES) | {"agnostic.Tensor"} <= pages
    names = public_objects()
    for name in ("agnostic.zeros", "agnostic.add", "agnostic.save", "agnostic.load", "agnostic.float32",
                 "agnostic.Tensor.__add__", "agnostic.Tensor.grad", "agnostic.nn.Linear", "agnostic.cuda.Stream",
                 "agnostic.cuda.memory.memory_stats", "agnostic.multiprocessing.Queue"):
        assert name in names, name
    assert "agnostic.cuda.comm.defaultdict" not in names and "agnostic.nn" not in names


# ----- examples --------------------------------------------------------------------------------------------------


def test_every_public_name_has_an_example():
    missing = sorted(_without_example())
    assert not missing, (
        "these public names have no '>>>' example in their docstring (write one, PyTorch-style, and run it): "
        f"{missing}"
    )


@contextlib.contextmanager
def _global_state_restored():
    """Examples may seed, change the default dtype or device, the grad mode or the CPU threads: undo it."""
    dtype, device, rng = agnostic.get_default_dtype(), agnostic.get_default_device(), agnostic.get_rng_state()
    grad, threads = agnostic.is_grad_enabled(), agnostic.get_num_threads()
    cuda_rng = agnostic.cuda.get_rng_state_all() if agnostic.cuda.is_available() else None
    try:
        yield
    finally:
        agnostic.set_default_dtype(dtype)
        agnostic.set_default_device(device)
        agnostic.set_rng_state(rng)
        if cuda_rng is not None:
            agnostic.cuda.set_rng_state_all(cuda_rng)
        agnostic.set_grad_enabled(grad)
        if agnostic.get_num_threads() != threads:
            agnostic.set_num_threads(threads)


def _examples_of(module_name):
    """One doctest per distinct docstring of the public names under ``module_name`` (Tensor: ``agnostic.Tensor``)."""
    parser, tests, seen = doctest.DocTestParser(), [], set()
    for name, obj in public_objects().items():
        owner = name.rsplit(".", 1)[0]
        if owner != module_name or _from_python(obj):
            continue
        text = _docstring(obj)
        if ">>>" in text and text not in seen:
            seen.add(text)
            tests.append(parser.get_doctest(text, {"agnostic": agnostic}, name, None, 0))
    return tests


@pytest.mark.parametrize("module_name", PUBLIC_MODULES + ["agnostic.Tensor"])
def test_examples_run_and_print_what_they_show(module_name):
    tests = _examples_of(module_name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    failures = []
    for test in tests:
        runner, report = doctest.DocTestRunner(optionflags=flags), io.StringIO()
        with _global_state_restored():
            result = runner.run(test, out=report.write)
        if result.failed:
            failures.append(f"{test.name}:\n{report.getvalue()}")
    assert not failures, f"{len(failures)} of {len(tests)} examples failed:\n" + "\n".join(failures)
