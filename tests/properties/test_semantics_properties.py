"""Properties of PyTorch's semantics that hold on every device: type promotion, broadcasting, the in-place rules,
``.to``/``clone``/``copy_`` independence and view write-through."""

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

import agnostic
from _strategies import (
    ALL, CATEGORY, DEVICES, FLOATS, INTS, ag_dtype, arrays, broadcast_or_none, broadcast_pair, broadcastable_pair,
    cast, check_tensor, elements, empty_shapes, fewer_examples, float_result, flush_float32, mismatched_pair,
    on_all_devices, scalar_dtype, scalars, shapes, torch_promote, torch_result_type, wide,
)

dtype_names = st.sampled_from(ALL)


# ----- type promotion ---------------------------------------------------------------------------------------------
@given(dtype_names, dtype_names)
def test_promote_types_is_torch_table(a, b):
    expected = torch_promote(a, b)
    assert agnostic.promote_types(ag_dtype(a), ag_dtype(b)) is ag_dtype(expected)
    assert agnostic.promote_types(ag_dtype(b), ag_dtype(a)) is ag_dtype(expected)


@given(dtype_names, dtype_names, dtype_names)
def test_promote_types_is_associative(a, b, c):
    left = agnostic.promote_types(agnostic.promote_types(ag_dtype(a), ag_dtype(b)), ag_dtype(c))
    right = agnostic.promote_types(ag_dtype(a), agnostic.promote_types(ag_dtype(b), ag_dtype(c)))
    assert left is right


@st.composite
def operands(draw):
    """A tensor (0-dim or dimensioned) as a NumPy array, or a Python number."""
    if draw(st.booleans()):
        name = draw(dtype_names)
        ndim = draw(st.sampled_from([0, 1, 2]))
        return draw(arrays(name, (2,) * ndim, -5, 5))
    return draw(scalars())


@given(operands(), operands())
def test_result_type_follows_torch_tiers(a, b):
    expected = torch_result_type(a, b)
    assume(expected != "complex32")
    outcome = on_all_devices(lambda x, y: agnostic.result_type(x, y), a, b)
    assert outcome.ok() is ag_dtype(expected), f"result_type({a!r}, {b!r}) = {outcome.value}, PyTorch: {expected}"


@given(operands(), operands(), st.sampled_from(["add", "mul", "div", "eq"]))
def test_binary_result_dtype_matches_result_type(a, b, op):
    assume(isinstance(a, np.ndarray) or isinstance(b, np.ndarray))
    expected = torch_result_type(a, b)
    assume(expected != "complex32")
    expected = {"div": float_result(expected), "eq": "bool"}.get(op, expected)
    outcome = on_all_devices(lambda x, y: getattr(agnostic, op)(x, y), a, b)
    snap = outcome.ok()
    assert snap.dtype == expected


def test_python_scalar_defaults():
    """Python int -> int64, float -> default float32, bool -> bool, int/int true division -> float32."""
    for device in DEVICES:
        assert agnostic.tensor(3, device=device).dtype is agnostic.int64
        assert agnostic.tensor(3.0, device=device).dtype is agnostic.float32
        assert agnostic.tensor(True, device=device).dtype is agnostic.bool
        ints = agnostic.tensor([1, 2, 3], device=device)
        assert (ints / 2).dtype is agnostic.float32
        assert (ints / ints).dtype is agnostic.float32
    assert scalar_dtype(1.0) == "float32"


# ----- broadcasting -----------------------------------------------------------------------------------------------
@given(st.lists(shapes(), min_size=1, max_size=3))
def test_broadcast_shapes_matches_numpy(shape_list):
    expected = broadcast_or_none(*shape_list)
    if expected is None:
        with pytest.raises(RuntimeError):
            agnostic.broadcast_shapes(*shape_list)
    else:
        assert tuple(agnostic.broadcast_shapes(*shape_list)) == expected


@given(broadcastable_pair(), st.sampled_from(["add", "mul", "sub", "eq", "lt", "maximum", "logical_and"]))
def test_binary_ops_broadcast_like_numpy(pair, op):
    a = np.zeros(pair[0], np.float32)
    b = np.ones(pair[1], np.float32)
    expected = broadcast_or_none(*pair)
    outcome = on_all_devices(lambda x, y: getattr(agnostic, op)(x, y), a, b)
    if expected is None:
        outcome.raises(RuntimeError)
    else:
        assert outcome.ok().shape == expected


