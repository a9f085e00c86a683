"""torch.cuda.comm's collectives between the GPUs of one process: broadcast, reduce_add, scatter, gather."""

import warnings
from collections import defaultdict

from .. import _backend
from .._device import CPU, Device
from .._tensor import _normalize_dim, wrap
from ..ops.shape import chunk as _chunk, narrow as _narrow, split as _split
from ._devices import current_device
from .streams import StreamContext

_communicators: dict = {}
_UNSET = object()
_nccl_module = _UNSET
# ncclDataType_t codes (cupy.cuda.nccl.NCCL_*) and NCCL elements per array element: a complex sum is the sum of
# its float parts, so complex tensors reduce as twice as many floats.
_NCCL_TYPES = {
    "int8": (0, 1), "uint8": (1, 1), "int32": (2, 1), "int64": (4, 1), "float16": (6, 1), "float32": (7, 1),
    "float64": (8, 1), "bfloat16": (9, 1), "complex64": (7, 2), "complex128": (8, 2),
}
_NCCL_UINT8, _NCCL_SUM = 1, 0


# ----- devices -------------------------------------------------------------------------------------------------
def _device_index(device, optional=False, allow_cpu=False):
    """As ``torch._utils._get_device_index``: an int (kept as given), a CUDA Device or str, -1 for the CPU when
    allowed, or the current device for None / an index-less ``cuda`` when optional."""
    if isinstance(device, str):
        device = Device(device)
    if isinstance(device, Device):
        if device.type == "cpu":
            if allow_cpu:
                return -1
            raise ValueError(f"Expected a cuda device, but got: {device}")
        if device.index is not None:
            return device.index
    elif device is not None:
        if isinstance(device, bool) or not isinstance(device, int):
            raise TypeError(f"Expected a device (Device, str or int), got {type(device).__name__}")
        return device
    if not optional:
        raise ValueError(f"Expected a device with a specified index or an integer, but got: {device}")
    return current_device()


def _cuda(index):
    if index < 0:
        raise RuntimeError(f"Expected non-negative device index, but got {index}")
    return _backend.resolve(Device("cuda", index))


def _empty(shape, numpy_dtype, device):
    with device.backend.activate():
        return wrap(device.backend.xp.empty(shape, numpy_dtype), device)


def _sizes(tensor):
    return list(tensor._data.shape)


# ----- NCCL ----------------------------------------------------------------------------------------------------
def _nccl():
    """``cupy.cuda.nccl`` when its library loads, else None. Broadcasts and reductions of contiguous tensors over
    two or more distinct GPUs go through NCCL (one communicator per device tuple, kept for reuse), on each device's
    current stream; everything else, and every machine without NCCL, uses peer copies."""
    global _nccl_module
    if _nccl_module is _UNSET:
        _backend.require_cupy()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CuPy warns on import when libnccl is missing; we fall back quietly
            try:
                from cupy.cuda import nccl
            except Exception:  # any failure to load NCCL means peer copies, never an error
                nccl = None
        _nccl_module = nccl if getattr(nccl, "available", False) else None
    return _nccl_module


def _nccl_ready(tensors):
    """NCCL for these tensors: all CUDA, contiguous, non-empty, same dtype and size, on 2+ distinct devices."""
    if len(tensors) < 2 or any(t._device is CPU for t in tensors):
        return None
    first = tensors[0]._data
    devices = [t._device.index for t in tensors]
    if len(set(devices)) != len(devices) or first.size == 0:
        return None
    for t in tensors:
        array = t._data
        if not array.flags.c_contiguous or array.dtype != first.dtype or array.size != first.size:
            return None
    return _nccl()


def _communicator(nccl, devices):
    key = tuple(devices)
    if key not in _communicators:
        _communicators[key] = nccl.NcclCommunicator.initAll(list(key))
    return _communicators[key]


