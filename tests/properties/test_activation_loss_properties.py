"""Closed-form activations and pointwise losses on arbitrary shapes and float dtypes agree across devices and with
NumPy."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import agnostic.nn.functional as F
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices, shapes


def _softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


ACTIVATIONS = {
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "mish": lambda x: x * np.tanh(_softplus(x)),
    "softplus": _softplus,
    "hardswish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hardsigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hardtanh": lambda x: np.clip(x, -1, 1),
    "relu6": lambda x: np.clip(x, 0, 6),
    "logsigmoid": lambda x: -np.logaddexp(0, -x),
    "softsign": lambda x: x / (1 + np.abs(x)),
    "tanhshrink": lambda x: x - np.tanh(x),
    "softshrink": lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0)),
    "hardshrink": lambda x: np.where(np.abs(x) > 0.5, x, 0),
}
TOLERANCE = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}


@given(st.sampled_from(sorted(ACTIVATIONS)), st.sampled_from(["float16", "float32", "float64"]), shapes(),
       st.data())
@fewer_examples()
def test_activations_on_any_shape_and_float_dtype_match_numpy(name, dtype, shape, data):
    x = data.draw(arrays(dtype, shape, -30, 30))
    tolerance = TOLERANCE[dtype]
    outcome = on_all_devices(getattr(F, name), x, rtol=tolerance, atol=tolerance, compute=dtype)
    expected = ACTIVATIONS[name](x.astype(np.float64)).astype(dtype)
    check_tensor(outcome, expected, dtype, rtol=tolerance * 4, atol=tolerance * 4)


LOSSES = {
    "smooth_l1_loss": lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5),
    "huber_loss": lambda d: np.where(np.abs(d) < 1, 0.5 * d * d, np.abs(d) - 0.5),
    "l1_loss": np.abs,
    "mse_loss": lambda d: d * d,
}


@given(st.sampled_from(sorted(LOSSES)), st.sampled_from(["float32", "float64"]),
       st.sampled_from(["none", "mean", "sum"]), shapes(min_side=1), st.data())
@fewer_examples()
def test_pointwise_losses_on_any_shape_match_numpy(name, dtype, reduction, shape, data):
    x, y = data.draw(arrays(dtype, shape, -5, 5)), data.draw(arrays(dtype, shape, -5, 5))
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    outcome = on_all_devices(lambda a, b: getattr(F, name)(a, b, reduction=reduction), x, y, rtol=tolerance,
                             atol=tolerance, compute=dtype)
    loss = LOSSES[name](x.astype(np.float64) - y.astype(np.float64))
    expected = loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss
    check_tensor(outcome, np.asarray(expected).astype(dtype), dtype, rtol=tolerance * 10, atol=tolerance * 10)
