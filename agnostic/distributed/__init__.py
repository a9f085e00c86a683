"""agnostic.distributed: ``torch.distributed``'s process groups and collectives, with CPU tensors communicated through
MPI and CUDA tensors through NCCL.

``init_process_group`` joins the processes of a job, however they were started: by the launcher
(``python -m agnostic.distributed.run --nproc-per-node N script.py``), by ``mpirun -n N python script.py``, or one
process alone (``world_size=1``). Each collective works in place on agnostic tensors and picks the engine of the
tensor's device: ``backend=None`` creates MPI for CPU tensors and NCCL for CUDA tensors (each on first use), as
PyTorch pairs Gloo and NCCL; ``"gloo"`` is accepted as a name of the CPU engine. ``async_op=True`` returns a ``Work``
whose ``wait()`` finishes the operation; a collective that not every rank enters fails after the group's ``timeout``
with an error naming the ranks that never arrived. Processes started by user code (``multiprocessing``,
``agnostic.multiprocessing.spawn`` with ``tcp://`` or ``env://``) also work, but MPICH cannot connect processes that no
MPI process manager started, so their CPU collectives go through the job's TCP store (slow; a warning says so).
"""

import datetime
import functools
import os
import pickle
import socket
import warnings

import numpy

from .. import cuda as _cuda
from .._tensor import wrap as _wrap
from ..autograd.tracking import bump_version
from . import _mpi, _nccl
from ._store_engine import StoreEngine
from ._store import HashStore, PrefixStore, Store, StoreTimeoutError, TCPStore
from ._work import DistBackendError, Work, completed_work

default_pg_timeout = datetime.timedelta(minutes=10)


class ReduceOp:
    """How a reduction combines the ranks' values: ``SUM``, ``AVG`` (sum divided by the group size), ``PRODUCT``,
    ``MIN``, ``MAX`` (and ``BAND``, ``BOR``, ``BXOR`` for integers on the CPU), as ``torch.distributed.ReduceOp``.

        >>> agnostic.distributed.ReduceOp.SUM
        <ReduceOp.SUM: 0>
    """

    class _Op:
        def __init__(self, name, value):
            self.name, self.value = name, value

        def __repr__(self):
            return f"<ReduceOp.{self.name}: {self.value}>"

    RedOpType: type | None = None  # ReduceOp itself, set below


for _value, _name in enumerate(("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR")):
    setattr(ReduceOp, _name, ReduceOp._Op(_name, _value))
ReduceOp.RedOpType = ReduceOp
reduce_op = ReduceOp


class Backend(str):
    """Names of the communication engines: ``Backend.MPI``, ``Backend.NCCL``, ``Backend.GLOO`` (the CPU engine).

        >>> import agnostic.distributed as dist
        >>> dist.Backend("GLOO"), dist.Backend.NCCL
        ('gloo', 'nccl')
    """

    MPI = "mpi"
    NCCL = "nccl"
    GLOO = "gloo"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        return str.__new__(cls, name.lower())


def _engines_of(backend):
    """``{"cpu": "mpi", "cuda": "nccl"}``-style map from a backend string (None: both engines)."""
    if backend is None or backend == "undefined":
        return {"cpu": "mpi", "cuda": "nccl"}
    engines = {}
    for part in str(backend).lower().split(","):
        device, _, name = part.rpartition(":")
        name = {"gloo": "mpi"}.get(name.strip(), name.strip())
        if name not in ("mpi", "nccl"):
            raise ValueError(f"unknown backend {backend!r}: use 'mpi' (or 'gloo') for CPU tensors, 'nccl' for CUDA "
                             "tensors, 'cpu:mpi,cuda:nccl', or None for both")
        for target in ([device.strip()] if device else (["cpu"] if name == "mpi" else ["cuda"])):
            engines[target] = name
    return engines


