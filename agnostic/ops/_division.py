"""PyTorch's floor and truncating division, remainder and fmod, written once against an array namespace ``xp``
(``numpy`` or ``cupy``) so that the CPU and CUDA give the same bits. Each takes ``(xp, a, b)``, ``a`` and ``b``
arrays, 0-d arrays or NumPy scalars of one integer or float dtype, broadcastable, and gives an array of that dtype.

Why: the libraries' own ufuncs use different formulas. CuPy's float remainder is ``a - floor(a / b) * b`` (float32
``remainder(1.0, 0.33333334)`` gives -2.98e-08 where NumPy and PyTorch give 0.3333333), its float floor_divide is
``floor(a / b)`` and its integer fmod goes through float64 (wrong past 2**53); NumPy's float remainder gives a zero
the divisor's sign where PyTorch keeps fmod's. Here every step is a ufunc that is exact or correctly rounded in both
libraries (fmod, floor, trunc, copysign, + - * /, comparisons, where/copyto, and integer floor_divide/remainder for
divisors other than 0 and -1, whose results are unique integers), so the result is PyTorch's formula, bit for bit.

Semantics, from ATen (``c10/util/generic_math.h``, ``native/cpu/BinaryOpsKernel.cpp``, ``native/cuda/BinaryDiv*``):

- Floats are computed in the arrays' own dtype, each step rounded to it: for float16 and bfloat16 that is what
  PyTorch's CPU kernels do for two tensors. Where PyTorch is not the same on both devices, these follow its CPU:
  its CPU kernels compute float16/bfloat16 in float32 and round once when the divisor is one broadcast value (a
  Python scalar, a 0-dim or one-element tensor) -- pass float32 arrays and cast the result for that; its CUDA
  floor_divide of float16/bfloat16 tensors keeps the quotient in float32 and rounds only its floor (1.5% of the
  float16 pairs tested differ from the CPU by a step); its CUDA kernels multiply by the reciprocal of a CPU-scalar
  divisor. remainder, fmod and trunc_divide of two tensors agree on both devices.
- PyTorch's CPU fmod and remainder on contiguous float32/float64 tensors (the vectorized Sleef loop) give NaN where
  ``|a / b|`` overflows (pytorch/pytorch#193753); these functions give C's fmod there, as PyTorch's scalar loop and
  CUDA do.
- Integers: INT_MIN // -1 wraps to INT_MIN, as PyTorch's floor_divide does (its CPU trunc division of int32/int64
  dies of SIGFPE there; int8/int16 and CUDA wrap). A zero integer divisor gives an unspecified value without a
  warning: callers refuse it first, as PyTorch raises ZeroDivisionError.
- CuPy compiles every kernel with ``-ftz=true``: float32 and bfloat16 subnormal operands and results flush to zero
  on CUDA, here as in any CuPy ufunc, where PyTorch keeps them. float16, float64 and integers are exact.

On CUDA each function runs as one kernel (``cuda_kernels``: ``agnostic_floor_divide`` and its siblings, per dtype;
``agnostic_complex_divide``), which takes the same steps in the same order, each rounded as the CuPy ufunc it stands
for rounds it: the bits of the formula run by CuPy, in one pass. bfloat16 runs the formula.

NumPy's own ufuncs that are bit-identical to these functions (``NUMPY_EQUIVALENTS``, checked by the tests), so the
CPU may call them instead, faster:

- ``numpy.floor_divide``: float32 and float64 (NumPy's ``npy_divmod`` is this same fmod-based formula), and the
  integer dtypes for nonzero divisors (NumPy warns on INT_MIN // -1 but gives INT_MIN). Not float16: NumPy
  computes it in float32 and rounds once.
- ``numpy.fmod``: every float and integer dtype, for nonzero integer divisors.
- ``numpy.remainder``: the integer dtypes, for nonzero divisors. Not floats: a zero result takes the divisor's sign.
- trunc_divide: no NumPy ufunc; for floats it is ``numpy.trunc(a / b)`` whatever the namespace.
"""

import functools

import numpy

