"""The complex-number ops (real, imag, view_as_real, view_as_complex, complex, polar, angle, sgn, adjoint/mH, abs)
agree across devices and with NumPy on random shapes, under PyTorch's dtype rules and errors; their gradients pass
gradcheck in float64 through real pairs (a complex input built by ``complex(re, im)``, a complex output read back
as ``view_as_real``), as finite differences of real functions."""

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic
from _strategies import (
    COMPLEX, DEVICES, FLOATS, INTS, REAL, arrays, broadcast_pair, check_tensor, fewer_examples, on_all_devices,
    shapes,
)

REAL_OF = {"complex64": "float32", "complex128": "float64"}
COMPLEX_OF = {"float32": "complex64", "float64": "complex128"}


def complex_arrays(name=None, shape_strategy=None):
    names = st.just(name) if name else st.sampled_from(COMPLEX)
    shape_strategy = shapes(max_dims=3, max_side=4) if shape_strategy is None else shape_strategy
    return st.tuples(names, shape_strategy).flatmap(lambda c: arrays(c[0], c[1], -5, 5))


@fewer_examples(0.5)
@given(complex_arrays())
def test_real_imag_and_view_as_real_split_the_parts(z):
    part = REAL_OF[z.dtype.name]
    check_tensor(on_all_devices(lambda t: t.real, z), z.real, part)
    check_tensor(on_all_devices(agnostic.imag, z), z.imag, part)
    check_tensor(on_all_devices(agnostic.view_as_real, z), np.stack([z.real, z.imag], -1), part)


@fewer_examples(0.5)
@given(st.sampled_from(REAL).flatmap(lambda name: arrays(name, shapes(max_dims=3, max_side=4), -5, 5)))
def test_real_of_a_real_tensor_is_itself_and_imag_view_as_real_refuse_it(x):
    check_tensor(on_all_devices(agnostic.real, x), x, x.dtype.name)
    on_all_devices(agnostic.imag, x).raises(RuntimeError)
    on_all_devices(agnostic.view_as_real, x).raises(RuntimeError)


@fewer_examples(0.5)
@given(complex_arrays())
def test_writing_through_real_and_imag_views_changes_the_complex_tensor(z):
    for device in DEVICES:
        t = agnostic.tensor(z, device=device)
        t.real[...] = 1.5
        t.imag.mul_(2)
        np.testing.assert_array_equal(t.cpu().numpy(), (1.5 + 2j * z.imag).astype(z.dtype))


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64"]), shapes(max_dims=3, min_side=1, max_side=4), st.data())
def test_view_as_complex_pairs_the_last_dim(name, shape, data):
    pairs = data.draw(arrays(name, shape + (2,), -5, 5))
    expected = pairs[..., 0] + 1j * pairs[..., 1]
    check_tensor(on_all_devices(agnostic.view_as_complex, pairs), expected, COMPLEX_OF[name])
    check_tensor(on_all_devices(lambda t: agnostic.view_as_real(agnostic.view_as_complex(t)), pairs), pairs, name)
    odd = data.draw(arrays(name, shape + (data.draw(st.sampled_from([1, 3])),), -5, 5))
    on_all_devices(agnostic.view_as_complex, odd).raises(RuntimeError)
    on_all_devices(agnostic.view_as_complex, pairs.astype(np.int64)).raises(RuntimeError)


@fewer_examples(0.5)
@given(st.sampled_from(["float32", "float64"]), broadcast_pair(max_dims=3, max_side=4), st.data())
def test_complex_and_polar_broadcast_two_float_tensors(name, pair, data):
    first = data.draw(arrays(name, pair[0], -5, 5))
    second = data.draw(arrays(name, pair[1], -5, 5))
    check_tensor(on_all_devices(agnostic.complex, first, second), first + 1j * second, COMPLEX_OF[name])
    wide_abs, wide_angle = first.astype(np.float64), second.astype(np.float64)
    tolerance = 1e-5 if name == "float32" else 1e-12
    check_tensor(on_all_devices(agnostic.polar, first, second), wide_abs * np.exp(1j * wide_angle),
                 COMPLEX_OF[name], rtol=tolerance, atol=tolerance)


@fewer_examples(0.5)
@given(st.sampled_from(FLOATS + INTS), st.sampled_from(FLOATS + INTS), st.data())
def test_complex_and_polar_refuse_mixed_or_non_float_dtypes(first_name, second_name, data):
    assume(first_name != second_name or first_name in INTS)  # float16 pairs give PyTorch's complex32
    first = data.draw(arrays(first_name, (2,), -5, 5))
    second = data.draw(arrays(second_name, (2,), -5, 5))
    on_all_devices(agnostic.complex, first, second).raises(RuntimeError)
    on_all_devices(agnostic.polar, first, second).raises(RuntimeError)


def test_complex_keeps_infinities_in_their_part():
    inf = np.array([math.inf, -math.inf], np.float64)
    zero = np.zeros(2)
    result = on_all_devices(agnostic.complex, inf, zero).ok()
    assert np.array_equal(result.array.real, inf) and np.array_equal(result.array.imag, zero)


@fewer_examples(0.5)
@given(st.sampled_from(COMPLEX + FLOATS + INTS + ["bool"]), shapes(max_dims=3, max_side=4), st.data())
def test_angle_matches_numpy_with_pytorch_s_real_rule(name, shape, data):
    x = data.draw(arrays(name, shape, -5, 5, integral=data.draw(st.booleans())))
    if name in FLOATS and x.size and data.draw(st.booleans()):
        x.reshape(-1)[0] = np.nan
    outcome = on_all_devices(agnostic.angle, x, compute=name)
    if name in COMPLEX:
        check_tensor(outcome, np.angle(x.astype(np.complex128)), REAL_OF[name], rtol=1e-6, atol=1e-6)
        return
    result_name = name if name in FLOATS else "float32"
    expected = np.where(x < 0, math.pi, 0.0)  # 0 for -0.0 too, where NumPy's angle gives pi
    if name in FLOATS:
        expected = np.where(np.isnan(x), np.nan, expected)
    check_tensor(outcome, expected.astype(result_name), result_name)


