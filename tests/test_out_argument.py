"""PyTorch's ``out=`` on the functions whose PyTorch forms take it (``agnostic.sum(x, 1, out=buffer)``): the result
written into ``out``, which is returned; an ``out`` of another shape resized (with PyTorch's warning where it had
elements); a tuple of outputs for ops with several (``sort``, ``max`` along a dim...); clear errors for a wrong
dtype, device or type and under autograd; and, where PyTorch is installed, the same calls accepted by PyTorch with
the same values. The methods take no ``out=``, as PyTorch's."""

import inspect
import warnings

import numpy
import pytest

import agnostic
from agnostic.ops import _registry

try:
    import torch
except ImportError:  # PyTorch is a reference where installed, never a dependency
    torch = None


def _matrix(library, device, *shape, seed=0, positive=False):
    """A float64 tensor of ``shape`` with distinct values (positive definite matrices with ``positive``)."""
    values = numpy.random.default_rng(seed).standard_normal(shape)
    if positive:
        values = values @ numpy.swapaxes(values, -1, -2) + shape[-1] * numpy.eye(shape[-1])
    return library.tensor(values, dtype=library.float64, device=device)


def _ints(library, device, values):
    return library.tensor(values, dtype=library.int64, device=device)


def _cases(L, d):
    """``{op name: (args, kwargs)}`` of a call of every function that takes ``out=``, in library ``L`` on ``d``."""
    m = lambda *shape, **k: _matrix(L, d, *shape, **k)  # noqa: E731
    x, y = m(3, 4), m(3, 4, seed=1)
    with_nans = x.clone()
    with_nans[0, 1] = with_nans[2, 2] = float("nan")
    index = _ints(L, d, [[0, 2, 1, 3], [3, 3, 0, 1], [1, 0, 2, 2]])
    square, vector = m(3, 3, positive=True), m(3, seed=2)
    batch = m(2, 3, 3, seed=3)
    lu, pivots = L.linalg.lu_factor(square)
    a, tau = L.geqrf(m(4, 3, seed=4))
    return {
        "multinomial": ((L.tensor([0.0, 1.0, 0.0], device=d), 2, True), {}),
        "cat": (([x, y], 1), {}), "stack": (([x, y],), {}), "hstack": (([x, y],), {}), "vstack": (([x, y],), {}),
        "column_stack": (([x, y],), {}), "dstack": (([x, y],), {}),
        "tril": ((x,), {}), "triu": ((x, 1), {}),
        "diag": ((vector,), {}),
        "gather": ((x, 1, index), {}), "scatter": ((x, 1, index, y), {}), "scatter_add": ((x, 1, index, y), {}),
        "index_select": ((x, 1, _ints(L, d, [2, 0])), {}), "masked_select": ((x, x > 0), {}),
        "nonzero": ((x > 0,), {}), "take": ((x, _ints(L, d, [0, 5, 11])), {}),
        "index_add": ((x, 0, _ints(L, d, [2, 0]), y[:2]), {}),
        "scatter_reduce": ((x, 1, index, y, "amax"), {}),
        "index_copy": ((x, 0, _ints(L, d, [2, 0]), y[:2]), {}),
        "take_along_dim": ((x, index, 1), {}), "where": ((x > 0, x, y), {}), "lerp": ((x, y, 0.25), {}),
        "nan_to_num": ((with_nans,), {}), "isin": ((index, _ints(L, d, [1, 3])), {}),
        "sum": ((x, 1), {}), "prod": ((x, 0), {}), "mean": ((x, 1), {}), "var": ((x, 1), {}), "std": ((x, 0), {}),
        "max": ((x, 1), {}), "min": ((x,), {}), "amax": ((x, 0), {}), "amin": ((x, 1), {}),
        "argmax": ((x, 1), {}), "argmin": ((x,), {}), "all": ((x > -1, 1), {}), "any": ((x > 1, 0), {}),
        "cumsum": ((x, 1), {}), "cumprod": ((x, 0), {}), "logsumexp": ((x, 1), {}), "renorm": ((x, 2, 0, 1.0), {}),
        "complex": ((x, y), {}), "polar": ((x.abs(), y), {}), "sgn": ((x,), {}),
        "matmul": ((x, y.T), {}), "mm": ((x, y.T), {}), "bmm": ((batch, batch), {}), "mv": ((x, m(4, seed=5)), {}),
        "dot": ((vector, vector), {}), "inner": ((x, y), {}), "outer": ((vector, vector), {}),
        "addmm": ((square, x, y.T), {"beta": 0.5}), "addmv": ((vector, x, m(4, seed=5)), {"alpha": 2}),
        "baddbmm": ((batch, batch, batch), {}), "addbmm": ((square, batch, batch), {}),
        "addr": ((square, vector, vector), {}), "tensordot": ((x, y, ([1], [1])), {}), "kron": ((x, square), {}),
        "cross": ((square, m(3, 3, seed=6)), {"dim": 1}), "inverse": ((square,), {}),
        "matrix_power": ((square, 3), {}), "cholesky_solve": ((x[:, :3].T, L.linalg.cholesky(square)), {}),
        "cholesky_inverse": ((L.linalg.cholesky(square),), {}), "svd": ((x,), {}),
        "lu_unpack": ((lu, pivots), {}), "lu_solve": ((x[:, :3].T.contiguous(), lu, pivots), {}),
        "triangular_solve": ((x[:, :2], square.triu()), {}), "geqrf": ((m(4, 3, seed=4),), {}),
        "ormqr": ((a, tau, m(4, 2, seed=7)), {}),
        "sort": ((x, 1), {"descending": True}), "topk": ((x, 2), {}), "kthvalue": ((x, 2, 0), {}),
        "searchsorted": ((L.tensor([0.0, 1.0, 2.0], device=d), x), {}),
        "bucketize": ((x, L.tensor([-1.0, 0.0, 1.0], device=d)), {}),
        "nansum": ((with_nans, 1), {}),
        "nanmean": ((with_nans, 1), {}), "aminmax": ((x,), {"dim": 0}), "median": ((x, 1), {}),
        "nanmedian": ((with_nans, 0), {}), "mode": ((index, 1), {}),
        "quantile": ((x, L.tensor([0.25, 0.5], dtype=L.float64, device=d), 1), {}),
        "nanquantile": ((with_nans, 0.5, 0), {}),
        "cummax": ((x, 1), {}), "cummin": ((x, 0), {}), "logcumsumexp": ((x, 1), {}),
        "histc": ((x,), {"bins": 4, "min": -2, "max": 2}), "histogram": ((x.cpu(), 4), {}),
    }


