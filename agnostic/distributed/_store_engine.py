"""The CPU engine of last resort: collectives through the job's TCP store, for processes that no MPI process manager
started (``multiprocessing``, ``mp.spawn``), which MPICH 5.0 cannot connect (pmodels/mpich#7805). Every rank publishes
its contribution under a key of the collective's number and reads the others'; correct, but all data passes through
rank 0's store, so the launcher or ``mpirun`` (MPI) is the way for speed."""

import numpy

from ._reduction import floors
from ._store import PrefixStore


def _reduce(arrays, op):
    if arrays[0].dtype == numpy.bool_:
        any_of = op in ("sum", "max", "bor", "avg")
        return (numpy.logical_or if any_of else numpy.logical_and).reduce(arrays)
    if arrays[0].dtype.kind == "c" and op in ("max", "min"):
        raise ValueError(f"all_reduce with ReduceOp.{op.upper()} is not defined for complex tensors")
    functions = {"sum": numpy.add, "avg": numpy.add, "product": numpy.multiply, "max": numpy.maximum,
                 "min": numpy.minimum, "band": numpy.bitwise_and, "bor": numpy.bitwise_or, "bxor": numpy.bitwise_xor}
    result = arrays[0].copy()
    for array in arrays[1:]:
        functions[op](result, array, out=result)
    if op == "avg":
        result = result // len(arrays) if floors(result.dtype) else result / len(arrays)
    return result.astype(arrays[0].dtype, copy=False)


class StoreEngine:
    """Collectives of one process group on contiguous NumPy arrays through a store, with the MPI engine's
    interface: each returns ``(test, finish)``."""

    def __init__(self, store, rank, size):
        self.store, self.rank, self.size = store, rank, size
        self._sequence = 0
        self._sent, self._received = {}, {}

    def close(self):
        pass

    def _exchange(self, contribution, readers=None):
        """Publish this rank's bytes (a dict ``{reader: bytes}`` for per-reader pieces) and read those of
        ``readers`` (every rank by default); returns ``(test, read)``."""
        self._sequence += 1
        prefix = f"c/{self._sequence}"
        if isinstance(contribution, dict):
            for reader, payload in contribution.items():
                self.store.set(f"{prefix}/{self.rank}->{reader}", payload)
            sources = range(self.size) if readers is None else readers
            keys = [f"{prefix}/{source}->{self.rank}" for source in sources]
        else:
            if contribution is not None:
                self.store.set(f"{prefix}/{self.rank}", contribution)
            keys = [f"{prefix}/{source}" for source in (range(self.size) if readers is None else readers)]

        def read():
            values = [self.store.get(key) for key in keys]
            if int(self.store.add(f"{prefix}/read", 1)) == self.size:
                for source in range(self.size):
                    self.store.delete_key(f"{prefix}/{source}")
                    for reader in range(self.size):
                        self.store.delete_key(f"{prefix}/{source}->{reader}")
            return values
        return (lambda: self.store.check(keys)), read

    @staticmethod
    def _decode(payloads, like):
        return [numpy.frombuffer(payload, like.dtype).reshape(like.shape) for payload in payloads]

    def all_reduce(self, array, op):
        test, read = self._exchange(array.tobytes())

        def finish():
            array[...] = _reduce(self._decode(read(), array), op)
        return test, finish

    def reduce(self, array, op, root):
        test, read = self._exchange(array.tobytes())

        def finish():
            values = self._decode(read(), array)
            if self.rank == root:
                array[...] = _reduce(values, op)
        return test, finish

    def broadcast(self, array, root):
        test, read = self._exchange(array.tobytes() if self.rank == root else None, readers=[root])

        def finish():
            array[...] = self._decode(read(), array)[0]
        return test, finish

    def all_gather(self, output, array):
        test, read = self._exchange(array.tobytes())

        def finish():
            output.reshape(-1).view(numpy.uint8)[...] = numpy.frombuffer(b"".join(read()), numpy.uint8)
        return test, finish

    def reduce_scatter(self, output, array, op):
        test, read = self._exchange(array.tobytes())

        def finish():
            values = [v.reshape(self.size, -1)[self.rank] for v in self._decode(read(), array)]
            output[...] = _reduce(values, op).reshape(output.shape)
        return test, finish

    def gather(self, output, array, root):
        test, read = self._exchange(array.tobytes())

        def finish():
            values = read()
            if self.rank == root:
                output.reshape(-1).view(numpy.uint8)[...] = numpy.frombuffer(b"".join(values), numpy.uint8)
        return test, finish

    def scatter(self, output, array, root):
        pieces = {}
        if self.rank == root:
            pieces = {reader: piece.tobytes() for reader, piece in enumerate(array.reshape(self.size, -1))}
        test, read = self._exchange(pieces, readers=[root])

        def finish():
            output.reshape(-1).view(numpy.uint8)[...] = numpy.frombuffer(read()[0], numpy.uint8)
        return test, finish

    def all_to_all(self, output, array, output_counts, input_counts):
        flat = array.reshape(-1).view(numpy.uint8)
        offsets = numpy.concatenate([[0], numpy.cumsum(input_counts)]).astype(int)
        pieces = {reader: flat[offsets[reader]:offsets[reader + 1]].tobytes() for reader in range(self.size)}
        test, read = self._exchange(pieces)

        def finish():
            output.reshape(-1).view(numpy.uint8)[...] = numpy.frombuffer(b"".join(read()), numpy.uint8)
        return test, finish

    def send(self, array, peer, tag):
        count = self._sent[peer, tag] = self._sent.get((peer, tag), 0) + 1
        self.store.set(f"p2p/{self.rank}->{peer}/{tag}/{count}", array.tobytes())
        return (lambda: True), None

    def receive(self, array, peer, tag):
        if peer is None:
            raise ValueError("recv without src= needs the MPI engine: start the processes with the launcher "
                             "(python -m agnostic.distributed.run) or mpirun")
        count = self._received[peer, tag] = self._received.get((peer, tag), 0) + 1
        key = f"p2p/{peer}->{self.rank}/{tag}/{count}"

        def finish():
            array.reshape(-1).view(numpy.uint8)[...] = numpy.frombuffer(self.store.get(key), numpy.uint8)
            self.store.delete_key(key)
        return (lambda: self.store.check([key])), finish, None

    def barrier(self):
        test, read = self._exchange(b"")
        return test, read

    def subgroup(self, member, rank_in_group, size, name):
        return StoreEngine(PrefixStore(name, self.store), rank_in_group, size) if member else None
