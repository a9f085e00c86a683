"""Strategies, an independent model of PyTorch's type promotion, and cross-device comparison helpers.

Everything here is written from PyTorch's documented rules (c10's promotion table, ``ResultTypeState``), not from
agnostic's own code, so the property tests check the library against an independent reference.

The central helper is :func:`on_all_devices`: it runs one call on every device in ``DEVICES`` (NumPy arrays in the
arguments become tensors on that device), asserts that every device gives the same outcome as the CPU (same error
type, or same dtype, shape and values), and returns the CPU outcome for comparison with a NumPy reference.
"""

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import agnostic

try:  # the devices conftest parametrizes over (tests/ is on sys.path under pytest's rootdir-conftest import)
    from conftest import DEVICES
except ImportError:  # pragma: no cover - run outside pytest
    DEVICES = ["cpu"] + [f"cuda:{i}" for i in range(agnostic.cuda.device_count())]

# ----- dtypes -----------------------------------------------------------------------------------------------------
BOOL = ["bool"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "float32", "float64"]
COMPLEX = ["complex64", "complex128"]
ALL = BOOL + INTS + FLOATS + COMPLEX
REAL = BOOL + INTS + FLOATS
NUMERIC = INTS + FLOATS + COMPLEX

CATEGORY = {name: (0 if name in BOOL else 1 if name in INTS else 2 if name in FLOATS else 3) for name in ALL}
CATEGORY["complex32"] = 3  # PyTorch's ComplexHalf: a possible promotion result that agnostic does not store
BITS = {"uint8": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64}


def ag_dtype(name):
    return getattr(agnostic, name)


def np_dtype(name):
    return np.dtype(name)


def name_of(dtype):
    """Name of an agnostic dtype, a NumPy dtype or a name."""
    if isinstance(dtype, str):
        return dtype
    if isinstance(dtype, agnostic.dtype):
        return dtype.name
    return np.dtype(dtype).name


# PyTorch's c10 promoteTypes table (ScalarType.cpp), restricted to the dtypes agnostic stores.
# c4 = complex64 (ComplexFloat), c8 = complex128 (ComplexDouble).
_ABBREV = {"b1": "bool", "u1": "uint8", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64",
           "f2": "float16", "f4": "float32", "f8": "float64", "c4": "complex64", "c8": "complex128"}
_TABLE = """
      u1  i1  i2  i4  i8  f2  f4  f8  c4  c8  b1
u1    u1  i2  i2  i4  i8  f2  f4  f8  c4  c8  u1
i1    i2  i1  i2  i4  i8  f2  f4  f8  c4  c8  i1
i2    i2  i2  i2  i4  i8  f2  f4  f8  c4  c8  i2
i4    i4  i4  i4  i4  i8  f2  f4  f8  c4  c8  i4
i8    i8  i8  i8  i8  i8  f2  f4  f8  c4  c8  i8
f2    f2  f2  f2  f2  f2  f2  f4  f8  c4  c8  f2
f4    f4  f4  f4  f4  f4  f4  f4  f8  c4  c8  f4
f8    f8  f8  f8  f8  f8  f8  f8  f8  c8  c8  f8
c4    c4  c4  c4  c4  c4  c4  c4  c8  c4  c8  c4
c8    c8  c8  c8  c8  c8  c8  c8  c8  c8  c8  c8
b1    u1  i1  i2  i4  i8  f2  f4  f8  c4  c8  b1
"""


def _parse_table():
    lines = [line.split() for line in _TABLE.strip().splitlines()]
    columns = lines[0]
    table = {}
    for row in lines[1:]:
        for column, cell in zip(columns, row[1:]):
            table[(_ABBREV[row[0]], _ABBREV[column])] = _ABBREV[cell]
    return table


PROMOTE = _parse_table()
DEFAULT_FLOAT = "float32"


def torch_promote(a, b):
    """torch.promote_types on dtype names (None is 'undefined')."""
    if a is None:
        return b
    if b is None:
        return a
    return PROMOTE[(a, b)]


