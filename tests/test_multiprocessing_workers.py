"""Child-process entry points for the multiprocessing tests (no tests here).

They live in their own light module so that a spawned child imports only agnostic and this file.
"""

import os
import signal
import time

import agnostic
import agnostic.multiprocessing  # noqa: F401  (a forked or spawned child pickles tensors with its reducers)
from agnostic import Tensor

TIMEOUT = 30


class Tagged(Tensor):
    """A Tensor subclass with state in its ``__dict__``."""

    __slots__ = ()


def add_one_and_reply(inbox, outbox):
    """Receive a tensor, add 1 in place, send back one of our own; then wait, and report what we see in it."""
    tensor = inbox.get(timeout=TIMEOUT)
    tensor += 1
    mine = agnostic.full((3,), 7.0)
    outbox.put(("added", tensor.is_shared(), mine))
    inbox.get(timeout=TIMEOUT)  # the parent wrote into ``mine``
    outbox.put(("seen", mine.tolist(), tensor.tolist()))


def add_to_all(inbox, outbox):
    """Receive one message holding many tensors (a list and a dict); add their index to each, in place."""
    tensors, named = inbox.get(timeout=TIMEOUT)
    for index, tensor in enumerate(tensors):
        tensor.add_(index)
    named["x"].fill_(-1.0)
    outbox.put(len(tensors))


def add_to_each_message(inbox, outbox, count):
    """Receive ``count`` messages of one tensor each; double each in place."""
    for _ in range(count):
        tensor = inbox.get(timeout=TIMEOUT)
        tensor.mul_(2)
    outbox.put(count)


def double_in_place(tensor):
    """Pool task: double a tensor in place, return its sum and a new tensor."""
    tensor.mul_(2)
    return float(tensor.sum()), tensor + 1


def report_types(inbox, outbox):
    """Receive tensors and report their classes, ``__dict__`` and whether they share memory."""
    items = inbox.get(timeout=TIMEOUT)
    report = [(type(item).__name__, dict(item.__dict__), item.is_shared()) for item in items]
    for item in items:
        item.detach().fill_(5.0)  # a Parameter requires grad: no in-place write on it
    outbox.put(report)


def receive_twice(inbox, outbox):
    """Receive the same tensor twice: both must view the same memory."""
    first = inbox.get(timeout=TIMEOUT)
    second = inbox.get(timeout=TIMEOUT)
    outbox.put(first.data_ptr() == second.data_ptr())


def hold_then_hang(inbox, outbox):
    """Receive tensors, write into them, send one of our own, then hang until killed."""
    tensors = inbox.get(timeout=TIMEOUT)
    for tensor in tensors:
        tensor.fill_(3.0)
    mine = agnostic.arange(4.0)
    outbox.put(mine)
    outbox.put("holding")
    time.sleep(TIMEOUT)


_kept = []


def send_own_then_exit(outbox, go):
    """Send a tensor of our own, kept until the process exits; exit when told (``go`` None: at once)."""
    _kept.append(agnostic.full((2,), 4.0))
    outbox.put(_kept[-1])
    if go is not None:
        go.get(timeout=TIMEOUT)


def write_index(rank, tensor):
    """``spawn`` target: write the rank into its slot of a shared tensor."""
    tensor[rank] = rank + 10


def raise_on_one(rank):
    """``spawn`` target: process 1 raises."""
    if rank == 1:
        raise ValueError("process one failed on purpose")


def kill_self(rank):
    """``spawn`` target: process 0 dies of SIGKILL."""
    if rank == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(TIMEOUT)


def exit_with_code(rank, code):
    """``spawn`` target: exit with ``code``."""
    raise SystemExit(code)


def use_cuda_after_fork(outbox):
    """In a forked child: try CUDA and report the error message."""
    try:
        agnostic.cuda.current_device()
    except RuntimeError as error:
        outbox.put(str(error))
    else:
        outbox.put(None)


# ----- CUDA ------------------------------------------------------------------------------------------------------
def cuda_add_one_and_reply(inbox, outbox):
    """CUDA: receive a tensor, add 1 in place, send back one of ours; then report what we see in it."""
    tensor = inbox.get(timeout=TIMEOUT)
    tensor += 1
    agnostic.cuda.synchronize()
    mine = agnostic.full((3,), 7.0, device=tensor.device)
    outbox.put(("added", str(tensor.device), mine))
    inbox.get(timeout=TIMEOUT)
    outbox.put(("seen", mine.tolist(), tensor.tolist()))
    inbox.get(timeout=TIMEOUT)  # keep ``mine`` alive until the parent is done with it


def cuda_views(inbox, outbox):
    """CUDA: receive several views and small tensors of one pool segment; write into each; send one back."""
    items = inbox.get(timeout=TIMEOUT)
    for index, item in enumerate(items):
        item.fill_(float(index + 100))
    agnostic.cuda.synchronize()
    outbox.put([item.tolist() for item in items])
    outbox.put(items[0])  # back to its producer: it must see its own memory
    inbox.get(timeout=TIMEOUT)


def cuda_many(inbox, outbox, count):
    """CUDA: receive ``count`` tensors, double each, drop them."""
    received = [inbox.get(timeout=TIMEOUT) for _ in range(count)]
    for tensor in received:
        tensor.mul_(2)
    agnostic.cuda.synchronize()
    del received
    outbox.put(count)


def cuda_forward(inbox, outbox):
    """CUDA: receive a tensor and forward it to the next process."""
    tensor = inbox.get(timeout=TIMEOUT)
    outbox.put(tensor)
    inbox.get(timeout=TIMEOUT)


def cuda_write_and_confirm(inbox, outbox):
    """CUDA: receive a tensor, write 9 into it, confirm."""
    tensor = inbox.get(timeout=TIMEOUT)
    tensor.fill_(9.0)
    agnostic.cuda.synchronize()
    outbox.put("written")
    inbox.get(timeout=TIMEOUT)


def cuda_hold_then_hang(inbox, outbox):
    """CUDA: receive a tensor, write into it, then hang until killed."""
    tensor = inbox.get(timeout=TIMEOUT)
    tensor.fill_(4.0)
    agnostic.cuda.synchronize()
    outbox.put("holding")
    time.sleep(TIMEOUT)


def cuda_wait_event(inbox, outbox):
    """CUDA: receive (tensor, event); wait on the producer's event, then read the tensor."""
    tensor, event = inbox.get(timeout=TIMEOUT)
    event.wait()
    event.synchronize()
    outbox.put(tensor.tolist())


def cuda_write_index(rank, tensor):
    """``spawn`` target on CUDA: write the rank into its slot."""
    tensor[rank] = rank + 10
    agnostic.cuda.synchronize()
