"""CuPy, imported and CUDA initialized on first use, never at ``import agnostic``; and the errors that explain why
CUDA cannot be used."""

_CUPY_MISSING = (
    "CUDA support needs CuPy, which is not installed: pip install 'agnostic-tensor[cuda12]' for CUDA 12 drivers or "
    "'agnostic-tensor[cuda13]' for CUDA 13 (on a machine without a system CUDA toolkit add CuPy's 'ctk' extra)"
)


class CudaState:
    """What agnostic learned about CuPy and the driver; filled in on first CUDA use, never at import."""

    cupy = None
    import_error = None
    device_count = None
    unavailable_reason = None
    initialized = False
    init_hooks: list = []

    @staticmethod
    def current_device():
        """The index of CuPy's current CUDA device (once CUDA is initialized, CuPy's own function: ops ask on every
        call)."""
        return require_cupy().cuda.runtime.getDevice()


state = CudaState()


def on_cuda_init(hook):
    """Run ``hook(cupy)`` once CUDA is first used (at once if it already was): how the CUDA runtime modules
    (allocator, streams) attach to CuPy without importing it at ``import agnostic`` time."""
    state.init_hooks.append(hook)
    if state.initialized:
        hook(state.cupy)


def _initialize_cuda():
    state.current_device = state.cupy.cuda.runtime.getDevice
    state.initialized = True
    for hook in state.init_hooks:
        hook(state.cupy)


def import_cupy():
    """The cupy module, or None when it is not installed (CUDA not initialized by this)."""
    if state.cupy is None and state.import_error is None:
        try:
            import cupy
        except ImportError as error:
            state.import_error = error
        else:
            state.cupy = cupy
    return state.cupy


def _cupy_missing(error):
    """Why CuPy can't be used: not installed, or installed but failing to import (a wheel for another CUDA)."""
    if isinstance(error, ModuleNotFoundError) and error.name == "cupy":
        return _CUPY_MISSING
    return (f"CUDA support needs CuPy, which is installed but failed to import ({type(error).__name__}: {error}): "
            "install the CuPy for your driver's CUDA: pip install 'agnostic-tensor[cuda12]' or 'agnostic-tensor[cuda13]'")


def cuda_device_count():
    """How many CUDA devices CuPy sees (0 without CuPy, a driver or a GPU); never raises."""
    if state.device_count is None:
        cupy = import_cupy()
        if cupy is None:
            state.device_count, state.unavailable_reason = 0, _cupy_missing(state.import_error)
        else:
            try:
                state.device_count = cupy.cuda.runtime.getDeviceCount()
            except Exception as error:  # CUDARuntimeError: no driver, insufficient driver, no device
                state.device_count = 0
                state.unavailable_reason = (
                    "CUDA is not available: CuPy is installed but found no usable NVIDIA GPU and driver "
                    f"({type(error).__name__}: {error}); use device='cpu', or check nvidia-smi"
                )
            else:
                if state.device_count == 0:
                    state.unavailable_reason = "CUDA is not available: the driver reports no CUDA device"
    return state.device_count


def cuda_unavailable_reason():
    """Why CUDA cannot be used, or None when it can."""
    cuda_device_count()
    return state.unavailable_reason


def require_cupy():
    """The cupy module (CUDA initialized), or a RuntimeError that says what to install or why CUDA is unusable."""
    if not state.initialized:
        if cuda_device_count() == 0:
            raise RuntimeError(state.unavailable_reason)
        _initialize_cuda()
    return state.cupy


def current_cuda_index():
    """The index of CuPy's current CUDA device."""
    return state.current_device()


def is_cupy_array(obj):
    """True for a cupy.ndarray; imports CuPy only when ``obj`` comes from it."""
    cupy = state.cupy
    if cupy is None:
        if not type(obj).__module__.startswith("cupy"):
            return False
        cupy = import_cupy()
    return cupy is not None and isinstance(obj, cupy.ndarray)
