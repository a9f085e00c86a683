"""Indexing agrees across devices and with NumPy: basic indexing (views), integer-tensor and boolean-mask indexing
(copies), assignment with broadcasting and casting into the tensor's dtype, and IndexError for bad indices."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import ALL, CATEGORY, arrays, cast, check_tensor, elements, on_all_devices, shapes

dtype_names = st.sampled_from(ALL)


def _tensor(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return st.tuples(dtype_names, shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                         max_side=max_side)).flatmap(lambda c: arrays(c[0], c[1], -50, 50))


@st.composite
def basic_key(draw, shape):
    """A basic index: ints (in range), slices with positive steps, None and at most one Ellipsis."""
    items = []
    dim = 0
    used_ellipsis = False
    while dim < len(shape) and draw(st.booleans()):
        kind = draw(st.sampled_from(["int", "slice", "none", "ellipsis"]))
        size = shape[dim]
        if kind == "int" and size:
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            stop = draw(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
            items.append(slice(start, stop, draw(st.one_of(st.none(), st.integers(1, 3)))))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis" and not used_ellipsis:
            items.append(Ellipsis)
            used_ellipsis = True
            dim = len(shape)  # an Ellipsis covers the rest (items after it would index from the end)
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@given(_tensor(), st.data())
def test_basic_indexing_is_a_view(a, data):
    key = data.draw(basic_key(a.shape))
    expected = a[key]
    outcome = on_all_devices(lambda t: t[key], a)
    check_tensor(outcome, expected, a.dtype.name)
    if expected.size == 0:
        return
    one = cast(1, a.dtype.name)

    def write_through(t):
        view = t[key]
        view.fill_(one.item())
        return t

    reference = a.copy()
    reference[key] = one
    check_tensor(on_all_devices(write_through, a), reference, a.dtype.name)


@given(_tensor(min_dims=1, min_side=1), st.data())
def test_out_of_range_int_index_raises(a, data):
    dim = data.draw(st.integers(0, a.ndim - 1))
    size = a.shape[dim]
    bad = data.draw(st.sampled_from([size, size + 3, -size - 1]))
    key = (slice(None),) * dim + (bad,)
    on_all_devices(lambda t: t[key], a).raises(IndexError)
    on_all_devices(lambda t: t.__setitem__(key, 0), a).raises(IndexError)
    too_many = (0,) * (a.ndim + 1)
    on_all_devices(lambda t: t[too_many], a).raises(IndexError)


@given(_tensor(min_dims=1), st.data(), st.sampled_from(["int64", "int32", "list"]))
def test_integer_tensor_indexing(a, data, form):
    """Index tensors (int64/int32) or lists select along one dim (negative indices count from the end)."""
    dim = data.draw(st.integers(0, a.ndim - 1))
    size = a.shape[dim]
    prefix = (slice(None),) * dim
    if size:
        index = data.draw(arrays("int64", data.draw(shapes(max_dims=2, max_side=3)), -size, size - 1))
    else:
        index = np.zeros((0,), np.int64)
    expected = a[prefix + (index,)]
    if form == "list":
        positions = index.tolist() if index.ndim else [int(index)]
        expected = a[prefix + (np.array(positions, np.int64).reshape(np.shape(positions)),)]
        outcome = on_all_devices(lambda t: t[prefix + (positions,)], a)
    else:
        outcome = on_all_devices(lambda t, i: t[prefix + (i,)], a, index.astype(form))
    check_tensor(outcome, expected, a.dtype.name)
    if size:  # out of range: an IndexError on every device (CuPy would wrap around silently)
        for bad in (size, -size - 1):
            on_all_devices(lambda t, i: t[prefix + (i,)], a, np.array([bad], np.int64)).raises(IndexError)


@given(_tensor(min_dims=1, max_side=4), st.data())
def test_boolean_mask_indexing(a, data):
    depth = data.draw(st.integers(1, a.ndim))
    mask = data.draw(arrays("bool", a.shape[:depth]))
    check_tensor(on_all_devices(lambda t, m: t[m], a, mask), a[mask], a.dtype.name)
    full = np.broadcast_to(mask.reshape(mask.shape + (1,) * (a.ndim - depth)), a.shape).copy()
    check_tensor(on_all_devices(lambda t, m: t.masked_select(m), a, full), a[full], a.dtype.name)
    wrong = tuple(s + 1 for s in mask.shape)
    on_all_devices(lambda t, m: t[m], a, np.zeros(wrong, bool)).raises(IndexError)


# Writes into empty tensors are covered by test_inplace_ops_on_empty_tensors_are_no_ops (semantics properties).
@given(_tensor(min_dims=1, min_side=1, max_side=4), st.data())
def test_boolean_mask_assignment(a, data):
    depth = data.draw(st.integers(1, a.ndim))
    mask = data.draw(arrays("bool", a.shape[:depth]))
    value = data.draw(elements(a.dtype.name, -50, 50))
    expected = a.copy()
    expected[mask] = value

    def assign(t, m):
        t[m] = value
        return t

    check_tensor(on_all_devices(assign, a, mask), expected, a.dtype.name)


@st.composite
def assignment_case(draw):
    a = draw(_tensor(min_dims=1, min_side=1, max_side=4))
    key = draw(st.one_of(basic_key(a.shape), _unique_index(a.shape)))
    selected = a[key].shape
    value_kind = draw(st.sampled_from(["python", "tensor", "trailing"]))
    value_name = draw(dtype_names)
    if value_kind == "python":
        value = draw(elements(value_name, -50, 50))
        if isinstance(value, np.generic):
            value = value.item()
        value_name = None
    else:
        shape = selected if value_kind == "tensor" else selected[len(selected) - draw(st.integers(0, len(selected))):]
        value = draw(arrays(value_name, shape, -50, 50))
    return a, key, value


@st.composite
def _unique_index(draw, shape):
    """(slice(None), ..., index tensor of distinct positions) along one dim: assignment order can't matter."""
    dim = draw(st.integers(0, len(shape) - 1))
    size = shape[dim]
    positions = draw(st.lists(st.integers(0, size - 1), unique=True, max_size=size)) if size else []
    return (slice(None),) * dim + (np.array(positions, np.int64),)


