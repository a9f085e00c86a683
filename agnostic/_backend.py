"""The one switch between array namespaces: NumPy for the CPU, CuPy (imported on first CUDA use) for CUDA devices.

Everything device-specific lives here: which module computes, entering the right CUDA device, moving arrays between
devices, and the errors that explain why CUDA cannot be used.
"""

import numpy

from ._device import CPU, Device

_CUPY_MISSING = (
    "CUDA support needs CuPy, which is not installed: pip install 'agnostic[cuda12]' for CUDA 12 drivers or "
    "'agnostic[cuda13]' for CUDA 13 (on a machine without a system CUDA toolkit add CuPy's 'ctk' extra)"
)


class _CudaState:
    """What agnostic learned about CuPy and the driver; filled in on first CUDA use, never at import."""

    cupy = None
    import_error = None
    device_count = None
    unavailable_reason = None
    initialized = False
    init_hooks = []


_cuda = _CudaState()


def on_cuda_init(hook):
    """Run ``hook(cupy)`` once CUDA is first used (at once if it already was): how the CUDA runtime modules
    (allocator, streams) attach to CuPy without importing it at ``import agnostic`` time."""
    _cuda.init_hooks.append(hook)
    if _cuda.initialized:
        hook(_cuda.cupy)


def _initialize_cuda():
    _cuda.initialized = True
    for hook in _cuda.init_hooks:
        hook(_cuda.cupy)


def _import_cupy():
    if _cuda.cupy is None and _cuda.import_error is None:
        try:
            import cupy
        except ImportError as error:
            _cuda.import_error = error
        else:
            _cuda.cupy = cupy
    return _cuda.cupy


def cuda_device_count():
    """How many CUDA devices CuPy sees (0 without CuPy, a driver or a GPU); never raises."""
    if _cuda.device_count is None:
        cupy = _import_cupy()
        if cupy is None:
            _cuda.device_count, _cuda.unavailable_reason = 0, _CUPY_MISSING
        else:
            try:
                _cuda.device_count = cupy.cuda.runtime.getDeviceCount()
            except Exception as error:  # CUDARuntimeError: no driver, insufficient driver, no device
                _cuda.device_count = 0
                _cuda.unavailable_reason = (
                    "CUDA is not available: CuPy is installed but found no usable NVIDIA GPU and driver "
                    f"({type(error).__name__}: {error}); use device='cpu', or check nvidia-smi"
                )
            else:
                if _cuda.device_count == 0:
                    _cuda.unavailable_reason = "CUDA is not available: the driver reports no CUDA device"
    return _cuda.device_count


def cuda_unavailable_reason():
    """Why CUDA cannot be used, or None when it can."""
    cuda_device_count()
    return _cuda.unavailable_reason


def require_cupy():
    """The cupy module (CUDA initialized), or a RuntimeError that says what to install or why CUDA is unusable."""
    if not _cuda.initialized:
        if cuda_device_count() == 0:
            raise RuntimeError(_cuda.unavailable_reason)
        _initialize_cuda()
    return _cuda.cupy


def current_cuda_index():
    """The index of CuPy's current CUDA device."""
    return require_cupy().cuda.runtime.getDevice()


def resolve(device):
    """The concrete device a tensor lives on: ``cuda`` becomes ``cuda:<current>``; CUDA indices are checked."""
    if device.type == "cpu":
        return CPU
    require_cupy()
    count = _cuda.device_count
    if device.index is None:
        return Device("cuda", _cuda.cupy.cuda.runtime.getDevice())
    if device.index >= count:
        raise RuntimeError(
            f"CUDA device {device} is out of range: only {count} CUDA device(s) are visible "
            f"(valid indices 0..{count - 1}; see agnostic.cuda.device_count() and CUDA_VISIBLE_DEVICES)"
        )
    return device


def namespace(device):
    """The array module computing on ``device``: numpy or cupy."""
    return numpy if device is CPU else _cuda.cupy


class _NoSwitch:
    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return False


_NO_SWITCH = _NoSwitch()


def on(device):
    """A context that makes ``device`` CuPy's current device for the calls inside it (nothing to do on the CPU)."""
    if device is CPU:
        return _NO_SWITCH
    cupy = _cuda.cupy
    if cupy.cuda.runtime.getDevice() == device.index:
        return _NO_SWITCH
    return cupy.cuda.Device(device.index)


def device_of_array(array):
    """The Device an array lives on (NumPy arrays on the CPU, CuPy arrays on their GPU)."""
    if isinstance(array, numpy.ndarray):
        return CPU
    return Device("cuda", array.device.id)


def is_backend_array(obj):
    """True for a numpy.ndarray, or a cupy.ndarray when CuPy has been imported."""
    if isinstance(obj, numpy.ndarray):
        return True
    cupy = _cuda.cupy
    if cupy is None:
        module = type(obj).__module__
        if not module.startswith("cupy"):
            return False
        cupy = _import_cupy()
    return cupy is not None and isinstance(obj, cupy.ndarray)


def data_pointer(array):
    """Address of an array's first element (for telling views from copies)."""
    if isinstance(array, numpy.ndarray):
        return array.__array_interface__["data"][0]
    return array.data.ptr


def synchronize_if_cuda(device):
    """Block until queued work on ``device`` is done (no-op on the CPU)."""
    if device is not CPU:
        with on(device):
            _cuda.cupy.cuda.get_current_stream().synchronize()
