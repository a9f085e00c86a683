"""Running module replicas concurrently, one host thread per device, each on its device's current stream, as
``torch.nn.parallel.parallel_apply``."""

import concurrent.futures
import threading

from ... import _autocast, _streams
from ...autograd import grad_mode
from ..._tensor import TensorBase
from ._devices import as_device


def _first_tensor_device(obj):
    if isinstance(obj, TensorBase):
        return obj.device
    if isinstance(obj, (list, tuple)):
        for item in obj:
            found = _first_tensor_device(item)
            if found is not None:
                return found
    if isinstance(obj, dict):
        return _first_tensor_device(list(obj.values()))
    return None


_workers = None


def _worker_pool():
    """Threads kept for every call: CuPy keeps a cuBLAS handle (and its workspace) per thread and device, so a thread
    made per call would create and free them each forward, and freeing device memory waits for the whole device.
    PyTorch pools its handles for the same reason."""
    global _workers
    if _workers is None:
        _workers = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="agnostic-parallel-apply")
    return _workers


class ReplicaError(RuntimeError):
    """Raised in the caller when a replica's exception cannot be rebuilt with its own type."""


def _reraise(error, number, device):
    where = f"in replica {number} on device {device}"
    message = f"Caught {type(error).__name__} {where}: {error}"
    try:
        rebuilt = type(error)(message)
    except Exception:
        rebuilt = ReplicaError(message)
    raise rebuilt from error


def parallel_apply(modules, inputs, kwargs_tup=None, devices=None):
    """``modules[i](*inputs[i], **kwargs_tup[i])`` for every i, concurrently (a thread per module, inside its
    device and on that device's current stream, with the caller's grad mode). Returns the outputs in order; an
    exception in a replica is raised here, naming the replica and its device.

        >>> from agnostic.nn.parallel import parallel_apply
        >>> identity = agnostic.nn.Identity()
        >>> parallel_apply([identity], [(agnostic.ones(2),)])
        [tensor([1., 1.])]
    """
    if len(modules) != len(inputs):
        raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of inputs "
                             f"{len(inputs)}")
    if kwargs_tup is not None:
        if len(modules) != len(kwargs_tup):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of kwargs "
                                 f"{len(kwargs_tup)}")
    else:
        kwargs_tup = ({},) * len(modules)
    if devices is not None:
        if len(modules) != len(devices):
            raise AssertionError(f"The number of modules {len(modules)} is not equal to the number of devices "
                                 f"{len(devices)}")
        devices = [as_device(device) for device in devices]
    else:
        devices = [_first_tensor_device(args) for args in inputs]
    streams = [None if device is None else _streams.current_stream(device) for device in devices]
    results = [None] * len(modules)
    caller = threading.current_thread()
    grad_enabled = grad_mode.is_grad_enabled()
    autocast_regions = dict(_autocast.STATE.enabled)  # autocast and grad mode are per thread: carry the caller's

    def work(number, module, args, kwargs, stream):
        try:
            if threading.current_thread() is not caller:
                _autocast.STATE.enabled = dict(autocast_regions)
            with grad_mode.set_grad_enabled(grad_enabled), _streams.stream(stream):
                if not isinstance(args, (list, tuple)):
                    args = (args,)
                results[number] = ("output", module(*args, **kwargs))
        except Exception as error:  # noqa: BLE001  # handed to the caller's thread below
            results[number] = ("error", error)

    jobs = list(zip(range(len(modules)), modules, inputs, kwargs_tup, streams))
    if len(jobs) == 1:
        work(*jobs[0])
    else:
        concurrent.futures.wait([_worker_pool().submit(work, *job) for job in jobs])
    outputs = []
    for number, (kind, value) in enumerate(results):
        if kind == "error":
            _reraise(value, number, devices[number])
        outputs.append(value)
    return outputs
