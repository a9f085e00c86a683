"""Which names each of PyTorch's ``torch.nn.modules.<part>`` modules has, and how agnostic's namesakes fill them."""

import sys

from ... import _coverage, nn
from .. import attention, conv, dropout, functional, lazy, loss, module, normalization, pooling, transformer

# PyTorch 2.14's public names of each part (its __all__, then the classes it imports that code reaches through it).
PYTORCH_NAMES = {
    "activation": "Threshold ReLU RReLU Hardtanh ReLU6 Sigmoid Hardsigmoid Tanh SiLU Mish Hardswish ELU CELU SELU GLU "
                  "GELU Hardshrink LeakyReLU LogSigmoid Softplus Softshrink MultiheadAttention PReLU Softsign "
                  "Tanhshrink Softmin Softmax Softmax2d LogSoftmax | NonDynamicallyQuantizableLinear Module",
    "adaptive": "AdaptiveLogSoftmaxWithLoss | ModuleList Sequential Linear Module",
    "batchnorm": "BatchNorm1d LazyBatchNorm1d BatchNorm2d LazyBatchNorm2d BatchNorm3d LazyBatchNorm3d SyncBatchNorm "
                 "| Module",
    "channelshuffle": "ChannelShuffle | Module",
    "container": "Container Sequential ModuleList ModuleDict ParameterList ParameterDict | Module",
    "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d "
            "LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d | Module",
    "distance": "PairwiseDistance CosineSimilarity | Module",
    "dropout": "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout | Module",
    "flatten": "Flatten Unflatten | Module",
    "fold": "Fold Unfold | Module",
    "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
                    "LazyInstanceNorm3d |",
    "lazy": "LazyModuleMixin |",
    "linear": "Bilinear Identity LazyLinear Linear | Module NonDynamicallyQuantizableLinear",
    "loss": "L1Loss NLLLoss NLLLoss2d PoissonNLLLoss GaussianNLLLoss KLDivLoss MSELoss BCELoss BCEWithLogitsLoss "
            "HingeEmbeddingLoss MultiLabelMarginLoss SmoothL1Loss HuberLoss SoftMarginLoss CrossEntropyLoss "
            "LinearCrossEntropyLoss MultiLabelSoftMarginLoss CosineEmbeddingLoss MarginRankingLoss MultiMarginLoss "
            "TripletMarginLoss TripletMarginWithDistanceLoss CTCLoss | PairwiseDistance Linear Module",
    "module": "register_module_forward_pre_hook register_module_forward_hook register_module_full_backward_pre_hook "
              "register_module_backward_hook register_module_full_backward_hook "
              "register_module_buffer_registration_hook register_module_module_registration_hook "
              "register_module_parameter_registration_hook Module |",
    "normalization": "LocalResponseNorm CrossMapLRN2d LayerNorm GroupNorm RMSNorm | Module",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
               "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d "
               "ZeroPad2d ZeroPad3d | Module",
    "pixelshuffle": "PixelShuffle PixelUnshuffle | Module",
    "pooling": "MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d AvgPool1d AvgPool2d AvgPool3d "
               "FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d AdaptiveMaxPool1d "
               "AdaptiveMaxPool2d AdaptiveMaxPool3d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d | Module",
    "rnn": "RNNBase RNN LSTM GRU RNNCellBase RNNCell LSTMCell GRUCell | Module",
    "sparse": "Embedding EmbeddingBag | Module",
    "transformer": "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer TransformerDecoderLayer "
                   "| MultiheadAttention ModuleList Dropout Linear Module LayerNorm",
    "upsampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d | Module",
    "utils": "consume_prefix_in_state_dict_if_present |",
}

# PyTorch's private bases (and helpers) that user code subclasses or calls, where agnostic has the same thing under
# its own name. Differences of hierarchy: agnostic's _InstanceNorm derives from _BatchNorm (PyTorch's from
# _NormBase), and its AvgPool1d isn't an _AvgPoolNd.
PRIVATE = {
    "activation": {"NonDynamicallyQuantizableLinear": attention.NonDynamicallyQuantizableLinear},
    "batchnorm": {"_BatchNorm": normalization._BatchNorm, "_NormBase": normalization._BatchNorm},
    "conv": {"_ConvNd": conv._ConvNd, "_ConvTransposeNd": conv._ConvTranspose,
             "_ConvTransposeMixin": conv._ConvTranspose},
    "dropout": {"_DropoutNd": dropout.Dropout},  # the base of agnostic's DropoutNd classes
    "instancenorm": {"_InstanceNorm": normalization._InstanceNorm},
    "lazy": {"LazyModuleMixin": lazy.LazyModuleMixin},
    "linear": {"NonDynamicallyQuantizableLinear": attention.NonDynamicallyQuantizableLinear},
    "loss": {"_Loss": loss._Loss, "_WeightedLoss": loss._WeightedLoss},
    "module": {"_IncompatibleKeys": module._IncompatibleKeys, "_addindent": module._addindent,
               "_forward_unimplemented": module._forward_unimplemented},
    "pooling": {"_MaxPoolNd": pooling._MaxPoolNd, "_AvgPoolNd": pooling._AvgPoolNd,
                "_AdaptiveMaxPoolNd": pooling._AdaptiveMaxPool},
    "transformer": {"_get_clones": transformer._clones, "_get_activation_fn": transformer._activation_function,
                    "_generate_square_subsequent_mask": transformer._square_subsequent_mask},
}


def mirror(namespace, part):
    """Fill the module ``namespace`` (its ``globals()``) with agnostic's objects for PyTorch's
    ``torch.nn.modules.<part>``: the same objects as ``agnostic.nn``'s, the private aliases above, and a module
    ``__getattr__`` that raises agnostic's missing-name error for PyTorch's names agnostic lacks. Returns the
    module's ``__all__``: PyTorch's ``__all__`` of that part, less what agnostic lacks."""
    nn_names = vars(nn)  # agnostic.nn's namespace is complete by the time its submodules are imported
    exported, _, imported = PYTORCH_NAMES[part].partition("|")
    for name in exported.split() + imported.split():
        if name in nn_names and name not in namespace:
            namespace[name] = nn_names[name]
    namespace.update(PRIVATE.get(part, {}))
    module_name = namespace["__name__"]
    torch_names = set(exported.split() + imported.split())

    def __getattr__(name):
        if name in torch_names:
            raise _missing(module_name, f"torch.nn.modules.{part}", name)
        raise _coverage.missing_name_error(module_name, name)

    namespace["__getattr__"] = __getattr__
    return [name for name in exported.split() if name in namespace]


def _missing(module_name, torch_module, name):
    return AttributeError(f"module {module_name!r} has no attribute {name!r}: agnostic does not provide "
                          f"{torch_module}.{name}; {_coverage._WHERE}")


def pytorch_counterpart(module, name):
    """agnostic's class or function for one a PyTorch whole-module checkpoint names (``torch.nn.modules.rnn.LSTM``
    is ``agnostic.nn.LSTM``, ``torch.nn.functional.relu`` is ``agnostic.nn.functional.relu``), or None. agnostic's
    layers keep PyTorch's attribute names, so a PyTorch module's pickled state rebuilds agnostic's."""
    if module.startswith("torch.nn.modules.") and module[len("torch.nn.modules."):] in PYTORCH_NAMES:
        part = sys.modules.get(f"{__package__}.{module[len('torch.nn.modules.'):]}")
        return None if part is None else vars(part).get(name)
    if module == "torch.nn.functional":
        return vars(functional).get(name)
    return None
