"""agnostic.array_api, the Python Array API standard namespace: how tensors reach it, where its semantics follow the
standard rather than PyTorch, and scikit-learn's estimators on agnostic tensors agreeing with NumPy's."""

import math
import os
import pathlib
import subprocess
import sys

import numpy
import pytest

import agnostic
import agnostic.array_api as xp

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_tensors_name_the_namespace_of_the_latest_revision(device):
    x = agnostic.ones(2, device=device)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ == "2024.12"
    with pytest.raises(ValueError, match="2099.12"):
        x.__array_namespace__(api_version="2099.12")


def test_the_array_attributes_of_the_standard(device):
    x = xp.asarray([[1.0, 2.0, 3.0]], device=device)
    assert x.to_device("cpu").device == agnostic.device("cpu")
    assert tuple(x.shape) == (1, 3) and x.ndim == 2
    assert tuple(x.mT.shape) == (3, 1)
    assert x.device == agnostic.device(device)


def test_the_inspection_object_describes_devices_and_dtypes():
    info = xp.__array_namespace_info__()
    assert info.capabilities()["boolean indexing"] is True
    assert info.default_device() == agnostic.get_default_device()
    assert info.devices()[0] == agnostic.device("cpu")
    assert info.default_dtypes()["indexing"] == xp.int64
    assert list(info.dtypes(kind="real floating").values()) == [xp.float32, xp.float64]
    assert set(info.dtypes(kind=("bool", "complex floating"))) == {"bool", "complex64", "complex128"}
    with pytest.raises(ValueError, match="unknown dtype kind"):
        info.dtypes(kind="floating")


def test_the_namespace_has_every_function_of_the_standard():
    expected = """abs acos acosh add all any arange argmax argmin argsort asarray asin asinh astype atan atan2 atanh
    bitwise_and bitwise_invert bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor broadcast_arrays
    broadcast_to can_cast ceil clip concat conj copysign cos cosh count_nonzero cumulative_prod cumulative_sum diff
    divide e empty empty_like equal exp expand_dims expm1 eye finfo flip floor floor_divide from_dlpack full
    full_like greater greater_equal hypot iinfo imag inf isdtype isfinite isinf isnan less less_equal linspace log
    log10 log1p log2 logaddexp logical_and logical_not logical_or logical_xor matmul matrix_transpose max maximum mean
    meshgrid min minimum moveaxis multiply nan negative newaxis nextafter nonzero not_equal ones ones_like permute_dims
    pi positive pow prod real reciprocal remainder repeat reshape result_type roll round searchsorted sign signbit sin
    sinh sqrt square squeeze stack std subtract sum take take_along_axis tan tanh tensordot tile tril triu trunc
    unique_all unique_counts unique_inverse unique_values unstack var vecdot where zeros zeros_like""".split()
    assert [name for name in expected if name not in xp.__all__] == []
    assert "matrix_norm" in xp.linalg.__all__ and "rfftfreq" in xp.fft.__all__


def test_0d_arrays_promote_like_any_other_array_unlike_pytorch(device):
    vector = agnostic.tensor([1, 2], dtype=agnostic.int8, device=device)
    scalar = agnostic.tensor(300, dtype=agnostic.int64, device=device)
    assert (vector + scalar).dtype == agnostic.int8  # PyTorch: the 0-D tensor takes the vector's dtype
    assert xp.add(vector, scalar).dtype == agnostic.int64
    assert xp.add(vector, scalar).tolist() == [301, 302]


def test_python_scalars_take_the_arrays_dtype_and_mixed_kinds_are_refused(device):
    x = xp.asarray([1, 2], dtype=xp.int16, device=device)
    assert xp.multiply(x, 3).dtype == xp.int16
    assert xp.multiply(2, x).tolist() == [2, 4]
    with pytest.raises(TypeError, match="promotion"):
        xp.add(x, xp.asarray([1.0], device=device))
    assert xp.result_type(xp.uint8, xp.int8) == xp.int16
    assert xp.can_cast(xp.int64, xp.float32) is False and agnostic.can_cast(agnostic.int64, agnostic.float32)


