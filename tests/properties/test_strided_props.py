"""as_strided and slice_scatter over drawn shapes, strides and dtypes: every device agrees with the CPU, and the CPU
with NumPy's ``as_strided`` and slice assignment."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import ALL, arrays, check_tensor, on_all_devices, shapes

dtype_names = st.sampled_from(ALL)


@st.composite
def strided_cases(draw):
    """A 1-D array (the memory), and a view of it: sizes, strides (in elements) and an offset."""
    name = draw(dtype_names)
    memory = draw(arrays(name, (draw(st.integers(1, 24)),), -50, 50))
    ndim = draw(st.integers(0, 3))
    size = tuple(draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    stride = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    offset = draw(st.integers(0, memory.size))
    return name, memory, size, stride, offset


def _needed(size, stride, offset):
    return 0 if 0 in size else offset + 1 + sum((length - 1) * step for length, step in zip(size, stride))


@given(strided_cases())
def test_as_strided_views_memory_as_numpy_does(case):
    name, memory, size, stride, offset = case
    outcome = on_all_devices(lambda t: agnostic.as_strided(t, size, stride, offset), memory)
    needed = _needed(size, stride, offset)
    if needed > memory.size:
        if needed * memory.itemsize > memory.nbytes + 1024:  # past what any device's allocation could hold
            outcome.raises(RuntimeError)
        return
    itemsize = memory.itemsize
    expected = np.lib.stride_tricks.as_strided(memory[offset:] if needed else memory, size,
                                               tuple(step * itemsize for step in stride))
    check_tensor(outcome, expected, name)


@given(strided_cases())
def test_as_strided_writes_reach_the_memory(case):
    name, memory, size, stride, offset = case
    if not _needed(size, stride, offset) or _needed(size, stride, offset) > memory.size:
        return
    positions = offset + sum(np.arange(length).reshape([-1 if axis == position else 1 for axis in range(len(size))])
                             * step for position, (length, step) in enumerate(zip(size, stride)))
    if np.unique(positions).size != np.prod(size):
        return  # elements sharing memory: in-place writes into such a view are refused

    def write_through(tensor):
        view = tensor.as_strided(size, stride, offset)
        view.zero_()
        return tensor

    written = memory.copy()
    np.lib.stride_tricks.as_strided(written[offset:], size, tuple(step * memory.itemsize for step in stride))[...] = 0
    check_tensor(on_all_devices(write_through, memory), written, name)


@st.composite
def slice_cases(draw):
    name = draw(dtype_names)
    shape = draw(shapes(min_dims=1, max_dims=3, max_side=5))
    values = draw(arrays(name, shape, -50, 50))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    start = draw(st.none() | st.integers(-6, 6))
    end = draw(st.none() | st.integers(-6, 6))
    step = draw(st.integers(1, 3))
    key = (slice(None),) * (dim % len(shape)) + (slice(start, end, step),)
    src = draw(arrays(name, values[key].shape, -50, 50))
    return name, values, src, dim, start, end, step, key


@given(slice_cases())
def test_slice_scatter_writes_the_slice_of_a_copy(case):
    name, values, src, dim, start, end, step, key = case
    expected = values.copy()
    expected[key] = src
    outcome = on_all_devices(lambda t, s: agnostic.slice_scatter(t, s, dim, start, end, step), values, src)
    check_tensor(outcome, expected, name)


@given(slice_cases())
def test_slice_scatter_refuses_a_source_of_another_shape(case):
    name, values, src, dim, start, end, step, key = case
    wrong = np.zeros(src.shape[:-1] + (src.shape[-1] + 1,), src.dtype) if src.ndim else np.zeros(1, src.dtype)
    on_all_devices(lambda t, s: agnostic.slice_scatter(t, s, dim, start, end, step), values, wrong).raises(
        RuntimeError)
