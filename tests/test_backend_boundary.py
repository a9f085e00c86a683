"""The backend layer owns the devices: outside it (``agnostic/_backends/``, its facade ``agnostic/_backend.py``,
``agnostic/_device.py`` which gives each device its backend) and the CUDA runtime (``agnostic/cuda/``, and CUDA's
process-sharing protocol ``agnostic/multiprocessing/cuda_ipc.py``), no module imports CuPy, asks for it, or branches
on the device type. Code elsewhere asks ``device.backend`` (its ``xp``, ``activate()``, ``run``, ``ops``...) and
its capabilities (``host``), so that a device's differences live in one place."""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "agnostic"
LAYER = ("_backends/", "_backend.py", "_device.py", "cuda/", "multiprocessing/cuda_ipc.py", "distributed/_nccl.py")
DEVICE_TYPES = {"cpu", "cuda"}


def _outside_the_layer():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(LAYER):
            yield relative, ast.parse(path.read_text(), relative)


def _is_device_type_test(node):
    """``x.type == "cuda"``, ``device is CPU``, ``xp is numpy`` and their negations."""
    if not isinstance(node, ast.Compare):
        return False
    operands = [node.left, *node.comparators]
    names = {operand.id for operand in operands if isinstance(operand, ast.Name)}
    if names & {"CPU"} or {"xp", "numpy"} <= names:
        return True
    strings = {operand.value for operand in operands if isinstance(operand, ast.Constant)}
    typed = any(isinstance(operand, ast.Attribute) and operand.attr in ("type", "device_type") for operand in operands)
    return typed and bool(strings & DEVICE_TYPES)


def _branch_tests(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs


def test_no_module_outside_the_backend_layer_branches_on_the_device_type():
    found = [
        f"{relative}:{compare.lineno}: {ast.unparse(compare)}"
        for relative, tree in _outside_the_layer()
        for test in _branch_tests(tree)
        for compare in ast.walk(test)
        if _is_device_type_test(compare)
    ]
    assert not found, "device-type branches outside the backend layer (ask device.backend instead):\n" + \
        "\n".join(found)


def test_no_module_outside_the_backend_layer_imports_or_asks_for_cupy():
    found = []
    for relative, tree in _outside_the_layer():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                modules = [node.module or ""]
            elif isinstance(node, ast.Attribute) and node.attr == "require_cupy":
                modules = ["require_cupy"]
            else:
                continue
            found += [f"{relative}:{node.lineno}: {module}" for module in modules
                      if module.split(".")[0] in ("cupy", "cupyx", "require_cupy")]
    assert not found, "CuPy used outside the backend layer:\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("if device is CPU: pass", True),
    ("if tensor.device.type == 'cuda': pass", True),
    ("x = a if xp is numpy else b", True),
    ("if device.backend.host: pass", False),
    ("is_cuda = device.type == 'cuda'", False),  # a predicate's value, not a branch
])
def test_the_branch_finder_finds_branches(source, expected):
    tree = ast.parse(source)
    assert any(_is_device_type_test(c) for t in _branch_tests(tree) for c in ast.walk(t)) is expected


# The row kernels a backend has when its ops module says ROW_KERNELS (softmax and layer_norm over the last dimension).
ROW_KERNELS = {"softmax_rows", "softmax_backward_rows", "layer_norm_rows", "layer_norm_backward_rows"}
# The fused attention a backend has when its ops module says ATTENTION_KERNELS.
ATTENTION_KERNELS = {"attention_fits", "attention_forward", "attention_backward"}


def test_the_cpu_and_cuda_backends_offer_the_same_operations():
    from agnostic._backends import cpu, cpu_ops, cuda, cuda_ops

    def public(namespace):
        return {name for name, value in vars(namespace).items() if callable(value) and not name.startswith("_")
                and getattr(value, "__module__", namespace.__name__) == namespace.__name__}

    # The multi-tensor launch (and the upload of its pointer table inside a CUDA graph capture) exists where the
    # backend says it has multi-tensor kernels; the rest on both.
    multi_tensor = {"multi_tensor_apply", "captured_upload"}
    for ops in (cpu_ops, cuda_ops):
        assert multi_tensor.isdisjoint(public(ops)) is not ops.MULTI_TENSOR_KERNELS
        assert ROW_KERNELS.isdisjoint(public(ops)) is not ops.ROW_KERNELS
        assert ATTENTION_KERNELS.isdisjoint(public(ops)) is not ops.ATTENTION_KERNELS
    optional = multi_tensor | ROW_KERNELS | ATTENTION_KERNELS
    assert public(cpu_ops) - optional == public(cuda_ops) - optional

    assert {n for n in vars(cpu.CPUBackend) if not n.startswith("_")} == \
        {n for n in vars(cuda.CUDABackend) if not n.startswith("_")}
