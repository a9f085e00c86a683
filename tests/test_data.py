"""agnostic.utils.data: datasets, samplers, collation and the DataLoader (worker processes, order, seeding,
pinning), with PyTorch's semantics. Worker tests pass ``timeout`` so a broken loader fails instead of hanging."""

import collections
import os
import time

import numpy
import pytest

import agnostic
from agnostic.utils.data import (
    BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler, SequentialSampler, Subset,
    SubsetRandomSampler, TensorDataset, default_collate, default_convert, get_worker_info, random_split,
)

from conftest import CUDA_DEVICES

WAIT = 30  # seconds a worker test may wait for one batch before failing


class Squares(Dataset):
    """``i -> (i, i * i)``; sample ``i`` takes ``delays[i % len(delays)]`` seconds (to shuffle arrival order)."""

    def __init__(self, n, delays=(0.0,)):
        self.n, self.delays = n, delays

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        if index >= self.n:
            raise IndexError(index)
        time.sleep(self.delays[index % len(self.delays)])
        return agnostic.tensor(index), agnostic.tensor([float(index * index)])


class WhoAmI(Dataset):
    """Reports the worker (id, pid, seed, a draw of agnostic's RNG, and what worker_init_fn stored)."""

    marker = None

    def __len__(self):
        return 8

    def __getitem__(self, index):
        info = get_worker_info()
        return {"index": index, "worker": info.id, "pid": os.getpid(), "seed": info.seed,
                "marker": type(self).marker, "draw": agnostic.rand(1).item(), "workers": info.num_workers,
                "threads": agnostic.get_num_threads()}


def _mark_worker(worker_id):
    WhoAmI.marker = f"init {worker_id}"


