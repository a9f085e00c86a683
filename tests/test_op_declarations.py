"""Ops declared as functions on tensors (reductions, linear algebra, shape, indexing, conversions and fills): each is
declared once, with its gradient formulas beside it, and everything users call is made from that declaration: the
public function, the Tensor method (the forward itself for plain tensors), GradTensor's recording method."""

import doctest
import inspect
import io
import pathlib

import numpy
import pytest

import agnostic
from agnostic._tensor_classes import GradTensor
from agnostic.ops._registry import _DECLARED, Composite

torch = pytest.importorskip("torch")

ROOT = pathlib.Path(agnostic.__file__).resolve().parent
COMPOSITES = sorted((op for op in _DECLARED if isinstance(op, Composite)), key=lambda op: op.name)
WITH_METHODS = [op for op in COMPOSITES if op.method is not None]


def _method_function(method):
    return method.fget if isinstance(method, property) else method


# ----- one declaration makes everything --------------------------------------------------------------------------
@pytest.mark.parametrize("op", COMPOSITES, ids=[op.name for op in COMPOSITES])
def test_every_declared_op_documents_an_example_that_runs(op):
    """Its docstring says what it computes and shows a ``>>>`` example printing what it prints (on the CPU)."""
    text = inspect.cleandoc(op.doc or "")
    assert ">>>" in text, f"{op.name}'s docstring has no example"
    test = doctest.DocTestParser().get_doctest(text, {"agnostic": agnostic}, op.name, None, 0)
    runner, report = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE), io.StringIO()
    assert not runner.run(test, out=report.write).failed, report.getvalue()


@pytest.mark.parametrize("op", WITH_METHODS, ids=[op.name for op in WITH_METHODS])
def test_functions_and_methods_have_the_forwards_signature_and_docstring(op):
    expected = str(inspect.signature(op.forward))
    names = (op.name,) + op.aliases
    if op.public:
        function_signature = _with_out(inspect.signature(op.forward)) if op.takes_out else expected
        for name in names:
            assert str(inspect.signature(getattr(agnostic, name))) == function_signature
            assert getattr(agnostic, name).__doc__ == op.doc
    own_method = inspect.unwrap(_method_function(op.method)) is not op.forward  # ``x.where(condition, y)``
    if own_method:
        expected = str(inspect.signature(_method_function(op.method)))
    for cls in (agnostic.Tensor, GradTensor):
        for name in names:
            method = _method_function(inspect.getattr_static(cls, name))
            assert str(inspect.signature(method)) == expected, (cls, name)
            assert own_method or method.__doc__ == op.doc, (cls, name)


