"""Conversions between dtypes (``agnostic._conversion``): the values PyTorch gives, the same on every device, for
floats outside an integer type's range (where C leaves the result undefined and NumPy and CuPy differ) and for
float64 to float16 (rounded through float32, as PyTorch)."""

import math
import platform

import numpy
import pytest

import agnostic
from agnostic import _conversion
from agnostic._backends import cpu_ops

from conftest import CUDA_DEVICES

torch = pytest.importorskip("torch")

INTEGERS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "float32", "float64")
X86 = platform.machine() in ("x86_64", "AMD64")

SPECIALS = [0.0, -0.0, 0.5, -0.5, -1.0, -1.5, 127.5, 128.0, -129.0, 200.0, 255.9, 256.0, 300.0, -300.0, 32768.0,
            -32769.0, 65504.0, -65504.0, 70000.0, -40000.0, 1e10, -1e10, 2.0 ** 31, -2.0 ** 31, 2.0 ** 31 + 2 ** 20,
            -2.0 ** 31 - 2 ** 20, 2.0 ** 32 + 2 ** 24, 2.0 ** 53 + 2, 2.0 ** 63, -2.0 ** 63, 2.0 ** 63 - 2 ** 40,
            2.0 ** 64, 1e30, -1e30, numpy.inf, -numpy.inf, numpy.nan]


def pytorch_rule(values, target):
    """PyTorch's CPU conversion, from its rule (c10's ``static_cast_with_inter_type`` on x86-64), in Python ints:
    through int64 for uint8 and int64, through int32 for the others; outside that range (NaN too), its minimum."""
    bits = numpy.iinfo(target).bits
    wide = 64 if target in ("uint8", "int64") else 32
    out = []
    with numpy.errstate(invalid="ignore"):  # random bit patterns include signalling NaNs
        values = numpy.asarray(values, numpy.float64)
    for value in values.tolist():
        inside = not math.isnan(value) and -2.0 ** (wide - 1) <= value < 2.0 ** (wide - 1)
        integer = int(value) if inside else -2 ** (wide - 1)
        integer %= 2 ** bits
        if target != "uint8" and integer >= 2 ** (bits - 1):
            integer -= 2 ** bits
        out.append(integer)
    return numpy.array(out, dtype=target)


def operands(source, rng):
    """The specials in ``source`` plus random bit patterns of it (NaNs, infinities and huge values included)."""
    dtype = numpy.dtype(source)
    with numpy.errstate(over="ignore"):
        specials = numpy.array(SPECIALS, numpy.float64).astype(dtype)
    bits = rng.integers(0, 2 ** (8 * dtype.itemsize), 4096, dtype=numpy.uint64).astype(f"u{dtype.itemsize}")
    return numpy.concatenate([specials, bits.view(dtype)])


def torch_converted(array, target):
    """PyTorch's CPU conversion of ``array``, contiguous (its vectorized loop) and strided (its scalar loop)."""
    tensor = torch.from_numpy(array)
    torch_dtype = getattr(torch, target)
    return tensor.to(torch_dtype).numpy(), tensor.repeat_interleave(2)[::2].to(torch_dtype).numpy()


@pytest.mark.parametrize("target", INTEGERS)
@pytest.mark.parametrize("source", FLOATS)
def test_float_to_integer_is_pytorchs_rule(source, target):
    values = operands(source, numpy.random.default_rng(0))
    expected = pytorch_rule(values, target)
    numpy.testing.assert_array_equal(_conversion.convert(numpy, values, numpy.dtype(target)), expected)
    numpy.testing.assert_array_equal(cpu_ops.convert(values, numpy.dtype(target)), expected)
    with numpy.errstate(invalid="ignore"):
        inside = numpy.isfinite(values) & (numpy.abs(values.astype(numpy.float64)) < 2.0 ** 31)
    numpy.testing.assert_array_equal(cpu_ops.convert(values[inside], numpy.dtype(target)), expected[inside])


