"""Seeding of CUDA generators; silent no-ops without CUDA, as PyTorch documents."""

from .._device import Device
from ..ops import random as _random
from . import _devices


def manual_seed(seed):
    """Seed the current CUDA device's generator (silently ignored without CUDA)."""
    if _devices.is_available():
        _random.default_generator(Device("cuda", _devices.current_device())).manual_seed(seed)


def manual_seed_all(seed):
    """Seed every CUDA device's generator (silently ignored without CUDA)."""
    for index in range(_devices.device_count()):
        _random.default_generator(Device("cuda", index)).manual_seed(seed)


def seed():
    """Seed the current CUDA device's generator non-deterministically (ignored without CUDA)."""
    if _devices.is_available():
        _random.default_generator(Device("cuda", _devices.current_device())).seed()


def seed_all():
    """Seed every CUDA device's generator non-deterministically (ignored without CUDA)."""
    for index in range(_devices.device_count()):
        _random.default_generator(Device("cuda", index)).seed()


def initial_seed():
    """The seed of the current CUDA device's generator."""
    return _random.default_generator(Device("cuda", _devices.current_device())).initial_seed()