def _out_ops():
    """The names of the declared ops whose function takes ``out=`` (the declaration's ``out=True``)."""
    return sorted(op.name for op in _registry._DECLARED if isinstance(op, _registry.Composite) and op.takes_out)


OUT_OPS = _out_ops()


def _call(L, device, name, **extra):
    args, kwargs = _cases(L, device)[name]
    return getattr(L, name)(*args, **kwargs, **extra)


def _empty_like(L, result):
    """Zero-element outputs of ``result``'s dtypes and device (a tensor, or a tuple of them)."""
    if isinstance(result, tuple):
        return tuple(_empty_like(L, value) for value in result)
    return L.empty(0, dtype=result.dtype, device=result.device)


def _numpy(value):
    if isinstance(value, tuple):
        return [_numpy(item) for item in value]
    return value.cpu().numpy()


def _assert_same(got, expected):
    if isinstance(expected, list):
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same(g, e)
        return
    assert got.dtype == expected.dtype and got.shape == expected.shape
    numpy.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_every_function_with_out_has_a_case():
    assert OUT_OPS == sorted(_cases(agnostic, "cpu")), "a function takes out= without a case here, or the reverse"


@pytest.mark.parametrize("name", OUT_OPS)
def test_out_receives_the_result_and_is_returned(device, name):
    expected = _call(agnostic, device, name)
    if name == "multinomial":  # a random draw: the same generator state twice
        agnostic.manual_seed(0)
        expected = _call(agnostic, device, name)
        agnostic.manual_seed(0)
    out = _empty_like(agnostic, expected)
    args, kwargs = _cases(agnostic, device)[name]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "An output with")  # zero-element outputs are resized silently
        result = getattr(agnostic, name)(*args, **kwargs, out=out)
    if isinstance(out, tuple):
        assert isinstance(result, tuple) and all(r is o for r, o in zip(result, out))
        assert type(result) is type(expected) or type(expected) is tuple
    else:
        assert result is out
    _assert_same(_numpy(result), _numpy(expected))


