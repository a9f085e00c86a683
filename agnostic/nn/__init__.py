"""agnostic.nn: neural-network modules, layers, losses, initializers and functional ops, as torch.nn.

Everything is written with agnostic ops, so the same model runs on NumPy (CPU) and CuPy (CUDA).
"""

from . import functional, init
from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .containers import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .flatten import Flatten
from .linear import Identity, Linear
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from .parameter import Parameter
from .pooling import AvgPool2d, MaxPool2d
from .sparse import Embedding

__all__ = ["AvgPool2d", "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss",
           "Dropout", "Embedding", "Flatten", "GELU", "Identity", "L1Loss", "LayerNorm", "Linear", "LogSoftmax",
           "MSELoss", "MaxPool2d", "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Sequential",
           "Sigmoid", "Softmax", "Tanh", "functional", "init"]
