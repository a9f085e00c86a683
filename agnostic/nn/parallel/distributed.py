"""``nn.parallel.DistributedDataParallel``: one process per device, gradients averaged across processes in buckets
whose all-reduce starts during backward, as ``torch.nn.parallel.DistributedDataParallel``."""

import contextlib
import itertools
import weakref

from ... import distributed as dist, ops
from ..._tensor import TensorBase
from ...autograd import graph, grad_mode
from ..module import Module
from ._devices import as_device

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES: the first bucket starts early
_BROADCAST_BUCKET_BYTES = 250 * 1024 * 1024  # PyTorch's _DDP broadcast bucket for module states


def _bucket_groups(tensors, limits):
    """Consecutive runs of ``tensors`` of one dtype and device, each at most the current limit in bytes (the
    first group uses ``limits[0]``, later ones ``limits[-1]``); a tensor larger than the limit gets a group alone."""
    groups, open_groups = [], {}  # (dtype, device) -> [its open group, bytes in it, its limit]
    for tensor in tensors:
        key = (tensor.dtype, tensor.device)
        current = open_groups.get(key)
        size = tensor.numel() * tensor.element_size()
        if current is not None and current[1] + size > current[2]:
            current = None
        if current is None:
            current = [[], 0, limits[min(len(groups), len(limits) - 1)]]
            open_groups[key] = current
            groups.append(current[0])
        current[0].append(tensor)
        current[1] += size
    return groups


def _flat_broadcast(tensors, source, group):
    """Broadcast ``tensors`` from rank ``source`` with one collective per dtype/device group of up to 250 MiB."""
    with grad_mode.no_grad():
        for chunk in _bucket_groups(tensors, [_BROADCAST_BUCKET_BYTES]):
            flat = ops.shape.cat([tensor.detach().reshape(-1) for tensor in chunk])
            dist.broadcast(flat, source, group=group)
            offset = 0
            for tensor in chunk:
                count = tensor.numel()
                tensor.copy_(flat[offset:offset + count].view(tensor.shape))
                offset += count


def _tensors_in(obj):
    if isinstance(obj, TensorBase):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            yield from _tensors_in(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from _tensors_in(item)


def _moved_to(obj, device):
    if isinstance(obj, TensorBase):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_moved_to(item, device) for item in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_moved_to(item, device) for item in obj)
    if isinstance(obj, dict):
        return type(obj)((key, _moved_to(value, device)) for key, value in obj.items())
    return obj


def _leaves_reached(outputs):
    """The ids of the leaf tensors whose gradient backward from ``outputs`` will compute."""
    reached, seen = set(), set()
    stack = [edge[0] for edge in map(graph.edge_of, _tensors_in(outputs)) if edge is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, graph.AccumulateGrad):
            reached.add(id(node.tensor))
        stack.extend(edge[0] for edge in node.next_edges if edge is not None)
    return reached


class _Bucket:
    """Gradients of several parameters packed in one flat tensor, all-reduced with one collective."""

    def __init__(self, params):
        self.params = params
        self.offsets = list(itertools.accumulate([0] + [p.numel() for p in params]))
        self.flat = ops.creation.zeros(self.offsets[-1], dtype=params[0].dtype, device=params[0].device)
        self.pending = len(params)
        self.work = None

    def slot(self, number):
        return self.flat[self.offsets[number]:self.offsets[number + 1]]


