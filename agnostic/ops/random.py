"""Random tensors: Generator objects per device, seeding and RNG state, rand/randn/randint/randperm, in-place fills.

Every device draws from the same Philox4x64-10 stream (see ``agnostic._backends.philox``): after
``manual_seed(s)`` the CPU and every CUDA device produce bit-identical ``rand``, ``randint``, ``randperm`` and
``bernoulli`` results, and ``randn`` values that agree to a few ulp. A generator's state is its seed and the number
of Philox blocks used.
"""

import math
import threading

import numpy

from .. import _dtypes, _layout
from .._allocation import check_allocation
from .._backends import philox as _philox
from .._device import CPU
from .._tensor import TensorBase, _check_writable, wrap
from ._binding import size_by_name
from ._dispatch import factory_out
from ._registry import composite, tensor_method
from .creation import _leaf, _sizes, _target

_DEFAULT_SEED = 67280421310721
_STATE_BYTES = 16


class Generator:
    """A random-number generator bound to one device, as ``torch.Generator``: pass it as ``generator=``.

        >>> g = agnostic.Generator().manual_seed(42)
        >>> g
        <agnostic.Generator on cpu>
        >>> a = agnostic.rand(3, generator=g)
        >>> b = agnostic.rand(3, generator=agnostic.Generator().manual_seed(42))
        >>> agnostic.all(a == b)
        tensor(True)
    """

    def __init__(self, device="cpu"):
        self.device = _target(device)
        self._seed = _DEFAULT_SEED
        self._offset = 0
        self._lock = threading.Lock()

    def manual_seed(self, seed):
        """Reseed (and rewind to the stream's start); returns ``self``."""
        seed = _checked_seed(seed)
        with self._lock:
            self._seed, self._offset = seed, 0
        return self

    def seed(self):
        """Reseed from a non-deterministic source; returns the new seed."""
        new_seed = _fresh_seed()
        self.manual_seed(new_seed)
        return new_seed

    def initial_seed(self):
        """The seed this generator was last seeded with."""
        return self._seed

    def get_state(self):
        """The state as a CPU uint8 tensor of 16 bytes: the seed and the Philox block offset, little-endian."""
        with self._lock:
            words = numpy.array([self._seed, self._offset], dtype="<u8")
        return wrap(words.view(numpy.uint8), CPU)

    def set_state(self, new_state):
        """Restore a state from ``get_state()`` (of a generator on any device); returns ``self``."""
        seed, offset = _decoded_state(new_state)
        with self._lock:
            self._seed, self._offset = seed, offset
        return self

    def _take(self, blocks):
        """The seed and the block offset a draw of ``blocks`` starts at; moves the offset past it."""
        with self._lock:
            seed, start = self._seed, self._offset
            self._offset = (start + blocks) % 2 ** 64
        return seed, start

    def __repr__(self):
        return f"<agnostic.Generator on {self.device}>"


def _checked_seed(seed):
    seed = int(seed)
    if not -(2 ** 63) <= seed < 2 ** 64:
        raise RuntimeError(f"manual_seed(): seed must be within [-2**63, 2**64), got {seed}")
    return seed % 2 ** 64


def _fresh_seed():
    return int(numpy.random.SeedSequence().entropy % 2 ** 64)


def _decoded_state(state):
    if not isinstance(state, TensorBase) or state.dtype is not _dtypes.uint8 or state.numel() != _STATE_BYTES:
        raise RuntimeError(f"set_state(): expected the {_STATE_BYTES}-element uint8 tensor that get_state() returns, "
                           f"got {_describe(state)}")
    seed, offset = numpy.ascontiguousarray(state._host_array()).reshape(-1).view("<u8")
    return int(seed), int(offset)


def _describe(value):
    if isinstance(value, TensorBase):
        return f"a {value.dtype} tensor of {value.numel()} elements"
    return type(value).__name__


# ----- default generators and global seeding ---------------------------------------------------------------------
_default_generators: dict = {}
_seed_for_new_devices = [_DEFAULT_SEED]


def default_generator(device=CPU):
    """The generator random functions use on ``device`` when none is passed."""
    found = _default_generators.get(device)
    if found is None:
        device = _target(device)
        found = _default_generators.get(device)
        if found is None:
            found = Generator(device).manual_seed(_seed_for_new_devices[0])
            _default_generators[device] = found
    return found