def test_reductions_take_axis_tuples_keepdims_and_empty_axes(device):
    values = numpy.arange(24, dtype=numpy.float64).reshape(2, 3, 4)
    x = xp.asarray(values, device=device)
    total = xp.sum(x, axis=(0, 2), keepdims=True)
    assert tuple(total.shape) == (1, 3, 1)
    numpy.testing.assert_allclose(total.cpu().numpy(), values.sum(axis=(0, 2), keepdims=True))
    numpy.testing.assert_allclose(xp.prod(x, axis=(1, 2)).cpu().numpy(), values.prod(axis=(1, 2)))
    numpy.testing.assert_allclose(xp.max(x, axis=()).cpu().numpy(), values)
    numpy.testing.assert_allclose(xp.std(x, axis=(0, 1), correction=1.5).cpu().numpy(),
                                  values.std(axis=(0, 1), ddof=1.5))
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int8, device=device)).dtype == xp.int64


def test_sort_returns_the_values_and_argsort_is_stable_descending(device):
    x = xp.asarray([3, 1, 3, 2, 1], device=device)
    assert xp.sort(x).tolist() == [1, 1, 2, 3, 3]
    assert xp.argsort(x, descending=True).tolist() == [0, 2, 3, 1, 4]


def test_unique_counts_every_nan_apart(device):
    x = xp.asarray([2.0, math.nan, 1.0, 2.0, math.nan], device=device)
    result = xp.unique_all(x)
    assert result.values.tolist()[:2] == [1.0, 2.0] and all(math.isnan(v) for v in result.values.tolist()[2:])
    assert result.counts.tolist() == [1, 2, 1, 1]
    assert result.indices.tolist()[:2] == [2, 0]
    assert xp.take(result.values, result.inverse_indices).tolist()[:4:3] == [2.0, 2.0]


def test_floor_divide_and_remainder_follow_the_standards_special_cases(device):
    x = xp.asarray([-1.0, 1.0, 7.0], device=device)
    quotients = xp.floor_divide(x, math.inf).tolist()  # NumPy and PyTorch give -1.0 for -1.0 // inf
    assert quotients == [0.0, 0.0, 0.0] and [math.copysign(1, q) for q in quotients] == [-1.0, 1.0, 1.0]
    assert xp.floor_divide(xp.asarray([math.inf], device=device), 2.0).tolist() == [math.inf]  # NumPy: nan
    assert xp.remainder(xp.asarray([-0.0], device=device), 3.0).tolist() == [0.0]
    assert math.copysign(1, xp.remainder(xp.asarray([-0.0], device=device), 3.0).tolist()[0]) == 1.0


def test_remainder_takes_the_divisors_sign_at_zeros_and_infinities_on_every_device(device):
    inf = math.inf
    x1 = numpy.array([0.0, -0.0, 3.0, -3.0, 3.0, -3.0, 5.5, -5.5, 7.0, inf, 1.0])
    x2 = numpy.array([-1.0, 1.0, inf, inf, -inf, -inf, 2.0, 2.0, -2.0, 2.0, 0.0])
    got = xp.remainder(xp.asarray(x1, device=device), xp.asarray(x2, device=device)).cpu().numpy()
    with numpy.errstate(invalid="ignore"):
        expected = numpy.remainder(x1, x2)  # the standard's table: x2's sign, x1 beside an infinite divisor
    numpy.testing.assert_array_equal(got, expected)
    assert numpy.array_equal(numpy.signbit(got), numpy.signbit(expected))


def test_complex_special_cases_follow_the_standard(device):
    inf = math.inf
    z = xp.asarray(numpy.array([complex(inf, 0.0), complex(-inf, inf), 0.5 + 0.25j]), device=device)
    result = xp.expm1(z).cpu().numpy()
    assert result[0] == complex(inf, 0.0) and math.copysign(1, result[0].imag) == 1
    assert result[1] == -1 + 0j
    numpy.testing.assert_allclose(result[2], numpy.exp(0.5 + 0.25j) - 1, rtol=1e-14)
    saturated = xp.tanh(xp.asarray(numpy.array([complex(inf, 2.0)]), device=device)).cpu().numpy()[0]
    assert saturated == 1 and math.copysign(1, saturated.imag) == 1  # NumPy: 1 - 0j, the sign of sin(4)


def test_complex_functions_give_c99s_values_at_infinities_and_nans_on_every_device(device):
    inf, nan = math.inf, math.nan
    cases = {  # C99 Annex G, which the standard and PyTorch's std::complex follow (CuPy's own functions differ)
        "log": [(complex(inf, nan), complex(inf, nan)), (complex(-inf, nan), complex(inf, nan)),
                (complex(nan, inf), complex(inf, nan))],
        "log1p": [(complex(inf, nan), complex(inf, nan)), (complex(nan, inf), complex(inf, nan))],
        "tanh": [(complex(0.0, inf), complex(0.0, nan)), (complex(-0.0, nan), complex(-0.0, nan))],
        "acosh": [(complex(0.0, nan), complex(nan, math.pi / 2))],
    }
    for name, pairs in cases.items():
        z = agnostic.tensor([value for value, _ in pairs], dtype=agnostic.complex128, device=device)
        got = getattr(agnostic, name)(z).cpu().numpy()
        expected = numpy.array([result for _, result in pairs])
        numpy.testing.assert_array_equal(got, expected, err_msg=name)
        assert numpy.array_equal(numpy.signbit(got.real), numpy.signbit(expected.real)), name


