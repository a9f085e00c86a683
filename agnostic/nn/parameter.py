"""Parameter: a leaf tensor that a Module registers as one of its learnable weights."""

from .._tensor_classes import GradTensor, Tensor
from ..autograd import make_leaf
from ..ops.creation import empty


class Parameter(GradTensor):
    """A tensor that is a module parameter, as ``torch.nn.Parameter``: assigning one to a Module attribute
    registers it. ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory (an empty tensor when
    None) and is a leaf.

        >>> weight = agnostic.nn.Parameter(agnostic.zeros(2))
        >>> weight
        Parameter containing:
        tensor([0., 0.], requires_grad=True)
        >>> weight.requires_grad, weight.is_leaf
        (True, True)
        >>> layer = agnostic.nn.Module()
        >>> layer.scale = agnostic.nn.Parameter(agnostic.ones(1))
        >>> list(layer.state_dict())
        ['scale']
    """

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): data must be a Tensor, got {type(data).__name__}")
        return make_leaf(_plain(data), cls=cls, requires_grad=requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass  # everything happens in __new__; Tensor.__init__ must not run

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__

    def __deepcopy__(self, memo):
        found = memo.get(id(self))
        if found is None:
            found = memo[id(self)] = type(self)(_plain(self).clone(), self.requires_grad)
        return found

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (type(self), _plain(self), self.requires_grad))


def _plain(tensor):
    """The tensor's data as a plain Tensor (no autograd history), sharing memory."""
    return tensor.detach() if isinstance(tensor, GradTensor) else tensor


def _rebuild_parameter(cls, data, requires_grad):
    return cls(data, requires_grad)


__all__ = ["Parameter"]