def manual_seed(seed):
    """Seed the generators of every device (CPU and CUDA, present and future); returns the CPU generator.

        >>> agnostic.manual_seed(0)
        <agnostic.Generator on cpu>
        >>> first = agnostic.rand(2)
        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.all(first == agnostic.rand(2))
        tensor(True)
    """
    seed = _checked_seed(seed)
    _seed_for_new_devices[0] = seed
    for generator in list(_default_generators.values()):
        generator.manual_seed(seed)
    return default_generator(CPU).manual_seed(seed)


def seed():
    """Seed every device's generator non-deterministically; returns the seed.

        >>> s = agnostic.seed()
        >>> s == agnostic.initial_seed()
        True
    """
    new_seed = _fresh_seed()
    manual_seed(new_seed)
    return new_seed


def initial_seed():
    """The seed of the default CPU generator.

        >>> _ = agnostic.manual_seed(7)
        >>> agnostic.initial_seed()
        7
    """
    return default_generator(CPU).initial_seed()


def get_rng_state():
    """The default CPU generator's state (a uint8 tensor).

        >>> state = agnostic.get_rng_state()
        >>> state.dtype, state.shape
        (agnostic.uint8, agnostic.Size([16]))
        >>> a = agnostic.rand(2)
        >>> agnostic.set_rng_state(state)
        >>> agnostic.all(a == agnostic.rand(2))
        tensor(True)
    """
    return default_generator(CPU).get_state()


def set_rng_state(new_state):
    """Restore the default CPU generator's state from ``get_rng_state()``.

        >>> state = agnostic.get_rng_state()
        >>> a = agnostic.randn(3)
        >>> agnostic.set_rng_state(state)
        >>> agnostic.all(a == agnostic.randn(3))
        tensor(True)
    """
    default_generator(CPU).set_state(new_state)


# ----- drawing ---------------------------------------------------------------------------------------------------
def _device_of_call(generator, device):
    if generator is not None and device is None:
        return _generator_device(generator)
    return _target(device)


def _generator_device(generator):
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be an agnostic.Generator, got {type(generator).__name__}")
    return generator.device


def _source(generator, device):
    if generator is None:
        return default_generator(device)
    if _generator_device(generator) is not device:
        raise RuntimeError(f"Expected a '{device.type}' generator on {device} but found one on {generator.device}; "
                           f"create it with agnostic.Generator({str(device)!r})")
    return generator


def _floating(dtype, name):
    dtype = _dtypes.as_dtype(dtype) or _dtypes.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f'"{name}" is only implemented for floating dtypes, got {dtype}')
    return dtype


def _uniform_array(source, shape, numpy_dtype, low=0.0, high=1.0):
    count = math.prod(shape)
    check_allocation(shape, numpy_dtype, source.device)
    seed, start = source._take(_philox.uniform_blocks(count, numpy_dtype))
    with source.device.backend.activate():
        return _philox.uniform(source.device, seed, start, count, numpy_dtype, low, high).reshape(shape)


def uniform_stream(device, count, numpy_dtype):
    """``(seed, start)`` of a draw of ``count`` uniforms of ``numpy_dtype`` from ``device``'s default generator, which
    moves past the draw as ``rand`` would: for a kernel that computes the draw's numbers where it needs them (fused
    attention's dropout), so that it sees what the composed ops would have drawn."""
    return default_generator(device)._take(_philox.uniform_blocks(count, numpy_dtype))


def scaled_by_dropout(tensor, seed, start, keep):
    """``tensor`` (float32 or float64) times the scales of the dropout draw at ``(seed, start)`` (from
    ``uniform_stream``): ``1 / keep`` where the draw's uniform is below ``keep``, 0 elsewhere. What
    ``bernoulli(empty_like(tensor), keep) / keep * tensor`` gives at that place in the stream, in one pass."""
    device = tensor._device
    with device.backend.activate():
        array = device.backend.xp.ascontiguousarray(tensor._data)
        return wrap(_philox.dropout_scaled(device, seed, start, array, keep), device)


def _normal_array(source, shape, numpy_dtype, mean=0.0, std=1.0):
    count = math.prod(shape)
    check_allocation(shape, numpy_dtype, source.device)
    seed, start = source._take(_philox.normal_blocks(count, numpy_dtype))
    with source.device.backend.activate():
        return _philox.normal(source.device, seed, start, count, numpy_dtype, mean, std).reshape(shape)


