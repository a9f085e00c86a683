"""Parametrizations of a module's tensors (register_parametrization and friends), as torch.nn.utils.parametrize.

A parametrized module keeps the tensors its parametrization starts from under ``module.parametrizations.<name>``
(``original``, or ``original0``, ``original1``... when ``right_inverse`` returns several), and its class is swapped
for a generated subclass in which ``<name>`` is a property computing the tensor on each access.
"""

import collections.abc
from contextlib import contextmanager
from copy import deepcopy

from ..._tensor_classes import Tensor
from ...autograd import no_grad
from ..containers import ModuleDict, ModuleList
from ..module import _set_data
from ..parameter import Parameter

__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
           "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached():
    """Inside this context each parametrized tensor is computed once, on first access, and reused until the
    outermost ``cached()`` exits (for a parametrized weight read several times in one forward, as in an RNN loop).

        >>> import agnostic.nn.utils.parametrize as P
        >>> class Double(agnostic.nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> layer = P.register_parametrization(agnostic.nn.Linear(2, 2), "weight", Double())
        >>> with P.cached():
        ...     layer.weight is layer.weight
        True
        >>> layer.weight is layer.weight
        False
    """
    global _cache, _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register_parameter_or_buffer(module, name, tensor):
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _check_same(what, expected, got, fix):
    if expected != got:
        raise ValueError(f"{what}: expected {expected}, got {got}. {fix}")


class ParametrizationList(ModuleList):
    """The parametrizations registered on one tensor (``[0]`` applied first) and the tensors they start from, kept as
    parameters (or buffers) named ``original`` (``right_inverse`` returning one tensor, or no ``right_inverse``) or
    ``original0``, ``original1``... (a sequence). ``module.parametrizations[name]`` is one; made by
    ``register_parametrization``, not by hand. Without ``unsafe`` the parametrized tensor must keep the original's
    shape and dtype.

        >>> import agnostic.nn.utils.parametrize as P
        >>> class Double(agnostic.nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> layer = P.register_parametrization(agnostic.nn.Linear(2, 2), "weight", Double())
        >>> type(layer.parametrizations.weight).__name__, layer.parametrizations.weight.original.shape
        ('ParametrizationList', agnostic.Size([2, 2]))
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            if original.device != new.device:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the device.\n"
                                 f"original.device: {original.device}\n"
                                 f"right_inverse(original).device: {new.device}")
            with no_grad():
                _set_data(original, new)  # the original keeps its identity, so optimizers holding it still see it
            _register_parameter_or_buffer(self, "original", original)
        else:
            for index, value in enumerate(new):
                if not isinstance(value, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                     f"Got element {index} of the sequence with type {type(value).__name__}.")
                if isinstance(original, Parameter):
                    value = Parameter(value, original.requires_grad)
                value.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{index}", value)
        if not self.unsafe:
            result = self()
            if not isinstance(result, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(result).__name__}.")
            if result.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {result.dtype}")
            if result.shape != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {result.shape}")

    def right_inverse(self, value):
        """Run the parametrizations' ``right_inverse`` in reverse registration order on ``value`` and store the
        result in the originals (in place), so that the parametrized tensor becomes ``value``; what assigning to
        ``module.<name>`` does.

            >>> import agnostic.nn.utils.parametrize as P
            >>> class Double(agnostic.nn.Module):
            ...     def forward(self, X):
            ...         return 2 * X
            ...     def right_inverse(self, Y):
            ...         return Y / 2
            >>> layer = P.register_parametrization(agnostic.nn.Linear(2, 1), "weight", Double())
            >>> layer.weight = agnostic.tensor([[2.0, 4.0]])
            >>> layer.parametrizations.weight.original
            Parameter containing:
            tensor([[1., 2.]], requires_grad=True)
        """
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _set_data(self.original, value)
                return
            if not isinstance(value, collections.abc.Sequence):
                raise ValueError(f"'right_inverse' must return a sequence of tensors. Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. Got a "
                                 f"sequence of length {len(value)}.")
            for index, tensor in enumerate(value):
                original = getattr(self, f"original{index}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"'right_inverse' must return a sequence of tensors. Got element {index} of "
                                     f"type {type(tensor).__name__}.")
                if original.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {index} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{index}` has dtype {original.dtype}")
                _set_data(original, tensor)

    def forward(self):
        """The parametrized tensor: ``self[0]`` applied to the originals, then each later parametrization in turn."""
        if self.is_tensor:
            value = self[0](self.original)
        else:
            value = self[0](*(getattr(self, f"original{index}") for index in range(self.ntensors)))
        for parametrization in list(self)[1:]:
            value = parametrization(value)
        return value


def _default_deepcopy(self, memo):
    found = memo.get(id(self))
    if found is not None:
        return found
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = deepcopy(self.__dict__, memo)
    return replica


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(): save "
                       "module.state_dict() and load it into a module parametrized the same way.")


def _inject_new_class(module):
    """Swap ``module``'s class for ``Parametrized<Class>``, a subclass of its own that the properties go on."""
    cls = module.__class__
    members = {"__getstate__": _refuse_pickling, "__module__": cls.__module__}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module, tensor_name):
    if hasattr(module, tensor_name):
        raise AssertionError(f"Module already has an attribute named '{tensor_name}'")

    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        tensor = _cache.get(key)
        if tensor is None:
            tensor = _cache[key] = parametrization()
        return tensor

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(
        get_parametrized, set_original, doc=f"``{tensor_name}`` computed from ``parametrizations.{tensor_name}``."))


