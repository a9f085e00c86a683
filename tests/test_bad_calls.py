"""Everyday mistakes, one row each: the call, the error type PyTorch raises and a fragment of the message (a regular
expression) that names the problem. Each row runs on agnostic (on every device where the device matters) and, where
PyTorch is installed, on PyTorch too, so that the table stays honest. No row may leak an error type of NumPy, CuPy or
the codecs: every error must be a Python built-in one, as PyTorch's are."""

import builtins
import importlib.util
import re
import sys
from dataclasses import dataclass
from typing import Callable

import numpy
import pytest

import agnostic


@dataclass(frozen=True)
class Mistake:
    """``call(lib, device)`` does something wrong with ``lib`` (agnostic or torch); it must raise ``error`` with a
    message matching ``fragment`` (``torch_fragment`` where PyTorch's wording differs from agnostic's)."""

    name: str
    call: Callable
    error: type
    fragment: str
    torch_fragment: str = None
    on_devices: bool = False  # run on every device (else on the CPU only)
    needs_cuda: bool = False  # only meaningful with a CUDA device (mixing devices); not run on PyTorch's CPU build
    torch_differs: bool = False  # PyTorch's CPU build can't show it (CUDA rows); checked on agnostic only
    known_gap: str = None  # where agnostic still differs from PyTorch: must fail on agnostic until fixed
    torch_since: tuple = None  # the PyTorch release whose behaviour the row describes, where older ones differ


def _leaf(lib, device="cpu"):
    return lib.ones(2, device=device, requires_grad=True)


def _backward_twice(lib, device):
    loss = (_leaf(lib, device) * 2).sum()
    loss.backward()
    loss.backward()


def _inplace_on_leaf(lib, device):
    _leaf(lib, device).add_(1)


def _int_in_place_float(lib, device):
    values = lib.ones(2, dtype=lib.int64, device=device)
    values += 0.5


def _state_dict(lib, **changes):
    layer = lib.nn.Linear(2, 3)
    state = dict(layer.state_dict())
    for key, value in changes.items():
        if value is None:
            del state[key]
        else:
            state[key] = value
    return layer, state


def _missing_key(lib, device):
    layer, state = _state_dict(lib, bias=None)
    layer.load_state_dict(state)


def _unexpected_key(lib, device):
    layer, state = _state_dict(lib, extra=lib.zeros(1))
    layer.load_state_dict(state)


def _shape_mismatch(lib, device):
    layer, state = _state_dict(lib, weight=lib.zeros(2, 2))
    layer.load_state_dict(state)


def _params(lib):
    return [lib.ones(2, requires_grad=True)]


def _duplicate_parameter(lib, device):
    parameter = lib.ones(2, requires_grad=True)
    lib.optim.SGD([{"params": [parameter]}, {"params": [parameter]}], lr=0.1)


def _loader(lib, **options):
    return lib.utils.data.DataLoader(lib.utils.data.TensorDataset(lib.arange(6)), **options)


def _batch_sampler(lib):
    sampler = lib.utils.data.SequentialSampler(range(6))
    return lib.utils.data.BatchSampler(sampler, batch_size=2, drop_last=False)


def _random_split(lib, device):
    lib.utils.data.random_split(lib.utils.data.TensorDataset(lib.arange(6)), [2, 3])


def _ones(lib, device, *size, **options):
    return lib.ones(*size, device=device, **options)


def _not_a_tensor(op, call, argument, position, given):
    """A row for an op given a non-tensor where it takes a tensor: PyTorch's message names the op, the argument
    (and its position, unless keyword-only) and the type given (``ops._dispatch.check_tensor``). PyTorch's own
    message is that one, or, for an op with several overloads in its release, a list of them."""
    where = "" if position is None else rf" \(position {position}\)"
    fragment = rf"{op}\(\): argument '{argument}'{where} must be Tensor, not {given}"
    return Mistake(f"{op}() given a {given} for '{argument}'", call, TypeError, fragment,
                   torch_fragment=rf"{fragment}|{op}\(\) received an invalid combination of arguments")


