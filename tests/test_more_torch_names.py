"""Everyday PyTorch names: arc* and fix aliases, select, column/row/depth stacking, diagflat, addr, chain_matmul,
rsub, scalar_tensor, nextafter, renorm, sum_to_size, the is_* predicates, the trapezoidal rule, unravel_index and
the window functions; each checked against NumPy (or hand values) and, where installed, PyTorch."""

import math
import warnings

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck
from agnostic.ops import creation, dtype_queries, linalg as products, windows

# Names that ``agnostic/__init__.py`` imports one by one (or will): reached through their modules too, so that the
# tests run before and after the import is added.
scalar_tensor = getattr(agnostic, "scalar_tensor", creation.scalar_tensor)
WINDOWS = {name: getattr(agnostic, name, getattr(windows, name)) for name in windows.__all__}
PREDICATES = {name: getattr(agnostic, name, getattr(dtype_queries, name))
              for name in ("is_nonzero", "is_same_size", "is_signed", "is_conj", "is_neg", "is_inference")}


def _t(values, device, dtype=None, requires_grad=False):
    return agnostic.tensor(values, dtype=dtype, device=device, requires_grad=requires_grad)


def _close(tensor, expected, **tolerance):
    np.testing.assert_allclose(tensor.cpu().numpy(), np.asarray(expected), **tolerance)


def _grads_match_torch(function, torch_function, arrays, device):
    """``function``'s input gradients of ``sum(result * weights)`` equal PyTorch's for the same float64 inputs."""
    torch = pytest.importorskip("torch")
    ours = [_t(a, device, agnostic.float64, True) for a in arrays]
    theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    result, expected = function(*ours), torch_function(*theirs)
    weights = np.random.default_rng(7).random(tuple(expected.shape))
    (result * _t(weights, device, agnostic.float64)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, reference in zip(ours, theirs):
        _close(mine.grad, reference.grad.numpy(), rtol=1e-10, atol=1e-12)


# ----- aliases ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alias, name, low", [("arccosh", "acosh", 1.0), ("arcsinh", "asinh", -3.0),
                                              ("arctanh", "atanh", -0.9), ("fix", "trunc", -3.0)])
def test_alias_names_are_their_ops_top_level_as_methods_and_in_place(device, alias, name, low):
    values = np.linspace(low, abs(low) + 0.95 if name != "atanh" else 0.9, 7)
    x = _t(values, device, agnostic.float64)
    reference = {"acosh": np.arccosh, "asinh": np.arcsinh, "atanh": np.arctanh, "trunc": np.fix}[name](values)
    assert getattr(agnostic, alias) is getattr(agnostic, name)
    _close(getattr(agnostic, alias)(x), reference, rtol=1e-12)
    _close(getattr(x, alias)(), reference, rtol=1e-12)
    y = x.clone()
    assert getattr(y, alias + "_")() is y
    _close(y, reference, rtol=1e-12)
    z = x.clone()
    assert getattr(agnostic, alias + "_")(z) is z
    _close(z, reference, rtol=1e-12)


def test_arc_aliases_differentiate_as_their_ops(device):
    x = _t([1.5, 2.0, 3.0], device, agnostic.float64, True)
    assert gradcheck(agnostic.arccosh, (x,))
    assert gradcheck(lambda t: agnostic.arctanh(t / 4), (x,))
    agnostic.fix(x).sum().backward()
    _close(x.grad, [0.0, 0.0, 0.0])


# ----- select -----------------------------------------------------------------------------------------------------
def test_select_is_a_view_with_negative_indices(device):
    values = np.arange(24.0).reshape(2, 3, 4)
    x = _t(values, device)
    _close(x.select(1, -1), values[:, -1])
    _close(agnostic.select(x, 2, 0), values[..., 0])
    scalar = _t([5.0, 6.0], device).select(0, 1)
    assert scalar.shape == () and scalar.item() == 6.0
    view = x.select(0, 1)
    view[0, 0] = -1.0
    assert x[1, 0, 0].item() == -1.0


