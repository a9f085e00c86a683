"""``agnostic.ops._division`` with ``xp=numpy`` against PyTorch's CPU kernels, bit for bit (signed zeros count; any
NaN equals any NaN), for every integer and float dtype; on each GPU, the one-kernel forms (``cuda_kernels``) against
those formulas run by CuPy and by NumPy, and against PyTorch's CUDA."""

import itertools
import warnings

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from agnostic.ops import _division

torch = pytest.importorskip("torch")

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

FUNCTIONS = ("floor_divide", "remainder", "fmod", "trunc_divide")
TORCH_FUNCTIONS = {
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "trunc_divide": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
}
INTEGERS = ("uint8", "int8", "int16", "int32", "int64")
FLOATS = ("float16", "float32", "float64")
BFLOAT16 = pytest.param("bfloat16", marks=pytest.mark.skipif(ml_dtypes is None, reason="needs ml_dtypes"))

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def numpy_dtype(name):
    return numpy.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else numpy.dtype(name)


def bits_dtype(dtype):
    return numpy.dtype(f"u{dtype.itemsize}")


def to_torch(array):
    """A tensor of the same dtype and bits (through integers: torch.from_numpy knows no bfloat16)."""
    if array.dtype.kind in "iu":
        return torch.from_numpy(array)
    torch_dtype = getattr(torch, array.dtype.name)
    return torch.from_numpy(array.view(f"i{array.dtype.itemsize}")).view(torch_dtype)


def from_torch(tensor, dtype):
    if dtype.kind in "iu":
        return tensor.numpy()
    return tensor.view(getattr(torch, f"int{8 * dtype.itemsize}")).numpy().view(dtype)


def torch_result(name, a, b):
    """PyTorch's ``name`` of 1-d arrays, through the scalar loop of its CPU kernel (that of ``c10/util/
    generic_math.h``, which CUDA runs too): a stride of 2 keeps TensorIterator off the vectorized loop, whose Sleef
    fmod gives NaN once ``|a / b|`` overflows (pytorch/pytorch#193753), and a trailing pair (1, 1) off the path for
    a one-value divisor, which computes float16 in float32."""
    one = a.dtype.type(1)
    padded_a, padded_b = (to_torch(numpy.repeat(numpy.append(x, one), 2))[::2] for x in (a, b))
    return from_torch(TORCH_FUNCTIONS[name](padded_a, padded_b), a.dtype)[:-1]


def assert_same_bits(actual, expected, a, b, name):
    actual = numpy.asarray(actual)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape)
    different = actual.view(bits_dtype(actual.dtype)) != expected.view(bits_dtype(expected.dtype))
    if actual.dtype.kind not in "iu":
        both_nan = numpy.isnan(actual.astype(numpy.float64)) & numpy.isnan(expected.astype(numpy.float64))
        different &= ~both_nan
    if different.any():
        i = numpy.flatnonzero(different)[:5]
        raise AssertionError(f"{name}({a.dtype}): a={a[i]!r} b={b[i]!r} gave {actual[i]!r}, expected {expected[i]!r}")


def check_against_torch(a, b, names=FUNCTIONS):
    for name in names:
        if name == "trunc_divide" and a.dtype.itemsize >= 4 and a.dtype.kind == "i":
            # PyTorch's CPU trunc division of INT_MIN by -1 dies of SIGFPE: see test_integer_minimum_by_minus_one.
            keep = ~((a == numpy.iinfo(a.dtype).min) & (b == -1))
            a, b = a[keep], b[keep]
        assert_same_bits(getattr(_division, name)(numpy, a, b), torch_result(name, a, b), a, b, name)


def check_numpy_equivalents(a, b):
    for name, dtypes in _division.NUMPY_EQUIVALENTS.items():
        if a.dtype.name in dtypes:
            with numpy.errstate(all="ignore"):
                expected = getattr(numpy, name)(a, b)
            assert_same_bits(getattr(_division, name)(numpy, a, b), expected, a, b, f"{name} against numpy.{name}")


