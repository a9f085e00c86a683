"""What runs in DataLoader worker processes: the fetch loop, seeding, get_worker_info and exception transport."""

import os
import queue
import random
import sys
import traceback

import numpy

from ..._threads import set_num_threads
from ...ops.random import manual_seed

MP_STATUS_CHECK_INTERVAL = 1.0  # seconds between checks that the other side (main process or workers) is alive

_worker_info = None


class WorkerInfo:
    """Describes the current worker: ``id``, ``num_workers``, ``seed`` and its copy of the ``dataset``.

        >>> info = agnostic.utils.data.WorkerInfo(id=0, num_workers=2, seed=7, dataset=range(4))
        >>> info
        WorkerInfo(id=0, num_workers=2, seed=7, dataset=range(0, 4))
        >>> info.id = 1
        Traceback (most recent call last):
            ...
        RuntimeError: Cannot assign attributes to WorkerInfo objects
    """

    __initialized = False

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            setattr(self, key, value)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, value):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, value)

    def __repr__(self):
        items = ", ".join(f"{key}={getattr(self, key)}" for key in self.__keys)
        return f"{self.__class__.__name__}({items})"


def get_worker_info():
    """In a DataLoader worker process, its ``WorkerInfo``; None in the main process (as PyTorch).

        >>> agnostic.utils.data.get_worker_info() is None
        True
        >>> def worker_ids(batch):
        ...     return agnostic.utils.data.get_worker_info().id
        >>> loader = agnostic.utils.data.DataLoader(range(4), batch_size=2, num_workers=2, collate_fn=worker_ids,
        ...                                         multiprocessing_context="fork")
        >>> list(loader)
        [0, 1]
    """
    return _worker_info


class ExceptionWrapper:
    """An exception and its traceback as text, sent from a worker and raised again in the main process."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        message = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            message = KeyError(message)  # KeyError shows its message with repr(): keep the traceback readable
        try:
            exception = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        raise exception


class _IterableDatasetStopIteration:
    """A worker's iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back once they are ready."""

    def __init__(self, seed=None):
        self.seed = seed


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.iterator = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    fetcher = _IterableDatasetFetcher if iterable else _MapDatasetFetcher
    return fetcher(dataset, auto_collation, collate_fn, drop_last)


def seed_worker(seed, worker_id):
    """Seed Python's, NumPy's and agnostic's generators for a worker (``base_seed + worker_id``, as PyTorch)."""
    random.seed(seed)
    manual_seed(seed)
    numpy.random.seed(numpy.random.SeedSequence([worker_id, seed]).generate_state(1)[0])


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, persistent_workers):
    """A worker's life: seed, run ``worker_init_fn``, then answer ``(send_idx, index)`` requests with
    ``(send_idx, batch)`` until told to stop (None) or the parent process dies."""
    global _worker_info
    try:
        set_num_threads(1)  # as PyTorch's workers: one each, so that workers don't fight for the cores
        seed = base_seed + worker_id
        seed_worker(seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        init_exception = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        parent = os.getppid()
        while os.getppid() == parent:
            try:
                request = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(request, _ResumeIteration):
                data_queue.put((request, None))
                iteration_end = False
                fetcher = create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if request is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            send_idx, index = request
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = fetcher.fetch(index)
                except Exception as error:
                    if isinstance(error, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((send_idx, data))
            del data, index, request
    except KeyboardInterrupt:
        pass  # the main process handles the interrupt and shuts the workers down
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