def _to_complex(name):
    return {"float16": "complex32", "float32": "complex64", "float64": "complex128"}[name]


def _combine_categories(higher, lower):
    """c10's combine_categories: a lower tier only matters when it is of a higher category."""
    if higher is not None and CATEGORY[higher] == 3:
        return higher
    if lower is not None and CATEGORY[lower] == 3:
        if higher is not None and CATEGORY[higher] == 2:
            return _to_complex(higher)
        return lower
    if higher is not None and CATEGORY[higher] == 2:
        return higher
    if higher == "bool" or (lower is not None and CATEGORY[lower] == 2):
        return torch_promote(higher, lower)
    return higher if higher is not None else lower


def scalar_dtype(value):
    """The dtype a Python number takes part in promotion as (PyTorch's wrapped numbers)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return DEFAULT_FLOAT
    if isinstance(value, complex):
        return _to_complex(DEFAULT_FLOAT)
    raise TypeError(value)


def torch_result_type(*operands):
    """PyTorch's result type of operands: NumPy arrays stand for tensors (0-dim or dimensioned), Python numbers for
    wrapped scalars. Three tiers (dimensioned > 0-dim > scalars), lower tiers counting only for a higher category."""
    dimensioned = zero_dim = wrapped = None
    for operand in operands:
        if isinstance(operand, np.ndarray):
            dt = operand.dtype.name
            if operand.ndim:
                dimensioned = torch_promote(dimensioned, dt)
            else:
                zero_dim = torch_promote(zero_dim, dt)
        else:
            wrapped = torch_promote(wrapped, scalar_dtype(operand))
    return _combine_categories(dimensioned, _combine_categories(zero_dim, wrapped))


def float_result(name):
    """Ops that compute in floating point: ints and bools use the default float dtype."""
    return DEFAULT_FLOAT if CATEGORY[name] < 2 else name


def operand_dtype(operand):
    return operand.dtype.name if isinstance(operand, np.ndarray) else scalar_dtype(operand)


def fewer_examples(fraction=0.25, minimum=8):
    """Settings for a test parametrized over many dtypes or ops: a fraction of the active profile's examples per
    case (the profile's other settings, derandomization included, are kept)."""
    return settings(max_examples=max(minimum, int(settings.default.max_examples * fraction)))


# ----- strategies -------------------------------------------------------------------------------------------------
def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def empty_shapes(min_dims=1, max_dims=4, max_side=5):
    """Shapes with at least one zero-size dim."""
    return st.tuples(shapes(min_dims=max(min_dims, 1), max_dims=max_dims, max_side=max_side), st.integers(0, 3)).map(
        lambda c: tuple(0 if i == c[1] % len(c[0]) else n for i, n in enumerate(c[0])))


def broadcast_pair(max_dims=4, max_side=5, min_side=0):
    """Two shapes that broadcast together."""
    return hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=max_dims, min_side=min_side,
                                             max_side=max_side).map(lambda b: tuple(b.input_shapes))


@st.composite
def mismatched_pair(draw, max_dims=4, max_side=5, min_side=0):
    """Two shapes that do not broadcast together: one dim where both sizes differ and neither is 1."""
    base = list(draw(shapes(min_dims=1, max_dims=max_dims, min_side=min_side, max_side=max_side)))
    dim = draw(st.integers(0, len(base) - 1))
    sizes = [n for n in range(0, max(max_side, 3) + 1) if n != 1 and n >= min_side]
    first = draw(st.sampled_from(sizes))
    second = draw(st.sampled_from([n for n in sizes if n != first]))
    a, b = list(base), list(base)
    a[dim], b[dim] = first, second
    b = b[draw(st.integers(0, dim)):]  # the other operand may have fewer leading dims
    pair = (tuple(a), tuple(b))
    return pair if draw(st.booleans()) else pair[::-1]


def broadcastable_pair(max_dims=4, max_side=5, min_side=0):
    """Two shapes that usually broadcast together, sometimes not (then the op must raise)."""
    good = broadcast_pair(max_dims, max_side, min_side)
    anything = st.tuples(shapes(max_dims=max_dims, min_side=min_side, max_side=max_side),
                         shapes(max_dims=max_dims, min_side=min_side, max_side=max_side))
    return st.one_of(good, good, good, anything)


