"""agnostic.nn.functional: the stateless forms of the layers, activations and losses, as torch.nn.functional."""

from ._activation import erf, gelu, log_softmax, logsigmoid, relu, relu_, sigmoid, softmax, tanh
from ._conv import conv2d, fold, unfold
from ._dropout import dropout
from ._linear import linear
from ._loss import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, l1_loss, mse_loss, nll_loss,
)
from ._normalization import batch_norm, layer_norm
from ._padding import pad
from ._pooling import avg_pool2d, max_pool2d
from ._sparse import embedding, one_hot

__all__ = ["avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "conv2d",
           "cross_entropy", "dropout", "embedding", "erf", "fold", "gelu", "l1_loss", "layer_norm", "linear",
           "log_softmax", "logsigmoid", "max_pool2d", "mse_loss", "nll_loss", "one_hot", "pad", "relu", "relu_",
           "sigmoid", "softmax", "tanh", "unfold"]
