"""Work handles of asynchronous collectives (``async_op=True``): ``wait()``, ``is_completed()``; a wait past the
process group's timeout raises an error naming the ranks that never entered the collective."""

import time


class DistBackendError(RuntimeError):
    """A collective failed or timed out (PyTorch's ``torch.distributed.DistBackendError``).

        >>> import agnostic.distributed as dist
        >>> issubclass(dist.DistBackendError, RuntimeError)
        True
    """


class Work:
    """An operation in flight, as ``torch.distributed.Work``: ``wait()`` blocks until it is done (and its results are
    in the output tensors), ``is_completed()`` asks without blocking.

        >>> import datetime
        >>> work = agnostic.distributed.Work(lambda: True, timeout=datetime.timedelta(seconds=1))
        >>> work.wait(), work.is_completed()
        (True, True)
    """

    def __init__(self, test, finish=None, timeout=None, watch=None, name="collective", result=None):
        self._test = test
        self._finish = finish
        self._timeout = None if timeout is None else timeout.total_seconds()
        self._watch = watch
        self._name = name
        self._result = result
        self._done = False
        self._started = time.monotonic()

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                self._finish()

    def is_completed(self):
        """True once the operation has finished (its outputs are then final after ``wait()``)."""
        if not self._done and self._test():
            self._complete()
        return self._done

    def is_success(self):
        """True once the operation finished without error."""
        return self.is_completed()

    def wait(self, timeout=None):
        """Block until the operation is done; past the timeout raise ``DistBackendError`` naming the missing ranks."""
        limit = self._timeout if timeout is None else getattr(timeout, "total_seconds", lambda: timeout)()
        pause, announced = 0.0, False
        while not self.is_completed():
            waited = time.monotonic() - self._started
            if self._watch is not None and not announced and waited > min(0.2, (limit or 1) / 4):
                self._watch.arrived()
                announced = True
            if limit is not None and waited > limit:
                missing = self._watch.missing() if self._watch is not None else []
                who = (f"rank(s) {missing} never entered it" if missing else
                       "every rank entered it, so a rank is stuck or its peer process died")
                raise DistBackendError(
                    f"{self._name} timed out after {limit:g} s: {who}. Check that every rank of the group calls the "
                    "same collectives in the same order (or raise timeout= in init_process_group)"
                )
            # MPI progresses only inside Test: spin while a collective is likely to finish soon (then yield the
            # GIL), and back off after a second so a rank waiting for a late peer doesn't burn a core
            if waited > 0.01:
                time.sleep(0 if waited < 1.0 else pause)
            pause = min(pause * 2 or 1e-4, 2e-3)
        return True

    def result(self):
        """The output tensors (after ``wait()``)."""
        self.wait()
        return self._result if self._result is not None else []

    def get_future(self):
        """A future whose ``wait()`` waits for this work and returns its output tensors."""
        return _Future(self)


class _Future:
    def __init__(self, work):
        self._work = work

    def wait(self):
        return self._work.result()

    def value(self):
        return self._work.result()

    def done(self):
        return self._work.is_completed()

    def then(self, callback):
        self._work.wait()
        completed = _Future(self._work)
        value = callback(self)
        completed.value = lambda: value
        completed.wait = lambda: value
        return completed


def completed_work(result=None):
    """A Work that is already done (for operations finished synchronously)."""
    return Work(lambda: True, result=result)
