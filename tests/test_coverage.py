"""The coverage page of PyTorch's API is current, and a PyTorch name agnostic lacks raises an AttributeError that
says so and where the supported names are listed (never a bare "has no attribute")."""

import pytest

import agnostic
from agnostic import _coverage


def test_coverage_page_is_current():
    assert _coverage.PAGE.read_text() == _coverage.coverage_page(), \
        "docs/guide/coverage.md is stale: run python docs/coverage.py"


@pytest.mark.parametrize("module, name, says", [
    (agnostic, "jit", "agnostic does not provide TorchScript (torch.jit)"),
    (agnostic, "quantize_per_tensor", "agnostic does not provide quantization"),
    (agnostic, "onnx", "agnostic does not provide ONNX export (torch.onnx)"),
    (agnostic.nn, "Container", "agnostic does not provide torch.nn.Container"),
    (agnostic.optim, "swap_in_optimizer_params_and_state",
     "agnostic does not provide torch.optim.swap_in_optimizer_params_and_state"),
])
def test_a_missing_pytorch_name_says_what_and_where(module, name, says):
    with pytest.raises(AttributeError, match="has no attribute") as raised:
        getattr(module, name)
    message = str(raised.value)
    assert says in message and "docs/guide/coverage.md" in message
    assert not hasattr(module, name)  # hasattr and getattr(..., default) keep working


def test_a_name_pytorch_lacks_too_is_a_plain_attribute_error():
    with pytest.raises(AttributeError) as raised:
        agnostic.no_such_name
    assert str(raised.value) == "module 'agnostic' has no attribute 'no_such_name'"


def test_import_agnostic_does_not_read_the_pytorch_name_table():
    import subprocess
    import sys

    code = "import sys, agnostic; print('agnostic._pytorch_names' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
