"""CUDA device queries and selection (``agnostic.cuda.is_available``, ``device``, ``set_device``...) over CuPy."""

from .. import _backend
from .._backends import cuda as cuda_backend, cupy_loader
from .._device import Device


def is_available():
    """True when CuPy is installed and sees at least one CUDA device; never raises, never needs a GPU.

        >>> device = "cuda" if agnostic.cuda.is_available() else "cpu"
        >>> agnostic.ones(2, device=device).device.type == device
        True
    """
    return _backend.cuda_device_count() > 0


def device_count():
    """Number of visible CUDA devices (0 without CuPy, driver or GPU); honours ``CUDA_VISIBLE_DEVICES``.

        >>> agnostic.cuda.device_count() > 0 or not agnostic.cuda.is_available()
        True
        >>> [agnostic.device("cuda", i) for i in range(agnostic.cuda.device_count())]  # doctest: +SKIP
        [device(type='cuda', index=0), device(type='cuda', index=1)]
    """
    return _backend.cuda_device_count()


def init():
    """Initialize CUDA now (it is otherwise initialized on first use); raises with the reason when unavailable.

        >>> agnostic.cuda.init()  # doctest: +SKIP
        >>> agnostic.cuda.is_initialized()  # doctest: +SKIP
        True
    """
    _backend.require_cupy()


def is_initialized():
    """Whether CUDA has been initialized in this process.

        >>> x = agnostic.ones(1, device="cuda")  # doctest: +SKIP
        >>> agnostic.cuda.is_initialized()  # doctest: +SKIP
        True
    """
    return cupy_loader.state.initialized


def _index(device, optional=True):
    """A CUDA device index from an int, a str, a Device or None (the current device)."""
    if device is None:
        if not optional:
            raise ValueError("expected a CUDA device")
        return current_device()
    if isinstance(device, int):
        target = Device("cuda", device)
    else:
        target = device if isinstance(device, Device) else Device(device)
        if target.type != "cuda":
            raise ValueError(f"expected a CUDA device, got {target}; use 'cuda', 'cuda:N' or an int")
    return _backend.resolve(target).index


def current_device():
    """Index of the currently selected CUDA device.

        >>> agnostic.cuda.current_device()  # doctest: +SKIP
        0
        >>> with agnostic.cuda.device(1):  # doctest: +SKIP
        ...     agnostic.cuda.current_device()
        1
    """
    init()
    return _backend.current_cuda_index()


def set_device(device):
    """Select the current CUDA device (a negative index is a no-op, as in PyTorch).

        >>> agnostic.cuda.set_device(-1)
        >>> agnostic.cuda.set_device("cuda:1")  # doctest: +SKIP
        >>> agnostic.ones(1, device="cuda").device  # doctest: +SKIP
        device(type='cuda', index=1)
    """
    if isinstance(device, int) and device < 0:
        return
    index = _index(device)
    _backend.require_cupy().cuda.Device(index).use()


class device:
    """Context manager that makes ``device`` the current CUDA device (``None`` or a negative index: no-op).

        >>> with agnostic.cuda.device(None):
        ...     agnostic.ones(1).device
        device(type='cpu')
        >>> with agnostic.cuda.device(1):  # doctest: +SKIP
        ...     agnostic.ones(1, device="cuda").device
        device(type='cuda', index=1)
    """

    def __init__(self, device):
        self.index = -1 if device is None or (isinstance(device, int) and device < 0) else _index(device)
        self.previous = -1

    def __enter__(self):
        if self.index >= 0:
            self.previous = current_device()
            if self.previous != self.index:
                set_device(self.index)
        return self

    def __exit__(self, *exc_info):
        if self.index >= 0 and self.previous != self.index:
            set_device(self.previous)
        return False


class device_of(device):
    """Context manager selecting the device of a tensor (a no-op for CPU tensors).

        >>> x = agnostic.ones(2)
        >>> with agnostic.cuda.device_of(x):
        ...     (x + 1).device
        device(type='cpu')
        >>> y = agnostic.ones(2, device="cuda:1")  # doctest: +SKIP
        >>> with agnostic.cuda.device_of(y):  # doctest: +SKIP
        ...     agnostic.cuda.current_device()
        1
    """

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None):
    """Wait for all work queued on a CUDA device (the current one by default) to finish.

        >>> x = agnostic.ones(4096, 4096, device="cuda")  # doctest: +SKIP
        >>> y = x @ x  # doctest: +SKIP
        >>> agnostic.cuda.synchronize()  # doctest: +SKIP
    """
    cupy = _backend.require_cupy()
    with cupy.cuda.Device(_index(device)):
        cupy.cuda.runtime.deviceSynchronize()


def can_device_access_peer(device, peer_device):
    """True when ``device`` can read and write ``peer_device``'s memory directly (over NVLink or PCIe); copies
    between such devices skip host memory. False for a device and itself.

        >>> agnostic.cuda.can_device_access_peer(0, 1)  # doctest: +SKIP
        True
    """
    return cuda_backend.can_access_peer(_index(device, optional=False), _index(peer_device, optional=False))


def get_device_properties(device=None):
    """The device's properties (``name``, ``total_memory``, ``major``, ``minor``, ``multi_processor_count``).

        >>> agnostic.cuda.get_device_properties(0)  # doctest: +SKIP
        _CudaDeviceProperties(name='NVIDIA H100 80GB HBM3', major=9, minor=0, total_memory=...)
    """
    cupy = _backend.require_cupy()
    return _DeviceProperties(cupy.cuda.runtime.getDeviceProperties(_index(device)))


def get_device_name(device=None):
    """The device's product name, e.g. ``'NVIDIA H100 80GB HBM3'``.

        >>> agnostic.cuda.get_device_name(0)  # doctest: +SKIP
        'NVIDIA H100 80GB HBM3'
    """
    return get_device_properties(device).name


def get_device_capability(device=None):
    """The device's compute capability as ``(major, minor)``.

        >>> agnostic.cuda.get_device_capability(0)  # doctest: +SKIP
        (9, 0)
    """
    properties = get_device_properties(device)
    return properties.major, properties.minor


class _DeviceProperties:
    """PyTorch's ``_CudaDeviceProperties`` fields, read from ``cudaGetDeviceProperties``."""

    def __init__(self, raw):
        name = raw["name"]
        self.name = name.decode() if isinstance(name, bytes) else name
        self.major = raw["major"]
        self.minor = raw["minor"]
        self.total_memory = raw["totalGlobalMem"]
        self.multi_processor_count = raw["multiProcessorCount"]
        self.is_integrated = bool(raw.get("integrated", 0))
        self.is_multi_gpu_board = bool(raw.get("isMultiGpuBoard", 0))

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // 2 ** 20}MB, multi_processor_count={self.multi_processor_count})")