@pytest.mark.parametrize("name", OUT_OPS)
def test_the_same_calls_with_out_give_pytorchs_values(name):
    if torch is None:
        pytest.skip("PyTorch is not installed (it is a reference, never a dependency)")
    torch.manual_seed(0)
    expected = _call(torch, "cpu", name)
    torch.manual_seed(0)
    theirs = _call(torch, "cpu", name, out=_empty_like(torch, expected))
    agnostic.manual_seed(0)
    ours = _call(agnostic, "cpu", name)
    ours_out = _call(agnostic, "cpu", name, out=_empty_like(agnostic, ours))
    if name != "multinomial":
        _assert_same(_numpy(ours_out), _numpy(theirs))


def test_an_out_of_another_shape_is_resized_with_pytorchs_warning(device):
    x = _matrix(agnostic, device, 3, 4)
    out = agnostic.full((5,), -1.0, dtype=agnostic.float64, device=device)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized since it had shape \[5\], "
                                         r"which does not match the required output shape \[3\]"):
        result = agnostic.sum(x, 1, out=out)
    assert result is out and out.shape == (3,)
    numpy.testing.assert_allclose(out.cpu().numpy(), x.cpu().numpy().sum(1))
    values = agnostic.zeros(2, 2, dtype=agnostic.float64, device=device)
    indices = agnostic.zeros(2, 2, dtype=agnostic.int64, device=device)
    with pytest.warns(UserWarning, match="was resized"):
        agnostic.sort(x, 1, out=(values, indices))
    assert values.shape == indices.shape == (3, 4)


def test_out_keeps_its_dtype_where_the_op_casts_into_it(device):
    x = _matrix(agnostic, device, 3, 4)
    out = agnostic.empty(3, dtype=agnostic.float32, device=device)
    agnostic.sum(x, 1, out=out)
    assert out.dtype == agnostic.float32
    numpy.testing.assert_allclose(out.cpu().numpy(), x.cpu().numpy().sum(1).astype(numpy.float32))
    complex_out = agnostic.empty(0, dtype=agnostic.complex64, device=device)
    agnostic.cat([x, x], out=complex_out)
    assert complex_out.dtype == agnostic.complex64 and complex_out.shape == (6, 4)