NUMPY_EQUIVALENTS = {
    "floor_divide": ("float32", "float64", "uint8", "int8", "int16", "int32", "int64"),
    "fmod": ("float16", "float32", "float64", "uint8", "int8", "int16", "int32", "int64"),
    "remainder": ("uint8", "int8", "int16", "int32", "int64"),
    "trunc_divide": (),
}


def _quiet_arrays(function):
    """``function(xp, a, b)`` without NumPy's floating-point warnings, and on operands of one dimension at least, so
    that its intermediates are arrays it may write into (a ufunc of 0-d arrays gives scalars); 0-d operands give a
    0-d array back."""

    @functools.wraps(function)
    def quiet(xp, a, b):
        with numpy.errstate(all="ignore"):
            if a.ndim or b.ndim:
                return function(xp, a, b)
            return function(xp, _one_element(xp, a), _one_element(xp, b)).reshape(())

    return quiet


def _one_element(xp, value):
    """A 0-d array or NumPy scalar as a 1-element array of ``xp``. A scalar is uploaded as an array: CuPy makes a
    scalar into an array with a fill, which stores -0.0 as +0.0 (and ``1 // -0.0`` is -inf, not inf)."""
    if isinstance(value, xp.ndarray):
        return value.reshape(1)
    return xp.asarray(numpy.reshape(value, (1,)))


@_quiet_arrays
def floor_divide(xp, a, b):
    """``floor(a / b)`` as PyTorch's ``torch.floor_divide`` / ``torch.div(a, b, rounding_mode="floor")``.

    Floats follow ATen's ``div_floor_floating``: the quotient ``(a - fmod(a, b)) / b``, stepped down where fmod and
    the divisor differ in sign and snapped to the nearest integer, so that ``a == q * b + remainder(a, b)``; a zero
    quotient takes the sign of ``a / b``, and ``b == 0`` gives ``a / b``. Integers floor; INT_MIN // -1 wraps.
    float32 (1.0, 0.33333334) gives 2.0, where ``floor(1.0 / 0.33333334)`` is 3.0; int8 (-7, 2) gives -4.
    """
    if _is_integer(a):
        return _floor_divide_integer(xp, a, b, _safe_divisor(xp, b))
    half, zero = a.dtype.type(0.5), a.dtype.type(0)
    mod = xp.fmod(a, b)
    quotient = xp.subtract(a, mod)
    xp.true_divide(quotient, b, out=quotient)
    # Subtracting False (0.0) changes nothing, not even -0.0: cheaper than where() on an unpredictable mask.
    xp.subtract(quotient, _crosses_zero(mod, b), out=quotient)
    floored = xp.floor(quotient)
    # (a - mod) / b is an integer only up to rounding: snap to the nearest one. Adding False turns only a -0.0 into
    # +0.0, and that comes from a zero quotient, replaced below.
    xp.add(floored, xp.subtract(quotient, floored) > half, out=floored)
    exact = xp.true_divide(a, b)
    xp.copyto(floored, xp.copysign(zero, exact), where=quotient == 0)
    xp.copyto(floored, exact, where=b == 0)
    return floored


@_quiet_arrays
def remainder(xp, a, b):
    """The remainder with the divisor's sign, as PyTorch's ``torch.remainder`` (Python's ``%``).

    Floats: ``fmod(a, b)``, plus ``b`` where that is nonzero and differs from ``b`` in sign (a zero keeps fmod's sign,
    that of ``a``). Integers: the same from C's truncated ``%``. (-7, 2) gives 1; float32 (1.0, 0.33333334) gives
    0.3333333.
    """
    if _is_integer(a):
        return xp.remainder(a, _safe_divisor(xp, b))
    mod = xp.fmod(a, b)
    xp.copyto(mod, xp.add(mod, b), where=_crosses_zero(mod, b))
    return mod


