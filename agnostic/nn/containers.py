"""Containers: Sequential (chains modules), ModuleList and ModuleDict (hold registered modules), ParameterList and
ParameterDict (hold registered parameters)."""

import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from itertools import chain, islice

from .._tensor_classes import Tensor
from .module import Module, _addindent
from .parameter import Parameter


def _renumbered(modules):
    return OrderedDict((str(i), module) for i, module in enumerate(modules.values()))


class Sequential(Module):
    """Modules applied in order: ``Sequential(a, b)(x) == b(a(x))``; also ``Sequential(OrderedDict(...))``
    for named children. Indexing with a slice gives a Sequential.

        >>> model = agnostic.nn.Sequential(agnostic.nn.Linear(3, 4), agnostic.nn.ReLU(), agnostic.nn.Linear(4, 1))
        >>> model(agnostic.ones(2, 3)).shape
        agnostic.Size([2, 1])
        >>> model[1], len(model), type(model[:2]).__name__
        (ReLU(), 3, 'Sequential')
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for index, module in enumerate(args):
                self.add_module(str(index), module)

    def _item_by_index(self, iterator, index):
        size = len(self)
        index = operator.index(index)
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of range")
        return next(islice(iterator, index % size, None))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(OrderedDict(list(self._modules.items())[index]))
        return self._item_by_index(self._modules.values(), index)

    def __setitem__(self, index, module):
        setattr(self, self._item_by_index(self._modules.keys(), index), module)

    def __delitem__(self, index):
        if isinstance(index, slice):
            for key in list(self._modules)[index]:
                delattr(self, key)
        else:
            delattr(self, self._item_by_index(self._modules.keys(), index))
        self._modules = _renumbered(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        combined = Sequential()
        for layer in chain(self, other):
            combined.append(layer)
        return combined

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        offset = len(self)
        for index, module in enumerate(other):
            self.add_module(str(index + offset), module)
        return self

    def __mul__(self, times):
        if not isinstance(times, int):
            raise TypeError(f"unsupported operand type(s) for *: {type(self)} and {type(times)}")
        if times <= 0:
            raise ValueError(f"Non-positive multiplication factor {times} for {type(self)}")
        combined = Sequential()
        for module in list(self) * times:
            combined.append(module)
        return combined

    __rmul__ = __mul__

    def pop(self, key):
        """Remove and return the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def append(self, module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``; returns ``self``."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        size = len(self._modules)
        if not -size <= index <= size:
            raise IndexError(f"Index out of range: {index}")
        index = index + size if index < 0 else index
        for i in range(size, index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module
        return self

    def extend(self, sequential):
        """Append every module of ``sequential``; returns ``self``."""
        for layer in sequential:
            self.append(layer)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of registered modules (indexable, iterable, appendable); slicing gives a ModuleList.

        >>> layers = agnostic.nn.ModuleList([agnostic.nn.Linear(2, 2) for _ in range(3)])
        >>> layers.append(agnostic.nn.Identity())
        ModuleList(
          (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)
          (3): Identity()
        )
        >>> len(layers), len(list(layers.parameters()))
        (4, 6)
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _key(self, index):
        index = operator.index(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)(list(self._modules.values())[index])
        return self._modules[self._key(index)]

    def __setitem__(self, index, module):
        setattr(self, self._key(index), module)

    def __delitem__(self, index):
        if isinstance(index, slice):
            for k in range(len(self._modules))[index]:
                delattr(self, str(k))
        else:
            delattr(self, self._key(index))
        self._modules = _renumbered(self._modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        combined = ModuleList()
        for index, module in enumerate(chain(self, other)):
            combined.add_module(str(index), module)
        return combined

    def insert(self, index, module):
        """Insert ``module`` before position ``index``."""
        for i in range(len(self._modules), index, -1):
            self._modules[str(i)] = self._modules[str(i - 1)]
        self._modules[str(index)] = module

    def append(self, module):
        """Add ``module`` at the end; returns ``self``."""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def extend(self, modules):
        """Append every module of the iterable ``modules``; returns ``self``."""
        if not isinstance(modules, Iterable):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for index, module in enumerate(modules):
            self.add_module(str(offset + index), module)
        return self

    def __repr__(self):
        """Runs of identical modules print once, as ``(0-2): 3 x Linear(...)`` (PyTorch's compressed form)."""
        reprs = [repr(module) for module in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []  # [start, end, repr]
        for index, text in enumerate(reprs):
            if blocks and blocks[-1][2] == text:
                blocks[-1][1] = index
            else:
                blocks.append([index, index, text])
        lines = []
        for start, end, text in blocks:
            line = f"({start}): {text}" if start == end else f"({start}-{end}): {end - start + 1} x {text}"
            lines.append(_addindent(line, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """An ordered dict of registered modules (``[]``, ``in``, ``keys``/``values``/``items``, ``update``).

        >>> heads = agnostic.nn.ModuleDict({"cls": agnostic.nn.Linear(4, 3), "box": agnostic.nn.Linear(4, 4)})
        >>> list(heads.keys()), "cls" in heads
        (['cls', 'box'], True)
        >>> heads["box"](agnostic.ones(1, 4)).shape
        agnostic.Size([1, 4])
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()

    def pop(self, key):
        """Remove and return the module at ``key``."""
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of ``(key, module)`` pairs (overwriting existing keys)."""
        if isinstance(modules, (OrderedDict, ModuleDict, Mapping)):
            for key, module in modules.items():
                self[key] = module
            return
        for index, pair in enumerate(modules):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{index} should be a (key, module) pair")
            self[pair[0]] = pair[1]


def _entry_lines(entries, tensor_kind):
    """PyTorch's repr lines of a parameter container: ``  (key): Parameter containing: [<kind> of size 2x3]``."""
    lines = []
    for key, value in entries:
        if isinstance(value, Tensor):
            size = "x".join(str(n) for n in value.shape)
            where = f" ({value.device})" if value.is_cuda else ""
            kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
            lines.append(f"  ({key}): {kind} containing: [{tensor_kind(value)} of size {size}{where}]")
        else:
            lines.append(f"  ({key}): Object of type: {type(value).__name__}")
    return "\n".join(lines)


def _as_parameter(value):
    return Parameter(value) if isinstance(value, Tensor) and not isinstance(value, Parameter) else value


class ParameterList(Module):
    """A list of registered parameters (tensors are wrapped in ``Parameter``; other objects are kept as
    attributes). ``state_dict`` keys are the positions.

        >>> params = agnostic.nn.ParameterList([agnostic.nn.Parameter(agnostic.zeros(2, 3))])
        >>> params.append(agnostic.ones(4))
        ParameterList(
            (0): Parameter containing: [agnostic.float32 of size 2x3]
            (1): Parameter containing: [agnostic.float32 of size 4]
        )
        >>> list(params.state_dict()), params[1].requires_grad
        (['0', '1'], True)
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _key(self, index):
        index = operator.index(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"index {index} is out of range")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            sliced = type(self)()
            for position in range(*index.indices(len(self))):
                sliced.append(self[position])
            return sliced
        return getattr(self, self._key(index))

    def __setitem__(self, index, value):
        setattr(self, self._key(index), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return iter(self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value):
        """Add ``value`` at the end (a tensor becomes a Parameter); returns ``self``."""
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        """Append every value of the iterable ``values``; returns ``self``."""
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError("ParameterList.extend should be called with an iterable, but got "
                            + type(values).__name__)
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return _entry_lines(enumerate(self), lambda tensor: str(tensor.dtype))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of registered parameters (tensors are wrapped in ``Parameter``), with the dict methods
    (``keys``/``values``/``items``, ``update``, ``pop``, ``get``, ``setdefault``, ``|``). A plain ``dict`` given to
    the constructor or ``update`` is added in sorted key order, as PyTorch does.

        >>> params = agnostic.nn.ParameterDict({"scale": agnostic.ones(2), "bias": agnostic.zeros(2)})
        >>> params
        ParameterDict(
            (bias): Parameter containing: [agnostic.FloatTensor of size 2]
            (scale): Parameter containing: [agnostic.FloatTensor of size 2]
        )
        >>> list(params.state_dict()), "scale" in params
        (['bias', 'scale'], True)
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _attribute(key):
        if not isinstance(key, str):
            raise TypeError(f"Index given to ParameterDict cannot be used as a key as it is not a string (type is "
                            f"'{type(key).__name__}'). Open an issue on github if you need non-string keys.")
        return key

    def __getitem__(self, key):
        return getattr(self, self._attribute(key))

    def __setitem__(self, key, value):
        self._keys[key] = None
        setattr(self, self._attribute(key), _as_parameter(value))

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, self._attribute(key))

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def copy(self):
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(OrderedDict((key, self[key]) for key in self._keys))

    def setdefault(self, key, default=None):
        """``self[key]``, first set to ``default`` if ``key`` is absent."""
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self):
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def pop(self, key):
        """Remove ``key`` and return its value."""
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        """Remove and return the last ``(key, value)`` pair."""
        key = next(reversed(self._keys))
        return key, self.pop(key)

    def get(self, key, default=None):
        """``self[key]`` if present, else ``default``."""
        return self[key] if key in self else default

    def fromkeys(self, keys, default=None):
        """A new ParameterDict with each of ``keys`` set to ``default``."""
        return ParameterDict((key, default) for key in keys)

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((key, self[key]) for key in self._keys)

    def values(self):
        return (self[key] for key in self._keys)

    def update(self, parameters):
        """Add entries from an OrderedDict or ParameterDict (in order), another mapping (sorted by key) or an
        iterable of ``(key, value)`` pairs, overwriting existing keys."""
        if not isinstance(parameters, Iterable):
            raise TypeError("ParametersDict.update should be called with an iterable of key/value pairs, but got "
                            + type(parameters).__name__)
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for index, pair in enumerate(parameters):
                if not isinstance(pair, Iterable):
                    raise TypeError(f"ParameterDict update sequence element #{index} should be Iterable; is"
                                    + type(pair).__name__)
                if len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{index} has length {len(pair)}; 2 is "
                                     "required")
                pairs.append(tuple(pair))
        for key, value in pairs:
            self[key] = value

    def extra_repr(self):
        return _entry_lines(self.items(), lambda tensor: tensor.type())

    def __call__(self, input):
        raise RuntimeError("ParameterDict should not be called.")

    def __or__(self, other):
        combined = self.copy()
        combined.update(other)
        return combined

    def __ror__(self, other):
        combined = other.copy()
        combined.update(self)
        return combined

    def __ior__(self, other):
        self.update(other)
        return self


__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]