class _Reducer:
    """Marks parameters ready as their gradients arrive in backward, starts each full bucket's all-reduce
    (in bucket order, identical on every rank), and when the last one is ready waits for all and writes the averaged
    gradients into ``.grad``."""

    def __init__(self, params, bucket_bytes, group, world_size, gradient_as_bucket_view, find_unused):
        self.params = params
        self.group = group
        self.world_size = world_size
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.find_unused = find_unused
        groups = _bucket_groups(list(reversed(params)), [min(_FIRST_BUCKET_BYTES, bucket_bytes), bucket_bytes])
        self.buckets = [_Bucket(group_params) for group_params in groups]
        self.location = {}  # id(param) -> (bucket number, slot number)
        for number, bucket in enumerate(self.buckets):
            for slot, param in enumerate(bucket.params):
                self.location[id(param)] = (number, slot)
        self.armed = False
        self.hooks_fired = False
        self.unused = []
        self.ready = set()
        self.locally_used = set()
        self.next_to_launch = 0
        reducer = weakref.ref(self)  # the hooks live on the parameters: they must not keep the reducer alive
        self.handles = [param.register_hook(_make_hook(reducer, param)) for param in params]

    def unfinished_names(self, names):
        return [names.get(id(p), "?") for p in self.params if id(p) not in self.ready]

    def prepare_for_backward(self, outputs):
        self.armed = True
        self.hooks_fired = False
        self.ready = set()
        self.locally_used = set()
        self.next_to_launch = 0
        for bucket in self.buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None
        self.unused = []
        if self.find_unused:
            reached = _leaves_reached(outputs)
            self.unused = [param for param in self.params if id(param) not in reached]

    def on_gradient(self, param, grad):
        """A parameter's hook: returns the gradient the engine should accumulate instead (the averaged one, for
        the parameter that completes the reduction), or None."""
        if not self.hooks_fired:
            self.hooks_fired = True
            for unused in self.unused:  # as PyTorch: the unused are marked ready when the first gradient arrives
                self.mark_ready(unused, None)
        self.mark_ready(param, grad)
        if len(self.ready) == len(self.params):
            return self.finish(param)
        return None

    def mark_ready(self, param, grad):
        """Put ``param``'s whole gradient (what it accumulated under ``no_sync`` plus ``grad``) into its bucket."""
        if id(param) in self.ready:
            raise RuntimeError(
                "Expected to mark a variable ready only once. This happens when a parameter's gradient is computed "
                "twice in one backward (e.g. a module reused with checkpointing, or backward run twice on one "
                "forward with retain_graph=True); run one backward per forward of the DistributedDataParallel")
        number, slot_number = self.location[id(param)]
        bucket = self.buckets[number]
        slot = bucket.slot(slot_number)
        with grad_mode.no_grad():
            total = param.grad if grad is None else (grad if param.grad is None else param.grad + grad)
            if total is None:
                slot.zero_()
            else:
                slot.copy_(total.detach().reshape(-1))
                self.locally_used.add(id(param))
        self.ready.add(id(param))
        bucket.pending -= 1
        self.launch_ready_buckets()

    def launch_ready_buckets(self):
        while self.next_to_launch < len(self.buckets) and self.buckets[self.next_to_launch].pending == 0:
            bucket = self.buckets[self.next_to_launch]
            with grad_mode.no_grad():
                bucket.flat.div_(self.world_size)
                bucket.work = dist.all_reduce(bucket.flat, group=self.group, async_op=True)
            self.next_to_launch += 1

    def finish(self, current):
        """Wait for every bucket and give each parameter its averaged gradient; returns the one for ``current``
        (whose own accumulation the engine is about to do)."""
        self.armed = False
        globally_used = None
        if self.find_unused:
            used = ops.creation.tensor([1 if id(p) in self.locally_used else 0 for p in self.params],
                                       dtype=self.buckets[0].flat.dtype, device=self.buckets[0].flat.device)
            dist.all_reduce(used, group=self.group)
            globally_used = {id(p) for p, count in zip(self.params, used.tolist()) if count > 0}
        result = None
        with grad_mode.no_grad():
            for bucket in self.buckets:
                bucket.work.wait()
                for slot_number, param in enumerate(bucket.params):
                    if globally_used is not None and id(param) not in globally_used:
                        continue
                    averaged = bucket.slot(slot_number).view(param.shape)
                    if param is current:
                        result = averaged if self.gradient_as_bucket_view else averaged.clone()
                        param.grad = None
                    elif self.gradient_as_bucket_view or param.grad is None:
                        param.grad = averaged if self.gradient_as_bucket_view else averaged.clone()
                    else:
                        param.grad.copy_(averaged)
        return result

    def remove_hooks(self):
        for handle in self.handles:
            handle.remove()


def _make_hook(reducer_ref, param):
    param_ref = weakref.ref(param)

    def hook(grad):
        reducer = reducer_ref()
        if reducer is None or not reducer.armed:
            return None
        return reducer.on_gradient(param_ref(), grad)

    return hook


