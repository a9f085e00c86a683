"""dtype objects, PyTorch's type-promotion rules, the default dtype, and finfo/iinfo.

agnostic computes every result dtype itself, so NumPy's and CuPy's own promotion never leaks through:

    >>> numpy.ones(3, numpy.int32) / numpy.ones(3, numpy.int32)    # float64 in NumPy
    >>> agnostic.ones(3, dtype=agnostic.int32) / 2                   # float32 (the default dtype), as in PyTorch
"""

import numpy

_builtin_bool = type(True)
_BOOL, _INTEGER, _FLOATING, _COMPLEX = range(4)


class dtype:
    """A tensor element type, named and behaving as PyTorch's (``agnostic.float32``).

    The dtypes are ``bool``, ``uint8``, ``int8``, ``int16`` (alias ``short``), ``int32`` (``int``), ``int64``
    (``long``; what Python ints become), ``float16`` (``half``), ``bfloat16`` (needs the ``ml_dtypes`` package;
    reductions accumulate in float32), ``float32`` (``float``; the default float dtype), ``float64`` (``double``),
    ``complex64`` (``cfloat``) and ``complex128`` (``cdouble``). Properties: ``itemsize``, ``is_floating_point``,
    ``is_complex``, ``is_signed``; ``to_real()`` and ``to_complex()`` give the counterparts.

        >>> agnostic.float32, agnostic.float is agnostic.float32, agnostic.long
        (agnostic.float32, True, agnostic.int64)
        >>> agnostic.int16.itemsize, agnostic.float16.is_floating_point, agnostic.complex64.to_real()
        (2, True, agnostic.float32)
        >>> agnostic.ones(2, dtype=agnostic.int8).dtype
        agnostic.int8
    """

    __slots__ = ("name", "itemsize", "category", "is_signed", "_numpy_name")

    def __init__(self, name, numpy_name, itemsize, category, is_signed):
        self.name = name
        self._numpy_name = numpy_name
        self.itemsize = itemsize
        self.category = category
        self.is_signed = is_signed

    @property
    def is_floating_point(self):
        return self.category == _FLOATING

    @property
    def is_complex(self):
        return self.category == _COMPLEX

    @property
    def numpy_dtype(self):
        """The NumPy/CuPy dtype that stores this type."""
        return _numpy_dtype_of(self)

    def to_real(self):
        """The real counterpart of a complex dtype (``complex64`` -> ``float32``); other dtypes map to themselves."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self):
        """The complex counterpart of a floating dtype (``float64`` -> ``complex128``)."""
        if self.is_complex:
            return self
        if not self.is_floating_point:
            raise RuntimeError(f"to_complex(): {self} has no complex counterpart; use a floating-point dtype")
        return complex128 if self is float64 else complex64

    def __repr__(self):
        return f"agnostic.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


bool = dtype("bool", "bool", 1, _BOOL, False)
uint8 = dtype("uint8", "uint8", 1, _INTEGER, False)
int8 = dtype("int8", "int8", 1, _INTEGER, True)
int16 = dtype("int16", "int16", 2, _INTEGER, True)
int32 = dtype("int32", "int32", 4, _INTEGER, True)
int64 = dtype("int64", "int64", 8, _INTEGER, True)
float16 = dtype("float16", "float16", 2, _FLOATING, True)
bfloat16 = dtype("bfloat16", "bfloat16", 2, _FLOATING, True)
float32 = dtype("float32", "float32", 4, _FLOATING, True)
float64 = dtype("float64", "float64", 8, _FLOATING, True)
complex64 = dtype("complex64", "complex64", 8, _COMPLEX, True)
complex128 = dtype("complex128", "complex128", 16, _COMPLEX, True)

ALL_DTYPES = (bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_ALIASES = {
    "half": float16, "float": float32, "double": float64, "short": int16, "int": int32, "long": int64,
    "cfloat": complex64, "cdouble": complex128,
}
_BY_NAME.update(_ALIASES)
_BY_NUMPY = {numpy.dtype(d._numpy_name): d for d in ALL_DTYPES if d is not bfloat16}
_NUMPY_OF = {d: numpy.dtype(d._numpy_name) for d in ALL_DTYPES if d is not bfloat16}


def _dtype_by_name(name):
    return _BY_NAME[name]


def _numpy_dtype_of(dt):
    found = _NUMPY_OF.get(dt)
    if found is None:
        found = _bfloat16_numpy_dtype()
    return found


def _bfloat16_numpy_dtype():
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError(
            "bfloat16 needs the ml_dtypes package, one of agnostic's dependencies, which is not installed here: "
            "pip install ml_dtypes (or reinstall agnostic); or use float16 or float32 instead"
        ) from None
    numpy_bf16 = numpy.dtype(ml_dtypes.bfloat16)
    _NUMPY_OF[bfloat16] = numpy_bf16
    _BY_NUMPY[numpy_bf16] = bfloat16
    return numpy_bf16


def from_numpy_dtype(numpy_dtype):
    """The agnostic dtype for a NumPy/CuPy dtype; a clear TypeError for types agnostic does not support."""
    found = _BY_NUMPY.get(numpy_dtype)
    if found is None:
        if numpy_dtype.kind == "u" and numpy_dtype.itemsize > 1:
            raise TypeError(f"can't convert an array of type {numpy_dtype}: the only unsigned type is uint8")
        if numpy_dtype.byteorder not in "=|":
            found = _BY_NUMPY.get(numpy_dtype.newbyteorder("="))
        if found is None and numpy_dtype.name == "bfloat16":
            return bfloat16
        if found is None:
            raise TypeError(
                f"can't convert an array of type {numpy_dtype}; supported: "
                + ", ".join(d.name for d in ALL_DTYPES)
            )
    return found


_PYTHON_TYPES = {float: float64, int: int64, complex: complex128}


def as_dtype(spec):
    """Accept an agnostic dtype, a NumPy dtype or type, a name (``"float32"``), or a Python type (``float``)."""
    if type(spec) is dtype:
        return spec
    if spec is None:
        return None
    if spec is _builtin_bool:
        return bool
    if spec in _PYTHON_TYPES:
        return _PYTHON_TYPES[spec]
    if isinstance(spec, str):
        found = _BY_NAME.get(spec.removeprefix("agnostic.").removeprefix("torch."))
        if found is None:
            raise TypeError(f"unknown dtype {spec!r}; valid names: " + ", ".join(sorted(_BY_NAME)))
        return found
    try:
        return from_numpy_dtype(numpy.dtype(spec))
    except TypeError as error:
        raise TypeError(f"dtype must be an agnostic dtype such as agnostic.float32, got {spec!r} ({error})") from None


def _promote_integers(a, b):
    if a.is_signed == b.is_signed:
        return a if a.itemsize >= b.itemsize else b
    unsigned, signed = (a, b) if not a.is_signed else (b, a)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return int16


def _promote_floats(a, b):
    if {a, b} == {float16, bfloat16}:
        return float32
    return a if a.itemsize >= b.itemsize else b


def _compute_promotion(a, b):
    if a is b:
        return a
    if a.category < b.category:
        a, b = b, a
    if b is bool:
        return a
    if a.category == _INTEGER:
        return _promote_integers(a, b)
    if a.category == _FLOATING:
        return a if b.category == _INTEGER else _promote_floats(a, b)
    # a is complex
    if b.category == _INTEGER:
        return a
    value_type = _promote_floats(a.to_real(), b.to_real())
    return value_type.to_complex()


_PROMOTION = {(a, b): _compute_promotion(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1, type2):
    """The smallest dtype both types convert to without losing category, as ``torch.promote_types``.

        >>> agnostic.promote_types(agnostic.uint8, agnostic.int8)
        agnostic.int16
        >>> agnostic.promote_types(agnostic.int64, agnostic.float16)
        agnostic.float16
    """
    return _PROMOTION[(as_dtype(type1), as_dtype(type2))]


def combine_categories(higher, lower):
    """Combine two promotion tiers, PyTorch's ``combine_categories``: a lower-priority operand (a 0-dim tensor or
    a Python scalar) only changes the result when it is of a higher category (bool < integer < floating < complex)."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOATING else lower
    if higher.category == _FLOATING:
        return higher
    if higher is bool or lower.category == _FLOATING:
        return _PROMOTION[(higher, lower)]
    return higher


