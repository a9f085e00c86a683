"""floor_divide, remainder, fmod and div's rounding modes give the same bits on every device: one algorithm
(``agnostic.ops._division``, checked against PyTorch in tests/test_division_algorithms.py), not each backend's own
formula. Also the scalar-truth rule of the logical ops, which the operator and function paths once disagreed on."""

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import agnostic
from _strategies import DEVICES, fewer_examples

DIVISIONS = {
    "floor_divide": agnostic.floor_divide,
    "remainder": agnostic.remainder,
    "fmod": agnostic.fmod,
    "div_trunc": lambda a, b: agnostic.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: agnostic.div(a, b, rounding_mode="floor"),
    "operator_mod": lambda a, b: a % b,
    "operator_floordiv": lambda a, b: a // b,
}
FLOATS = ("float16", "float32", "float64")
INTEGERS = ("uint8", "int8", "int16", "int32", "int64")


def _values(name):
    if name in FLOATS:
        # No subnormals: CuPy's kernels flush float32 subnormals to zero (-ftz=true), PyTorch's don't; that is a
        # difference of every CuPy op, not of these formulas.
        width = np.finfo(name).bits
        return st.floats(-1e4, 1e4, width=width, allow_subnormal=False) | st.sampled_from([0.0, -0.0, 1.0, -1.0])
    info = np.iinfo(name)
    return st.integers(int(info.min), int(info.max))


def _pairs(name):
    values = _values(name)
    shape = st.integers(1, 6).map(lambda n: (n,))
    return shape.flatmap(lambda s: st.tuples(hnp.arrays(name, s, elements=values),
                                             hnp.arrays(name, s, elements=values)))


def _bits(tensor):
    """The result's bit patterns, NaN payloads aside (x86 and CUDA make different NaNs for 0 / 0, as in PyTorch)
    and with subnormal results flushed to zero, as CuPy's kernels do (-ftz=true) to every float32 result."""
    array = tensor.cpu().numpy()
    if array.dtype.kind != "f":
        return array
    array = np.where(np.isnan(array), np.array(np.nan, array.dtype), array)
    if array.dtype == np.float32:
        array = np.where(np.abs(array) < np.finfo(array.dtype).tiny, np.copysign(np.float32(0), array), array)
    return array.view(f"u{array.dtype.itemsize}")


def _same_on_every_device(function, a, b):
    results = {}
    for device in DEVICES:
        results[device] = function(agnostic.tensor(a, device=device), agnostic.tensor(b, device=device))
    reference = _bits(results["cpu"])
    # Where the CPU's float32 result is subnormal, CUDA's is a zero whose sign its flushed intermediates gave
    # (remainder(-1.0, 1.3931e-38): fmod's -7.3e-39 flushes to -0.0, so -0.0 where the CPU gives +6.6e-39).
    sign = _SIGN_BITS.get(reference.dtype)
    subnormal = _subnormal(results["cpu"].numpy())
    for device, result in results.items():
        assert result.dtype is results["cpu"].dtype
        bits = _bits(result)
        if sign is not None and subnormal.any():
            bits, expected = np.where(subnormal, bits & ~sign, bits), np.where(subnormal, reference & ~sign, reference)
        else:
            expected = reference
        np.testing.assert_array_equal(bits, expected, err_msg=f"{device} vs cpu")
    return results["cpu"]


_SIGN_BITS = {np.dtype(np.uint32): np.uint32(1 << 31)}


def _subnormal(array):
    if array.dtype != np.float32:
        return np.zeros(array.shape, bool)
    return (array != 0) & (np.abs(array) < np.finfo(np.float32).tiny)


@pytest.mark.parametrize("name", FLOATS + INTEGERS)
@pytest.mark.parametrize("operation", DIVISIONS)
@fewer_examples()
@given(data=st.data())
def test_divisions_give_the_same_bits_on_every_device(operation, name, data):
    a, b = data.draw(_pairs(name))
    if name in INTEGERS:
        b = np.where(b == 0, 1, b).astype(name)  # integer division by zero raises (tested elsewhere)
    _same_on_every_device(DIVISIONS[operation], a, b)