def test_reductions_honour_an_explicit_dtype(device):
    x = xp.asarray([200, 100], dtype=xp.uint8, device=device)
    assert xp.sum(x, dtype=xp.uint8).tolist() == 44  # wraps around in uint8, as asked
    assert xp.sum(x).tolist() == 300
    assert xp.cumulative_sum(x, dtype=xp.int16).dtype == xp.int16
    assert xp.vecdot(x, x).dtype == xp.uint8


def test_creation_functions_follow_the_standards_signatures(device):
    assert xp.arange(5, 1, device=device).shape == (0,)
    assert xp.eye(2, k=-2**70, device=device).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert xp.eye(2, 3, k=1, device=device).tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    assert xp.linspace(0, 1, 4, endpoint=False, device=device).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert xp.full(2, True, device=device).dtype == xp.bool
    shared = xp.asarray(numpy.zeros(3), copy=False)
    assert xp.asarray(shared, copy=False) is shared
    with pytest.raises(ValueError, match="copy"):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="copy"):
        xp.asarray(xp.ones(2, device=device), dtype=xp.float64, copy=False)


def test_finfo_and_iinfo_name_dtype_objects():
    assert xp.finfo(xp.complex128).dtype == xp.float64 and xp.finfo(xp.float32).bits == 32
    assert xp.iinfo(xp.int16).min == -32768 and xp.iinfo(xp.int16).dtype == xp.int16
    assert xp.isdtype(xp.uint8, "unsigned integer") and not xp.isdtype(xp.uint8, "signed integer")


def test_linalg_and_fft_extensions_match_numpy(device):
    rng = numpy.random.default_rng(0)
    matrix = rng.standard_normal((4, 4))
    x = xp.asarray(matrix, device=device)
    numpy.testing.assert_allclose(xp.linalg.solve(x, xp.asarray(matrix[0], device=device)).cpu().numpy(),
                                  numpy.linalg.solve(matrix, matrix[0]), rtol=1e-10)
    numpy.testing.assert_allclose(xp.linalg.trace(x).cpu().numpy(), numpy.trace(matrix))
    numpy.testing.assert_allclose(xp.linalg.vector_norm(x, axis=(0, 1)).cpu().numpy(), numpy.linalg.norm(matrix))
    numpy.testing.assert_allclose(xp.fft.rfft(x, axis=0).cpu().numpy(), numpy.fft.rfft(matrix, axis=0))


def test_gradients_flow_through_the_namespace(device):
    x = agnostic.tensor([1.0, 2.0, 3.0], device=device, requires_grad=True)
    xp.sum(xp.multiply(x, x), axis=0).backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_namespace_matches_pytorchs_values_where_they_agree(device):
    torch = pytest.importorskip("torch")
    values = numpy.random.default_rng(1).standard_normal((3, 5))
    x = xp.asarray(values, device=device)
    expected = torch.var(torch.asarray(values), dim=1, correction=0, keepdim=True).numpy()
    numpy.testing.assert_allclose(xp.var(x, axis=1, keepdims=True).cpu().numpy(), expected)
    expected = torch.logaddexp(torch.asarray(values), torch.asarray(values[::-1].copy())).numpy()
    numpy.testing.assert_allclose(xp.logaddexp(x, xp.asarray(values[::-1].copy(), device=device)).cpu().numpy(),
                                  expected)


def test_scikit_learn_estimators_on_tensors_equal_numpys(device):
    pytest.importorskip("sklearn")
    pytest.importorskip("array_api_compat")  # scikit-learn's dispatch goes through it
    # SCIPY_ARRAY_API must be set before SciPy is first imported: the example runs in a process of its own.
    env = dict(os.environ, SCIPY_ARRAY_API="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "sklearn_pca.py"), "--device", str(device)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"fitting on {device} with agnostic.Tensor inputs" in result.stdout
    assert "components match NumPy's (up to sign): True" in result.stdout
    assert "predictions match NumPy's: True" in result.stdout
    assert "| match NumPy's: True" in result.stdout
