"""Complex numbers: real/imag and view_as_real/view_as_complex as views, complex, polar, angle, sgn, adjoint/mH/H,
and their gradients (PyTorch's conjugate-Wirtinger convention), checked against NumPy and PyTorch."""

import numpy as np
import pytest

import agnostic
from agnostic.autograd import gradcheck

Z = np.array([1 + 2j, 3 - 1j, 0j, -2 + 0.5j])
G = np.array([0.3 - 1j, 2 + 0.1j, 1 + 1j, -0.5 + 2j])  # an upstream gradient


def _grad_of(function, data, upstream, device):
    z = agnostic.tensor(data, device=device, requires_grad=True)
    y = function(z)
    y.backward(agnostic.tensor(upstream if y.dtype.is_complex else upstream.real, device=device))
    return z.grad.cpu().numpy()


def _torch_grad_of(function, data, upstream):
    torch = pytest.importorskip("torch")
    z = torch.tensor(data, requires_grad=True)
    y = function(z)
    y.backward(torch.tensor(upstream if y.is_complex() else upstream.real))
    return z.grad.numpy()


# ----- parts as views ----------------------------------------------------------------------------------------------
def test_real_and_imag_are_views_that_write_through(device):
    z = agnostic.tensor(Z, device=device)
    np.testing.assert_array_equal(z.real.cpu().numpy(), Z.real)
    np.testing.assert_array_equal(agnostic.imag(z).cpu().numpy(), Z.imag)
    assert z.real.dtype is agnostic.float64 and agnostic.tensor([1j]).imag.dtype is agnostic.float32
    z.real[0] = 10
    z.imag[1] = 7
    np.testing.assert_array_equal(z.cpu().numpy(), [10 + 2j, 3 + 7j, 0j, -2 + 0.5j])


def test_real_of_a_real_tensor_is_itself_and_imag_raises(device):
    x = agnostic.ones(3, device=device)
    assert agnostic.real(x) is x and x.real is x
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag
    with pytest.raises(RuntimeError, match="non-complex"):
        agnostic.imag(x)


def test_view_as_real_is_an_interleaved_view(device):
    z = agnostic.tensor(Z.reshape(2, 2), device=device)
    pairs = agnostic.view_as_real(z)
    assert pairs.shape == (2, 2, 2) and pairs.dtype is agnostic.float64
    np.testing.assert_array_equal(pairs.cpu().numpy(), np.stack([Z.real, Z.imag], -1).reshape(2, 2, 2))
    pairs[0, 0, 1] = -5
    assert z.cpu().numpy()[0, 0] == 1 - 5j
    strided = agnostic.view_as_real(z[:, ::2])  # any strides: PyTorch's view doubles them
    np.testing.assert_array_equal(strided.cpu().numpy()[:, 0], [[1, -5], [0, 0]])
    assert agnostic.view_as_real(agnostic.tensor(1 + 2j, device=device)).tolist() == [1.0, 2.0]


def test_view_as_complex_is_a_view_and_checks_its_input(device):
    pairs = agnostic.arange(8.0, device=device).reshape(4, 2)
    z = agnostic.view_as_complex(pairs)
    assert z.dtype is agnostic.complex64 and z.shape == (4,)
    np.testing.assert_array_equal(z.cpu().numpy(), [0 + 1j, 2 + 3j, 4 + 5j, 6 + 7j])
    z[1] = 9j
    assert pairs.cpu().numpy()[1].tolist() == [0.0, 9.0]
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        agnostic.view_as_complex(agnostic.ones(3, device=device))
    with pytest.raises(RuntimeError, match="stride 1"):
        agnostic.view_as_complex(agnostic.ones(2, 4, device=device).t())
    with pytest.raises(RuntimeError, match="float and double"):
        agnostic.view_as_complex(agnostic.ones(4, 2, dtype=agnostic.int32, device=device))
    with pytest.raises(RuntimeError, match="only supported for complex"):
        agnostic.view_as_real(agnostic.ones(2, device=device))


# ----- building complex tensors ------------------------------------------------------------------------------------
def test_complex_broadcasts_and_keeps_infinities(device):
    real = agnostic.tensor([1.0, np.inf], device=device)
    imag = agnostic.tensor([[np.inf], [2.0]], device=device)
    result = agnostic.complex(real, imag).cpu().numpy()
    assert result.dtype == np.complex64 and result.shape == (2, 2)
    np.testing.assert_array_equal(result.real, [[1, np.inf], [1, np.inf]])
    np.testing.assert_array_equal(result.imag, [[np.inf, np.inf], [2, 2]])
    with pytest.raises(RuntimeError, match="one dtype"):
        agnostic.complex(real, imag.double())
    with pytest.raises(RuntimeError, match="Float or Double"):
        agnostic.complex(agnostic.ones(2, dtype=agnostic.int64, device=device),
                         agnostic.ones(2, dtype=agnostic.int64, device=device))


def test_polar_matches_numpy_and_torch(device):
    magnitude, phase = np.array([2.0, 1.0, 0.5]), np.array([0.5, 3.0, -1.0])
    result = agnostic.polar(agnostic.tensor(magnitude, device=device), agnostic.tensor(phase, device=device))
    assert result.dtype is agnostic.complex128
    np.testing.assert_allclose(result.cpu().numpy(), magnitude * np.exp(1j * phase), rtol=1e-12)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(result.cpu().numpy(), torch.polar(torch.tensor(magnitude), torch.tensor(phase)))


