"""PyTorch's keyword forms of arguments: a sizes argument given by name (``x.flip(dims=[0])``,
``torch.reshape(x, shape=(2, 3))``, ``x.view(size=(6,))``) and ``round(decimals=...)``, on every device, with
gradients, against PyTorch where it is installed."""

import importlib.util

import numpy as np
import pytest

import agnostic

HAS_TORCH = importlib.util.find_spec("torch") is not None

# (name, the call with the sizes by position, the same call with them by name): each library's own spelling
SIZES_BY_NAME = [
    ("reshape", lambda lib, x: x.reshape(3, 2), lambda lib, x: x.reshape(shape=(3, 2))),
    ("reshape function", lambda lib, x: lib.reshape(x, (6,)), lambda lib, x: lib.reshape(x, shape=(6,))),
    ("reshape, all by name", lambda lib, x: lib.reshape(x, (6,)), lambda lib, x: lib.reshape(input=x, shape=(6,))),
    ("view", lambda lib, x: x.view(6), lambda lib, x: x.view(size=(6,))),
    ("permute", lambda lib, x: x.permute(1, 0), lambda lib, x: x.permute(dims=(1, 0))),
    ("permute function", lambda lib, x: lib.permute(x, (1, 0)), lambda lib, x: lib.permute(x, dims=[1, 0])),
    ("flip", lambda lib, x: x.flip(0), lambda lib, x: x.flip(dims=[0])),
    ("flip function", lambda lib, x: lib.flip(x, (0, 1)), lambda lib, x: lib.flip(x, dims=(0, 1))),
    ("tile", lambda lib, x: x.tile(2), lambda lib, x: x.tile(dims=(2,))),
    ("expand", lambda lib, x: x.expand(2, 2, 3), lambda lib, x: x.expand(size=(2, 2, 3))),
    ("repeat", lambda lib, x: x.repeat(2, 1), lambda lib, x: x.repeat(repeats=(2, 1))),
    ("sum_to_size", lambda lib, x: x.sum_to_size(1, 3), lambda lib, x: x.sum_to_size(size=(1, 3))),
]
IDS = [case[0] for case in SIZES_BY_NAME]


def _source(lib, device=None):
    x = lib.arange(6.0).reshape(2, 3)
    return x if device is None else x.to(device)


def _weights(lib, like):
    return lib.arange(float(like.numel())).reshape(like.shape).to(like.device)


@pytest.mark.parametrize("name, by_position, by_name", SIZES_BY_NAME, ids=IDS)
def test_sizes_given_by_name_are_the_sizes_given_by_position(device, name, by_position, by_name):
    expected = by_position(agnostic, _source(agnostic, device))
    result = by_name(agnostic, _source(agnostic, device))
    assert result.device == expected.device and result.dtype == expected.dtype
    assert result.shape == expected.shape and np.array_equal(result.cpu().numpy(), expected.cpu().numpy())
    # recorded too: the node binds the sizes by name, and its gradient is the positional call's
    grads = []
    for call in (by_position, by_name):
        x = _source(agnostic, device).requires_grad_()
        output = call(agnostic, x)
        (output * _weights(agnostic, output)).sum().backward()
        grads.append(x.grad.cpu().numpy())
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("name, by_position, by_name", SIZES_BY_NAME, ids=IDS)
def test_sizes_given_by_name_match_pytorch(name, by_position, by_name):
    import torch

    ours, theirs = by_name(agnostic, _source(agnostic)), by_name(torch, _source(torch))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_sizes_given_both_ways_or_without_the_input_are_refused():
    x = agnostic.ones(2, 3)
    with pytest.raises(TypeError, match=r"flip\(\) got multiple values for argument 'dims'"):
        x.flip(0, dims=[1])
    with pytest.raises(TypeError, match=r"reshape\(\) missing required argument 'input'"):
        agnostic.reshape(shape=(6,))
    with pytest.raises(TypeError, match="unexpected keyword argument 'dimz'"):
        x.flip(dimz=[0])