def _with_out(signature):
    """``signature`` with PyTorch's keyword-only ``out=None`` last (before ``**kwargs``)."""
    parameters = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    parameters.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    parameters += [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    return str(signature.replace(parameters=parameters))


def test_plain_tensors_run_the_forward_itself():
    """Where only ``self`` can need a gradient, a plain tensor's method is the forward: no binding, no scan."""
    for name in ("sum", "mean", "reshape", "view", "permute", "__getitem__", "to", "clone", "flatten"):
        assert inspect.getattr_static(agnostic.Tensor, name) is _declared(name).forward, name
        assert inspect.getattr_static(GradTensor, name) is not _declared(name).forward, name
    assert agnostic.Tensor.T.fget is _declared("T").forward


def _declared(name):
    return next(op for op in COMPOSITES if op.name == name)


def test_calls_are_bound_to_their_parameters_by_name():
    """What a node records (and its formulas read by name): every parameter's value, defaults filled in, however
    the call passed them; a ``*dims`` parameter given one sequence holds its items."""
    x, index, source = agnostic.ones(2, 3), agnostic.tensor([[0], [1]]), agnostic.ones(2, 1)
    names = {id(x): "x", id(index): "index", id(source): "source"}

    def values(name, *args, **kwargs):
        return tuple(names.get(id(v), v) for v in _declared(name).binding.values(args, kwargs))

    assert values("sum", x) == ("x", None, False, None)
    assert values("sum", x, 1, True) == values("sum", x, keepdim=True, dim=1) == ("x", 1, True, None)
    assert values("sum", x, dtype=agnostic.float64) == ("x", None, False, agnostic.float64)
    assert values("reshape", x, 3, 2) == values("reshape", x, (3, 2)) == values("reshape", x, [3, 2]) == \
        ("x", (3, 2))
    assert values("scatter", x, 1, index, src=source) == ("x", 1, "index", "source", None, None)
    assert values("scatter", x, 1, index, reduce="add", value=2.0) == ("x", 1, "index", None, 2.0, "add")
    assert values("to", x, agnostic.float64, copy=True) == ("x", (agnostic.float64,), {"copy": True})
    with pytest.raises(TypeError):
        values("sum", x, bogus=1)
    with pytest.raises(TypeError):
        values("sum", x, 1, dim=1)


def test_a_plain_tensor_records_when_another_argument_requires_grad():
    weight = agnostic.ones(2, 2, requires_grad=True)
    plain = agnostic.ones(2, 2)
    assert plain.matmul(weight).grad_fn.name() == "MatmulBackward0"
    assert (plain @ weight).grad_fn.name() == "MatmulBackward0"
    assert (numpy.ones((2, 2), numpy.float32) @ weight).grad_fn.name() == "MatmulBackward0"  # reflected
    value = agnostic.tensor(3.0, requires_grad=True)
    filled = agnostic.zeros(2).masked_fill_(agnostic.tensor([True, False]), value)
    filled.sum().backward()
    assert filled.grad_fn.name() == "MaskedFillBackward0" and value.grad.item() == 1.0


def test_aliases_are_the_op_and_record_its_node():
    x = agnostic.ones(2, 3, requires_grad=True)
    assert agnostic.concat is agnostic.cat and agnostic.swapdims is agnostic.transpose
    assert agnostic.concatenate([x, x]).grad_fn.name() == "CatBackward0"
    assert x.swapaxes(0, 1).grad_fn.name() == "TransposeBackward0"
    assert agnostic.moveaxis(x, 0, 1).grad_fn.name() == "MovedimBackward0"
    assert x.double().grad_fn.name() == x.to("cpu", agnostic.float64).grad_fn.name() == "ToCopyBackward0"
    assert x.T.grad_fn.name() == "PermuteBackward0" and x.mT.grad_fn.name() == "TransposeBackward0"
    assert x[0].grad_fn.name() == "SelectBackward0"


def test_a_conversion_that_changes_nothing_returns_self_unrecorded():
    x = agnostic.ones(2, requires_grad=True)
    assert x.to(agnostic.float32) is x and x.contiguous() is x and x.float() is x


@pytest.mark.parametrize("view", [lambda y: y[0], lambda y: y.view(6), lambda y: y.T, lambda y: y.mT,
                                  lambda y: y.diagonal()], ids=["getitem", "view", "T", "mT", "diagonal"])
def test_in_place_changes_of_views_of_tensors_that_need_grad_reach_the_base(view):
    """As PyTorch: the base's history is rewritten (tests/test_inplace_views.py has the cases in depth)."""
    x = agnostic.ones(2, 3, requires_grad=True)
    y = x * 2
    view(y).mul_(2)
    y.sum().backward()
    viewed = agnostic.zeros(2, 3)
    view(viewed).fill_(1.0)
    assert x.grad.tolist() == (2 + 2 * viewed).tolist()


@pytest.mark.parametrize("view", [lambda y: y.split(1)[0], lambda y: y.unbind(1)[2]], ids=["split", "unbind"])
def test_outputs_of_multi_output_views_refuse_in_place_changes(view):
    y = agnostic.ones(2, 3, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="is a view and is being modified inplace"):
        view(y).mul_(2)


def test_shape_only_gradients_allow_later_in_place_changes_to_their_input():
    for op in (lambda y: y.sum(), lambda y: y.reshape(6), lambda y: y[1:], lambda y: y.cumsum(1),
               lambda y: agnostic.cat([y, y]), lambda y: y.clone(), lambda y: y.to(agnostic.float64)):
        x = agnostic.ones(2, 3, requires_grad=True)
        y = x * 2
        out = op(y)
        y.add_(1)
        out.sum().backward()
        assert x.grad is not None


@pytest.mark.parametrize("op", [lambda y: y.prod(), lambda y: y.var(), lambda y: y.norm(), lambda y: y @ y.T,
                                lambda y: y.max(1).values, lambda y: y.logsumexp(0)],
                         ids=["prod", "var", "norm", "matmul", "max", "logsumexp"])
def test_gradients_that_read_values_refuse_an_input_changed_in_place(op):
    y = agnostic.rand(2, 3, requires_grad=True) * 2
    out = op(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_factories_make_leaves_that_require_grad():
    made = [agnostic.zeros(2, requires_grad=True), agnostic.tensor([1.0], requires_grad=True),
            agnostic.full_like(agnostic.ones(2), 3.0, requires_grad=True),
            agnostic.logspace(0, 1, 3, requires_grad=True),
            agnostic.rand_like(agnostic.ones(2), requires_grad=True), agnostic.randn(2, requires_grad=True),
            agnostic.normal(0.0, 1.0, (2,), requires_grad=True)]
    assert all(t.requires_grad and t.is_leaf for t in made)
    with pytest.raises(RuntimeError, match="floating point"):
        agnostic.arange(3, requires_grad=True)


def test_no_backward_rule_parses_positional_arguments_again():
    """Formulas receive the arguments by name; nothing re-reads ``ctx.args[i]``, and no table of op names is kept
    apart from the declarations."""
    sources = {path: path.read_text() for path in ROOT.rglob("*.py")}
    for pattern in ("ctx.args[", "context.args[", "ctx.kwargs"):
        offenders = [str(path.relative_to(ROOT)) for path, text in sources.items() if pattern in text]
        assert not offenders, f"{pattern!r} in {offenders}"
    assert not (ROOT / "autograd" / "install.py").exists()
    assert not hasattr(agnostic.autograd.derivatives, "A")


# ----- gradients, against PyTorch --------------------------------------------------------------------------------
def _index(m, values):
    return m.tensor(values)


def _mask(m):
    return m.tensor([[True, False, True], [False, False, True]])


# name -> (function of the library (agnostic or torch) and the inputs, input shapes)
CASES = {
    "sum": (lambda m, x: x.sum(1), [(2, 3)]),
    "sum_all": (lambda m, x: m.sum(x), [(2, 3)]),
    "mean": (lambda m, x: x.mean((0, 1), keepdim=True), [(2, 3)]),
    "prod": (lambda m, x: x.prod(0), [(2, 3)]),
    "prod_all": (lambda m, x: x.prod(), [(2, 3)]),
    "var": (lambda m, x: x.var(1, keepdim=True), [(2, 3)]),
    "var_correction": (lambda m, x: m.var(x, 0, correction=0), [(2, 3)]),
    "std": (lambda m, x: x.std(), [(2, 3)]),
    "max_dim": (lambda m, x: x.max(1).values, [(2, 3)]),
    "max_all": (lambda m, x: x.max(), [(2, 3)]),
    "max_other": (lambda m, x, y: m.max(x, y), [(2, 3), (3,)]),
    "min_dim_keepdim": (lambda m, x: x.min(0, keepdim=True)[0], [(2, 3)]),
    "amax": (lambda m, x: m.amax(x, 0), [(2, 3)]),
    "amin": (lambda m, x: x.amin((0, 1)), [(2, 3)]),
    "norm": (lambda m, x: x.norm(), [(2, 3)]),
    "norm_1": (lambda m, x: x.norm(p=1, dim=1), [(2, 3)]),
    "norm_3": (lambda m, x: x.norm(p=3, dim=0), [(2, 3)]),
    "norm_inf": (lambda m, x: x.norm(p=float("inf")), [(2, 3)]),
    "logsumexp": (lambda m, x: x.logsumexp(1), [(2, 3)]),
    "cumsum": (lambda m, x: x.cumsum(1), [(2, 3)]),
    "cumprod": (lambda m, x: x.cumprod(dim=0), [(3, 2)]),
    "matmul": (lambda m, x, y: x @ y, [(2, 3), (3, 4)]),
    "matmul_batched_vector": (lambda m, x, y: m.matmul(x, other=y), [(2, 2, 3), (3,)]),
    "matmul_vector_matrix": (lambda m, x, y: x.matmul(y), [(3,), (3, 2)]),
    "mm": (lambda m, x, y: x.mm(mat2=y), [(2, 3), (3, 2)]),
    "bmm": (lambda m, x, y: m.bmm(x, y), [(2, 2, 3), (2, 3, 2)]),
    "mv": (lambda m, x, y: x.mv(y), [(2, 3), (3,)]),
    "dot": (lambda m, x, y: m.dot(x, y), [(3,), (3,)]),
    "inner": (lambda m, x, y: m.inner(x, y), [(2, 3), (4, 3)]),
    "inner_scalar": (lambda m, x, y: m.inner(x, y), [(), (2, 3)]),
    "outer": (lambda m, x, y: x.outer(y), [(2,), (3,)]),
    "ger": (lambda m, x, y: m.ger(x, y), [(2,), (3,)]),
    "einsum": (lambda m, x, y: m.einsum("ij,jk->ik", x, y), [(2, 3), (3, 2)]),
    "einsum_list": (lambda m, x, y: m.einsum("ij,j->i", [x, y]), [(2, 3), (3,)]),
    "reshape": (lambda m, x: x.reshape(3, 2), [(2, 3)]),
    "view": (lambda m, x: x.view(-1), [(2, 3)]),
    "view_as": (lambda m, x, y: x.view_as(y), [(2, 3), (6,)]),
    "reshape_as": (lambda m, x, y: m.reshape(x, (3, 2)).reshape_as(y), [(2, 3), (6,)]),
    "flatten": (lambda m, x: m.flatten(x, 1), [(2, 3, 2)]),
    "unflatten": (lambda m, x: x.unflatten(1, (3, 1)), [(2, 3)]),
    "permute": (lambda m, x: x.permute(2, 0, 1), [(2, 3, 2)]),
    "permute_tuple": (lambda m, x: m.permute(x, (2, 0, 1)), [(2, 3, 2)]),
    "transpose": (lambda m, x: m.transpose(x, 0, 2), [(2, 3, 2)]),
    "swapaxes": (lambda m, x: x.swapaxes(0, 1), [(2, 3)]),
    "t": (lambda m, x: x.t(), [(2, 3)]),
    "T": (lambda m, x: x.T, [(2, 3, 4)]),
    "mT": (lambda m, x: x.mT, [(2, 3, 4)]),
    "movedim": (lambda m, x: m.movedim(x, 0, -1), [(2, 3, 4)]),
    "squeeze": (lambda m, x: x.squeeze(1), [(2, 1, 3)]),
    "unsqueeze": (lambda m, x: x.unsqueeze(-1), [(2, 3)]),
    "expand": (lambda m, x: x.expand(4, 2, 3), [(2, 1)]),
    "expand_as": (lambda m, x, y: x.expand_as(y), [(1, 3), (2, 3)]),
    "broadcast_to": (lambda m, x: m.broadcast_to(x, (2, 3)), [(3,)]),
    "broadcast_tensors": (lambda m, x, y: m.broadcast_tensors(x, y)[0] * 2 + m.broadcast_tensors(x, y)[1],
                          [(2, 1), (3,)]),
    "cat": (lambda m, x, y: m.cat([x, y], dim=1), [(2, 3), (2, 1)]),
    "concat_with_empty": (lambda m, x, y: m.concat([x, y]), [(0,), (3,)]),
    "stack": (lambda m, x, y: m.stack((x, y), 1), [(2, 3), (2, 3)]),
    "hstack": (lambda m, x, y: m.hstack([x, y]), [(2, 3), (2, 1)]),
    "vstack": (lambda m, x, y: m.vstack([x, y]), [(3,), (2, 3)]),
    "split": (lambda m, x: x.split(2, 1)[1], [(2, 3)]),
    "split_sections": (lambda m, x: m.split(x, [1, 2], dim=1), [(2, 3)]),
    "chunk": (lambda m, x: x.chunk(2, 0), [(3, 2)]),
    "tensor_split": (lambda m, x: x.tensor_split([1], 1), [(2, 3)]),
    "unbind": (lambda m, x: x.unbind(1), [(2, 3)]),
    "narrow": (lambda m, x: x.narrow(1, -2, 2), [(2, 3)]),
    "flip": (lambda m, x: x.flip(0, 1), [(2, 3)]),
    "fliplr": (lambda m, x: x.fliplr(), [(2, 3)]),
    "flipud": (lambda m, x: m.flipud(x), [(2, 3)]),
    "roll": (lambda m, x: x.roll((1, -1), (0, 1)), [(2, 3)]),
    "roll_flat": (lambda m, x: x.roll(2), [(2, 3)]),
    "repeat": (lambda m, x: x.repeat(2, 1, 2), [(2, 3)]),
    "tile": (lambda m, x: x.tile((2,)), [(2, 3)]),
    "repeat_interleave": (lambda m, x: x.repeat_interleave(2, dim=1), [(2, 3)]),
    "repeat_interleave_tensor": (lambda m, x: x.repeat_interleave(_index(m, [1, 0, 2])), [(3,)]),
    "tril": (lambda m, x: x.tril(), [(3, 3)]),
    "triu": (lambda m, x: m.triu(x, diagonal=1), [(3, 3)]),
    "diagonal": (lambda m, x: x.diagonal(1, 0, 2), [(3, 2, 3)]),
    "diag_of_vector": (lambda m, x: m.diag(x, 1), [(3,)]),
    "diag_of_matrix": (lambda m, x: x.diag(-1), [(3, 3)]),
    "getitem": (lambda m, x: x[1:, [0, 2, 2]], [(3, 3)]),
    "getitem_mask": (lambda m, x: x[_mask(m)], [(2, 3)]),
    "setitem": (lambda m, x, y: _set_rows(x, y), [(2, 3), (3,)]),
    "gather": (lambda m, x: x.gather(1, _index(m, [[0, 0], [2, 1]])), [(2, 3)]),
    "scatter": (lambda m, x, y: x.scatter(1, _index(m, [[0], [2]]), src=y), [(2, 3), (2, 1)]),
    "scatter_value": (lambda m, x: m.scatter(x, 0, _index(m, [[1, 0, 1]]), 2.0), [(2, 3)]),
    "scatter_add": (lambda m, x, y: m.scatter_add(x, 1, _index(m, [[0, 0], [2, 2]]), y), [(2, 3), (2, 2)]),
    "index_select": (lambda m, x: x.index_select(0, _index(m, [1, 0, 1])), [(2, 3)]),
    "index_add": (lambda m, x, y: x.index_add(1, _index(m, [0, 0]), source=y, alpha=2), [(2, 3), (2, 2)]),
    "masked_fill": (lambda m, x, y: x.masked_fill(_mask(m), value=y), [(2, 3), ()]),
    "masked_select": (lambda m, x: m.masked_select(x, _mask(m)[0]), [(2, 3)]),
    "take": (lambda m, x: x.take(_index(m, [[5, 0], [5, 3]])), [(2, 3)]),
    "to": (lambda m, x: x.to(m.float32) * 3, [(2, 3)]),
    "double_type": (lambda m, x: x.float().double() + x.type(m.float32), [(2, 3)]),
    "cpu": (lambda m, x: x.cpu(), [(2,)]),
    "clone": (lambda m, x: x.clone() * x, [(2, 3)]),
    "contiguous": (lambda m, x: x.t().contiguous(), [(2, 3)]),
    "fill_": (lambda m, x, y: (x * 1).fill_(y) * x, [(2, 3), ()]),
    "zero_": (lambda m, x: (x * 2).zero_() + x, [(2, 3)]),
    "copy_": (lambda m, x, y: (x * 1).copy_(y) * x, [(2, 3), (3,)]),
    "in_place_ops": (lambda m, x, y: _in_place(m, x, y), [(2, 3), (2, 3)]),
}


def _set_rows(x, y):
    z = x * 1.5
    z[0] = y * 2
    z[1, 1:] = y[:2]
    return z


def _in_place(m, x, y):
    z = x * 1
    z.masked_fill_(_mask(m), y[0, 0])
    z.scatter_(1, _index(m, [[2], [0]]), y[:, :1])
    z.scatter_add_(0, _index(m, [[1, 0, 1]]), y[:1])
    return z.index_add_(1, _index(m, [2, 2, 0]), y * y)


def _loss(m, output):
    """A scalar that weighs every element of every floating output differently."""
    outputs = output if isinstance(output, (tuple, list)) else (output,)
    total = 0
    for number, tensor in enumerate(outputs):
        if tensor.dtype.is_floating_point:
            weights = m.arange(tensor.numel(), dtype=tensor.dtype).reshape(tensor.shape) * 0.25 + number + 1
            total = total + (tensor * weights).sum()
    return total


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradients_match_pytorch(name):
    function, shapes = CASES[name]
    rng = numpy.random.default_rng(sorted(CASES).index(name))
    values = [rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape) for shape in shapes]
    ours = [agnostic.tensor(v, requires_grad=True) for v in values]
    theirs = [torch.tensor(v, requires_grad=True) for v in values]
    got = agnostic.autograd.grad(_loss(agnostic, function(agnostic, *ours)), ours, allow_unused=True)
    expected = torch.autograd.grad(_loss(torch, function(torch, *theirs)), theirs, allow_unused=True)
    for mine, reference in zip(got, expected):
        if reference is None:
            assert mine is None or not mine.numpy().any()
        else:
            numpy.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-10, atol=1e-12)
