"""agnostic.nn.parallel: DataParallel (several GPUs, one process), DistributedDataParallel (one process per device)
and the scatter, replicate, parallel_apply and gather pieces, as ``torch.nn.parallel``."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter, scatter_kwargs

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel", "gather", "parallel_apply", "replicate",
           "scatter", "scatter_kwargs"]