# ----- round(decimals=...) ------------------------------------------------------------------------------------------
def _rounded(values, decimals, dtype):
    """PyTorch's formula (``round_decimals_kernel``), in NumPy: ``rint(x * 10**d) / 10**d`` (``rint(x / 10**-d) *
    10**-d`` for negative ``d``), computed in float32 for half types, in the dtype's own precision otherwise."""
    compute = np.float32 if dtype in ("float16", "bfloat16") else np.dtype(dtype).type
    x = values.astype(compute)
    scale = compute(10.0 ** abs(decimals))
    rounded = np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale
    return rounded


VALUES = np.array([1.2345, -2.5, 15.0, 149.0, 0.125, 0.375, -0.0, 1e6, 3.14159265, np.nan, np.inf])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("decimals", [-2, -1, 1, 2, 3])
def test_round_to_decimals_follows_pytorchs_formula(device, dtype, decimals):
    x = agnostic.tensor(VALUES, dtype=getattr(agnostic, dtype), device=device)
    result = agnostic.round(x, decimals=decimals)
    assert result.dtype == x.dtype and result.device == x.device
    expected = _rounded(x.float().cpu().numpy() if dtype in ("float16", "bfloat16") else x.cpu().numpy(),
                        decimals, dtype)
    np.testing.assert_array_equal(result.float().cpu().numpy(),
                                  agnostic.tensor(expected).to(x.dtype).float().numpy())
    np.testing.assert_array_equal(x.round(decimals=decimals).float().cpu().numpy(), result.float().cpu().numpy())
    in_place = x.clone()
    assert in_place.round_(decimals=decimals) is in_place
    np.testing.assert_array_equal(in_place.float().cpu().numpy(), result.float().cpu().numpy())


def test_round_to_decimals_writes_out_has_a_zero_gradient_and_refuses_integers(device):
    x = agnostic.tensor([1.26, 2.5, -0.05], device=device, requires_grad=True)
    (x.round(decimals=1) * 3).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    out = agnostic.empty(3, device=device)
    assert agnostic.round(x.detach(), decimals=1, out=out) is out
    np.testing.assert_array_equal(out.cpu().numpy(), np.float32([1.3, 2.5, -0.0]))  # -0.5 rounds to even
    assert agnostic.round(x.detach(), decimals=400).isnan().all()  # an infinite scale, as PyTorch's
    integers = agnostic.tensor([15, 25], device=device)
    assert agnostic.round(integers).tolist() == [15, 25]  # decimals 0: integers stay as they are
    with pytest.raises(NotImplementedError, match="to decimals is not implemented for agnostic.int64"):
        agnostic.round(integers, decimals=-1)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_round_to_decimals_matches_pytorch(dtype):
    import torch

    for decimals in (-3, -1, 1, 2, 4, 39, 400):
        ours = agnostic.round(agnostic.tensor(VALUES, dtype=getattr(agnostic, dtype)), decimals=decimals)
        theirs = torch.round(torch.tensor(VALUES, dtype=getattr(torch, dtype)), decimals=decimals)
        np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy(), err_msg=f"decimals={decimals}")


# ----- factories: size= and layout= ---------------------------------------------------------------------------------
FACTORIES = ["zeros", "ones", "empty", "rand", "randn"]


@pytest.mark.parametrize("name", FACTORIES)
def test_factories_take_their_size_by_name(device, name):
    factory = getattr(agnostic, name)
    made = factory(size=(2, 3), dtype=agnostic.float64, device=device)
    assert made.shape == (2, 3) and made.dtype == agnostic.float64 and made.device == agnostic.device(device)
    assert factory(size=[4], device=device).shape == (4,)
    with pytest.raises(TypeError, match=rf"{name}\(\) got multiple values for argument 'size'"):
        factory(2, size=(3,))


