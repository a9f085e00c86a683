"""torch.special's Bessel, Airy and polynomial functions agree across devices and with PyTorch (where importable) for
any shape, float32/float64 or integer input; the polynomials broadcast ``x`` against the degree ``n``."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from _strategies import arrays, broadcast_pair, fewer_examples, on_all_devices, shapes

FUNCTIONS = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
             "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
             "spherical_bessel_j0", "airy_ai"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
               "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]
TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "int64": (1e-4, 1e-5)}


def _torch_or_none():
    try:
        import torch
    except ImportError:
        return None
    return torch


@fewer_examples()
@given(name=st.sampled_from(FUNCTIONS), dtype=st.sampled_from(["float32", "float64", "int64"]), data=st.data())
def test_functions_agree_across_devices_and_with_pytorch(name, dtype, data):
    values = data.draw(arrays(dtype, data.draw(shapes(max_dims=3)), lo=-60, hi=60))
    function = getattr(agnostic.special, name)
    rtol, atol = TOLERANCE[dtype]
    outcome = on_all_devices(function, values, rtol=rtol, atol=atol)
    assert outcome.error is None
    torch = _torch_or_none()
    if torch is not None:
        expected = getattr(torch.special, name)(torch.tensor(values)).numpy()
        np.testing.assert_allclose(function(agnostic.tensor(values)).numpy(), expected, rtol=rtol, atol=atol,
                                   equal_nan=True)


@fewer_examples()
@given(name=st.sampled_from(POLYNOMIALS), dtype=st.sampled_from(["float32", "float64"]), pair=broadcast_pair(3, 4),
       data=st.data())
def test_polynomials_broadcast_and_agree_with_pytorch(name, dtype, pair, data):
    x = data.draw(arrays(dtype, pair[0], lo=-2, hi=2))
    n = data.draw(arrays(dtype, pair[1], lo=-2, hi=30, integral=True))
    function = getattr(agnostic.special, name)
    outcome = on_all_devices(function, x, n, rtol=1e-4, atol=1e-4)
    assert outcome.error is None
    result = function(agnostic.tensor(x), agnostic.tensor(n))
    assert result.shape == np.broadcast_shapes(x.shape, n.shape) and result.dtype == getattr(agnostic, dtype)
    torch = _torch_or_none()
    if torch is not None:
        expected = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n)).numpy()
        np.testing.assert_allclose(result.numpy(), expected, rtol=1e-4 if dtype == "float32" else 1e-9,
                                   atol=1e-3 if dtype == "float32" else 1e-9, equal_nan=True)


def test_half_precision_is_refused():
    with pytest.raises(NotImplementedError):
        agnostic.special.bessel_j0(agnostic.ones(2, dtype=agnostic.float16))