class Failing(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        if index == 2:
            raise ValueError("sample 2 is broken")
        return index


class Dying(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, index):
        os._exit(3)


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        time.sleep(1.5)
        return index


class Stream(IterableDataset):
    """``start..stop-1``, split between workers by ``get_worker_info()`` as PyTorch's documentation shows."""

    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.start, self.stop))
        per_worker = -(-(self.stop - self.start) // info.num_workers)
        begin = self.start + info.id * per_worker
        return iter(range(begin, min(begin + per_worker, self.stop)))

    def __len__(self):
        return self.stop - self.start


# ----- datasets and samplers ---------------------------------------------------------------------------------------
def test_tensor_dataset():
    x, y = agnostic.arange(6).reshape(3, 2), agnostic.tensor([7, 8, 9])
    dataset = TensorDataset(x, y)
    assert len(dataset) == 3
    first, label = dataset[1]
    assert first.tolist() == [2, 3] and label.item() == 8
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(x, agnostic.zeros(4))


def test_subset_and_concat():
    a, b = Squares(3), Squares(2)
    both = a + b
    assert isinstance(both, ConcatDataset) and len(both) == 5
    assert [both[i][0].item() for i in range(5)] == [0, 1, 2, 0, 1]
    assert both[-1][0].item() == 1
    with pytest.raises(ValueError, match="absolute value of index"):
        both[-6]
    subset = Subset(both, [4, 0])
    assert len(subset) == 2 and subset[0][0].item() == 1


def test_random_split_is_seeded_and_complete():
    dataset = Squares(10)
    parts = random_split(dataset, [3, 7], generator=agnostic.Generator().manual_seed(0))
    again = random_split(dataset, [3, 7], generator=agnostic.Generator().manual_seed(0))
    assert [p.indices for p in parts] == [p.indices for p in again]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    assert parts[0].indices + parts[1].indices == agnostic.randperm(10, generator=agnostic.Generator()
                                                                    .manual_seed(0)).tolist()
    fractions = random_split(dataset, [0.25, 0.25, 0.5], generator=agnostic.Generator().manual_seed(1))
    assert [len(p) for p in fractions] == [3, 2, 5]  # floor(2.5), floor(2.5), 5, the remainder to the first
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(dataset, [3, 3])


def test_samplers():
    data = list(range(7))
    assert list(SequentialSampler(data)) == data
    order = list(RandomSampler(data, generator=agnostic.Generator().manual_seed(3)))
    assert order == agnostic.randperm(7, generator=agnostic.Generator().manual_seed(3)).tolist()
    drawn = list(RandomSampler(data, replacement=True, num_samples=40, generator=agnostic.Generator().manual_seed(3)))
    assert len(drawn) == 40 and set(drawn) <= set(data)
    assert len(list(RandomSampler(data, num_samples=10))) == 10
    assert sorted(SubsetRandomSampler([10, 20, 30])) == [10, 20, 30]
    assert list(BatchSampler(range(7), 3, drop_last=False)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(range(7), 3, drop_last=False)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(data, num_samples=0)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(data, replacement=1)


# ----- collation -----------------------------------------------------------------------------------------------------
def test_default_collate_as_pytorch():
    Point = collections.namedtuple("Point", "x y")
    batch = default_collate([
        {"t": agnostic.tensor([1.0, 2.0]), "f": 0.5, "i": 3, "b": True, "s": "a", "n": numpy.array([1, 2], "int32"),
         "p": Point(1, 2.0), "tup": (1, "u"), "l": [1, 2], "ns": numpy.float32(1.5)},
        {"t": agnostic.tensor([3.0, 4.0]), "f": 1.5, "i": 4, "b": False, "s": "b", "n": numpy.array([3, 4], "int32"),
         "p": Point(3, 4.0), "tup": (2, "v"), "l": [3, 4], "ns": numpy.float32(2.5)},
    ])
    assert batch["t"].tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert batch["f"].dtype is agnostic.float64 and batch["i"].dtype is agnostic.int64
    assert batch["b"].dtype is agnostic.bool and batch["b"].tolist() == [True, False]
    assert batch["s"] == ["a", "b"]
    assert batch["n"].dtype is agnostic.int32 and batch["n"].tolist() == [[1, 2], [3, 4]]
    assert isinstance(batch["p"], Point) and batch["p"].y.dtype is agnostic.float64
    assert isinstance(batch["tup"], list) and batch["tup"][0].tolist() == [1, 2] and batch["tup"][1] == ("u", "v")
    assert isinstance(batch["l"], list) and [t.tolist() for t in batch["l"]] == [[1, 3], [2, 4]]
    assert batch["ns"].dtype is agnostic.float32 and batch["ns"].tolist() == [1.5, 2.5]


def test_default_collate_errors():
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([numpy.array(["a"]), numpy.array(["b"])])


def test_default_convert():
    converted = default_convert({"a": numpy.array([1.0, 2.0]), "b": (numpy.int64(3), "s"), "c": 1.5})
    assert converted["a"].dtype is agnostic.float64 and converted["a"].tolist() == [1.0, 2.0]
    assert converted["b"][0].item() == 3 and converted["b"][1] == "s" and converted["c"] == 1.5


# ----- the DataLoader in the main process --------------------------------------------------------------------------
def test_batches_in_order():
    loader = DataLoader(Squares(10), batch_size=4)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].shape == (4, 1)
    assert [len(b[0]) for b in DataLoader(Squares(10), batch_size=4, drop_last=True)] == [4, 4]


def test_no_batching_converts_samples():
    samples = list(DataLoader(Squares(3), batch_size=None))
    assert [s[0].item() for s in samples] == [0, 1, 2] and isinstance(samples[0], list)  # tuples become lists
    assert list(DataLoader([numpy.float64(1.5)], batch_size=None))[0].dtype is agnostic.float64


def test_shuffle_uses_agnostic_rng_and_the_generator():
    def epoch(loader):
        return [i for batch in loader for i in batch[0].tolist()]

    first = DataLoader(Squares(20), batch_size=6, shuffle=True, generator=agnostic.Generator().manual_seed(7))
    second = DataLoader(Squares(20), batch_size=6, shuffle=True, generator=agnostic.Generator().manual_seed(7))
    a, b = epoch(first), epoch(second)
    assert a == b and sorted(a) == list(range(20)) and a != list(range(20))
    assert epoch(first) != a  # the next epoch draws a new order
    agnostic.manual_seed(11)
    c = epoch(DataLoader(Squares(20), batch_size=6, shuffle=True))
    agnostic.manual_seed(11)
    assert epoch(DataLoader(Squares(20), batch_size=6, shuffle=True)) == c


def test_sampler_batch_sampler_and_collate_fn():
    loader = DataLoader(Squares(6), batch_size=2, sampler=[5, 4, 3, 2, 1, 0], collate_fn=lambda b: [s[0].item()
                                                                                                 for s in b])
    assert list(loader) == [[5, 4], [3, 2], [1, 0]]
    loader = DataLoader(Squares(6), batch_sampler=[[0, 5], [2]])
    assert [b[0].tolist() for b in loader] == [[0, 5], [2]] and len(loader) == 2


@pytest.mark.parametrize("options, message", [
    (dict(sampler=[0], shuffle=True), "sampler option is mutually exclusive with shuffle"),
    (dict(batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    (dict(batch_size=None, drop_last=True), "batch_size=None option disables auto-batching"),
    (dict(num_workers=-1), "num_workers option should be non-negative"),
    (dict(timeout=-1), "timeout option should be non-negative"),
    (dict(prefetch_factor=2), "prefetch_factor option could only be specified in multiprocessing"),
    (dict(persistent_workers=True), "persistent_workers option needs num_workers > 0"),
    (dict(multiprocessing_context="spawn"), "multiprocessing_context can only be used with multi-process"),
    (dict(num_workers=1, multiprocessing_context="teleport"), "should specify a valid start method"),
])
def test_invalid_options(options, message):
    with pytest.raises(ValueError, match=message):
        DataLoader(Squares(3), **options)


def test_iterable_dataset_rules():
    assert [b.tolist() for b in DataLoader(Stream(0, 5), batch_size=2)] == [[0, 1], [2, 3], [4]]
    assert [b.tolist() for b in DataLoader(Stream(0, 5), batch_size=2, drop_last=True)] == [[0, 1], [2, 3]]
    assert len(DataLoader(Stream(0, 5), batch_size=2)) == 3
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Stream(0, 5), shuffle=True)


def test_attributes_are_frozen():
    loader = DataLoader(Squares(3))
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 2


def test_get_worker_info_is_none_in_the_main_process():
    assert get_worker_info() is None


def test_pin_memory_without_cuda_warns_and_does_not_pin():
    if CUDA_DEVICES:
        pytest.skip("this machine has CUDA")
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batch = next(iter(DataLoader(Squares(4), batch_size=2, pin_memory=True)))
    assert not batch[0].is_pinned()


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_pins_batches_on_cuda(num_workers):
    if not CUDA_DEVICES:
        pytest.skip("no CUDA device")
    loader = DataLoader(Squares(6), batch_size=2, pin_memory=True, num_workers=num_workers,
                        timeout=WAIT if num_workers else 0)
    batches = list(loader)
    assert len(batches) == 3 and all(t.is_pinned() for batch in batches for t in batch)
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3], [4, 5]]