@fewer_examples(0.5)
@given(st.sampled_from(COMPLEX + FLOATS + INTS), shapes(max_dims=3, max_side=4), st.data())
def test_sgn_is_the_unit_complex_number_or_the_sign(name, shape, data):
    x = data.draw(arrays(name, shape, -5, 5, integral=data.draw(st.booleans())))
    outcome = on_all_devices(agnostic.sgn, x, compute=name)
    if name in COMPLEX:
        wide = x.astype(np.complex128)
        magnitude = np.abs(wide)
        expected = np.where(magnitude == 0, 0, wide / np.where(magnitude == 0, 1, magnitude))
        check_tensor(outcome, expected, name, rtol=1e-5, atol=1e-6)
        check_tensor(on_all_devices(agnostic.abs, x, compute=name), magnitude, REAL_OF[name], rtol=1e-5, atol=1e-6)
    else:
        check_tensor(outcome, np.sign(x), name)


@fewer_examples(0.5)
@given(st.sampled_from(COMPLEX + FLOATS + INTS), shapes(max_dims=4, max_side=4), st.data())
def test_adjoint_and_mH_conjugate_the_last_two_dims(name, shape, data):
    x = data.draw(arrays(name, shape, -5, 5))
    outcome = on_all_devices(agnostic.adjoint, x)
    mH = on_all_devices(lambda t: t.mH, x)
    if x.ndim < 2:
        outcome.raises(RuntimeError)
        mH.raises(RuntimeError)
        return
    expected = np.conj(np.swapaxes(x, -1, -2))
    check_tensor(outcome, expected, name)
    check_tensor(mH, expected, name)


# ----- gradients, in float64 through real pairs ------------------------------------------------------------------
def _complex_of_pairs(pairs):
    return agnostic.complex(pairs[..., 0], pairs[..., 1])


def _as_real(value):
    return agnostic.view_as_real(value) if value.dtype.is_complex else value


COMPLEX_FUNCTIONS = {
    "abs": lambda z: z.abs(),
    "angle": agnostic.angle,
    "sgn": agnostic.sgn,
    "real": lambda z: z.real * 1,
    "imag": lambda z: z.imag * 1,
    "view_as_real": agnostic.view_as_real,
    "adjoint": lambda z: agnostic.adjoint(z.reshape(z.shape[0], -1) if z.ndim else z.reshape(1, 1)),
    "mH": lambda z: (z.reshape(z.shape[0], -1) if z.ndim else z.reshape(1, 1)).mH,
    "times_its_conjugate": lambda z: z * z.conj(),
}


@fewer_examples(0.25, minimum=4)
@pytest.mark.parametrize("name", sorted(COMPLEX_FUNCTIONS))
@given(shapes(max_dims=2, min_side=1, max_side=3), st.data())
def test_complex_ops_pass_gradcheck_through_real_pairs(name, shape, data):
    pairs = data.draw(arrays("float64", shape + (2,), 0.2, 3))  # away from 0, where abs, angle, sgn have a kink
    pairs *= np.where(data.draw(arrays("bool", shape + (2,))), -1, 1)
    function = COMPLEX_FUNCTIONS[name]
    for device in DEVICES:
        leaf = agnostic.tensor(pairs, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda t: _as_real(function(_complex_of_pairs(t))), (leaf,))


@fewer_examples(0.25, minimum=4)
@given(shapes(max_dims=2, min_side=1, max_side=3), st.data())
def test_building_ops_pass_gradcheck(shape, data):
    first = data.draw(arrays("float64", shape, 0.2, 3))
    second = data.draw(arrays("float64", shape, -3, 3))
    for device in DEVICES:
        a = agnostic.tensor(first, device=device, requires_grad=True)
        b = agnostic.tensor(second, device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda x, y: agnostic.view_as_real(agnostic.complex(x, y)), (a, b))
        assert agnostic.autograd.gradcheck(lambda x, y: agnostic.view_as_real(agnostic.polar(x, y)), (a, b))
        pairs = agnostic.tensor(np.stack([first, second], -1), device=device, requires_grad=True)
        assert agnostic.autograd.gradcheck(lambda t: agnostic.view_as_real(agnostic.view_as_complex(t) * 2), (pairs,))


@fewer_examples(0.25, minimum=4)
@pytest.mark.parametrize("name", ["abs", "angle", "sgn"])
@given(complex_arrays("complex128", shapes(min_dims=1, max_dims=2, min_side=1, max_side=3)), st.data())
def test_complex_gradients_match_pytorch(name, z, data):
    torch = pytest.importorskip("torch")
    weights = data.draw(arrays("float64", z.shape, -2, 2)) if name != "sgn" else \
        data.draw(arrays("complex128", z.shape, -2, 2))
    z = np.where(np.abs(z) < 0.1, 1 + 1j, z)
    expected_input = torch.tensor(z, requires_grad=True)
    (getattr(torch, name)(expected_input) * torch.tensor(weights)).real.sum().backward()
    for device in DEVICES:
        leaf = agnostic.tensor(z, device=device, requires_grad=True)
        (getattr(agnostic, name)(leaf) * agnostic.tensor(weights, device=device)).real.sum().backward()
        np.testing.assert_allclose(leaf.grad.cpu().numpy(), expected_input.grad.numpy(), rtol=1e-10, atol=1e-12)
