"""Calling a module with other parameters and buffers (functional_call), as torch.nn.utils.stateless."""

import contextlib
import warnings

from ..._tensor_classes import Tensor
from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _swap_tensor(module, name, tensor):
    """Put ``tensor`` at ``module.<name>`` (or remove it for ``_MISSING``) and return what was there, as PyTorch's
    NamedMemberAccessor: straight into ``_parameters``/``_buffers`` (a plain tensor may stand for a parameter), else
    through ``setattr`` (a parametrized tensor's setter, or a plain attribute)."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor!r} is not an instance of agnostic.Tensor")
    for store in (module._parameters, module._buffers):
        if name in store:
            original = store[name]
            if tensor is _MISSING:
                del store[name]
            else:
                store[name] = tensor
            return original
    original = getattr(module, name, _MISSING)
    if original is not _MISSING and original is not None and not isinstance(original, Tensor):
        raise TypeError(f"attribute `{name}`: {original!r} is not an instance of agnostic.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif original is not _MISSING:
        delattr(module, name)
    return original


def _submodule_and_name(module, path):
    prefix, _, name = path.rpartition(".")
    return module.get_submodule(prefix), name


def _untie(module, parameters_and_buffers):
    """Extend ``parameters_and_buffers`` to every name of a tied tensor given under one of its names."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    names_of = {}
    for name, tensor in named.items():
        names_of.setdefault(id(tensor), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(parameters_and_buffers)
    for given in [name for name in parameters_and_buffers if name in tied]:
        values = {id(parameters_and_buffers[name]) for name in tied[given] if name in parameters_and_buffers}
        if len(values) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(tied[given])}, which are tied. "
                             "Consider using tie_weights=False")
        for name in tied[given]:
            untied[name] = parameters_and_buffers[given]
    return untied


@contextlib.contextmanager
def _reparametrize_module(module, parameters_and_buffers, tie_weights=False, strict=False):
    """Inside the context, ``module``'s tensors named in ``parameters_and_buffers`` (dotted paths) are replaced by
    the given ones; the originals come back on exit, even after an exception."""
    replacements = _untie(module, parameters_and_buffers) if tie_weights else dict(parameters_and_buffers)
    if strict:
        valid = {name for name, _ in module.named_parameters(remove_duplicate=False)}
        valid |= {name for name, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(valid - set(replacements)), sorted(set(replacements) - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                "\n\t".join(errors)))
    originals = {}
    try:
        for path, tensor in replacements.items():
            owner, name = _submodule_and_name(module, path)
            originals[path] = _swap_tensor(owner, name, tensor)
        yield
    finally:
        for path, original in reversed(list(originals.items())):
            owner, name = _submodule_and_name(module, path)
            _swap_tensor(owner, name, original)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``torch.func.functional_call``'s semantics (a dict, or a tuple of dicts merged)."""
    if isinstance(parameters_and_buffers, (list, tuple)):
        merged = {}
        for part in parameters_and_buffers:
            repeated = sorted(set(part) & set(merged))
            if repeated:
                raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                                 "ambiguous")
            merged.update(part)
        parameters_and_buffers = merged
    if not isinstance(module, Module):
        raise TypeError(f"functional_call expects an agnostic.nn.Module, got {type(module).__name__}")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call ``module(*args, **kwargs)`` with its parameters and buffers replaced by ``parameters_and_buffers``
    (``{"dotted.name": tensor}``), as PyTorch's: the module's own tensors are restored afterwards (even when the call
    raises) and gradients flow to the tensors passed. ``args`` that is not a tuple is the single positional argument.
    With ``tie_weights`` a tensor given for one of several tied names replaces all of them; ``strict`` requires every
    parameter and buffer to be given, and nothing else. PyTorch deprecates this entry point in favour of
    ``torch.func.functional_call``, so it warns (FutureWarning) the same way.

        >>> import warnings
        >>> layer = agnostic.nn.Linear(2, 1)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     agnostic.nn.utils.stateless.functional_call(
        ...         layer, {"weight": agnostic.ones(1, 2), "bias": agnostic.zeros(1)}, agnostic.tensor([[1.0, 2.0]]))
        tensor([[3.]])
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed in "
                  "a future version of PyTorch. Please use `torch.func.functional_call` instead which is a drop-in "
                  "replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)
