"""agnostic.backends: PyTorch's flags, settable as module attributes, with PyTorch's defaults and errors."""

import os
import warnings

import pytest

import agnostic
import agnostic.backends as backends


@pytest.fixture(autouse=True)
def restore_flags():
    saved = dict(backends._flags.settings)
    cudnn = {name: getattr(backends.cudnn, name) for name in ("enabled", "benchmark", "deterministic", "allow_tf32")}
    tf32 = os.environ.get("CUPY_TF32")
    yield
    backends._flags.settings.update(saved)
    for name, value in cudnn.items():
        setattr(backends.cudnn, name, value)
    if tf32 is None:
        os.environ.pop("CUPY_TF32", None)
    else:
        os.environ["CUPY_TF32"] = tf32


def test_defaults_are_pytorchs():
    assert backends.cudnn.enabled is True and backends.cudnn.allow_tf32 is True
    assert backends.cudnn.benchmark is False and backends.cudnn.deterministic is False
    assert backends.cuda.matmul.allow_tf32 is False
    assert backends.cuda.matmul.allow_fp16_reduced_precision_reduction is True
    assert backends.get_float32_matmul_precision() == "highest"


def test_cudnn_flags_are_settable():
    backends.cudnn.benchmark = True
    backends.cudnn.deterministic = True
    assert backends.cudnn.benchmark is True and backends.cudnn.deterministic is True


def test_cudnn_flags_context_restores():
    with backends.cudnn.flags(enabled=False, benchmark=True):
        assert backends.cudnn.enabled is False and backends.cudnn.benchmark is True
    assert backends.cudnn.enabled is True and backends.cudnn.benchmark is False


def test_matmul_allow_tf32_ties_to_precision_and_cupy_switch():
    backends.cuda.matmul.allow_tf32 = True
    assert backends.get_float32_matmul_precision() == "high"
    assert os.environ["CUPY_TF32"] == "1"
    backends.set_float32_matmul_precision("highest")
    assert backends.cuda.matmul.allow_tf32 is False and os.environ["CUPY_TF32"] == "0"
    backends.set_float32_matmul_precision("medium")
    assert backends.cuda.matmul.allow_tf32 is True and backends.get_float32_matmul_precision() == "medium"


def test_bad_precision_warns_and_changes_nothing():
    with pytest.warns(UserWarning, match="no effect"):
        backends.set_float32_matmul_precision("fast")
    assert backends.get_float32_matmul_precision() == "highest"


def test_matmul_unknown_attribute_and_non_bool():
    with pytest.raises(AttributeError, match="Unknown attribute"):
        backends.cuda.matmul.allow_tf16 = True
    with pytest.raises(AttributeError, match="Unknown attribute"):
        backends.cuda.matmul.allow_tf16
    with pytest.raises(TypeError):
        backends.cuda.matmul.allow_tf32 = 1
    backends.cuda.matmul.allow_bf16_reduced_precision_reduction = (False, True)
    assert backends.cuda.matmul.allow_bf16_reduced_precision_reduction is False


def test_availability_queries():
    assert backends.mps.is_available() is False and backends.mps.is_built() is False
    assert backends.cudnn.is_available() is False and backends.cudnn.version() is None
    assert backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    assert backends.cuda.is_built() == (__import__("importlib").util.find_spec("cupy") is not None)
    assert backends.mkldnn.is_available() is False and backends.openmp.is_available() is False


def test_preferred_linalg_library_records():
    assert backends.cuda.preferred_linalg_library() == "default"
    assert backends.cuda.preferred_linalg_library("cusolver") == "cusolver"
    with pytest.raises(RuntimeError, match="Choose from"):
        backends.cuda.preferred_linalg_library("lapack")


def test_matches_pytorch_precision_tie():
    torch = pytest.importorskip("torch")
    for precision in ("high", "medium", "highest"):
        torch.set_float32_matmul_precision(precision)
        backends.set_float32_matmul_precision(precision)
        assert backends.cuda.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
        assert backends.get_float32_matmul_precision() == torch.get_float32_matmul_precision()


def test_tf32_switch_takes_effect_on_cuda(device):
    if device.type != "cuda":
        pytest.skip("TF32 exists on CUDA only")
    # A float32 product is exact in float32 but not in TF32 (10 mantissa bits): 1 + 2**-12 rounds to 1 in TF32.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backends.cuda.matmul.allow_tf32 = False
    a = agnostic.full((64, 64), 1 + 2 ** -12, device=device)
    b = agnostic.ones(64, 64, device=device)
    assert (a @ b)[0, 0].item() == pytest.approx(64 * (1 + 2 ** -12), rel=1e-7)
