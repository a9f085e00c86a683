"""agnostic.cuda.random: the CUDA random-number generators' state, as torch.cuda.random."""

from collections.abc import Sequence

from .._device import Device
from ..ops import random as _random
from ._devices import device_count
from ._random import (
    get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all, set_rng_state,
    set_rng_state_all,
)

__all__ = [
    "get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "manual_seed", "manual_seed_all",
    "seed", "seed_all", "initial_seed", "DefaultGenerators",
]


class DefaultGenerators(Sequence):
    """``torch.cuda.default_generators``: the default ``Generator`` of each CUDA device, in device order (empty
    without CUDA). PyTorch fills its tuple when CUDA starts; this sequence reads the generators when indexed, so
    asking never starts CUDA before it is used.

        >>> len(agnostic.cuda.default_generators) == agnostic.cuda.device_count()
        True
        >>> agnostic.cuda.default_generators[0].device  # doctest: +SKIP
        device(type='cuda', index=0)
    """

    def __len__(self):
        return device_count()

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        count = len(self)
        if not -count <= index < count:
            raise IndexError(f"tuple index out of range: {index} for {count} CUDA device(s)")
        return _random.default_generator(Device("cuda", index % count))

    def __eq__(self, other):
        return tuple(self) == other

    def __hash__(self):
        return hash(tuple(self))

    def __repr__(self):
        return repr(tuple(self))


default_generators = DefaultGenerators()
