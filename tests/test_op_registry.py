"""The op registry: every declared op becomes a function, a method, an in-place method and its operators with real
signatures, names and working docstring examples, and its cached plans follow the default dtype and tensor kinds."""

import inspect
import re

import numpy as np
import pytest

import agnostic
from agnostic.ops._registry import OPS

DECLARED = sorted({op.name: op for op in OPS.values()}.values(), key=lambda op: op.name)


def test_functions_and_methods_have_the_declared_signatures():
    assert str(inspect.signature(agnostic.add)) == "(input, other, *, alpha=1, out=None)"
    assert str(inspect.signature(agnostic.exp)) == "(input, *, out=None)"
    assert str(inspect.signature(agnostic.Tensor.add)) == "(self, other, *, alpha=1)"
    assert str(inspect.signature(agnostic.Tensor.mul_)) == "(self, other)"
    assert agnostic.add.__name__ == "add" and agnostic.Tensor.__radd__.__name__ == "__radd__"
    assert repr(agnostic.add).startswith("<function add ")


@pytest.mark.parametrize("op", DECLARED, ids=[op.name for op in DECLARED])
def test_every_op_documents_a_working_example(op):
    """Each docstring's ``>>>`` example prints what it says (the same numbers as PyTorch's for that call)."""
    lines = [line.strip() for line in op.doc.splitlines()] + [""]
    examples = [(line[4:], " ".join(_printed_after(lines, i))) for i, line in enumerate(lines)
                if line.startswith(">>> ")]
    assert examples, f"{op.name}'s docstring has no example"
    namespace = {"agnostic": agnostic}
    for source, printed in examples:
        try:
            code = compile(source, "<example>", "eval")
        except SyntaxError:  # a statement (``L = ...``): it prints nothing, and later lines may use what it binds
            exec(source, namespace)
            assert not printed, f"{source} is a statement, but the docstring shows it printing {printed}"
            continue
        result = eval(code, namespace)
        assert _squeezed(repr(result)) == _squeezed(printed), f"{source} printed {result!r}"


def _printed_after(lines, i):
    """The lines an example at ``lines[i]`` prints: those after it, up to a blank line or the next example."""
    printed = []
    for line in lines[i + 1:]:
        if not line or line.startswith(">>> "):
            break
        printed.append(line)
    return printed


def _squeezed(text):
    return re.sub(r"\s+", " ", text.replace("[ ", "[")).strip()


def test_division_with_rounding_modes_keeps_integers_exact():
    """Truncating division of integers divides integers (no float32 round trip, which loses digits past 2**24)."""
    big = agnostic.tensor([2**40 + 1, -(2**40 + 1)])
    assert agnostic.div(big, 2, rounding_mode="trunc").tolist() == [2**39, -(2**39)]
    assert agnostic.div(big, 2, rounding_mode="floor").tolist() == [2**39, -(2**39) - 1]


def test_plans_follow_the_default_dtype():
    integers = agnostic.tensor([1, 2])
    assert (integers / 2).dtype is agnostic.float32
    agnostic.set_default_dtype(agnostic.float64)
    try:
        assert (integers / 2).dtype is agnostic.float64
        assert (agnostic.ones(2, dtype=agnostic.float16) + 1.5).dtype is agnostic.float16
    finally:
        agnostic.set_default_dtype(agnostic.float32)
    assert (integers / 2).dtype is agnostic.float32


def test_in_place_ops_write_into_self(device):
    x = agnostic.ones(4, device=device)
    pointer = x.data_ptr()
    x.add_(agnostic.full((4,), 2.0, device=device))
    x.mul_(3)
    x += 1
    assert x.data_ptr() == pointer and x.tolist() == [10.0] * 4


def test_in_place_on_a_parameter_without_grad_writes_into_it(device):
    weight = agnostic.nn.Parameter(agnostic.ones(3, device=device))
    pointer = weight.data_ptr()
    with agnostic.no_grad():
        weight.sub_(agnostic.ones(3, device=device), alpha=0.5)
    assert weight.data_ptr() == pointer and weight.tolist() == [0.5] * 3 and weight.requires_grad


def test_operands_of_other_types_are_refused_clearly():
    x = agnostic.ones(2)
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError, match="other must be a Tensor or a Python number"):
        agnostic.add(x, "a")
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        agnostic.exp(1.0)
    assert (x + np.float32(2)).tolist() == [3.0, 3.0]
    assert (np.ones(2) + x).tolist() == [2.0, 2.0]


def test_out_with_a_tensor_that_requires_grad_is_refused():
    leaf = agnostic.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        agnostic.mul(leaf, 2, out=agnostic.empty(2))


def test_the_where_method_sends_the_gradient_to_self(device):
    """``x.where(condition, y)`` is ``where(condition, x, y)``: its gradient reaches ``x`` (bound by name, not by
    position, where the method's order differs from the function's)."""
    x = agnostic.tensor([1.0, 2.0], device=device, requires_grad=True)
    other = agnostic.tensor([5.0, 6.0], device=device, requires_grad=True)
    (x.where(agnostic.tensor([True, False], device=device), other) * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 0.0] and other.grad.tolist() == [0.0, 3.0]


def test_composites_record_one_node_named_after_the_op():
    x = agnostic.ones(3, requires_grad=True)
    assert agnostic.clamp(x, 0, 1).grad_fn.name() == "ClampBackward0"
    assert x.softmax(0).grad_fn.name() == "SoftmaxBackward0"
    assert agnostic.clip(x, min=0.5).grad_fn.name() == "ClampBackward0"


def test_the_package_all_is_every_public_name_and_every_declared_op():
    public = {name for name in dir(agnostic) if not name.startswith("_")
              and not inspect.ismodule(getattr(agnostic, name))}
    assert set(agnostic.__all__) == public
    assert set(OPS) <= set(agnostic.__all__)
    assert {"add", "sum", "cat", "matmul", "Tensor", "float32", "FloatTensor"} <= set(agnostic.__all__)
