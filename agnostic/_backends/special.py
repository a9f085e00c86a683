"""erf and erfinv on backend arrays: a float64-accurate NumPy erf (fdlibm's, the CPU's; CUDA has CuPy's own),
and erfinv for any backend.

NumPy has no erf and agnostic depends on NumPy alone, so this ports fdlibm's ``s_erf.c`` (Sun Microsystems, the
algorithm behind glibc's and Go's erf; error below 1 ulp) to vectorized NumPy. Lower precisions compute in float64
and round once, so float32 results are correctly rounded or off by one ulp at most.
"""

import numpy

_ERX = 8.45062911510467529297e-01
_EFX = 1.28379167095512586316e-01
# |x| < 0.84375: erf(x) = x + x * P(x^2) / Q(x^2)
_PP = (1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
       -5.77027029648944159157e-03, -2.37630166566501626084e-05)
_QQ = (1.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03,
       1.32494738004321644526e-04, -3.96022827877536812320e-06)
# 0.84375 <= |x| < 1.25: erf(x) = erx + P(|x| - 1) / Q(|x| - 1)
_PA = (-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
       3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
       -2.16637559486879084300e-03)
_QA = (1.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02,
       1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02)
# 1.25 <= |x| < 1/0.35: erfc(x) = exp(-x^2 - 0.5625 + R(1/x^2) / S(1/x^2)) / x
_RA = (-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
       -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
       -8.12874355063065934246e+01, -9.81432934416914548592e+00)
_SA = (1.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02,
       6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02,
       6.57024977031928170135e+00, -6.04244152148580987438e-02)
# 1/0.35 <= |x| < 6
_RB = (-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
       -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
       -4.83519191608651397019e+02)
_SB = (1.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03,
       3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02,
       -2.24409524465858183362e+01)


def _poly(coefficients, z):
    result = numpy.full_like(z, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        result = result * z + c
    return result


def _erf_float64(x):
    ax = numpy.abs(x)
    result = numpy.empty_like(x)
    small = ax < 0.84375
    if small.any():
        v = x[small]
        z = v * v
        result[small] = v + v * (_poly(_PP, z) / _poly(_QQ, z))
    middle = (ax >= 0.84375) & (ax < 1.25)
    if middle.any():
        s = ax[middle] - 1.0
        result[middle] = numpy.copysign(_ERX + _poly(_PA, s) / _poly(_QA, s), x[middle])
    tail = (ax >= 1.25) & (ax < 6.0)
    if tail.any():
        a = ax[tail]
        s = 1.0 / (a * a)
        near = a < 1 / 0.35
        ratio = numpy.where(near, _poly(_RA, s) / _poly(_SA, s), _poly(_RB, s) / _poly(_SB, s))
        # z: a with its low 32 bits cleared, so z*z is exact and exp's argument keeps full precision.
        z = (a.view(numpy.uint64) & numpy.uint64(0xFFFFFFFF00000000)).view(numpy.float64)
        r = numpy.exp(-z * z - 0.5625) * numpy.exp((z - a) * (z + a) + ratio)
        result[tail] = numpy.copysign(1.0 - r / a, x[tail])
    large = ax >= 6.0
    result[large] = numpy.copysign(1.0, x[large])
    nan = numpy.isnan(x)
    result[nan] = x[nan]
    return result


def erf_numpy(array):
    """erf of a floating NumPy array, in its dtype (computed in float64)."""
    values = numpy.asarray(array, dtype=numpy.float64)
    with numpy.errstate(all="ignore"):
        return _erf_float64(values.reshape(-1)).reshape(values.shape).astype(array.dtype, copy=False)




# Giles' single-precision erfinv ("Approximating the erfinv function", 2010), refined by Newton steps below.
_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
            -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)
_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844, 0.00134934322,
         0.000100950558, -0.000200214257)


def erfinv(backend, array):
    """Inverse of erf on (-1, 1) (±inf at ±1, NaN outside), in float64 precision, on ``backend``'s array."""
    xp = backend.xp
    y = array.astype(numpy.float64)
    with numpy.errstate(all="ignore"):
        w = -xp.log((1.0 - y) * (1.0 + y))
        central, tail = w - 2.5, xp.sqrt(w) - 3.0
        p_central = xp.full_like(y, _CENTRAL[-1])
        p_tail = xp.full_like(y, _TAIL[-1])
        for c, t in zip(reversed(_CENTRAL[:-1]), reversed(_TAIL[:-1])):
            p_central = p_central * central + c
            p_tail = p_tail * tail + t
        x = xp.where(w < 5.0, p_central, p_tail) * y
        for _ in range(2):
            step = (backend.ops.erf(x) - y) / (1.1283791670955126 * xp.exp(-x * x))
            x = xp.where(xp.isfinite(step), x - step, x)
        x = xp.where(xp.abs(y) == 1.0, xp.copysign(xp.inf, y), x)
        x = xp.where(xp.abs(y) > 1.0, xp.nan, x)
    return x.astype(array.dtype, copy=False)


def library_function(load_library, load_xp, name, adjust=None):
    """``f(*arguments)``: ``<library>.<name>`` (``load_library()`` gives ``scipy.special`` or
    ``cupyx.scipy.special``, imported on the first call, never at ``import agnostic``) of backend arrays and numbers,
    its result in the dtype of the first array argument. float16 and bfloat16 arrays are computed in float32 (the
    libraries have no half-precision loops); ``adjust(xp, result, *arguments)`` then gives PyTorch's values where
    the library's differ (``lgamma(-inf)``)."""
    loaded = []

    def compute(*arguments):
        if not loaded:
            loaded.extend((getattr(_imported(load_library, name), name), load_xp()))
        function, xp = loaded
        dtype = next(argument.dtype for argument in arguments if hasattr(argument, "ndim"))
        wide = [argument.astype(numpy.float32) if _is_half(argument) else argument for argument in arguments]
        with numpy.errstate(all="ignore"):
            result = xp.asarray(function(*wide))
            if adjust is not None:
                result = adjust(xp, result, *wide)
        return result.astype(dtype, copy=False)
    compute.__name__ = name
    return compute


def _imported(load_library, name):
    try:
        return load_library()
    except ImportError as error:
        package = (error.name or "scipy").split(".")[0]
        hint = "pip install 'agnostic-tensor[cuda12]' (or cuda13)" if package.startswith("cupy") else \
            f"pip install {package} (one of agnostic's dependencies; reinstalling agnostic installs it)"
        raise ModuleNotFoundError(f"{name} needs {package}, which could not be imported ({error}): {hint}",
                                  name=package) from None


def _is_half(argument):
    dtype = getattr(argument, "dtype", None)
    return dtype is not None and dtype.itemsize == 2 and dtype.kind in "fV"