def _integer_array(source, shape, low, span):
    count = math.prod(shape)
    check_allocation(shape, numpy.int64, source.device)
    seed, start = source._take(_philox.integer_blocks(count))
    with source.device.backend.activate():
        return _philox.integers(source.device, seed, start, count, low, span).reshape(shape)


def _cast(array, dtype, device):
    with device.backend.activate():
        return wrap(array.astype(dtype.numpy_dtype, copy=False), device)


# ----- factories -------------------------------------------------------------------------------------------------
@factory_out
@size_by_name
def rand(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Uniform samples from [0, 1) (default float dtype).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.rand(2, 3)
        tensor([[0.0347, 0.0115, 0.6120],
                [0.2415, 0.3655, 0.1114]])
    """
    _layout.check_strided(layout, "rand")
    dtype = _floating(dtype, "rand")
    device = _device_of_call(generator, device)
    array = _uniform_array(_source(generator, device), _sizes(size), dtype.numpy_dtype)
    return _leaf(wrap(array, device), requires_grad)


@factory_out
@size_by_name
def randn(*size, generator=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Standard normal samples (default float dtype).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.randn(4)
        tensor([-0.2605, -0.1524,  1.1446, -0.1283])
    """
    _layout.check_strided(layout, "randn")
    dtype = _floating(dtype, "randn")
    device = _device_of_call(generator, device)
    array = _normal_array(_source(generator, device), _sizes(size), dtype.numpy_dtype)
    return _leaf(wrap(array, device), requires_grad)


@factory_out
def randint(low=0, high=None, size=None, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False):
    """Integers uniform in [low, high) (int64 unless given); ``randint(high, size)`` also works.

    Each value is ``low + word % (high - low)`` of one 64-bit Philox word: the modulo bias is below
    ``(high - low) / 2**64``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.randint(10, (5,))
        tensor([9, 8, 9, 6, 3])
        >>> agnostic.randint(3, 5, (2, 2))
        tensor([[4, 3],
                [3, 3]])
    """
    _layout.check_strided(layout, "randint")
    if size is None:
        if high is None or not isinstance(high, (tuple, list)):
            raise TypeError("randint() needs a size: randint(low, high, size) or randint(high, size)")
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    low, high = int(low), int(high)
    dtype = _dtypes.as_dtype(dtype) or _dtypes.int64
    _check_integer_range(low, high, dtype)
    device = _device_of_call(generator, device)
    array = _integer_array(_source(generator, device), _sizes((size,)), low, high - low)
    return _cast(array, dtype, device)


def _check_integer_range(low, high, dtype):
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if dtype.is_complex:
        raise RuntimeError(f"randint is not implemented for {dtype}")
    if dtype is _dtypes.bool:
        smallest, largest = 0, 1
    elif dtype.is_floating_point:
        smallest, largest = -(2 ** 63), 2 ** 63 - 1
    else:
        info = numpy.iinfo(dtype.numpy_dtype)
        smallest, largest = int(info.min), int(info.max)
    if low < smallest or high - 1 > largest:
        raise RuntimeError(f"random_ expects [from, to) = [{low}, {high}) to fit in {dtype}, whose range is "
                           f"[{smallest}, {largest}]")


@factory_out
def randperm(n, *, generator=None, dtype=None, layout=None, device=None, requires_grad=False):
    """A random permutation of ``0..n-1`` (int64 unless given): the stable argsort of ``n`` random 64-bit words.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.randperm(5)
        tensor([0, 2, 1, 4, 3])
    """
    _layout.check_strided(layout, "randperm")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"randperm(): n must be non-negative, got {n}")
    dtype = _dtypes.as_dtype(dtype) or _dtypes.int64
    if not dtype.is_floating_point and dtype is not _dtypes.bool and n > 0:
        _check_integer_range(0, n, dtype)
    device = _device_of_call(generator, device)
    keys = _integer_array(_source(generator, device), (n,), 0, 0).view(numpy.uint64)
    with device.backend.activate():
        order = device.backend.stable_argsort(keys)
    return _cast(order, dtype, device)


def _laid_out_like(result, input, memory_format, requires_grad=False):
    """A fresh row-major draw ``result`` laid out as ``memory_format`` says for a tensor like ``input`` (by default
    ``preserve_format``: ``input``'s own layout where it is dense), then made a leaf that requires grad if asked."""
    if memory_format is None or memory_format is _layout.preserve_format:
        strides = _layout.preserved_strides(input.shape, input.stride())
    else:
        strides = _layout.format_strides(memory_format, input.shape)
    result = result._laid_out(strides, copy_always=False)
    return result.requires_grad_() if requires_grad else result