class ProcessGroup:
    """A set of ranks that run collectives together (the world, or a ``new_group``): its ``rank()`` and ``size()``,
    the global ranks it holds, and its engines.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> pg = dist.group.WORLD
        >>> isinstance(pg, dist.ProcessGroup), pg.rank(), pg.size()
        (True, 0, 1)
        >>> dist.destroy_process_group()
    """

    def __init__(self, ranks, rank, store, timeout, backend, engines, name, cpu_engine=None):
        self.ranks = list(ranks)
        self._rank = rank
        self.store = store
        self.timeout = timeout
        self.backend = backend
        self.engines = engines
        self.group_name = name
        self._cpu_engine = cpu_engine
        self._nccl_engines = {}
        self._sequence = 0

    def rank(self):
        """This process's rank within the group."""
        return self._rank

    def size(self):
        """How many ranks the group holds."""
        return len(self.ranks)

    def name(self):
        """The backend's name."""
        return self.backend

    def __repr__(self):
        return f"<ProcessGroup {self.group_name} ranks={self.ranks} backend={self.backend}>"

    def engine_for(self, tensor):
        backend = tensor._device.backend
        kind = "cpu" if backend.host else "cuda"
        if kind not in self.engines:
            raise RuntimeError(
                f"no backend for {kind} tensors in this process group (backend={self.backend!r}): pass "
                f"backend=None to init_process_group for both engines, or move the tensor with .to()"
            )
        if self.engines[kind] == "mpi":
            if self._cpu_engine is None:
                raise RuntimeError(f"the MPI engine for CPU tensors is not available: {_mpi.INSTALL_HINT}")
            return self._cpu_engine
        index = tensor._device.index
        if index not in self._nccl_engines:
            self._nccl_engines[index] = self._new_nccl_engine(index)
        return self._nccl_engines[index]

    def _new_nccl_engine(self, device_index):
        # Keyed by how many communicators this group has made, not by the device: each rank uses its own GPU
        # (rank 1 on cuda:1), and every rank makes its communicators in the same order, at its first CUDA collective.
        key = f"nccl-id/{len(self._nccl_engines)}"
        if self._rank == 0:
            self.store.set(key, pickle.dumps(_nccl.new_unique_id()))
        unique_id = pickle.loads(self.store.get(key))
        return _nccl.NcclEngine(self.size(), self._rank, unique_id, device_index)

    def next_watch(self, what):
        self._sequence += 1
        return _Watch(self, self._sequence, what)

    def close(self):
        for engine in self._nccl_engines.values():
            engine.close()
        if self._cpu_engine is not None:
            self._cpu_engine.close()


class _Watch:
    """Which ranks entered collective number ``sequence`` of a group: each waiting rank records itself in the store
    once it has waited a moment; at the deadline, the ranks with no record are the missing ones."""

    def __init__(self, group, sequence, what):
        self.group, self.sequence, self.what = group, sequence, what

    def _key(self, group_rank):
        return f"arrived/{self.sequence}/{group_rank}"

    def arrived(self):
        self.group.store.set(self._key(self.group.rank()), "1")

    def missing(self):
        return [rank for position, rank in enumerate(self.group.ranks)
                if not self.group.store.check([self._key(position)])]


class GroupMember:
    """``GroupMember.WORLD``: the default group (None before ``init_process_group``); ``NON_GROUP_MEMBER``: what
    ``new_group`` returns to ranks outside the new group.

        >>> import agnostic.distributed as dist
        >>> dist.GroupMember.WORLD is None
        True
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.GroupMember.WORLD.size()
        1
        >>> dist.destroy_process_group()
    """

    WORLD = None
    NON_GROUP_MEMBER = object()


group = GroupMember


class _State:
    world = None
    groups = 0


def _world():
    if _State.world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _State.world


def _group(group):
    if group is None or group is GroupMember.WORLD:
        return _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ValueError("this rank is not a member of the group: only its members may call its collectives")
    return group


def is_available():
    """True: the package is always importable (the engines are checked on use, see ``is_mpi_available``).

        >>> agnostic.distributed.is_available()
        True
    """
    return True


def is_mpi_available():
    """Whether the MPI engine (mpi4py) is installed: ``pip install 'agnostic-tensor[distributed]'``.

        >>> isinstance(agnostic.distributed.is_mpi_available(), bool)
        True
    """
    return _mpi.is_available()


def is_gloo_available():
    """Whether CPU collectives are available ("gloo" names the CPU engine, which is MPI here).

        >>> agnostic.distributed.is_gloo_available() == agnostic.distributed.is_mpi_available()
        True
    """
    return _mpi.is_available()


def is_nccl_available():
    """Whether the NCCL engine for CUDA tensors (CuPy with NCCL) can be used.

        >>> isinstance(agnostic.distributed.is_nccl_available(), bool)
        True
    """
    return _nccl.is_available()


def is_initialized():
    """Whether ``init_process_group`` has been called (and not undone by ``destroy_process_group``).

        >>> agnostic.distributed.is_initialized()
        False
    """
    return _State.world is not None


def is_torchelastic_launched():
    """Whether this process was started by the launcher (``agnostic.distributed.run``).

        >>> agnostic.distributed.is_torchelastic_launched()
        False
    """
    return "AGNOSTIC_LAUNCHER" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


def _environment_int(name, given):
    if given is not None and given >= 0:
        return given
    if name in os.environ:
        return int(os.environ[name])
    return None


