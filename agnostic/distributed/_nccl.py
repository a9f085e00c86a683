"""The CUDA engine: collectives on CuPy arrays through NCCL (CuPy's ``cupy.cuda.nccl``), enqueued on the current
stream of the array's device, as PyTorch's NCCL backend runs them on the caller's stream. Part of the backend layer:
the only module of ``agnostic.distributed`` that touches CuPy (imported on first use)."""

import atexit
import weakref

from .._backends.cupy_loader import import_cupy
from ._reduction import write_back

INSTALL_HINT = "pip install 'agnostic-tensor[cuda12]' (CuPy with NCCL: cupy-cuda12x and nvidia-nccl-cu12)"


def load_nccl():
    """CuPy's nccl module, or an error saying what to install."""
    cupy = import_cupy()
    if cupy is None:
        raise RuntimeError(f"the NCCL engine for CUDA tensors needs CuPy: {INSTALL_HINT}")
    try:
        from cupy.cuda import nccl
    except ImportError as error:
        raise RuntimeError(f"the NCCL engine for CUDA tensors is not available ({error}): {INSTALL_HINT}") from None
    if not getattr(nccl, "available", True):
        raise RuntimeError(f"CuPy was built without NCCL: {INSTALL_HINT}")
    return nccl


def is_available():
    try:
        load_nccl()
    except RuntimeError:
        return False
    return True


def new_unique_id():
    """NCCL's unique id of a new communicator (shared with the other ranks through the store), as CuPy gives it
    (bytes in CuPy 14, a tuple before): the communicator takes it back in the same form."""
    return load_nccl().get_unique_id()


_open_engines: "weakref.WeakSet[NcclEngine]" = weakref.WeakSet()


def _abort_open_engines():
    """At exit, abort the communicators of groups never destroyed (a rank leaving on an exception): NCCL's destroy
    may wait for peers still inside a collective, which would keep this process, and so the launcher's job, alive
    until a timeout. PyTorch's NCCL process group aborts in the same case."""
    for engine in list(_open_engines):
        engine.communicator.abort()


