"""agnostic.utils: PyTorch's ``torch.utils`` counterparts (``data``: datasets, samplers, DataLoader)."""

from . import data

__all__ = ["data"]
