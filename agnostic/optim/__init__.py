"""agnostic.optim: PyTorch's optimizers (SGD, Adam, AdamW, RMSprop) and learning-rate schedulers, on every device."""

from . import lr_scheduler
from .adam import Adam
from .adamw import AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "lr_scheduler"]