@pytest.mark.parametrize("operation", DIVISIONS)
@given(a=st.floats(-10, 10, width=32, allow_subnormal=False), b=st.floats(-10, 10, width=32, allow_subnormal=False))
@example(a=1.0, b=0.33333334)  # CuPy's own remainder: -2.98e-08; NumPy's and PyTorch's: 0.3333333
@example(a=-1.0, b=0.33333334)
@example(a=0.0, b=-3.0)  # a zero remainder keeps the dividend's sign, as PyTorch's fmod-based formula
@example(a=-0.0, b=3.0)
@example(a=1.0, b=0.0)
@example(a=-1.0, b=1.3931011485682098e-38)  # a subnormal remainder (CUDA flushes it to zero)
def test_float32_divisions_match_every_device_at_near_integer_quotients(operation, a, b):
    _same_on_every_device(DIVISIONS[operation], np.array([a], "float32"), np.array([b], "float32"))


@pytest.mark.parametrize("operation", ["floor_divide", "div_floor", "div_trunc", "remainder", "fmod"])
def test_a_negative_zero_scalar_divisor_keeps_its_sign(operation, device):
    """``1 // -0.0`` is -inf (PyTorch: ``a / b`` where ``b == 0``) also on 0-dim CUDA tensors, where an upload of
    the scalar by a fill would have made it +0.0."""
    dividend = agnostic.tensor(1.0, dtype=agnostic.float16, device=device)
    expected = DIVISIONS[operation](agnostic.tensor(1.0, dtype=agnostic.float16), agnostic.tensor(-0.0,
                                                                                                 dtype=agnostic.float16))
    result = DIVISIONS[operation](dividend, -0.0)
    np.testing.assert_array_equal(_bits(result), _bits(expected))


def test_remainder_of_one_by_a_third_is_pytorchs(device):
    """``torch.remainder(True, tensor(0.33333334))`` is 0.3333333 on PyTorch's CPU and CUDA alike."""
    result = agnostic.remainder(True, agnostic.tensor(0.33333334, device=device))
    assert result.item() == pytest.approx(0.3333333, abs=1e-7)
    assert result.item() > 0


def test_floor_division_steps_down_where_the_quotient_rounds_up(device):
    """float32 1 / 0.33333334 rounds to 3.0, but the exact quotient is below 3: PyTorch's floor division says 2."""
    result = agnostic.floor_divide(agnostic.tensor([1.0], device=device), 0.33333334)
    assert result.tolist() == [2.0]


@pytest.mark.parametrize("operation", ["logical_or", "logical_and", "logical_xor"])
def test_logical_ops_take_a_scalars_truth_in_the_tensors_dtype(operation, device):
    """PyTorch turns the scalar into the tensor's dtype first: 1e-14 is 0 in float16, so it is false, whichever
    path (function or method) the call takes."""
    zeros = agnostic.zeros(3, dtype=agnostic.float16, device=device)
    function = getattr(agnostic, operation)
    expected = getattr(np, operation)(np.zeros(3), 0.0).tolist()
    assert function(zeros, 1e-14).tolist() == expected
    assert getattr(zeros, operation)(1e-14).tolist() == expected
    assert function(1e-14, zeros).tolist() == expected


@pytest.mark.parametrize("divisor", [0, False, 0j])
def test_complex_division_by_zero_is_pytorchs_on_every_device(divisor, device):
    """PyTorch's complex division (Smith's algorithm, c10::complex) gives ``(1+1j) / 0 == inf+infj`` on the CPU and
    CUDA alike; CuPy's own complex division gives NaN there."""
    dividend = agnostic.tensor([1 + 1j, -2 + 0.5j], dtype=agnostic.complex64, device=device)
    assert (dividend / divisor).tolist() == [complex(np.inf, np.inf), complex(-np.inf, np.inf)]
    zero = agnostic.zeros(2, dtype=agnostic.complex64, device=device)
    assert agnostic.div(dividend, zero).tolist() == [complex(np.inf, np.inf), complex(-np.inf, np.inf)]


_PARTS = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)  # CuPy flushes float32 subnormals (see _bits)


@given(a=st.builds(complex, _PARTS, _PARTS), b=st.builds(complex, _PARTS, _PARTS))
@example(a=1 + 1j, b=0j)
@example(a=1e-30 + 1e30j, b=1e30 + 1e-30j)
def test_complex_division_agrees_on_every_device(a, b):
    results = [agnostic.tensor([a], dtype=agnostic.complex64, device=device) /
               agnostic.tensor([b], dtype=agnostic.complex64, device=device) for device in DEVICES]
    reference = np.complex64(a) / np.complex64(b) if b != 0 else None
    for result in results:
        value = result.cpu().numpy()
        if reference is not None and np.isfinite(reference):
            np.testing.assert_allclose(value, [reference], rtol=1e-5, atol=1e-30)
        np.testing.assert_array_equal(np.isnan(value), np.isnan(results[0].cpu().numpy()))
