"""Makes the core differentiable: binds recording wrappers as GradTensor methods and as agnostic's functions.

One table says which op uses which backward rule; plain tensors keep the original, unwrapped methods.
"""

from .._tensor import Tensor
from . import derivatives as rules
from .tracking import GradTensor, differentiable, differentiable_inplace

_OTHERS = ("sum", "mean", "prod", "var", "std", "max", "min", "amax", "amin", "norm", "logsumexp", "cumsum",
           "cumprod", "matmul", "mm", "bmm", "mv", "dot", "inner", "outer", "einsum", "reshape", "flatten",
           "unflatten", "squeeze", "unsqueeze", "view_as", "reshape_as", "permute", "transpose", "swapaxes",
           "swapdims", "t", "movedim", "moveaxis", "expand", "expand_as", "broadcast_to", "cat", "concat",
           "concatenate", "stack", "hstack", "vstack", "split", "chunk", "tensor_split", "unbind", "narrow", "flip",
           "fliplr", "flipud", "roll", "tile", "repeat_interleave", "tril", "triu", "diagonal", "diag", "gather",
           "scatter", "scatter_add", "index_select", "index_add", "masked_fill", "masked_select", "take")
_ALIASES = {"concat": "cat", "concatenate": "cat", "swapaxes": "transpose", "swapdims": "transpose",
            "moveaxis": "movedim"}
_METHOD_ONLY = {"view": "view", "repeat": "repeat", "contiguous": "contiguous", "clone": "clone"}
_CONVERSIONS = ("to", "cuda", "cpu", "float", "double", "half", "bfloat16", "cfloat", "cdouble", "type")
_VIEWS = {"view", "flatten", "unflatten", "squeeze", "unsqueeze", "view_as", "reshape", "reshape_as", "permute",
          "transpose", "swapaxes", "swapdims", "t", "movedim", "moveaxis", "expand", "expand_as", "broadcast_to",
          "split", "chunk", "tensor_split", "unbind", "narrow", "diagonal"}
_OPERATORS = {"matmul": "matmul"}
_FACTORIES = ("tensor", "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "zeros_like",
              "ones_like", "empty_like", "full_like")
_RANDOM_FACTORIES = ("rand", "randn", "rand_like", "randn_like", "normal")


# Rules that need only their inputs' shapes, not values: modifying those inputs in place later is fine.
_SHAPE_ONLY = ("sum", "mean", "reshape", "view", "flatten", "unflatten", "squeeze", "unsqueeze",
               "view_as", "reshape_as", "contiguous", "permute", "transpose", "t", "matrix_transpose",
               "reversed_dims", "movedim", "expand", "cat", "stack", "hstack", "vstack", "split", "unbind", "narrow",
               "flip", "fliplr", "flipud", "roll", "repeat", "tile", "repeat_interleave", "tril", "triu", "diagonal",
               "diag", "getitem", "gather", "index_select", "index_add", "scatter_add", "masked_fill", "masked_select",
               "take", "cumsum", "clone", "conversion")
for _name in _SHAPE_ONLY:
    getattr(rules, _name).shape_only = True


def _rule(name):
    return getattr(rules, _ALIASES.get(name, name))


def _install_functions(namespace, wrapped):
    for name in _OTHERS + tuple(_ALIASES):
        original = getattr(namespace, name, None)
        if original is None:
            continue
        function = differentiable(name, original, _rule(name), is_view=name in _VIEWS)
        wrapped[name] = function
        setattr(namespace, name, function)


def _install_methods(wrapped):
    for name in _OTHERS + tuple(_ALIASES) + tuple(_METHOD_ONLY):
        original = Tensor.__dict__.get(name)
        if original is None or isinstance(original, property):
            continue
        rule = getattr(rules, _METHOD_ONLY.get(name, _ALIASES.get(name, name)), None) or rules.reshape
        setattr(GradTensor, name, differentiable(name, original, rule, is_view=name in _VIEWS))
    for name in _CONVERSIONS:
        setattr(GradTensor, name, differentiable(name, Tensor.__dict__[name], rules.conversion))
    for operator, op_name in _OPERATORS.items():
        rule = getattr(rules, op_name)
        setattr(GradTensor, f"__{operator}__", differentiable(op_name, Tensor.__dict__[f"__{operator}__"], rule))
        setattr(GradTensor, f"__r{operator}__",
                differentiable(op_name, Tensor.__dict__[f"__r{operator}__"], rules.reflected(rule)))
    GradTensor.__getitem__ = differentiable("select", Tensor.__dict__["__getitem__"], rules.getitem, is_view=True)
    GradTensor.T = property(differentiable("permute", Tensor.T.fget, rules.reversed_dims, is_view=True))
    GradTensor.mT = property(differentiable("transpose", Tensor.mT.fget, rules.matrix_transpose, is_view=True))


