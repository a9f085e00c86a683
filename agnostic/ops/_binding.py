"""Binding a call's arguments to a forward's parameter names, once per recorded call and without ``inspect``'s
per-call work (``_registry.Composite``)."""

import functools
import inspect


class Binding:
    """A forward's parameters sorted once by how they are passed, to bind a call's arguments to their names and to
    call the forward again with them, without ``inspect``'s per-call work."""

    def __init__(self, signature):
        kind = inspect.Parameter
        parameters = signature.parameters.values()
        self.signature = signature
        self.positional = tuple(p.name for p in parameters
                                if p.kind in (kind.POSITIONAL_ONLY, kind.POSITIONAL_OR_KEYWORD))
        self.variadic = next((p.name for p in parameters if p.kind is kind.VAR_POSITIONAL), None)
        self.keyword_only = tuple(p.name for p in parameters if p.kind is kind.KEYWORD_ONLY)
        self.var_keyword = next((p.name for p in parameters if p.kind is kind.VAR_KEYWORD), None)
        self.by_keyword = frozenset(p.name for p in parameters if p.kind in (kind.POSITIONAL_OR_KEYWORD,
                                                                                 kind.KEYWORD_ONLY))
        self.defaults = {p.name: p.default for p in parameters if p.default is not p.empty}
        self.count = len(signature.parameters)
        self.names = tuple(name for name in signature.parameters if name != "out")  # what a node records
        # The common call, by position only: its values are the arguments, then the declared defaults.
        self.by_position = self.var_keyword is None and "out" not in signature.parameters
        self.required = sum(1 for p in parameters if p.default is p.empty and p.kind is not kind.KEYWORD_ONLY)
        self.default_values = tuple(self.defaults.get(name) for name in self.names)

    def bind(self, args, kwargs):
        """``{name: value}`` of every parameter, defaults filled in. A variadic parameter given one sequence holds its
        items, as PyTorch's ``*dims`` take either form (``permute(x, 1, 0)``, ``permute(x, (1, 0))``), or by name
        (``permute(x, dims=(1, 0))``)."""
        if self.variadic is not None and self.var_keyword is None and self.variadic in kwargs:
            args, kwargs = self.variadic_by_position(args, kwargs)
        positional = self.positional
        if self.var_keyword is None and (self.variadic is not None or len(args) <= len(positional)):
            arguments = dict(zip(positional, args))
            if self.variadic is not None:
                arguments[self.variadic] = self._items(args[len(positional):])
            for name, value in kwargs.items():
                if name in arguments or name not in self.by_keyword:
                    break
                arguments[name] = value
            else:
                for name, default in self.defaults.items():
                    arguments.setdefault(name, default)
                if len(arguments) == self.count:
                    return arguments
        bound = self.signature.bind(*args, **kwargs)  # Python's TypeError for a call that doesn't fit
        bound.apply_defaults()
        arguments = bound.arguments
        if self.variadic is not None:
            arguments[self.variadic] = self._items(arguments[self.variadic])
        return arguments

    def values(self, args, kwargs):
        """The call's value of each parameter (but ``out``), in order: what a node records."""
        if not kwargs and self.by_position:
            count = len(self.positional)
            if self.variadic is None:
                if self.required <= len(args) <= count:
                    return tuple(args) + self.default_values[len(args):]
            elif len(args) >= count:
                return tuple(args[:count]) + (self._items(args[count:]),) + self.default_values[count + 1:]
        arguments = self.bind(args, kwargs)
        return tuple([arguments[name] for name in self.names])

    def variadic_by_position(self, args, kwargs, op="the op"):
        """``(args, kwargs)`` of a call that gave the variadic parameter by name (``kwargs[variadic]``: one sequence),
        as the forward takes it: after the positional arguments (which may be given by name too)."""
        kwargs = dict(kwargs)
        value = kwargs.pop(self.variadic)
        if len(args) > len(self.positional):
            raise TypeError(f"{op}() got multiple values for argument '{self.variadic}'")
        missing = [name for name in self.positional[len(args):] if name not in kwargs]
        if missing:
            raise TypeError(f"{op}() missing required argument '{missing[0]}'")
        args = tuple(args) + tuple(kwargs.pop(name) for name in self.positional[len(args):]) + (value,)
        return args, kwargs

    @staticmethod
    def _items(values):
        return tuple(values[0]) if len(values) == 1 and isinstance(values[0], (list, tuple)) else values

    def call(self, function, arguments):
        """``function(...)`` with ``arguments`` (by name) passed as the forward takes them."""
        args = [arguments[name] for name in self.positional]
        if self.variadic is not None:
            args.extend(arguments[self.variadic])
        kwargs = {name: arguments[name] for name in self.keyword_only if name in arguments}
        if self.var_keyword is not None:
            kwargs.update(arguments[self.var_keyword])
        return function(*args, **kwargs)


def size_by_name(factory):
    """``factory(*size, ...)`` (``zeros``, ``randn``...) that also takes ``size=`` as one sequence, as PyTorch's
    factories do (``agnostic.zeros(size=(2, 3))``).

        >>> agnostic.zeros(size=(2, 3)).shape
        agnostic.Size([2, 3])
    """
    return variadic_by_name(factory, Binding(inspect.signature(factory)), factory.__name__)


def variadic_by_name(forward, binding, op):
    """``forward``, whose variadic parameter (``*dims``, ``*shape``) can also be given by name, as one sequence, as
    PyTorch's sizes can (``x.flip(dims=[0])``, ``agnostic.reshape(x, shape=(2, 3))``); ``forward`` itself where it has
    none, or takes ``**kwargs`` (which receive every name).

        >>> agnostic.ones(2, 3).permute(dims=(1, 0)).shape
        agnostic.Size([3, 2])
    """
    variadic = binding.variadic
    if variadic is None or binding.var_keyword is not None:
        return forward

    @functools.wraps(forward)
    def call(*args, **kwargs):
        if variadic in kwargs:
            args, kwargs = binding.variadic_by_position(args, kwargs, op)
        return forward(*args, **kwargs)
    return call
