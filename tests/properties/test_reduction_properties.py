"""Reductions (sum, mean, prod, var/std, max/min, argmax/argmin, all/any, cumsum, norm) and matmul agree across
devices and with a NumPy reference: PyTorch's result dtypes, ``dim``/``keepdim`` shapes, values and errors."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import agnostic
from _strategies import (
    ALL, CATEGORY, COMPLEX, FLOATS, INTS, arrays, cast, check_tensor, fewer_examples, on_all_devices, shapes,
    wide,
)


@st.composite
def reduction_input(draw, names=ALL, lo=-100, hi=100, max_dims=4, max_side=5, multi=True, allow_none=True):
    """(array, dim, keepdim): ``dim`` None, an int (maybe negative) or a tuple of dims (maybe repeated)."""
    shape = draw(shapes(max_dims=max_dims, max_side=max_side))
    a = draw(arrays(draw(st.sampled_from(names) if isinstance(names, (list, tuple)) else names), shape, lo, hi))
    ndim = len(shape)
    bound = max(ndim, 1)
    single = st.integers(-bound, bound - 1)  # out-of-range dims: test_dim_out_of_range_raises_index_error
    options = [single]
    if allow_none:
        options.append(st.none())
    if multi and ndim:
        options.append(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim).map(tuple))
    dim = draw(st.one_of(*options))
    return a, dim, draw(st.booleans())


def _axes(dim, ndim):
    """NumPy axis for a PyTorch dim, or raise the error PyTorch raises for it."""
    if dim is None:
        return None
    bound = max(ndim, 1)
    dims = dim if isinstance(dim, tuple) else (dim,)
    for d in dims:
        if not -bound <= d < bound:
            raise IndexError
    axes = tuple(d % bound for d in dims)
    if len(set(axes)) != len(axes):
        raise RuntimeError  # "dim 0 appears multiple times in the list of dims"
    if ndim == 0:
        return None
    return axes if isinstance(dim, tuple) else axes[0]


def _dim_error(dim, ndim):
    try:
        _axes(dim, ndim)
    except (IndexError, RuntimeError) as error:
        return type(error)
    return None


def _reduce(function, x, dim, keepdim):
    axis = _axes(dim, x.ndim)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = function(x, axis=axis, keepdims=keepdim)
    return np.asarray(out)


def _eps(name):
    real = {"complex64": "float32", "complex128": "float64", "float16": "float32"}.get(name, name)
    return float(np.finfo(real).eps)


def _accumulation_atol(a, dim, keepdim, name, scale=32):
    """Tolerance for a sum-like reduction: a few ulps of the sum of magnitudes (cancellation)."""
    magnitude = _reduce(np.sum, np.abs(wide(a)).astype(np.float64), dim, keepdim)
    return scale * _eps(name) * magnitude + 1e-6


REDUCTIONS = {
    "sum": lambda t, d: agnostic.sum(t, d), "mean": lambda t, d: agnostic.mean(t, d),
    "prod": lambda t, d: agnostic.prod(t, d), "var": lambda t, d: agnostic.var(t, d),
    "std": lambda t, d: agnostic.std(t, d), "max": lambda t, d: agnostic.max(t, d),
    "min": lambda t, d: agnostic.min(t, d), "argmax": lambda t, d: agnostic.argmax(t, d),
    "argmin": lambda t, d: agnostic.argmin(t, d), "all": lambda t, d: agnostic.all(t, d),
    "any": lambda t, d: agnostic.any(t, d), "cumsum": lambda t, d: agnostic.cumsum(t, d),
    "norm": lambda t, d: agnostic.norm(t, 2, d), "softmax": lambda t, d: agnostic.softmax(t, d),
    "squeeze": lambda t, d: agnostic.squeeze(t, d), "flip": lambda t, d: agnostic.flip(t, (d,)),
    "size": lambda t, d: t.size(d), "transpose": lambda t, d: agnostic.transpose(t, d, 0),
}


@given(st.sampled_from(sorted(REDUCTIONS)), shapes(max_dims=3, min_side=1, max_side=3), st.data())
def test_dim_out_of_range_raises_index_error(function, shape, data):
    """Every dim argument accepts [-ndim, ndim - 1] ([-1, 0] for a 0-dim tensor); anything else is an IndexError
    ("Dimension out of range"), checked before the op looks at dtypes or sizes."""
    bound = max(len(shape), 1)
    dim = data.draw(st.one_of(st.integers(bound, bound + 2), st.integers(-bound - 2, -bound - 1)))
    a = np.ones(shape, np.float32)
    on_all_devices(lambda t: REDUCTIONS[function](t, dim), a).raises(IndexError)


# ----- sum, prod, mean --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
@fewer_examples()
@given(data=st.data())
def test_sum(name, data):
    case = data.draw(reduction_input(names=st.just(name)))
    a, dim, keepdim = case
    result = "int64" if CATEGORY[a.dtype.name] <= 1 else a.dtype.name
    valid = _dim_error(dim, a.ndim) is None
    atol = _accumulation_atol(a, dim, keepdim, result) if valid and CATEGORY[result] >= 2 else None
    outcome = on_all_devices(lambda t: agnostic.sum(t, dim, keepdim), a, atol=atol)
    if not valid:
        outcome.raises(_dim_error(dim, a.ndim))
        return
    expected = _reduce(np.sum, wide(cast(a, result)), dim, keepdim)
    check_tensor(outcome, cast(expected, result), result, atol=atol)
    method = on_all_devices(lambda t: t.sum(dim=dim, keepdim=keepdim), a, atol=atol)
    check_tensor(method, cast(expected, result), result, atol=atol)


@pytest.mark.parametrize("name", ALL)
@fewer_examples()
@given(data=st.data())
def test_prod(name, data):
    case = data.draw(reduction_input(names=st.just(name), lo=-1.5, hi=1.5, max_dims=3, max_side=3))
    a, dim, keepdim = case
    assume(not isinstance(dim, tuple))  # torch.prod takes a single dim
    result = "int64" if CATEGORY[a.dtype.name] <= 1 else a.dtype.name
    rtol = 64 * _eps(result) + (5e-3 if result == "float16" else 0.0) if CATEGORY[result] >= 2 else None
    outcome = on_all_devices(lambda t: agnostic.prod(t, dim, keepdim) if dim is not None else agnostic.prod(t), a,
                             rtol=rtol)
    if _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    expected = _reduce(np.prod, wide(cast(a, result)), dim, keepdim if dim is not None else False)
    check_tensor(outcome, cast(expected, result), result, rtol=rtol)


@pytest.mark.parametrize("name", ALL)
@fewer_examples()
@given(data=st.data())
def test_mean(name, data):
    case = data.draw(reduction_input(names=st.just(name)))
    a, dim, keepdim = case
    name = a.dtype.name
    atol = None
    if CATEGORY[name] >= 2 and _dim_error(dim, a.ndim) is None:
        atol = _reduce(np.mean, np.abs(wide(a)).astype(np.float64), dim, keepdim)
        atol = 32 * _eps(name) * np.nan_to_num(atol) + 1e-6
    outcome = on_all_devices(lambda t: agnostic.mean(t, dim, keepdim), a, atol=atol)
    if CATEGORY[name] <= 1:
        outcome.raises(RuntimeError)  # mean(): could not infer output dtype ... Got: Long (checked before dim)
        return
    if _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    expected = _reduce(np.mean, wide(a), dim, keepdim)  # empty reductions are NaN
    check_tensor(outcome, cast(expected, name), name, atol=atol)


@given(reduction_input(names=INTS + ["bool"]), st.sampled_from(INTS[1:] + FLOATS))
def test_sum_and_mean_with_dtype_argument(case, target):
    a, dim, keepdim = case
    assume(_dim_error(dim, a.ndim) is None)
    expected = _reduce(np.sum, wide(cast(a, target)), dim, keepdim)
    atol = _accumulation_atol(a, dim, keepdim, target) if target in FLOATS else None
    check_tensor(on_all_devices(lambda t: agnostic.sum(t, dim, keepdim, dtype=agnostic.__dict__[target]), a,
                                atol=atol), cast(expected, target), target, atol=atol)
    if target in FLOATS:
        expected = _reduce(np.mean, wide(cast(a, target)), dim, keepdim)
        atol = 1e-5 + 32 * _eps(target) * 100
        check_tensor(on_all_devices(lambda t: agnostic.mean(t, dim, keepdim, dtype=agnostic.__dict__[target]), a,
                                    atol=atol), cast(expected, target), target, atol=atol)


# ----- var, std ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("function", ["var", "std"])
@fewer_examples()
@given(correction=st.sampled_from([0, 1, 2]), data=st.data())
def test_var_std(function, name, correction, data):
    case = data.draw(reduction_input(names=st.just(name)))
    a, dim, keepdim = case
    name = a.dtype.name
    call = (lambda t: getattr(agnostic, function)(t, dim, keepdim=keepdim, correction=correction))
    if CATEGORY[name] <= 1:  # std and var only support floating point and complex dtypes
        on_all_devices(call, a).raises(RuntimeError, *filter(None, [_dim_error(dim, a.ndim)]))
        return
    if _dim_error(dim, a.ndim):
        on_all_devices(call, a).raises(_dim_error(dim, a.ndim))
        return
    x = wide(a)
    axis = _axes(dim, a.ndim)
    count = x.size if axis is None else math.prod(
        x.shape[i] for i in (axis if isinstance(axis, tuple) else (axis,)))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mean = x.mean(axis=axis, keepdims=True) if x.size else np.zeros((1,) * x.ndim)
        squares = np.abs(x - mean) ** 2
        variance = squares.sum(axis=axis, keepdims=keepdim) / max(count - correction, 0)
        if count - correction <= 0:  # no degrees of freedom: inf where values differ (even if their squares
            spread = (x != mean).any(axis=axis, keepdims=keepdim)  # underflow to 0), NaN where all are equal
            variance = np.where(spread, np.inf, np.nan)
        scale = np.asarray(np.abs(x).max(axis=axis, keepdims=keepdim, initial=0.0)) ** 2
    atol = 64 * _eps(name) * scale + 1e-6
    result = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    if function == "std":
        variance, atol = np.sqrt(variance), np.sqrt(atol)
    check_tensor(on_all_devices(call, a, atol=atol), cast(variance, result), result, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_var_without_degrees_of_freedom_is_inf_where_values_differ(device, dtype):
    """``correction >= count`` divides by zero: inf where the values differ (PyTorch), even when the squared
    deviations underflow (the smallest normal float32 found this), nan where they are all equal or nan."""
    rows = np.array([[0, 1.1754944e-38], [2, 2], [np.nan, 1], [5, -5]], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = agnostic.tensor(rows, device=device).var(1, correction=2)
    np.testing.assert_array_equal(result.cpu().numpy(), np.array([np.inf, np.nan, np.nan, np.inf], dtype))


# ----- max, min, argmax, argmin -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", INTS + FLOATS + COMPLEX)
@pytest.mark.parametrize("function", ["max", "min"])
@fewer_examples()
@given(data=st.data())
def test_max_min(function, name, data):
    """``max(t)``: the largest element (RuntimeError when empty); ``max(t, dim)``: (values, indices) with the first
    index of the extreme (IndexError when the reduced dim is empty); complex tensors have no order."""
    a, dim, keepdim = data.draw(reduction_input(names=st.just(name), multi=False))
    if dim is None:
        outcome = on_all_devices(getattr(agnostic, function), a)
    else:
        outcome = on_all_devices(lambda t: tuple(getattr(t, function)(dim, keepdim)), a)
    if CATEGORY[name] == 3:  # complex numbers have no order
        outcome.raises(RuntimeError, *filter(None, [dim is not None and _dim_error(dim, a.ndim)]))
        return
    if dim is not None and _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    reduce_value = np.max if function == "max" else np.min
    reduce_index = np.argmax if function == "max" else np.argmin
    if dim is None:
        if a.size == 0:
            outcome.raises(RuntimeError)  # max(): Expected reduction dim to be specified for input.numel() == 0
            return
        check_tensor(outcome, reduce_value(a), name)
        return
    axis = _axes(dim, a.ndim)
    if a.ndim and a.shape[axis] == 0:
        outcome.raises(IndexError)  # max(): Expected reduction dim 0 to have non-zero size
        return
    values, indices = outcome.ok()
    if a.ndim == 0:
        check_tensor(values, a, name)
        check_tensor(indices, np.zeros((), np.int64), "int64")
        return
    check_tensor(values, reduce_value(a, axis=axis, keepdims=keepdim), name)
    check_tensor(indices, reduce_index(a, axis=axis, keepdims=keepdim), "int64")


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("function", ["argmax", "argmin"])
@fewer_examples()
@given(data=st.data())
def test_argmax_argmin(function, name, data):
    a, dim, keepdim = data.draw(reduction_input(names=st.just(name), multi=False))
    if dim is None:
        outcome = on_all_devices(getattr(agnostic, function), a)
    else:
        outcome = on_all_devices(lambda t: getattr(agnostic, function)(t, dim, keepdim), a)
    if dim is not None and _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    if dim is None and a.size == 0 or dim is not None and a.ndim and a.shape[_axes(dim, a.ndim)] == 0:
        outcome.raises(IndexError)  # argmax(): Expected reduction dim to be specified for input.numel() == 0.
        return
    if CATEGORY[name] in (0, 3):  # "argmax_cpu" not implemented for 'Bool' / 'ComplexFloat' (kernel dispatch)
        outcome.raises(RuntimeError)
        return
    reduce_index = np.argmax if function == "argmax" else np.argmin
    if dim is None:
        expected = reduce_index(a.reshape(-1))
    elif a.ndim == 0:
        expected = np.zeros((), np.int64)
    else:
        expected = reduce_index(a, axis=_axes(dim, a.ndim), keepdims=keepdim)
    check_tensor(outcome, np.asarray(expected, np.int64), "int64")


# ----- all, any ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("function", ["all", "any"])
@fewer_examples()
@given(data=st.data())
def test_all_any(function, name, data):
    """bool results, except uint8 inputs which give uint8 (PyTorch's backward compatibility rule)."""
    a, dim, keepdim = data.draw(reduction_input(names=st.just(name), lo=-2, hi=2, multi=False))
    if dim is None:
        outcome = on_all_devices(getattr(agnostic, function), a)
    else:
        outcome = on_all_devices(lambda t: getattr(agnostic, function)(t, dim, keepdim), a)
    if dim is not None and _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    result = "uint8" if a.dtype.name == "uint8" else "bool"
    expected = _reduce(getattr(np, function), a != 0, dim, keepdim if dim is not None else False)
    check_tensor(outcome, cast(expected, result), result)


# ----- cumsum, norm -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ALL)
@fewer_examples()
@given(as_method=st.booleans(), data=st.data())
def test_cumsum(name, as_method, data):
    a, dim, _ = data.draw(reduction_input(names=st.just(name), multi=False, allow_none=False))
    result = "int64" if CATEGORY[a.dtype.name] <= 1 else a.dtype.name
    x = wide(cast(a, result))
    if a.ndim == 0:
        expected, atol = x, None
    else:
        expected = np.cumsum(x, axis=_axes(dim, a.ndim))
        atol = 32 * _eps(result) * np.cumsum(np.abs(x), axis=_axes(dim, a.ndim)) + 1e-6 \
            if CATEGORY[result] >= 2 else None
    call = (lambda t: t.cumsum(dim)) if as_method else (lambda t: agnostic.cumsum(t, dim))
    check_tensor(on_all_devices(call, a, atol=atol), cast(expected, result), result, atol=atol)


@pytest.mark.parametrize("name", ALL)
@fewer_examples()
@given(p=st.sampled_from([2, 1, 3, math.inf, "fro"]), data=st.data())
def test_norm(name, p, data):
    a, dim, keepdim = data.draw(reduction_input(names=st.just(name), multi=False))
    outcome = on_all_devices(lambda t: agnostic.norm(t, p, dim, keepdim), a)
    name = a.dtype.name
    if CATEGORY[name] <= 1:  # linalg.vector_norm: Expected a floating point or complex tensor as input
        outcome.raises(RuntimeError, *filter(None, [_dim_error(dim, a.ndim)]))
        return
    if _dim_error(dim, a.ndim):
        outcome.raises(_dim_error(dim, a.ndim))
        return
    axis = _axes(dim, a.ndim)
    reduced_size = a.size if axis is None else a.shape[axis]
    if p == math.inf and reduced_size == 0:
        outcome.raises(RuntimeError)  # cannot compute the inf norm on an empty tensor (no identity)
        return
    magnitude = np.abs(wide(a)).astype(np.float64)
    keep = keepdim  # vector_norm keeps every reduced dim with dim=None, keepdim=True
    with np.errstate(all="ignore"):
        if p == math.inf:
            expected = _reduce(np.max, magnitude, dim, keep)
        else:
            order = 2 if p == "fro" else p
            expected = _reduce(np.sum, magnitude ** order, dim, keep) ** (1.0 / order)
    result = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    check_tensor(outcome, cast(expected, result), result)


# ----- matmul -----------------------------------------------------------------------------------------------------
@given(shapes_=hnp.mutually_broadcastable_shapes(signature="(m?,n),(n,p?)->(m?,p?)", max_dims=4, min_side=0,
                                                 max_side=4),
       names=st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)), data=st.data())
