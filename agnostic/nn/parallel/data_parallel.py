"""``nn.DataParallel``: one process drives every visible GPU, splitting each batch over them, as
``torch.nn.DataParallel``."""

import itertools
import warnings

from ... import cuda
from ...autograd import is_grad_enabled
from ..module import Module
from ._devices import as_device, as_devices
from .parallel_apply import parallel_apply
from .replicate import replicate
from .scatter_gather import gather, scatter_kwargs


def _device_index(device):
    """An int index from an int, ``"cuda:1"`` or a device (PyTorch's ``_get_device_index``)."""
    if isinstance(device, int):
        return device
    resolved = as_device(device)
    return -1 if resolved.index is None else resolved.index


def _check_balance(device_ids):
    imbalance_warning = ('There is an imbalance between your GPUs. You may want to exclude GPU {} which has less than '
                         '75% of the memory or cores of GPU {}. You can do so by setting the device_ids argument to '
                         'DataParallel, or by setting the CUDA_VISIBLE_DEVICES environment variable.')
    properties = [cuda.get_device_properties(index) for index in device_ids]
    for measure in (lambda p: p.total_memory, lambda p: p.multi_processor_count):
        values = [measure(p) for p in properties]
        smallest, largest = min(range(len(values)), key=values.__getitem__), max(range(len(values)),
                                                                                  key=values.__getitem__)
        if values[smallest] / values[largest] < 0.75:
            warnings.warn(imbalance_warning.format(device_ids[smallest], device_ids[largest]), stacklevel=3)
            return


class DataParallel(Module):
    """Run ``module`` on several GPUs of this process: each forward splits the (nested) tensor arguments along
    ``dim`` into one chunk per device of ``device_ids`` (default: all visible GPUs), runs a replica of the module on
    each chunk concurrently, and concatenates the outputs on ``output_device`` (default ``device_ids[0]``).
    Backward adds every replica's gradients into the wrapped module's parameters, which must live on
    ``device_ids[0]``. Without CUDA, or with one device, the module is called directly. ``state_dict`` keys carry
    the ``module.`` prefix, as PyTorch's.

        >>> from agnostic.nn.parallel import DataParallel
        >>> device = "cuda:0" if agnostic.cuda.is_available() else "cpu"
        >>> model = DataParallel(agnostic.nn.Linear(3, 1).to(device))
        >>> model(agnostic.ones(4, 3)).shape
        agnostic.Size([4, 1])
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.dim = dim
        if not cuda.is_available():
            self.device_ids = []
            self.output_device = None
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if not device_ids:
            raise RuntimeError("DataParallel: no available devices were found; pass device_ids=[0, 1, ...]")
        self.device_ids = [_device_index(device) for device in device_ids]
        self.output_device = _device_index(device_ids[0] if output_device is None else output_device)
        self.src_device_obj = as_device(self.device_ids[0])
        _check_balance(self.device_ids)
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for tensor in itertools.chain(self.module.parameters(), self.module.buffers()):
            if tensor.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {tensor.device}; move it "
                                   f"with module.to({str(self.src_device_obj)!r}) before wrapping it")
        inputs, module_kwargs = self.scatter(inputs, kwargs, self.device_ids)
        if not inputs and not module_kwargs:
            inputs, module_kwargs = ((),), ({},)
        if len(self.device_ids) == 1:
            return self.module(*inputs[0], **module_kwargs[0])
        replicas = self.replicate(self.module, self.device_ids[:len(inputs)])
        outputs = self.parallel_apply(replicas, inputs, module_kwargs)
        return self.gather(outputs, self.output_device)

    def replicate(self, module, device_ids):
        """The replicas for this forward (``nn.parallel.replicate``); override to customize."""
        return replicate(module, device_ids, not is_grad_enabled())

    def scatter(self, inputs, kwargs, device_ids):
        """``nn.parallel.scatter_kwargs`` of this forward's arguments along ``self.dim``."""
        return scatter_kwargs(inputs, kwargs, device_ids, dim=self.dim)

    def parallel_apply(self, replicas, inputs, kwargs):
        """Run the replicas concurrently (``nn.parallel.parallel_apply``)."""
        return parallel_apply(replicas, inputs, kwargs, self.device_ids[:len(replicas)])

    def gather(self, outputs, output_device):
        """Join the replicas' outputs on ``output_device`` (``nn.parallel.gather``) along ``self.dim``."""
        return gather(outputs, output_device, dim=self.dim)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """One DataParallel forward without keeping a wrapper: ``inputs`` (a tuple of positional arguments, or one
    tensor) split along ``dim`` over ``device_ids``, the module replicated and run on each chunk, the outputs
    concatenated on ``output_device`` (default ``device_ids[0]``).

        >>> from agnostic.nn.parallel import data_parallel
        >>> model = agnostic.nn.Linear(2, 1)
        >>> data_parallel(model, agnostic.ones(3, 2), device_ids=["cpu"]).shape
        agnostic.Size([3, 1])
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    if device_ids is None:
        device_ids = list(range(cuda.device_count()))
    if not device_ids:
        return module(*inputs, **(module_kwargs or {}))
    devices = as_devices(device_ids)
    output_device = devices[0] if output_device is None else as_device(output_device)
    for tensor in itertools.chain(module.parameters(), module.buffers()):
        if tensor.device != devices[0]:
            raise RuntimeError(f"module must have its parameters and buffers on device {devices[0]} "
                               f"(device_ids[0]) but found one of them on device: {tensor.device}")
    inputs, module_kwargs = scatter_kwargs(inputs, module_kwargs, devices, dim)
    if not inputs and not module_kwargs:
        inputs, module_kwargs = ((),), ({},)
    if len(devices) == 1:
        return module(*inputs[0], **module_kwargs[0])
    used = devices[:len(inputs)]
    replicas = replicate(module, used)
    outputs = parallel_apply(replicas, inputs, module_kwargs, used)
    return gather(outputs, output_device, dim)