def _nccl_group(nccl, tensors, call):
    """Run ``call(communicator, rank, array, stream_ptr)`` for each tensor's device inside one NCCL group."""
    cupy = _backend.require_cupy()
    communicators = _communicator(nccl, [t._device.index for t in tensors])
    nccl.groupStart()
    try:
        for rank, (communicator, tensor) in enumerate(zip(communicators, tensors)):
            with cupy.cuda.Device(tensor._device.index):
                call(communicator, rank, tensor._data, cupy.cuda.get_current_stream().ptr)
    finally:
        nccl.groupEnd()


# ----- broadcast -----------------------------------------------------------------------------------------------
def _broadcast_out_impl(tensor, out_tensors):
    nccl = _nccl_ready([tensor, *out_tensors])
    if nccl is not None:
        _nccl_group(nccl, [tensor, *out_tensors],
                    lambda comm, rank, array, stream: comm.bcast(array.data.ptr, array.nbytes, _NCCL_UINT8, 0, stream))
    else:
        for out in out_tensors:
            out.copy_(tensor, non_blocking=True)
    return out_tensors


def broadcast(tensor, devices=None, *, out=None):
    """Copies of ``tensor`` (on the CPU or a GPU) on each of ``devices``, or written into the CUDA tensors ``out``
    (give exactly one). Where a device is ``tensor``'s own, the result is ``tensor`` itself. Returns a tuple.

        >>> x = agnostic.arange(4)
        >>> copies = agnostic.cuda.comm.broadcast(x, devices=[0, 1])  # doctest: +SKIP
        >>> [c.device for c in copies]  # doctest: +SKIP
        [device(type='cuda', index=0), device(type='cuda', index=1)]
    """
    if (devices is None) == (out is None):
        raise RuntimeError(
            f"Exactly one of 'devices' and 'out' must be specified, but got devices={devices} and out={out}")
    if out is not None:
        out = list(out)
        for i, o in enumerate(out):
            if o._device is CPU:
                raise RuntimeError("Expected all output tensors to be CUDA tensors, but output tensor at index "
                                   f"{i} has device '{o.device}'")
            if _sizes(o) != _sizes(tensor):
                raise RuntimeError(f"Expected all output tensors to have same shape as the source tensor "
                                   f"{_sizes(tensor)}, but output tensor at index {i} has shape {_sizes(o)}")
        return tuple(_broadcast_out_impl(tensor, out))
    indices = [_device_index(d) for d in devices]
    source = tensor.get_device()
    targets = [_cuda(index) for index in indices if index != source]
    array = tensor._data
    if (targets and len(set(targets)) == len(targets) and tensor._device is not CPU and array.flags.c_contiguous
            and array.size and _nccl() is not None):
        copies = iter(_broadcast_out_impl(tensor, [_empty(array.shape, array.dtype, t) for t in targets]))
    else:
        copies = iter([wrap(_backend.move(array, tensor._device, t, non_blocking=True), t) for t in targets])
    return tuple(tensor if index == source else next(copies) for index in indices)


def _take_tensors(tensors, size_limit):
    """Groups of same-dtype, same-device tensors of at most ``size_limit`` bytes (a larger tensor goes alone)."""
    buffers = defaultdict(lambda: [[], 0])
    for tensor in tensors:
        key = (tensor._data.dtype, tensor._device)
        size = tensor._data.size * tensor._data.itemsize
        buffer = buffers[key]
        if buffer[1] + size > size_limit and buffer[1] > 0:
            yield buffer[0]
            buffer = buffers[key] = [[], 0]
        buffer[0].append(tensor)
        buffer[1] += size
    for chunk, _ in buffers.values():
        if chunk:
            yield chunk


def _flatten(tensors):
    device = tensors[0]._device
    if len(tensors) == 1 and tensors[0]._data.flags.c_contiguous:  # a large tensor alone: no copy (as PyTorch's)
        return wrap(tensors[0]._data.reshape(-1), device)
    with device.backend.activate():
        return wrap(device.backend.xp.concatenate([t._data.reshape(-1) for t in tensors]), device)


