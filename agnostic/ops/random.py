"""Random tensors: Generator objects per device, manual_seed, rand/randn/randint/randperm and in-place fills."""

import numpy

from .. import _backend, _dtypes
from .._device import CPU
from .._tensor import Tensor, _check_writable, wrap
from .creation import _sizes, _target

_DEFAULT_SEED = 67280421310721


class Generator:
    """A random-number generator bound to one device, as ``torch.Generator``: pass it as ``generator=``."""

    def __init__(self, device="cpu"):
        self.device = _target(device)
        self._initial_seed = _DEFAULT_SEED
        self._state = None

    def manual_seed(self, seed):
        """Reseed; returns ``self``."""
        seed = int(seed)
        if not -(2 ** 63) <= seed < 2 ** 64:
            raise RuntimeError(f"manual_seed(): seed must be within [-2**63, 2**64), got {seed}")
        self._initial_seed = seed % 2 ** 64
        self._state = None
        return self

    def seed(self):
        """Reseed from a non-deterministic source; returns the new seed."""
        seed = int(numpy.random.SeedSequence().entropy % 2 ** 64)
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._initial_seed

    def _backend_generator(self):
        if self._state is None:
            if self.device is CPU:
                self._state = numpy.random.Generator(numpy.random.Philox(self._initial_seed))
            else:
                cupy = _backend.require_cupy()
                with _backend.on(self.device):
                    self._state = cupy.random.RandomState(self._initial_seed)
        return self._state

    def __repr__(self):
        return f"<agnostic.Generator on {self.device}>"


_default_generators = {}


def default_generator(device):
    """The generator random functions use on ``device`` when none is passed."""
    found = _default_generators.get(device)
    if found is None:
        found = _default_generators[device] = Generator(device)
        found.manual_seed(_default_generators[CPU].initial_seed() if CPU in _default_generators else _DEFAULT_SEED)
    return found


def manual_seed(seed):
    """Seed the generators of every device (CPU and CUDA); returns the CPU generator, as ``torch.manual_seed``."""
    cpu_generator = default_generator(CPU).manual_seed(seed)
    for device, generator in _default_generators.items():
        if device is not CPU:
            generator.manual_seed(seed)
    return cpu_generator


def seed():
    """Seed every device's generator non-deterministically; returns the seed."""
    new_seed = default_generator(CPU).seed()
    manual_seed(new_seed)
    return new_seed


def initial_seed():
    """The seed of the default CPU generator."""
    return default_generator(CPU).initial_seed()


def _source(generator, device):
    if generator is None:
        return default_generator(device)
    if generator.device is not device:
        raise RuntimeError(f"Expected a '{device}' generator but found a '{generator.device}' one; create it with "
                           f"agnostic.Generator({str(device)!r})")
    return generator


def _floating(dtype, name):
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f'"{name}" is only implemented for floating dtypes, got {dtype}')
    return dtype


def _uniform_array(source, shape, low, high):
    state = source._backend_generator()
    if source.device is CPU:
        return state.uniform(low, high, shape)
    with _backend.on(source.device):
        return state.uniform(low, high, shape)


def _normal_array(source, shape, mean, std):
    state = source._backend_generator()
    if source.device is CPU:
        return state.normal(mean, std, shape)
    with _backend.on(source.device):
        return state.normal(mean, std, shape)


def _as(array, dtype, device):
    with _backend.on(device):
        return wrap(array.astype(dtype.numpy_dtype, copy=False), device)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples from [0, 1) (default float dtype)."""
    dtype = _floating(dtype, "rand")
    device = generator.device if generator is not None and device is None else _target(device)
    return _as(_uniform_array(_source(generator, device), _sizes(size), 0.0, 1.0), dtype, device)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples (default float dtype)."""
    dtype = _floating(dtype, "randn")
    device = generator.device if generator is not None and device is None else _target(device)
    return _as(_normal_array(_source(generator, device), _sizes(size), 0.0, 1.0), dtype, device)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers uniform in [low, high) (int64 unless given); ``randint(high, size)`` also works."""
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() needs a size: randint(low, high, size) or randint(high, size)")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dtype = _dtypes.as_dtype(dtype) or _dtypes.int64
    device = generator.device if generator is not None and device is None else _target(device)
    source = _source(generator, device)
    state = source._backend_generator()
    shape = _sizes((size,))
    if device is CPU:
        array = state.integers(low, high, shape, dtype=numpy.int64)
    else:
        with _backend.on(device):
            array = state.randint(low, high, shape, dtype=numpy.int64)
    return _as(array, dtype, device)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of ``0..n-1`` (int64 unless given)."""
    dtype = _dtypes.as_dtype(dtype) or _dtypes.int64
    device = generator.device if generator is not None and device is None else _target(device)
    state = _source(generator, device)._backend_generator()
    if device is CPU:
        array = state.permutation(n)
    else:
        with _backend.on(device):
            array = state.permutation(n)
    return _as(array, dtype, device)


def rand_like(input, *, dtype=None, device=None):
    """``rand`` with ``input``'s shape, dtype and device (unless given)."""
    return rand(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randn_like(input, *, dtype=None, device=None):
    """``randn`` with ``input``'s shape, dtype and device (unless given)."""
    return randn(input.shape, dtype=dtype or input.dtype, device=device or input.device)


def randint_like(input, low=0, high=None, *, dtype=None, device=None):
    """``randint`` with ``input``'s shape, dtype and device (unless given)."""
    return randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device)


def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill ``self`` in place with uniform samples from [a, b)."""
    _check_writable(self)
    _floating(self.dtype, "uniform_")
    source = _source(generator, self._device)
    with _backend.on(self._device):
        self._data[...] = _uniform_array(source, self._data.shape, a, b)
    return self


def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` in place with normal samples."""
    _check_writable(self)
    _floating(self.dtype, "normal_")
    source = _source(generator, self._device)
    with _backend.on(self._device):
        self._data[...] = _normal_array(source, self._data.shape, mean, std)
    return self


def bernoulli(input, p=None, *, generator=None):
    """Samples of 0/1 with probabilities ``input`` (or a scalar ``p``), in ``input``'s dtype."""
    source = _source(generator, input._device)
    sample = _uniform_array(source, input._data.shape, 0.0, 1.0)
    probability = input._data if p is None else p
    with _backend.on(input._device):
        return wrap((sample < probability).astype(input._data.dtype), input._device)


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples: tensor ``mean``/``std`` (broadcast) or scalar ones with ``size``."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        noise = randn(like.shape, generator=generator, dtype=like.dtype, device=like.device)
        return noise * std + mean
    return randn(size, generator=generator, dtype=dtype, device=device) * std + mean


__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "rand", "randn", "randint", "randperm",
           "rand_like", "randn_like", "randint_like", "bernoulli", "normal"]