# ----- values ----------------------------------------------------------------------------------------------------
def float_specials(dtype):
    """Signed zeros, infinities, NaN, subnormals, the extremes, and quotients near integers."""
    info = numpy.finfo(dtype) if dtype.name != "bfloat16" else ml_dtypes.finfo(dtype)
    values = [0.0, -0.0, numpy.inf, -numpy.inf, numpy.nan, 1.0, -1.0, 0.5, -2.5, 3.0, -3.0, 7.5, 0.1,
              0.33333334, -0.33333334, 1e30, -1e30, 1e-30, -1e-30, 1e4, 65504.0]
    with numpy.errstate(all="ignore"):
        cast = [dtype.type(v) for v in values]
    cast += [info.max, -info.max, info.tiny, -info.tiny, info.smallest_subnormal, -info.smallest_subnormal,
             dtype.type(info.tiny) * dtype.type(3)]
    return numpy.array(cast, dtype=dtype)


def integer_specials(dtype):
    info = numpy.iinfo(dtype)
    values = {info.min, info.min + 1, info.max, info.max - 1, 0, 1, 2, 3, 7, 100, info.max // 2 + 1}
    if dtype.kind == "i":
        values |= {-1, -2, -3, -7, -100, info.min // 2}
    return numpy.array(sorted(values), dtype=dtype)


def all_pairs(values):
    a, b = zip(*itertools.product(values, repeat=2))
    return numpy.array(a, dtype=values.dtype), numpy.array(b, dtype=values.dtype)


@st.composite
def float_operands(draw, dtype):
    """Two 1-d arrays: any bit patterns, small multiples of 1/4, the specials, and dividends near integer
    multiples of their divisors (the cases where floor(a / b) and PyTorch's quotient part)."""
    bits, signed = bits_dtype(dtype), numpy.dtype(f"i{dtype.itemsize}")
    specials = float_specials(dtype).view(bits).tolist()
    quarters = (numpy.arange(-64, 65) / 4).astype(numpy.float32).astype(dtype).view(bits).tolist()
    value = st.one_of(st.integers(0, numpy.iinfo(bits).max), st.sampled_from(specials), st.sampled_from(quarters))
    size = draw(st.integers(1, 24))
    a, b = (numpy.array(draw(st.lists(value, min_size=size, max_size=size)), dtype=bits).view(dtype)
            for _ in range(2))
    if draw(st.booleans()):
        multiples = numpy.array(draw(st.lists(st.integers(-300, 300), min_size=size, max_size=size)), dtype=dtype)
        nudges = numpy.array(draw(st.lists(st.integers(-2, 2), min_size=size, max_size=size)), dtype=signed)
        with numpy.errstate(all="ignore"):
            a = ((multiples * b).view(signed) + nudges).view(dtype)
    return a, b


@st.composite
def integer_operands(draw, dtype):
    """Two 1-d arrays of any values, mixed with the extremes, -1 and small numbers; no zero divisor (PyTorch
    raises ZeroDivisionError)."""
    info = numpy.iinfo(dtype)
    value = st.one_of(st.integers(info.min, info.max), st.sampled_from(integer_specials(dtype).tolist()),
                      st.integers(max(info.min, -20), 20))
    size = draw(st.integers(1, 24))
    a = numpy.array(draw(st.lists(value, min_size=size, max_size=size)), dtype=dtype)
    b = numpy.array(draw(st.lists(value.filter(bool), min_size=size, max_size=size)), dtype=dtype)
    return a, b


# ----- against PyTorch -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", INTEGERS)
@given(data=st.data())
def test_integers_match_torch(dtype, data):
    a, b = data.draw(integer_operands(numpy.dtype(dtype)))
    check_against_torch(a, b)
    check_numpy_equivalents(a, b)


@pytest.mark.parametrize("dtype", [*FLOATS, BFLOAT16])
@given(data=st.data())
def test_floats_match_torch(dtype, data):
    a, b = data.draw(float_operands(numpy_dtype(dtype)))
    check_against_torch(a, b)
    check_numpy_equivalents(a, b)


@pytest.mark.parametrize("dtype", INTEGERS)
def test_integer_edge_cases_match_torch(dtype):
    a, b = all_pairs(integer_specials(numpy.dtype(dtype)))
    a, b = a[b != 0], b[b != 0]
    check_against_torch(a, b)
    check_numpy_equivalents(a, b)


@pytest.mark.parametrize("dtype", [*FLOATS, BFLOAT16])
def test_float_edge_cases_match_torch(dtype):
    """Every pair of ±0, ±inf, NaN, subnormals, huge and tiny values (1e30 / 1e-30 overflows), zero divisors."""
    a, b = all_pairs(float_specials(numpy_dtype(dtype)))
    check_against_torch(a, b)
    check_numpy_equivalents(a, b)


def test_near_integer_quotient():
    """1.0 / 0.33333334 rounds to 3.0 in float32, but 0.33333334 * 3 > 1: the floor is 2 and the remainder
    0.3333333 (CuPy's own remainder gives -2.98e-08)."""
    a, b = numpy.float32(1.0), numpy.float32(0.33333334)
    assert _division.floor_divide(numpy, a, b) == 2.0
    assert _division.remainder(numpy, a, b) == numpy.float32(0.3333333)
    assert _division.trunc_divide(numpy, a, b) == 3.0
    check_against_torch(numpy.array([a, -a, a, -a]), numpy.array([b, b, -b, -b]))


@pytest.mark.parametrize("dtype", ("int8", "int16", "int32", "int64"))
def test_integer_minimum_by_minus_one(dtype):
    """INT_MIN / -1 wraps to INT_MIN: PyTorch's floor_divide does for every width, and its trunc division for int8
    and int16 (for int32 and int64 its CPU kernel dies of SIGFPE, so check_against_torch does not ask it)."""
    a = numpy.array([numpy.iinfo(dtype).min], dtype=dtype)
    b = numpy.array([-1], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _division.floor_divide(numpy, a, b)[0] == a[0]
        assert _division.trunc_divide(numpy, a, b)[0] == a[0]
        assert _division.remainder(numpy, a, b)[0] == 0
        assert _division.fmod(numpy, a, b)[0] == 0
    check_against_torch(a, b)


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("name", FUNCTIONS)
def test_integer_zero_divisor_is_quiet(dtype, name):
    """Callers refuse integer division by zero first; the functions themselves neither fail nor warn."""
    a = integer_specials(numpy.dtype(dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = getattr(_division, name)(numpy, a, numpy.zeros_like(a))
    assert result.dtype == a.dtype and result.shape == a.shape


@pytest.mark.parametrize("dtype", [*INTEGERS, *FLOATS])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_shapes_dtypes_and_scalars(dtype, name):
    """Broadcasting, NumPy scalars and 0-d arrays; the result keeps the dtype."""
    a = numpy.arange(1, 13, dtype=dtype).reshape(3, 4)
    function = getattr(_division, name)
    assert function(numpy, a, numpy.array([3], dtype=dtype)).shape == (3, 4)
    assert function(numpy, a[:, :1], a[:1, :]).shape == (3, 4)
    for scalar in (numpy.dtype(dtype).type(5), numpy.array(5, dtype=dtype)):
        result = function(numpy, scalar, scalar)
        assert numpy.asarray(result).dtype == a.dtype and numpy.shape(result) == ()
        assert function(numpy, a, scalar).dtype == a.dtype


@pytest.mark.parametrize("dtype", ["float16", BFLOAT16])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_one_value_divisor_in_float32(dtype, name):
    """PyTorch's CPU kernels compute float16 and bfloat16 in float32 when the divisor is one broadcast value (a
    0-dim tensor here): the same functions on float32 arrays, cast back, give those bits."""
    dtype = numpy_dtype(dtype)
    a = numpy.random.default_rng(0).integers(0, 1 << 16, 4096, dtype=numpy.uint16).view(dtype)
    for divisor in (0.3333, -0.7, 3.0, 1e-3):
        b = numpy.array(divisor, dtype=dtype)
        expected = from_torch(TORCH_FUNCTIONS[name](to_torch(a)[::2], to_torch(b.reshape(1))[0]), dtype)
        with numpy.errstate(all="ignore"):
            actual = getattr(_division, name)(numpy, a[::2].astype(numpy.float32), b.astype(numpy.float32))
            assert_same_bits(actual.astype(dtype), expected, a[::2], numpy.broadcast_to(b, a[::2].shape), name)


# ----- NumPy's own ufuncs ----------------------------------------------------------------------------------------
def test_numpy_float_remainder_and_float16_floor_divide_differ():
    """Why those are left out: NumPy's float remainder gives a zero the divisor's sign, and its float16
    floor_divide rounds once from float32, where PyTorch rounds each step."""
    a, b = numpy.array([-4.0]), numpy.array([2.0])
    assert numpy.signbit(_division.remainder(numpy, a, b)[0]) and not numpy.signbit(numpy.remainder(a, b)[0])
    a, b = numpy.array([12310.0], numpy.float16), numpy.array([-5.996], numpy.float16)
    assert _division.floor_divide(numpy, a, b)[0] == -2056 and numpy.floor_divide(a, b)[0] == -2054
    assert torch_result("floor_divide", a, b)[0] == -2056


# ----- the CUDA kernels ------------------------------------------------------------------------------------------
def kernel_operands(dtype, rng):
    """Every pair of the specials, then random operands: any bit patterns, and dividends near integer multiples of
    their divisors. Integer divisors include 0, whose value callers refuse but the kernels must still match."""
    if dtype.kind in "iu":
        a, b = all_pairs(integer_specials(dtype))
        info = numpy.iinfo(dtype)
        random = rng.integers(info.min, info.max, 1 << 18, dtype=dtype, endpoint=True)
        small = rng.integers(max(info.min, -20), 21, 1 << 18).astype(dtype)
        return numpy.concatenate([a, random, small]), numpy.concatenate([b, small, random])
    a, b = all_pairs(float_specials(dtype))
    bits, signed = bits_dtype(dtype), numpy.dtype(f"i{dtype.itemsize}")
    random_a, random_b = (rng.integers(0, numpy.iinfo(bits).max, 1 << 18, dtype=bits, endpoint=True).view(dtype)
                          for _ in range(2))
    divisors = rng.standard_normal(1 << 18).astype(dtype) * dtype.type(4)
    with numpy.errstate(all="ignore"):
        near = ((rng.integers(-300, 301, 1 << 18).astype(dtype) * divisors).view(signed)
                + rng.integers(-2, 3, 1 << 18).astype(signed)).view(dtype)
    return numpy.concatenate([a, random_a, near]), numpy.concatenate([b, random_b, divisors])


def flushes(values):
    """float32 values that CuPy's kernels (-ftz=true) read or write as zero: subnormals."""
    return (values != 0) & (numpy.abs(values) < numpy.finfo(values.dtype).tiny)


KERNEL_DTYPES = [*INTEGERS, *FLOATS]


@pytest.mark.parametrize("dtype", KERNEL_DTYPES)
def test_cuda_kernels_are_the_formula_bit_for_bit(dtype, cuda_device):
    """Each kernel gives the bits of its ``_division`` formula run by CuPy (every step a ufunc), subnormals and
    NaNs included, and of the formula run by NumPy -- PyTorch's CPU -- except where CuPy flushes float32
    subnormals: an operand, fmod's remainder or the result."""
    from agnostic._backends import cuda_kernels

    dtype = numpy.dtype(dtype)
    a, b = kernel_operands(dtype, numpy.random.default_rng(KERNEL_DTYPES.index(dtype.name)))
    cupy = cuda_device.backend.xp
    with cuda_device.backend.activate():
        a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
        for name in FUNCTIONS:
            kernel = cuda_kernels.kernel(f"agnostic_{name}", dtype)(a_gpu, b_gpu).get()
            formula = getattr(_division, name)(cupy, a_gpu, b_gpu).get()
            assert_same_bits(kernel, formula, a, b, f"{name} kernel against the formula on CuPy")
            expected = getattr(_division, name)(numpy, a, b)
            keep = numpy.ones(len(a), bool)
            if dtype == numpy.float32:
                with numpy.errstate(all="ignore"):
                    keep = ~(flushes(a) | flushes(b) | flushes(numpy.fmod(a, b)) | flushes(expected))
            assert_same_bits(kernel[keep], expected[keep], a[keep], b[keep], f"{name} kernel against the CPU")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_cuda_complex_division_kernel_is_the_formula(dtype, cuda_device):
    """Smith's algorithm in one kernel: the formula's bits on CuPy, and the CPU's for complex128 (complex64's parts
    are float32, which CuPy flushes), for divisors made of every pair of special parts and random ones."""
    from agnostic._backends import cuda_kernels

    dtype = numpy.dtype(dtype)
    real = numpy.dtype(f"f{dtype.itemsize // 2}")
    rng = numpy.random.default_rng(5)
    special_real, special_imag = all_pairs(float_specials(real))
    count = len(special_real) + (1 << 16)
    parts = [rng.standard_normal(count).astype(real) * real.type(1e3) for _ in range(4)]
    parts[2][:len(special_real)], parts[3][:len(special_real)] = special_real, special_imag
    parts[0][-len(special_real):], parts[1][-len(special_real):] = special_real, special_imag
    a, b = numpy.empty(count, dtype), numpy.empty(count, dtype)
    a.real, a.imag, b.real, b.imag = parts
    cupy = cuda_device.backend.xp
    with cuda_device.backend.activate():
        a_gpu, b_gpu = cupy.asarray(a), cupy.asarray(b)
        kernel = cuda_kernels.kernel("agnostic_complex_divide", dtype)(a_gpu, b_gpu).get()
        formula = _division.complex_divide(cupy, a_gpu, b_gpu).get()
    expected = _division.complex_divide(numpy, a, b)
    for part in ("real", "imag"):
        kernel_part = numpy.ascontiguousarray(getattr(kernel, part))
        assert_same_bits(kernel_part, numpy.ascontiguousarray(getattr(formula, part)), a, b,
                         f"complex_divide ({part}) kernel against the formula on CuPy")
        if dtype == numpy.complex128:
            assert_same_bits(kernel_part, numpy.ascontiguousarray(getattr(expected, part)), a, b,
                             f"complex_divide ({part}) kernel against the CPU")


TORCH_CUDA_MATCHES_ITS_CPU = [  # (function, dtypes): everything but float16 floor_divide (see _division's docstring)
    *[(name, dtype) for name in FUNCTIONS for dtype in INTEGERS],
    *[(name, dtype) for name in ("remainder", "fmod", "trunc_divide") for dtype in FLOATS],
    ("floor_divide", "float32"), ("floor_divide", "float64"),
]


@pytest.mark.parametrize(("name", "dtype"), TORCH_CUDA_MATCHES_ITS_CPU)
def test_cuda_divisions_match_pytorchs_cuda(name, dtype, cuda_device):
    """agnostic on CUDA against PyTorch on CUDA, two tensors, where PyTorch's CUDA agrees with its CPU; float32
    leaves out what CuPy flushes (PyTorch keeps subnormals). Integer divisors are nonzero here, as PyTorch's CUDA
    gives its own values for 0."""
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    dtype = numpy.dtype(dtype)
    a, b = kernel_operands(dtype, numpy.random.default_rng(7))
    if dtype.kind in "iu":
        a, b = a[b != 0], b[b != 0]
    functions = {"floor_divide": agnostic.floor_divide, "remainder": agnostic.remainder, "fmod": agnostic.fmod,
                 "trunc_divide": lambda x, y: agnostic.div(x, y, rounding_mode="trunc")}
    ours = functions[name](agnostic.tensor(a, device=cuda_device), agnostic.tensor(b, device=cuda_device))
    ours = ours.cpu().numpy()
    theirs = from_torch(TORCH_FUNCTIONS[name](to_torch(a).cuda(cuda_device.index),
                                              to_torch(b).cuda(cuda_device.index)).cpu(), dtype)
    keep = numpy.ones(len(a), bool)
    if dtype == numpy.float32:
        with numpy.errstate(all="ignore"):
            keep = ~(flushes(a) | flushes(b) | flushes(numpy.fmod(a, b)) | flushes(theirs))
    assert_same_bits(ours[keep], theirs[keep], a[keep], b[keep], f"{name} against PyTorch's CUDA")
