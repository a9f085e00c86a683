"""DistributedSampler: each process of a distributed job reads its own equal share of a dataset."""

import math

from ... import distributed as dist
from ...ops.random import Generator
from .sampler import Sampler, _randperm, _T_co


def _distributed_default(what):
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available: pip install 'agnostic-tensor[distributed]'")
    if not dist.is_initialized():
        raise RuntimeError(f"DistributedSampler needs {what}: pass it, or call "
                           "agnostic.distributed.init_process_group() first")
    return dist.get_world_size() if what == "num_replicas" else dist.get_rank()


class DistributedSampler(Sampler[_T_co]):
    """The indices of ``dataset`` that process ``rank`` of ``num_replicas`` reads (defaults: the process group's
    rank and world size), as ``torch.utils.data.distributed.DistributedSampler``: with ``shuffle`` a permutation
    drawn from ``seed + epoch`` (the same on every rank; call ``set_epoch`` each epoch for a new one), padded by
    repeating its start so every rank gets ``ceil(len / num_replicas)`` indices (or, with ``drop_last``, cut to
    ``floor``), then every ``num_replicas``-th index from position ``rank``. The permutations differ from PyTorch's
    (another random generator); the assignment rules are PyTorch's.

        >>> from agnostic.utils.data.distributed import DistributedSampler
        >>> [list(DistributedSampler(range(5), num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
        [[0, 2, 4], [1, 3, 0]]
        >>> len(DistributedSampler(range(5), num_replicas=2, rank=1, drop_last=True))
        2
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _distributed_default("num_replicas")
        if rank is None:
            rank = _distributed_default("rank")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        size = len(self.dataset)
        if self.shuffle:
            indices = _randperm(size, Generator().manual_seed(self.seed + self.epoch))
        else:
            indices = list(range(size))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Use permutation ``seed + epoch`` from the next iteration on (the same on every rank).

            >>> from agnostic.utils.data.distributed import DistributedSampler
            >>> sampler = DistributedSampler(range(8), num_replicas=2, rank=0, seed=1)
            >>> first = list(sampler)
            >>> sampler.set_epoch(1)
            >>> list(sampler) == first
            False
        """
        self.epoch = epoch
