"""Lazy modules, whose parameters take their shapes from the first input, as torch.nn.LazyLinear and the other
Lazy* layers.

A lazy module holds ``UninitializedParameter``/``UninitializedBuffer`` objects until its first forward; a forward
pre-hook then calls ``initialize_parameters(input)``, which materializes them (the same objects, so an optimizer
built before that step sees the real tensors) from the input's shape, device and dtype, and the module becomes its
ordinary class (``cls_to_become``: a LazyLinear turns into a Linear).
"""

from .. import _dtypes
from ..autograd import no_grad
from ..ops import creation
from .conv import _ConvTranspose, Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy


class LazyModuleMixin:
    """The machinery of lazy modules, as ``torch.nn.modules.lazy.LazyModuleMixin``: put it first among the bases
    of a module whose ``initialize_parameters(*args)`` materializes its uninitialized parameters; set
    ``cls_to_become`` to the class the module should turn into once they are.

        >>> layer = agnostic.nn.LazyLinear(2)
        >>> isinstance(layer, agnostic.nn.lazy.LazyModuleMixin), layer.has_uninitialized_params()
        (True, True)
        >>> _ = layer(agnostic.ones(1, 3))
        >>> type(layer).__name__, layer.has_uninitialized_params()
        ('Linear', False)
    """

    cls_to_become: "type | None" = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self):
        """Whether any of this module's own parameters or buffers is still uninitialized."""
        return any(is_lazy(tensor) for tensor in list(self._parameters.values()) + list(self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the uninitialized parameters from the forward's arguments (each lazy class defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module._initialize_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # uninitialized tensors go in as themselves: detaching one would lose what it is
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if is_lazy(param) or keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if is_lazy(buffer) or keep_vars else buffer.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # a checkpoint's initialized tensors give the uninitialized ones their shapes; lazy ones stay lazy
        still_lazy = []
        for name, tensor in list(self._parameters.items()) + list(self._buffers.items()):
            key = prefix + name
            if tensor is None or not is_lazy(tensor) or key not in state_dict:
                continue
            if is_lazy(state_dict[key]):
                still_lazy.append(key)
            else:
                with no_grad():
                    tensor.materialize(state_dict[key].shape)
        if still_lazy:
            state_dict = {key: value for key, value in state_dict.items() if key not in still_lazy}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if still_lazy:
            missing_keys[:] = [key for key in missing_keys if key not in still_lazy]
            unexpected_keys[:] = [key for key in unexpected_keys if key not in still_lazy]

    def _apply(self, fn):
        # moving or casting an uninitialized buffer gives a plain empty tensor: keep it uninitialized
        lazy_buffers = [name for name, buffer in self._buffers.items() if is_lazy(buffer)]
        super()._apply(fn)
        for name in lazy_buffers:
            if not is_lazy(self._buffers[name]):
                self._buffers[name].__class__ = UninitializedBuffer
        return self

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear layer whose ``in_features`` is the last dimension of its first input, as ``torch.nn.LazyLinear``;
    after that forward it is a ``Linear``.

        >>> layer = agnostic.nn.LazyLinear(4)
        >>> layer
        LazyLinear(in_features=0, out_features=4, bias=True)
        >>> layer(agnostic.ones(2, 3)).shape
        agnostic.Size([2, 4])
        >>> layer
        Linear(in_features=3, out_features=4, bias=True)
    """

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialize ``weight`` (out_features, input.shape[-1]) and ``bias``, and initialize them as Linear's."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """initialize_parameters for the lazy convolutions: ``in_channels`` from the input's channel dimension."""

    def _lazy_init(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _input_channels(self, input):
        batched = self._dims + 2
        if input.dim() not in (batched - 1, batched):
            raise RuntimeError(f"Expected {batched - 1}D (unbatched) or {batched}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {list(input.shape)}")
        return input.shape[1] if input.dim() == batched else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialize ``weight`` and ``bias`` from the input's channels, and initialize them as the layer's."""
        if self.has_uninitialized_params():
            self.in_channels = self._input_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            shape = (self.in_channels, self.out_channels // self.groups) if self.transposed \
                else (self.out_channels, self.in_channels // self.groups)
            with no_grad():
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(name, base, dims):
    """The lazy form of the convolution ``base``: its own signature less ``in_channels``."""
    def transposed_init(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                        dilation=1, padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                                 dilation, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    def direct_init(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                    padding_mode="zeros", device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode)
        self._lazy_init(out_channels, bias, device, dtype)

    __init__ = transposed_init if issubclass(base, _ConvTranspose) else direct_init
    __init__.__name__ = "__init__"
    __init__.__qualname__ = f"{name}.__init__"
    doc = (f"A {base.__name__} whose ``in_channels`` is the channel dimension of its first input, as "
           f"``torch.nn.{name}``; after that forward it is a ``{base.__name__}``.\n\n"
           f"        >>> layer = agnostic.nn.{name}(4, 3)\n"
           f"        >>> _ = layer(agnostic.ones(1, 2{', 5' * dims}))\n"
           f"        >>> type(layer).__name__, layer.in_channels\n"
           f"        ('{base.__name__}', 2)\n")
    return type(name, (_LazyConvMixin, base), {"cls_to_become": base, "__doc__": doc, "__module__": __name__,
                                                "__init__": __init__})


LazyConv1d = _lazy_conv("LazyConv1d", Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", Conv3d, 3)
LazyConvTranspose1d = _lazy_conv("LazyConvTranspose1d", ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv("LazyConvTranspose2d", ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv("LazyConvTranspose3d", ConvTranspose3d, 3)


class _LazyNormMixin(LazyModuleMixin):
    """The lazy batch and instance norms: ``num_features`` from the input's channel dimension."""

    def _lazy_init(self, affine, track_running_stats, device, dtype):
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = creation.tensor(0, dtype=_dtypes.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialize the affine parameters and running statistics from the input's channels (dimension 1)."""
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for tensor in (self.weight, self.bias, self.running_mean, self.running_var):
                    if tensor is not None and is_lazy(tensor):
                        tensor.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(name, base, example_shape):
    """The lazy form of the batch or instance norm ``base``: its own signature less ``num_features``."""
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        LazyModuleMixin.__init__(self, 0, eps, momentum, False, False)
        self._lazy_init(affine, track_running_stats, device, dtype)

    __init__.__qualname__ = f"{name}.__init__"
    doc = (f"A {base.__name__} whose ``num_features`` is the channel dimension of its first input, as "
           f"``torch.nn.{name}``; after that forward it is a ``{base.__name__}``.\n\n"
           f"        >>> layer = agnostic.nn.{name}()\n"
           f"        >>> _ = layer(agnostic.randn{example_shape})\n"
           f"        >>> type(layer).__name__, layer.num_features\n"
           f"        ('{base.__name__}', 3)\n")
    return type(name, (_LazyNormMixin, base), {"cls_to_become": base, "__doc__": doc, "__module__": __name__,
                                                 "__init__": __init__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", BatchNorm1d, "(4, 3)")
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", BatchNorm2d, "(2, 3, 2, 2)")
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", BatchNorm3d, "(2, 3, 2, 2, 2)")
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", InstanceNorm1d, "(2, 3, 4)")
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", InstanceNorm2d, "(2, 3, 2, 2)")
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", InstanceNorm3d, "(2, 3, 2, 2, 2)")

__all__ = ["LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear"]
