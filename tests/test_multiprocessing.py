"""agnostic.multiprocessing: tensors shared between processes, on CPU (both strategies) and CUDA (IPC)."""

import gc
import multiprocessing
import os
import pickle
import subprocess
import sys
import time
from multiprocessing.reduction import ForkingPickler

import numpy
import pytest

import agnostic
import agnostic.multiprocessing as mp
from agnostic._backends import cupy_loader
from agnostic.multiprocessing import reductions

import test_multiprocessing_workers as workers
from conftest import CUDA_DEVICES

TIMEOUT = workers.TIMEOUT
STRATEGIES = sorted(mp.get_all_sharing_strategies())


@pytest.fixture(params=STRATEGIES)
def strategy(request):
    """Each sharing strategy in turn, restored afterwards."""
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy(request.param)
    yield request.param
    mp.set_sharing_strategy(previous)


@pytest.fixture(autouse=True)
def no_children_left():
    """No test leaves a process behind, even when it fails half-way."""
    yield
    for child in multiprocessing.active_children():
        child.kill()
        child.join(TIMEOUT)


@pytest.fixture(autouse=True, scope="module")
def nothing_left_in_dev_shm():
    """No shared-memory segment outlives the tests that made it. (/dev/shm is global: run these files alone, not
    beside other tests under pytest-xdist.)"""
    before = shm_entries()
    yield
    agnostic.cuda.ipc_collect()  # counter files of CUDA tensors sent, once their consumers are gone
    assert_shm_back_to(before)


def shm_entries():
    """What /dev/shm holds, less the CUDA driver's own files (``cuda.shm.*``, made for IPC events and removed when
    the process exits)."""
    entries = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    return {entry for entry in entries if not entry.startswith("cuda.shm.")}


def close(*queues):
    """Close queues and wait for their feeder threads: their semaphores are files in /dev/shm too."""
    for queue in queues:
        queue.close()
        queue.join_thread()


