"""How tensors (and CUDA events) cross process boundaries: the reducers ``multiprocessing`` pickles them with.

A CPU tensor travels as a handle to shared memory (moved there first, once), a CUDA tensor as a CUDA IPC handle;
the receiver gets a tensor of the same class, with the same ``__dict__`` (``requires_grad`` included), viewing the
same memory. As in PyTorch, autograd history, hooks and ``.grad`` stay behind, and a non-leaf tensor that requires
grad is refused.
"""

from multiprocessing.reduction import ForkingPickler

from .._device import CPU, Device
from .._tensor import subclass_hooks
from .._tensor_classes import Tensor
from . import cuda_ipc, sharing

# Autograd's bookkeeping, which means nothing in another process.
_NOT_SENT = frozenset({
    "_grad_fn", "_output_nr", "_is_view", "_hooks", "_accumulator", "_version", "_retains_grad", "grad",
    "_copy_done", "_view",
})


def reduce_tensor(tensor):
    """The reducer of ``Tensor`` and its subclasses."""
    array = tensor._data  # first: an in-flight host copy completes, and the tensor becomes a plain one
    state = _sent_state(tensor)
    if tensor._device.backend.host:
        return (rebuild_cpu_tensor, (type(tensor), sharing.export(tensor), state))
    return (rebuild_cuda_tensor, (type(tensor), cuda_ipc.export(array), state))


def _sent_state(tensor):
    state = tensor.__dict__
    if not state:
        return None
    if state.get("_grad_fn") is not None:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does not support "
            "crossing process boundaries.  If you just want to transfer the data, call detach() on the tensor "
            "before serializing (e.g., putting it on the queue)."
        )
    return {name: value for name, value in state.items() if name not in _NOT_SENT} or None


def rebuild_cpu_tensor(cls, handle, state):
    """A tensor of class ``cls`` over the shared memory ``handle`` describes."""
    return _make(cls, sharing.rebuild_array(handle), CPU, state)


def rebuild_cuda_tensor(cls, handle, state):
    """A tensor of class ``cls`` over the other process's GPU memory ``handle`` describes."""
    array, index = cuda_ipc.rebuild_array(handle)
    return _make(cls, array, Device("cuda", index), state)


def _make(cls, array, device, state):
    tensor = object.__new__(cls)
    tensor._data = array
    tensor._device = device
    if state:
        tensor.__dict__.update(state)
    return tensor


def register_tensor_class(cls):
    """Make ``cls`` (and its subclasses) travel through ``multiprocessing`` by shared memory.

        >>> import agnostic.multiprocessing as mp
        >>> class Image(agnostic.Tensor):
        ...     pass
        >>> mp.register_tensor_class(Image)
    """
    for klass in _with_subclasses(cls):
        ForkingPickler.register(klass, reduce_tensor)


def _with_subclasses(cls):
    found, todo = [], [cls]
    while todo:
        klass = todo.pop()
        if klass not in found:
            found.append(klass)
            todo.extend(klass.__subclasses__())
    return found


def init_reductions():
    """Register the reducers of Tensor, every subclass present and future (CUDA events register theirs where they
    are defined, ``agnostic.cuda.streams``)."""
    register_tensor_class(Tensor)
    subclass_hooks.append(register_tensor_class)  # ``ForkingPickler`` dispatches on the exact type
