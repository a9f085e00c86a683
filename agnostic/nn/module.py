"""Module: the base class of layers, with PyTorch's registration, traversal, conversion, state_dict and hooks."""

import itertools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from .. import _compile, _layout, _tensor
from .._tensor_classes import Tensor
from ..autograd import no_grad
from .hooks import RemovableHandle
from .parameter import Parameter


def _typename(obj):
    """``torch.typename``: a tensor's legacy type name, else the qualified class name."""
    if isinstance(obj, Tensor):
        return obj.type()
    kind = obj if isinstance(obj, type) else type(obj)
    module = kind.__module__
    return kind.__qualname__ if module in ("builtins", None) else f"{module}.{kind.__qualname__}"


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it missed and the ones it did not expect."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _forward_unimplemented(self, *input):
    raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')


class Module:
    """Base class for all neural network modules, with ``torch.nn.Module``'s behaviour.

    Assigning a Parameter, a Module or (via ``register_buffer``) a Tensor to an attribute registers it, so
    ``parameters()``, ``state_dict()``, ``to()`` and friends see it.

        >>> class TwoLayer(agnostic.nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.hidden = agnostic.nn.Linear(4, 8)
        ...         self.out = agnostic.nn.Linear(8, 2)
        ...     def forward(self, x):
        ...         return self.out(agnostic.nn.functional.relu(self.hidden(x)))
        >>> model = TwoLayer()
        >>> model
        TwoLayer(
          (hidden): Linear(in_features=4, out_features=8, bias=True)
          (out): Linear(in_features=8, out_features=2, bias=True)
        )
        >>> [name for name, _ in model.named_parameters()]
        ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
        >>> model(agnostic.ones(3, 4)).shape
        agnostic.Size([3, 2])
        >>> sum(p.numel() for p in model.parameters())
        58
    """

    _version = 1
    training: bool

    def __init__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were "
                            "given")
        setter = object.__setattr__
        setter(self, "training", True)
        setter(self, "_parameters", {})
        setter(self, "_buffers", {})
        setter(self, "_non_persistent_buffers_set", set())
        setter(self, "_modules", {})
        setter(self, "_forward_hooks", OrderedDict())
        setter(self, "_forward_hooks_with_kwargs", OrderedDict())
        setter(self, "_forward_hooks_always_called", OrderedDict())
        setter(self, "_forward_pre_hooks", OrderedDict())
        setter(self, "_forward_pre_hooks_with_kwargs", OrderedDict())

    forward = _forward_unimplemented

    # ----- registration -------------------------------------------------------------------------------------
    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor that is state but not a parameter (BatchNorm's running stats); non-persistent
        buffers stay out of ``state_dict``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(agnostic Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"parameter name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(agnostic.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created explicitly. "
                f"To express '{name}' as a function of another Tensor, compute the value in the forward() method."
            )
        self._parameters[name] = param

    def add_module(self, name, module):
        """Register ``module`` (a Module or None) as a child named ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {_typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at the dotted path ``target`` (``""`` is ``self``)."""
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target):
        """The parameter at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path ``target``."""
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # ----- attribute protocol -------------------------------------------------------------------------------
    def __getattr__(self, name):
        members = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            found = members.get(store)
            if found is not None and name in found:
                return found[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        members = self.__dict__

        def remove_from(*stores):
            for store in stores:
                if name in store:
                    if isinstance(store, dict):
                        del store[name]
                    else:
                        store.discard(name)

        params = members.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(members, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(agnostic.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = members.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            remove_from(members, self._parameters, self._buffers, self._non_persistent_buffers_set)
            modules[name] = value
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(agnostic.nn.Module or None expected)")
            modules[name] = value
            return
        buffers = members.get("_buffers")
        if isinstance(value, Tensor) and value.__dict__.get("_is_buffer", False):  # nn.Buffer registers itself
            if buffers is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            remove_from(members, self._parameters, self._modules)
            self.register_buffer(name, value, persistent=value.__dict__.get("persistent", True))
            return
        if buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(agnostic.Tensor or None expected)")
            buffers[name] = value
            return
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self):
        keys = list(object.__dir__(self)) + list(self._parameters) + list(self._modules) + list(self._buffers)
        return sorted(key for key in set(keys) if not key[0].isdigit())

    def __setstate__(self, state):
        self.__dict__.update(state)

    # ----- traversal ----------------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get_members(module):
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def parameters(self, recurse=True):
        """The parameters of this module (and its descendants when ``recurse``), each once."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, parameter)`` pairs."""
        yield from self._named_members(lambda module: module._parameters.items(), prefix, recurse,
                                       remove_duplicate)

    def buffers(self, recurse=True):
        """The buffers of this module (and its descendants when ``recurse``)."""
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        """``(dotted name, buffer)`` pairs."""
        yield from self._named_members(lambda module: module._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        """The immediate child modules, each once."""
        for _, module in self.named_children():
            yield module

    def named_children(self):
        """``(name, child)`` pairs of the immediate children."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def modules(self):
        """This module and all its descendants, each once."""
        for _, module in self.named_modules():
            yield module

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """``(dotted name, module)`` for this module (name ``prefix``) and all descendants, depth first."""
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ----- modes and gradients ------------------------------------------------------------------------------
    def train(self, mode=True):
        """Set training mode (affects Dropout, BatchNorm...) here and in all descendants; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        """``train(False)``."""
        return self.train(False)

    def compile(self, *args, **kwargs):
        """Compile this module in place, as ``torch.nn.Module.compile``: ``agnostic.compile``'s arguments, checked
        the same way; the module runs eagerly, or with ``mode="reduce-overhead"`` on CUDA replays CUDA graphs of
        its forward and backward (see ``agnostic.compile``).

            >>> agnostic.nn.Linear(2, 1).compile(mode="max-autotune")
        """
        _compile.compile(self, *args, **kwargs)

    def requires_grad_(self, requires_grad=True):
        """Set ``requires_grad`` on every parameter; returns ``self``."""
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default), or to zeros in place."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                if param.grad.grad_fn is not None:
                    param.grad = param.grad.detach()
                else:
                    param.grad.requires_grad_(False)
                param.grad.zero_()

    def apply(self, fn):
        """Call ``fn`` on every descendant (children first) and then on ``self``; returns ``self``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ----- device and dtype conversion ----------------------------------------------------------------------
    def _apply(self, fn):
        for module in self.children():
            module._apply(fn)
        for param in self._parameters.values():
            if param is None:
                continue
            with no_grad():
                _set_data(param, fn(param))
            grad = param.grad
            if grad is not None:
                with no_grad():
                    _set_data(grad, fn(grad))
        for key, buffer in self._buffers.items():
            if buffer is not None:
                self._buffers[key] = fn(buffer)
        return self

    def to(self, *args, **kwargs):
        """Move and/or cast parameters and buffers in place: ``to(device)``, ``to(dtype)``, ``to(tensor)``,
        ``to(device, dtype, non_blocking)``, ``to(memory_format=agnostic.channels_last)`` (4-D and 5-D tensors
        only, as PyTorch). Only floating-point and complex tensors change dtype. Returns ``self``; parameters keep
        their identity."""
        device, dtype, non_blocking, _, memory_format = _tensor.parse_to_arguments(args, dict(kwargs))
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            cast = dtype if t.is_floating_point() or t.is_complex() else None
            layout = memory_format if t.dim() in (4, 5) else _layout.preserve_format
            return t.to(device=device, dtype=cast, non_blocking=non_blocking, memory_format=layout)
        return self._apply(convert)

    def cuda(self, device=None):
        """Move every parameter and buffer to a CUDA device (the current one by default)."""
        return self._apply(lambda t: t.cuda(device))

    def cpu(self):
        """Move every parameter and buffer to the CPU."""
        return self._apply(lambda t: t.cpu())

    def share_memory(self):
        """Move every parameter and buffer to shared memory (see ``Tensor.share_memory_``), for models that
        ``agnostic.multiprocessing`` workers train together (Hogwild). Returns ``self``."""
        return self._apply(lambda t: t.share_memory_())

    def type(self, dst_type):
        """Cast every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.type(dst_type))

    def half(self):
        """Cast floating-point parameters and buffers to float16."""
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    def float(self):
        """Cast floating-point parameters and buffers to float32."""
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast floating-point parameters and buffers to float64."""
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def bfloat16(self):
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._apply(lambda t: t.bfloat16() if t.is_floating_point() else t)

    # ----- state_dict -------------------------------------------------------------------------------------------
    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of parameters and persistent buffers by dotted name (detached unless
        ``keep_vars``), sharing memory with the module."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        persistent = {k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set}
        local_state = {k: v for k, v in itertools.chain(self._parameters.items(), persistent.items())
                       if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, param in local_state.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected agnostic.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(value)}")
                continue
            if param.ndim == 0 and value.ndim == 1:
                value = value[0]  # checkpoints that stored scalars as 1-element vectors
            if value.shape != param.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                                  f"checkpoint, the shape in current model is {param.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(param, Parameter):
                            value = Parameter(value.detach(), requires_grad=param.requires_grad) \
                                if not isinstance(value, Parameter) else value.requires_grad_(param.requires_grad)
                        setattr(self, name, value)
                    else:
                        param.copy_(value)
            except Exception as error:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {value.size()}, an "
                                  f"exception occurred : {error.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    head = key[len(prefix):].split(".", 1)
                    if (head[0] not in self._modules) if len(head) > 1 else (head[0] not in local_state):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy parameters and buffers from ``state_dict`` into this module (in place, across devices).

        With ``strict`` (default), missing or unexpected keys raise; either way the result is a named tuple
        ``(missing_keys, unexpected_keys)``. Shape mismatches always raise. ``assign`` replaces the module's
        tensors with the state_dict's instead of copying into them.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys, unexpected_keys, error_msgs = [], [], []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing_keys,
                                         unexpected_keys, error_msgs)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)},
                         child_prefix)

        load(self, state_dict)
        if strict:
            if unexpected_keys:
                error_msgs.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected_keys)))
            if missing_keys:
                error_msgs.insert(0, "Missing key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in missing_keys)))
        if error_msgs:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(error_msgs)))
        return _IncompatibleKeys(missing_keys, unexpected_keys)

    # ----- hooks and calling ------------------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Call ``hook(module, args)`` before ``forward`` (``hook(module, args, kwargs)`` with ``with_kwargs``);
        a non-None result replaces the arguments. Returns a handle whose ``remove()`` unregisters it."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """Call ``hook(module, args, output)`` after ``forward`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``); a non-None result replaces the output. ``always_call`` runs it even when ``forward``
        raises. Returns a handle whose ``remove()`` unregisters it."""
        handle = RemovableHandle(self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs,
                                                                  self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def _call_impl(self, *args, **kwargs):
        if not (self._forward_hooks or self._forward_pre_hooks):
            return self.forward(*args, **kwargs)
        called = set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    replaced = hook(self, args, kwargs)
                    if replaced is not None:
                        if not (isinstance(replaced, tuple) and len(replaced) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                               f"new_kwargs), but got {replaced}.")
                        args, kwargs = replaced
                else:
                    replaced = hook(self, args)
                    if replaced is not None:
                        args = replaced if isinstance(replaced, tuple) else (replaced,)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    replaced = hook(self, args, kwargs, result)
                else:
                    replaced = hook(self, args, result)
                if replaced is not None:
                    result = replaced
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called and hook_id not in called:
                    try:
                        if hook_id in self._forward_hooks_with_kwargs:
                            hook(self, args, kwargs, None)
                        else:
                            hook(self, args, None)
                    except Exception:
                        pass  # the original error is the one to report
            raise

    __call__ = _call_impl

    # ----- repr -------------------------------------------------------------------------------------------------
    def extra_repr(self):
        """The text inside this module's parentheses in ``repr``; layers override it."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({key}): " + _addindent(repr(module), 2) for key, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"


def _set_data(tensor, new):
    """Point ``tensor`` at ``new``'s memory (``tensor.data = new``), keeping the tensor object (and so
    optimizers' references to parameters) intact."""
    if new is not tensor:
        tensor.data = new


__all__ = ["Module"]