def _check_consistent(module, tensor_name, parametrization):
    """A parametrization added on top of others must keep the tensor's shape and dtype (both ways)."""
    current = getattr(module, tensor_name)
    result = parametrization(current)
    if not isinstance(result, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(result).__name__}.")
    fix = "Pass unsafe=True to allow it."
    _check_same(f"Registering a parametrization may not change the dtype of module.{tensor_name}", current.dtype,
                result.dtype, fix)
    _check_same(f"Registering a parametrization may not change the shape of module.{tensor_name}", current.shape,
                result.shape, fix)
    if hasattr(parametrization, "right_inverse"):
        try:
            inverse = parametrization.right_inverse(result)
        except NotImplementedError:
            return
        if not isinstance(inverse, Tensor):
            raise ValueError(f"parametrization.right_inverse must return a tensor. Got: {type(inverse).__name__}")
        _check_same(f"The tensor returned by parametrization.right_inverse must have the dtype of "
                    f"module.{tensor_name}", current.dtype, inverse.dtype, fix)
        _check_same(f"The tensor returned by parametrization.right_inverse must have the shape of "
                    f"module.{tensor_name}", current.shape, inverse.shape, fix)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` (a parameter or buffer) the output of ``parametrization`` (a Module) applied to
    an original tensor kept at ``module.parametrizations.<tensor_name>.original``, as PyTorch does: the module's class
    becomes ``Parametrized<Class>``, reading the tensor runs the parametrization (differentiably), assigning to it runs
    ``parametrization.right_inverse``. A ``right_inverse`` (if any) also sets the original at registration; one that
    returns a tuple gives ``original0``, ``original1``... and ``forward`` takes them all. Registering again on the same
    name chains parametrizations. ``unsafe`` skips the shape/dtype consistency checks. Returns ``module``.

        >>> import agnostic.nn.utils.parametrize as P
        >>> class Symmetric(agnostic.nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).T
        ...     def right_inverse(self, A):
        ...         return A.triu()
        >>> layer = P.register_parametrization(agnostic.nn.Linear(3, 3), "weight", Symmetric())
        >>> agnostic.equal(layer.weight, layer.weight.T)
        True
        >>> type(layer).__name__, sorted(layer.state_dict())
        ('ParametrizedLinear', ['bias', 'parametrizations.weight.original'])
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_consistent(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        if original is None:
            raise ValueError(f"Module '{type(module).__name__}' has '{tensor_name}' set to None: there is no tensor to "
                             "parametrize; assign one first")
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = parametrizations
    else:
        raise ValueError(f"Module '{type(module).__name__}' has no parameter named '{tensor_name}', nor a buffer or a "
                         f"parametrized element of that name; its parameters are {list(module._parameters)} and its "
                         f"buffers {list(module._buffers)}")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has a parametrization on ``tensor_name`` (on any tensor when None).

        >>> import agnostic.nn.utils.parametrize as P
        >>> layer = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(2, 2))
        >>> P.is_parametrized(layer), P.is_parametrized(layer, "weight"), P.is_parametrized(layer, "bias")
        (True, True, False)
    """
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Remove the parametrizations on ``module.<tensor_name>``: it becomes a plain parameter (or buffer) again, holding
    the current parametrized value (``leave_parametrized=True``) or the original (False; only when there is a single
    ``original``). The last removal restores the module's class. Returns ``module``.

        >>> import agnostic.nn.utils.parametrize as P
        >>> layer = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(2, 2))
        >>> layer = P.remove_parametrizations(layer, "weight")
        >>> type(layer).__name__, sorted(layer.state_dict())
        ('Linear', ['bias', 'weight'])
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {type(module).__name__} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                value = getattr(module, tensor_name)
                _set_data(original, value)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()) if value.requires_grad else value.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before parametrizations swapped it (``type(module)`` when it has none).

        >>> import agnostic.nn.utils.parametrize as P
        >>> layer = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(2, 2))
        >>> P.type_before_parametrizations(layer).__name__
        'Linear'
    """
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register ``from_module``'s parametrizations (all, or those of ``tensor_name``) on ``to_module`` and make it
    share their original tensors, creating the parametrized attribute on ``to_module`` when it lacks one. Does
    nothing when ``from_module`` is not parametrized. Returns ``to_module``.

        >>> import agnostic.nn.utils.parametrize as P
        >>> source = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(2, 2))
        >>> target = P.transfer_parametrizations_and_params(source, agnostic.nn.Linear(2, 2))
        >>> target.parametrizations.weight.original1 is source.parametrizations.weight.original1
        True
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        if "original" in source._parameters or "original" in source._buffers:
            target.original = source.original
        else:
            index = 0
            while hasattr(source, f"original{index}"):
                setattr(target, f"original{index}", getattr(source, f"original{index}"))
                index += 1
    return to_module