# ----- worker processes --------------------------------------------------------------------------------------------
def test_workers_keep_sampler_order():
    delays = (0.03, 0.0, 0.01, 0.0)  # later batches are often ready first
    loader = DataLoader(Squares(16, delays), batch_size=2, num_workers=3, timeout=WAIT)
    batches = list(loader)
    assert [b[0].tolist() for b in batches] == [[i, i + 1] for i in range(0, 16, 2)]
    assert batches[-1][1].tolist() == [[196.0], [225.0]]
    assert all(t.is_shared() for batch in batches for t in batch)  # came through agnostic.multiprocessing


def test_workers_out_of_order_when_asked():
    loader = DataLoader(Squares(12, (0.03, 0.0)), batch_size=1, num_workers=2, timeout=WAIT, in_order=False)
    assert sorted(b[0].item() for b in loader) == list(range(12))


def test_worker_info_init_fn_and_seeds():
    loader = DataLoader(WhoAmI(), batch_size=None, num_workers=2, worker_init_fn=_mark_worker, timeout=WAIT,
                        generator=agnostic.Generator().manual_seed(5))
    samples = list(loader)
    assert [s["index"] for s in samples] == list(range(8))
    assert {s["worker"] for s in samples} == {0, 1} and {s["workers"] for s in samples} == {2}
    assert all(s["marker"] == f"init {s['worker']}" for s in samples)
    assert all(s["pid"] != os.getpid() for s in samples)
    # one BLAS thread per worker, as PyTorch's
    assert {s["threads"] for s in samples} == {1}
    seeds = {s["worker"]: s["seed"] for s in samples}
    assert seeds[1] == seeds[0] + 1
    first_draws = {s["worker"]: s["draw"] for s in samples if s["index"] < 2}
    assert first_draws[0] != first_draws[1]  # each worker's agnostic RNG is seeded differently
    again = list(DataLoader(WhoAmI(), batch_size=None, num_workers=2, timeout=WAIT,
                            generator=agnostic.Generator().manual_seed(5)))
    assert [s["draw"] for s in again] == [s["draw"] for s in samples]  # and reproducibly


