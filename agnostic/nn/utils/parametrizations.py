"""Parametrizations of a module's parameters: weight_norm, as torch.nn.utils.parametrizations.

A parametrized module keeps what the parametrization computes from under ``module.parametrizations.<name>``
(``original0``, ``original1``...), and its class is replaced by a subclass of its own in which ``<name>`` is a
property computing the parameter on each access, as PyTorch's ``torch.nn.utils.parametrize`` does.
"""

from ...autograd import no_grad
from .. import module as _module
from ..containers import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["weight_norm"]


class ParametrizationList(ModuleList):
    """The parametrizations of one parameter (``[0]`` first) and the tensors they start from, ``original0``,
    ``original1``... (``original`` for one), registered as parameters of this module."""

    def __init__(self, parametrizations, original):
        super().__init__(parametrizations)
        with no_grad():
            start = original
            for parametrization in reversed(parametrizations):
                start = parametrization.right_inverse(start)
        self.is_tensor = not isinstance(start, (tuple, list))
        self.ntensors = 1 if self.is_tensor else len(start)
        for index, value in enumerate([start] if self.is_tensor else start):
            parameter = Parameter(value.detach(), requires_grad=original.requires_grad)
            self.register_parameter("original" if self.is_tensor else f"original{index}", parameter)

    def right_inverse(self, value):
        """Set the originals so that the parametrized value becomes ``value``."""
        with no_grad():
            for parametrization in reversed(list(self)):
                value = parametrization.right_inverse(value)
            values = [value] if self.is_tensor else value
            for index, new in enumerate(values):
                original = getattr(self, "original" if self.is_tensor else f"original{index}")
                original.copy_(new)

    def forward(self):
        """The parametrized value, computed from the originals."""
        if self.is_tensor:
            value = self[0](self.original)
        else:
            value = self[0](*(getattr(self, f"original{index}") for index in range(self.ntensors)))
        for parametrization in list(self)[1:]:
            value = parametrization(value)
        return value


def _parametrized_property(name):
    def get(module):
        return module.parametrizations[name]()

    def set(module, value):
        module.parametrizations[name].right_inverse(value)

    return property(get, set, doc=f"The parametrized ``{name}``, computed from ``parametrizations.{name}``.")


def _register_parametrization(module, name, parametrization):
    """``module.<name>`` computed by ``parametrization`` from originals kept in ``module.parametrizations``."""
    if name not in module._parameters:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter named '{name}' to parametrize; "
                         f"its parameters are {list(module._parameters)}")
    original = module._parameters.pop(name)
    if "parametrizations" not in module._modules:
        module.parametrizations = ModuleDict()
        parametrized = type(f"Parametrized{type(module).__name__}", (type(module),), {"__module__":
                                                                                       type(module).__module__})
        module.__class__ = parametrized
    setattr(type(module), name, _parametrized_property(name))
    module.parametrizations[name] = ParametrizationList([parametrization], original)


def _norm_except_dim(v, dim):
    """The 2-norm of ``v`` over every dim but ``dim`` (all of them for -1), keeping ``v``'s number of dims."""
    if dim == -1:
        return v.norm()
    dim = dim % v.ndim if v.ndim else 0
    others = [d for d in range(v.ndim) if d != dim]
    return v.norm(2, others, keepdim=True) if others else v.abs()


class _WeightNorm(_module.Module):
    """``weight = g * v / ||v||``, the norm taken over every dim but ``dim`` (of the whole tensor for -1)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / _norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (Salimans and Kingma's weight normalization), the norm
    over every dim but ``dim`` (over the whole tensor for None): ``g`` and ``v`` become
    ``module.parametrizations.<name>.original0`` and ``original1``, and ``module.<name>`` is computed from them on
    each access. Returns ``module``.

        >>> layer = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(3, 2))
        >>> layer.parametrizations.weight.original0.shape, layer.parametrizations.weight.original1.shape
        (agnostic.Size([2, 1]), agnostic.Size([2, 3]))
        >>> sorted(layer.state_dict())
        ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    _register_parametrization(module, name, _WeightNorm(dim))
    return module
