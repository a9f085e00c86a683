"""The hook-based weight normalization (weight_norm, remove_weight_norm), as torch.nn.utils.weight_norm."""

import warnings

from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["weight_norm", "remove_weight_norm"]


class _WeightNormHook:
    """Recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v`` before each forward (PyTorch's WeightNorm)."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    def remove(self, module):
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Split ``module.<name>`` into a magnitude ``<name>_g`` and a direction ``<name>_v`` (both parameters), and set
    ``module.<name> = g * v / ||v||`` (norm over every dim but ``dim``; the whole tensor for None) before each forward,
    through a forward pre-hook, as PyTorch's older API. Deprecated there in favour of
    ``agnostic.nn.utils.parametrizations.weight_norm``, so it warns (FutureWarning) the same way. Returns ``module``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     layer = agnostic.nn.utils.weight_norm(agnostic.nn.Linear(3, 2))
        >>> layer.weight_g.shape, layer.weight_v.shape, sorted(layer.state_dict())
        (agnostic.Size([2, 1]), agnostic.Size([2, 3]), ['bias', 'weight_g', 'weight_v'])
    """
    warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                  "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
    if name not in module._parameters or module._parameters[name] is None:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter named '{name}' to normalize; its "
                         f"parameters are {list(module._parameters)}")
    hook = _WeightNormHook(name, dim)
    weight = module._parameters.pop(name)
    module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, hook.dim).detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, hook.compute_weight(module))
    module.register_forward_pre_hook(hook)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo ``weight_norm``: ``module.<name>`` becomes a parameter again holding ``g * v / ||v||``. Returns ``module``.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     layer = agnostic.nn.utils.weight_norm(agnostic.nn.Linear(3, 2))
        >>> sorted(agnostic.nn.utils.remove_weight_norm(layer).state_dict())
        ['bias', 'weight']
    """
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _WeightNormHook) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {type(module).__name__}")
