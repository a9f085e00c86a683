"""agnostic.cuda.nccl: NCCL collectives over lists of tensors on several GPUs of one process, as torch.cuda.nccl.

Each list holds one tensor per GPU (contiguous, distinct devices, one dtype); a collective runs as one NCCL group
on each device's current stream (or ``streams[i]``), over the communicators of ``comms`` or ones made for the
devices and kept (``agnostic.cuda.comm``'s). Needs CuPy's NCCL bindings (``cupy.cuda.nccl``).
"""

import collections.abc
import warnings

from .. import _backend
from .._tensor import TensorBase
from . import comm as _comm

__all__ = ["all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"]

SUM, PROD, MAX, MIN, AVG = 0, 1, 2, 3, 4  # ncclRedOp_t


def _nccl():
    nccl = _comm._nccl()
    if nccl is None:
        raise RuntimeError("NCCL is not available: CuPy could not load libnccl; install it with "
                           "pip install nvidia-nccl-cu12 (or -cu13 for CUDA 13)")
    return nccl


def is_available(tensors):
    """True when NCCL can run a collective over ``tensors``: CuPy's NCCL loads, and they are contiguous CUDA
    tensors on distinct devices.

        >>> agnostic.cuda.nccl.is_available([agnostic.ones(2)])
        False
    """
    devices = set()
    for tensor in tensors:
        if tensor.is_sparse or not tensor.is_contiguous() or not tensor.is_cuda:
            return False
        if tensor.get_device() in devices:
            return False
        devices.add(tensor.get_device())
    if _comm._nccl() is None:
        warnings.warn("CuPy's NCCL bindings are not available (libnccl not found)", stacklevel=2)
        return False
    return True


def version():
    """NCCL's version as ``(major, minor, patch)``.

        >>> agnostic.cuda.nccl.version()  # doctest: +SKIP
        (2, 21, 5)
    """
    code = _nccl().get_version()
    # NCCL 2.9 changed the encoding from major*1000 + minor*100 + patch to major*10000 + minor*100 + patch
    major, rest = divmod(code, 10000) if code >= 20900 else divmod(code, 1000)
    return major, rest // 100, rest % 100


def unique_id():
    """A new NCCL unique id (bytes), to give every rank's ``init_rank``.

        >>> len(agnostic.cuda.nccl.unique_id())  # doctest: +SKIP
        128
    """
    return bytes(value & 0xFF for value in _nccl().get_unique_id())


def init_rank(num_ranks, uid, rank):
    """The NCCL communicator of ``rank`` among ``num_ranks`` sharing ``uid`` (from ``unique_id()``), made on the
    current device (a ``cupy.cuda.nccl.NcclCommunicator``).

        >>> uid = agnostic.cuda.nccl.unique_id()  # doctest: +SKIP
        >>> communicator = agnostic.cuda.nccl.init_rank(1, uid, 0)  # doctest: +SKIP
    """
    signed = tuple(value - 256 if value > 127 else value for value in bytes(uid))
    return _nccl().NcclCommunicator(num_ranks, signed, rank)


def _check_sequence_type(inputs):
    if not isinstance(inputs, collections.abc.Container) or isinstance(inputs, TensorBase):
        raise TypeError("Inputs should be a collection of tensors")


def _nccl_type(tensor, op=SUM):
    """NCCL's type of ``tensor``'s elements and how many it takes per element (2 for complex: reduced as pairs of
    reals, which is right for SUM and AVG only)."""
    found = _comm._NCCL_TYPES.get(tensor._data.dtype.name)
    if found is None:
        raise TypeError(f"NCCL has no type for {tensor.dtype}; use a float, int8/uint8/int32/int64 or complex tensor")
    if tensor.is_complex() and op not in (SUM, AVG):
        raise RuntimeError(f"NCCL reduces complex tensors as pairs of reals, which is right for SUM and AVG only, not "
                           f"op={op}: reduce their real and imaginary parts (torch.view_as_real) as you need")
    return found


def _check(tensors, what):
    devices = [tensor.get_device() for tensor in tensors]
    if not all(tensor.is_cuda and tensor.is_contiguous() for tensor in tensors):
        raise RuntimeError(f"nccl.{what} needs contiguous CUDA tensors (use .contiguous() and .cuda())")
    if len(set(devices)) != len(devices):
        raise RuntimeError(f"nccl.{what} needs one tensor per device, got devices {devices}")
    dtypes = {tensor.dtype for tensor in tensors}
    if len(dtypes) != 1:
        raise RuntimeError(f"nccl.{what} needs tensors of one dtype, got {sorted(map(str, dtypes))}")


def _run(inputs, comms, streams, call):
    """``call(communicator, i, stream_pointer)`` for each device of ``inputs``, inside one NCCL group."""
    nccl = _nccl()
    cupy = _backend.require_cupy()
    devices = [tensor.get_device() for tensor in inputs]
    communicators = list(comms) if comms is not None else _comm._communicator(nccl, devices)
    nccl.groupStart()
    try:
        for i, device in enumerate(devices):
            with cupy.cuda.Device(device):
                stream = streams[i] if streams is not None and streams[i] is not None else None
                pointer = stream.cuda_stream if stream is not None else cupy.cuda.get_current_stream().ptr
                call(communicators[i], i, pointer)
    finally:
        nccl.groupEnd()


def _pointer(tensor):
    return tensor._data.data.ptr


