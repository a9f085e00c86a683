"""DataLoader: batches from a dataset in the main process or in worker processes (``agnostic.multiprocessing``),
in order, optionally pinned by a background thread, as ``torch.utils.data.DataLoader``."""

import atexit
import itertools
import math
import queue
import threading
import warnings
from typing import Generic

from ... import _backend
from ..._device import Device
from ...ops.random import randint
from . import _worker
from ._collate import default_collate, default_convert, pin_memory as _pin
from .dataset import IterableDataset, _T_co
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")
# Non-empty once the interpreter exits: queues can no longer reach the workers, so don't wait on them.
_exiting: list = []


@atexit.register
def _note_exit():
    _exiting.append(True)


def _multiprocessing():
    """``agnostic.multiprocessing``: tensors travel between the workers and the main process in shared memory."""
    from ... import multiprocessing

    return multiprocessing


class _InfiniteConstantSampler(Sampler):
    """The sampler of iterable datasets: None forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader(Generic[_T_co]):
    """Iterate over ``dataset`` in batches, as ``torch.utils.data.DataLoader``.

    ``batch_size``/``drop_last`` build a ``BatchSampler`` over ``sampler`` (``RandomSampler`` with ``generator``
    when ``shuffle``, else ``SequentialSampler``), unless ``batch_sampler`` is given; ``batch_size=None`` yields
    single samples through ``default_convert``. ``collate_fn`` (default ``default_collate``) builds each batch.
    With ``num_workers > 0``, worker processes from ``multiprocessing_context`` (a start method name or context of
    ``agnostic.multiprocessing``) fetch batches: ``prefetch_factor`` batches ahead per worker, ``worker_init_fn``
    called in each, ``persistent_workers`` kept across epochs, ``timeout`` seconds at most per batch, and batches
    come out in sampler order (``in_order=False``: as they arrive). ``pin_memory`` returns page-locked batches (a
    background thread pins them when workers are used); without CUDA it warns and does not pin, as PyTorch.

        >>> dataset = agnostic.utils.data.TensorDataset(agnostic.arange(10.0), agnostic.arange(10) % 2)
        >>> loader = agnostic.utils.data.DataLoader(dataset, batch_size=4, shuffle=True,
        ...                                         generator=agnostic.Generator().manual_seed(0))
        >>> [labels.shape[0] for _, labels in loader]
        [4, 4, 2]
        >>> x, y = next(iter(agnostic.utils.data.DataLoader(dataset, batch_size=3)))
        >>> x, y
        (tensor([0., 1., 2.]), tensor([0, 1, 0]))
    """

    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._IterableDataset_len_called = None
        self.__initialized = True

    def __setattr__(self, name, value):
        if self.__initialized and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after {self.__class__.__name__} is initialized")
        if name == "multiprocessing_context":
            value = self._checked_context(value)
        super().__setattr__(name, value)

    def _checked_context(self, context):
        if context is None:
            return None
        if self.num_workers == 0:
            raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                             f"(num_workers > 0), but got num_workers={self.num_workers}")
        mp = _multiprocessing()
        if isinstance(context, str):
            valid = mp.get_all_start_methods()
            if context not in valid:
                raise ValueError(f"multiprocessing_context option should specify a valid start method in {valid!r}, "
                                 f"but got multiprocessing_context={context!r}")
            return mp.get_context(context)
        if not hasattr(context, "Process") or not hasattr(context, "Queue"):
            raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                            f"specifying the start method, but got multiprocessing_context={context}")
        return context

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._pin_memory = loader.pin_memory and _cuda_available()
        if loader.pin_memory and not self._pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(randint(0, 2 ** 63 - 1, (1,), generator=loader.generator).item())
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        expected = self._IterableDataset_len_called
        if self._iterable and expected is not None and self._num_yielded > expected:
            warnings.warn(f"Length of IterableDataset {self._dataset} was reported to be {expected} (when accessing "
                          f"len(dataloader)), but {self._num_yielded} samples have been fetched. For multiprocessing "
                          "data-loading, this could be caused by not properly configuring the IterableDataset "
                          "replica at each worker.", stacklevel=2)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


def _cuda_available():
    return _backend.cuda_device_count() > 0


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.create_fetcher(self._iterable, self._dataset, self._auto_collation,
                                               self._collate_fn, self._drop_last)

    def _next_data(self):
        data = self._fetcher.fetch(self._next_index())
        return _pin(data) if self._pin_memory else data


def _pin_memory_loop(in_queue, out_queue, device_index, done_event):
    """The pinning thread: move batches from the workers' queue to the main thread's, pinned."""
    with Device("cuda", device_index).backend.activate():
        while not done_event.is_set():
            try:
                item = in_queue.get(timeout=_worker.MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            idx, data = item
            if not done_event.is_set() and not isinstance(data, _worker.ExceptionWrapper):
                try:
                    data = _pin(data)
                except Exception:
                    data = _worker.ExceptionWrapper(where=f"in pin memory thread for device {device_index}")
                item = (idx, data)
            while not done_event.is_set():
                try:
                    out_queue.put(item, timeout=_worker.MP_STATUS_CHECK_INTERVAL)
                    break
                except queue.Full:
                    continue


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        context = loader.multiprocessing_context or _multiprocessing()
        self._worker_init_fn = loader.worker_init_fn
        self._in_order = loader.in_order
        self._shutdown = False
        self._worker_result_queue = context.Queue()
        self._workers_done_event = context.Event()
        self._index_queues, self._workers = [], []
        try:
            for worker_id in range(self._num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()
                worker = context.Process(
                    target=_worker.worker_loop,
                    args=(self._iterable, self._dataset, index_queue, self._worker_result_queue,
                          self._workers_done_event, self._auto_collation, self._collate_fn, self._drop_last,
                          self._base_seed, self._worker_init_fn, worker_id, self._num_workers,
                          self._persistent_workers),
                    daemon=True)
                worker.start()
                self._index_queues.append(index_queue)
                self._workers.append(worker)
        except BaseException:
            self._workers_status = [True] * len(self._workers)
            self._shutdown_workers()
            raise
        if self._pin_memory:
            self._pin_memory_done_event = threading.Event()
            self._data_queue = queue.Queue()
            self._pin_memory_thread = threading.Thread(
                target=_pin_memory_loop,
                args=(self._worker_result_queue, self._data_queue, _backend.current_cuda_index(),
                      self._pin_memory_done_event),
                daemon=True)
            self._pin_memory_thread.start()
        else:
            self._data_queue = self._worker_result_queue
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}  # send_idx -> (worker_id,) while in flight, (worker_id, data) once here out of order
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for index_queue in self._index_queues:
                index_queue.put(_worker._ResumeIteration())
            pending = self._num_workers
            while pending > 0:  # drops whatever the previous, unfinished epoch left in the queue
                idx, _ = self._get_data()
                if isinstance(idx, _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=_worker.MP_STATUS_CHECK_INTERVAL):
        try:
            return True, self._data_queue.get(timeout=timeout)
        except Exception as error:
            failed = [w for worker_id, w in enumerate(self._workers)
                      if self._workers_status[worker_id] and not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from error
            if isinstance(error, queue.Empty):
                return False, None
            raise

    def _get_data(self):
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        if self._pin_memory:
            while self._pin_memory_thread.is_alive():
                success, data = self._try_get_data()
                if success:
                    return data
            raise RuntimeError("Pin memory thread exited unexpectedly")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, _worker._IterableDatasetStopIteration):
                if self._persistent_workers:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    worker_id = self._task_info.pop(idx)[0]
                    return self._process_data(data, worker_id)
                self._task_info[idx] += (data,)
            else:
                worker_id = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process_data(data, worker_id)

    def _process_data(self, data, worker_id):
        self._workers_num_tasks[worker_id] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _try_put_index(self):
        limit = self._prefetch_factor * self._num_workers
        if self._tasks_outstanding >= limit:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker_id = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_id]:
                if self._in_order or self._workers_num_tasks[worker_id] < limit // sum(self._workers_status):
                    break
        else:
            return  # no active worker left (their iterable datasets are exhausted)
        self._index_queues[worker_id].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_id,)
        self._workers_num_tasks[worker_id] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        self._index_queues[worker_id].put(None)
        self._workers_status[worker_id] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        if _exiting:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()
            return
        try:
            if hasattr(self, "_pin_memory_thread"):
                self._pin_memory_done_event.set()
                self._worker_result_queue.put((None, None))  # wakes the thread at once
                self._pin_memory_thread.join()
            self._workers_done_event.set()
            for worker_id in range(len(self._workers)):
                if self._persistent_workers or self._workers_status[worker_id]:
                    self._mark_worker_as_unavailable(worker_id, shutdown=True)
            for worker in self._workers:
                worker.join(timeout=_worker.MP_STATUS_CHECK_INTERVAL * 5)
            for index_queue in self._index_queues:
                index_queue.cancel_join_thread()
                index_queue.close()
            self._worker_result_queue.cancel_join_thread()
            self._worker_result_queue.close()
        finally:
            for worker in self._workers:
                if worker.is_alive():
                    worker.terminate()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