def test_persistent_workers_survive_epochs():
    loader = DataLoader(WhoAmI(), batch_size=4, num_workers=2, persistent_workers=True, timeout=WAIT,
                        worker_init_fn=_mark_worker)
    first = list(loader)
    iterator = loader._iterator
    second = list(loader)
    assert loader._iterator is iterator
    assert sorted(first[0]["pid"].tolist() + first[1]["pid"].tolist()) == \
        sorted(second[0]["pid"].tolist() + second[1]["pid"].tolist())
    assert [b["index"].tolist() for b in second] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    partial = iter(loader)
    next(partial)  # an unfinished epoch, then a fresh one: stale batches are dropped
    assert [b["index"].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    iterator._shutdown_workers()


def test_prefetch_factor_limits_outstanding_work():
    loader = DataLoader(Squares(20), batch_size=1, num_workers=2, prefetch_factor=3, timeout=WAIT)
    iterator = iter(loader)
    assert iterator._tasks_outstanding == 6
    assert [b[0].item() for b in iterator] == list(range(20))


def test_worker_exception_is_raised_in_the_main_process():
    loader = DataLoader(Failing(), batch_size=None, num_workers=2, timeout=WAIT)
    iterator = iter(loader)
    assert [next(iterator), next(iterator)] == [0, 1]
    with pytest.raises(ValueError, match="(?s)Caught ValueError in DataLoader worker process 0.*sample 2 is broken"):
        next(iterator)
    assert next(iterator) == 3
    with pytest.raises(StopIteration):
        next(iterator)


def test_dead_worker_is_reported():
    loader = DataLoader(Dying(), batch_size=None, num_workers=1)
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(loader)


def test_timeout():
    iterator = iter(DataLoader(Slow(), batch_size=None, num_workers=1, timeout=0.3))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.3 seconds"):
        next(iterator)
    iterator._shutdown_workers()


def test_iterable_dataset_with_workers():
    loader = DataLoader(Stream(0, 11), batch_size=2, num_workers=2, timeout=WAIT)
    items = [i for batch in loader for i in batch.tolist()]
    assert sorted(items) == list(range(11))
    loader = DataLoader(Stream(0, 10), batch_size=None, num_workers=3, timeout=WAIT)
    assert sorted(int(i) for i in loader) == list(range(10))


def test_spawned_workers():
    loader = DataLoader(Squares(6), batch_size=2, num_workers=1, multiprocessing_context="spawn", timeout=60)
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