def assert_shm_back_to(before):
    """/dev/shm holds nothing it did not hold before (waiting a little for semaphores of queues just dropped).
    Entries may have gone: collecting here also removes what earlier tests left for ``ipc_collect``."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        gc.collect()
        left = shm_entries() - before
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert not left


def start(context, target, *args):
    # Earlier tests' queues are garbage whose finalizers unregister their semaphores with multiprocessing's resource
    # tracker, under the tracker's lock, in whatever thread the collector runs in (a queue's feeder thread too). A
    # fork at that moment gives the child the lock held, and the child hangs at its first shared tensor
    # (CPython issue 96971): collect them here, before forking.
    gc.collect()
    process = context.Process(target=target, args=args, daemon=True)
    process.start()
    return process


def join(process):
    process.join(TIMEOUT)
    assert not process.is_alive(), "child did not finish in time"
    assert process.exitcode == 0


# ----- the module --------------------------------------------------------------------------------------------
def test_is_a_drop_in_for_multiprocessing():
    for name in multiprocessing.__all__:
        assert hasattr(mp, name), name
    assert mp.Queue is multiprocessing.Queue and mp.connection is multiprocessing.connection
    assert mp.shared_memory.SharedMemory is not None
    for name in ("spawn", "start_processes", "ProcessContext", "ProcessRaisedException", "ProcessExitedException",
                 "get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"):
        assert name in mp.__all__
    with pytest.raises(AttributeError):
        mp.no_such_name


def test_import_agnostic_imports_neither_this_module_nor_cupy():
    code = ("import sys, agnostic; assert 'agnostic.multiprocessing' not in sys.modules; "
            "import agnostic.multiprocessing; assert 'cupy' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=TIMEOUT,
                   env={**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(agnostic.__file__))})


def test_sharing_strategies():
    if sys.platform.startswith("linux"):
        assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
        assert mp.get_sharing_strategy() == "file_descriptor"
    previous = mp.get_sharing_strategy()
    try:
        mp.set_sharing_strategy("file_system")
        assert mp.get_sharing_strategy() == "file_system"
        with pytest.raises(ValueError, match="file_system"):
            mp.set_sharing_strategy("carrier_pigeon")
    finally:
        mp.set_sharing_strategy(previous)


def test_reducers_are_registered_for_every_tensor_class():
    table = ForkingPickler._extra_reducers
    assert table[agnostic.Tensor] is reductions.reduce_tensor
    assert table[workers.Tagged] is reductions.reduce_tensor

    class DefinedLater(agnostic.Tensor):
        __slots__ = ()

    assert table[DefinedLater] is reductions.reduce_tensor


def test_only_interprocess_events_can_be_sent():
    with pytest.raises(RuntimeError, match="interprocess=True"):
        pickle.dumps(agnostic.cuda.Event())


# ----- share_memory_ in one process --------------------------------------------------------------------------
def test_share_memory_moves_once_and_keeps_values(strategy):
    tensor = agnostic.arange(12.0).reshape(3, 4)
    assert not tensor.is_shared()
    assert tensor.share_memory_() is tensor
    assert tensor.is_shared() and tensor.tolist() == numpy.arange(12.0).reshape(3, 4).tolist()
    pointer = tensor.data_ptr()
    tensor.share_memory_()
    assert tensor.data_ptr() == pointer
    view = tensor[1:]
    assert view.is_shared()


def test_share_memory_layouts(strategy):
    base = agnostic.arange(24.0).reshape(4, 6)
    transposed = base.t()
    transposed.share_memory_()
    assert transposed.stride() == (1, 6) and transposed.tolist() == base.t().tolist()
    sparse = base[:, ::3]
    sparse.share_memory_()
    assert sparse.is_contiguous() and sparse.tolist() == base[:, ::3].tolist()
    flipped = agnostic.from_numpy(numpy.arange(5.0)[::-1].copy()[::-1])
    flipped.share_memory_()
    assert flipped.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0][::-1]
    empty = agnostic.zeros(0, 3)
    assert empty.share_memory_().is_shared() and empty.shape == (0, 3)
    scalar = agnostic.tensor(2.5).share_memory_()
    assert scalar.item() == 2.5 and scalar.is_shared()


def test_pickle_outside_multiprocessing_still_copies():
    tensor = agnostic.arange(3.0)
    copy = pickle.loads(pickle.dumps(tensor))
    assert copy.tolist() == [0.0, 1.0, 2.0] and not tensor.is_shared() and not copy.is_shared()


def test_non_leaf_that_requires_grad_is_refused():
    leaf = agnostic.ones(3)
    if not hasattr(leaf, "requires_grad_"):
        pytest.skip("autograd is not installed")
    result = leaf.requires_grad_() * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing"):
        ForkingPickler.dumps(result)
    ForkingPickler.dumps(result.detach())


# ----- between processes -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_in_place_writes_are_seen_both_ways(strategy, method):
    if method == "spawn":
        _in_place_writes_seen_both_ways(method)
        return
    # Forked from a fresh interpreter rather than from this one, which has run many threads: a fork while another
    # thread holds the resource tracker's lock leaves it held in the child, which then hangs registering its shared
    # memory (CPython issue 96971; it hung this test in two of five CI runs).
    code = (f"import agnostic.multiprocessing as mp, test_multiprocessing as t; mp.set_sharing_strategy({strategy!r}); "
            "t._in_place_writes_seen_both_ways('fork')")
    paths = (os.path.dirname(os.path.abspath(__file__)), os.path.dirname(os.path.dirname(agnostic.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, timeout=3 * TIMEOUT,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})


def _in_place_writes_seen_both_ways(method):
    """A tensor sent to a child is written in place there and seen here; one the child sends back is written here
    and seen there."""
    context = mp.get_context(method)
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.add_one_and_reply, inbox, outbox)
    tensor = agnostic.zeros(4)
    inbox.put(tensor)
    tag, child_saw_shared, theirs = outbox.get(timeout=TIMEOUT)
    assert tag == "added" and child_saw_shared
    assert tensor.is_shared() and tensor.tolist() == [1.0] * 4
    assert theirs.is_shared() and theirs.tolist() == [7.0] * 3
    theirs[1] = -2.0
    tensor[0] = 5.0
    inbox.put("look")
    assert outbox.get(timeout=TIMEOUT) == ("seen", [7.0, -2.0, 7.0], [5.0, 1.0, 1.0, 1.0])
    join(child)


def test_process_arguments_are_shared_with_spawn(strategy):
    context = mp.get_context("spawn")
    tensor = agnostic.zeros(3)
    context_run = mp.start_processes(workers.write_index, args=(tensor,), nprocs=3, start_method="spawn",
                                     join=False)
    while not context_run.join(TIMEOUT):
        pass
    assert tensor.tolist() == [10.0, 11.0, 12.0]
    del context


def test_containers_and_views(strategy):
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.add_to_all, inbox, outbox)
    base = agnostic.zeros(10).share_memory_()
    flipped = agnostic.from_numpy(numpy.zeros(4)[::-1])  # negative strides
    columns = agnostic.zeros(3, 4).t()
    tensors = [agnostic.zeros(2) for _ in range(5)] + [base[2:5], base[5:], flipped, columns]
    named = {"x": agnostic.ones(3)}
    inbox.put((tensors, named))
    assert outbox.get(timeout=TIMEOUT) == 9
    assert [t.tolist() for t in tensors[:5]] == [[float(i)] * 2 for i in range(5)]
    assert base.tolist() == [0.0, 0.0, 5.0, 5.0, 5.0, 6.0, 6.0, 6.0, 6.0, 6.0]
    assert flipped.stride() == (-1,) and flipped.tolist() == [7.0] * 4
    assert columns.stride() == (1, 4) and columns.tolist() == [[8.0] * 3] * 4
    assert named["x"].tolist() == [-1.0] * 3
    join(child)


def test_many_tensors_in_flight_leave_nothing_behind(strategy):
    count = 150
    before = shm_entries()
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    tensors = [agnostic.full((8,), float(i)) for i in range(count)]
    for tensor in tensors:
        inbox.put(tensor)
    child = start(context, workers.add_to_each_message, inbox, outbox, count)
    assert outbox.get(timeout=TIMEOUT) == count
    join(child)
    assert all(t.tolist() == [2.0 * i] * 8 for i, t in enumerate(tensors))
    del tensors, tensor
    close(inbox, outbox)
    del inbox, outbox
    assert_shm_back_to(before)


def test_same_tensor_twice_maps_the_same_memory(strategy):
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.receive_twice, inbox, outbox)
    tensor = agnostic.zeros(5)
    inbox.put(tensor)
    inbox.put(tensor)
    assert outbox.get(timeout=TIMEOUT) is True
    join(child)


def test_pool_map_over_tensors(strategy):
    tensors = [agnostic.full((4,), float(i)) for i in range(6)]
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.map(workers.double_in_place, tensors, chunksize=1)
    assert [t.tolist() for t in tensors] == [[2.0 * i] * 4 for i in range(6)]
    assert [total for total, _ in results] == [8.0 * i for i in range(6)]
    assert all(new.tolist() == [2.0 * i + 1] * 4 and new.is_shared() for i, (_, new) in enumerate(results))


def test_subclass_and_its_dict_travel(strategy):
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.report_types, inbox, outbox)
    tagged = reductions._make(workers.Tagged, numpy.zeros(2, numpy.float32), agnostic.device("cpu"),
                              {"label": "mine", "_version": 3})
    items = [agnostic.zeros(2), tagged]
    expected = [("Tensor", {}, True), ("Tagged", {"label": "mine"}, True)]
    parameter_class = _parameter_class()
    if parameter_class is not None:
        items.append(parameter_class(agnostic.zeros(2)))
        expected.append((parameter_class.__name__, {"_requires_grad": True}, True))
    inbox.put(items)
    assert outbox.get(timeout=TIMEOUT) == expected
    assert all(item.tolist() == [5.0, 5.0] for item in items)
    join(child)


def _parameter_class():
    try:
        from agnostic.nn.parameter import Parameter
    except ImportError:
        return None
    return Parameter


def test_killed_child_leaves_nothing_behind(strategy):
    before = shm_entries()
    context = mp.get_context("fork")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.hold_then_hang, inbox, outbox)
    tensors = [agnostic.zeros(1000) for _ in range(3)]
    inbox.put(tensors)
    theirs = outbox.get(timeout=TIMEOUT)
    assert outbox.get(timeout=TIMEOUT) == "holding"
    child.kill()
    child.join(TIMEOUT)
    assert child.exitcode == -9
    assert all(t.tolist() == [3.0] * 1000 for t in tensors)
    assert theirs.tolist() == [0.0, 1.0, 2.0, 3.0]
    del tensors, theirs
    close(inbox, outbox)
    del inbox, outbox
    assert_shm_back_to(before)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_consumer_lets_go_before_the_producer_exits(strategy, method):
    before = shm_entries()
    context = mp.get_context(method)
    outbox, go = context.Queue(), context.Queue()
    child = start(context, workers.send_own_then_exit, outbox, go)
    received = outbox.get(timeout=TIMEOUT)
    assert received.tolist() == [4.0, 4.0]
    del received
    gc.collect()
    go.put("exit")
    join(child)
    close(outbox, go)
    del outbox, go
    assert_shm_back_to(before)


def test_file_system_tensor_outlives_its_producer():
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        before = shm_entries()
        context = mp.get_context("fork")
        outbox = context.Queue()
        child = start(context, workers.send_own_then_exit, outbox, None)
        join(child)
        received = outbox.get(timeout=TIMEOUT)
        assert received.tolist() == [4.0, 4.0]
        del received
        close(outbox)
        del outbox
        assert_shm_back_to(before)
    finally:
        mp.set_sharing_strategy(previous)


# ----- spawn -------------------------------------------------------------------------------------------------
def test_spawn_runs_fn_with_rank(strategy):
    tensor = agnostic.zeros(2)
    assert mp.spawn(workers.write_index, args=(tensor,), nprocs=2) is None
    assert tensor.tolist() == [10.0, 11.0]


def test_spawn_reraises_a_childs_exception_with_traceback():
    with pytest.raises(mp.ProcessRaisedException, match="process one failed on purpose") as raised:
        mp.spawn(workers.raise_on_one, nprocs=2)
    assert raised.value.error_index == 1 and "Traceback" in str(raised.value)
    assert "ValueError" in raised.value.msg


def test_spawn_reports_a_signal_and_an_exit_code():
    with pytest.raises(mp.ProcessExitedException, match="SIGKILL") as raised:
        mp.spawn(workers.kill_self, nprocs=2)
    assert raised.value.exit_code == -9 and raised.value.signal_name == "SIGKILL"
    with pytest.raises(mp.ProcessExitedException, match="exit code 3") as raised:
        mp.spawn(workers.exit_with_code, args=(3,), nprocs=1)
    assert raised.value.exit_code == 3


def test_spawn_without_join_returns_the_context():
    context = mp.spawn(workers.exit_with_code, args=(0,), nprocs=2, join=False)
    assert isinstance(context, mp.ProcessContext) and len(context.pids()) == 2
    while not context.join(TIMEOUT):
        pass
    assert context.join() is True


def test_spawn_warns_about_other_start_methods():
    with pytest.warns(FutureWarning, match="start_processes"):
        mp.spawn(workers.exit_with_code, args=(0,), nprocs=1, start_method="fork")


def test_cuda_in_a_forked_child_says_to_use_spawn(monkeypatch):
    # Simulate a parent that has started CUDA (the real thing is tested on GPU machines below).
    cupy = pytest.importorskip("cupy")

    monkeypatch.setattr(cupy_loader.state, "initialized", True)
    monkeypatch.setattr(cupy_loader.state, "cupy", cupy)
    context = mp.get_context("fork")
    outbox = context.Queue()
    child = start(context, workers.use_cuda_after_fork, outbox)
    message = outbox.get(timeout=TIMEOUT)
    join(child)
    assert message is not None and "forked subprocess" in message and "set_start_method('spawn')" in message


# ----- CUDA --------------------------------------------------------------------------------------------------
def cuda_allocated(device):
    """Bytes of GPU memory this process has allocated on ``device`` (agnostic's allocator, else CuPy's pool), once
    what consumers no longer use is freed."""
    gc.collect()
    agnostic.cuda.ipc_collect()
    try:
        from agnostic.cuda import memory
    except ImportError:
        memory = None
    if memory is not None and hasattr(memory, "memory_allocated"):
        return memory.memory_allocated(device)
    import cupy

    return cupy.get_default_memory_pool().used_bytes()


def test_cuda_queue_in_place_writes_are_seen_both_ways(cuda_device):
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.cuda_add_one_and_reply, inbox, outbox)
    tensor = agnostic.zeros(4, device=cuda_device)
    inbox.put(tensor)
    tag, device_text, theirs = outbox.get(timeout=TIMEOUT)
    assert tag == "added" and device_text == str(cuda_device)
    assert theirs.device == cuda_device and theirs.is_shared() and theirs.tolist() == [7.0] * 3
    assert tensor.tolist() == [1.0] * 4
    theirs[1] = -2.0
    tensor[0] = 5.0
    agnostic.cuda.synchronize()
    inbox.put("look")
    assert outbox.get(timeout=TIMEOUT) == ("seen", [7.0, -2.0, 7.0], [5.0, 1.0, 1.0, 1.0])
    del theirs
    inbox.put("done")
    join(child)


def test_cuda_views_offsets_and_coming_back(cuda_device):
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.cuda_views, inbox, outbox)
    base = agnostic.zeros(4, 6, device=cuda_device)
    small = [agnostic.zeros(3, device=cuda_device) for _ in range(3)]  # suballocated from one pool segment
    items = [base[1:3, 2:], base.t()[1], *small]  # a block and a strided column of one tensor, apart
    inbox.put(items)
    seen = outbox.get(timeout=TIMEOUT)
    assert seen == [[[100.0] * 4] * 2, [101.0] * 4, [102.0] * 3, [103.0] * 3, [104.0] * 3]
    assert base[1:3, 2:].tolist() == [[100.0] * 4] * 2 and base[:, 1].tolist() == [101.0] * 4
    assert base[:, 0].tolist() == [0.0] * 4 and base[0, 2:].tolist() == [0.0] * 4  # nothing else written
    assert [t.tolist() for t in small] == [[102.0] * 3, [103.0] * 3, [104.0] * 3]
    back = outbox.get(timeout=TIMEOUT)
    assert back.data_ptr() == items[0].data_ptr()
    inbox.put("done")
    join(child)


def test_cuda_many_in_flight_then_memory_is_freed(cuda_device):
    count = 120
    before_shm = shm_entries()
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.cuda_many, inbox, outbox, count)
    baseline = cuda_allocated(cuda_device)
    tensors = [agnostic.full((1000,), float(i), device=cuda_device) for i in range(count)]
    for tensor in tensors:
        inbox.put(tensor)
    assert outbox.get(timeout=TIMEOUT) == count
    join(child)
    assert all(t.tolist() == [2.0 * i] * 1000 for i, t in enumerate(tensors))
    del tensors, tensor
    assert cuda_allocated(cuda_device) == baseline
    close(inbox, outbox)
    del inbox, outbox
    assert_shm_back_to(before_shm)


def test_cuda_forwarded_to_a_third_process(cuda_device):
    context = mp.get_context("spawn")
    to_first, from_first = context.Queue(), context.Queue()
    to_second, from_second = context.Queue(), context.Queue()
    first = start(context, workers.cuda_forward, to_first, from_first)
    second = start(context, workers.cuda_write_and_confirm, to_second, from_second)
    tensor = agnostic.zeros(5, device=cuda_device)
    to_first.put(tensor)
    forwarded = from_first.get(timeout=TIMEOUT)  # came back here: our own memory
    assert forwarded.data_ptr() == tensor.data_ptr()
    to_second.put(forwarded)
    assert from_second.get(timeout=TIMEOUT) == "written"
    assert tensor.tolist() == [9.0] * 5
    for inbox in (to_first, to_second):
        inbox.put("done")
    join(first)
    join(second)


def test_cuda_killed_child_releases_memory(cuda_device):
    before_shm = shm_entries()
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.cuda_hold_then_hang, inbox, outbox)
    baseline = cuda_allocated(cuda_device)
    tensor = agnostic.zeros(1 << 20, device=cuda_device)
    inbox.put(tensor)
    assert outbox.get(timeout=TIMEOUT) == "holding"
    child.kill()
    child.join(TIMEOUT)
    assert tensor[:3].tolist() == [4.0] * 3
    del tensor
    assert cuda_allocated(cuda_device) == baseline
    close(inbox, outbox)
    del inbox, outbox
    assert_shm_back_to(before_shm)


def test_cuda_spawn_writes_into_a_shared_tensor(cuda_device):
    tensor = agnostic.zeros(2, device=cuda_device)
    mp.spawn(workers.cuda_write_index, args=(tensor,), nprocs=2)
    assert tensor.tolist() == [10.0, 11.0]


def test_cuda_interprocess_event(cuda_device):
    try:
        from agnostic.cuda.streams import Event
    except ImportError:
        pytest.skip("agnostic.cuda.streams.Event does not exist yet")
    context = mp.get_context("spawn")
    inbox, outbox = context.Queue(), context.Queue()
    child = start(context, workers.cuda_wait_event, inbox, outbox)
    with agnostic.cuda.device(cuda_device):
        tensor = agnostic.zeros(1 << 16, device=cuda_device)
        event = Event(interprocess=True)
        tensor.add_(3.0)
        event.record()
    inbox.put((tensor, event))
    assert outbox.get(timeout=TIMEOUT) == [3.0] * (1 << 16)
    join(child)


@pytest.mark.skipif(not CUDA_DEVICES, reason="no CUDA device")
def test_real_cuda_in_a_forked_child_says_to_use_spawn():
    agnostic.zeros(1, device="cuda")  # CUDA is initialized here, before the fork
    context = mp.get_context("fork")
    outbox = context.Queue()
    child = start(context, workers.use_cuda_after_fork, outbox)
    message = outbox.get(timeout=TIMEOUT)
    join(child)
    assert message is not None and "set_start_method('spawn')" in message