def _rendezvous(init_method, rank, world_size, timeout):
    """``(store, rank, world_size)`` from the init method and the environment."""
    rank = _environment_int("RANK", rank)
    world_size = _environment_int("WORLD_SIZE", world_size)
    mpi_world = _mpi_world_size()
    if world_size is None and mpi_world > 1:
        world_size = mpi_world
    if world_size is None:
        raise ValueError("world_size is unknown: pass world_size= to init_process_group, or set WORLD_SIZE (the "
                         "launcher does: python -m agnostic.distributed.run --nproc-per-node N script.py)")
    if rank is None and mpi_world == world_size:
        rank = _mpi.load_mpi().COMM_WORLD.Get_rank()
    if rank is None:
        raise ValueError("rank is unknown: pass rank= to init_process_group, or set RANK (the launcher does)")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for world_size {world_size} (ranks are 0..{world_size - 1})")
    if init_method is None:
        init_method = "env://"
    if init_method.startswith("tcp://"):
        host, _, port = init_method[len("tcp://"):].rstrip("/").rpartition(":")
        served_elsewhere = False
    elif init_method.startswith("env://"):
        host, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
        served_elsewhere = os.environ.get("AGNOSTIC_STORE_SERVED") == "1"
        if world_size == 1 and (host is None or port is None):
            return HashStore(timeout), rank, world_size
        if (host is None or port is None) and mpi_world == world_size:
            host, port = _address_through_mpi(rank, timeout)
            return TCPStore(host, port, world_size, False, timeout), rank, world_size
        if host is None or port is None:
            raise ValueError("init_method='env://' needs MASTER_ADDR and MASTER_PORT in the environment (the launcher "
                             "sets them), or pass init_method='tcp://host:port'")
    else:
        raise ValueError(f"unsupported init_method {init_method!r}: use 'env://' or 'tcp://host:port'")
    return TCPStore(host, int(port), world_size, rank == 0 and not served_elsewhere, timeout), rank, world_size


def _mpi_world_size():
    """The size of the mpirun job this process belongs to (1 outside one; MPI is not initialized to find out)."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        if name in os.environ:
            return int(os.environ[name])
    return 1


def _address_through_mpi(rank, timeout):
    """Under mpirun without MASTER_ADDR: rank 0 serves a store on a free port and broadcasts its address."""
    MPI = _mpi.load_mpi()
    address = None
    if rank == 0:
        server = TCPStore(socket.gethostname(), 0, None, True, timeout)
        _State.served_store = server
        address = (socket.gethostname(), server.port)
    return MPI.COMM_WORLD.bcast(address, root=0)


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join this process to the job's default process group, as ``torch.distributed.init_process_group``.

    ``backend``: ``"mpi"`` (or ``"gloo"``) for CPU tensors, ``"nccl"`` for CUDA tensors, None or
    ``"cpu:mpi,cuda:nccl"`` for both. ``init_method``: ``"env://"`` (the default: ``MASTER_ADDR``, ``MASTER_PORT``,
    ``RANK``, ``WORLD_SIZE``, as the launcher sets them) or ``"tcp://host:port"`` (rank 0 serves the store there);
    or pass a ``store``. Under ``mpirun`` the rank and world size come from MPI. ``timeout``: how long a collective
    waits for the other ranks before failing (10 minutes by default).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.get_rank(), dist.get_world_size()
        (0, 1)
        >>> dist.destroy_process_group()
    """
    if _State.world is not None:
        raise ValueError("trying to initialize the default process group twice: call destroy_process_group() first")
    timeout = default_pg_timeout if timeout is None else timeout
    engines = _engines_of(backend)
    if store is None:
        store, rank, world_size = _rendezvous(init_method, rank, world_size, timeout)
    elif rank < 0 or world_size < 0:
        raise ValueError("with store=, pass rank= and world_size= too")
    store = PrefixStore("default_pg", store)
    cpu_engine = None
    if "cpu" in engines and _mpi.is_available() and world_size == 1:
        cpu_engine = StoreEngine(PrefixStore("cpu", store), rank, world_size)  # nothing to send: MPI not started
    elif "cpu" in engines and _mpi.is_available() and _mpi.can_join(world_size):
        cpu_engine = _mpi.MpiEngine(_mpi.world_communicator(rank, world_size, store, timeout))
    elif "cpu" in engines and _mpi.is_available():
        warnings.warn("these processes were not started under MPICH's process manager, which MPI needs to connect "
                      "them: CPU collectives go through the TCP store (slow). Start them with 'python -m "
                      "agnostic.distributed.run' (which uses MPICH's mpiexec where the mpich package is installed: "
                      f"{_mpi.INSTALL_HINT}) or MPICH's 'mpirun' for MPI", RuntimeWarning, stacklevel=2)
        cpu_engine = StoreEngine(PrefixStore("cpu", store), rank, world_size)
    elif "cpu" in engines and backend is not None:
        raise RuntimeError(f"backend {backend!r} needs the MPI engine, which is not installed: {_mpi.INSTALL_HINT}")
    name = "default_pg"
    world = ProcessGroup(range(world_size), rank, store, timeout, "undefined" if backend is None else str(backend),
                         engines, name, cpu_engine)
    _State.world = world
    GroupMember.WORLD = world
    _barrier_through_store(world, "init")


def _barrier_through_store(group, what):
    """Wait until every rank of ``group`` reached this point (for setup steps, without an engine)."""
    watch = group.next_watch(what)
    key = f"store-barrier/{watch.sequence}"
    group.store.add(key, 1)
    seconds = group.timeout.total_seconds()
    done = f"{key}/done"
    if int(group.store.add(key, 0)) == group.size():
        group.store.set(done, "1")
    try:
        group.store.wait([done], seconds)
    except StoreTimeoutError:
        raise DistBackendError(f"{what} timed out after {seconds:g} s waiting for the other ranks") from None


