"""The CPU engine: collectives on NumPy buffers through MPI (mpi4py; MPICH's wheel), nonblocking so they can run
asynchronously and time out; and the MPI communicator of a process group, however its processes were started."""

import os

import numpy

from ._reduction import write_back

INSTALL_HINT = "pip install 'agnostic-tensor[distributed]' (mpi4py and MPICH)"


def load_mpi():
    """mpi4py's MPI module (MPI initialized), or an error naming the extra to install."""
    try:
        import mpi4py
        mpi4py.rc.threads = True
        mpi4py.rc.thread_level = "multiple"
        from mpi4py import MPI
    except ImportError as error:
        raise RuntimeError(f"the MPI engine for CPU tensors is not installed ({error}): {INSTALL_HINT}") from None
    return MPI


def is_available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def can_join(world_size):
    """Whether MPI can connect this process with the others: one process alone, an mpirun job of that size, or a
    process started under a process manager (the launcher's ``mpiexec -n 1``)."""
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "0")))
    # A process manager gives each process its rank (MPICH's hydra PMI_RANK, Open MPI's, PMIx's); other PMI/PMIx
    # variables may be left in the environment by a cluster's own tools and say nothing about this process.
    managed = any(name in os.environ for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"))
    return world_size == 1 or size == world_size or managed


def world_communicator(rank, world_size, store, timeout):
    """An MPI intracommunicator of ``world_size`` processes ordered by ``rank``.

    Under ``mpirun -n world_size`` that is MPI_COMM_WORLD. Processes started one by one each under their own
    process manager (the launcher starts every rank as ``mpiexec -n 1``, so ranks can die and be stopped one by one)
    are joined with MPI's dynamic processes: rank 0 opens a port, publishes its name in the store, and accepts the
    others one at a time; each accept is collective over the ranks joined so far, merged into one communicator.
    MPICH 5.0 refuses to connect singletons (processes started without any MPI process manager, pmodels/mpich#7805):
    ``can_join`` tells them apart beforehand.
    """
    MPI = load_mpi()
    world = MPI.COMM_WORLD
    if world.Get_size() == world_size:
        return world.Split(0, rank)
    if world.Get_size() != 1:
        raise ValueError(
            f"world_size={world_size} does not match the {world.Get_size()} processes of this mpirun job: pass the "
            "same number, or leave world_size out"
        )
    if world_size == 1:
        return MPI.COMM_SELF.Dup()
    seconds = timeout.total_seconds()
    if rank == 0:
        port = MPI.Open_port()
        store.set("mpi/port", port)
        communicator = MPI.COMM_SELF
        for joining in range(1, world_size):
            store.wait([f"mpi/ready/{joining}"], seconds)
            store.set(f"mpi/turn/{joining}", "1")
            communicator = _accept(communicator, port)
        MPI.Close_port(port)
    else:
        port = store.get("mpi/port").decode()
        store.set(f"mpi/ready/{rank}", "1")
        store.wait([f"mpi/turn/{rank}"], seconds)
        communicator = MPI.COMM_SELF.Connect(port, root=0).Merge(high=True)
        for _ in range(rank + 1, world_size):
            communicator = _accept(communicator, port)
    return communicator.Split(0, rank)


def _accept(communicator, port):
    intercommunicator = communicator.Accept(port, root=0)
    return intercommunicator.Merge(high=False)


_REDUCE_DTYPES = {numpy.dtype(name) for name in (
    "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "complex64", "complex128")}


def _bytes(array):
    return array.reshape(-1).view(numpy.uint8)


class MpiEngine:
    """Collectives of one process group on contiguous NumPy arrays; each returns ``(test, finish)``: a function
    telling whether the MPI requests are done, and what to run once they are (copies back, averaging)."""

    def __init__(self, communicator):
        self.MPI = load_mpi()
        self.communicator = communicator
        self.rank = communicator.Get_rank()
        self.size = communicator.Get_size()

    def close(self):
        if self.communicator not in (self.MPI.COMM_WORLD, self.MPI.COMM_SELF):
            self.communicator.Free()

    @staticmethod
    def _requests(*requests):
        MPI_Request = type(requests[0])
        pending = list(requests)
        return lambda: MPI_Request.Testall(pending)

    def _reduce_buffer(self, array, op):
        """The buffer MPI reduces (float16/bfloat16 as float32, bool as uint8) and the MPI op."""
        MPI = self.MPI
        ops = {"sum": MPI.SUM, "avg": MPI.SUM, "product": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN,
               "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}
        if array.dtype == numpy.bool_:
            logical = {"sum": MPI.MAX, "max": MPI.MAX, "bor": MPI.MAX, "product": MPI.MIN, "min": MPI.MIN,
                       "band": MPI.MIN}
            return array.view(numpy.uint8), logical.get(op, ops[op])
        if array.dtype.kind == "c" and op in ("max", "min"):
            raise ValueError(f"all_reduce with ReduceOp.{op.upper()} is not defined for complex tensors")
        if array.dtype in _REDUCE_DTYPES:
            return array, ops[op]
        return array.astype(numpy.float32), ops[op]

    def all_reduce(self, array, op):
        buffer, mpi_op = self._reduce_buffer(array, op)
        request = self.communicator.Iallreduce(self.MPI.IN_PLACE, buffer, mpi_op)
        return self._requests(request), write_back(array, buffer, op, self.size)

    def reduce(self, array, op, root):
        buffer, mpi_op = self._reduce_buffer(array, op)
        if self.rank == root:
            request = self.communicator.Ireduce(self.MPI.IN_PLACE, buffer, mpi_op, root=root)
            return self._requests(request), write_back(array, buffer, op, self.size)
        request = self.communicator.Ireduce(buffer, None, mpi_op, root=root)
        return self._requests(request), None

    def broadcast(self, array, root):
        return self._requests(self.communicator.Ibcast(_bytes(array), root=root)), None

    def all_gather(self, output, array):
        return self._requests(self.communicator.Iallgather(_bytes(array), _bytes(output))), None

    def reduce_scatter(self, output, array, op):
        buffer, mpi_op = self._reduce_buffer(array, op)
        out_buffer, _ = self._reduce_buffer(output, op)
        if out_buffer is output and buffer is not array:
            out_buffer = numpy.empty(output.shape, buffer.dtype)
        request = self.communicator.Ireduce_scatter_block(buffer, out_buffer, mpi_op)
        return self._requests(request), write_back(output, out_buffer, op, self.size)

    def gather(self, output, array, root):
        receive = _bytes(output) if self.rank == root else None
        return self._requests(self.communicator.Igather(_bytes(array), receive, root=root)), None

    def scatter(self, output, array, root):
        send = _bytes(array) if self.rank == root else None
        return self._requests(self.communicator.Iscatter(send, _bytes(output), root=root)), None

    def all_to_all(self, output, array, output_counts, input_counts):
        """``output_counts``/``input_counts``: bytes received from / sent to each rank."""
        def displacements(counts):
            return numpy.concatenate([[0], numpy.cumsum(counts)[:-1]]).astype(int).tolist()
        send = [_bytes(array), (list(input_counts), displacements(input_counts)), self.MPI.BYTE]
        receive = [_bytes(output), (list(output_counts), displacements(output_counts)), self.MPI.BYTE]
        return self._requests(self.communicator.Ialltoallv(send, receive)), None

    def send(self, array, peer, tag):
        return self._requests(self.communicator.Isend(_bytes(array), dest=peer, tag=tag)), None

    def receive(self, array, peer, tag):
        """``peer`` None receives from any rank; the sender's rank is then returned by ``source()``."""
        status = self.MPI.Status()
        request = self.communicator.Irecv(_bytes(array), source=self.MPI.ANY_SOURCE if peer is None else peer,
                                          tag=tag)

        def test():
            return request.Test(status)
        return test, None, status

    def barrier(self):
        return self._requests(self.communicator.Ibarrier()), None

    def subgroup(self, member, rank_in_group, size, name):
        """The engine of a new group (collective over this one's ranks); None on ranks outside it."""
        communicator = self.communicator.Split(0 if member else self.MPI.UNDEFINED, rank_in_group)
        return None if communicator == self.MPI.COMM_NULL else MpiEngine(communicator)
