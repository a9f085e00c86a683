"""Parameter initializers (``agnostic.nn.init``), as torch.nn.init: each fills a tensor in place under no_grad."""

import math
import warnings

import agnostic

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


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal, zeros elsewhere).

        >>> agnostic.nn.init.eye_(agnostic.empty(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(agnostic.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))
    return tensor


def dirac_(tensor, groups=1):
    """Fill a 3-, 4- or 5-D convolution weight with the Dirac delta, so the convolution is the identity on as many
    input channels as possible (within each of ``groups`` groups of output channels).

        >>> agnostic.nn.init.dirac_(agnostic.empty(2, 2, 3))
        tensor([[[0., 1., 0.],
                 [0., 0., 0.]],
        <BLANKLINE>
                [[0., 0., 0.],
                 [0., 1., 0.]]])
    """
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = tensor.shape[0] // groups
    kept = min(per_group, tensor.shape[1])
    outputs = [group * per_group + channel for group in range(groups) for channel in range(kept)]
    inputs = [channel for _ in range(groups) for channel in range(kept)]
    centres = tuple(size // 2 for size in tensor.shape[2:])
    with no_grad():
        tensor.zero_()
        if outputs:
            index = [agnostic.tensor(positions, dtype=agnostic.int64, device=tensor.device)
                     for positions in (outputs, inputs)]
            tensor[tuple(index) + centres] = 1
    return tensor


def orthogonal_(tensor, gain=1, generator=None):
    """Fill with a (semi-)orthogonal matrix: the Q of the QR decomposition of a normal sample, signs fixed by R's
    diagonal, times ``gain``; tensors of more than 2 dimensions are seen as ``(size(0), rest)``.

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.orthogonal_(agnostic.empty(3, 5))
        >>> agnostic.allclose(w @ w.T, agnostic.eye(3), atol=1e-6)
        True
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flattened = flattened.t()
        q, r = agnostic.linalg.qr(flattened)
        q = q * agnostic.diag(r, 0).sign()
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fill a 2-D tensor with N(0, std^2) samples, then zero ``ceil(sparsity * rows)`` random entries of each
    column (the rows drawn by ``randperm`` from the default generator, as PyTorch).

        >>> _ = agnostic.manual_seed(0)
        >>> w = agnostic.nn.init.sparse_(agnostic.empty(4, 3), sparsity=0.5)
        >>> (w == 0).sum(0)
        tensor([2, 2, 2])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros_per_column = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for column in range(cols):
            dropped = agnostic.randperm(rows, device=tensor.device)[:zeros_per_column]
            tensor[dropped, column] = 0
    return tensor


def _deprecated(method):
    """The old name without the trailing underscore: the same initializer, with PyTorch's FutureWarning."""
    new_name = method.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.", FutureWarning,
                      stacklevel=2)
        return method(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    deprecated_init.__doc__ = (f"Deprecated alias of ``{new_name}`` (warns with a FutureWarning).\n\n"
                               f"        >>> import warnings\n"
                               f"        >>> with warnings.catch_warnings(record=True) as caught:\n"
                               f"        ...     warnings.simplefilter('always')\n"
                               f"        ...     _ = agnostic.nn.init.{old_name}({_EXAMPLE_ARGUMENTS[old_name]})\n"
                               f"        >>> caught[0].category.__name__\n"
                               f"        'FutureWarning'\n")
    return deprecated_init


_EXAMPLE_ARGUMENTS = {"constant": "agnostic.empty(2), 0.5", "dirac": "agnostic.empty(2, 2, 3)",
                      "sparse": "agnostic.empty(2, 2), 0.5", "uniform": "agnostic.empty(2)",
                      "normal": "agnostic.empty(2)"}
_EXAMPLE_ARGUMENTS.update({name: "agnostic.empty(2, 2)" for name in (
    "eye", "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal")})
uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)

__all__ = ["calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_", "kaiming_normal",
           "kaiming_normal_", "kaiming_uniform", "kaiming_uniform_", "normal", "normal_", "ones_", "orthogonal",
           "orthogonal_", "sparse", "sparse_", "trunc_normal_", "uniform", "uniform_", "xavier_normal",
           "xavier_normal_", "xavier_uniform", "xavier_uniform_", "zeros_"]
