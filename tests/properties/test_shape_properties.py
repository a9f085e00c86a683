"""Shape ops (reshape, view, permute, transpose, squeeze, unsqueeze, expand, flatten, cat, stack, split, chunk, flip,
roll, gather, index_select) agree across devices and with NumPy, keep dtypes exactly, and raise PyTorch's errors."""

import functools
import itertools
import math

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import ALL, arrays, cast, check_tensor, on_all_devices, shapes, torch_promote

dtype_names = st.sampled_from(ALL)


def _tensor_case(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return st.tuples(dtype_names, shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                         max_side=max_side)).flatmap(lambda c: arrays(c[0], c[1], -50, 50))


@functools.lru_cache(maxsize=None)
def _shapes_with_numel(numel):
    found = [()] if numel == 1 else []
    for ndim in range(1, 5):
        found += [s for s in itertools.product(range(9), repeat=ndim) if math.prod(s) == numel]
    return tuple(found)


def _same_numel_shape(numel):
    """A shape with ``numel`` elements (up to 4 dims of at most 8)."""
    return st.sampled_from(_shapes_with_numel(numel))


@given(_tensor_case(), st.data())
def test_reshape_and_view(a, data):
    target = data.draw(_same_numel_shape(a.size))
    infer = data.draw(st.booleans()) and len(target) > 0 and a.size > 0
    spelled = tuple(-1 if infer and i == 0 else s for i, s in enumerate(target))
    expected = a.reshape(target)
    check_tensor(on_all_devices(lambda t: t.reshape(spelled), a), expected, a.dtype.name)
    check_tensor(on_all_devices(lambda t: t.view(spelled), a), expected, a.dtype.name)  # contiguous: always a view
    check_tensor(on_all_devices(lambda t: agnostic.reshape(t, spelled), a), expected, a.dtype.name)


@given(_tensor_case(), st.lists(st.integers(0, 6), min_size=0, max_size=4))
def test_reshape_wrong_numel_raises(a, target):
    assume(math.prod(target) != a.size)
    on_all_devices(lambda t: t.reshape(target), a).raises(RuntimeError)
    on_all_devices(lambda t: t.view(target), a).raises(RuntimeError)


@given(_tensor_case(min_dims=2, min_side=2, max_side=4))
def test_view_of_transposed_raises_and_reshape_copies(a):
    """A transposed matrix (both sizes > 1) can't be flattened as a view: RuntimeError; reshape copies."""
    on_all_devices(lambda t: t.transpose(0, 1).view(-1), a).raises(RuntimeError)
    check_tensor(on_all_devices(lambda t: t.transpose(0, 1).reshape(-1), a), np.swapaxes(a, 0, 1).reshape(-1),
                 a.dtype.name)


@given(_tensor_case(), st.data())
def test_permute(a, data):
    ndim = a.ndim
    order = data.draw(st.permutations(range(ndim)))
    dims = [d - ndim if data.draw(st.booleans()) else d for d in order]
    check_tensor(on_all_devices(lambda t: t.permute(*dims), a), np.transpose(a, order), a.dtype.name)
    check_tensor(on_all_devices(lambda t: agnostic.permute(t, dims), a), np.transpose(a, order), a.dtype.name)
    if ndim:
        repeated = list(order)
        repeated[0] = order[-1] if ndim > 1 else order[0]
        if len(set(repeated)) != ndim:
            on_all_devices(lambda t: t.permute(*repeated), a).raises(RuntimeError)
    on_all_devices(lambda t: t.permute(*range(ndim + 1)), a).raises(RuntimeError)


@given(_tensor_case(), st.data())
def test_transpose(a, data):
    bound = max(a.ndim, 1)
    d0 = data.draw(st.integers(-bound, bound - 1))
    d1 = data.draw(st.integers(-bound, bound - 1))
    expected = np.swapaxes(a, d0, d1) if a.ndim else a
    check_tensor(on_all_devices(lambda t: t.transpose(d0, d1), a), expected, a.dtype.name)
    check_tensor(on_all_devices(lambda t: agnostic.swapaxes(t, d0, d1), a), expected, a.dtype.name)