@given(broadcastable_pair())
def test_broadcast_tensors_and_broadcast_to(pair):
    expected = broadcast_or_none(*pair)
    a = np.arange(int(np.prod(pair[0])), dtype=np.int32).reshape(pair[0])
    b = np.arange(int(np.prod(pair[1])), dtype=np.int32).reshape(pair[1])
    outcome = on_all_devices(lambda x, y: agnostic.broadcast_tensors(x, y), a, b)
    if expected is None:
        outcome.raises(RuntimeError)
        return
    x, y = outcome.ok()
    np.testing.assert_array_equal(x.array, np.broadcast_to(a, expected))
    np.testing.assert_array_equal(y.array, np.broadcast_to(b, expected))


# ----- in-place rules ---------------------------------------------------------------------------------------------
INPLACE = {
    "add_": (np.add, "same"), "sub_": (np.subtract, "same"), "mul_": (np.multiply, "same"),
    "div_": (np.true_divide, "float"),
}


@pytest.mark.parametrize("a_name", ALL)
@pytest.mark.parametrize("method", sorted(INPLACE))
@fewer_examples()
@given(pair=broadcast_pair(max_dims=3, max_side=4, min_side=1), scalar_other=st.booleans(), data=st.data())
def test_inplace_keeps_self_shape_and_dtype(method, a_name, pair, scalar_other, data):
    """``a.op_(b)`` succeeds iff broadcast(a.shape, b.shape) == a.shape and the result type casts into a's dtype
    (same or lower category); it returns ``a`` itself, with its dtype unchanged. (Shapes that don't broadcast at
    all, and empty tensors: see below.)"""
    a = data.draw(arrays(a_name, pair[0], -20, 20))
    if scalar_other:  # (sub_ with a bool: test_sub_with_any_bool_operand_raises)
        b = data.draw(scalars(("int", "float", "complex") if method == "sub_" else ("bool", "int", "float", "complex"),
                              lo=-5, hi=5))
    else:
        b = data.draw(arrays(data.draw(st.sampled_from(ALL)), pair[1], -20, 20))
    function, kind = INPLACE[method]
    b_shape = b.shape if isinstance(b, np.ndarray) else ()
    b_name = b.dtype.name if isinstance(b, np.ndarray) else scalar_dtype(b)
    promoted = torch_result_type(a, b)
    assume(promoted != "complex32")
    compute = float_result(promoted) if kind == "float" else promoted

    def call(x, y):
        result = getattr(x, method)(y)
        return result is x, x

    if method == "div_" and CATEGORY[compute] == 3:
        assume(not (cast(b, compute) == 0).any())  # complex x / 0: NumPy and CUDA's complex division disagree
    outcome = on_all_devices(call, a, b)
    shape_ok = broadcast_or_none(a.shape, b_shape) == a.shape
    cast_ok = CATEGORY[compute] <= CATEGORY[a_name]
    sub_bool = method == "sub_" and "bool" in (a_name, b_name)
    if not shape_ok or not cast_ok or sub_bool:
        outcome.raises(RuntimeError)
        return
    same_object, value = outcome.ok()
    assert same_object, f"{method} must return self"
    with np.errstate(all="ignore"):
        expected = function(wide(cast(a, compute)), wide(cast(b, compute)))
    check_tensor(value, cast(cast(expected, compute), a_name), a_name)


@given(st.sampled_from(sorted(INPLACE)), mismatched_pair(max_dims=3, max_side=3),
       st.tuples(st.sampled_from(ALL), st.sampled_from(ALL)))
def test_inplace_with_shapes_that_do_not_broadcast_raises(method, pair, names):
    a, b = np.ones(pair[0], names[0]), np.ones(pair[1], names[1])
    on_all_devices(lambda x, y: getattr(x, method)(y), a, b).raises(RuntimeError)


@given(st.sampled_from(INTS + ["bool"]), shapes(max_dims=2, max_side=3), st.floats(-5, 5, width=32))
def test_float_result_into_integer_tensor_raises(name, shape, value):
    a = np.zeros(shape, name)
    for method in ("add_", "mul_", "sub_", "div_"):
        if method == "sub_" and name == "bool":
            continue
        on_all_devices(lambda x: getattr(x, method)(value), a).raises(RuntimeError)
        on_all_devices(lambda x, y: getattr(x, method)(y), a, np.ones(shape, np.float32)).raises(RuntimeError)
    on_all_devices(lambda x: x.div_(2), a).raises(RuntimeError)  # int / int is a float


@given(st.sampled_from(FLOATS + INTS[1:]), shapes(max_dims=3, min_side=1, max_side=4), st.data())
def test_inplace_unary_and_clamp_keep_dtype(name, shape, data):
    a = data.draw(arrays(name, shape, -50, 50))

    def call(x):
        results = [x.neg_() is x, x.dtype.name]
        results += [x.clamp_(-10, 10) is x, x.dtype.name]
        return results + [x]

    outcome = on_all_devices(call, a)
    same_neg, dtype_neg, same_clamp, dtype_clamp, value = outcome.ok()
    assert same_neg and same_clamp and dtype_neg == name and dtype_clamp == name
    check_tensor(value, np.clip(-a.astype(np.float64), -10, 10).astype(name), name)
    if name in INTS:  # a float result (sqrt_) can't be written into an integer tensor
        on_all_devices(lambda x: x.sqrt_(), a).raises(RuntimeError)