def test_select_errors_are_pytorchs(device):
    x = _t(np.zeros((2, 3)), device)
    with pytest.raises(IndexError, match=r"select\(\): index 5 out of range for tensor of size \[2, 3\] at "
                                         r"dimension 0"):
        x.select(0, 5)
    with pytest.raises(IndexError, match="index -4 out of range"):
        x.select(1, -4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.select(2, 0)
    with pytest.raises(IndexError, match="0-dim"):
        _t(1.0, device).select(0, 0)


def test_select_gradient(device):
    x = _t(np.random.default_rng(0).random((3, 4)), device, agnostic.float64, True)
    assert gradcheck(lambda t: t.select(1, -2) * 3, (x,))
    torch = pytest.importorskip("torch")
    _grads_match_torch(lambda t: t.select(0, 2), lambda t: torch.select(t, 0, 2),
                       [np.random.default_rng(1).random((3, 4))], device)


def test_in_place_change_through_a_select_view_rewrites_the_base_history(device):
    weights = np.array([[1.0, 2.0], [3.0, 4.0]])
    w = _t(weights, device, agnostic.float64, True)
    x = w * 1
    x.select(0, 1).mul_(3)  # PyTorch: the base's gradient now goes through the multiplication
    (x * _t(weights, device, agnostic.float64)).sum().backward()
    _close(x.detach(), [[1.0, 2.0], [9.0, 12.0]])
    _close(w.grad, [[1.0, 2.0], [9.0, 12.0]])


# ----- stacking, diagflat -----------------------------------------------------------------------------------------
def test_column_row_and_depth_stacks_match_numpy(device):
    a, b, m = np.array([1, 2]), np.array([3.0, 4.0]), np.array([[5, 6], [7, 8]])
    A, B, M = _t(a, device), _t(b, device), _t(m, device)
    result = agnostic.column_stack([A, B, M])
    _close(result, np.column_stack([a, b, m]))
    assert result.dtype is agnostic.float64  # int64 and float64 columns promote
    _close(agnostic.column_stack([_t(1, device), _t([2], device)]), [[1, 2]])
    assert agnostic.row_stack is agnostic.vstack
    _close(agnostic.row_stack([A, B]), np.vstack([a, b]))
    _close(agnostic.dstack([A, B]), np.dstack([a, b]))
    _close(agnostic.dstack([M, M]), np.dstack([m, m]))
    _close(agnostic.dstack([A]), np.dstack([a]))  # one tensor: still a list to join
    _close(agnostic.column_stack((A,)), np.column_stack([a]))
    for name in ("column_stack", "dstack"):
        with pytest.raises(RuntimeError, match="non-empty"):
            getattr(agnostic, name)([])
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        agnostic.column_stack([_t([1, 2], device), _t([1, 2, 3], device)])


def test_stack_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    arrays = [rng.random(3), rng.random((3, 2))]
    _grads_match_torch(lambda a, b: agnostic.column_stack([a, b]), lambda a, b: torch.column_stack([a, b]),
                       arrays, device)
    _grads_match_torch(lambda a, b: agnostic.dstack([a, b.t()[0]]), lambda a, b: torch.dstack([a, b.t()[0]]),
                       arrays, device)


@pytest.mark.parametrize("offset", [0, 2, -1])
def test_diagflat_matches_numpy_and_differentiates(device, offset):
    values = np.arange(1.0, 7.0).reshape(2, 3)
    _close(agnostic.diagflat(_t(values, device), offset), np.diagflat(values, offset))
    _close(_t(values, device).diagflat(offset), np.diagflat(values, offset))
    x = _t(values, device, agnostic.float64, True)
    assert gradcheck(lambda t: t.diagflat(offset), (x,))


# ----- addr, chain_matmul, rsub -----------------------------------------------------------------------------------
def test_addr_scales_promotes_and_broadcasts(device):
    v, w = np.array([1, 2]), np.array([3, 4, 5])
    _close(agnostic.addr(_t(np.zeros((2, 3), np.int64), device), _t(v, device), _t(w, device), beta=2, alpha=3),
           3 * np.outer(v, w))
    result = agnostic.addr(_t(np.ones(3, np.float32), device), _t(v, device), _t(w, device), beta=2)
    assert result.dtype is agnostic.float32 and result.shape == (2, 3)
    _close(result, 2 + np.outer(v, w))
    _close(agnostic.addr(_t(np.full((2, 3), np.nan), device), _t(v * 1.0, device), _t(w * 1.0, device), beta=0),
           np.outer(v, w))
    x = _t(np.ones((2, 3)), device)
    assert x.addr_(_t(v * 1.0, device), _t(w * 1.0, device), alpha=0.5) is x
    _close(x, 1 + 0.5 * np.outer(v, w))
    _close(_t(np.ones((2, 3)), device).addr(_t(v * 1.0, device), _t(w * 1.0, device)), 1 + np.outer(v, w))
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        agnostic.addr(_t(np.zeros((2, 3), np.int64), device), _t(v, device), _t(w, device), alpha=0.5)
    with pytest.raises(RuntimeError, match="Expected 1-D argument vec1, but got 2-D"):
        agnostic.addr(_t(np.zeros((2, 3)), device), _t(np.ones((2, 1)), device), _t(w * 1.0, device))


def test_addr_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.random(3), rng.random(2), rng.random(3)]
    _grads_match_torch(lambda m, v, w: agnostic.addr(m, v, w, beta=0.5, alpha=2.0),
                       lambda m, v, w: torch.addr(m, v, w, beta=0.5, alpha=2.0), arrays, device)
    tensors = [_t(a, device, agnostic.float64, True) for a in arrays]
    assert gradcheck(lambda m, v, w: agnostic.addr(m, v, w, beta=-1.5), tensors)


