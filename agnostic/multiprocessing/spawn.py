"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes; a child's failure is raised in the
parent with its traceback (``ProcessRaisedException``) or its signal or exit code (``ProcessExitedException``)."""

import ctypes
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import time
import warnings

__all__ = [
    "ProcessContext", "ProcessException", "ProcessExitedException", "ProcessRaisedException", "spawn",
    "start_processes",
]


class ProcessException(Exception):
    """A process started by ``spawn`` failed: ``error_index`` is its index, ``pid`` its process id.

        >>> import agnostic.multiprocessing as mp
        >>> issubclass(mp.ProcessRaisedException, mp.ProcessException)
        True
        >>> error = mp.ProcessExitedException("process 1 terminated with exit code 3", 1, 4242, 3)
        >>> error.error_index, error.pid, error.exit_code
        (1, 4242, 3)
    """

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A process failed by raising an exception; the message carries its traceback.

        >>> import agnostic.multiprocessing as mp
        >>> import operator
        >>> try:
        ...     mp.start_processes(operator.truediv, args=(0,), start_method="fork")
        ... except mp.ProcessRaisedException as error:
        ...     print(error.error_index, error.msg.strip().splitlines()[-1])
        0 ZeroDivisionError: division by zero
    """

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A process was killed by a signal (``signal_name``) or exited with a non-zero ``exit_code``.

        >>> import agnostic.multiprocessing as mp
        >>> import os
        >>> try:
        ...     mp.start_processes(os._exit, nprocs=2, start_method="fork")
        ... except mp.ProcessExitedException as error:
        ...     print(error, error.exit_code)
        process 1 terminated with exit code 1 1
    """

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _die_with_parent(signum):
    """Ask Linux to send ``signum`` to this process when its parent dies (so non-daemonic children end too)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).prctl(1, signum)  # PR_SET_PDEATHSIG
        except Exception:
            pass


def _wrap(fn, i, args, error_file):
    _die_with_parent(signal.SIGINT)
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # SIGINT: the parent is ending us
    except Exception:
        import traceback

        with open(error_file, "w") as file:
            file.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes ``start_processes`` started: ``pids()``, and ``join()`` until they are done.

        >>> import agnostic.multiprocessing as mp
        >>> import operator
        >>> context = mp.start_processes(operator.mul, args=(3,), nprocs=2, join=False, start_method="fork")
        >>> len(context.pids())
        2
        >>> while not context.join(timeout=60):
        ...     pass
    """

    def __init__(self, processes, error_files):
        self.error_files = error_files
        self.processes = processes
        self.sentinels = {process.sentinel: index for index, process in enumerate(processes)}

    def pids(self):
        """The process ids, by index."""
        return [int(process.pid) for process in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait (up to ``timeout`` seconds) for a process to end; True once all have ended successfully.

        When one failed, the others get ``grace_period`` seconds to end, then SIGTERM, then SIGKILL, and the
        failure is raised: ``ProcessRaisedException`` with the child's traceback, or ``ProcessExitedException``.
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(self.sentinels.keys(), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            return not self.sentinels
        self._stop_all(grace_period)
        raise self._failure(error_index)

    def _join_all(self, timeout):
        end = time.monotonic() + timeout
        for process in self.processes:
            process.join(max(0.0, end - time.monotonic()))

    def _stop_all(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for process in self.processes:
            if process.is_alive():
                process.kill()
            process.join()

    def _failure(self, index):
        process = self.processes[index]
        error_file = self.error_files[index]
        if not os.access(error_file, os.R_OK):
            code = process.exitcode
            if code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<Unknown signal {-code}>"
                return ProcessExitedException(f"process {index:d} terminated with signal {name}", error_index=index,
                                              error_pid=process.pid, exit_code=code, signal_name=name)
            return ProcessExitedException(f"process {index:d} terminated with exit code {code:d}",
                                          error_index=index, error_pid=process.pid, exit_code=code)
        with open(error_file) as file:
            trace = file.read()
        os.unlink(error_file)
        message = f"\n\n-- Process {index:d} terminated with the following error:\n{trace}"
        return ProcessRaisedException(message, index, process.pid)


def _error_file_name():
    """A path for a child's traceback: the file exists only once the child failed."""
    file = tempfile.NamedTemporaryFile(prefix="agnostic-errorfile-", suffix=".txt", delete=False)
    file.close()
    os.unlink(file.name)
    return file.name


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``spawn`` with any start method (``spawn``, ``forkserver`` or ``fork``).

        >>> import agnostic.multiprocessing as mp
        >>> import operator
        >>> context = mp.start_processes(operator.mul, args=(3,), nprocs=2, join=False, start_method="fork")
        >>> while not context.join():
        ...     pass
    """
    context = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    for i in range(nprocs):
        error_file = _error_file_name()
        process = context.Process(target=_wrap, args=(fn, i, args, error_file), daemon=daemon)
        process.start()
        processes.append(process)
        error_files.append(error_file)
    process_context = ProcessContext(processes, error_files)
    if not join:
        return process_context
    while not process_context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)`` (``i`` in ``range(nprocs)``) with the ``spawn`` method.

    With ``join`` (the default) wait for all of them: when one fails, the others are stopped and its error is
    raised here. Otherwise return the ``ProcessContext``. ``fn`` must be importable (defined at a module's top
    level).

        >>> import agnostic.multiprocessing as mp
        >>> import operator
        >>> mp.spawn(operator.mul, args=(2,), nprocs=2)  # operator.mul(i, 2) in processes i = 0 and 1
    """
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different start_method "
            "use:\n\t\t agnostic.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
