"""agnostic.utils.data: PyTorch's datasets, samplers and DataLoader, shuffling with agnostic's RNG."""

from ._collate import collate, default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["DataLoader", "DistributedSampler", "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset",
           "ConcatDataset", "ChainDataset", "random_split", "Sampler", "SequentialSampler", "RandomSampler",
           "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "default_collate", "default_convert",
           "collate", "get_worker_info", "WorkerInfo"]
