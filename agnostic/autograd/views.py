"""Views and autograd: what a view knows of its base, how its ``grad_fn`` is made again after its base changed in
place, and the gradient of an in-place change made through a view (PyTorch's CopySlices)."""

from .._tensor import TensorBase, wrap
from .grad_mode import _state as _grad_state


class View:
    """What a view knows of where it comes from (``tensor.__dict__["_view"]``): its ``base`` (the tensor that owns the
    memory, never itself a view), the ``steps`` that make it again from the base, the base's version when its
    ``grad_fn`` was made (``version``), and why recorded in-place changes of it are refused, if they are (``refusal``:
    ``MULTIPLE`` for an output of an op that returns several views, ``NO_GRAD`` for one made under ``no_grad``).

    Views share their base's version counter (``_version``), so changing either in place is seen by every node that
    saved the other; a view whose base changed in place gets its ``grad_fn`` made again from the base when next used.

        >>> y = agnostic.ones(3, requires_grad=True) * 2
        >>> v = y[1:]
        >>> v.mul_(3)
        tensor([6., 6.], grad_fn=<SliceBackward0>)
        >>> y.grad_fn, y._version == v._version == 1
        (<CopySlices object at 0x...>, True)
    """

    __slots__ = ("base", "steps", "version", "refusal")

    def __init__(self, base, steps, version, refusal=None):
        self.base = base
        self.steps = steps
        self.version = version
        self.refusal = refusal

    def refresh(self, tensor):
        """Make ``tensor``'s ``grad_fn`` (this is its record) again from its base's current history."""
        base = self.base
        self.version = base._version
        if self.steps is None or not base._requires_grad:
            return
        previous = _grad_state.enabled
        _grad_state.enabled = True
        try:
            fresh = replayed(self.steps, base)
        finally:
            _grad_state.enabled = previous
        if fresh._grad_fn is None:
            return
        move_retained(tensor, fresh._grad_fn, fresh._output_nr)
        if not isinstance(tensor, TensorBase.recording):
            tensor.__class__ = TensorBase.recording
        tensor.__dict__.update(_requires_grad=True, _grad_fn=fresh._grad_fn, _output_nr=fresh._output_nr)


def mark_views(source, output, replay, rest, node_name, recorded=True):
    """Make the outputs of a view op on ``source`` views of its base: ``replay(values)`` (the op called on
    ``[tensor, *rest]``) makes one again. Outputs that don't share ``source``'s memory (a reshape that had to copy)
    stay tensors of their own; ``recorded`` is false for views made without recording (under ``no_grad``)."""
    if not isinstance(source, TensorBase):
        return
    outputs = [output] if isinstance(output, TensorBase) else list(output)
    parent = source.__dict__.get("_view")
    base = source if parent is None else parent.base
    inherited = None if parent is None else parent.refusal
    steps = None if parent is None else parent.steps
    if parent is None and replay is not None:
        steps = ()
    xp = source._device.backend.xp
    for number, tensor in enumerate(outputs):
        if not isinstance(tensor, TensorBase) or not xp.may_share_memory(tensor._data, source._data):
            continue
        refusal = inherited or (MULTIPLE if tensor is not output else NO_GRAD if not recorded else None)
        own_steps = None if steps is None or replay is None else \
            steps + ((replay, tuple(rest), None if tensor is output else number),)
        tensor.__dict__["_view"] = View(base, own_steps, base._version, refusal)
        tensor.__dict__["_is_view"] = True


MULTIPLE, NO_GRAD = "multiple", "no_grad"  # why in-place changes of a view are refused


def refusal_message(tensor, refusal):
    """PyTorch's error for an in-place change of a view that it refuses to record."""
    if refusal == MULTIPLE:
        node = tensor._grad_fn
        name = node.name().removesuffix("Backward0") if node is not None else "a view function"
        return (f"Output {tensor._output_nr} of {name} is a view and is being modified inplace. This view is the "
                "output of a function that returns multiple views. Such functions do not allow the output views to "
                "be modified inplace. You should replace the inplace operation by an out-of-place one.")
    return ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
            "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both "
            "the view and the inplace either both inside the no_grad block (if you don't want the inplace to be "
            "tracked) or both outside (if you want the inplace to be tracked).")


def replayed(steps, tensor):
    """The view ``steps`` applied to ``tensor`` (a base, or a tensor shaped and laid out like it)."""
    for replay, rest, number in steps:
        tensor = replay([tensor, *rest])
        if number is not None:
            tensor = tensor[number]
    return tensor


def move_retained(tensor, node, output_nr):
    """``retain_grad`` follows a tensor to its new ``grad_fn`` (its other hooks stay with the old one, as in
    PyTorch)."""
    old = tensor._grad_fn
    retained = old.retained_outputs if old is not None else None
    reference = retained.get(tensor._output_nr) if retained else None
    if reference is None or reference() is not tensor:
        return
    del retained[tensor._output_nr]
    if node.retained_outputs is None:
        node.retained_outputs = {}
    node.retained_outputs[output_nr] = reference


def copy_slices_rule(context, grad):
    """The gradient through an in-place change of a view (``context.saved``: the view's steps and the base's
    strides): the view's region goes to the in-place op's result, the rest to the base's earlier history."""
    steps, strides = context.saved
    if grad.stride() != strides:
        grad = _laid_out(grad, strides)
    device = grad._device
    with device.backend.activate():
        untouched = wrap(device.backend.xp.ones_like(grad._data, dtype=bool), device)
    replayed(steps, untouched).fill_(False)
    return grad.masked_fill(untouched.logical_not(), 0), replayed(steps, grad)


def _laid_out(tensor, strides):
    """``tensor``'s values with the base's memory layout (its dimensions in the order of the base's strides), so that
    the view steps recorded on the base (``view`` among them) apply to it as they did to the base."""
    order = sorted(range(tensor.ndim), key=lambda dim: -strides[dim])
    inverse = sorted(range(tensor.ndim), key=order.__getitem__)
    return tensor.permute(order).contiguous().permute(inverse)