def destroy_process_group(group=None):
    """Leave ``group`` (by default the whole job: the default group and every group made from it).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("mpi", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.destroy_process_group(); dist.is_initialized()
        False
    """
    if group is None or group is GroupMember.WORLD:
        world = _world()
        world.close()
        _leave(world)
        _State.world = None
        GroupMember.WORLD = None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.close()


def _leave(world):
    """Record that this rank is done with the store; the rank serving it waits for the others (a short while) so
    that none loses the store in the middle of its last collective."""
    left = world.store.add("left", 1)
    base = world.store.underlying_store
    if getattr(base, "_server", None) is not None and left < world.size():
        try:
            world.store.wait([f"left/{world.size()}"], min(world.timeout.total_seconds(), 30))
        except StoreTimeoutError:
            pass
    if left == world.size():
        world.store.set(f"left/{world.size()}", "1")


def get_rank(group=None):
    """This process's rank in ``group`` (the default group by default); -1 if it is not a member.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.get_rank()
        0
        >>> dist.destroy_process_group()
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).rank()


def get_world_size(group=None):
    """How many ranks ``group`` (the default group by default) holds; -1 if this rank is not a member.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.get_world_size()
        1
        >>> dist.destroy_process_group()
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return _group(group).size()


def get_backend(group=None):
    """The backend name of ``group`` (``"undefined"`` when both engines were asked for with None).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.get_backend()
        'gloo'
        >>> dist.destroy_process_group()
    """
    return _group(group).backend


def get_process_group_ranks(group):
    """The global ranks of ``group``, in group-rank order.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.get_process_group_ranks(dist.group.WORLD)
        [0]
        >>> dist.destroy_process_group()
    """
    return list(_group(group).ranks)


def get_global_rank(group, group_rank):
    """The global rank of ``group_rank`` in ``group``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> pg = dist.new_group([0])
        >>> dist.get_global_rank(pg, 0)
        0
        >>> dist.destroy_process_group()
    """
    return _group(group).ranks[group_rank]