def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """``rand`` with ``input``'s shape, dtype, device (unless given) and memory format (``memory_format``).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.rand_like(agnostic.zeros(2, dtype=agnostic.float64))
        tensor([0.0115, 0.2415], dtype=agnostic.float64)
    """
    _layout.check_strided(layout, "rand_like")
    return _laid_out_like(rand(input.shape, dtype=dtype or input.dtype, device=device or input.device), input,
                          memory_format, requires_grad)


def randn_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
    """``randn`` with ``input``'s shape, dtype, device (unless given) and memory format (``memory_format``).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.randn_like(agnostic.zeros(3))
        tensor([-0.2605, -0.1524,  1.1446])
    """
    _layout.check_strided(layout, "randn_like")
    return _laid_out_like(randn(input.shape, dtype=dtype or input.dtype, device=device or input.device), input,
                          memory_format, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None, memory_format=None):
    """``randint`` with ``input``'s shape, dtype, device (unless given) and memory format (``memory_format``).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.randint_like(agnostic.zeros(4, dtype=agnostic.int32), 10)
        tensor([9, 8, 9, 6], dtype=agnostic.int32)
    """
    _layout.check_strided(layout, "randint_like")
    return _laid_out_like(randint(low, high, input.shape, dtype=dtype or input.dtype, device=device or input.device),
                          input, memory_format)


# ----- in-place fills and samplers -------------------------------------------------------------------------------
@tensor_method(overwrites=True, shape_only=True)
def uniform_(self, a=0.0, b=1.0, *, generator=None):
    """Fill ``self`` in place with uniform samples from [a, b): ``u * (b - a) + a``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(3).uniform_(-1, 1)
        tensor([-0.9305, -0.9769,  0.2239])
    """
    _check_writable(self)
    _floating(self.dtype, "uniform_")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}")
    array = _uniform_array(_source(generator, self._device), self._data.shape, self._data.dtype, a, b)
    with self._device.backend.activate():
        self._data[...] = array
    return self


@tensor_method(overwrites=True, shape_only=True)
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    """Fill ``self`` in place with normal samples: ``z * std + mean``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(3).normal_(mean=10, std=0.1)
        tensor([ 9.9739,  9.9848, 10.1145])
    """
    _check_writable(self)
    _floating(self.dtype, "normal_")
    _check_std(std)
    array = _normal_array(_source(generator, self._device), self._data.shape, self._data.dtype, mean, std)
    with self._device.backend.activate():
        self._data[...] = array
    return self


def _check_std(std):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")


@tensor_method()
def bernoulli(input, p=None, *, generator=None):
    """Samples of 0/1 with probabilities ``input`` (or a scalar ``p``), in ``input``'s dtype: ``uniform < p``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.bernoulli(agnostic.tensor([0.0, 0.5, 1.0, 0.5]))
        tensor([0., 1., 1., 1.])
        >>> agnostic.zeros(3).bernoulli(p=1.0)
        tensor([1., 1., 1.])
    """
    _floating(input.dtype, "bernoulli")
    if p is not None and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    uniform_dtype = numpy.float64 if input.dtype is _dtypes.float64 else numpy.float32
    sample = _uniform_array(_source(generator, input._device), input._data.shape, uniform_dtype)
    with input._device.backend.activate():
        probability = input._data if p is None else sample.dtype.type(p)
        return wrap((sample < probability).astype(input._data.dtype), input._device)


