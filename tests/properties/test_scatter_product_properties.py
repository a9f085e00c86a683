"""scatter_reduce, take_along_dim, kron and tensordot over arbitrary shapes and dtypes agree across devices and with
NumPy references (a loop written from PyTorch's documentation for scatter_reduce)."""

import itertools

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import FLOATS, INTS, arrays, check_tensor, fewer_examples, on_all_devices, shapes

REDUCTIONS = ["sum", "prod", "mean", "amax", "amin"]


def _scatter_reduce_reference(input, dim, index, src, reduce, include_self):
    out = input.copy()
    groups = {}
    for position in itertools.product(*(range(n) for n in index.shape)):
        target = list(position)
        target[dim] = index[position]
        groups.setdefault(tuple(target), []).append(src[position])
    with np.errstate(all="ignore"):
        for target, values in groups.items():
            values = np.array(([input[target]] if include_self else []) + values, dtype=input.dtype)
            if reduce == "sum":
                out[target] = values.sum(dtype=input.dtype)
            elif reduce == "prod":
                out[target] = values.prod(dtype=input.dtype)
            elif reduce == "mean":
                total = values.sum(dtype=input.dtype)
                out[target] = total // len(values) if input.dtype.kind in "iu" else total / input.dtype.type(
                    len(values))
            elif reduce == "amax":
                out[target] = values.max()
            else:
                out[target] = values.min()
    return out


@st.composite
def scatter_cases(draw):
    dtype = draw(st.sampled_from(INTS + FLOATS))
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(0, len(shape) - 1))
    index_shape = tuple(draw(st.integers(0, 4)) if axis == dim else draw(st.integers(0, size))
                        for axis, size in enumerate(shape))
    src_shape = tuple(size + draw(st.integers(0, 1)) for size in index_shape)
    # Small integral values: sums, products and means are exact in every dtype, and ties are common.
    input = draw(arrays(dtype, shape, -3, 3, integral=True))
    src = draw(arrays(dtype, src_shape, -3, 3, integral=True))
    index = draw(arrays("int64", index_shape, 0, shape[dim] - 1))
    return input, dim, index, src, draw(st.sampled_from(REDUCTIONS)), draw(st.booleans())


@fewer_examples(0.5)
@given(scatter_cases())
def test_scatter_reduce_matches_the_documented_loop(case):
    input, dim, index, src, reduce, include_self = case
    outcome = on_all_devices(lambda a, i, s: a.scatter_reduce(dim, i, s, reduce, include_self=include_self),
                             input, index, src)
    check_tensor(outcome, _scatter_reduce_reference(input, dim, index, src, reduce, include_self), input.dtype.name)


@st.composite
def take_cases(draw):
    dtype = draw(st.sampled_from(["bool"] + INTS + FLOATS))
    shape = draw(shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    dim = draw(st.integers(0, len(shape) - 1))
    indices_shape = tuple(draw(st.integers(0, 4)) if axis == dim else size for axis, size in enumerate(shape))
    return draw(arrays(dtype, shape)), dim, draw(arrays("int64", indices_shape, 0, shape[dim] - 1))


@fewer_examples(0.5)
@given(take_cases())
def test_take_along_dim_matches_numpy(case):
    input, dim, indices = case
    outcome = on_all_devices(lambda a, i: agnostic.take_along_dim(a, i, dim), input, indices)
    check_tensor(outcome, np.take_along_axis(input, indices, axis=dim), input.dtype.name)


@fewer_examples(0.5)
@given(st.sampled_from(INTS + FLOATS), shapes(max_dims=3, max_side=3), shapes(max_dims=3, max_side=3), st.data())
def test_kron_matches_numpy(dtype, first_shape, second_shape, data):
    first = data.draw(arrays(dtype, first_shape, -5, 5, integral=True))
    second = data.draw(arrays(dtype, second_shape, -5, 5, integral=True))
    outcome = on_all_devices(agnostic.kron, first, second)
    check_tensor(outcome, np.kron(first, second), dtype)


@fewer_examples(0.5)
@given(shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), shapes(max_dims=2, min_side=1, max_side=3),
       st.data())
def test_tensordot_matches_numpy(shared, free, data):
    contracted = data.draw(st.integers(0, len(shared)))
    first_shape = tuple(free) + tuple(shared[:contracted])
    second_shape = tuple(shared[:contracted]) + tuple(free[::-1])
    first = data.draw(arrays("float64", first_shape, -5, 5, integral=True))
    second = data.draw(arrays("float64", second_shape, -5, 5, integral=True))
    outcome = on_all_devices(lambda a, b: agnostic.tensordot(a, b, dims=contracted), first, second)
    check_tensor(outcome, np.tensordot(first, second, axes=contracted), "float64")