def all_reduce(inputs, outputs=None, op=SUM, streams=None, comms=None):
    """Reduce (``op``: SUM, PROD, MAX, MIN) the tensors of ``inputs`` elementwise and write the result into every
    tensor of ``outputs`` (``inputs`` by default).

        >>> xs = [agnostic.ones(3, device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> agnostic.cuda.nccl.all_reduce(xs)  # doctest: +SKIP
        >>> xs[1]  # doctest: +SKIP
        tensor([2., 2., 2.], device='cuda:1')
    """
    _check_sequence_type(inputs)
    outputs = inputs if outputs is None else outputs
    _check_sequence_type(outputs)
    _check(inputs, "all_reduce")
    kind, per_element = _nccl_type(inputs[0], op)
    count = inputs[0].numel() * per_element
    _run(inputs, comms, streams, lambda communicator, i, stream: communicator.allReduce(
        _pointer(inputs[i]), _pointer(outputs[i]), count, kind, op, stream))


def reduce(inputs, output=None, root=0, op=SUM, streams=None, comms=None, *, outputs=None):
    """Reduce the tensors of ``inputs`` elementwise into ``output`` (``inputs[root]`` by default), which lives on
    the device of ``inputs[root]``.

        >>> xs = [agnostic.ones(3, device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> agnostic.cuda.nccl.reduce(xs, root=0)  # doctest: +SKIP
        >>> xs[0]  # doctest: +SKIP
        tensor([2., 2., 2.], device='cuda:0')
    """
    _check_sequence_type(inputs)
    if outputs is not None:
        if output is not None:
            raise ValueError("'output' and 'outputs' can not be both specified. 'outputs' is deprecated in favor of "
                             "'output', taking in a single output tensor. The signature of reduce is: "
                             "reduce(inputs, output=None, root=0, op=SUM, streams=None, comms=None).")
        warnings.warn("`nccl.reduce` with an output tensor list is deprecated. Please specify a single output tensor "
                      "with argument 'output' instead.", FutureWarning, stacklevel=2)
        output = outputs[root]
    elif not isinstance(output, TensorBase) and isinstance(output, collections.abc.Sequence):
        warnings.warn("nccl.reduce with an output tensor list is deprecated. Please specify a single output tensor.",
                      FutureWarning, stacklevel=2)
        output = output[root]
    elif output is None:
        output = inputs[root]
    _check(inputs, "reduce")
    kind, per_element = _nccl_type(inputs[0], op)
    count = inputs[0].numel() * per_element
    _run(inputs, comms, streams, lambda communicator, i, stream: communicator.reduce(
        _pointer(inputs[i]), _pointer(output) if i == root else _pointer(inputs[i]), count, kind, op, root, stream))


def broadcast(inputs, root=0, streams=None, comms=None):
    """Copy ``inputs[root]`` into every other tensor of ``inputs``.

        >>> xs = [agnostic.arange(3.0, device="cuda:0"), agnostic.zeros(3, device="cuda:1")]  # doctest: +SKIP
        >>> agnostic.cuda.nccl.broadcast(xs)  # doctest: +SKIP
        >>> xs[1]  # doctest: +SKIP
        tensor([0., 1., 2.], device='cuda:1')
    """
    _check_sequence_type(inputs)
    _check(inputs, "broadcast")
    nbytes = inputs[0]._data.nbytes
    _run(inputs, comms, streams, lambda communicator, i, stream: communicator.bcast(
        _pointer(inputs[i]), nbytes, _comm._NCCL_UINT8, root, stream))


def all_gather(inputs, outputs, streams=None, comms=None):
    """Concatenate the tensors of ``inputs`` (in device order) into every tensor of ``outputs`` (each
    ``len(inputs)`` times as large).

        >>> xs = [agnostic.full((2,), float(i), device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> ys = [agnostic.empty(4, device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> agnostic.cuda.nccl.all_gather(xs, ys)  # doctest: +SKIP
        >>> ys[1]  # doctest: +SKIP
        tensor([0., 0., 1., 1.], device='cuda:1')
    """
    _check_sequence_type(inputs)
    _check_sequence_type(outputs)
    _check(inputs, "all_gather")
    kind, per_element = _nccl_type(inputs[0])
    count = inputs[0].numel() * per_element
    for output in outputs:
        if output.numel() != inputs[0].numel() * len(inputs):
            raise RuntimeError(f"nccl.all_gather: each output needs {len(inputs)} x {inputs[0].numel()} elements, "
                               f"got {output.numel()}")
    _run(inputs, comms, streams, lambda communicator, i, stream: communicator.allGather(
        _pointer(inputs[i]), _pointer(outputs[i]), count, kind, stream))


def reduce_scatter(inputs, outputs, op=SUM, streams=None, comms=None):
    """Reduce the tensors of ``inputs`` elementwise and give chunk ``i`` of the result (each ``len(inputs)``-th)
    to ``outputs[i]``.

        >>> xs = [agnostic.ones(4, device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> ys = [agnostic.empty(2, device=f"cuda:{i}") for i in range(2)]  # doctest: +SKIP
        >>> agnostic.cuda.nccl.reduce_scatter(xs, ys)  # doctest: +SKIP
        >>> ys[0]  # doctest: +SKIP
        tensor([2., 2.], device='cuda:0')
    """
    _check_sequence_type(inputs)
    _check_sequence_type(outputs)
    _check(inputs, "reduce_scatter")
    kind, per_element = _nccl_type(outputs[0], op)
    count = outputs[0].numel() * per_element
    for output in outputs:
        if output.numel() * len(inputs) != inputs[0].numel():
            raise RuntimeError(f"nccl.reduce_scatter: each output needs {inputs[0].numel()} / {len(inputs)} "
                               f"elements, got {output.numel()}")
    _run(inputs, comms, streams, lambda communicator, i, stream: communicator.reduceScatter(
        _pointer(inputs[i]), _pointer(outputs[i]), count, kind, op, stream))