@factory_out
def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal samples: tensor ``mean``/``std`` (broadcast together) or scalar ones with ``size``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.normal(agnostic.tensor([0.0, 100.0]), agnostic.tensor([1.0, 0.01]))
        tensor([-0.2605, 99.9985])
        >>> agnostic.normal(2.0, 0.5, size=(3,))
        tensor([1.7071, 1.6564, 1.4995])
    """
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        like = mean if isinstance(mean, TensorBase) else std
        shapes = [value.shape for value in (mean, std) if isinstance(value, TensorBase)]
        noise = randn(numpy.broadcast_shapes(*shapes), generator=generator, dtype=like.dtype, device=like.device)
        return _leaf(noise * std + mean, requires_grad)
    if size is None:
        raise TypeError("normal() with scalar mean and std needs a size")
    _check_std(std)
    dtype = _floating(dtype, "normal")
    device = _device_of_call(generator, device)
    array = _normal_array(_source(generator, device), _sizes((size,)), dtype.numpy_dtype, mean, std)
    return _leaf(wrap(array, device), requires_grad)


# ----- more in-place samplers (each draws from the device's Philox stream, so every device gives the same numbers) --
def _uniform_for(self, generator):
    """Uniform [0, 1) samples shaped like ``self``, in float64 for float64 tensors and float32 otherwise."""
    uniform_dtype = numpy.float64 if self.dtype is _dtypes.float64 else numpy.float32
    return _uniform_array(_source(generator, self._device), self._data.shape, uniform_dtype)


def _fill_with(self, array):
    with self._device.backend.activate():
        self._data[...] = array.astype(self._data.dtype, copy=False)
    return self


_MANTISSA_RANGES = {_dtypes.float16: 2 ** 11, _dtypes.bfloat16: 2 ** 8, _dtypes.float32: 2 ** 24,
                    _dtypes.float64: 2 ** 53}


@tensor_method(overwrites=True, shape_only=True)
def random_(self, from_=0, to=None, *, generator=None):
    """Fill ``self`` in place with integers uniform in ``[from, to)`` (``random_(to)`` is ``[0, to)``); without
    ``to``, up to the dtype's largest integer (for floating dtypes, the largest its mantissa holds exactly).

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.zeros(5).random_(10)
        tensor([9., 8., 9., 6., 3.])
    """
    _check_writable(self)
    if self.dtype.is_complex:
        raise RuntimeError(f"random_ is not implemented for {self.dtype}")
    if to is None and from_ != 0:
        from_, to = 0, from_
    if to is None:
        if self.dtype is _dtypes.bool:
            to = 2
        elif self.dtype.is_floating_point:
            to = _MANTISSA_RANGES[self.dtype] + 1
        else:
            to = int(numpy.iinfo(self.dtype.numpy_dtype).max) + 1
    _check_integer_range(int(from_), int(to), self.dtype)
    array = _integer_array(_source(generator, self._device), self._data.shape, int(from_), int(to) - int(from_))
    return _fill_with(self, array)


@tensor_method(overwrites=True, shape_only=True)
def exponential_(self, lambd=1.0, *, generator=None):
    """Fill ``self`` in place with exponential samples of rate ``lambd``: ``-log(1 - u) / lambd``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(3).exponential_()
        tensor([0.0354, 0.0116, 0.9466])
    """
    _check_writable(self)
    _floating(self.dtype, "exponential_")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    uniform = _uniform_for(self, generator)
    xp = self._device.backend.xp
    with self._device.backend.activate():
        return _fill_with(self, -xp.log1p(-uniform) / uniform.dtype.type(lambd))


@tensor_method(overwrites=True, shape_only=True)
def geometric_(self, p, *, generator=None):
    """Fill ``self`` in place with geometric samples (trials to the first success, from 1) of success
    probability ``p``: ``ceil(log(1 - u) / log(1 - p))``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(4).geometric_(0.5)
        tensor([1., 1., 2., 1.])
    """
    _check_writable(self)
    if self.dtype.is_complex or self.dtype is _dtypes.bool:
        raise RuntimeError(f"geometric_ is not implemented for {self.dtype}")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    uniform = _uniform_for(self, generator)
    xp = self._device.backend.xp
    with self._device.backend.activate():
        trials = xp.ceil(xp.log1p(-uniform) / uniform.dtype.type(math.log1p(-p)))
        return _fill_with(self, xp.maximum(trials, 1))


@tensor_method(overwrites=True, shape_only=True)
def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
    """Fill ``self`` in place with log-normal samples: ``exp`` of normal samples of ``mean`` and ``std``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(3).log_normal_(0.0, 0.1)
        tensor([0.9743, 0.9849, 1.1213])
    """
    _check_writable(self)
    _floating(self.dtype, "log_normal_")
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    normal_dtype = numpy.float64 if self.dtype is _dtypes.float64 else numpy.float32
    array = _normal_array(_source(generator, self._device), self._data.shape, normal_dtype, mean, std)
    xp = self._device.backend.xp
    with self._device.backend.activate():
        return _fill_with(self, xp.exp(array))


@tensor_method(overwrites=True, shape_only=True)
def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
    """Fill ``self`` in place with Cauchy samples: ``median + sigma * tan(pi * (u - 1/2))``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(3).cauchy_()
        tensor([ -9.1257, -27.5550,   0.3670])
    """
    _check_writable(self)
    _floating(self.dtype, "cauchy_")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    uniform = _uniform_for(self, generator)
    xp = self._device.backend.xp
    kind = uniform.dtype.type
    with self._device.backend.activate():
        return _fill_with(self, kind(median) + kind(sigma) * xp.tan(kind(math.pi) * (uniform - kind(0.5))))


@tensor_method(overwrites=True, shape_only=True)
def bernoulli_(self, p=0.5, *, generator=None):
    """Fill ``self`` in place with 0/1 samples, 1 with probability ``p`` (a number, or a tensor broadcast to
    ``self``'s shape): ``uniform < p``, as ``bernoulli``.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.empty(4).bernoulli_(0.5)
        tensor([1., 1., 0., 1.])
    """
    _check_writable(self)
    if isinstance(p, TensorBase):
        probability = p.to(self._device).to(_dtypes.float64 if self.dtype is _dtypes.float64 else _dtypes.float32)
        probability = probability.expand(self.shape)._data
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        probability = p
    uniform = _uniform_for(self, generator)
    with self._device.backend.activate():
        return _fill_with(self, uniform < (probability if isinstance(p, TensorBase) else uniform.dtype.type(p)))


@composite(out=True)
def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from the categories weighted by each row of ``input`` (1-D or 2-D, non-negative weights, not
    necessarily summing to one), ``num_samples`` per row, as int64 (``torch.multinomial``).

    With ``replacement`` each draw inverts the row's cumulative distribution at a uniform sample; without, the
    categories are ordered by ``-log(u) / weight`` (independent exponential races), whose first ``num_samples``
    are a draw without replacement.

        >>> agnostic.multinomial(agnostic.tensor([0.0, 1.0, 0.0]), 2, replacement=True)
        tensor([1, 1])
        >>> sorted(agnostic.multinomial(agnostic.tensor([1.0, 1.0, 1.0]), 3).tolist())
        [0, 1, 2]
    """
    if input.ndim not in (1, 2):
        raise RuntimeError(f"prob_dist must be 1 or 2 dim, got {input.ndim} dimensions")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype}")
    if num_samples <= 0:
        raise RuntimeError(f"cannot sample n_sample <= 0 samples, got num_samples={num_samples}")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} > {categories}); pass replacement=True")
    if categories == 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0): the input has no "
                           "categories")
    rows = input.reshape(-1, categories).to(_dtypes.float64 if input.dtype is _dtypes.float64 else _dtypes.float32)
    device = input._device
    backend = device.backend
    xp = backend.xp
    weights = rows._data
    with backend.activate():
        invalid = bool(xp.any(~xp.isfinite(weights)) or xp.any(weights < 0))
        totals = weights.sum(axis=1)
        empty = bool(xp.any(totals <= 0))
        positives = int((weights > 0).sum(axis=1).min()) if not replacement else 0
    if invalid:
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if empty:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and positives < num_samples:
        raise RuntimeError("invalid multinomial distribution (with replacement=False, not enough non-negative "
                           "category to sample)")
    source = _source(generator, device)
    if replacement:
        uniform = _uniform_array(source, (weights.shape[0], num_samples), weights.dtype)
        with backend.activate():
            cumulative = xp.cumsum(weights, axis=1) / totals[:, None]
            # The index of the first category whose cumulative share exceeds the sample (the count of shares at or
            # below it), never past the last one: a binary search for one distribution, whose samples can be many
            # (a WeightedRandomSampler's draws); a comparison of every share with every sample for several rows.
            if weights.shape[0] == 1:
                chosen = xp.searchsorted(cumulative[0], uniform[0], side="right")[None]
            else:
                chosen = (cumulative[:, None, :] <= uniform[:, :, None]).sum(axis=2)
            chosen = xp.minimum(chosen, categories - 1).astype(numpy.int64)
    else:
        uniform = _uniform_array(source, weights.shape, weights.dtype)
        with backend.activate():
            with numpy.errstate(divide="ignore"):
                keys = -xp.log1p(-uniform) / weights
            order = xp.argsort(keys, axis=1)
            chosen = order[:, :num_samples].astype(numpy.int64)
    result = wrap(chosen, device)
    return result.reshape(num_samples) if input.ndim == 1 else result


__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "rand", "randn",
           "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "normal", "multinomial"]