@given(_tensor_case(max_side=3), st.data())
def test_squeeze_unsqueeze(a, data):
    bound = max(a.ndim, 1)
    dim = data.draw(st.one_of(st.none(), st.integers(-bound, bound - 1)))
    if dim is None:
        expected = a.reshape([s for s in a.shape if s != 1])
    elif a.ndim and a.shape[dim] == 1:
        expected = np.squeeze(a, dim)
    else:
        expected = a
    check_tensor(on_all_devices(lambda t: t.squeeze() if dim is None else t.squeeze(dim), a), expected, a.dtype.name)
    position = data.draw(st.integers(-a.ndim - 1, a.ndim))
    check_tensor(on_all_devices(lambda t: t.unsqueeze(position), a), np.expand_dims(a, position), a.dtype.name)
    on_all_devices(lambda t: t.unsqueeze(a.ndim + 1), a).raises(IndexError)


@given(_tensor_case(max_dims=3, max_side=3), st.data())
def test_expand(a, data):
    lead = data.draw(st.integers(0, 2))
    target = [data.draw(st.integers(0, 3)) for _ in range(lead)]
    for size in a.shape:
        target.append(data.draw(st.sampled_from([size, -1] + ([0, 2, 3] if size == 1 else []))))
    expected_shape = tuple(target[:lead]) + tuple(a.shape[i] if s == -1 else s for i, s in enumerate(target[lead:]))
    check_tensor(on_all_devices(lambda t: t.expand(*target), a), np.broadcast_to(a, expected_shape), a.dtype.name)
    check_tensor(on_all_devices(lambda t: t.expand(target), a), np.broadcast_to(a, expected_shape), a.dtype.name)
    bad = [s + 1 for s in a.shape if s > 1]
    if bad:  # a non-singleton dim can't be expanded to another size
        wrong = [s + 1 if s > 1 else s for s in a.shape]
        on_all_devices(lambda t: t.expand(*wrong), a).raises(RuntimeError)
    if a.ndim:
        on_all_devices(lambda t: t.expand(*a.shape[1:]), a).raises(RuntimeError)  # fewer sizes than dims


@given(_tensor_case(), st.data())
def test_flatten(a, data):
    bound = max(a.ndim, 1)
    start = data.draw(st.integers(-bound, bound - 1))
    end = data.draw(st.integers(-bound, bound - 1))
    outcome = on_all_devices(lambda t: t.flatten(start, end), a)
    if a.ndim == 0:
        check_tensor(outcome, a.reshape(1), a.dtype.name)
        return
    s, e = start % a.ndim, end % a.ndim
    if s > e:
        outcome.raises(RuntimeError)  # flatten() has invalid args: start_dim cannot come after end_dim
        return
    shape = a.shape[:s] + (math.prod(a.shape[s:e + 1]),) + a.shape[e + 1:]
    check_tensor(outcome, a.reshape(shape), a.dtype.name)