class NcclEngine:
    """Collectives of one process group on contiguous CuPy arrays, each returning ``(test, finish)`` as the MPI
    engine's: ``test`` asks an event recorded on the stream after the operation."""

    def __init__(self, size, rank, unique_id, device_index):
        self.nccl = load_nccl()
        self.cupy = import_cupy()
        self.size, self.rank, self.device_index = size, rank, device_index
        with self.cupy.cuda.Device(device_index):
            self.communicator = self.nccl.NcclCommunicator(size, unique_id, rank)
        if not _open_engines:  # registered after CuPy's own exit handlers, so it runs before them
            atexit.unregister(_abort_open_engines)
            atexit.register(_abort_open_engines)
        _open_engines.add(self)

    def close(self):
        _open_engines.discard(self)
        self.communicator.destroy()

    def _stream(self):
        return self.cupy.cuda.get_current_stream()

    def _enqueue(self, array, launch, finish=None):
        with self.cupy.cuda.Device(array.device.id):
            stream = self._stream()
            launch(stream.ptr)
            if finish is not None:
                finish()
            event = self.cupy.cuda.Event(disable_timing=True)
            event.record(stream)
        return (lambda: event.done), None

    def _reduce_type(self, array, op):
        """``(buffer, nccl dtype, nccl op)``: bool as uint8 with MAX/MIN, bfloat16 as float32 where NCCL lacks it."""
        nccl = self.nccl
        ops = {"sum": nccl.NCCL_SUM, "avg": nccl.NCCL_SUM, "product": nccl.NCCL_PROD, "max": nccl.NCCL_MAX,
               "min": nccl.NCCL_MIN}
        if op not in ops:
            raise ValueError(f"ReduceOp.{op.upper()} is not supported by the NCCL engine")
        types = {"int8": nccl.NCCL_INT8, "uint8": nccl.NCCL_UINT8, "int32": nccl.NCCL_INT32,
                 "uint32": nccl.NCCL_UINT32, "int64": nccl.NCCL_INT64, "uint64": nccl.NCCL_UINT64,
                 "float16": nccl.NCCL_FLOAT16, "float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64}
        if hasattr(nccl, "NCCL_BFLOAT16"):
            types["bfloat16"] = nccl.NCCL_BFLOAT16
        name = array.dtype.name
        if name == "bool":
            logical = {"sum": nccl.NCCL_MAX, "max": nccl.NCCL_MAX, "product": nccl.NCCL_MIN, "min": nccl.NCCL_MIN}
            return array.view(self.cupy.uint8), nccl.NCCL_UINT8, logical[op]
        if array.dtype.kind == "c":
            if op not in ("sum", "avg"):
                raise ValueError(f"ReduceOp.{op.upper()} is not supported for complex tensors by the NCCL engine")
            real = array.view(array.real.dtype)
            return real, types[real.dtype.name], ops[op]
        if name in types:
            return array, types[name], ops[op]
        return array.astype(self.cupy.float32), self.nccl.NCCL_FLOAT32, ops[op]

    def all_reduce(self, array, op):
        buffer, dtype, nccl_op = self._reduce_type(array, op)
        return self._enqueue(array, lambda stream: self.communicator.allReduce(
            buffer.data.ptr, buffer.data.ptr, buffer.size, dtype, nccl_op, stream),
            write_back(array, buffer, op, self.size))

    def reduce(self, array, op, root):
        buffer, dtype, nccl_op = self._reduce_type(array, op)
        finish = write_back(array, buffer, op, self.size) if self.rank == root else None
        return self._enqueue(array, lambda stream: self.communicator.reduce(
            buffer.data.ptr, buffer.data.ptr, buffer.size, dtype, nccl_op, root, stream), finish)

    def broadcast(self, array, root):
        return self._enqueue(array, lambda stream: self.communicator.broadcast(
            array.data.ptr, array.data.ptr, array.nbytes, self.nccl.NCCL_UINT8, root, stream))

    def all_gather(self, output, array):
        return self._enqueue(array, lambda stream: self.communicator.allGather(
            array.data.ptr, output.data.ptr, array.nbytes, self.nccl.NCCL_UINT8, stream))

    def reduce_scatter(self, output, array, op):
        buffer, dtype, nccl_op = self._reduce_type(array, op)
        out_buffer, _, _ = self._reduce_type(output, op)
        if out_buffer.dtype != buffer.dtype:
            out_buffer = self.cupy.empty(buffer.size // self.size, buffer.dtype)
        return self._enqueue(array, lambda stream: self.communicator.reduceScatter(
            buffer.data.ptr, out_buffer.data.ptr, buffer.size // self.size, dtype, nccl_op, stream),
            write_back(output, out_buffer, op, self.size))

    def _grouped(self, array, launch):
        def launch_all(stream):
            self.nccl.groupStart()
            try:
                launch(stream)
            finally:
                self.nccl.groupEnd()
        return self._enqueue(array, launch_all)

    def gather(self, output, array, root):
        def launch(stream):
            if self.rank == root:
                pieces = output.reshape(self.size, -1)
                for peer in range(self.size):
                    self.communicator.recv(pieces[peer].data.ptr, array.nbytes, self.nccl.NCCL_UINT8, peer, stream)
            self.communicator.send(array.data.ptr, array.nbytes, self.nccl.NCCL_UINT8, root, stream)
        return self._grouped(array, launch)

    def scatter(self, output, array, root):
        def launch(stream):
            if self.rank == root:
                pieces = array.reshape(self.size, -1)
                for peer in range(self.size):
                    self.communicator.send(pieces[peer].data.ptr, output.nbytes, self.nccl.NCCL_UINT8, peer, stream)
            self.communicator.recv(output.data.ptr, output.nbytes, self.nccl.NCCL_UINT8, root, stream)
        return self._grouped(output, launch)

    def all_to_all(self, output, array, output_counts, input_counts):
        """Counts in bytes, as the MPI engine's."""
        def launch(stream):
            send_offset = receive_offset = 0
            for peer in range(self.size):
                self.communicator.send(array.data.ptr + send_offset, input_counts[peer], self.nccl.NCCL_UINT8, peer,
                                       stream)
                self.communicator.recv(output.data.ptr + receive_offset, output_counts[peer], self.nccl.NCCL_UINT8,
                                       peer, stream)
                send_offset += input_counts[peer]
                receive_offset += output_counts[peer]
        return self._grouped(array, launch)

    def send(self, array, peer, tag):
        return self._enqueue(array, lambda stream: self.communicator.send(
            array.data.ptr, array.nbytes, self.nccl.NCCL_UINT8, peer, stream))

    def receive(self, array, peer, tag):
        if peer is None:
            raise ValueError("the NCCL engine cannot receive from any source: pass src=")
        test, finish = self._enqueue(array, lambda stream: self.communicator.recv(
            array.data.ptr, array.nbytes, self.nccl.NCCL_UINT8, peer, stream))
        return test, finish, None

    def barrier(self):
        with self.cupy.cuda.Device(self.device_index):
            token = self.cupy.zeros(1, self.cupy.float32)
            test, _ = self.all_reduce(token, "sum")
            self._stream().synchronize()
        return test, None
