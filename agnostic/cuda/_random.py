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
    """Seed the current CUDA device's generator (silently ignored without CUDA)."""
    if _devices.is_available():
        _generator().manual_seed(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's generator (silently ignored without CUDA)."""
    for index in range(_devices.device_count()):
        _generator(index).manual_seed(seed)


def seed():
    """Seed the current CUDA device's generator non-deterministically (ignored without CUDA)."""
    if _devices.is_available():
        _generator().seed()


def seed_all():
    """Seed every CUDA device's generator with one non-deterministic seed (ignored without CUDA)."""
    if _devices.is_available():
        manual_seed_all(_random._fresh_seed())


def initial_seed():
    """The seed of the current CUDA device's generator."""
    return _generator().initial_seed()


def get_rng_state(device="cuda"):
    """A CUDA device's generator state, as a CPU uint8 tensor (seed and Philox offset)."""
    return _generator(device).get_state()


def set_rng_state(new_state, device="cuda"):
    """Restore a CUDA device's generator state from ``get_rng_state()``."""
    _generator(device).set_state(new_state)


def get_rng_state_all():
    """The generator states of every CUDA device, in device order."""
    _backend.require_cupy()
    return [get_rng_state(index) for index in range(_devices.device_count())]


def set_rng_state_all(new_states):
    """Restore every CUDA device's generator state from ``get_rng_state_all()``."""
    _backend.require_cupy()
    for index, state in enumerate(new_states):
        set_rng_state(state, index)
