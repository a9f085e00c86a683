"""Parameter initializers (``agnostic.nn.init``), as torch.nn.init: each fills a tensor in place under no_grad."""

import math
import warnings

from .._tensor import wrap
from ..autograd import no_grad
from .._backends import special


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity``: 1 (linear, conv, sigmoid), 5/3 (tanh), sqrt(2) (relu),
    sqrt(2 / (1 + slope^2)) (leaky_relu, slope ``param`` or 0.01), 3/4 (selu).

        >>> agnostic.nn.init.calculate_gain("relu")
        1.4142135623730951
        >>> agnostic.nn.init.calculate_gain("leaky_relu", 0.2)
        1.3867504905630728
        >>> agnostic.nn.init.calculate_gain("tanh")
        1.6666666666666667
    """
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out): ``size(1)`` and ``size(0)`` times the receptive field (the product of the other sizes)."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid = ["fan_in", "fan_out"]
    if mode not in valid:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fill with samples from U(a, b).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.nn.init.uniform_(agnostic.empty(3), a=-1.0, b=1.0)
        tensor([-0.9305, -0.9769,  0.2239])
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fill with samples from N(mean, std^2).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.nn.init.normal_(agnostic.empty(3), mean=0.0, std=0.02)
        tensor([-0.0052, -0.0030,  0.0229])
    """
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Fill with N(mean, std^2) samples truncated to [a, b], by PyTorch's inverse-CDF method.

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.trunc_normal_(agnostic.empty(1000), std=1.0, a=-0.5, b=0.5)
        >>> bool(w.min() >= -0.5), bool(w.max() <= 0.5)
        (True, True)
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may "
                      "be incorrect.", stacklevel=2)

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    with no_grad():
        low, high = cdf((a - mean) / std), cdf((b - mean) / std)
        tensor.uniform_(2 * low - 1, 2 * high - 1, generator=generator)
        backend = tensor.device.backend
        xp = backend.xp
        with backend.activate():
            values = special.erfinv(backend, tensor.detach()._data) * (std * math.sqrt(2.0)) + mean
            tensor.copy_(wrap(xp.clip(values, a, b), tensor.device))
        return tensor


def constant_(tensor, val):
    """Fill with ``val``.

        >>> agnostic.nn.init.constant_(agnostic.empty(2, 2), 0.5)
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with ones.

        >>> agnostic.nn.init.ones_(agnostic.empty(3))
        tensor([1., 1., 1.])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill with zeros.

        >>> layer = agnostic.nn.Linear(2, 2)
        >>> agnostic.nn.init.zeros_(layer.bias)
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
    """
    with no_grad():
        return tensor.zero_()


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-b, b) with ``b = gain * sqrt(6 / (fan_in + fan_out))``.

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.xavier_uniform_(agnostic.empty(300, 200))
        >>> bound = (6 / (200 + 300)) ** 0.5
        >>> bool(w.abs().max() <= bound), round(bound, 4)
        (True, 0.1095)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.xavier_normal_(agnostic.empty(300, 200))
        >>> round(w.std().item(), 2), round((2 / (200 + 300)) ** 0.5, 2)
        (0.06, 0.06)
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)`` (``gain = calculate_gain(nonlinearity, a)``).

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.kaiming_uniform_(agnostic.empty(64, 100), nonlinearity="relu")
        >>> bool(w.abs().max() <= (6 / 100) ** 0.5)
        True
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``.

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.kaiming_normal_(agnostic.empty(400, 100), mode="fan_in", nonlinearity="relu")
        >>> round(w.std().item(), 2), round((2 / 100) ** 0.5, 2)
        (0.14, 0.14)
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), generator)


__all__ = ["calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_",
           "trunc_normal_", "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_"]