def elements(name, lo=-100, hi=100, integral=False):
    """Values of dtype ``name`` in [lo, hi] (clipped to the dtype); floats finite and never subnormal."""
    if name == "bool":
        return st.booleans()
    if name in INTS:
        info = np.iinfo(name)
        return st.integers(max(int(math.ceil(lo)), info.min), min(int(math.floor(hi)), info.max))
    if name in FLOATS:
        if integral:
            return st.integers(int(math.ceil(lo)), int(math.floor(hi))).map(float)
        width = {"float16": 16, "float32": 32, "float64": 64}[name]
        return st.floats(lo, hi, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    part = elements("float32" if name == "complex64" else "float64", lo, hi, integral)
    return st.builds(complex, part, part)


def arrays(name, shape, lo=-100, hi=100, integral=False):
    return hnp.arrays(np_dtype(name), shape, elements=elements(name, lo, hi, integral))


def scalars(kinds=("bool", "int", "float", "complex"), lo=-10, hi=10):
    options = {
        "bool": st.booleans(),
        "int": st.integers(lo, hi),
        "float": st.floats(lo, hi, width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        "complex": st.builds(complex, st.integers(lo, hi), st.integers(lo, hi)),
    }
    return st.one_of(*[options[k] for k in kinds])


# ----- running on every device and comparing ---------------------------------------------------------------------
@dataclass
class Snap:
    """A tensor result captured on the host: its dtype name, shape, device string and values."""
    dtype: str
    shape: tuple
    device: str
    array: np.ndarray


@dataclass
class Outcome:
    error: type = None
    message: str = ""
    value: object = None
    device: str = "cpu"

    def ok(self):
        assert self.error is None, f"expected a result on {self.device}, got {self.error.__name__}: {self.message}"
        return self.value

    def raises(self, *expected):
        """The call raised one of ``expected`` (several only where PyTorch's order of checks is not pinned down)."""
        names = " or ".join(e.__name__ for e in expected)
        assert self.error is not None, f"expected {names} on {self.device}, got a result {self.value!r}"
        assert issubclass(self.error, expected), (
            f"expected {names} on {self.device}, got {self.error.__name__}: {self.message}")


def snapshot(value):
    """Capture a result (Tensor, tuple of them, Python value) as host data."""
    if isinstance(value, agnostic.Tensor):
        return Snap(value.dtype.name, tuple(value.shape), str(value.device), np.array(value.cpu().numpy(), copy=True))
    if isinstance(value, (tuple, list)):
        return type(value)(snapshot(v) for v in value) if type(value) in (tuple, list) else tuple(
            snapshot(v) for v in value)
    return value


def to_device(value, device):
    """NumPy arrays (also inside lists and tuples) become tensors on ``device``; everything else is kept."""
    if isinstance(value, np.ndarray):
        return agnostic.tensor(value, device=device)
    if isinstance(value, list):
        return [to_device(v, device) for v in value]
    if isinstance(value, tuple):
        return tuple(to_device(v, device) for v in value)
    return value


def run(fn, args, device):
    tensors = to_device(list(args), device)
    try:
        result = fn(*tensors)
    except AssertionError:
        raise
    except Exception as error:  # noqa: BLE001 - every error type is part of the behaviour under test
        return Outcome(error=type(error), message=str(error), device=device)
    return Outcome(value=snapshot(result), device=device)


def on_all_devices(fn, *args, rtol=None, atol=None, compute=None):
    """``fn(*args)`` on every device (arrays in ``args`` made tensors there); every device must agree with the
    CPU: the same error type, or results of the same dtype, shape and values on the device they were computed on.
    Returns the CPU outcome.

    ``compute`` names the dtype the op computes in. Where it is float32 or complex64, CUDA reads the operands'
    float32 subnormals (once cast to it) as zeros, as CuPy compiles every kernel with ``-ftz=true``: CUDA is
    compared with the CPU's result of the operands flushed so (``0 ** 1e-40`` is 0 on the CPU, ``0 ** 0`` is 1)."""
    cpu = run(fn, args, "cpu")
    flushed = flush_subnormals(args, compute)
    reference = cpu if flushed is args else run(fn, flushed, "cpu")
    for device in DEVICES:
        if device == "cpu":
            _check_placement(cpu.value, "cpu")
            continue
        other = run(fn, args, device)
        assert other.error == reference.error, (
            f"{device} gave {other.error and other.error.__name__} ({other.message}) but cpu gave "
            f"{reference.error and reference.error.__name__} ({reference.message})")
        if reference.error is None:
            _check_placement(other.value, device)
            assert_same(other.value, reference.value, rtol=rtol, atol=atol, where=f"{device} vs cpu")
    return cpu


FLUSHED = ("float32", "complex64")  # compute dtypes whose subnormal parts CuPy's kernels flush (-ftz=true)


def flush_subnormals(args, compute):
    """``args`` as CUDA reads them in an op that computes in ``compute``: for float32 and complex64, each float part
    that is a float32 subnormal once cast to float32 becomes a zero of its sign, in the argument's own dtype.
    ``args`` itself where nothing changes."""
    if compute not in FLUSHED:
        return args
    flushed = tuple(_flushed(value) for value in args)
    return args if all(new is old for new, old in zip(flushed, args)) else flushed


def _flushed(value):
    if isinstance(value, float):
        return math.copysign(0.0, value) if _float32_subnormal(np.float64(value)) else value
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc" or value.dtype.itemsize < 4:
        return value  # float16 never casts to a float32 subnormal
    parts = (value.real, value.imag) if value.dtype.kind == "c" else (value,)
    if not any(_float32_subnormal(part).any() for part in parts):
        return value
    flushed = value.copy()
    for part in ((flushed.real, flushed.imag) if value.dtype.kind == "c" else (flushed,)):
        part[...] = np.where(_float32_subnormal(part), np.copysign(0, part), part)
    return flushed


def _float32_subnormal(values):
    with np.errstate(all="ignore"):
        as_float32 = np.asarray(values).astype(np.float32)
    return (as_float32 != 0) & (np.abs(as_float32) < np.finfo(np.float32).tiny)


def flush_float32(array):
    """A float32 or complex64 array as CuPy's kernels write it (-ftz=true): subnormal parts as zeros of their
    sign. Other dtypes as they are."""
    array = np.asarray(array)
    if array.dtype.name not in FLUSHED:
        return array
    return _flushed(array)


def _check_placement(value, device):
    if isinstance(value, Snap):
        assert value.device == str(agnostic.device(device)), f"result on {value.device}, expected {device}"
    elif isinstance(value, (tuple, list)):
        for v in value:
            _check_placement(v, device)


def assert_same(actual, expected, rtol=None, atol=None, where=""):
    """Two captured results agree: same structure, dtypes, shapes, and values (tolerance for floats)."""
    if isinstance(expected, Snap):
        assert isinstance(actual, Snap), f"{where}: {actual!r} is not a tensor"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
        assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
        assert_values(actual.array, expected.array, actual.dtype, rtol, atol, where)
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected), f"{where}: {len(actual)} results != {len(expected)}"
        for a, e in zip(actual, expected):
            assert_same(a, e, rtol, atol, where)
    else:
        assert actual == expected or (actual != actual and expected != expected), f"{where}: {actual!r} != {expected!r}"


TOLERANCE = {
    "float16": (5e-3, 5e-3), "float32": (2e-5, 1e-5), "float64": (1e-10, 1e-10),
    "complex64": (2e-5, 1e-5), "complex128": (1e-10, 1e-10),
}


def assert_values(actual, expected, dtype, rtol=None, atol=None, where=""):
    """Exact for bool and integer dtypes; NaNs in the same places and close values for float and complex."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{where}: shape {actual.shape} != {expected.shape}"
    name = name_of(dtype)
    if CATEGORY[name] < 2:
        equal = actual == expected
        assert equal.all(), f"{where}: values differ\n actual={actual!r}\n expected={expected!r}"
        return
    default_rtol, default_atol = TOLERANCE[name]
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    if CATEGORY[name] == 3:  # complex: NaN in the same places, then closeness of the complex numbers
        a, e = actual.astype(np.complex128), expected.astype(np.complex128)
        nan_a, nan_e = np.isnan(a), np.isnan(e)
        assert (nan_a == nan_e).all(), f"{where}: NaN positions differ\n actual={actual!r}\n expected={expected!r}"
        finite = np.isfinite(e) & ~nan_e
        with np.errstate(all="ignore"):
            close = np.where(finite, np.abs(a - e) <= atol + rtol * np.abs(e), (a == e) | nan_a)
        assert close.all(), (f"{where}: values differ (rtol={rtol}, atol={atol})\n actual={actual!r}\n "
                             f"expected={expected!r}")
        return
    a, e = actual.astype(np.float64), expected.astype(np.float64)
    nan_a, nan_e = np.isnan(a), np.isnan(e)
    assert (nan_a == nan_e).all(), f"{where}: NaN positions differ\n actual={actual!r}\n expected={expected!r}"
    close = np.isclose(a, e, rtol=rtol, atol=atol) | nan_a
    assert close.all(), (f"{where}: values differ (rtol={rtol}, atol={atol})\n actual={actual!r}\n "
                         f"expected={expected!r}")


def check_tensor(outcome, expected, dtype, rtol=None, atol=None):
    """The outcome is a tensor of ``dtype`` equal to the NumPy ``expected`` (shape included)."""
    snap = outcome.ok() if isinstance(outcome, Outcome) else outcome
    assert isinstance(snap, Snap), f"expected a tensor, got {snap!r}"
    name = name_of(dtype)
    assert snap.dtype == name, f"dtype {snap.dtype}, PyTorch gives {name}"
    expected = np.asarray(expected)
    assert snap.shape == expected.shape, f"shape {snap.shape}, PyTorch gives {expected.shape}"
    assert_values(snap.array, expected, name, rtol, atol, "vs NumPy reference")
    return snap


def cast(value, name):
    """A NumPy array or Python number as an array of dtype ``name``, as PyTorch converts: integers wrap; a float
    becomes an integer through int64 (for uint8 and int64) or int32 (the others), truncated, NaN and values outside
    that type's range giving its minimum (c10's conversions on x86-64)."""
    array = np.asarray(value)
    with np.errstate(all="ignore"):
        if array.dtype.kind == "f" and name in INTS:
            wide_dtype = np.int64 if name in ("uint8", "int64") else np.int32
            info = np.iinfo(wide_dtype)
            inside = (array >= np.float64(info.min)) & (array < -np.float64(info.min))  # compared in float64
            array = np.where(inside, array, 0).astype(wide_dtype)
            array[~inside] = info.min
        return array.astype(np_dtype(name))


def wide(array):
    """An array widened for an accurate reference computation (float64/complex128; integers kept)."""
    array = np.asarray(array)
    if array.dtype.kind == "f":
        return array.astype(np.float64)
    if array.dtype.kind == "c":
        return array.astype(np.complex128)
    return array


def broadcast_or_none(*shape_list):
    try:
        return tuple(np.broadcast_shapes(*shape_list))
    except ValueError:
        return None


def numel(shape):
    return math.prod(shape)


__all__ = [
    "ALL", "BITS", "BOOL", "CATEGORY", "COMPLEX", "DEVICES", "FLOATS", "INTS", "NUMERIC", "REAL", "Outcome", "Snap",
    "ag_dtype", "arrays", "assert_same", "assert_values", "broadcast_or_none", "broadcast_pair", "broadcastable_pair",
    "cast", "check_tensor", "elements", "empty_shapes", "fewer_examples", "float_result", "flush_float32",
    "flush_subnormals", "mismatched_pair",
    "np_dtype", "numel", "on_all_devices", "operand_dtype", "scalar_dtype", "scalars", "shapes", "torch_promote",
    "torch_result_type", "wide",
]