class DistributedDataParallel(Module):
    """Data parallel training with one process per device (start them with ``python -m agnostic.distributed.run``
    after ``agnostic.distributed.init_process_group``). At construction rank 0's parameters and buffers are
    broadcast to every rank; in each backward the gradients are averaged across ranks in buckets of about
    ``bucket_cap_mb`` MiB (parameters in reverse order, so the first buckets fill first), each bucket's all-reduce
    starting as soon as all its gradients are computed, and all finished before ``backward()`` returns. Buffers are
    broadcast from rank 0 before each forward (``broadcast_buffers``). Inside ``no_sync()`` gradients accumulate
    locally and are averaged at the next synchronized backward. Parameters not used by the forward need
    ``find_unused_parameters=True``. ``device_ids=[i]`` for a module on GPU i (inputs are moved there); None for CPU
    modules. ``state_dict`` keys carry the ``module.`` prefix.

        >>> import agnostic.distributed as dist
        >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
        >>> from agnostic.nn.parallel import DistributedDataParallel
        >>> model = DistributedDataParallel(agnostic.nn.Linear(2, 1))
        >>> model(agnostic.ones(3, 2)).sum().backward()
        >>> model.module.bias.grad
        tensor([3.])
        >>> dist.destroy_process_group()
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not dist.is_initialized():
            raise RuntimeError("Default process group has not been initialized, please make sure to call "
                               "init_process_group.")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        module_devices = {t.device for t in itertools.chain(module.parameters(), module.buffers())}
        if device_ids is not None and (len(module_devices) != 1 or next(iter(module_devices)).backend.host):
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with single-device GPU "
                f"modules, but got device_ids {device_ids}, output_device {output_device}, and module parameters "
                f"{module_devices}; pass device_ids=None for a CPU module, or move the module to its GPU first")
        if device_ids is not None and len(device_ids) != 1:
            raise ValueError(f"device_ids can only be None or contain a single element, got {device_ids}; "
                             "start one process per GPU")
        self.module = module
        self.device_ids = None if device_ids is None else [as_device(device_ids[0]).index]
        self.device = None if device_ids is None else as_device(device_ids[0])
        self.output_device = self.device if output_device is None else as_device(output_device)
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.process_group = process_group
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.world_size = dist.get_world_size(process_group)
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        self._source_rank = dist.get_global_rank(process_group, 0) if process_group is not None else 0
        self._param_names = {id(p): name for name, p in module.named_parameters()}
        if init_sync and self.world_size > 1:
            _flat_broadcast(list(itertools.chain(module.parameters(), module.buffers())), self._source_rank,
                            process_group)
        self.reducer = _Reducer(params, self.bucket_bytes_cap, process_group, self.world_size,
                                gradient_as_bucket_view, find_unused_parameters)

    def forward(self, *inputs, **kwargs):
        reducer = self.reducer
        if reducer.armed and reducer.hooks_fired:
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one. This error "
                "indicates that your module has parameters that were not used in producing loss. You can enable "
                "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
                "`agnostic.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
                "participate in calculating loss. Parameters that did not receive a gradient: "
                + ", ".join(reducer.unfinished_names(self._param_names)))
        if self.require_forward_param_sync and self.broadcast_buffers and self.world_size > 1:
            buffers = list(self.module.buffers())
            if buffers:
                _flat_broadcast(buffers, self._source_rank, self.process_group)
        if self.device is not None:
            inputs, kwargs = _moved_to(inputs, self.device), _moved_to(kwargs, self.device)
        output = self.module(*inputs, **kwargs)
        syncing = grad_mode.is_grad_enabled() and self.require_backward_grad_sync
        self.require_forward_param_sync = syncing
        if syncing:
            reducer.prepare_for_backward(output)
        else:
            reducer.armed = False
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Inside it, backward accumulates gradients locally without communication; the first synchronized
        backward after it averages the accumulated sum.

            >>> import agnostic.distributed as dist
            >>> dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
            >>> from agnostic.nn.parallel import DistributedDataParallel
            >>> model = DistributedDataParallel(agnostic.nn.Linear(2, 1))
            >>> with model.no_sync():
            ...     model(agnostic.ones(1, 2)).sum().backward()
            >>> model(agnostic.ones(1, 2)).sum().backward()
            >>> model.module.bias.grad
            tensor([2.])
            >>> dist.destroy_process_group()
        """
        previous = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = previous