def scalar_dtype(value):
    """The dtype a Python scalar takes part in promotion as: bool, int64, the default float or complex dtype."""
    kind = type(value)
    if kind is float:
        return _default["dtype"]
    if kind is int:
        return int64
    if kind is _builtin_bool:
        return bool
    if kind is complex:
        return _default["dtype"].to_complex()
    if isinstance(value, numpy.generic):
        return from_numpy_dtype(value.dtype)
    raise TypeError(f"expected a Tensor or a Python number, got {kind.__name__}")


_default = {"dtype": float32}


def get_default_dtype():
    """The dtype of floating-point tensors created without ``dtype=`` (float32 unless changed).

        >>> agnostic.get_default_dtype()
        agnostic.float32
        >>> agnostic.tensor([1.0]).dtype
        agnostic.float32
    """
    return _default["dtype"]


def set_default_dtype(dt):
    """Set the default floating-point dtype, as ``torch.set_default_dtype``; only floating types are allowed.

        >>> agnostic.set_default_dtype(agnostic.float64)
        >>> agnostic.tensor([1.5]).dtype, (agnostic.tensor([1, 2]) / 2).dtype
        (agnostic.float64, agnostic.float64)
        >>> agnostic.set_default_dtype(agnostic.float32)
    """
    dt = as_dtype(dt)
    if not dt.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {dt}")
    _default["dtype"] = dt
    for hook in _default_dtype_hooks:
        hook()


