"""CUDA generators: seeding (silent no-ops without CUDA, as PyTorch documents) and RNG state per device.

The state functions need CUDA and raise the RuntimeError that explains why it is unusable.
"""

from .. import _backend
from .._device import Device
from ..ops import random as _random
from . import _devices


def _generator(device="cuda"):
    """The default generator of a CUDA device given as an int, a str, a Device, or None (the current one)."""
    return _random.default_generator(Device("cuda", _devices._index(device)))


def manual_seed(seed):
    """Seed the current CUDA device's generator (silently ignored without CUDA).

        >>> agnostic.cuda.manual_seed(0)
        >>> a = agnostic.rand(3, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.manual_seed(0)
        >>> agnostic.all(a == agnostic.rand(3, device="cuda"))  # doctest: +SKIP
        tensor(True, device='cuda:0')
    """
    if _devices.is_available():
        _generator().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's generator (silently ignored without CUDA).

        >>> agnostic.cuda.manual_seed_all(1234)
    """
    for index in range(_devices.device_count()):
        _generator(index).manual_seed(seed)


def seed():
    """Seed the current CUDA device's generator non-deterministically (ignored without CUDA).

        >>> agnostic.cuda.seed()
        >>> agnostic.cuda.initial_seed()  # doctest: +SKIP
        9224175424218214893
    """
    if _devices.is_available():
        _generator().seed()


def seed_all():
    """Seed every CUDA device's generator with one non-deterministic seed (ignored without CUDA).

        >>> agnostic.cuda.seed_all()
    """
    if _devices.is_available():
        manual_seed_all(_random._fresh_seed())


def initial_seed():
    """The seed of the current CUDA device's generator.

        >>> agnostic.cuda.manual_seed(7)
        >>> agnostic.cuda.initial_seed()  # doctest: +SKIP
        7
    """
    return _generator().initial_seed()


def get_rng_state(device="cuda"):
    """A CUDA device's generator state, as a CPU uint8 tensor (seed and Philox offset).

        >>> state = agnostic.cuda.get_rng_state()  # doctest: +SKIP
        >>> state.dtype, state.device, state.shape  # doctest: +SKIP
        (agnostic.uint8, device(type='cpu'), agnostic.Size([16]))
    """
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    """Restore a CUDA device's generator state from ``get_rng_state()``.

        >>> state = agnostic.cuda.get_rng_state()  # doctest: +SKIP
        >>> a = agnostic.randn(3, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.set_rng_state(state)  # doctest: +SKIP
        >>> agnostic.all(a == agnostic.randn(3, device="cuda"))  # doctest: +SKIP
        tensor(True, device='cuda:0')
    """
    _generator(device).set_state(new_state)


def get_rng_state_all():
    """The generator states of every CUDA device, in device order.

        >>> states = agnostic.cuda.get_rng_state_all()  # doctest: +SKIP
        >>> len(states) == agnostic.cuda.device_count()  # doctest: +SKIP
        True
    """
    _backend.require_cupy()
    return [get_rng_state(index) for index in range(_devices.device_count())]


def set_rng_state_all(new_states):
    """Restore every CUDA device's generator state from ``get_rng_state_all()``.

        >>> states = agnostic.cuda.get_rng_state_all()  # doctest: +SKIP
        >>> a = agnostic.rand(2, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.set_rng_state_all(states)  # doctest: +SKIP
        >>> agnostic.all(a == agnostic.rand(2, device="cuda"))  # doctest: +SKIP
        tensor(True, device='cuda:0')
    """
    _backend.require_cupy()
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
