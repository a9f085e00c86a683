"""Datasets: Dataset, IterableDataset, TensorDataset, StackDataset, Subset, ConcatDataset, ChainDataset and
random_split."""

import bisect
import math
import warnings
from typing import Generic, Iterable, TypeVar

from ...ops.random import randperm

# Samples' type: ``class Images(Dataset[Tensor])`` annotates a dataset, as with PyTorch's generic classes.
_T_co = TypeVar("_T_co", covariant=True)


class Dataset(Generic[_T_co]):
    """A map-style dataset, as ``torch.utils.data.Dataset``: subclasses define ``__getitem__`` (and usually
    ``__len__``); ``a + b`` concatenates.

        >>> class Squares(agnostic.utils.data.Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, index):
        ...         return agnostic.tensor(float(index)), agnostic.tensor(float(index) ** 2)
        >>> x, y = next(iter(agnostic.utils.data.DataLoader(Squares(), batch_size=4)))
        >>> y
        tensor([0., 1., 4., 9.])
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[_T_co], Iterable[_T_co]):
    """A dataset that is a stream, as ``torch.utils.data.IterableDataset``: subclasses define ``__iter__``. With
    worker processes each worker iterates its own copy (split the work with ``get_worker_info()``).

        >>> class Countdown(agnostic.utils.data.IterableDataset):
        ...     def __iter__(self):
        ...         return iter(range(5, 0, -1))
        >>> list(agnostic.utils.data.DataLoader(Countdown(), batch_size=2))
        [tensor([5, 4]), tensor([3, 2]), tensor([1])]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are ``tuple(t[index] for t in tensors)``; all tensors share their first dimension.

        >>> features, labels = agnostic.arange(6.0).reshape(3, 2), agnostic.tensor([0, 1, 0])
        >>> dataset = agnostic.utils.data.TensorDataset(features, labels)
        >>> len(dataset), dataset[1]
        (3, (tensor([2., 3.]), tensor(1)))
    """

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset[_T_co]):
    """Datasets of one length side by side: sample ``i`` is the tuple of their samples ``i`` (datasets given
    positionally) or the dict of them by name (given as keywords).

        >>> images, labels = agnostic.arange(6.0).reshape(3, 2), [0, 1, 0]
        >>> agnostic.utils.data.StackDataset(images, labels)[1]
        (tensor([2., 3.]), 1)
        >>> pairs = agnostic.utils.data.StackDataset(image=images, label=labels)
        >>> len(pairs), pairs[2]
        (3, {'image': tensor([4., 5.]), 'label': 0})
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or ``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given: pass the datasets all positionally or all "
                             "as keywords.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args) if args else list(kwargs.values())
        self._length = len(datasets[0])
        if any(len(dataset) != self._length for dataset in datasets):
            lengths = [len(dataset) for dataset in datasets]
            raise ValueError(f"Size mismatch between datasets: their lengths are {lengths}, they must be equal")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: dataset[index] for name, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices):
        """The samples at ``indices``, each inner dataset read with one ``__getitems__`` call where it has one."""
        named = isinstance(self.datasets, dict)
        columns = [_samples_at(dataset, indices) for dataset in (self.datasets.values() if named else self.datasets)]
        if named:
            return [dict(zip(self.datasets, row)) for row in zip(*columns)]
        return [tuple(row) for row in zip(*columns)]

    def __len__(self):
        return self._length


def _samples_at(dataset, indices):
    if not callable(getattr(dataset, "__getitems__", None)):
        return [dataset[index] for index in indices]
    samples = dataset.__getitems__(indices)
    if len(samples) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(samples)}")
    return samples


class Subset(Dataset[_T_co]):
    """The samples of ``dataset`` at ``indices``, in that order.

        >>> subset = agnostic.utils.data.Subset(agnostic.arange(10) * 10, [7, 2])
        >>> len(subset), subset[0], subset[1]
        (2, tensor(70), tensor(20))
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset[_T_co]):
    """Map-style datasets one after the other; negative indices count from the end.

        >>> both = agnostic.utils.data.ConcatDataset([[1, 2, 3], [10, 20]])
        >>> len(both), both[3], both[-1]
        (5, 10, 20)
    """

    @staticmethod
    def cumsum(sequence):
        total, sums = 0, []
        for dataset in sequence:
            total += len(dataset)
            sums.append(total)
        return sums

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index = len(self) + index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        offset = index if which == 0 else index - self.cumulative_sizes[which - 1]
        return self.datasets[which][offset]


class ChainDataset(IterableDataset[_T_co]):
    """Iterable datasets one after the other.

        >>> class Letters(agnostic.utils.data.IterableDataset):
        ...     def __init__(self, text):
        ...         self.text = text
        ...     def __iter__(self):
        ...         return iter(self.text)
        >>> list(agnostic.utils.data.ChainDataset([Letters("ab"), Letters("cde")]))
        ['a', 'b', 'c', 'd', 'e']
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from dataset

    def __len__(self):
        total = 0
        for dataset in self.datasets:
            if not isinstance(dataset, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(dataset)
        return total


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into non-overlapping ``Subset``s of the given lengths (or fractions summing to 1, rounded
    down with the remainder spread one by one from the first), in the order of ``agnostic.randperm(len(dataset),
    generator=generator)``: the same seed gives the same split everywhere.

        >>> generator = agnostic.Generator().manual_seed(0)
        >>> train, test = agnostic.utils.data.random_split(range(10), [0.8, 0.2], generator=generator)
        >>> len(train), len(test)
        (8, 2)
        >>> sorted(list(train) + list(test)) == list(range(10))
        True
    """
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for index, fraction in enumerate(lengths):
            if fraction < 0 or fraction > 1:
                raise ValueError(f"Fraction at index {index} is not between 0 and 1")
            counts.append(int(math.floor(len(dataset) * fraction)))
        remainder = len(dataset) - sum(counts)
        for index in range(remainder):
            counts[index % len(counts)] += 1
        for index, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {index} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = randperm(sum(lengths), generator=generator).tolist()
    subsets, offset = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[offset:offset + length]))
        offset += length
    return subsets


__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split"]