def get_group_rank(group, global_rank):
    """The rank in ``group`` of the process with ``global_rank``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> pg = dist.new_group([0])
        >>> dist.get_group_rank(pg, 0)
        0
        >>> dist.destroy_process_group()
    """
    ranks = _group(group).ranks
    if global_rank not in ranks:
        raise ValueError(f"global rank {global_rank} is not part of the group (its ranks are {ranks})")
    return ranks.index(global_rank)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A process group of the global ``ranks`` (all ranks when None), as ``torch.distributed.new_group``: every rank
    of the default group must call it, with the same ``ranks``, in the same order as the others; ranks outside the
    group get ``GroupMember.NON_GROUP_MEMBER``. Collectives on it take global ranks for ``src``/``dst``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> pg = dist.new_group([0])
        >>> dist.get_rank(pg), dist.get_world_size(pg)
        (0, 1)
        >>> dist.destroy_process_group()
    """
    world = _world()
    ranks = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world.size() for r in ranks):
        raise ValueError(f"new_group ranks {ranks} must be distinct global ranks in 0..{world.size() - 1}")
    _State.groups += 1
    name = f"group{_State.groups}"
    member = world.rank() in ranks
    cpu_engine = None
    if world._cpu_engine is not None:
        cpu_engine = world._cpu_engine.subgroup(member, ranks.index(world.rank()) if member else 0, len(ranks), name)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    engines = world.engines if backend is None else _engines_of(backend)
    store = PrefixStore(name, world.store.underlying_store)
    return ProcessGroup(ranks, ranks.index(world.rank()), store, timeout or world.timeout,
                        world.backend if backend is None else str(backend), engines, name, cpu_engine)


def _run(group, tensor, what, start, async_op, result=None):
    """Start ``start(engine, array)`` on the contiguous data of ``tensor`` (copied back after when it had to be
    made contiguous) and return its Work, or wait for it when not ``async_op``."""
    group = _group(group)
    engine = group.engine_for(tensor)
    array, restore = _contiguous(tensor)
    test, finish = start(engine, array)[:2]

    def complete():
        if finish is not None:
            finish()
        restore()
    work = Work(test, complete, group.timeout, group.next_watch(what), what, result)
    if async_op:
        return work
    work.wait()
    return None


def _contiguous(tensor):
    data = tensor._data
    if data.flags.c_contiguous:
        return data, _version_bumper(tensor)
    xp = tensor._device.backend.xp
    copy = xp.ascontiguousarray(data)

    def restore():
        data[...] = copy
        bump_version(tensor)
    return copy, restore


def _version_bumper(tensor):
    return functools.partial(bump_version, tensor)


def _op_name(op):
    op = ReduceOp.SUM if op is None else op
    if not isinstance(op, ReduceOp._Op):
        raise TypeError(f"op must be a ReduceOp (ReduceOp.SUM, AVG, PRODUCT, MIN, MAX), not {op!r}")
    return op.name.lower()


def _group_rank(group, global_rank, what):
    group = _group(group)
    if global_rank not in group.ranks:
        raise ValueError(f"{what}={global_rank} is not a rank of the group (its global ranks are {group.ranks})")
    return group.ranks.index(global_rank)


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the ranks of ``group`` with ``op``, in place on every rank.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> t = agnostic.tensor([1., 2.])
        >>> dist.all_reduce(t, op=dist.ReduceOp.SUM); t
        tensor([1., 2.])
        >>> dist.destroy_process_group()
    """
    name = _op_name(op)
    return _run(group, tensor, "all_reduce", lambda engine, array: engine.all_reduce(array, name), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy ``tensor`` of rank ``src`` (a global rank) into ``tensor`` of every rank of ``group``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> t = agnostic.tensor([1., 2.])
        >>> dist.broadcast(t, src=0); t
        tensor([1., 2.])
        >>> dist.destroy_process_group()
    """
    root = _root(group, src, group_src, "src")
    return _run(group, tensor, "broadcast", lambda engine, array: engine.broadcast(array, root), async_op)


def _root(group, global_rank, group_rank, what):
    if group_rank is not None:
        return group_rank
    if global_rank is None:
        raise ValueError(f"pass {what}= (the global rank) or group_{what}= (the rank within the group)")
    return _group_rank(group, global_rank, what)


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduce ``tensor`` across ``group`` into ``tensor`` of rank ``dst`` (the others' tensors are left as they
    were).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> t = agnostic.tensor([1., 2.])
        >>> dist.reduce(t, dst=0, op=dist.ReduceOp.SUM); t
        tensor([1., 2.])
        >>> dist.destroy_process_group()
    """
    name, root = _op_name(op), _root(group, dst, group_dst, "dst")
    return _run(group, tensor, "reduce", lambda engine, array: engine.reduce(array, name, root), async_op)


def _check_same(tensors, reference, what):
    for tensor in tensors:
        if tensor.dtype != reference.dtype or tensor.device != reference.device:
            raise ValueError(f"{what}: every tensor must have the input's dtype ({reference.dtype}) and device "
                             f"({reference.device}); got {tensor.dtype} on {tensor.device}")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's ``input_tensor`` into ``output_tensor`` (``world_size`` times as large), concatenated
    along the first dimension (or stacked, when ``output_tensor`` has one more dimension).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = agnostic.zeros(1, 2)
        >>> dist.all_gather_into_tensor(out, agnostic.tensor([1., 2.])); out
        tensor([[1., 2.]])
        >>> dist.destroy_process_group()
    """
    size = _group(group).size()
    _check_same([output_tensor], input_tensor, "all_gather_into_tensor")
    if output_tensor.numel() != input_tensor.numel() * size:
        raise ValueError(f"all_gather_into_tensor: output_tensor must hold world_size ({size}) x "
                         f"{input_tensor.numel()} elements, not {output_tensor.numel()}")
    source = input_tensor._data if input_tensor._data.flags.c_contiguous else \
        input_tensor._device.backend.xp.ascontiguousarray(input_tensor._data)
    return _run(group, output_tensor, "all_gather_into_tensor",
                lambda engine, array: engine.all_gather(array, source), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list`` (one tensor per rank) with every rank's ``tensor``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = [agnostic.zeros(2)]
        >>> dist.all_gather(out, agnostic.tensor([1., 2.])); out
        [tensor([1., 2.])]
        >>> dist.destroy_process_group()
    """
    size = _group(group).size()
    if len(tensor_list) != size:
        raise ValueError(f"all_gather: tensor_list must hold one tensor per rank ({size}), not {len(tensor_list)}")
    _check_same(tensor_list, tensor, "all_gather")
    xp = tensor._device.backend.xp
    gathered = _empty_like_stack(tensor, size)
    work = all_gather_into_tensor(gathered, tensor, group, async_op=True)
    return _then(work, lambda: _unstack(gathered, tensor_list, xp), async_op, tensor_list)


def _empty_like_stack(tensor, count):
    return _wrap(tensor._device.backend.xp.empty((count, *tensor._data.shape), tensor._data.dtype), tensor._device)


def _unstack(stacked, tensors, xp):
    for index, tensor in enumerate(tensors):
        tensor._data[...] = stacked._data[index].reshape(tensor._data.shape)
        bump_version(tensor)


def _then(work, after, async_op, result=None):
    """A Work that runs ``after`` once ``work`` is done; waited for here unless ``async_op``."""
    combined = Work(work.is_completed, after, None, None, result=result)
    combined.wait = _waiting(work, combined)
    if async_op:
        return combined
    combined.wait()
    return None


def _waiting(inner, outer):
    original = Work.wait

    def wait(timeout=None):
        inner.wait(timeout)
        return original(outer)
    return wait


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``input`` (``world_size`` chunks along the first dimension) across ``group``; rank ``i`` gets the
    reduced chunk ``i`` in ``output``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = agnostic.zeros(2)
        >>> dist.reduce_scatter_tensor(out, agnostic.tensor([3., 4.])); out
        tensor([3., 4.])
        >>> dist.destroy_process_group()
    """
    size, name = _group(group).size(), _op_name(op)
    _check_same([output], input, "reduce_scatter_tensor")
    if input.numel() != output.numel() * size:
        raise ValueError(f"reduce_scatter_tensor: input must hold world_size ({size}) x {output.numel()} elements, "
                         f"not {input.numel()}")
    source = input._device.backend.xp.ascontiguousarray(input._data)
    return _run(group, output, "reduce_scatter_tensor",
                lambda engine, array: engine.reduce_scatter(array, source, name), async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce the lists ``input_list`` (one tensor per rank) across ``group``; rank ``i`` gets the reduced
    ``input_list[i]`` in ``output``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = agnostic.zeros(2)
        >>> dist.reduce_scatter(out, [agnostic.tensor([3., 4.])]); out
        tensor([3., 4.])
        >>> dist.destroy_process_group()
    """
    size = _group(group).size()
    if len(input_list) != size:
        raise ValueError(f"reduce_scatter: input_list must hold one tensor per rank ({size}), not {len(input_list)}")
    _check_same(input_list, output, "reduce_scatter")
    xp = output._device.backend.xp
    stacked = _wrap(xp.stack([xp.ascontiguousarray(t._data).reshape(output._data.shape) for t in input_list]),
                    output._device)
    return reduce_scatter_tensor(output, stacked, op, group, async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False, group_dst=None):
    """Gather every rank's ``tensor`` into ``gather_list`` (one tensor per rank) on rank ``dst`` only.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = [agnostic.zeros(2)]
        >>> dist.gather(agnostic.tensor([1., 2.]), out, dst=0); out
        [tensor([1., 2.])]
        >>> dist.destroy_process_group()
    """
    root = _root(group, dst, group_dst, "dst")
    is_root = _group(group).rank() == root
    size = _group(group).size()
    if is_root and (gather_list is None or len(gather_list) != size):
        raise ValueError(f"gather: the dst rank must pass gather_list with one tensor per rank ({size})")
    if not is_root and gather_list:
        raise ValueError("gather: gather_list must be None (or empty) on ranks other than dst")
    xp = tensor._device.backend.xp
    gathered = _empty_like_stack(tensor, size if is_root else 1)
    source = xp.ascontiguousarray(tensor._data)
    work = _run(group, gathered, "gather", lambda engine, array: engine.gather(array, source, root), True)
    after = (lambda: _unstack(gathered, gather_list, xp)) if is_root else (lambda: None)
    return _then(work, after, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False, group_src=None):
    """Send ``scatter_list[i]`` of rank ``src`` into ``tensor`` of rank ``i``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = agnostic.zeros(2)
        >>> dist.scatter(out, [agnostic.tensor([7., 8.])], src=0); out
        tensor([7., 8.])
        >>> dist.destroy_process_group()
    """
    root = _root(group, src, group_src, "src")
    is_root = _group(group).rank() == root
    size = _group(group).size()
    if is_root and (scatter_list is None or len(scatter_list) != size):
        raise ValueError(f"scatter: the src rank must pass scatter_list with one tensor per rank ({size})")
    xp = tensor._device.backend.xp
    if is_root:
        _check_same(scatter_list, tensor, "scatter")
        source = xp.stack([xp.ascontiguousarray(t._data).reshape(tensor._data.shape) for t in scatter_list])
    else:
        source = None
    return _run(group, tensor, "scatter", lambda engine, array: engine.scatter(array, source, root), async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Split ``input`` along the first dimension and send piece ``i`` to rank ``i``; ``output`` receives the
    pieces of every rank in rank order. Without split sizes the first dimension is split evenly.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = agnostic.zeros(2)
        >>> dist.all_to_all_single(out, agnostic.tensor([3., 4.])); out
        tensor([3., 4.])
        >>> dist.destroy_process_group()
    """
    size = _group(group).size()
    _check_same([output], input, "all_to_all_single")
    row_bytes = int(numpy.prod(input._data.shape[1:], dtype=numpy.int64)) * input._data.itemsize

    def counts(split_sizes, tensor, what):
        if split_sizes is None:
            if tensor._data.shape[0] % size:
                raise ValueError(f"all_to_all_single: {what}'s first dimension ({tensor._data.shape[0]}) is not "
                                 f"divisible by the world size ({size}): pass {what}_split_sizes")
            return [tensor._data.shape[0] // size * row_bytes] * size
        if len(split_sizes) != size or sum(split_sizes) != tensor._data.shape[0]:
            raise ValueError(f"all_to_all_single: {what}_split_sizes must give {size} sizes summing to "
                             f"{tensor._data.shape[0]}")
        return [int(s) * row_bytes for s in split_sizes]
    output_counts = counts(output_split_sizes, output, "output")
    input_counts = counts(input_split_sizes, input, "input")
    source = input._device.backend.xp.ascontiguousarray(input._data)
    return _run(group, output, "all_to_all_single",
                lambda engine, array: engine.all_to_all(array, source, output_counts, input_counts), async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Send ``input_tensor_list[i]`` to rank ``i``; ``output_tensor_list[j]`` receives rank ``j``'s piece.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = [agnostic.zeros(2)]
        >>> dist.all_to_all(out, [agnostic.tensor([5., 6.])]); out
        [tensor([5., 6.])]
        >>> dist.destroy_process_group()
    """
    xp = input_tensor_list[0]._device.backend.xp
    source = _wrap(xp.concatenate([xp.ascontiguousarray(t._data).reshape(-1) for t in input_tensor_list]),
                   input_tensor_list[0]._device)
    target = _wrap(xp.empty(sum(t._data.size for t in output_tensor_list), source._data.dtype), source._device)
    work = all_to_all_single(target, source, [t._data.size for t in output_tensor_list],
                             [t._data.size for t in input_tensor_list], group, async_op=True)

    def unpack():
        offset = 0
        for tensor in output_tensor_list:
            tensor._data[...] = target._data[offset:offset + tensor._data.size].reshape(tensor._data.shape)
            offset += tensor._data.size
    return _then(work, unpack, async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of ``group`` has reached the barrier.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.barrier()
        >>> dist.barrier(async_op=True).wait()
        True
        >>> dist.destroy_process_group()
    """
    group_ = _group(group)
    if group_._cpu_engine is not None:
        test, finish = group_._cpu_engine.barrier()
        work = Work(test, finish, group_.timeout, group_.next_watch("barrier"), "barrier")
        if async_op:
            return work
        work.wait()
        return None
    _barrier_through_store(group_, "barrier")
    return completed_work() if async_op else None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that fails after ``timeout`` naming the ranks that did not reach it.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> import datetime
        >>> dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
        >>> dist.destroy_process_group()
    """
    group_ = _group(group)
    watch = group_.next_watch("monitored_barrier")
    watch.arrived()
    seconds = (timeout or group_.timeout).total_seconds()
    keys = [watch._key(position) for position in range(group_.size())]
    try:
        group_.store.wait(keys, seconds)
    except StoreTimeoutError:
        raise DistBackendError(f"monitored_barrier timed out after {seconds:g} s: rank(s) {watch.missing()} "
                               "never reached it") from None


def _point_to_point(tensor, peer, group, tag, what, sending):
    group_ = _group(group)
    engine = group_.engine_for(tensor)
    peer_rank = None if peer is None else _group_rank(group, peer, "dst" if sending else "src")
    if peer_rank == group_.rank():
        raise ValueError(f"{what}: a rank cannot {what} to/from itself (rank {peer})")
    array, restore = _contiguous(tensor)
    if sending:
        test, finish = engine.send(array, peer_rank, tag)
        status = None
    else:
        test, finish, status = engine.receive(array, peer_rank, tag)

    def complete():
        if finish is not None:
            finish()
        restore()
    work = Work(test, complete, group_.timeout, None, what)
    work._source = lambda: group_.ranks[status.Get_source()] if status is not None else peer
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send ``tensor`` to rank ``dst``, waiting until it has been sent.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.send(agnostic.tensor([1., 2.]), dst=0)  # a world of one has no other rank
        Traceback (most recent call last):
            ...
        ValueError: send: a rank cannot send to/from itself (rank 0)
        >>> dist.destroy_process_group()
    """
    dst = _group(group).ranks[group_dst] if group_dst is not None else dst
    _point_to_point(tensor, dst, group, tag, "send", True).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into ``tensor`` from rank ``src`` (any rank when None); returns the sender's rank.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.recv(agnostic.zeros(2), src=0)  # a world of one has no other rank
        Traceback (most recent call last):
            ...
        ValueError: recv: a rank cannot recv to/from itself (rank 0)
        >>> dist.destroy_process_group()
    """
    src = _group(group).ranks[group_src] if group_src is not None else src
    work = _point_to_point(tensor, src, group, tag, "recv", False)
    work.wait()
    return work._source()


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Start sending ``tensor`` to rank ``dst``; returns a Work to ``wait()`` on.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.isend(agnostic.tensor([1., 2.]), dst=0)  # a world of one has no other rank
        Traceback (most recent call last):
            ...
        ValueError: send: a rank cannot send to/from itself (rank 0)
        >>> dist.destroy_process_group()
    """
    dst = _group(group).ranks[group_dst] if group_dst is not None else dst
    return _point_to_point(tensor, dst, group, tag, "send", True)


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Start receiving into ``tensor`` from rank ``src``; returns a Work to ``wait()`` on.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.irecv(agnostic.zeros(2), src=0)  # a world of one has no other rank
        Traceback (most recent call last):
            ...
        ValueError: recv: a rank cannot recv to/from itself (rank 0)
        >>> dist.destroy_process_group()
    """
    src = _group(group).ranks[group_src] if group_src is not None else src
    return _point_to_point(tensor, src, group, tag, "recv", False)


class P2POp:
    """A point-to-point operation for ``batch_isend_irecv``: ``P2POp(dist.isend, tensor, peer)``.

        >>> import agnostic.distributed as dist
        >>> op = dist.P2POp(dist.isend, agnostic.tensor([1., 2.]), peer=1)
        >>> op.op is dist.isend, op.peer
        (True, 1)
    """

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag
        if group_peer is not None:
            self.peer = _group(group).ranks[group_peer]


def batch_isend_irecv(p2p_op_list):
    """Start every ``P2POp`` of the list; returns their Works.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> dist.batch_isend_irecv([])
        []
        >>> dist.batch_isend_irecv([dist.P2POp(dist.isend, agnostic.tensor([1.]), 0)])
        Traceback (most recent call last):
            ...
        ValueError: send: a rank cannot send to/from itself (rank 0)
        >>> dist.destroy_process_group()
    """
    return [op.op(op.tensor, op.peer, op.group, op.tag) for op in p2p_op_list]


def _object_engine_device(group):
    group_ = _group(group)
    if group_._cpu_engine is not None:
        return "cpu"
    return f"cuda:{_cuda.current_device()}"


def _objects_to_tensor(objects, device):
    import agnostic
    payload = numpy.frombuffer(pickle.dumps(objects), numpy.uint8)
    return agnostic.from_numpy(payload.copy()).to(device)


def _tensor_to_object(tensor, size):
    import agnostic  # noqa: F401
    return pickle.loads(tensor.cpu().numpy()[:size].tobytes())


def all_gather_object(object_list, obj, group=None):
    """Fill ``object_list`` (one slot per rank) with every rank's picklable ``obj``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group(init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> gathered = [None]
        >>> dist.all_gather_object(gathered, {"rank": dist.get_rank()}); gathered
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    import agnostic
    size = _group(group).size()
    device = _object_engine_device(group)
    payload = _objects_to_tensor(obj, device)
    sizes = [agnostic.zeros(1, dtype=agnostic.int64, device=device) for _ in range(size)]
    all_gather(sizes, agnostic.tensor([payload.numel()], dtype=agnostic.int64, device=device), group)
    longest = max(int(s.item()) for s in sizes)
    padded = agnostic.zeros(longest, dtype=agnostic.uint8, device=device)
    padded[:payload.numel()] = payload
    pieces = [agnostic.empty(longest, dtype=agnostic.uint8, device=device) for _ in range(size)]
    all_gather(pieces, padded, group)
    object_list[:] = [_tensor_to_object(piece, int(s.item())) for piece, s in zip(pieces, sizes)]


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replace ``object_list``'s items on every rank by those of rank ``src`` (picklable objects).

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> objects = ["config", {"lr": 0.1}]
        >>> dist.broadcast_object_list(objects, src=0); objects
        ['config', {'lr': 0.1}]
        >>> dist.destroy_process_group()
    """
    import agnostic
    root = _root(group, src, group_src, "src")
    device = device or _object_engine_device(group)
    is_root = _group(group).rank() == root
    payload = _objects_to_tensor(list(object_list), device) if is_root else None
    length = agnostic.tensor([payload.numel() if is_root else 0], dtype=agnostic.int64, device=device)
    broadcast(length, group=group, group_src=root)
    buffer = payload if is_root else agnostic.empty(int(length.item()), dtype=agnostic.uint8, device=device)
    broadcast(buffer, group=group, group_src=root)
    if not is_root:
        object_list[:] = _tensor_to_object(buffer, int(length.item()))


def gather_object(obj, object_gather_list=None, dst=0, group=None, group_dst=None):
    """Gather every rank's picklable ``obj`` into ``object_gather_list`` on rank ``dst``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = [None]
        >>> dist.gather_object({"rank": 0}, out, dst=0); out
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    gathered = [None] * _group(group).size()
    all_gather_object(gathered, obj, group)
    if _group(group).rank() == _root(group, dst, group_dst, "dst"):
        object_gather_list[:] = gathered


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0, group=None,
                        group_src=None):
    """Rank ``i`` receives ``scatter_object_input_list[i]`` of rank ``src`` in ``scatter_object_output_list[0]``.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> out = [None]
        >>> dist.scatter_object_list(out, ["for rank 0"], src=0); out
        ['for rank 0']
        >>> dist.destroy_process_group()
    """
    root = _root(group, src, group_src, "src")
    everything = [list(scatter_object_input_list) if _group(group).rank() == root else None]
    broadcast_object_list(everything, group=group, group_src=root)
    scatter_object_output_list[0] = everything[0][_group(group).rank()]


__all__ = [
    "Backend", "DistBackendError", "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp",
    "Store", "TCPStore", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "default_pg_timeout", "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "isend", "monitored_barrier", "new_group", "recv", "reduce", "reduce_op",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]
