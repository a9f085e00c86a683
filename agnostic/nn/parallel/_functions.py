"""The differentiable copies between devices that DataParallel is made of: Broadcast, ReduceAddCoalesced, Scatter,
Gather (PyTorch's ``torch/nn/parallel/_functions.py``): each one's backward moves the gradients the opposite way."""

import warnings

from ... import ops
from ...autograd import Function
from ...cuda import comm


def _copy_to(tensor, device):
    """``tensor`` on ``device``: a fresh tensor object even on its own device, so recording it leaves the input's
    history alone."""
    moved = tensor.to(device, non_blocking=not device.backend.host)  # to the host: a finished copy, not in flight
    return moved.detach() if moved is tensor else moved


def _summed_on(tensors, device):
    total = None
    for tensor in tensors:
        if tensor is None:
            continue
        moved = tensor.to(device)
        total = moved.clone() if total is None else total.add_(moved)
    return total


def _between_gpus(devices, tensors):
    """True when ``tensors`` all live on ``devices[0]`` and every device is a distinct GPU: then the copies and sums
    go through ``cuda.comm``'s coalesced collectives (NCCL where CuPy has it), as PyTorch's DataParallel does."""
    return (len(set(devices)) == len(devices) and not any(device.backend.host for device in devices)
            and all(tensor is not None and tensor.device == devices[0] for tensor in tensors))


def _broadcast(tensors, devices):
    """Every tensor copied to each device, device by device; on ``devices[0]`` fresh tensors of the inputs."""
    if tensors and _between_gpus(devices, tensors):
        copies = comm.broadcast_coalesced(tensors, devices)
        copies[0] = [tensor.detach() for tensor in copies[0]]
        return tuple(tensor for on_device in copies for tensor in on_device)
    return tuple(_copy_to(tensor, device) for device in devices for tensor in tensors)


def _reducible_between_gpus(groups, sources, destinations):
    """True when each group of gradients lives on its own GPU (``sources``, all distinct) and every sum goes to one
    of them: then ``cuda.comm.reduce_add_coalesced`` sums them, as in PyTorch's DataParallel."""
    return (len(set(destinations)) == 1 and destinations[0] in sources and _between_gpus(sources, [])
            and all(_between_gpus([source], group) for source, group in zip(sources, groups)))


class Broadcast(Function):
    """``Broadcast.apply(devices, *tensors)``: a copy of every tensor on each device, flattened device by device;
    backward sums each tensor's gradients from all devices onto the tensor's own device."""

    @staticmethod
    def forward(ctx, devices, *inputs):
        ctx.devices = list(devices)
        ctx.input_devices = [tensor.device for tensor in inputs]
        ctx.count = len(inputs)
        return _broadcast(inputs, ctx.devices)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None,) + ReduceAddCoalesced.apply(ctx.input_devices, ctx.count, *grad_outputs)


class ReduceAddCoalesced(Function):
    """``ReduceAddCoalesced.apply(destinations, count, *grads)``: ``grads`` hold ``count`` tensors per device; the
    sum over devices of each position, on ``destinations[position]``; backward broadcasts them back."""

    @staticmethod
    def forward(ctx, destinations, count, *grads):
        groups = [grads[i:i + count] for i in range(0, len(grads), count)]
        ctx.source_devices = [group[0].device for group in groups]
        if _reducible_between_gpus(groups, ctx.source_devices, destinations):
            return comm.reduce_add_coalesced(groups, destinations[0])
        return tuple(_summed_on([group[position] for group in groups], destinations[position])
                     for position in range(count))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None) + Broadcast.apply(ctx.source_devices, *grad_outputs)


class Scatter(Function):
    """``Scatter.apply(devices, chunk_sizes, dim, input)``: ``input`` split along ``dim`` (into equal chunks, or
    ``chunk_sizes``), piece i on ``devices[i]`` (fewer pieces when ``input`` is shorter than the device list);
    backward concatenates the pieces' gradients on the input's device."""

    @staticmethod
    def forward(ctx, devices, chunk_sizes, dim, input):
        ctx.dim = dim
        ctx.input_device = input.device
        if chunk_sizes is None:
            pieces = ops.shape.chunk(input, len(devices), dim)
        else:
            pieces = ops.shape.split(input, list(chunk_sizes), dim)
        return tuple(_copy_to(piece, device) for piece, device in zip(pieces, devices))

    @staticmethod
    def backward(ctx, *grad_outputs):
        return None, None, None, Gather.apply(ctx.input_device, ctx.dim, *grad_outputs)


class Gather(Function):
    """``Gather.apply(target_device, dim, *inputs)``: the inputs concatenated along ``dim`` on ``target_device``
    (0-dim inputs become a vector, with PyTorch's warning); backward sends each piece's gradient back."""

    @staticmethod
    def forward(ctx, target_device, dim, *inputs):
        ctx.target_device = target_device
        ctx.input_devices = [tensor.device for tensor in inputs]
        ctx.unsqueezed_scalars = all(tensor.dim() == 0 for tensor in inputs)
        if ctx.unsqueezed_scalars:
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                          "unsqueeze and return a vector.", stacklevel=2)
            inputs = tuple(tensor.reshape(1) for tensor in inputs)
            dim = 0
        ctx.dim = dim
        ctx.sizes = [tensor.shape[dim] for tensor in inputs]
        return ops.shape.cat([_copy_to(tensor, target_device) for tensor in inputs], dim)

    @staticmethod
    def backward(ctx, grad_output):
        pieces = Scatter.apply(ctx.input_devices, ctx.sizes, ctx.dim, grad_output)
        if ctx.unsqueezed_scalars:
            pieces = tuple(piece.reshape(()) for piece in pieces)
        return (None, None) + tuple(pieces)
