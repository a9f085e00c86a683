"""Optimizer: PyTorch's base class (parameter groups, per-parameter state, state_dict, zero_grad)."""

import functools
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import numpy

from .._device import CPU
from .._tensor import wrap
from .._tensor_classes import Tensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.tracking import bump_version
from ..cuda.graphs import capture_in_progress


class _RequiredParameter:
    """Marks a hyperparameter each parameter group must give (``lr=required``)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _wrap_step(step):
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        self._opt_called = True  # what the LR schedulers check to warn about a scheduler step before this one
        with no_grad():
            return step(self, *args, **kwargs)
    wrapper._agnostic_step = True
    return wrapper


class Optimizer:
    """Base class of all optimizers, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of tensors, of ``(name, tensor)`` pairs, or of dicts (parameter groups, each with
    ``params`` and optional per-group hyperparameters); ``defaults`` gives the hyperparameters groups don't set.

        >>> class SignSGD(agnostic.optim.Optimizer):
        ...     def __init__(self, params, lr=0.01):
        ...         super().__init__(params, dict(lr=lr))
        ...     @agnostic.no_grad()
        ...     def step(self):
        ...         for group in self.param_groups:
        ...             for p in group["params"]:
        ...                 if p.grad is not None:
        ...                     p.sub_(p.grad.sign(), alpha=group["lr"])
        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, -1.0]))
        >>> optimizer = SignSGD([w], lr=0.5)
        >>> (w * agnostic.tensor([3.0, 2.0])).sum().backward()
        >>> optimizer.step()
        >>> w
        Parameter containing:
        tensor([ 0.5000, -1.5000], requires_grad=True)
    """

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_agnostic_step", False):
            cls.step = _wrap_step(step)

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for index, group in enumerate(self.param_groups):
            text += f"\nParameter Group {index}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    def step(self, closure=None):
        """Perform one optimization step; ``closure`` re-evaluates the model and returns the loss."""
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all optimized tensors: to None (default), or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if getattr(grad, "grad_fn", None) is not None:
                    grad = grad.detach()
                    p.grad = grad
                grad.zero_()

    def add_param_group(self, param_group):
        """Add a parameter group (a dict with ``params`` and optional hyperparameters), as PyTorch: the missing
        hyperparameters come from the defaults, and a parameter may belong to one group only."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        else:
            param_group["params"] = list(params)
        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in tensors:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}")
            if not (getattr(param, "is_leaf", True) or getattr(param, "retains_grad", False)):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(tensors) != len(set(tensors)):
            import warnings

            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        existing = set()
        for group in self.param_groups:
            existing.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not existing.isdisjoint(tensors):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def state_dict(self):
        """The optimizer's state as PyTorch's dict: ``state`` maps parameter indices (in the order of the groups'
        parameters) to per-parameter state; ``param_groups`` holds each group's hyperparameters with ``params`` as
        a list of those indices. Tensors are references, not copies."""
        mapping = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {key: value for key, value in group.items() if key != "params"}
            mapping.update({id(p): index for index, p in enumerate(group["params"], start) if id(p) not in mapping})
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        param_groups = [pack(group) for group in self.param_groups]
        state = {(mapping[id(key)] if isinstance(key, Tensor) else key): value for key, value in self.state.items()}
        return {"state": state, "param_groups": param_groups}

    def load_state_dict(self, state_dict):
        """Load a ``state_dict()``: groups and parameters are matched by position; state tensors move to their
        parameter's device (floating ones also take its dtype), except ``step``, which stays as saved."""
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        id_map = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in id_map:
                param = id_map[key]
                state[param] = _cast(param, value)
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            for name, default in self.defaults.items():
                saved.setdefault(name, default)
        self.__setstate__({"state": state, "param_groups": saved_groups})

    # ----- shared helpers for the subclasses -------------------------------------------------------------------------
    def _params_with_grad(self, group):
        """The group's parameters that have a gradient (marked as modified in place), and those gradients' arrays."""
        params, grads = [], []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if grad.is_sparse:
                raise sparse_gradient_refusal(self)
            if grad._device is not p._device:
                raise RuntimeError(f"a parameter on {p._device} has its gradient on {grad._device}; "
                                   "gradients must live on their parameter's device")
            params.append(p)
            grads.append(grad._data)
            # The update writes the parameter in place: bump its version as any in-place op does, so autograd refuses
            # a backward through a graph that saved the old values (PyTorch's behaviour after optimizer.step()).
            bump_version(p)
        return params, grads


def dense_gradients(optimizer, params):
    """``(param, grad)`` for each of ``params`` that has a gradient, for an optimizer without a sparse update: a sparse
    gradient is refused with PyTorch's error."""
    for param in params:
        grad = param.grad
        if grad is None:
            continue
        if grad.is_sparse:
            raise sparse_gradient_refusal(optimizer)
        yield param, grad


def sparse_gradient_refusal(optimizer):
    """PyTorch's error for an optimizer without a sparse update given a sparse gradient (as
    ``nn.Embedding(sparse=True)`` makes): Adam's family points to SparseAdam."""
    if any(cls.__name__ == "Adam" for cls in type(optimizer).__mro__):
        return RuntimeError("Adam does not support sparse gradients, please consider SparseAdam instead")
    return RuntimeError(f"{type(optimizer).__name__} does not support sparse gradients")


def _cast(param, value, key=None):
    """A copy of a loaded state value whose tensors follow ``param`` (PyTorch's policy; ``step`` is kept)."""
    if isinstance(value, Tensor):
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast(param, v, key=k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(param, v) for v in value)
    return value


def _typename(value):
    return f"{type(value).__module__}.{type(value).__qualname__}"


def scalar(value):
    """A hyperparameter as a Python float (PyTorch accepts 1-element tensors for ``lr`` and friends)."""
    return float(value) if isinstance(value, Tensor) else value


def zeros_state(param):
    """A zero tensor like ``param`` (same device, dtype and layout), as ``torch.zeros_like``."""
    xp = param._device.backend.xp
    with param._device.backend.activate():
        return wrap(xp.zeros_like(param._data), param._device)


def step_tensor():
    """A fresh ``step`` counter: a float32 0-dim CPU tensor, as PyTorch keeps it (without capturable/fused)."""
    return wrap(numpy.zeros((), numpy.float32), CPU)


def advance(state):
    """Add one to ``state['step']`` in place (a number from an old checkpoint becomes a tensor, as in PyTorch);
    returns the new count as a float."""
    if capture_in_progress():
        raise RuntimeError("this optimizer's step() can't be captured in a CUDA graph: it keeps its step count on the "
                           "host, so every replay would repeat the first step's bias corrections. SGD's step and "
                           "Adam's or AdamW's with capturable=True (the count on the device) can be captured; or call "
                           "step() outside the graph")
    step = state["step"]
    if not isinstance(step, Tensor):
        step = state["step"] = wrap(numpy.array(float(step), numpy.float32), CPU)
    if step._device.backend.host:  # a NumPy scalar update, without an op's dispatch
        step._data += 1
        return float(step._data)
    step.add_(1)
    return float(step.item())


__all__ = ["Optimizer"]