@given(assignment_case())
def test_setitem_broadcasts_and_casts_into_self_dtype(case):
    a, key, value = case
    name = a.dtype.name
    if isinstance(value, np.ndarray):
        value_name = value.dtype.name
        # complex -> real drops the imaginary part (with a warning); negative float -> uint8 is undefined in C++
        assume(not (CATEGORY[value_name] == 3 and CATEGORY[name] < 3))
        assume(not (name == "uint8" and CATEGORY[value_name] >= 2 and (value < 0).any()))
    else:
        # a Python number must fit the tensor's dtype (PyTorch checks the conversion: "value cannot be converted
        # to type uint8_t without overflow"); keep to numbers every rule agrees on
        assume(not isinstance(value, complex) or CATEGORY[name] == 3)
        assume(not (name == "uint8" and value < 0))
        assume(name != "bool" or isinstance(value, bool))
    expected = a.copy()
    expected[key] = cast(value, name)

    def assign(t, *rest):
        v = rest[-1] if isinstance(value, np.ndarray) else value
        k = key
        if isinstance(key, tuple) and key and isinstance(key[-1], np.ndarray):
            k = key[:-1] + (rest[0],)
        t[k] = v
        return t

    extra = []
    if isinstance(key, tuple) and key and isinstance(key[-1], np.ndarray):
        extra.append(key[-1])
    if isinstance(value, np.ndarray):
        extra.append(value)
    outcome = on_all_devices(assign, a, *extra)
    check_tensor(outcome, expected, name)


@given(_tensor(min_dims=1, min_side=1, max_side=4), st.data())
def test_setitem_shape_mismatch_raises(a, data):
    dim = data.draw(st.integers(0, a.ndim - 1))
    wrong = list(a.shape)
    wrong[dim] += 1
    value = np.zeros(wrong, a.dtype)
    on_all_devices(lambda t, v: t.__setitem__(Ellipsis, v), a, value).raises(RuntimeError)


@given(_tensor(min_dims=1, min_side=1, max_side=4))
def test_advanced_indexing_copies(a):
    """Advanced indexing returns a copy: writing into it leaves the source alone."""
    index = np.arange(a.shape[0], dtype=np.int64)

    def write(t, i):
        copy = t[i]
        copy.fill_(cast(1, a.dtype.name).item())
        return t

    check_tensor(on_all_devices(write, a, index), a, a.dtype.name)
    assert agnostic.is_tensor(agnostic.tensor(a)[agnostic.tensor(index)])
