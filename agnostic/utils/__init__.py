"""agnostic.utils: PyTorch's ``torch.utils`` counterparts (``data``: datasets, samplers, DataLoader; ``dlpack``:
zero-copy exchange with other array libraries)."""

from . import data, dlpack

__all__ = ["data", "dlpack"]