def _unflatten(flat, like):
    pieces, offset = [], 0
    for tensor in like:
        count = tensor._data.size
        pieces.append(wrap(flat._data[offset:offset + count].reshape(tensor._data.shape), flat._device))
        offset += count
    return pieces


def _reorder_as(tensors, ordered):
    by_dtype = defaultdict(list)
    for tensor in tensors:
        by_dtype[tensor._data.dtype].append(tensor)
    iterators = {dtype: iter(group) for dtype, group in by_dtype.items()}
    return [next(iterators[tensor._data.dtype]) for tensor in ordered]


def broadcast_coalesced(tensors, devices, buffer_size=10485760):
    """Broadcast ``tensors`` (all on ``devices[0]``) to ``devices``, packing small tensors into buffers of up to
    ``buffer_size`` bytes to copy fewer times. Returns one list of tensors per device; the first holds the inputs.

        >>> tensors = [agnostic.ones(2, device="cuda:0"), agnostic.arange(3, device="cuda:0")]  # doctest: +SKIP
        >>> on_0, on_1 = agnostic.cuda.comm.broadcast_coalesced(tensors, devices=[0, 1])  # doctest: +SKIP
        >>> on_1[1]  # doctest: +SKIP
        tensor([0, 1, 2], device='cuda:1')
    """
    indices = [_device_index(d) for d in devices]
    tensors = list(tensors)
    if not all(t.get_device() == indices[0] for t in tensors):
        raise RuntimeError(f"All tensors must be on devices[0]: {indices[0]}")
    outputs = [list(tensors)] + [[] for _ in indices[1:]]
    for group in _take_tensors(tensors, buffer_size):
        results = broadcast(_flatten(group), indices)
        for output, result in zip(outputs[1:], results[1:]):
            output.extend(_unflatten(result, group))
    return [_reorder_as(output, tensors) for output in outputs]


# ----- reduce --------------------------------------------------------------------------------------------------
def reduce_add(inputs, destination=None):
    """The elementwise sum of ``inputs`` (same shape and dtype, on GPUs), on ``destination`` (default: the current
    device), which must hold one of them.

        >>> parts = [agnostic.ones(3, device="cuda:0"), agnostic.ones(3, device="cuda:1")]  # doctest: +SKIP
        >>> agnostic.cuda.comm.reduce_add(parts, destination=0)  # doctest: +SKIP
        tensor([2., 2., 2.], device='cuda:0')
    """
    inputs = list(inputs)
    input_size = _sizes(inputs[0])
    for i, inp in enumerate(inputs):
        assert inp._device is not CPU, "reduce_add expects all inputs to be on GPUs"
        if _sizes(inp) != input_size:
            got, expected = ("x".join(map(str, s)) for s in (_sizes(inp), input_size))
            raise ValueError(f"input {i} has invalid size: got {got}, but expected {expected}")
    destination = _device_index(destination, optional=True)
    root = None
    for i, inp in enumerate(inputs):
        if inp.get_device() == destination:
            root = i
    if root is None:
        raise RuntimeError("reduce_add expects destination to be on the same GPU with one of the tensors")
    if len(inputs) == 1:
        return inputs[0]
    target = inputs[root]._device
    nccl = _nccl_ready(inputs)
    kind = _NCCL_TYPES.get(inputs[0]._data.dtype.name)
    if nccl is not None and kind is not None:
        result = _empty(inputs[root]._data.shape, inputs[root]._data.dtype, target)
        datatype, per_element = kind
        count = inputs[0]._data.size * per_element

        def reduce(comm, rank, array, stream):
            comm.reduce(array.data.ptr, result._data.data.ptr if rank == root else 0, count, datatype, _NCCL_SUM,
                        root, stream)
        _nccl_group(nccl, inputs, reduce)
        return result
    others = [wrap(_backend.move(t._data, t._device, target, non_blocking=True), target)
              for i, t in enumerate(inputs) if i != root]
    result = inputs[root] + others[0]
    for other in others[1:]:
        result.add_(other)
    return result