def test_chain_matmul_multiplies_and_warns_once(device):
    rng = np.random.default_rng(4)
    a, b, c = rng.random((2, 3)), rng.random((3, 4)), rng.random((4, 2))
    products._chain_matmul_warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = agnostic.chain_matmul(_t(a, device), _t(b, device), _t(c, device))
        agnostic.chain_matmul(_t(a, device), _t(b, device))
    assert [str(w.message).split(" is deprecated")[0] for w in caught] == ["agnostic.chain_matmul"]
    assert caught[0].filename == __file__  # the warning names the caller's line
    _close(result, a @ b @ c, rtol=1e-5)
    single = _t(a, device)
    copy = agnostic.chain_matmul(single)
    assert copy is not single
    _close(copy, a)
    with pytest.raises(RuntimeError, match="Expected one or more matrices"):
        agnostic.chain_matmul()
    with pytest.raises(RuntimeError, match="Tensor dimension is 1, expected 2 instead"):
        agnostic.chain_matmul(_t(a, device), _t([1.0, 2.0, 3.0], device))
    x = _t(a, device, agnostic.float64, True)
    assert gradcheck(lambda t: agnostic.chain_matmul(t, _t(b, device, agnostic.float64)), (x,))


def test_rsub_is_other_minus_alpha_input(device):
    _close(agnostic.rsub(_t([1, 2], device), 5, alpha=2), [3, 1])
    result = agnostic.rsub(_t([1.0, 2.0], device), _t(5.0, device))
    _close(result, [4.0, 3.0])
    with pytest.raises(NotImplementedError, match="Subtraction"):
        agnostic.rsub(_t([True], device), _t([True], device))
    x = _t([1.0, 2.0], device, agnostic.float64, True)
    y = _t([0.5, 4.0], device, agnostic.float64, True)
    assert gradcheck(lambda a, b: agnostic.rsub(a, b, alpha=3), (x, y))


