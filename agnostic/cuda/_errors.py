"""CUDA runtime errors and checks (CudaError, check_error, cudart), as torch.cuda's."""

from .. import _backend

__all__ = ["CudaError", "check_error", "cudart"]


def _error_string(code):
    """CUDA's description of error ``code`` (``cudaGetErrorString``), read from the message of CuPy's
    ``CUDARuntimeError``, which is ``"<cudaErrorName>: <description>"``."""
    cupy = _backend.require_cupy()
    message = str(cupy.cuda.runtime.CUDARuntimeError(int(code)))
    return message.split(": ", 1)[-1]


class CudaError(RuntimeError):
    """A CUDA runtime error, with PyTorch's message ``"<CUDA's description> (<code>)"``; ``code`` keeps the number.

        >>> str(agnostic.cuda.CudaError(34))  # doctest: +SKIP
        'device not ready (34)'
    """

    def __init__(self, code):
        self.code = int(code)
        super().__init__(f"{_error_string(self.code)} ({self.code})")


def check_error(res):
    """Raise ``CudaError`` unless ``res``, the result of a CUDA runtime call, is success (0).

        >>> agnostic.cuda.check_error(0)
        >>> agnostic.cuda.check_error(agnostic.cuda.cudart().cudaProfilerStart())  # doctest: +SKIP
    """
    if int(res) != _Runtime.cudaError.success:
        raise CudaError(res)


class _ErrorCodes:
    """The ``cudaError`` codes PyTorch's ``cudart().cudaError`` names."""

    success = 0
    not_ready = 34


class _Runtime:
    """The part of the CUDA runtime API that ``torch.cuda.cudart()`` exposes, over ``cupy.cuda.runtime``: calls
    return the ``cudaError`` code instead of raising, as the C API (and PyTorch's binding) does."""

    cudaError = _ErrorCodes

    def __init__(self, cupy):
        self._runtime = cupy.cuda.runtime

    def _code(self, call, *args):
        try:
            call(*args)
        except self._runtime.CUDARuntimeError as error:
            return error.status
        return _ErrorCodes.success

    def cudaGetErrorString(self, error):
        """CUDA's description of error code ``error``."""
        return _error_string(error)

    def cudaProfilerStart(self):
        """Start the profiler's collection (for ``nsys --capture-range=cudaProfilerApi``); returns the error code."""
        return self._code(self._runtime.profilerStart)

    def cudaProfilerStop(self):
        """Stop the profiler's collection; returns the error code."""
        return self._code(self._runtime.profilerStop)

    def cudaHostRegister(self, pointer, size, flags):
        """Page-lock ``size`` bytes of host memory at ``pointer``; returns the error code."""
        return self._code(self._runtime.hostRegister, pointer, size, flags)

    def cudaHostUnregister(self, pointer):
        """Undo ``cudaHostRegister``; returns the error code."""
        return self._code(self._runtime.hostUnregister, pointer)


_runtime = None


def cudart():
    """The CUDA runtime API as ``torch.cuda.cudart()`` gives it (``cudaProfilerStart``, ``cudaProfilerStop``,
    ``cudaGetErrorString``, ``cudaHostRegister``...; calls return error codes for ``check_error``). Initializes
    CUDA, and raises the reason when it is unavailable.

        >>> rt = agnostic.cuda.cudart()  # doctest: +SKIP
        >>> agnostic.cuda.check_error(rt.cudaProfilerStart())  # doctest: +SKIP
        >>> agnostic.cuda.check_error(rt.cudaProfilerStop())  # doctest: +SKIP
    """
    global _runtime
    if _runtime is None:
        _runtime = _Runtime(_backend.require_cupy())
    return _runtime
