"""The launcher, as ``torchrun``: ``python -m agnostic.distributed.run --nproc-per-node N script.py args`` starts N
ranks of ``script.py`` on this host (``--nnodes``, ``--node-rank``, ``--master-addr``, ``--master-port`` for several
hosts), each with ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``.

The launcher of node 0 serves the job's store at ``MASTER_ADDR:MASTER_PORT`` (a free port by default). When MPI is
installed each rank runs under MPICH's ``mpiexec -n 1`` (a process manager of its own, so ranks can join with MPI's
dynamic processes and be stopped one by one). When a rank fails, the launcher stops the others, prints the failing
rank's last output (its traceback) and exits non-zero.
"""

import argparse
import collections
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

from ._store import TCPStore

_TAIL_LINES = 60


def _parser():
    parser = argparse.ArgumentParser(prog="python -m agnostic.distributed.run",
                                     description="Start the ranks of a distributed agnostic job (as torchrun).")
    parser.add_argument("--nproc-per-node", "--nproc_per_node", dest="nproc_per_node", default="1",
                        help="ranks on this host (a number, or 'cpu' for one per core)")
    parser.add_argument("--nnodes", default="1", help="how many hosts run the job")
    parser.add_argument("--node-rank", "--node_rank", dest="node_rank", type=int, default=0,
                        help="this host's index, 0..nnodes-1 (node 0 serves the store)")
    parser.add_argument("--master-addr", "--master_addr", dest="master_addr", default="127.0.0.1",
                        help="address of node 0")
    parser.add_argument("--master-port", "--master_port", dest="master_port", type=int, default=None,
                        help="port of the store on node 0 (a free one by default; required with --nnodes > 1)")
    parser.add_argument("--standalone", action="store_true", help="one host, free port (the default anyway)")
    parser.add_argument("--no-mpiexec", dest="no_mpiexec", action="store_true",
                        help="start ranks as plain processes, not under mpiexec (CUDA-only jobs)")
    parser.add_argument("-m", "--module", dest="module", action="store_true",
                        help="run the script argument as a module (python -m)")
    parser.add_argument("--no-python", "--no_python", dest="no_python", action="store_true",
                        help="run the script argument as an executable, not with python")
    parser.add_argument("script", help="the training script (or module, or executable)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER)
    return parser


def _free_port(host):
    with socket.socket() as probe:
        probe.bind((host if host not in ("localhost",) else "127.0.0.1", 0))
        return probe.getsockname()[1]


def _mpiexec():
    """MPICH's mpiexec beside this Python (the mpich wheel puts it there), or on PATH; None without mpi4py, or where
    the mpiexec found is another MPI's: the ranks then start as plain processes. The ranks join one another through
    MPICH's dynamic processes, which Open MPI's process manager doesn't serve (and it refuses to run as root)."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return None
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    path = beside if os.path.exists(beside) else shutil.which("mpiexec")
    if path is None:
        return None
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return path if "HYDRA" in version else None  # MPICH's process manager names itself


class _Rank:
    """One started rank: its process and the tail of its output (kept for the failure report)."""

    def __init__(self, rank, local_rank, command, environment, under_mpiexec):
        self.rank, self.local_rank, self.under_mpiexec = rank, local_rank, under_mpiexec
        self.tail = collections.deque(maxlen=_TAIL_LINES)
        self.process = subprocess.Popen(command, env=environment, stderr=subprocess.PIPE, start_new_session=True)
        self.reader = threading.Thread(target=self._forward, daemon=True)
        self.reader.start()

    def _forward(self):
        for line in iter(self.process.stderr.readline, b""):
            self.tail.append(line.decode(errors="replace"))
            sys.stderr.buffer.write(line)
            sys.stderr.flush()

    def stop(self, how):
        try:
            os.killpg(self.process.pid, how)
        except (ProcessLookupError, PermissionError):
            pass

    def describe_exit(self):
        code = self.process.returncode
        if code < 0:
            return f"was killed by signal {signal.Signals(-code).name}"
        if code > 128 and code - 128 in signal.Signals._value2member_map_:
            return f"exited with code {code} (killed by signal {signal.Signals(code - 128).name})"
        if self.under_mpiexec and code in signal.Signals._value2member_map_:
            return f"exited with code {code} (mpiexec's code for a rank killed by {signal.Signals(code).name})"
        return f"exited with code {code}"


def launch(arguments=None):
    """Run the job described by the command line ``arguments``; returns the exit code."""
    options = _parser().parse_args(arguments)
    nproc = os.cpu_count() if options.nproc_per_node in ("cpu", "auto") else int(options.nproc_per_node)
    nnodes = int(str(options.nnodes).split(":")[-1])
    if not 0 <= options.node_rank < nnodes:
        raise SystemExit(f"--node-rank {options.node_rank} must be in 0..{nnodes - 1}")
    if nnodes > 1 and options.master_port is None:
        raise SystemExit("--master-port is required with --nnodes > 1 (the same on every host)")
    port = options.master_port or _free_port(options.master_addr)
    store = TCPStore(options.master_addr, port, None, options.node_rank == 0, timeout=600)
    world_size = nproc * nnodes
    mpiexec = None if options.no_mpiexec else _mpiexec()
    program = ([] if options.no_python else [sys.executable, "-u"] + (["-m"] if options.module else []))
    ranks = []
    for local_rank in range(nproc):
        rank = options.node_rank * nproc + local_rank
        environment = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(local_rank), WORLD_SIZE=str(world_size),
                           LOCAL_WORLD_SIZE=str(nproc), GROUP_RANK=str(options.node_rank),
                           MASTER_ADDR=options.master_addr, MASTER_PORT=str(store.port),
                           AGNOSTIC_STORE_SERVED="1", AGNOSTIC_LAUNCHER="1")
        command = program + [options.script, *options.script_args]
        if mpiexec is not None:
            command = [mpiexec, "-n", "1"] + command
        ranks.append(_Rank(rank, local_rank, command, environment, mpiexec is not None))
    return _supervise(ranks, store)


def _supervise(ranks, store):
    """Wait for the ranks; on the first failure (here, or reported by another host) stop the rest."""
    failed = None
    previous = {}
    for how in (signal.SIGINT, signal.SIGTERM):
        previous[how] = signal.signal(how, lambda number, frame: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        while True:
            running = [r for r in ranks if r.process.poll() is None]
            failed = next((r for r in ranks if r.process.returncode not in (None, 0)), None)
            if failed is not None or not running:
                break
            if store.check(["job/failed"]):
                break
            time.sleep(0.05)
    except KeyboardInterrupt:
        _stop_all(ranks)
        return 130
    finally:
        for how, handler in previous.items():
            signal.signal(how, handler)
    if failed is None and not store.check(["job/failed"]):
        for rank in ranks:
            rank.reader.join(timeout=5)
        return 0
    if failed is not None:
        store.set("job/failed", str(failed.rank))
    _stop_all(ranks)
    if failed is None:
        other = store.get("job/failed").decode()
        sys.stderr.write(f"agnostic.distributed.run: rank {other} on another host failed; stopped this host's "
                         "ranks\n")
        return 1
    failed.reader.join(timeout=5)
    report = "".join(failed.tail).rstrip()
    sys.stderr.write(
        f"\nagnostic.distributed.run: rank {failed.rank} (local rank {failed.local_rank}, pid {failed.process.pid}) "
        f"{failed.describe_exit()}; stopped the other ranks.\n"
        + (f"---- last output of rank {failed.rank} ----\n{report}\n" if report else "")
    )
    return failed.process.returncode if 0 < failed.process.returncode < 128 else 1


def _stop_all(ranks):
    for rank in ranks:
        if rank.process.poll() is None:
            rank.stop(signal.SIGTERM)
    deadline = time.monotonic() + 5
    for rank in ranks:
        try:
            rank.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            rank.stop(signal.SIGKILL)
            rank.process.wait()


def main():
    sys.exit(launch())


if __name__ == "__main__":
    main()