def test_ops_that_dont_cast_want_outs_of_their_results_dtypes(device):
    """As PyTorch's: indices go into int64 outs only, values of ``sort``, ``matmul``... into their own dtype."""
    x = _matrix(agnostic, device, 3, 4)
    with pytest.raises(RuntimeError, match=r"argmax\(\): Expected out tensor to have dtype int64, but got int32 "
                                           r"instead; pass an out tensor of dtype int64"):
        agnostic.argmax(x, 1, out=agnostic.empty(3, dtype=agnostic.int32, device=device))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float64, but got float32"):
        agnostic.sort(x, out=(agnostic.empty(0, device=device),
                              agnostic.empty(0, dtype=agnostic.int64, device=device)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float64, but got float32"):
        agnostic.matmul(x, x.T, out=agnostic.empty(0, device=device))


def _other_dtypes(library, result):
    """For each output of ``result``, zero-element outs of its dtypes with that output's dtype changed (a float or
    complex to the other width, int64 to int32, bool to uint8)."""
    other = {library.float64: library.float32, library.float32: library.float64, library.int64: library.int32,
             library.complex128: library.complex64, library.bool: library.uint8}
    values = result if isinstance(result, tuple) else (result,)
    for changed in range(len(values)):
        outs = tuple(library.empty(0, dtype=other[v.dtype] if i == changed else v.dtype, device=v.device)
                     for i, v in enumerate(values))
        yield changed, outs if isinstance(result, tuple) else outs[0]


# geqrf's tuple of outputs casts in PyTorch, where every other op's tuple wants its results' dtypes: agnostic asks
# that of every tuple.
_CASTING_TUPLES_IN_PYTORCH_ONLY = {"geqrf"}


@pytest.mark.parametrize("name", OUT_OPS)
def test_outs_of_other_dtypes_are_taken_or_refused_as_pytorch_does(name):
    if torch is None:
        pytest.skip("PyTorch is not installed (it is a reference, never a dependency)")
    verdicts = {}
    for L in (torch, agnostic):
        L.manual_seed(0)
        result = _call(L, "cpu", name)
        verdicts[L] = []
        for changed, outs in _other_dtypes(L, result):
            L.manual_seed(0)
            try:
                _call(L, "cpu", name, out=outs)
                verdicts[L].append((changed, "taken"))
            except RuntimeError:
                verdicts[L].append((changed, "refused"))
    if name in _CASTING_TUPLES_IN_PYTORCH_ONLY:
        assert all(verdict == "refused" for _, verdict in verdicts[agnostic])
        return
    assert verdicts[agnostic] == verdicts[torch]


def test_bad_outs_are_refused_with_clear_errors(device):
    x = _matrix(agnostic, device, 3, 4)
    with pytest.raises(RuntimeError, match="result type float64 can't be cast to the desired output type int64"):
        agnostic.sum(x, 1, out=agnostic.empty(3, dtype=agnostic.int64, device=device))
    with pytest.raises(TypeError, match=r"sum\(\): argument 'out' must be Tensor, not list"):
        agnostic.sum(x, 1, out=[])
    with pytest.raises(TypeError, match=r"sort\(\): argument 'out' must be tuple of 2 Tensors, not Tensor"):
        agnostic.sort(x, out=agnostic.empty(0, device=device))
    with pytest.raises(TypeError, match="tuple of 2 Tensors, not tuple"):
        agnostic.sort(x, out=(agnostic.empty(0, device=device),))
    if device.type != "cpu":
        with pytest.raises(RuntimeError, match=f"Expected out tensor to have device {device}, but got cpu"):
            agnostic.sum(x, 1, out=agnostic.empty(3, dtype=agnostic.float64))


def test_out_refuses_autograd_as_pytorch_does(device):
    x = _matrix(agnostic, device, 3, 4).requires_grad_()
    out = agnostic.empty(3, dtype=agnostic.float64, device=device)
    with pytest.raises(RuntimeError, match=r"sum\(\): functions with out=\.\.\. arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad"):
        agnostic.sum(x, 1, out=out)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        agnostic.cat([x.detach(), x.detach()], out=agnostic.empty(0, dtype=agnostic.float64,
                                                                    device=device).requires_grad_())
    with agnostic.no_grad():
        assert agnostic.sum(x, 1, out=out) is out
    assert not out.requires_grad


def test_methods_take_no_out_as_pytorchs():
    for name in OUT_OPS:
        method = getattr(agnostic.Tensor, name, None)
        if method is not None and callable(method):
            assert "out" not in inspect.signature(method).parameters, name
    with pytest.raises(TypeError):
        agnostic.ones(3).sum(0, out=agnostic.empty(1))


@pytest.mark.parametrize("call", [lambda L, a, out: L.add(a, a, out=out), lambda L, a, out: L.exp(a, out=out),
                                  lambda L, a, out: L.mul(a, 2.5, out=out), lambda L, a, out: L.eq(a, a, out=out)],
                         ids=["add", "exp", "mul-number", "eq"])
def test_elementwise_outs_follow_the_same_rules(device, call):
    """``agnostic.add(a, b, out=t)`` resizes ``t`` as the other functions do (an empty ``t`` silently); ``a.add_(b)``
    keeps the in-place rule (``a`` keeps its shape)."""
    a = _matrix(agnostic, device, 2, 3)
    expected = call(agnostic, a, None)
    out = agnostic.empty(0, dtype=agnostic.float64, device=device)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "An output with")
        assert call(agnostic, a, out) is out
    assert out.shape == (2, 3) and out.dtype == agnostic.float64
    numpy.testing.assert_array_equal(out.cpu().numpy(), expected.cpu().numpy().astype(numpy.float64))
    with pytest.warns(UserWarning, match=r"had shape \[7\], which does not match the required output shape \[2, 3\]"):
        call(agnostic, a, agnostic.zeros(7, dtype=agnostic.float64, device=device))
    if torch is not None:
        theirs = torch.empty(0, dtype=torch.float64)
        call(torch, torch.tensor(a.cpu().numpy()), theirs)
        numpy.testing.assert_allclose(out.cpu().numpy(), theirs.numpy(), rtol=1e-15)  # exp: libm's rounding


def test_in_place_methods_keep_the_in_place_rule(device):
    a = agnostic.ones(3, device=device)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        a.add_(agnostic.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        agnostic.add(a, a, out=agnostic.empty(3, dtype=agnostic.int64, device=device))


# ----- factories --------------------------------------------------------------------------------------------------
def _factory_cases(L, d):
    """``{label: (factory name, args, kwargs, out dtype)}``: calls whose ``out`` decides the dtype."""
    return {
        "zeros int32": ("zeros", (2, 3), {}, L.int32), "ones float64": ("ones", (4,), {}, L.float64),
        "empty int8": ("empty", (3,), {}, L.int8), "full of 3.5 into int64": ("full", ((2,), 3.5), {}, L.int64),
        "arange into float64": ("arange", (5,), {}, L.float64),
        "arange of quarters into int32": ("arange", (0, 1, 0.25), {}, L.int32),
        "linspace into int64": ("linspace", (0, 1, 3), {}, L.int64),
        "logspace": ("logspace", (0, 1, 3), {}, L.float32), "eye bool": ("eye", (2, 3), {}, L.bool),
        "rand float64": ("rand", (3,), {}, L.float64), "randn float16": ("randn", (2, 2), {}, L.float16),
        "randint int32": ("randint", (0, 5, (3,)), {}, L.int32), "randint float": ("randint", (5, (3,)), {}, L.float32),
        "randperm int32": ("randperm", (4,), {}, L.int32), "normal": ("normal", (2.0, 3.0, (2,)), {}, L.float64),
        "zeros with requires_grad": ("zeros", (2,), {"requires_grad": True}, L.float32),
    }


def _factory_call(L, d, label, out):
    name, args, kwargs, _ = _factory_cases(L, d)[label]
    L.manual_seed(0)
    return getattr(L, name)(*args, **kwargs, out=out)


@pytest.mark.parametrize("label", sorted(_factory_cases(agnostic, "cpu")))
def test_a_factorys_out_decides_its_dtype_and_device(device, label):
    name, args, kwargs, dtype = _factory_cases(agnostic, device)[label]
    out = agnostic.full((5,), 7, dtype=dtype, device=device)  # resized without a warning, as PyTorch's factories do
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = _factory_call(agnostic, device, label, out)
    assert result is out and out.dtype == dtype and out.device == device
    assert out.requires_grad == kwargs.get("requires_grad", False)
    agnostic.manual_seed(0)
    expected = getattr(agnostic, name)(*args, **{**kwargs, "requires_grad": False}, dtype=dtype, device=device)
    assert out.shape == expected.shape
    if name != "empty":
        _assert_same(_numpy(out.detach()), _numpy(expected))


@pytest.mark.parametrize("label", sorted(_factory_cases(agnostic, "cpu")))
def test_a_factorys_out_gives_pytorchs_dtype_shape_and_values(label):
    if torch is None:
        pytest.skip("PyTorch is not installed (it is a reference, never a dependency)")
    _, _, _, dtype = _factory_cases(torch, "cpu")[label]
    theirs = _factory_call(torch, "cpu", label, torch.empty(0, dtype=dtype))
    ours = _factory_call(agnostic, "cpu", label, agnostic.empty(0, dtype=_factory_cases(agnostic, "cpu")[label][3]))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1] and tuple(ours.shape) == theirs.shape
    assert ours.requires_grad == theirs.requires_grad
    if label.split()[0] in ("zeros", "ones", "full", "arange", "linspace", "logspace", "eye"):  # not random, not empty
        _assert_same(_numpy(ours.detach()), _numpy(theirs.detach()))


def test_a_factorys_dtype_device_and_out_must_agree(device):
    out = agnostic.empty(0, dtype=agnostic.int32, device=device)
    with pytest.raises(RuntimeError, match=r"zeros\(\): dtype float32 does not match dtype of out parameter \(int32\)"):
        agnostic.zeros(2, dtype=agnostic.float32, out=out)
    other = "cpu" if device.type != "cpu" else "cuda"
    with pytest.raises(RuntimeError, match=f"device type {other} does not match device type of out parameter "
                                           rf"\({device.type}\)"):
        agnostic.ones(2, device=other, out=out)
    with pytest.raises(TypeError, match=r"arange\(\): argument 'out' must be Tensor, not list"):
        agnostic.arange(3, out=[])
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        agnostic.zeros(2, out=agnostic.empty(2, requires_grad=True, device=device))
    assert agnostic.zeros(2, dtype=agnostic.int32, device=device.type, out=out) is out  # the same: taken