@_quiet_arrays
def fmod(xp, a, b):
    """The remainder with the dividend's sign, as PyTorch's ``torch.fmod`` (C's ``fmod``, and ``%`` for integers).

    (-7, 2) gives -1; (5.5, -2.0) gives 1.5.
    """
    if not _is_integer(a):
        return xp.fmod(a, b)
    # From the floored remainder: CuPy's integer fmod goes through float64.
    divisor = _safe_divisor(xp, b)
    floored = xp.remainder(a, divisor)
    if a.dtype.kind == "u":
        return floored
    xp.copyto(floored, xp.subtract(floored, divisor), where=_floor_below_trunc(floored, a, b))
    return floored


@_quiet_arrays
def trunc_divide(xp, a, b):
    """``a / b`` rounded toward zero, as PyTorch's ``torch.div(a, b, rounding_mode="trunc")``.

    Floats: ``trunc(a / b)``, the quotient rounded to the dtype first. Integers: C's truncated division; INT_MIN / -1
    wraps to INT_MIN. (-7, 2) gives -3.
    """
    if not _is_integer(a):
        quotient = xp.true_divide(a, b)
        return xp.trunc(quotient, out=quotient)
    divisor = _safe_divisor(xp, b)
    quotient = _floor_divide_integer(xp, a, b, divisor)
    if a.dtype.kind == "u":
        return quotient
    return xp.add(quotient, _floor_below_trunc(xp.remainder(a, divisor), a, b), out=quotient)


def _floor_divide_integer(xp, a, b, divisor):
    quotient = xp.floor_divide(a, divisor)
    if a.dtype.kind == "i":
        # x // -1 is -x, wrapping at INT_MIN; the divisor was 1 there.
        xp.copyto(quotient, xp.negative(quotient), where=b == -1)
    return quotient


def _safe_divisor(xp, b):
    """``b`` with 0 and -1 replaced by 1: the divisors whose integer division warns, or traps (x86 raises SIGFPE for
    INT_MIN / -1). Dividing by 1 leaves the right remainder, 0, for -1."""
    unsafe = b == 0
    if b.dtype.kind == "i":
        unsafe |= b == -1
    return xp.where(unsafe, b.dtype.type(1), b)


def _crosses_zero(mod, b):
    """Where the truncated remainder ``mod`` is nonzero and of the other sign than ``b``: there the floored
    remainder is ``mod + b`` and the floored quotient one below the truncated one."""
    return (mod != 0) & ((b < 0) != (mod < 0))


def _floor_below_trunc(floored, a, b):
    """Where the floored integer remainder is nonzero and ``a`` and ``b`` differ in sign: there the floored quotient
    is one below the truncated one, and the floored remainder ``b`` away from the truncated one."""
    return (floored != 0) & ((a < 0) != (b < 0))


def _is_integer(array):
    return array.dtype.kind in "iu"


def complex_divide(xp, a, b):
    """``a / b`` for complex arrays by Smith's algorithm, as PyTorch's ``c10::complex`` division (and NumPy's) on
    every device, where CuPy's own gives NaN for a zero divisor: ``(1+1j) / 0`` is ``inf+infj`` in PyTorch.

    Dividing by the larger of the divisor's parts keeps the intermediate products from overflowing; a zero divisor
    divides each part of ``a`` by zero.
    """
    with numpy.errstate(all="ignore"):
        a, b = xp.asarray(a), xp.asarray(b)
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        real_larger = xp.abs(br) >= xp.abs(bi)
        both_zero = (br == 0) & (bi == 0)
        # Where the real part is larger: ratio = bi / br, else br / bi; the same formula with the roles swapped.
        ratio = xp.where(real_larger, bi / br, br / bi)
        scale = 1 / xp.where(real_larger, br + bi * ratio, bi + br * ratio)
        real = xp.where(real_larger, (ar + ai * ratio) * scale, (ar * ratio + ai) * scale)
        imag = xp.where(real_larger, (ai - ar * ratio) * scale, (ai * ratio - ar) * scale)
        result = xp.empty(numpy.broadcast_shapes(a.shape, b.shape), dtype=a.dtype)
        result.real[...] = xp.where(both_zero, ar / xp.abs(br), real)
        result.imag[...] = xp.where(both_zero, ai / xp.abs(bi), imag)
        return result