MISTAKES = [
    # ----- devices ---------------------------------------------------------------------------------------------
    Mistake("unknown device string", lambda lib, d: lib.zeros(2, device="gpu"), RuntimeError,
            "unknown device type 'gpu'", torch_fragment="device type at start of device string: gpu"),
    Mistake("malformed device index", lambda lib, d: lib.device("cuda:x"), RuntimeError,
            "(?i)invalid device string"),
    Mistake("negative device index", lambda lib, d: lib.device("cuda", -1), RuntimeError,
            "(?i)device index must (not be negative|be non-negative)"),
    Mistake("cuda index out of range", lambda lib, d: lib.zeros(2, device="cuda:99"), RuntimeError,
            "(?i)cuda", torch_differs=True),
    Mistake("mixing devices in add", lambda lib, d: _ones(lib, d, 2) + lib.ones(2), RuntimeError,
            "Expected all tensors to be on the same device", on_devices=True, needs_cuda=True),
    Mistake("mixing devices in matmul", lambda lib, d: _ones(lib, d, 2, 2) @ lib.ones(2, 2), RuntimeError,
            "Expected all tensors to be on the same device", on_devices=True, needs_cuda=True),
    # ----- a non-tensor where a tensor is taken ----------------------------------------------------------------
    _not_a_tensor("exp", lambda lib, d: lib.exp(1.0), "input", 1, "float"),
    _not_a_tensor("sum", lambda lib, d: lib.sum([1]), "input", 1, "list"),
    _not_a_tensor("logcumsumexp", lambda lib, d: lib.logcumsumexp([1.0], 0), "input", 1, "list"),
    _not_a_tensor("histc", lambda lib, d: lib.histc([1.0]), "input", 1, "list"),
    _not_a_tensor("sort", lambda lib, d: lib.sort([1]), "input", 1, "list"),
    _not_a_tensor("isclose", lambda lib, d: lib.isclose(_ones(lib, d, 2), 1.0), "other", 2, "float"),
    _not_a_tensor("searchsorted", lambda lib, d: lib.searchsorted(_ones(lib, d, 2), _ones(lib, d, 2), sorter=[0]),
                  "sorter", None, "list"),
    _not_a_tensor("bucketize", lambda lib, d: lib.bucketize(_ones(lib, d, 2), [1.0]), "boundaries", 2, "list"),
    _not_a_tensor("matmul", lambda lib, d: lib.matmul(_ones(lib, d, 2), [1.0]), "other", 2, "list"),
    _not_a_tensor("outer", lambda lib, d: lib.outer(_ones(lib, d, 2), 1), "vec2", 2, "int"),
    _not_a_tensor("cross", lambda lib, d: lib.cross(_ones(lib, d, 3), 2), "other", 2, "int"),
    _not_a_tensor("lu_unpack", lambda lib, d: lib.lu_unpack(_ones(lib, d, 2, 2), [1]), "LU_pivots", 2, "list"),
    _not_a_tensor("ormqr", lambda lib, d: lib.ormqr([1.0], _ones(lib, d, 1), _ones(lib, d, 1)), "input", 1, "list"),
    _not_a_tensor("heaviside", lambda lib, d: lib.heaviside(_ones(lib, d, 2), 0.5), "values", 2, "float"),
    _not_a_tensor("conj", lambda lib, d: lib.conj([1]), "input", 1, "list"),
    _not_a_tensor("prelu", lambda lib, d: lib.prelu(_ones(lib, d, 2), 0.25), "weight", 2, "float"),
    _not_a_tensor("is_same_size", lambda lib, d: lib.is_same_size(_ones(lib, d, 2), 3), "other", 2, "int"),
    _not_a_tensor("gradient", lambda lib, d: lib.gradient([1.0, 2.0]), "input", 1, "list"),
    _not_a_tensor("slice_scatter", lambda lib, d: lib.slice_scatter(_ones(lib, d, 3), [1.0]), "src", 2, "list"),
    _not_a_tensor("select_scatter", lambda lib, d: lib.select_scatter(_ones(lib, d, 3), [1.0], 0, 0), "src", 2,
                  "list"),
    _not_a_tensor("slice_inverse", lambda lib, d: _ones(lib, d, 3).slice_inverse([1.0], 0), "src", 1, "list"),
    _not_a_tensor("put", lambda lib, d: lib.put(_ones(lib, d, 3), [0], _ones(lib, d, 1)), "index", 2, "list"),
    _not_a_tensor("index_reduce_", lambda lib, d: _ones(lib, d, 3).index_reduce_(0, [0], _ones(lib, d, 1), "prod"),
                  "index", 2, "list"),
    _not_a_tensor("index_copy_", lambda lib, d: _ones(lib, d, 3).index_copy_(0, [0], _ones(lib, d, 1)), "index", 2,
                  "list"),
    _not_a_tensor("index_put", lambda lib, d: lib.index_put(_ones(lib, d, 3), (lib.tensor([0]),), 1.0), "values", 3,
                  "float"),
    _not_a_tensor("take_along_dim", lambda lib, d: lib.take_along_dim(_ones(lib, d, 3), [0]), "indices", 2, "list"),
    _not_a_tensor("scatter_reduce", lambda lib, d: lib.scatter_reduce(_ones(lib, d, 3), 0, lib.zeros(1, dtype=lib.long),
                                                                      [1.0], "sum"), "src", 4, "list"),
    _not_a_tensor("map_", lambda lib, d: _ones(lib, d, 3).map_([1], lambda a, b: a), "other", 1, "list"),
    # ----- shapes ----------------------------------------------------------------------------------------------
    Mistake("matmul shape mismatch", lambda lib, d: _ones(lib, d, 2, 3) @ _ones(lib, d, 2, 3), RuntimeError,
            r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 2x3\)", on_devices=True),
    Mistake("mm of a vector", lambda lib, d: lib.mm(_ones(lib, d, 3), _ones(lib, d, 3)), RuntimeError,
            "expected 2-D tensors, got 1-D and 1-D", torch_fragment="must be a matrix", on_devices=True),
    Mistake("cat size mismatch", lambda lib, d: lib.cat([_ones(lib, d, 2, 3), _ones(lib, d, 2, 4)]), RuntimeError,
            "Sizes of tensors must match except in dimension 0", on_devices=True),
    Mistake("cat of nothing", lambda lib, d: lib.cat([]), ValueError, "expect(s|ed) a non-empty (list|sequence) of "
            "[Tt]ensors"),
    Mistake("stack size mismatch", lambda lib, d: lib.stack([_ones(lib, d, 2), _ones(lib, d, 3)]), RuntimeError,
            "stack expects each tensor to be equal size", on_devices=True),
    Mistake("view of a non-contiguous tensor", lambda lib, d: _ones(lib, d, 2, 3).t().view(6), RuntimeError,
            "view size is not compatible with input tensor's size and stride", on_devices=True),
    Mistake("broadcasting failure", lambda lib, d: _ones(lib, d, 2, 3) + _ones(lib, d, 4), RuntimeError,
            r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1",
            on_devices=True),
    Mistake("reshape size mismatch", lambda lib, d: _ones(lib, d, 6).reshape(4, 2), RuntimeError,
            r"shape '\[4, 2\]' is invalid for input of size 6", on_devices=True),
    Mistake("view with two -1", lambda lib, d: _ones(lib, d, 6).view(-1, -1), RuntimeError,
            "only one dimension can be inferred"),
    Mistake("expand of a non-singleton dimension", lambda lib, d: _ones(lib, d, 3).expand(2, 4), RuntimeError,
            r"The expanded size of the tensor \(4\) must match the existing size \(3\)"),
    Mistake("permute with too few dims", lambda lib, d: _ones(lib, d, 2, 3).permute(0), RuntimeError,
            "number of dims don't match: got 1 dims for a 2-d tensor",
            torch_fragment="does not match the length of the desired ordering of dimensions"),
    Mistake("transpose dim out of range", lambda lib, d: _ones(lib, d, 2, 3).transpose(0, 2), IndexError,
            r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"),
    Mistake("sum over a missing dim", lambda lib, d: _ones(lib, d, 2).sum(dim=1), IndexError,
            "Dimension out of range"),
    Mistake("split sizes not summing up", lambda lib, d: _ones(lib, d, 4).split([1, 2]), RuntimeError,
            "split_with_sizes expects split_sizes to sum exactly to 4"),
    # ----- dtypes ----------------------------------------------------------------------------------------------
    Mistake("int tensor requiring grad", lambda lib, d: _ones(lib, d, 2, dtype=lib.int64, requires_grad=True),
            RuntimeError, "(?i)only Tensors of floating point and complex dtype can require gradients"),
    Mistake("requires_grad_ on an int tensor", lambda lib, d: lib.tensor([1, 2]).requires_grad_(), RuntimeError,
            "(?i)only Tensors of floating point .*can require gradients"),
    Mistake("negating a bool tensor", lambda lib, d: -lib.tensor([True], device=d), NotImplementedError,
            "Negation, the `-` operator, on a bool tensor is not supported", on_devices=True, torch_since=(2, 14)),
    Mistake("subtracting bool tensors", lambda lib, d: lib.tensor([True], device=d) - lib.tensor([True], device=d),
            NotImplementedError, "Subtraction, the `-` operator, with two bool tensors is not supported",
            on_devices=True, torch_since=(2, 14)),
    Mistake("inverting a float tensor", lambda lib, d: ~_ones(lib, d, 2), TypeError,
            "only implemented (on|for) integer and (Boolean-type|bool) tensors", on_devices=True,
            known_gap="agnostic raises NotImplementedError (a RuntimeError) for ~ of a float tensor, PyTorch a "
                      "TypeError"),
    Mistake("float tensor as an index", lambda lib, d: _ones(lib, d, 3)[lib.tensor([1.0], device=d)], IndexError,
            "tensors used as indices must be long, int, byte or bool", on_devices=True),
    Mistake("misspelled dtype string", lambda lib, d: lib.zeros(2, dtype="flaot32"), TypeError,
            "unknown dtype 'flaot32'", torch_fragment="must be torch.dtype, not str", torch_since=(2, 14)),
    Mistake("matmul of float and double", lambda lib, d: _ones(lib, d, 2, 2) @ _ones(lib, d, 2, 2, dtype=lib.float64),
            RuntimeError, "same dtype", on_devices=True),
    Mistake("float result into an int tensor in place", _int_in_place_float, RuntimeError,
            "result type (Float|float32) can't be cast to the desired output type (Long|int64)", on_devices=True),
    Mistake("mean of an int tensor", lambda lib, d: lib.tensor([1, 2], device=d).mean(), RuntimeError,
            "mean\\(\\): could not infer output dtype", on_devices=True),
    # ----- indices ---------------------------------------------------------------------------------------------
    Mistake("integer index out of range", lambda lib, d: _ones(lib, d, 3)[5], IndexError,
            "index 5 is out of bounds for dimension 0 with size 3", on_devices=True),
    Mistake("too many indices", lambda lib, d: _ones(lib, d, 3)[0, 0], IndexError,
            "too many indices for tensor of dimension 1"),
    Mistake("mask of the wrong shape", lambda lib, d: _ones(lib, d, 3)[lib.tensor([True, False], device=d)],
            IndexError, r"The shape of the mask \[2\] at index 0 does not match the shape of the indexed tensor "
            r"\[3\] at index 0", on_devices=True),
    Mistake("gather index of other rank", lambda lib, d: lib.gather(_ones(lib, d, 2, 2), 1, lib.tensor([0, 1],
            device=d)), RuntimeError, "Index tensor must have the same number of dimensions as input tensor",
            on_devices=True),
    Mistake("gather with a float index", lambda lib, d: lib.gather(_ones(lib, d, 2, 2), 1, _ones(lib, d, 2, 1)),
            RuntimeError, "gather\\(\\): Expected dtype int(32/int)?64 for index", on_devices=True),
    Mistake("scatter index out of range", lambda lib, d: lib.zeros(3).scatter(0, lib.tensor([5]), lib.ones(1)),
            RuntimeError, "index 5 is out of bounds for dimension 0 with size 3"),
    Mistake("index_select with a matrix index", lambda lib, d: _ones(lib, d, 3).index_select(0, lib.zeros(
            1, 1, dtype=lib.int64, device=d)), IndexError, "index must be a 1-D integer tensor",
            torch_fragment="Index is supposed to be a vector", on_devices=True),
    # ----- factories -------------------------------------------------------------------------------------------
    Mistake("negative size", lambda lib, d: lib.ones(2, -1, device=d), RuntimeError,
            r"Trying to create tensor with negative dimension -1: \[2, -1\]", on_devices=True),
    Mistake("negative size to randn", lambda lib, d: lib.randn(-3, device=d), RuntimeError,
            "negative dimension -3", on_devices=True),
    Mistake("size overflowing int64", lambda lib, d: lib.ones(2 ** 62, device=d), RuntimeError,
            r"Storage size calculation overflowed with sizes=\[4611686018427387904\]", on_devices=True),
    Mistake("element count overflowing int64", lambda lib, d: lib.zeros(2 ** 32, 2 ** 32, device=d), RuntimeError,
            r"Storage size calculation overflowed with sizes=\[4294967296, 4294967296\]", on_devices=True),
    Mistake("more bytes than any machine has", lambda lib, d: lib.empty(2 ** 46, device=d), RuntimeError,
            "you tried to allocate 281474976710656 bytes|CUDA out of memory. Tried to allocate 262144.00 GiB",
            on_devices=True, torch_fragment="you tried to allocate 281474976710656 bytes"),
    Mistake("arange with a zero step", lambda lib, d: lib.arange(0, 5, 0), RuntimeError, "step must be nonzero"),
    Mistake("eye of negative size", lambda lib, d: lib.eye(-1, device=d), RuntimeError,
            "n must be greater or equal to 0, got -1", on_devices=True),
    Mistake("linspace with negative steps", lambda lib, d: lib.linspace(0, 1, -1), RuntimeError,
            "number of steps must be non-negative"),
    Mistake("ragged nested lists", lambda lib, d: lib.tensor([[1, 2], [3]]), ValueError, "same length",
            torch_fragment=r"expected sequence of length 2 at dim 1 \(got 1\)"),
    Mistake("randint with an empty range", lambda lib, d: lib.randint(5, 3, (2,)), RuntimeError,
            "from=5 >= to=3"),
    # ----- tensors and autograd --------------------------------------------------------------------------------
    Mistake("backward of a non-scalar", lambda lib, d: (_leaf(lib, d) * 2).backward(), RuntimeError,
            "grad can be implicitly created only for scalar outputs", on_devices=True),
    Mistake("backward twice", _backward_twice, RuntimeError,
            "Trying to backward through the graph a second time", on_devices=True),
    Mistake("backward of a tensor without grad", lambda lib, d: _ones(lib, d, 2).sum().backward(), RuntimeError,
            "element 0 of tensors does not require grad and does not have a grad_fn"),
    Mistake("in-place change of a leaf that requires grad", _inplace_on_leaf, RuntimeError,
            "a leaf Variable that requires grad is being used in an in-place operation"),
    Mistake("numpy() of a tensor that requires grad", lambda lib, d: _leaf(lib).numpy(), RuntimeError,
            r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) instead."),
    Mistake("numpy.asarray of a tensor that requires grad", lambda lib, d: numpy.asarray(_leaf(lib)),
            RuntimeError, r"Can't call numpy\(\) on Tensor that requires grad"),
    Mistake("item() of many elements", lambda lib, d: _ones(lib, d, 2).item(), RuntimeError,
            "a Tensor with 2 elements cannot be converted to Scalar", on_devices=True),
    Mistake("truth of many elements", lambda lib, d: bool(_ones(lib, d, 2)), RuntimeError,
            "Boolean value of Tensor with .* ambiguous", on_devices=True),
    # ----- modules ---------------------------------------------------------------------------------------------
    Mistake("Linear on the wrong in_features", lambda lib, d: lib.nn.Linear(3, 2)(lib.ones(1, 4)), RuntimeError,
            r"mat1 and mat2 shapes cannot be multiplied \(1x4 and 3x2\)"),
    Mistake("Conv2d on a 2-D input", lambda lib, d: lib.nn.Conv2d(1, 1, 3)(lib.ones(5, 5)), RuntimeError,
            r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[5, 5\]"),
    Mistake("Conv2d on a 3-D input of other channels", lambda lib, d: lib.nn.Conv2d(3, 1, 3)(lib.ones(1, 5, 5)),
            RuntimeError, "to have 3 channels, but got 1 channels instead"),
    Mistake("Embedding index out of range", lambda lib, d: lib.nn.Embedding(3, 2)(lib.tensor([5])), IndexError,
            "index out of range in self"),
    Mistake("cross_entropy target out of range", lambda lib, d: lib.nn.functional.cross_entropy(
            lib.ones(1, 3), lib.tensor([5])), IndexError, "Target 5 is out of bounds"),
    Mistake("load_state_dict missing a key", _missing_key, RuntimeError, 'Missing key\\(s\\) in state_dict: "bias"'),
    Mistake("load_state_dict with an unexpected key", _unexpected_key, RuntimeError,
            'Unexpected key\\(s\\) in state_dict: "extra"'),
    Mistake("load_state_dict with a shape mismatch", _shape_mismatch, RuntimeError,
            "size mismatch for weight: copying a param with shape"),
    Mistake("a module attribute that doesn't exist", lambda lib, d: lib.nn.Linear(2, 2).wieght, AttributeError,
            "'Linear' object has no attribute 'wieght'"),
    # ----- optimizers ------------------------------------------------------------------------------------------
    Mistake("optimizer over no parameters", lambda lib, d: lib.optim.SGD([], lr=0.1), ValueError,
            "optimizer got an empty parameter list"),
    Mistake("negative learning rate", lambda lib, d: lib.optim.SGD(_params(lib), lr=-1.0), ValueError,
            "Invalid learning rate: -1"),
    Mistake("negative momentum", lambda lib, d: lib.optim.SGD(_params(lib), lr=0.1, momentum=-1.0), ValueError,
            "Invalid momentum value: -1"),
    Mistake("Adam beta out of range", lambda lib, d: lib.optim.Adam(_params(lib), betas=(1.5, 0.9)), ValueError,
            "Invalid beta parameter at index 0: 1.5"),
    Mistake("negative weight decay", lambda lib, d: lib.optim.Adam(_params(lib), weight_decay=-1.0), ValueError,
            "Invalid weight_decay value: -1"),
    Mistake("a tensor instead of a parameter list", lambda lib, d: lib.optim.SGD(_leaf(lib), lr=0.1), TypeError,
            "params argument given to the optimizer should be an iterable of Tensors or dicts"),
    Mistake("a parameter group without params", lambda lib, d: lib.optim.SGD([{"lr": 0.1}], lr=0.1), KeyError,
            "params"),
    Mistake("one parameter in two groups", _duplicate_parameter, ValueError,
            "some parameters appear in more than one parameter group"),
    # ----- DataLoader ------------------------------------------------------------------------------------------
    Mistake("batch_size=0", lambda lib, d: _loader(lib, batch_size=0), ValueError,
            "batch_size should be a positive integer value, but got batch_size=0"),
    Mistake("negative num_workers", lambda lib, d: _loader(lib, num_workers=-1), ValueError,
            "num_workers option should be non-negative"),
    Mistake("sampler and shuffle together", lambda lib, d: _loader(
            lib, sampler=lib.utils.data.SequentialSampler(range(6)), shuffle=True), ValueError,
            "sampler option is mutually exclusive with shuffle"),
    Mistake("batch_sampler with batch_size", lambda lib, d: _loader(lib, batch_sampler=_batch_sampler(lib),
            batch_size=3), ValueError, "batch_sampler option is mutually exclusive with batch_size"),
    Mistake("prefetch_factor without workers", lambda lib, d: _loader(lib, prefetch_factor=2), ValueError,
            "prefetch_factor option could only be specified in multiprocessing"),
    Mistake("negative timeout", lambda lib, d: _loader(lib, timeout=-1), ValueError,
            "timeout option should be non-negative"),
    Mistake("random_split lengths not adding up", _random_split, ValueError,
            "Sum of input lengths does not equal the length of the input dataset"),
]

BY_NAME = {mistake.name: mistake for mistake in MISTAKES}
assert len(BY_NAME) == len(MISTAKES), "each mistake has its own name"
ON_DEVICES = [mistake.name for mistake in MISTAKES if mistake.on_devices]
ON_CPU = [mistake.name for mistake in MISTAKES if not mistake.on_devices]


def _raised(call):
    """The exception ``call()`` raises (the test fails if it returns)."""
    try:
        call()
    except Exception as error:  # noqa: BLE001 - whatever it is, the checks below judge it
        return error
    pytest.fail("expected an error, but the call returned")


def _check(error, mistake, fragment):
    assert type(error).__module__ == "builtins" or isinstance(error, _AGNOSTIC_ERRORS), (
        f"{mistake.name}: leaked {type(error).__module__}.{type(error).__name__}: {error}")
    assert isinstance(error, mistake.error), (
        f"{mistake.name}: expected {mistake.error.__name__}, got {type(error).__name__}: {error}")
    message = error.args[0] if isinstance(error, KeyError) and error.args else str(error)
    assert re.search(fragment, str(message)), f"{mistake.name}: {message!r} doesn't match {fragment!r}"


# agnostic's own subclasses of built-in errors (as PyTorch's OutOfMemoryError or DistBackendError)
_AGNOSTIC_ERRORS = tuple(value for module in (agnostic, agnostic.cuda, agnostic.serialization, agnostic.distributed)
                         for value in vars(module).values()
                         if isinstance(value, type) and issubclass(value, Exception)
                         and value.__module__.startswith("agnostic") and value.__mro__[1] in vars(builtins).values())


def _run_agnostic(mistake, device):
    if mistake.needs_cuda and device.type != "cuda":
        pytest.skip("mixing devices needs a CUDA device")
    error = _raised(lambda: mistake.call(agnostic, device))
    if mistake.known_gap:
        try:
            _check(error, mistake, mistake.fragment)
        except AssertionError:
            pytest.xfail(mistake.known_gap)
        pytest.fail(f"{mistake.name} now behaves as PyTorch's: remove its known_gap")
    _check(error, mistake, mistake.fragment)


@pytest.mark.parametrize("name", ON_DEVICES)
def test_mistake_on_every_device(name, device):
    _run_agnostic(BY_NAME[name], device)


@pytest.mark.parametrize("name", ON_CPU)
def test_mistake(name):
    _run_agnostic(BY_NAME[name], agnostic.device("cpu"))


@pytest.mark.parametrize("name", [mistake.name for mistake in MISTAKES
                                  if not (mistake.needs_cuda or mistake.torch_differs)])
def test_pytorch_agrees(name):
    """The table describes PyTorch's behaviour: the same call raises the same type with the same fragment there."""
    torch = pytest.importorskip("torch")
    import torch.utils.data  # noqa: F401 - the DataLoader rows reach it as lib.utils.data

    mistake = BY_NAME[name]
    if mistake.torch_since and _version(torch.__version__) < mistake.torch_since:
        pytest.skip(f"PyTorch {torch.__version__} predates this row's behaviour (from {mistake.torch_since})")
    _check(_raised(lambda: mistake.call(torch, "cpu")), mistake, mistake.torch_fragment or mistake.fragment)


def _version(text):
    return tuple(int(part) for part in text.split("+")[0].split(".")[:2])



# ----- missing dependencies: the error names the package and how to install it ----------------------------------

def test_missing_ml_dtypes_is_named_for_bfloat16(monkeypatch):
    from agnostic import _dtypes

    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # what an environment without it gives: ImportError
    monkeypatch.delitem(_dtypes._NUMPY_OF, _dtypes.bfloat16, raising=False)
    with pytest.raises(TypeError, match=r"bfloat16 needs the ml_dtypes package.*pip install ml_dtypes"):
        agnostic.ones(2, dtype=agnostic.bfloat16)


def test_missing_scipy_is_named_for_special_functions(monkeypatch):
    from agnostic._backends import cpu_ops, special

    monkeypatch.setitem(sys.modules, "scipy.special", None)
    i0e = special.library_function(cpu_ops._scipy_special, lambda: numpy, "i0e")
    with pytest.raises(ModuleNotFoundError, match=r"i0e needs scipy.*pip install scipy"):
        i0e(numpy.ones(2))


def test_missing_cupy_names_the_cuda_extras():
    from agnostic._backends.cupy_loader import _cupy_missing

    assert "pip install 'agnostic-tensor[cuda12]'" in _cupy_missing(ModuleNotFoundError("No module named 'cupy'", name="cupy"))
    broken = _cupy_missing(ImportError("libcudart.so.12: cannot open shared object file"))
    assert "installed but failed to import" in broken and "libcudart.so.12" in broken and "agnostic-tensor[cuda13]" in broken
    if importlib.util.find_spec("cupy") is None:
        with pytest.raises(RuntimeError, match=r"CUDA support needs CuPy.*agnostic-tensor\[cuda12\]"):
            agnostic.zeros(2, device="cuda")
