"""The CPU backend: NumPy arrays in host memory, computed by NumPy (and agnostic's host kernels)."""

import numpy

from . import cpu_kernels, cpu_ops, host_memory


class _NoSwitch:
    """The device context of a backend with nothing to switch."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, *exc_info):
        return False


NO_SWITCH = _NoSwitch()
_ndarray = numpy.ndarray


class CPUBackend:
    """What computing on the CPU means: NumPy as the array namespace, nothing to make current or to wait for, and
    results that NumPy may give as scalars turned back into 0-dim arrays.

    >>> from agnostic._backends.cpu import CPUBackend
    >>> backend = CPUBackend()
    >>> backend.run(backend.xp.add, backend.xp.float32(1), 2).shape
    ()
    """

    __slots__ = ()
    type = "cpu"
    index = None
    host = True  # arrays in memory the CPU reads directly (pinned memory and numpy views apply)
    xp = numpy
    array_type = numpy.ndarray
    ops = cpu_ops  # the fused operations' CPU implementations

    def activate(self):
        """A context in which this device computes: nothing to switch on the CPU."""
        return NO_SWITCH

    def is_current(self):
        """Always: the host needs no switch."""
        return True

    def is_capturing(self):
        """Never: CUDA graphs capture device work only."""
        return False

    def run(self, function, *args, **kwargs):
        """``function(*args, **kwargs)``, a NumPy scalar result as a 0-dim array."""
        result = function(*args, **kwargs)
        return result if result.__class__ is _ndarray else numpy.asarray(result)

    def empty(self, shape, dtype):
        """An uninitialized array for a kernel's results, starting on a cache line (64 bytes, as PyTorch's CPU
        allocator aligns): threads writing neighbouring slices of its rows then share no line
        (``host_memory.empty_aligned``)."""
        return host_memory.empty_aligned(shape, dtype)

    def scatter_add(self, target, positions, values):
        """``target[positions] += values`` with repeated positions accumulating."""
        numpy.add.at(target, positions, values)

    def scatter_multiply(self, target, positions, values):
        """``target[positions] *= values`` with repeated positions accumulating."""
        numpy.multiply.at(target, positions, values)

    def stable_argsort(self, keys):
        """Indices that sort ``keys``, equal keys in their original order."""
        return keys.argsort(kind="stable")

    def as_strided(self, array, shape, strides):
        """A writable view of ``array``'s memory with ``shape`` and byte ``strides``."""
        return numpy.lib.stride_tricks.as_strided(array, shape, strides, writeable=True)

    def reshape(self, array, shape):
        """``array.reshape(shape)``: a view where the layout allows, else a copy, made on all cores for a large
        array (``cpu_kernels.contiguous``)."""
        if array.flags.c_contiguous:
            return array.reshape(shape)
        try:
            return numpy.reshape(array, shape, copy=False)
        except TypeError:  # a NumPy before 2.1, without copy=
            return array.reshape(shape)
        except ValueError:  # a copy is needed (or the shape is wrong: the copy's reshape says so)
            copied = cpu_kernels.contiguous(array)
            return array.reshape(shape) if copied is None else copied.reshape(shape)

    def reshaped_view(self, array, shape):
        """``array`` in ``shape`` without a copy, or None where its layout needs one (or ``shape`` has another size).
        NumPy's ``copy=False`` says so where it has it (2.1 and later), else the result's address."""
        try:
            return array.reshape(shape, copy=False)
        except ValueError:
            return None
        except TypeError:  # a NumPy before 2.1, without copy=
            try:
                result = array.reshape(shape)
            except ValueError:
                return None
            same = array.size <= 1 or result.__array_interface__["data"][0] == array.__array_interface__["data"][0]
            return result if same else None

    def concatenate(self, arrays, axis):
        """``numpy.concatenate(arrays, axis)``, large arrays copied on all cores (``cpu_kernels.concatenate``)."""
        joined = cpu_kernels.concatenate(arrays, axis)
        return numpy.concatenate(arrays, axis=axis) if joined is None else joined

    def matmul(self, a, b):
        """``a @ b``, in the operands' dtype: NumPy's bfloat16 (ml_dtypes') products come out in float32,
        accumulated there, so they are rounded back once, as PyTorch's are. Stacks of small matrices share their
        products among the threads (``cpu_kernels.batched_matmul``)."""
        product = cpu_kernels.batched_matmul(a, b) if a.ndim > 2 else None
        if product is None:
            product = numpy.matmul(a, b)
        return product if product.dtype == a.dtype else product.astype(a.dtype)

    def writable_scalar(self, value):
        """A NumPy scalar as this backend should receive it in ``array[...] = value``: as it is."""
        return value

    def receive(self, array, source, non_blocking=False):
        """An array of another device, copied here (synchronously)."""
        return source.to_host(array)[0]

    def to_host(self, array, non_blocking=False, out=None):
        """``(array, None)``: already on the host."""
        return array, None

    def __repr__(self):
        return "<agnostic CPU backend>"


BACKEND = CPUBackend()