# ----- scalar_tensor, nextafter -----------------------------------------------------------------------------------
def test_scalar_tensor_takes_the_default_float_dtype(device):
    made = scalar_tensor(3, device=device)
    assert made.shape == () and made.dtype is agnostic.float32 and made.item() == 3.0
    assert made.device == device
    assert scalar_tensor(True).dtype is agnostic.float32
    assert scalar_tensor(3, dtype=agnostic.int64).dtype is agnostic.int64
    assert scalar_tensor(2.5, dtype=agnostic.complex64).item() == 2.5
    assert scalar_tensor(_t(2.0, device)).item() == 2.0
    assert scalar_tensor(1.0, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="converted to type float"):
        scalar_tensor(1 + 2j)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nextafter_matches_numpy_bit_for_bit(device, dtype):
    numpy_dtype = np.dtype(dtype)
    tiny = np.finfo(numpy_dtype).smallest_subnormal
    big = np.finfo(numpy_dtype).max
    start = np.array([0.0, -0.0, 1.0, -1.0, 1.0, tiny, -tiny, big, np.inf, -np.inf, np.nan, 2.0, 3.0], numpy_dtype)
    toward = np.array([1.0, -1.0, 2.0, -2.0, 0.0, 0.0, 1.0, np.inf, 0.0, 0.0, 1.0, np.nan, 3.0], numpy_dtype)
    with np.errstate(over="ignore"):
        expected = np.nextafter(start, toward)
    result = agnostic.nextafter(_t(start, device), _t(toward, device))
    assert result.dtype is getattr(agnostic, dtype)
    np.testing.assert_array_equal(result.cpu().numpy().view(f"u{numpy_dtype.itemsize}")[~np.isnan(expected)],
                                  expected.view(f"u{numpy_dtype.itemsize}")[~np.isnan(expected)])
    assert np.isnan(result.cpu().numpy()[np.isnan(expected)]).all()
    scalar = agnostic.nextafter(_t(start[2], device), _t(toward[2], device))
    assert scalar.shape == () and scalar.item() == expected[2]
    x = _t(start[2:4], device)
    assert x.nextafter_(_t(10.0, device, dtype)) is x
    _close(x, np.nextafter(start[2:4], numpy_dtype.type(10.0)))


def test_nextafter_dtypes_errors_and_gradient(device):
    low = _t([1.0], device)
    assert agnostic.nextafter(low, _t(2.0, device, agnostic.float64)).dtype is agnostic.float32  # 0-dim: no say
    assert agnostic.nextafter(_t([1.0], device, agnostic.float64), _t(2.0, device)).dtype is agnostic.float64
    with pytest.raises(RuntimeError, match="floating"):
        agnostic.nextafter(_t([1], device), _t([2], device))
    x = _t([1.0, 2.0], device, agnostic.float64, True)
    y = _t([3.0, 0.0], device, agnostic.float64, True)
    agnostic.nextafter(x, y).sum().backward()
    _close(x.grad, [1.0, 1.0])
    _close(y.grad, [0.0, 0.0])
    torch = pytest.importorskip("torch")
    values = np.array([0.0, 1.0, -3.5, 1e-30])
    toward = np.array([-1.0, 0.5, 7.0, 0.0])
    _close(agnostic.nextafter(_t(values, device, agnostic.float32), _t(toward, device, agnostic.float32)),
           torch.nextafter(torch.tensor(values, dtype=torch.float32), torch.tensor(toward, dtype=torch.float32)),
           rtol=0, atol=0)


# ----- renorm, sum_to_size ----------------------------------------------------------------------------------------
def _renorm_reference(values, p, axis, maxnorm):
    moved = np.moveaxis(values, axis, 0)
    flat = moved.reshape(moved.shape[0], -1)
    norms = np.max(np.abs(flat), 1) if p == math.inf else (np.abs(flat) ** p).sum(1) ** (1 / p)
    factor = np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return np.moveaxis(moved * factor.reshape((-1,) + (1,) * (moved.ndim - 1)), 0, axis)


@pytest.mark.parametrize("p, dim, maxnorm", [(2, 0, 5.0), (1, 1, 4.0), (math.inf, -1, 2.0), (3.5, 1, 1.0)])
def test_renorm_matches_its_formula(device, p, dim, maxnorm):
    values = np.random.default_rng(5).normal(size=(3, 4, 2)) * 3
    expected = _renorm_reference(values, p, dim, maxnorm)
    _close(agnostic.renorm(_t(values, device, agnostic.float64), p, dim, maxnorm), expected, rtol=1e-12)
    x = _t(values, device, agnostic.float64)
    assert x.renorm_(p, dim, maxnorm) is x
    _close(x, expected, rtol=1e-12)
    torch = pytest.importorskip("torch")
    _close(_t(values, device).renorm(p, dim, maxnorm),
           torch.renorm(torch.tensor(values, dtype=torch.float32), p, dim, maxnorm), rtol=1e-6, atol=1e-6)