def _index_put(self, key, value):
    result = self.detach().clone()
    result[key] = value.detach() if isinstance(value, Tensor) else value
    return result


def _index_put_rule(ctx, g):
    x, key, value = ctx.args[:3]
    grad_x = g.clone()
    grad_x[key] = 0
    return rules.fit(grad_x, x), None, rules.fit(g[key] if isinstance(value, Tensor) else None, value)


_index_put_rule.shape_only = True


def _overwritten(make):
    """The out-of-place form of an op that replaces every element of ``self`` (fill_, copy_, uniform_...)."""
    def forward(self, *args, **kwargs):
        return make(self.detach().clone(), *args, **kwargs)
    return forward


def _overwrite_rule(ctx, g):
    source = ctx.args[1] if len(ctx.args) > 1 else None
    grad_source = None
    if isinstance(source, Tensor):
        grad_source = rules.fit(g if source.numel() != 1 or source.shape == g.shape else g.sum(), source)
    return rules.fit(g * 0, ctx.args[0]), grad_source


_overwrite_rule.shape_only = True


def _install_inplace(wrapped):
    inplace = {name + "_": name for name in ("masked_fill", "scatter", "scatter_add", "index_add")}
    for method_name, op_name in inplace.items():
        original = Tensor.__dict__.get(method_name)
        function = wrapped.get(op_name) or GradTensor.__dict__.get(op_name)
        if original is not None and function is not None:
            setattr(GradTensor, method_name, differentiable_inplace(method_name, original, function))
    for method_name in ("fill_", "zero_", "copy_", "uniform_", "normal_"):
        original = Tensor.__dict__.get(method_name)
        if original is None:
            continue
        out_of_place = differentiable(method_name.rstrip("_"), _overwritten(original), _overwrite_rule)
        setattr(GradTensor, method_name, differentiable_inplace(method_name, original, out_of_place))
    index_put = differentiable("index_put", _index_put, _index_put_rule)
    setitem_inplace = differentiable_inplace("__setitem__", Tensor.__dict__["__setitem__"], index_put)

    def setitem(self, key, value):
        setitem_inplace(self, key, value)

    GradTensor.__setitem__ = setitem


_TENSOR_ARGUMENT_METHODS = ("matmul", "mm", "bmm", "mv", "dot", "inner", "outer",
                                       "masked_fill", "scatter", "scatter_add", "index_add")


def _routing_to_recorder(original, recorder):
    """A plain Tensor method that hands calls with an argument requiring grad to GradTensor's recording method
    (``x.matmul(w)`` must record when ``w`` requires grad); other calls run the original directly."""
    def method(self, *args, **kwargs):
        for arg in args:
            if isinstance(arg, GradTensor):
                return recorder(self, *args, **kwargs)
        for arg in kwargs.values():
            if isinstance(arg, GradTensor):
                return recorder(self, *args, **kwargs)
        return original(self, *args, **kwargs)
    method.__name__ = original.__name__
    method.__doc__ = original.__doc__
    return method


def _install_plain_routing():
    names = _TENSOR_ARGUMENT_METHODS + tuple(name + "_" for name in _TENSOR_ARGUMENT_METHODS) + (
        "copy_", "fill_", "__setitem__")
    for name in names:
        original = Tensor.__dict__.get(name)
        recorder = GradTensor.__dict__.get(name)
        if original is not None and recorder is not None:
            setattr(Tensor, name, _routing_to_recorder(original, recorder))


def _with_requires_grad(factory):
    def make(*args, requires_grad=False, **kwargs):
        tensor = factory(*args, **kwargs)
        return tensor.requires_grad_() if requires_grad else tensor
    make.__name__ = factory.__name__
    make.__doc__ = factory.__doc__
    make.__wrapped__ = factory
    return make


def _install_factories(namespace):
    for name in _FACTORIES + _RANDOM_FACTORIES:
        original = getattr(namespace, name, None)
        if original is not None:
            setattr(namespace, name, _with_requires_grad(original))


def install(namespace):
    """Make ``namespace``'s (the agnostic module's) functions and GradTensor's methods record gradients."""
    rules.A = namespace
    wrapped = {}
    _install_functions(namespace, wrapped)
    _install_methods(wrapped)
    _install_inplace(wrapped)
    _install_plain_routing()
    _install_factories(namespace)