def test_matmul(shapes_, names, data):
    """Matrix products with broadcast batch dimensions; both operands must share a dtype (no promotion) and bool is
    refused. Integer-valued inputs keep float16 exact, so every device must agree exactly."""
    shape_a, shape_b = shapes_.input_shapes
    a = data.draw(arrays(names[0], shape_a, -4, 4, integral=True))
    b = data.draw(arrays(names[1], shape_b, -4, 4, integral=True))
    outcome = on_all_devices(lambda x, y: x @ y, a, b)
    function = on_all_devices(agnostic.matmul, a, b)
    if names[0] != names[1] or names[0] == "bool":
        outcome.raises(RuntimeError)
        function.raises(RuntimeError)
        return
    expected = np.matmul(wide(a).astype(np.complex128 if names[0] in COMPLEX else np.float64), wide(b))
    check_tensor(outcome, cast(expected, names[0]), names[0])
    check_tensor(function, cast(expected, names[0]), names[0])


@given(lead_a=shapes(max_dims=2, max_side=3), lead_b=shapes(max_dims=2, max_side=3),
       size=st.integers(0, 4), scalar=st.sampled_from([None, "a", "b"]),
       name=st.sampled_from(["float32", "float64", "int64", "complex64"]), data=st.data())
def test_inner(lead_a, lead_b, size, scalar, name, data):
    """``inner`` contracts the last dimensions (``a.shape[:-1] + b.shape[:-1]``) and multiplies a 0-dim operand,
    as ``numpy.inner``; mismatched last dimensions raise."""
    shape_a = () if scalar == "a" else lead_a + (size,)
    shape_b = () if scalar == "b" else lead_b + (size,)
    a = data.draw(arrays(name, shape_a, -4, 4, integral=True))
    b = data.draw(arrays(name, shape_b, -4, 4, integral=True))
    check_tensor(on_all_devices(agnostic.inner, a, b), np.inner(a, b), name)
    if scalar is None:
        wrong = data.draw(arrays(name, lead_b + (size + 1,), -4, 4, integral=True))
        on_all_devices(agnostic.inner, a, wrong).raises(RuntimeError)


@given(shape_a=shapes(max_dims=3, max_side=4), shape_b=shapes(max_dims=3, max_side=4),
       name=st.sampled_from(["float32", "int64"]))
def test_matmul_shape_errors(shape_a, shape_b, name):
    a, b = np.ones(shape_a, name), np.ones(shape_b, name)
    outcome = on_all_devices(agnostic.matmul, a, b)
    try:
        expected = np.matmul(a, b) if a.ndim and b.ndim else None
    except ValueError:
        expected = None
    if expected is None:
        outcome.raises(RuntimeError)  # 0-dim operands, mismatched inner sizes, batch dims that don't broadcast
    else:
        check_tensor(outcome, expected, name)