# ----- joining and splitting --------------------------------------------------------------------------------------
@st.composite
def cat_case(draw):
    shape = list(draw(shapes(min_dims=1, max_dims=3, max_side=4)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    count = draw(st.integers(1, 3))
    pieces = []
    for _ in range(count):
        piece_shape = list(shape)
        piece_shape[dim] = draw(st.integers(0, 3))
        pieces.append(draw(arrays(draw(dtype_names), tuple(piece_shape), -20, 20)))
    return pieces, dim


def _promote_all(arrays_):
    result = None
    for a in arrays_:
        result = torch_promote(result, a.dtype.name)
    return result


@given(cat_case())
def test_cat_promotes_and_concatenates(case):
    pieces, dim = case
    result = _promote_all(pieces)
    expected = np.concatenate([cast(p, result) for p in pieces], axis=dim)
    check_tensor(on_all_devices(lambda *ts: agnostic.cat(list(ts), dim), *pieces), expected, result)
    check_tensor(on_all_devices(lambda *ts: agnostic.cat(ts, dim=dim), *pieces), expected, result)


@given(cat_case(), st.data())
def test_cat_errors(case, data):
    pieces, dim = case
    ndim = pieces[0].ndim
    bad = data.draw(st.sampled_from(["sizes", "rank", "dim", "zero-dim"]))
    if bad == "sizes":
        other = [i for i in range(ndim) if i != dim % ndim]
        assume(other)
        shape = list(pieces[0].shape)
        shape[other[0]] += 1
        pieces = pieces + [np.zeros(shape, pieces[0].dtype)]
        on_all_devices(lambda *ts: agnostic.cat(ts, dim), *pieces).raises(RuntimeError)
    elif bad == "rank":
        assume(pieces[0].shape != (0,))  # a 1-D empty tensor is skipped by cat (legacy rule)
        pieces = pieces + [np.zeros(pieces[0].shape + (1,), pieces[0].dtype)]
        on_all_devices(lambda *ts: agnostic.cat(ts, dim), *pieces).raises(RuntimeError)
    elif bad == "dim":
        on_all_devices(lambda *ts: agnostic.cat(ts, ndim), *pieces).raises(IndexError)
    else:
        on_all_devices(lambda x, y: agnostic.cat([x, y]), np.zeros((), np.float32),
                       np.zeros((), np.float32)).raises(RuntimeError)


@given(st.lists(dtype_names, min_size=1, max_size=3), shapes(max_dims=3, max_side=4), st.data())
def test_stack(names, shape, data):
    pieces = [data.draw(arrays(n, shape, -20, 20)) for n in names]
    dim = data.draw(st.integers(-len(shape) - 1, len(shape)))
    result = _promote_all(pieces)
    expected = np.stack([cast(p, result) for p in pieces], axis=dim)
    check_tensor(on_all_devices(lambda *ts: agnostic.stack(ts, dim), *pieces), expected, result)
    if shape:
        other = np.zeros(tuple(s + 1 for s in shape), pieces[0].dtype)
        on_all_devices(lambda *ts: agnostic.stack(ts, 0), *pieces, other).raises(RuntimeError)


def _torch_split_sizes(length, size):
    """torch.split's pieces: at least one (an empty dim gives one empty piece), the last one possibly smaller."""
    count = max(-(-length // size), 1)
    return [min(size, length - i * size) for i in range(count)]


@given(_tensor_case(max_dims=3), st.integers(1, 4), st.data())
def test_split(a, size, data):
    if a.ndim == 0:
        on_all_devices(lambda t: t.split(size), a).raises(RuntimeError)  # split expects at least a 1-dim tensor
        return
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    pieces = on_all_devices(lambda t: t.split(size, dim), a).ok()
    sizes = _torch_split_sizes(a.shape[dim], size)
    bounds = np.cumsum(sizes)[:-1]
    expected = np.split(a, bounds, axis=dim)
    assert len(pieces) == len(expected), f"{len(pieces)} pieces, PyTorch gives {len(expected)} (sizes {sizes})"
    for piece, want in zip(pieces, expected):
        check_tensor(piece, want, a.dtype.name)
    sections = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=3))
    outcome = on_all_devices(lambda t: t.split(sections, dim), a)
    if sum(sections) != a.shape[dim]:
        outcome.raises(RuntimeError)  # split_with_sizes expects split_sizes to sum exactly to the dim size
    else:
        for piece, want in zip(outcome.ok(), np.split(a, np.cumsum(sections)[:-1], axis=dim)):
            check_tensor(piece, want, a.dtype.name)


@given(_tensor_case(max_dims=3), st.integers(1, 6), st.data())
def test_chunk(a, chunks, data):
    if a.ndim == 0:
        on_all_devices(lambda t: t.chunk(chunks), a).raises(RuntimeError)  # chunk expects at least a 1-dim tensor
        return
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    length = a.shape[dim]
    pieces = on_all_devices(lambda t: t.chunk(chunks, dim), a).ok()
    size = -(-length // chunks)
    sizes = [0] * chunks if length == 0 else _torch_split_sizes(length, size)
    expected = np.split(a, np.cumsum(sizes)[:-1], axis=dim)
    assert len(pieces) == len(expected), f"{len(pieces)} chunks, PyTorch gives {len(expected)} (sizes {sizes})"
    for piece, want in zip(pieces, expected):
        check_tensor(piece, want, a.dtype.name)
    on_all_devices(lambda t: t.chunk(0, dim), a).raises(RuntimeError)


@given(_tensor_case(), st.data())
def test_flip(a, data):
    if a.ndim == 0:
        dims = data.draw(st.sampled_from([(), (0,), (-1,)]))
        check_tensor(on_all_devices(lambda t: t.flip(dims), a), a, a.dtype.name)
        return
    dims = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), max_size=a.ndim, unique_by=lambda d: d % a.ndim))
    check_tensor(on_all_devices(lambda t: t.flip(dims), a), np.flip(a, tuple(dims)) if dims else a, a.dtype.name)
    if dims:
        on_all_devices(lambda t: t.flip(dims + dims), a).raises(RuntimeError)  # dims has duplicates


