"""Samplers: the order in which a DataLoader visits indices (Sequential, Random, SubsetRandom, WeightedRandom,
Batch)."""

from itertools import islice
from typing import Generic, TypeVar

from ... import _dtypes
from ...ops.creation import as_tensor
from ...ops.random import Generator, multinomial, randint, randperm


# What a sampler yields: ``Sampler[int]`` for indices, ``Sampler[list[int]]`` for batches, as in PyTorch.
_T_co = TypeVar("_T_co", covariant=True)


def _randperm(n, generator):
    return randperm(n, generator=generator).tolist()


def _fresh_generator():
    """A CPU generator seeded from the default one, as PyTorch's samplers do when given no generator."""
    seed = int(randint(0, 2 ** 63 - 1, (1,)).item())
    return Generator().manual_seed(seed)


class Sampler(Generic[_T_co]):
    """Base class: an iterable over dataset indices (or over lists of them, for batch samplers).

        >>> class EvenIndices(agnostic.utils.data.Sampler[int]):
        ...     def __init__(self, data_source):
        ...         self.data_source = data_source
        ...     def __iter__(self):
        ...         return iter(range(0, len(self.data_source), 2))
        ...     def __len__(self):
        ...         return (len(self.data_source) + 1) // 2
        >>> data = [10, 11, 12, 13, 14]
        >>> list(agnostic.utils.data.DataLoader(data, sampler=EvenIndices(data), batch_size=None))
        [10, 12, 14]
    """

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``.

        >>> list(agnostic.utils.data.SequentialSampler(range(4)))
        [0, 1, 2, 3]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A random order from ``agnostic.randperm`` (or ``num_samples`` draws with ``replacement``), from
    ``generator`` or, without one, a generator seeded from the default one at each epoch.

        >>> sampler = agnostic.utils.data.RandomSampler(range(5), generator=agnostic.Generator().manual_seed(0))
        >>> sorted(sampler)
        [0, 1, 2, 3, 4]
        >>> len(list(agnostic.utils.data.RandomSampler(range(5), replacement=True, num_samples=8)))
        8
    """

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(0, n, (32,), generator=generator).tolist()
            yield from randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _randperm(n, generator)
            yield from _randperm(n, generator)[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given ``indices`` in a random order (``agnostic.randperm``), without replacement.

        >>> sampler = agnostic.utils.data.SubsetRandomSampler([3, 5, 8], generator=agnostic.Generator().manual_seed(0))
        >>> sorted(sampler)
        [3, 5, 8]
    """

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for position in _randperm(len(self.indices), self.generator):
            yield self.indices[position]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices into ``weights``, index ``i`` drawn with probability ``weights[i] / sum(weights)``
    (``agnostic.multinomial`` on the weights as float64; with ``replacement=False`` each index at most once), from
    ``generator`` or the default generator. The usual cure for imbalanced classes: weight each sample by one over
    its class's frequency.

        >>> labels = [0, 0, 0, 1]
        >>> weights = [1 / labels.count(label) for label in labels]
        >>> sampler = agnostic.utils.data.WeightedRandomSampler(weights, num_samples=6)
        >>> len(sampler), len(list(sampler))
        (6, 6)
        >>> sampler = agnostic.utils.data.WeightedRandomSampler([0.0, 2.0, 0.0, 1.0], 2, replacement=False)
        >>> sorted(sampler)
        [1, 3]
    """

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = as_tensor(weights, dtype=_dtypes.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        # All num_samples indices are drawn when iteration starts, as PyTorch draws them.
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Lists of ``batch_size`` indices from ``sampler``; the last, shorter one is dropped with ``drop_last``.

        >>> sequential = agnostic.utils.data.SequentialSampler(range(5))
        >>> list(agnostic.utils.data.BatchSampler(sequential, batch_size=2, drop_last=False))
        [[0, 1], [2, 3], [4]]
        >>> list(agnostic.utils.data.BatchSampler(sequential, batch_size=2, drop_last=True))
        [[0, 1], [2, 3]]
    """

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        iterator = iter(self.sampler)
        while True:
            batch = list(islice(iterator, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]