@pytest.mark.skipif(not X86, reason="PyTorch's CPU converts out-of-range floats as its machine does: x86-64's here")
@pytest.mark.parametrize("target", INTEGERS)
@pytest.mark.parametrize("source", FLOATS)
def test_the_rule_is_what_pytorchs_cpu_gives(source, target):
    values = operands(source, numpy.random.default_rng(1))
    for converted in torch_converted(values, target):
        numpy.testing.assert_array_equal(converted, pytorch_rule(values, target))


def test_negative_float16_into_uint8_is_255_on_every_device(device):
    """The GPU property run's draw: float16 -1.0 copied into uint8 gave 255 on the CPU and 0 on CUDA."""
    source = agnostic.tensor([-1.0, -2.5, 300.0], dtype=agnostic.float16, device=device)
    target = agnostic.zeros(3, dtype=agnostic.uint8, device=device)
    assert target.copy_(source).tolist() == [255, 254, 44]
    assert source.to(agnostic.uint8).tolist() == [255, 254, 44]
    assert source.byte().tolist() == [255, 254, 44]


@pytest.mark.parametrize("target", INTEGERS)
@pytest.mark.parametrize("source", FLOATS)
def test_to_and_copy_give_the_rule_on_every_device(source, target, device):
    values = operands(source, numpy.random.default_rng(2))
    expected = pytorch_rule(values, target)
    tensor = agnostic.tensor(values, device=device)
    numpy.testing.assert_array_equal(tensor.to(getattr(agnostic, target)).cpu().numpy(), expected)
    into = agnostic.zeros(len(values), dtype=getattr(agnostic, target), device=device)
    numpy.testing.assert_array_equal(into.copy_(tensor).cpu().numpy(), expected)
    for other in agnostic.device("cpu"), *map(agnostic.device, CUDA_DEVICES):
        across = agnostic.zeros(len(values), dtype=getattr(agnostic, target), device=other)
        numpy.testing.assert_array_equal(across.copy_(tensor).cpu().numpy(), expected)


def test_float64_to_float16_rounds_through_float32(device):
    """1 + 2**-11 + 2**-40 is just above a float16 tie, but float32 rounds it onto the tie, which goes to even:
    PyTorch gives 1.0 (c10::Half is made from a float), direct rounding 1.0009765625."""
    values = numpy.array([1 + 2 ** -11 + 2 ** -40, -(1 + 2 ** -11 + 2 ** -40), 65519.99, 1e-300, 3.0])
    expected = torch.from_numpy(values).half().numpy()
    assert expected[0] == 1.0 and numpy.float16(values[0]) != 1.0
    tensor = agnostic.tensor(values, device=device)
    numpy.testing.assert_array_equal(tensor.half().cpu().numpy().view(numpy.uint16), expected.view(numpy.uint16))
    into = agnostic.zeros(len(values), dtype=agnostic.float16, device=device)
    numpy.testing.assert_array_equal(into.copy_(tensor).cpu().numpy().view(numpy.uint16),
                                     expected.view(numpy.uint16))


@pytest.mark.parametrize("target", INTEGERS)
@pytest.mark.parametrize("source", FLOATS)
def test_the_cuda_kernel_is_the_formula(source, target, cuda_device):
    """One kernel on CUDA, the same values as the formula run by CuPy (and as the CPU)."""
    from agnostic._backends import cuda_ops

    cupy = cuda_device.backend.xp
    values = operands(source, numpy.random.default_rng(3))
    with cuda_device.backend.activate():
        on_device = cupy.asarray(values)
        kernel = cuda_ops.convert(on_device, numpy.dtype(target)).get()
        formula = _conversion.convert(cupy, on_device, numpy.dtype(target)).get()
    numpy.testing.assert_array_equal(kernel, pytorch_rule(values, target))
    numpy.testing.assert_array_equal(formula, kernel)