@given(_tensor_case(), st.data())
def test_roll(a, data):
    if a.ndim == 0 or data.draw(st.booleans()):
        shift = data.draw(st.integers(-7, 7))
        check_tensor(on_all_devices(lambda t: t.roll(shift), a), np.roll(a.reshape(-1), shift).reshape(a.shape),
                     a.dtype.name)
        return
    dims = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=a.ndim))
    shifts = [data.draw(st.integers(-7, 7)) for _ in dims]
    check_tensor(on_all_devices(lambda t: t.roll(shifts, dims), a), np.roll(a, shifts, [d % a.ndim for d in dims]),
                 a.dtype.name)
    on_all_devices(lambda t: t.roll(shifts + [1], dims), a).raises(RuntimeError)


# ----- gather, index_select ---------------------------------------------------------------------------------------
@given(_tensor_case(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_gather(a, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    axis = dim % a.ndim
    index_shape = tuple(data.draw(st.integers(0, a.shape[i] if i != axis else 4)) for i in range(a.ndim))
    index = data.draw(arrays("int64", index_shape, 0, a.shape[axis] - 1))
    sliced = a[tuple(slice(0, n) if i != axis else slice(None) for i, n in enumerate(index_shape))]
    expected = np.take_along_axis(sliced, index, axis=axis)
    check_tensor(on_all_devices(lambda t, i: t.gather(dim, i), a, index), expected, a.dtype.name)
    check_tensor(on_all_devices(lambda t, i: agnostic.gather(t, dim, i), a, index), expected, a.dtype.name)
    if index.size:
        on_all_devices(lambda t, i: t.gather(dim, i), a, index.astype(np.int32)).raises(RuntimeError)
        for bad in (a.shape[axis], -1):  # no wrap-around: every index must be in [0, size)
            wrong = index.copy()
            wrong.reshape(-1)[0] = bad
            on_all_devices(lambda t, i: t.gather(dim, i), a, wrong).raises(RuntimeError)


@given(_tensor_case(min_dims=1, max_dims=3, max_side=4), st.sampled_from(["int64", "int32"]), st.data())
def test_index_select(a, index_name, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    size = a.shape[dim]
    count = data.draw(st.integers(0, 5))
    if size == 0:
        count = 0
    index = np.array([data.draw(st.integers(0, size - 1)) for _ in range(count)], dtype=index_name)
    check_tensor(on_all_devices(lambda t, i: t.index_select(dim, i), a, index), np.take(a, index, axis=dim),
                 a.dtype.name)
    for bad in (size, -1):  # "index out of range in self": negative indices don't wrap
        on_all_devices(lambda t, i: t.index_select(dim, i), a, np.array([bad], index_name)).raises(IndexError)