@given(st.sampled_from(ALL), empty_shapes(), st.data())
def test_inplace_ops_on_empty_tensors_are_no_ops(name, shape, data):
    """An empty tensor has no element to overlap with another: every in-place write succeeds and changes nothing."""
    a = np.zeros(shape, name)
    other = data.draw(arrays(name, data.draw(st.sampled_from([(), shape[-1:], shape])), -5, 5))

    def writes(t, o):
        results = [t.fill_(1) is t, t.zero_() is t, t.copy_(o) is t, t.add_(o) is t, t.mul_(o) is t]
        t[...] = 1
        return results + [t]

    outcome = on_all_devices(writes, a, other)
    *same, value = outcome.ok()
    assert all(same)
    check_tensor(value, a, name)


# ----- .to, clone, copy_ ------------------------------------------------------------------------------------------
@given(st.sampled_from(ALL), shapes(max_dims=3, max_side=4), st.data())
def test_to_same_device_or_dtype_returns_self(name, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    for device in DEVICES:
        t = agnostic.tensor(a, device=device)
        assert t.to(t.device) is t
        assert t.to(device) is t
        assert t.to(t.dtype) is t
        assert t.to(device=t.device, dtype=t.dtype) is t
        assert t.to(t) is t
        if device == "cpu":
            assert t.cpu() is t


@given(st.sampled_from(ALL), st.sampled_from(ALL), shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), st.data())
def test_converted_copies_are_independent(name, other, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    zero = np.zeros((), name)
    for device in DEVICES:
        t = agnostic.tensor(a, device=device)
        copies = [t.clone(), t.to(t.dtype, copy=True)]
        if other != name:
            copies.append(t.to(ag_dtype(other)))
        for target in DEVICES:
            if target != device:
                copies.append(t.to(target))
        before = [c.cpu().numpy().copy() for c in copies]
        t.fill_(zero.item())
        for c, b in zip(copies, before):
            np.testing.assert_array_equal(c.cpu().numpy(), b)
            c.fill_(1)
        np.testing.assert_array_equal(t.cpu().numpy(), np.zeros(shape, name))
        assert t.dtype.name == name


@st.composite
def copy_operands(draw):
    """A destination and a source array of any dtypes, of shapes that usually broadcast into the destination's."""
    pair = draw(broadcastable_pair(max_dims=3, max_side=4, min_side=1))
    dst = draw(arrays(draw(st.sampled_from(ALL)), pair[0], -20, 20))
    return dst, draw(arrays(draw(st.sampled_from(ALL)), pair[1], -20, 20))


@given(copy_operands())
@example((np.zeros(1, np.uint8), np.array([-1.0], np.float16)))  # GPU dev profile: CUDA gave 0 (CuPy saturates)
@example((np.zeros(2, np.float32), np.array([1e-40, -3.0])))  # CUDA's float64 -> float32 cast flushes 1e-40
def test_copy_casts_broadcasts_and_is_independent(operands):
    dst, src = operands
    dst_name, src_name = dst.dtype.name, src.dtype.name
    assume(not (CATEGORY[src_name] == 3 and CATEGORY[dst_name] < 3))  # complex -> real drops the imaginary part
    # CuPy's casts from float64 to float32 flush float32 subnormals (-ftz=true); PyTorch's CUDA keeps them.
    flushes = np.real(src).dtype == np.float64 and dst_name in ("float32", "complex64")
    for source_device in DEVICES:
        for target_device in DEVICES:
            d = agnostic.tensor(dst, device=target_device)
            s = agnostic.tensor(src, device=source_device)
            if broadcast_or_none(dst.shape, src.shape) != dst.shape:
                with pytest.raises(RuntimeError):
                    d.copy_(s)
                continue
            assert d.copy_(s) is d
            assert d.dtype.name == dst_name and d.device == agnostic.device(target_device)
            expected = np.broadcast_to(cast(src, dst_name), dst.shape)
            if flushes and target_device != "cpu":
                expected = flush_float32(expected)
            np.testing.assert_array_equal(d.cpu().numpy(), expected)
            s.fill_(0)
            np.testing.assert_array_equal(d.cpu().numpy(), expected)


# ----- views write through ----------------------------------------------------------------------------------------
@given(st.sampled_from(ALL), shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), st.data())
def test_view_and_reshape_of_contiguous_share_memory(name, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    fill = data.draw(elements(name, -20, 20))
    for device in DEVICES:
        base = agnostic.tensor(a, device=device)
        flat = base.view(-1)
        flat[0] = fill
        assert cast(base.cpu().numpy().reshape(-1)[0], name) == cast(fill, name)
        base.fill_(fill)
        np.testing.assert_array_equal(flat.cpu().numpy(), np.full(a.size, fill, name))
        other = base.reshape(a.size)
        other.fill_(0)
        np.testing.assert_array_equal(base.cpu().numpy(), np.zeros(shape, name))


@given(st.sampled_from(ALL), shapes(min_dims=1, max_dims=4, min_side=1, max_side=4), st.data())
def test_slicing_views_write_through(name, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    key = tuple(slice(data.draw(st.integers(0, n - 1)), None, data.draw(st.integers(1, 2))) for n in shape)
    value = data.draw(elements(name, -20, 20))
    for device in DEVICES:
        base = agnostic.tensor(a, device=device)
        view = base[key]
        view.fill_(value)  # write into the view, see it in the base
        expected = a.copy()
        expected[key] = value
        np.testing.assert_array_equal(base.cpu().numpy(), expected)
        base.fill_(0)  # write into the base, see it in the view
        np.testing.assert_array_equal(view.cpu().numpy(), np.zeros(expected[key].shape, name))
        view[...] = 1  # __setitem__ on the view
        expected = np.zeros(shape, name)
        expected[key] = 1
        np.testing.assert_array_equal(base.cpu().numpy(), expected)


@given(st.sampled_from(ALL), shapes(min_dims=2, max_dims=4, min_side=1, max_side=4), st.data())
def test_transpose_and_permute_views_write_through(name, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    d0 = data.draw(st.integers(0, len(shape) - 1))
    d1 = data.draw(st.integers(0, len(shape) - 1))
    index = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    for device in DEVICES:
        base = agnostic.tensor(a, device=device)
        view = base.transpose(d0, d1)
        swapped = list(index)
        swapped[d0], swapped[d1] = swapped[d1], swapped[d0]
        view[tuple(swapped)] = 1
        assert base.cpu().numpy()[index] == np.ones((), name)
        base[index] = 0
        assert view.cpu().numpy()[tuple(swapped)] == np.zeros((), name)
        t = base.T
        base.fill_(1)
        np.testing.assert_array_equal(t.cpu().numpy(), np.ones(shape[::-1], name))


@given(st.sampled_from(ALL), shapes(min_dims=1, max_dims=3, min_side=1, max_side=3), st.data())
def test_expand_views_see_base_and_refuse_writes(name, shape, data):
    a = data.draw(arrays(name, shape, -20, 20))
    lead = data.draw(st.integers(1, 3))
    target = (lead,) + tuple(data.draw(st.integers(1, 3)) if n == 1 else n for n in shape)
    for device in DEVICES:
        base = agnostic.tensor(a, device=device)
        view = base.expand(*target)
        np.testing.assert_array_equal(view.cpu().numpy(), np.broadcast_to(a, target))
        base.fill_(1)
        np.testing.assert_array_equal(view.cpu().numpy(), np.ones(target, name))
        if np.prod(target) > np.prod(shape):  # several elements share one memory location
            with pytest.raises(RuntimeError):
                view.fill_(0)
            with pytest.raises(RuntimeError):
                view.add_(1)
        np.testing.assert_array_equal(base.cpu().numpy(), np.ones(shape, name))


# ----- devices ----------------------------------------------------------------------------------------------------
@given(st.sampled_from(ALL), shapes(min_dims=1, max_dims=2, min_side=1, max_side=3), st.data())
def test_ops_refuse_mixed_devices_except_cpu_scalars(name, shape, data):
    """Tensors on different devices don't combine (RuntimeError), except a 0-dim CPU tensor, which acts as a
    scalar; results land on the non-CPU operand's device."""
    a = data.draw(arrays(name, shape, 1, 5))
    for first in DEVICES:
        for second in DEVICES:
            x = agnostic.tensor(a, device=first)
            y = agnostic.tensor(a, device=second)
            if first == second:
                assert (x + y).device == agnostic.device(first)
                continue
            with pytest.raises(RuntimeError):
                x + y
            with pytest.raises(RuntimeError):
                agnostic.cat([x, y])
            first_value = a.reshape(-1)[0]
            result = y * agnostic.tensor(first_value, device="cpu")
            assert result.device == agnostic.device(second)
            assert result.dtype is ag_dtype(name)
            np.testing.assert_array_equal(result.cpu().numpy(), (a * first_value).astype(name))