def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
    """``reduce_add`` of each position across ``inputs`` (one sequence of tensors per GPU), packing small tensors
    into buffers of up to ``buffer_size`` bytes. Returns a tuple on ``destination``.

        >>> on_0 = [agnostic.ones(2, device="cuda:0"), agnostic.arange(3, device="cuda:0")]  # doctest: +SKIP
        >>> on_1 = [agnostic.ones(2, device="cuda:1"), agnostic.arange(3, device="cuda:1")]  # doctest: +SKIP
        >>> agnostic.cuda.comm.reduce_add_coalesced([on_0, on_1], destination=0)  # doctest: +SKIP
        (tensor([2., 2.], device='cuda:0'), tensor([0, 2, 4], device='cuda:0'))
    """
    per_device = [list(tensors) for tensors in inputs]
    output = []
    for groups in zip(*(_take_tensors(tensors, buffer_size) for tensors in per_device)):
        flat_result = reduce_add([_flatten(group) for group in groups], destination)
        output.extend(_unflatten(flat_result, groups[0]))
    return tuple(_reorder_as(output, per_device[0]))


# ----- scatter -------------------------------------------------------------------------------------------------
def _stream_for(streams, i, index):
    stream = streams[i] if streams is not None and i < len(streams) else None
    if stream is not None and stream.device.index != index:
        raise RuntimeError(f"Expected the device associated with the stream at index {i} (was "
                           f"{stream.device.index}) to match the device supplied at that index (expected {index})")
    return stream


def _split_with_sizes(tensor, sizes, axis):
    if any(size < 0 for size in sizes):
        raise RuntimeError(
            f"split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes={sizes}")
    return _split(tensor, sizes, axis)


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """Split ``tensor`` (CPU or GPU) along ``dim`` and place the pieces on ``devices`` (equal chunks as ``chunk``,
    or ``chunk_sizes``), or copy them into the CUDA tensors ``out``; optionally on ``streams`` (one per device).
    Returns a tuple; a piece for ``tensor``'s own device is a view of it.

        >>> pieces = agnostic.cuda.comm.scatter(agnostic.arange(6), devices=[0, 1])  # doctest: +SKIP
        >>> pieces  # doctest: +SKIP
        (tensor([0, 1, 2], device='cuda:0'), tensor([3, 4, 5], device='cuda:1'))
    """
    if out is not None:
        if devices is not None:
            raise RuntimeError(
                f"'devices' must not be specified when 'out' is specified, but got devices={devices}")
        if chunk_sizes is not None:
            raise RuntimeError(
                f"'chunk_sizes' must not be specified when 'out' is specified, but got chunk_sizes={chunk_sizes}")
        return _scatter_out(tensor, list(out), dim, streams)
    if devices is None:
        raise RuntimeError("Exactly one of 'devices' and 'out' must be specified, but got devices=None and out=None")
    indices = [_device_index(d) for d in devices]
    if not indices:
        raise RuntimeError("Expected at least one device to scatter to")
    if chunk_sizes is not None:
        chunk_sizes = list(chunk_sizes)
        if len(chunk_sizes) != len(indices):
            raise RuntimeError(f"Expected devices and chunk_sizes to be of same length, but got len(devices) = "
                               f"{len(indices)} and len(chunk_sizes) = {len(chunk_sizes)}")
    axis = _normalize_dim(dim, tensor._data.ndim)
    if chunk_sizes is not None:
        pieces = _split_with_sizes(tensor, chunk_sizes, axis)
    else:
        pieces = _chunk(tensor, len(indices), axis)
    results = []
    for i, piece in enumerate(pieces):
        index = indices[i]
        if index != tensor.get_device():
            stream = _stream_for(streams, i, index)
            target = _cuda(index)
            with StreamContext(stream):
                piece = wrap(_backend.move(piece._data, piece._device, target, non_blocking=True), target)
        results.append(piece)
    return tuple(results)


