"""Parameter and Buffer, the tensors a Module registers on assignment, and the uninitialized kinds lazy modules
hold until their first input gives them a shape."""

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


class _BufferMeta(type):
    """``isinstance(t, Buffer)`` holds for any tensor that ``Buffer(...)`` marked, as PyTorch's."""

    def __instancecheck__(cls, instance):
        if cls is Buffer and isinstance(instance, Tensor) and instance.__dict__.get("_is_buffer", False):
            return True
        return super().__instancecheck__(instance)


class Buffer(Tensor, metaclass=_BufferMeta):
    """A tensor that a Module registers as a buffer (state that is not a parameter, such as running statistics)
    when assigned to one of its attributes, as ``torch.nn.Buffer``; ``persistent=False`` keeps it out of
    ``state_dict``. ``Buffer(data)`` returns ``data`` detached (sharing memory) and marked, not a copy.

        >>> layer = agnostic.nn.Module()
        >>> layer.counts = agnostic.nn.Buffer(agnostic.zeros(2))
        >>> layer.scratch = agnostic.nn.Buffer(agnostic.ones(1), persistent=False)
        >>> [name for name, _ in layer.named_buffers()], list(layer.state_dict())
        (['counts', 'scratch'], ['counts'])
    """

    __slots__ = ()

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        elif not isinstance(data, Tensor):
            raise TypeError(f"Buffer(): data must be a Tensor, got {type(data).__name__}")
        marked = data.detach().requires_grad_(data.requires_grad)
        marked.__dict__["persistent"] = persistent
        marked.__dict__["_is_buffer"] = True
        return marked


class _Uninitialized:
    """What uninitialized parameters and buffers share: no shape until ``materialize`` gives one, after which the
    object (the same one, so optimizers and modules holding it see the change) becomes ``cls_to_become``."""

    __slots__ = ()
    cls_to_become: type

    def materialize(self, shape, device=None, dtype=None):
        """Give this tensor uninitialized memory of ``shape`` (on its own device and dtype unless given) and turn
        it into a ``cls_to_become`` (Parameter or Tensor)."""
        self.data = empty(tuple(shape), device=self.device if device is None else device,
                          dtype=self.dtype if dtype is None else dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually "
                           "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
                           "initialized one. Call `forward` to initialize the parameters before accessing their "
                           "attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to initialize "
                           "the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    __str__ = __repr__

    def __deepcopy__(self, memo):
        found = memo.get(id(self))
        if found is None:
            found = memo[id(self)] = type(self)(self.requires_grad, self.device, self.dtype)
        return found

    def __reduce_ex__(self, protocol):
        return (type(self), (self.requires_grad,))


class UninitializedParameter(_Uninitialized, Parameter):
    """A parameter whose shape is not known yet, as ``torch.nn.UninitializedParameter``: lazy modules hold these
    until their first forward, when ``materialize(shape)`` turns them into ordinary Parameters (the same objects).

        >>> weight = agnostic.nn.UninitializedParameter()
        >>> weight
        <UninitializedParameter>
        >>> weight.materialize((2, 3))
        >>> type(weight).__name__, weight.shape
        ('Parameter', agnostic.Size([2, 3]))
    """

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return make_leaf(empty(0, device=device, dtype=dtype), cls=cls, requires_grad=requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer whose shape is not known yet, as ``torch.nn.UninitializedBuffer``: ``materialize(shape)`` turns it
    into an ordinary tensor (the same object).

        >>> running_mean = agnostic.nn.UninitializedBuffer()
        >>> running_mean.materialize((3,))
        >>> type(running_mean).__name__, running_mean.shape
        ('Tensor', agnostic.Size([3]))
    """

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        if requires_grad:
            raise NotImplementedError("UninitializedBuffer(requires_grad=True) is not supported; use an "
                                      "UninitializedParameter for a tensor that needs gradients")
        buffer = empty(0, device=device, dtype=dtype)
        buffer.__class__ = cls
        return buffer

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass


def is_lazy(tensor):
    """Whether ``tensor`` is an UninitializedParameter or UninitializedBuffer (its shape still unknown)."""
    return isinstance(tensor, _Uninitialized)


__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter"]