def test_renorm_errors_and_gradient(device):
    with pytest.raises(RuntimeError, match="at least 2 dimensions, got 1"):
        agnostic.renorm(_t([3.0, 4.0], device), 2, 0, 1.0)
    with pytest.raises(RuntimeError, match="non-positive-norm"):
        agnostic.renorm(_t([[3.0, 4.0]], device), 0, 0, 1.0)
    with pytest.raises(RuntimeError, match="maxnorm to be >= 0"):
        agnostic.renorm(_t([[3.0, 4.0]], device), 2, 0, -1.0)
    with pytest.raises(RuntimeError, match="floating point or complex"):
        agnostic.renorm(_t([[3, 4]], device), 2, 0, 1.0)
    rng = np.random.default_rng(6)
    values = rng.normal(size=(3, 4)) * 2
    x = _t(values, device, agnostic.float64, True)
    assert gradcheck(lambda t: t.renorm(2, 0, 2.5), (x,))
    torch = pytest.importorskip("torch")
    _grads_match_torch(lambda t: agnostic.renorm(t, 2, 1, 1.5), lambda t: torch.renorm(t, 2, 1, 1.5), [values],
                       device)


def test_sum_to_size_sums_broadcast_dimensions(device):
    values = np.arange(24).reshape(2, 3, 4)
    x = _t(values, device)
    _close(x.sum_to_size(1, 3, 1), values.sum((0, 2), keepdims=True))
    _close(x.sum_to_size((3, 4)), values.sum(0))
    _close(x.sum_to_size([4]), values.sum((0, 1)))
    assert x.sum_to_size(2, 3, 4) is x
    with pytest.raises(RuntimeError, match=r"size \{\[5\]\} is not expandable to size \{\[2, 3, 4\]\}"):
        x.sum_to_size(5)
    with pytest.raises(RuntimeError, match="not expandable"):
        x.sum_to_size(1, 2, 3, 4)
    y = _t(values * 1.0, device, agnostic.float64, True)
    y.sum_to_size(3, 1).sum().backward()
    _close(y.grad, np.ones_like(values))


# ----- predicates -------------------------------------------------------------------------------------------------
def test_predicates_as_functions_and_methods(device):
    is_nonzero, is_same_size, is_signed = (PREDICATES[n] for n in ("is_nonzero", "is_same_size", "is_signed"))
    assert is_nonzero(_t([0.5], device)) is True and is_nonzero(_t(0, device)) is False
    assert _t([[2]], device).is_nonzero() is True
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        is_nonzero(_t([1, 2], device))
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        is_nonzero(_t([], device))
    with pytest.raises(TypeError, match="must be Tensor"):
        is_nonzero(1)
    assert is_same_size(_t(np.ones((2, 3)), device), _t(np.zeros((2, 3), np.int64), device))
    assert not is_same_size(_t(np.ones((2, 3)), device), _t(np.ones((3, 2)), device))
    signed = {name: is_signed(_t([1], device, getattr(agnostic, name))) for name in
              ("bool", "uint8", "int8", "int64", "float16", "float32", "complex64")}
    assert signed == {"bool": False, "uint8": False, "int8": True, "int64": True, "float16": True, "float32": True,
                      "complex64": True}
    z = _t([1 + 2j], device)
    for name in ("is_conj", "is_neg", "is_inference"):
        assert PREDICATES[name](z.conj()) is False and PREDICATES[name](-z) is False
    with agnostic.inference_mode():
        made = _t([1.0], device) * 2
    assert PREDICATES["is_inference"](made) is made.is_inference()


def test_predicates_agree_with_torch():
    torch = pytest.importorskip("torch")
    for dtype in ("bool", "uint8", "int16", "float64", "complex128"):
        assert PREDICATES["is_signed"](agnostic.ones(1, dtype=getattr(agnostic, dtype))) == \
            torch.is_signed(torch.ones(1, dtype=getattr(torch, dtype)))
    assert PREDICATES["is_conj"](agnostic.tensor([1j]).conj()) is torch.tensor([1j]).conj().resolve_conj().is_conj()