def test_angle_of_complex_real_and_integer_tensors(device):
    np.testing.assert_allclose(agnostic.angle(agnostic.tensor(Z, device=device)).cpu().numpy(), np.angle(Z))
    values = agnostic.tensor([-1.5, 0.0, 2.0, np.nan, -0.0, np.inf, -np.inf], device=device)
    real = agnostic.angle(values).cpu().numpy()  # -0.0 gives 0 as in PyTorch (NumPy's angle gives pi)
    np.testing.assert_allclose(real, [np.pi, 0.0, 0.0, np.nan, 0.0, 0.0, np.pi], rtol=1e-7)
    integer = agnostic.angle(agnostic.tensor([-1, 2], device=device))
    assert integer.dtype is agnostic.float32
    np.testing.assert_allclose(integer.cpu().numpy(), [np.pi, 0.0])


def test_sgn_is_z_over_abs_z_and_zero_at_zero(device):
    result = agnostic.sgn(agnostic.tensor(Z, device=device)).cpu().numpy()
    np.testing.assert_allclose(result[[0, 1, 3]], Z[[0, 1, 3]] / np.abs(Z[[0, 1, 3]]))
    assert result[2] == 0
    assert agnostic.tensor([-2.0, 0.0, 3.0], device=device).sgn().tolist() == [-1.0, 0.0, 1.0]
    x = agnostic.tensor([3 + 4j], device=device)
    x.sgn_()
    np.testing.assert_allclose(x.cpu().numpy(), [0.6 + 0.8j], rtol=1e-6)


def test_adjoint_mH_and_H(device):
    m = np.array([[1 + 1j, 2j], [3 + 0j, 4 - 1j]])
    expected = m.conj().T
    tensor = agnostic.tensor(m, device=device)
    for result in (tensor.mH, tensor.H, agnostic.adjoint(tensor), tensor.adjoint()):
        np.testing.assert_array_equal(result.cpu().numpy(), expected)
    batch = agnostic.tensor(np.stack([m, 2 * m]), device=device)
    np.testing.assert_array_equal(batch.mH.cpu().numpy(), np.stack([expected, 2 * expected]))
    real = agnostic.ones(2, 3, device=device)
    assert real.mH.shape == (3, 2) and real.H.shape == (3, 2)
    with pytest.raises(RuntimeError, match="mH is only supported on matrices"):
        agnostic.ones(3, device=device).mH
    with pytest.raises(RuntimeError, match="consider using tensor.mH"):
        agnostic.ones(2, 2, 2, device=device).H
    with pytest.raises(RuntimeError, match="adjoint"):
        agnostic.adjoint(agnostic.ones(3, device=device))


# ----- gradients ---------------------------------------------------------------------------------------------------
# (function on agnostic tensors, the same on torch tensors, input data, hand-derived gradient for upstream G)
_REAL_INPUT = G.real
CASES = {
    "real": (lambda z: z.real, lambda z: z.real, Z, G.real + 0j),
    "imag": (lambda z: z.imag, lambda z: z.imag, Z, 1j * G.real),
    "angle": (agnostic.angle, "angle", Z,
              np.where(Z == 0, 0, G.real * 1j * Z / np.where(Z == 0, 1, np.abs(Z) ** 2))),
    "sgn": (agnostic.sgn, "sgn", Z, None),
    "view_as_real": (lambda z: agnostic.view_as_real(z)[:, 1] * 2 + agnostic.view_as_real(z)[:, 0],
                     lambda z: __import__("torch").view_as_real(z)[:, 1] * 2
                     + __import__("torch").view_as_real(z)[:, 0], Z, G.real * (1 + 2j)),
    "complex": (lambda x: agnostic.complex(x, x * x), lambda x: __import__("torch").complex(x, x * x),
                _REAL_INPUT, G.real + 2 * _REAL_INPUT * G.imag),
    "polar": (lambda x: agnostic.polar(x.abs(), x), lambda x: __import__("torch").polar(x.abs(), x),
              _REAL_INPUT, None),
    "mH": (lambda z: z.reshape(2, 2).mH.reshape(4), lambda z: z.reshape(2, 2).mH.reshape(4), Z,
           G.reshape(2, 2).T.conj().reshape(4)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_pytorch(device, name):
    function, torch_function, data, expected = CASES[name]
    grad = _grad_of(function, data, G, device)
    if expected is not None:
        np.testing.assert_allclose(grad, expected, rtol=1e-12, atol=1e-12)
    torch = pytest.importorskip("torch")
    torch_function = getattr(torch, torch_function) if isinstance(torch_function, str) else torch_function
    np.testing.assert_allclose(grad, _torch_grad_of(torch_function, data, G), rtol=1e-10, atol=1e-12)


def test_view_as_complex_gradient(device):
    grad = _grad_of(lambda x: agnostic.view_as_complex(agnostic.stack([x, 3 * x], -1)), G.real, G, device)
    np.testing.assert_allclose(grad, G.real + 3 * G.imag)


def test_abs_gradient_of_complex_input_is_sgn(device):
    """PyTorch: grad * z / |z|, 0 at 0 (needs elementwise.py's abs to use sgn: see the report)."""
    grad = _grad_of(agnostic.abs, Z, G, device)
    expected = np.where(Z == 0, 0, G.real * Z / np.where(Z == 0, 1, np.abs(Z)))
    np.testing.assert_allclose(grad, expected, rtol=1e-12)


@pytest.mark.parametrize("function", [lambda x: agnostic.complex(x, 2 * x).real,
                                      lambda x: agnostic.angle(agnostic.polar(x + 2, x)),
                                      lambda x: agnostic.view_as_real(agnostic.complex(x.sin(), x)).sum(-1),
                                      lambda x: agnostic.sgn(agnostic.complex(x, x.exp())).imag])
def test_gradcheck_through_complex_ops(device, function):
    x = agnostic.tensor([0.3, -1.2, 0.7], dtype=agnostic.float64, device=device, requires_grad=True)
    assert gradcheck(function, (x,))