_default_dtype_hooks: list = []


def on_default_dtype_change(hook):
    """Call ``hook()`` after every ``set_default_dtype`` (how the op registry forgets plans made for the old one)."""
    _default_dtype_hooks.append(hook)


class finfo:
    """Machine limits of a floating dtype, with PyTorch's attribute names (``eps``, ``max``, ``tiny``...).

        >>> agnostic.finfo(agnostic.float16).eps
        0.0009765625
        >>> agnostic.finfo(agnostic.float32).max
        3.4028234663852886e+38
        >>> agnostic.finfo().tiny
        1.1754943508222875e-38
    """

    def __init__(self, dt=None):
        dt = get_default_dtype() if dt is None else as_dtype(dt)
        if dt.category not in (_FLOATING, _COMPLEX):
            raise TypeError(f"finfo() requires a floating point dtype, got {dt}; use iinfo() for integer types")
        real = dt.to_real()
        if real is bfloat16:
            self.bits, self.eps, self.max, self.tiny, precision = 16, 2.0 ** -7, 3.3895313892515355e+38, 2.0 ** -126, 2
            self.min = -self.max
        else:
            info = numpy.finfo(_numpy_dtype_of(real))
            self.bits, self.eps, self.max, self.min = info.bits, float(info.eps), float(info.max), float(info.min)
            self.tiny, precision = float(info.smallest_normal), info.precision
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -precision
        self.dtype = real.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, eps={self.eps}, "
                f"smallest_normal={self.smallest_normal}, tiny={self.tiny}, dtype={self.dtype})")


class iinfo:
    """Machine limits of an integer dtype, with PyTorch's attribute names (``bits``, ``min``, ``max``).

        >>> agnostic.iinfo(agnostic.int8)
        iinfo(min=-128, max=127, dtype=int8)
        >>> agnostic.iinfo(agnostic.uint8).max
        255
    """

    def __init__(self, dt):
        dt = as_dtype(dt)
        if dt.category != _INTEGER:
            raise TypeError(f"iinfo() requires an integer dtype, got {dt}; use finfo() for floating types")
        info = numpy.iinfo(_numpy_dtype_of(dt))
        self.bits = info.bits
        self.min = int(info.min)
        self.max = int(info.max)
        self.dtype = dt.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