# ----- trapezoid, cumulative_trapezoid ----------------------------------------------------------------------------
def test_trapezoid_matches_numpy(device):
    y = np.array([[1, 2, 4], [3, 5, 9]])
    Y = _t(y, device)
    result = agnostic.trapezoid(Y)
    assert result.dtype is agnostic.float32  # integer samples give the default float dtype
    _close(result, np.trapezoid(y, axis=-1))
    _close(agnostic.trapezoid(Y, dx=2), np.trapezoid(y, dx=2, axis=-1))
    _close(agnostic.trapezoid(Y, dim=0), np.trapezoid(y, axis=0))
    x = np.array([0.0, 1.0, 3.0])
    _close(agnostic.trapezoid(Y, _t(x, device)), np.trapezoid(y, x, axis=-1))
    xs = np.array([[0.0, 1.0, 3.0], [0.0, 2.0, 3.0]])
    _close(agnostic.trapezoid(Y * 1.0, _t(xs, device)), np.trapezoid(y, xs, axis=-1))
    _close(agnostic.trapezoid(Y * 1.0, _t(xs[:1], device)), np.trapezoid(y, xs[0], axis=-1))
    assert agnostic.trapz is agnostic.trapezoid
    _close(agnostic.trapz(Y, dx=3), np.trapezoid(y, dx=3, axis=-1))
    assert agnostic.trapezoid(_t(y, device, agnostic.float16)).dtype is agnostic.float16
    empty = agnostic.trapezoid(_t(np.zeros((2, 0), np.int64), device))
    assert empty.dtype is agnostic.int64 and empty.tolist() == [0, 0]


def test_cumulative_trapezoid_matches_running_sums(device):
    y = np.array([[1, 2, 4], [3, 5, 9]])
    Y = _t(y, device)
    pairs = (y[:, 1:] + y[:, :-1]) / 2
    _close(agnostic.cumulative_trapezoid(Y), np.cumsum(pairs, -1))
    _close(agnostic.cumulative_trapezoid(Y, dx=2), np.cumsum(pairs * 2, -1))
    x = np.array([0.0, 1.0, 3.0])
    _close(agnostic.cumulative_trapezoid(Y, _t(x, device)), np.cumsum(pairs * np.diff(x), -1))
    _close(agnostic.cumulative_trapezoid(Y, dim=0), np.cumsum((y[1:] + y[:-1]) / 2, 0))
    assert agnostic.cumulative_trapezoid(_t(np.zeros((2, 1)), device)).shape == (2, 0)
    assert agnostic.cumulative_trapezoid(_t(np.zeros((2, 0)), device)).shape == (2, 0)


def test_trapezoid_errors_are_pytorchs(device):
    y = _t([[1.0, 2.0, 4.0]], device)
    for name in ("trapezoid", "cumulative_trapezoid"):
        function = getattr(agnostic, name)
        with pytest.raises(RuntimeError, match=f"{name}: There must be one `x` value for each sample point"):
            function(y, _t([1.0, 2.0], device))
        with pytest.raises(NotImplementedError, match="bool"):
            function(_t([True, False], device))
        with pytest.raises(TypeError, match="not both"):
            function(y, _t([1.0, 2.0, 3.0], device), dx=1)
        with pytest.raises(IndexError, match="Dimension out of range"):
            function(y, dim=2)
        with pytest.raises(IndexError, match="no dimensions"):
            function(_t(1.0, device))


def test_trapezoid_gradients_match_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(8)
    arrays = [rng.random((2, 5)), np.cumsum(rng.random(5))]
    _grads_match_torch(lambda y, x: agnostic.trapezoid(y, x), lambda y, x: torch.trapezoid(y, x), arrays, device)
    _grads_match_torch(lambda y, x: agnostic.cumulative_trapezoid(y, x),
                       lambda y, x: torch.cumulative_trapezoid(y, x), arrays, device)
    _grads_match_torch(lambda y: agnostic.trapezoid(y, dx=0.3, dim=0),
                       lambda y: torch.trapezoid(y, dx=0.3, dim=0), arrays[:1], device)
    tensors = [_t(a, device, agnostic.float64, True) for a in arrays]
    assert gradcheck(lambda y, x: agnostic.cumulative_trapezoid(y, x), tensors)