def _scatter_out(tensor, out, dim, streams):
    if not out:
        raise RuntimeError("Expected at least one output tensor to scatter to")
    axis = _normalize_dim(dim, tensor._data.ndim)
    source = _sizes(tensor)
    sizes = []
    for i, o in enumerate(out):
        if o._device is CPU:
            raise RuntimeError("Expected all output tensors to be CUDA tensors, but output tensor at index "
                               f"{i} has device '{o.device}'")
        shape = _sizes(o)
        same_ndim = len(shape) == len(source)
        if same_ndim:
            sizes.append(shape[axis])
            shape[axis] = source[axis]
        if not same_ndim or shape != source:
            raise RuntimeError(f"Output tensor at index {i} has incorrect shape: {_sizes(o)}. Expected same shape "
                               f"except for scatter dim {axis} as the source tensor: {source}")
    if sum(sizes) != source[axis]:
        raise RuntimeError(f"Total size for output tensors along scatter dim {axis} does not match the source "
                           f"tensor size at dim {axis}. Expected {source[axis]}, but got total size {sum(sizes)}")
    for i, (o, piece) in enumerate(zip(out, _split(tensor, sizes, axis))):
        with StreamContext(_stream_for(streams, i, o.get_device())):
            o.copy_(piece, non_blocking=True)
    return tuple(out)


# ----- gather --------------------------------------------------------------------------------------------------
def _gathered_shape(tensors, dim):
    if not tensors:
        raise RuntimeError("Expected at least one tensor to gather from")
    expected = _sizes(tensors[0])
    axis = _normalize_dim(dim, len(expected))
    total = 0
    for i, tensor in enumerate(tensors):
        if tensor._device is CPU:
            raise RuntimeError(f"Expected all input tensors to be CUDA tensors, but tensor at index {i} has device "
                               f"{tensor.device}")
        shape = _sizes(tensor)
        if len(shape) != len(expected):
            raise RuntimeError(f"Expected all input tensors to have the same number of dimensions, but tensor at "
                               f"index {i} has {len(shape)} dimensions, (expected {len(expected)})")
        expected[axis] = shape[axis]
        if shape != expected:
            raise RuntimeError(f"Input tensor at index {i} has invalid shape {shape}, but expected {expected}")
        total += shape[axis]
    expected[axis] = total
    return expected, axis


def _gather_into(tensors, result, axis):
    start = 0
    for tensor in tensors:
        length = tensor._data.shape[axis]
        _narrow(result, axis, start, length).copy_(tensor, non_blocking=result.is_cuda)
        start += length
    return result


def gather(tensors, dim=0, destination=None, *, out=None):
    """Concatenate GPU ``tensors`` along ``dim`` into a new tensor on ``destination`` (a CUDA device, the CPU as
    ``'cpu'`` or the deprecated ``-1``; default: the current device), or into ``out``.

        >>> pieces = [agnostic.zeros(2, device="cuda:0"), agnostic.ones(1, device="cuda:1")]  # doctest: +SKIP
        >>> agnostic.cuda.comm.gather(pieces, destination="cpu")  # doctest: +SKIP
        tensor([0., 0., 1.])
    """
    tensors = list(tensors)
    if out is not None:
        if destination is not None:
            raise RuntimeError(
                f"'destination' must not be specified when 'out' is specified, but got destination={destination}")
        shape, axis = _gathered_shape(tensors, dim)
        if _sizes(out) != shape:
            raise RuntimeError(f"Expected out tensor to have shape {shape}, but got {_sizes(out)}")
        return _gather_into(tensors, out, axis)
    if isinstance(destination, int) and destination == -1:
        warnings.warn('Using -1 to represent CPU tensor is deprecated. Please use a device object or string '
                      'instead, e.g., "cpu".', stacklevel=2)
    shape, axis = _gathered_shape(tensors, dim)
    index = _device_index(destination, optional=True, allow_cpu=True)
    target = CPU if index == -1 else _cuda(index)
    return _gather_into(tensors, _empty(tuple(shape), tensors[0]._data.dtype, target), axis)