LAYOUT_CALLS = {
    "zeros": lambda layout, d: agnostic.zeros(2, layout=layout, device=d),
    "ones": lambda layout, d: agnostic.ones(2, layout=layout, device=d),
    "empty": lambda layout, d: agnostic.empty(2, layout=layout, device=d),
    "full": lambda layout, d: agnostic.full((2,), 1.5, layout=layout, device=d),
    "zeros_like": lambda layout, d: agnostic.zeros_like(agnostic.ones(2, device=d), layout=layout),
    "ones_like": lambda layout, d: agnostic.ones_like(agnostic.ones(2, device=d), layout=layout),
    "empty_like": lambda layout, d: agnostic.empty_like(agnostic.ones(2, device=d), layout=layout),
    "full_like": lambda layout, d: agnostic.full_like(agnostic.ones(2, device=d), 2.0, layout=layout),
    "arange": lambda layout, d: agnostic.arange(2, layout=layout, device=d),
    "linspace": lambda layout, d: agnostic.linspace(0, 1, 2, layout=layout, device=d),
    "logspace": lambda layout, d: agnostic.logspace(0, 1, 2, layout=layout, device=d),
    "eye": lambda layout, d: agnostic.eye(2, layout=layout, device=d)[0],
    "rand": lambda layout, d: agnostic.rand(2, layout=layout, device=d),
    "randn": lambda layout, d: agnostic.randn(2, layout=layout, device=d),
    "randint": lambda layout, d: agnostic.randint(0, 5, (2,), layout=layout, device=d),
    "randperm": lambda layout, d: agnostic.randperm(2, layout=layout, device=d),
    "rand_like": lambda layout, d: agnostic.rand_like(agnostic.ones(2, device=d), layout=layout),
    "randn_like": lambda layout, d: agnostic.randn_like(agnostic.ones(2, device=d), layout=layout),
    "randint_like": lambda layout, d: agnostic.randint_like(agnostic.ones(2, device=d), 0, 5, layout=layout),
    "hann_window": lambda layout, d: agnostic.hann_window(2, layout=layout, device=d),
    "new_zeros": lambda layout, d: agnostic.ones(1, device=d).new_zeros(2, layout=layout),
    "new_full": lambda layout, d: agnostic.ones(1, device=d).new_full((2,), 3.0, layout=layout),
    "new_empty_strided": lambda layout, d: agnostic.ones(1, device=d).new_empty_strided((2,), (1,), layout=layout),
    "scalar_tensor": lambda layout, d: agnostic.scalar_tensor(1.0, layout=layout, device=d).expand(2),
    "empty_strided": lambda layout, d: agnostic.empty_strided((2,), (1,), layout=layout, device=d),
    "tril_indices": lambda layout, d: agnostic.tril_indices(2, 1, layout=layout, device=d)[0],
    "triu_indices": lambda layout, d: agnostic.triu_indices(1, 2, layout=layout, device=d)[1],
}


@pytest.mark.parametrize("name", sorted(LAYOUT_CALLS))
def test_factories_take_the_strided_layout_and_refuse_sparse_ones(device, name):
    call = LAYOUT_CALLS[name]
    for layout in (None, agnostic.strided):
        made = call(layout, device)
        assert made.layout is agnostic.strided and made.shape == (2,) and made.device == agnostic.device(device)
    with pytest.raises(RuntimeError, match=rf"{name}\(\): makes strided \(dense\) tensors only, got "
                                           r"layout=agnostic.sparse_coo; make a sparse tensor with"):
        call(agnostic.sparse_coo, device)


def test_the_split_method_names_its_sizes_as_pytorch_does(device):
    x = agnostic.arange(6.0, device=device, requires_grad=True)
    pieces = x.split(split_size=4)  # Tensor.split's name; agnostic.split takes split_size_or_sections
    assert [tuple(p.shape) for p in pieces] == [(4,), (2,)]
    assert [tuple(p.shape) for p in agnostic.split(x, split_size_or_sections=[1, 5])] == [(1,), (5,)]
    (pieces[0].sum() * 2 + pieces[1].sum() * 3).backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0, 2.0, 3.0, 3.0]