# ----- unravel_index ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 2), (10, 10, 10, 10), (7,), (2, 1, 3)])
def test_unravel_index_matches_numpy(device, shape):
    flat = np.arange(math.prod(shape)).reshape(-1, 1)[::3]
    result = agnostic.unravel_index(_t(flat, device), shape)
    assert isinstance(result, tuple) and len(result) == len(shape)
    for mine, expected in zip(result, np.unravel_index(flat, shape)):
        assert mine.dtype is agnostic.int64 and mine.shape == flat.shape
        _close(mine, expected)
    assert [t.item() for t in agnostic.unravel_index(_t(4, device), (3, 2))] == [2, 0]
    assert [t.tolist() for t in agnostic.unravel_index(_t([3, 0], device), 5)] == [[3, 0]]


def test_unravel_index_errors_are_pytorchs(device):
    with pytest.raises(TypeError, match="expected 'indices' to be integer dtype, but got agnostic.float32"):
        agnostic.unravel_index(_t([1.0], device), (2, 2))
    with pytest.raises(TypeError, match="integer dtype"):
        agnostic.unravel_index(_t([True], device), (2, 2))
    with pytest.raises(TypeError, match="expected 'shape' sequence to only contain ints"):
        agnostic.unravel_index(_t([1], device), (2, 2.0))
    with pytest.raises(ValueError, match=r"'shape' cannot have negative values, but got \(2, -3\)"):
        agnostic.unravel_index(_t([1], device), (2, -3))
    with pytest.raises(ValueError, match="zero dimensions"):
        agnostic.unravel_index(_t([1], device), (2, 0))
    assert agnostic.unravel_index(_t(np.zeros(0, np.int64), device), (2, 0))[0].shape == (0,)


# ----- window functions -------------------------------------------------------------------------------------------
def _numpy_window(name, length, periodic):
    """NumPy's symmetric windows (scipy's ``sym=False`` is the one of length + 1, cut)."""
    full = length + 1 if periodic else length
    window = {"hann_window": np.hanning, "hamming_window": np.hamming, "blackman_window": np.blackman,
              "bartlett_window": np.bartlett, "kaiser_window": lambda n: np.kaiser(n, 12.0)}[name](full)
    return window[:length]


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_numpy_and_torch(device, name):
    torch = None
    try:
        import torch
    except ImportError:
        pass
    for dtype, tolerance in (("float32", 1e-6), ("float64", 1e-12)):
        for length in (0, 1, 2, 3, 8, 33):
            for periodic in (True, False):
                window = WINDOWS[name](length, periodic, dtype=getattr(agnostic, dtype), device=device)
                assert window.dtype is getattr(agnostic, dtype) and window.shape == (length,)
                assert window.device == device
                expected = np.ones(1) if length == 1 else _numpy_window(name, length, periodic)
                _close(window, expected, atol=max(tolerance, 1e-5 if dtype == "float32" else tolerance), rtol=0)
                if torch is not None:
                    reference = getattr(torch, name)(length, periodic, dtype=getattr(torch, dtype))
                    _close(window, reference.numpy(), atol=tolerance, rtol=0)


def test_window_arguments_and_errors(device):
    torch = pytest.importorskip("torch")
    _close(WINDOWS["hamming_window"](7, False, 0.5, 0.4, device=device),
           torch.hamming_window(7, False, 0.5, 0.4).numpy(), atol=1e-6)
    _close(WINDOWS["kaiser_window"](9, True, 5.0, device=device), torch.kaiser_window(9, True, 5.0).numpy(),
           atol=1e-6)
    half = WINDOWS["hann_window"](6, dtype=agnostic.float16, device=device)
    _close(half.float(), torch.hann_window(6, dtype=torch.float16).float().numpy(), atol=1e-3)
    window = WINDOWS["blackman_window"](4, requires_grad=True, layout=agnostic.strided, device=device)
    assert window.requires_grad and window.is_leaf
    assert WINDOWS["hann_window"](3).dtype is agnostic.get_default_dtype()
    for name, function in WINDOWS.items():
        with pytest.raises(RuntimeError, match=f"{name} requires non-negative window_length, got window_length=-1"):
            function(-1)
        with pytest.raises(RuntimeError, match=f"{name} expects floating point dtypes"):
            function(3, dtype=agnostic.int64)
