"""The CUDA implementations of agnostic's fused operations, on CuPy arrays with their device current: each a
kernel or two from ``cuda_kernels``, where CuPy's generic functions would launch many or cost more host time. The
namesakes of ``cpu_ops``' functions, same arguments and results; the ops reach them as ``device.backend.ops``.
"""

import functools
import os
import warnings

import numpy

from .. import _conversion
from .._layout import check_attention_gradient_layouts
from ..ops import _division
from . import cpu_ops, cuda_kernels, dlpack, lstm_steps, philox, sync_debug
from .cupy_loader import require_cupy, state as cupy_loader_state
from .pinned import pinned_copy
from .special import library_function

MULTI_TENSOR_KERNELS = True  # optimizers update every contiguous parameter of a dtype in one launch
ROW_KERNELS = True  # softmax_rows, layer_norm_rows and their gradients: a kernel each where CuPy launches several
ATTENTION_KERNELS = True  # attention_forward/backward: scaled dot-product attention without the weights in memory
_ROWS_PER_BLOCK = 8  # one warp per row
_WARPS = 32  # of the one block that takes up to _ONE_BLOCK_ROWS rows
# Up to this many rows, cross-entropy's one-block kernel (a warp per 16 rows at most, about 1 us of GPU time each);
# more take the two-kernel path, all rows at once (4096 rows: 125 us in one block, 5.5 us in the two kernels).
_ONE_BLOCK_ROWS = 512
_TOTAL_THREADS = cuda_kernels.CROSS_ENTROPY_TOTAL_THREADS  # the adding kernel's: its shared arrays fit them


def add_row(array, row):
    """``array += row`` in place, ``row`` added along the last axis (a linear layer's bias)."""
    array += row


def multi_tensor_apply(kernel_name, dtype, blocks, threads, arguments):
    """Launch the multi-tensor kernel ``kernel_name`` for parameters of ``dtype``: ``blocks`` blocks of ``threads``,
    the first argument being the device copy of its pointer table (see ``optim._fused``)."""
    cuda_kernels.kernel(kernel_name, dtype)((blocks,), (threads,), arguments)


def captured_upload(host_array):
    """``host_array`` copied to the current device by a copy that a CUDA graph capture can record: from pinned
    memory, asynchronously on the current stream. Returns the device array and the pinned copy, which must live as
    long as the graph (each replay copies from it again)."""
    cupy = require_cupy()
    pinned = pinned_copy(host_array)
    device_array = cupy.empty(host_array.shape, host_array.dtype)
    # CUDA records an asynchronous copy from pinned memory as a graph node; CuPy's array and pointer methods refuse
    # every host-to-device copy during a capture, since they can't tell pinned memory from pageable: hence the
    # runtime call, on memory known to be pinned.
    runtime = cupy.cuda.runtime
    runtime.memcpyAsync(device_array.data.ptr, pinned.ctypes.data, pinned.nbytes, runtime.memcpyHostToDevice,
                        cupy.cuda.get_current_stream().ptr)
    return device_array, pinned


def erf(array):
    """erf of a floating array, in its dtype (``cupyx.scipy.special.erf``; float16 computed in float32)."""
    import cupyx.scipy.special

    compute = array.astype(numpy.float32) if array.dtype == numpy.float16 else array
    return cupyx.scipy.special.erf(compute).astype(array.dtype, copy=False)


def relu_gradient(grad, input):
    """``grad where input > 0 else 0`` of two arrays of one float dtype and shape: one kernel."""
    return cuda_kernels.kernel("agnostic_relu_gradient")(input, grad)


def kept_or_zero(mask, array):
    """``where(mask, array, 0)`` of an integer or float array."""
    return require_cupy().where(mask, array, array.dtype.type(0))


def column_sums(array):
    """``array.sum(0)`` of a 2-D, C-contiguous float32/float64 array: one small kernel (CuPy's generic reduction
    costs several times more host time per call); each column is summed in a fixed order."""
    cupy = require_cupy()
    n_rows, n_cols = array.shape
    out = cupy.empty(n_cols, array.dtype)
    if n_cols:
        cuda_kernels.kernel("agnostic_column_sums", array.dtype)(
            ((n_cols + 31) // 32,), (32, 32), (array, out, numpy.int64(n_rows), numpy.int64(n_cols)))
    return out


def whole_reduction(array, name, keepdim):
    """``array``'s ``name`` (sum, mean, max or min) over every element, a 0-dim array (all dimensions 1 with
    ``keepdim``) on the current device. A sum or mean of a small contiguous float32/float64 array is one kernel of
    one block (CuPy's allocates CUB's scratch buffer on every call, and a mean launches a division after it); CuPy's
    method otherwise.

        >>> whole_reduction(require_cupy().arange(4, dtype=numpy.float32), "mean", False)  # doctest: +SKIP
        array(1.5, dtype=float32)
    """
    if name in _ONE_BLOCK_DIVISORS and array.size <= _ONE_BLOCK_SIZE and array.dtype in _FLOATS \
            and array.flags.c_contiguous:
        size = array.size
        out = require_cupy().empty((1,) * array.ndim if keepdim else (), array.dtype)
        cuda_kernels.kernel("agnostic_whole_sum", array.dtype)(
            (1,), (cuda_kernels.WHOLE_REDUCTION_THREADS,), (array, out, size, size if name == "mean" else 1))
        return out
    return getattr(array, name)(keepdims=keepdim)


_ONE_BLOCK_DIVISORS = frozenset(("sum", "mean"))
# Elements up to which one block reduces an array (16 loads a thread): at most a few microseconds of GPU time, less
# than the host takes to launch the next op; larger arrays take CuPy's reduction over the whole GPU.
_ONE_BLOCK_SIZE = 1 << 13
_FLOATS = frozenset((numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)))


def cross_entropy_forward(logits, labels, ignore_index, mean):
    """CuPy, on the current device: the same, from one kernel (two for many rows) and one read-back."""
    cupy = require_cupy()
    rows, classes = logits.shape
    logits = cupy.ascontiguousarray(logits)
    labels = cupy.ascontiguousarray(labels)
    log_sum_exp = cupy.empty(rows, logits.dtype)
    totals = cupy.empty(3, logits.dtype)  # the loss, the kept count, whether any label is out of bounds
    shape = (numpy.int64(rows), numpy.int64(classes), numpy.int64(ignore_index))
    if rows <= _ONE_BLOCK_ROWS:
        cuda_kernels.kernel("agnostic_cross_entropy_block", logits.dtype)(
            (1,), (32 * _WARPS,), (logits, labels) + shape + (numpy.int32(mean), log_sum_exp, totals))
    else:
        losses = cupy.empty(rows, logits.dtype)
        flags = cupy.empty(rows, numpy.int32)
        blocks = (rows + _ROWS_PER_BLOCK - 1) // _ROWS_PER_BLOCK
        cuda_kernels.kernel("agnostic_cross_entropy_rows", logits.dtype)(
            (blocks,), (32 * _ROWS_PER_BLOCK,), (logits, labels) + shape + (log_sum_exp, losses, flags))
        cuda_kernels.kernel("agnostic_cross_entropy_total", logits.dtype)(
            (1,), (_TOTAL_THREADS,), (losses, flags, numpy.int64(rows), numpy.int32(mean), totals))
    # The one read-back: PyTorch's target check. A CUDA graph capture can't wait for it (PyTorch checks on the device
    # there); out-of-range targets then give an undefined loss instead of an error.
    bad = False if cupy.cuda.get_current_stream().is_capturing() else bool(totals[2].get())
    return totals[0], log_sum_exp, totals[1], bad


def cross_entropy_backward(logits, labels, log_sum_exp, count, scale, ignore_index, mean):
    """The gradient ``(softmax(logits) - one_hot(labels)) * scale`` (divided by ``count`` for ``mean``), rows of
    ignored labels zero: one kernel."""
    return cuda_kernels.kernel("agnostic_cross_entropy_backward")(
        logits, labels[:, None], log_sum_exp[:, None], scale, count, logits.shape[1], ignore_index, int(mean))


_KERNEL_SOURCES = frozenset(numpy.dtype(name) for name in ("float16", "float32", "float64"))


def convert(array, dtype):
    """``array`` as NumPy dtype ``dtype``, as PyTorch converts it (``agnostic._conversion``): one kernel where
    CuPy's astype differs (the formula for bfloat16), CuPy's astype elsewhere."""
    kind = _conversion.kind(array.dtype, dtype)
    if kind == "float_to_integer" and array.dtype in _KERNEL_SOURCES:
        return cuda_kernels.kernel("agnostic_float_to_integer", dtype)(array)
    if kind == "float64_to_float16":
        return cuda_kernels.kernel("agnostic_float64_to_float16")(array)
    return _conversion.convert(require_cupy(), array, dtype)


def _one_kernel(name):
    """A ``_division`` function on CuPy arrays: its one kernel (``cuda_kernels``, the formula's bits in one pass)
    for the dtypes it is declared for, the formula itself for the others (bfloat16)."""
    kernel_name = f"agnostic_{name}"
    declared = frozenset(dtype for kernel, dtype in cuda_kernels.declared_kernels() if kernel == kernel_name)
    formula = getattr(_division, name)

    def compute(a, b):
        dtype = a.dtype
        if dtype in declared:
            return cuda_kernels.kernel(kernel_name, dtype)(a, b)
        return formula(require_cupy(), a, b)
    compute.__name__ = compute.__qualname__ = name
    compute.__doc__ = f"PyTorch's {name} of two arrays (or an array and a NumPy scalar) of one dtype (``_division``)."
    return compute


floor_divide = _one_kernel("floor_divide")
remainder = _one_kernel("remainder")
fmod = _one_kernel("fmod")
trunc_divide = _one_kernel("trunc_divide")
complex_divide = _one_kernel("complex_divide")


def linalg(name, *arrays, **kwargs):
    """``cupy.linalg.<name>(*arrays, **kwargs)``, raising ``numpy.linalg.LinAlgError`` as NumPy does (CuPy ignores
    a singular or non positive-definite matrix unless asked to check); ``eig``/``eigvals``, where this CuPy lacks
    them, run on the host (NumPy's LAPACK) and come back."""
    cupy = require_cupy()
    import cupyx

    function = getattr(cupy.linalg, name, None)
    if function is None:
        host = getattr(numpy.linalg, name)(*[cupy.asnumpy(array) for array in arrays], **kwargs)
        return tuple(cupy.asarray(part) for part in host) if isinstance(host, tuple) else cupy.asarray(host)
    if name not in _CHECKED_LINALG:  # singular input is a valid answer there (det 0, slogdet sign 0)
        return function(*arrays, **kwargs)
    with cupyx.errstate(linalg="raise"):
        return function(*arrays, **kwargs)


_CHECKED_LINALG = frozenset(("inv", "solve", "cholesky"))


def _cupyx_special():
    import cupyx.scipy.special

    return cupyx.scipy.special


def special_function(name, adjust=None):
    """``f(*arguments)``: CuPy's ``cupyx.scipy.special.<name>`` of CuPy arrays, in the first array's dtype (see
    ``special.library_function``; CuPy is imported on the first call)."""
    return library_function(_cupyx_special, require_cupy, name, adjust)


# The dtypes cupyx's atomic scatter_max/scatter_min take exactly (CuPy's ``_scatter_op``); others are mapped onto
# them. (CuPy's float64 ones round through float32: 1.0531157544867582 came back as 1.053115725517273.)
_ATOMIC_EXTREMES = frozenset(numpy.dtype(name) for name in ("int32", "uint32", "uint64", "float32"))
_SIGN_BIT = numpy.uint64(1 << 63)
_TOP_BIT = numpy.uint64(63)


def _scatter_extreme(name, target, positions, values):
    """``positions``: a tuple of integer arrays broadcasting with ``values``."""
    cupy = require_cupy()
    import cupyx

    scatter = getattr(cupyx, name)
    values = values.astype(target.dtype)
    floating = target.dtype.kind == "f"
    was_nan = cupy.isnan(target) if floating else None
    if target.dtype in _ATOMIC_EXTREMES:
        scatter(target, positions, values)
    elif target.dtype == numpy.int64:
        # Flipping the sign bit maps int64 onto uint64 in the same order.
        shifted = target.view(numpy.uint64) ^ _SIGN_BIT
        scatter(shifted, positions, values.view(numpy.uint64) ^ _SIGN_BIT)
        target[...] = (shifted ^ _SIGN_BIT).view(numpy.int64)
    elif target.dtype == numpy.float64:
        ordered = _ordered_bits(cupy, target)
        scatter(ordered, positions, _ordered_bits(cupy, values))
        negative = (ordered >> _TOP_BIT) == 0
        target[...] = cupy.where(negative, ~ordered, ordered ^ _SIGN_BIT).view(numpy.float64)
    else:  # float16 in float32; bool and the 8- and 16-bit integers in int32: exact
        wide = numpy.float32 if target.dtype.kind == "f" else numpy.int32
        widened = target.astype(wide)
        scatter(widened, positions, values.astype(wide))
        target[...] = widened.astype(target.dtype)
    if floating:
        # PyTorch's amax/amin propagate NaN; the atomic compare-and-swap doesn't promise to.
        target[was_nan] = numpy.nan
        nan = cupy.isnan(values)
        *spread, nan = cupy.broadcast_arrays(*positions, nan)
        target[tuple(position[nan] for position in spread)] = numpy.nan


def _ordered_bits(cupy, array):
    """float64 ``array``'s bits as uint64 in the numbers' order: positive numbers with the sign bit set, negative
    ones with every bit flipped (NaNs are restored separately)."""
    bits = array.view(numpy.uint64)
    return cupy.where((bits >> _TOP_BIT) != 0, ~bits, bits | _SIGN_BIT)


def scatter_maximum(target, positions, values):
    """``target[positions] = maximum(target[positions], values)`` in place, every repeated position taken into
    account (``cupyx.scatter_max``, atomic)."""
    _scatter_extreme("scatter_max", target, positions, values)


def scatter_minimum(target, positions, values):
    """``target[positions] = minimum(target[positions], values)`` in place, every repeated position taken into
    account (``cupyx.scatter_min``, atomic)."""
    _scatter_extreme("scatter_min", target, positions, values)


def memory_capacity():
    """None: no request is refused before it reaches CuPy's allocator, whose ``OutOfMemoryError`` (PyTorch's
    error for CUDA) names the request and the device's memory, whatever the size."""
    return None


def set_matmul_tf32(allowed):
    """Let float32 (and complex64) matrix products use TF32 tensor cores, or not (``backends.cuda.matmul.allow_tf32``).

    CuPy's only documented switch is the ``CUPY_TF32`` environment variable, which it reads at a process's first
    float32 product (``cupy/_core/_routines_linalg.pyx``, ``get_compute_type``) and never again: so the setting takes
    effect when made before CUDA computes anything, and a later change warns that it comes too late."""
    wanted = "1" if allowed else "0"
    if cupy_loader_state.initialized and os.environ.get("CUPY_TF32", "0") != wanted:
        warnings.warn("backends.cuda.matmul.allow_tf32 (or set_float32_matmul_precision) changed after CUDA was "
                       "first used: CuPy may already have fixed the float32 matmul precision for this process; set it "
                       "at the start of the program", UserWarning, stacklevel=4)
    os.environ["CUPY_TF32"] = wanted


# ----- DLPack and __cuda_array_interface__ -------------------------------------------------------------------------
def dlpack_device(array):
    """``__dlpack_device__`` of a CuPy array: ``(kDLCUDA, index)`` (``kDLCUDAManaged`` for managed memory)."""
    device_type, index = array.__dlpack_device__()
    return dlpack.DLDeviceType(device_type), index


def dlpack_export(array, stream, max_version, dl_device, copy):
    """A DLPack capsule of a CuPy array, by CuPy's ``__dlpack__``: the consumer's ``stream`` (None: the legacy
    default stream; -1: no ordering) waits for an event recorded on the array's device's current stream, so the work
    queued there is visible to it. ``dl_device=(kDLCPU, 0)`` exports a host copy. CuPy copies only to the host, so a
    same-device ``copy=True`` is made here, on the current stream, before that event."""
    cupy = require_cupy()
    with cupy.cuda.Device(array.device.id):
        same_device = dl_device is None or tuple(dl_device) == tuple(array.__dlpack_device__())
        if copy is False and not same_device:  # the standard's error for a copy that copy=False forbids
            raise BufferError(f"__dlpack__(dl_device={tuple(dl_device)}, copy=False): this tensor is in GPU memory, "
                              "and another device can only get a copy; pass copy=None or copy=True")
        if copy is True and same_device:
            capsule = array.copy().__dlpack__(stream=stream, max_version=max_version)
            dlpack.mark_copied(capsule)
            return capsule
        return array.__dlpack__(stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)


def dlpack_import(producer, copy):
    """A CuPy array sharing the device memory of ``producer`` (an object with ``__dlpack__`` or a capsule), by
    ``cupy.from_dlpack`` on that device, which hands the producer its current stream; copied when ``copy`` is True,
    and ``copy=False`` refuses a producer's copy."""
    cupy = require_cupy()
    _, index = dlpack.device_of(dlpack.producer_device(producer))
    with cupy.cuda.Device(index):
        if dlpack.is_capsule(producer):
            array = cupy.from_dlpack(producer)
        else:  # CuPy's producer refuses copy=True on its own device: ask for the memory, copy it here
            array = cupy.from_dlpack(producer, copy=False if copy is False else None)
        return array.copy() if copy is True else array


def cuda_array_interface(array):
    """CuPy's ``__cuda_array_interface__`` (version 3) of an array, its ``stream`` the device's current stream."""
    cupy = require_cupy()
    with cupy.cuda.Device(array.device.id):
        return array.__cuda_array_interface__


def array_from_cuda_interface(obj):
    """A CuPy array sharing the device memory of an object with ``__cuda_array_interface__`` (Numba device arrays,
    PyTorch CUDA tensors...), on the device that memory is on; CuPy waits for the stream it names (version 3)."""
    cupy = require_cupy()
    pointer = obj.__cuda_array_interface__["data"][0]
    if not pointer:  # an empty array: nothing to share, on the current device
        return cupy.asarray(obj)
    with cupy.cuda.Device(cupy.cuda.runtime.pointerGetAttributes(pointer).device):  # CuPy takes the current one
        return cupy.asarray(obj)



def lstm_forward_steps(projected, first_hidden, first_cell, weight_hh, recurrent, gates, cells, outputs, reverse):
    """An LSTM layer direction's time steps, as ``cpu_ops.lstm_forward_steps``: one launch of
    ``agnostic_lstm_step`` per step, the hidden-to-gates product inside it (``recurrent`` goes unused)."""
    weight_t = require_cupy().ascontiguousarray(weight_hh.T)
    step, grid, block, batch, size = _lstm_launch("agnostic_lstm_step", first_hidden)
    prev = numpy.int32(-1)
    for t in lstm_steps.order(len(projected), reverse):
        t = numpy.int32(t)
        step(grid, block, (projected, first_hidden, first_cell, weight_t, gates, cells, outputs, t, prev, batch, size))
        prev = t


def lstm_backward_steps(gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, grad_cell, spare, grad_gates,
                        reverse):
    """The gradients of an LSTM layer direction's steps, as ``cpu_ops.lstm_backward_steps``: one launch of
    ``agnostic_lstm_step_backward`` per step (the product through the next step's gates inside it), then the first
    hidden state's gradient as one product."""
    step, grid, block, batch, size = _lstm_launch("agnostic_lstm_step_backward", grad_hidden)
    times = list(lstm_steps.order(len(gates), reverse))
    incoming, outgoing = grad_cell, spare
    after = numpy.int32(-1)
    for position in range(len(times) - 1, -1, -1):
        t = numpy.int32(times[position])
        prev = numpy.int32(times[position - 1] if position else -1)
        step(grid, block, (gates, cells, first_cell, weight_hh, grad_outputs, grad_hidden, incoming, outgoing,
                           grad_gates, t, prev, after, batch, size))
        incoming, outgoing, after = outgoing, incoming, t
    cupy = require_cupy()
    if cupy.cuda.get_current_stream().is_capturing():  # CuPy refuses cuBLAS while a stream captures
        grad_hidden[...] = capturable_matmul(grad_gates[times[0]], weight_hh)
    else:
        cupy.matmul(grad_gates[times[0]], weight_hh, out=grad_hidden)
    if incoming is not grad_cell:
        grad_cell[...] = incoming


def _lstm_launch(name, state):
    """The kernel ``name`` for ``state``'s dtype, its grid over a (B, H) state and its block, and B and H as kernel
    ints."""
    batch, size = state.shape
    grid = ((size + 31) // 32, (batch + cuda_kernels.LSTM_ROWS - 1) // cuda_kernels.LSTM_ROWS)
    block = (32, cuda_kernels.lstm_warps(name, state.dtype))
    return cuda_kernels.kernel(name, state.dtype), grid, block, numpy.int32(batch), numpy.int32(size)


def lu_factor(matrices):
    """``(LU, pivots)`` of a stack of (m, n) matrices, as ``cpu_ops.lu_factor``: each by cuSOLVER's ``getrf``
    through ``cupyx.scipy.linalg.lu_factor`` (which warns on a singular matrix, here silenced, and whose 0-based
    pivots become 1-based)."""
    cupy = require_cupy()
    import cupyx.scipy.linalg

    count, rows, columns = matrices.shape
    factors = cupy.empty(matrices.shape, matrices.dtype)
    pivots = cupy.empty((count, min(rows, columns)), numpy.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for index in range(count):
            factors[index], rows_exchanged = cupyx.scipy.linalg.lu_factor(matrices[index], check_finite=False)
            pivots[index] = rows_exchanged + 1
    return factors, pivots


def _launch_over_rows(name, dtype, rows, arguments):
    """Launch row kernel ``name`` (``cuda_kernels``, a warp per row) over ``rows`` rows."""
    per_block = _ROWS_PER_BLOCK
    cuda_kernels.kernel(name, dtype)(((rows + per_block - 1) // per_block,), (32 * per_block,), arguments)


def softmax_rows(array, logarithm):
    """softmax (or log_softmax) over the last axis of a C-contiguous float32/float64 array with at least one
    element: one kernel, a warp per row (CuPy's max, subtract, exp, sum and divide are five)."""
    out = require_cupy().empty_like(array)
    cols = array.shape[-1]
    _launch_over_rows("agnostic_softmax_rows", array.dtype, array.size // cols,
                      (array, out, numpy.int64(array.size // cols), numpy.int64(cols), numpy.int32(logarithm)))
    return out


def softmax_backward_rows(grad, result, logarithm):
    """The gradient of ``softmax_rows`` from its ``result``: ``result * (grad - sum(grad * result))`` (log_softmax:
    ``grad - exp(result) * sum(grad))``) along the last axis, in one kernel."""
    out = require_cupy().empty_like(result)
    cols = result.shape[-1]
    rows = result.size // cols
    _launch_over_rows("agnostic_softmax_backward_rows", result.dtype, rows,
                      (grad, result, out, numpy.int64(rows), numpy.int64(cols), numpy.int32(logarithm)))
    return out


def layer_norm_rows(rows, weight, bias, eps):
    """``(normalized, mean, rstd)`` of the rows of a 2-D C-contiguous float32/float64 array: each row less its mean,
    times ``rsqrt(var + eps)`` (biased variance), times ``weight`` and plus ``bias`` (vectors, or None): one kernel,
    a warp per row. ``mean`` and ``rstd`` (one per row) are what the gradient needs."""
    cupy = require_cupy()
    count, cols = rows.shape
    out = cupy.empty_like(rows)
    mean, rstd = cupy.empty(count, rows.dtype), cupy.empty(count, rows.dtype)
    _launch_over_rows(
        "agnostic_layer_norm_rows", rows.dtype, count,
        (rows, rows if weight is None else weight, rows if bias is None else bias, out, mean, rstd,
         numpy.int64(count), numpy.int64(cols), numpy.float64(eps), numpy.int32(weight is not None),
         numpy.int32(bias is not None)))
    return out, mean, rstd


def layer_norm_backward_rows(grad, rows, weight, mean, rstd):
    """``(grad_input, grad_weight, grad_bias)`` of ``layer_norm_rows`` (2-D C-contiguous arrays): one kernel for the
    input's gradient, then a column sum each for the weight's and the bias's."""
    cupy = require_cupy()
    count, cols = rows.shape
    grad_input, grad_normalized = cupy.empty_like(rows), cupy.empty_like(rows)
    _launch_over_rows(
        "agnostic_layer_norm_backward_rows", rows.dtype, count,
        (grad, rows, rows if weight is None else weight, mean, rstd, grad_input, grad_normalized,
         numpy.int64(count), numpy.int64(cols), numpy.int32(weight is not None)))
    return grad_input, column_sums(grad_normalized), column_sums(grad)


def attention_fits(dtype, pairs, queries, keys, dim, value_dim):
    """Whether ``attention_forward`` takes ``pairs`` (B * H) of (B, H, L, D) queries of ``dtype`` (``queries`` rows)
    over ``keys`` keys and values of ``dim`` and ``value_dim`` dimensions: float32 with heads up to 128 dimensions,
    float64 up to 64, some of each, and pairs and rows that the grid's dimensions (2**31 - 1 and 65535 blocks)
    cover."""
    return (_attention_max_dim(dtype, max(dim, value_dim)) is not None and min(queries, keys, dim, value_dim) > 0
            and pairs < 2 ** 31 and max(queries, keys) <= 65535 * cuda_kernels.ATTENTION_WARPS)


def _attention_max_dim(dtype, dim):
    return next((size for size in cuda_kernels.ATTENTION_MAX_DIMS.get(dtype, ()) if dim <= size), None)


def attention_forward(q, k, v, out, scale, causal, dropout=None):
    """``out = softmax(scale * q k^T) v`` over the last two axes of (B, H, L, D) ``q``, (B, H, S, D) ``k`` and
    (B, H, S, Dv) ``v`` (strided views with a unit last stride; ``out`` too, (B, H, L, Dv)); with ``causal``, query
    ``i`` sees keys ``j <= i``; with ``dropout``, ``(seed, start, keep)``, each weight is kept with probability
    ``keep`` by the uniform that a (B, H, L, S) draw from the Philox stream at ``(seed, start)`` has at its place
    (``agnostic.bernoulli``'s), and scaled by ``1 / keep``. One kernel (``agnostic_attention_forward``), the
    weights never stored; returns the rows' log-sum-exp of the scaled scores, (B, H, L), which
    ``attention_backward`` needs."""
    lse = require_cupy().empty(q.shape[:3], q.dtype)
    _launch_attention("agnostic_attention_forward", q.shape[2], (q, k, v, out, lse), q, k, v, out, scale, causal,
                      dropout)
    return lse


def attention_backward(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal, dropout=None):
    """The gradients of ``attention_forward`` for the gradient ``grad`` of its ``out`` (laid out as ``out``),
    written into ``grad_q``, ``grad_k`` and ``grad_v`` (laid out as ``q``, ``k`` and ``v``): two kernels, a warp per
    query row for ``grad_q`` and one per key row for the others, the weights (and their dropout, the forward's
    ``dropout``) computed again from ``lse``."""
    check_attention_gradient_layouts(q, k, v, out, grad, grad_q, grad_k, grad_v)
    _launch_attention("agnostic_attention_backward_query", q.shape[2], (q, k, v, out, grad, lse, grad_q),
                      q, k, v, out, scale, causal, dropout)
    _launch_attention("agnostic_attention_backward_key", k.shape[2], (q, k, v, out, grad, lse, grad_k, grad_v),
                      q, k, v, out, scale, causal, dropout)


def _launch_attention(name, rows, arrays, q, k, v, out, scale, causal, dropout):
    """Launch attention kernel ``name`` over ``arrays``, a warp per one of ``rows`` rows of each (batch, head)."""
    batch, heads, queries, dim = q.shape
    keys, value_dim = v.shape[2], v.shape[3]
    strides = [numpy.int64(stride // array.itemsize) for array in (q, k, v, out) for stride in array.strides[:3]]
    if dropout is None:
        dropping = (numpy.uint64(0), numpy.uint64(0), numpy.uint64(0), numpy.float64(1.0), numpy.int32(0))
    else:
        seed, start, keep = dropout
        philox.refuse_during_capture()
        key, _, base_lo, base_hi = philox.counter_arguments(seed, start)
        dropping = (key, base_lo, base_hi, numpy.float64(keep), numpy.int32(1))
    kernel = cuda_kernels.kernel(f"{name}_{_attention_max_dim(q.dtype, max(dim, value_dim))}", q.dtype)
    warps = cuda_kernels.ATTENTION_WARPS
    kernel((batch * heads, -(-rows // warps)), (32 * warps,),
           (*arrays, numpy.int64(heads), numpy.int64(queries), numpy.int64(keys), numpy.int64(dim),
            numpy.int64(value_dim), *strides, numpy.float64(scale), numpy.int32(causal), *dropping))


def solve_triangular(a, b, lower, unit_diagonal):
    """The solutions ``X`` of ``A X = B`` for stacks of triangular matrices ``a`` and right-hand sides ``b``, as
    ``cpu_ops.solve_triangular``: cuBLAS's ``trsm`` through ``cupyx.scipy.linalg.solve_triangular``, matrix by
    matrix (trsm doesn't check the diagonal: a zero there gives inf/NaN, as in PyTorch)."""
    cupy = require_cupy()
    import cupyx.scipy.linalg

    out = cupy.empty(b.shape, b.dtype)
    for index in range(a.shape[0]):
        out[index] = cupyx.scipy.linalg.solve_triangular(a[index], b[index], lower=lower,
                                                          unit_diagonal=unit_diagonal, check_finite=False)
    return out


def ldl_factor(matrices, hermitian):
    """``(LD, pivots, info)`` as ``cpu_ops.ldl_factor``, computed on the host: CuPy has no Bunch-Kaufman
    factorization (cuSOLVER's sytrf has no CuPy wrapper), so the matrices go through SciPy's LAPACK and back."""
    cupy = require_cupy()
    return tuple(cupy.asarray(part) for part in cpu_ops.ldl_factor(cupy.asnumpy(matrices), hermitian))


def ldl_solve(factors, pivots, b, hermitian):
    """``cpu_ops.ldl_solve`` on the host (see ``ldl_factor``), its solutions copied back to the device."""
    cupy = require_cupy()
    return cupy.asarray(cpu_ops.ldl_solve(cupy.asnumpy(factors), cupy.asnumpy(pivots), cupy.asnumpy(b), hermitian))


def allocation(array):
    """``(memory, offset)``: the whole device allocation ``array``'s elements lie in as a flat uint8 array from its
    first byte, and the byte offset of ``array``'s first element in it (PyTorch's storage and storage offset): the
    contiguous array at the end of ``array``'s chain of bases, else the memory its ``MemoryPointer`` holds (as many
    bytes as were asked of agnostic's allocator: CuPy's strided views keep no base, so a base-less array may be
    one)."""
    cupy = require_cupy()
    pointer = array.data
    root = array
    while root.base is not None:
        root = root.base
    if root is not array and root.data.mem is pointer.mem and (root.flags.c_contiguous or root.flags.f_contiguous):
        offset = pointer.ptr - root.data.ptr
        if 0 <= offset <= root.nbytes:
            return cupy.ndarray((root.nbytes,), numpy.uint8, root.data), offset
    memory = pointer.mem
    if memory is None or not memory.size:
        return cupy.ndarray((array.nbytes,), numpy.uint8, pointer), 0
    # A block from agnostic's allocator knows the bytes asked for; CuPy's own blocks only their pool's rounded size.
    size = getattr(memory, "requested", memory.size)
    return cupy.ndarray((size,), numpy.uint8, cupy.cuda.MemoryPointer(memory, 0)), pointer.ptr - memory.ptr


def strided_view(memory, dtype, shape, strides, offset):
    """A view of the flat uint8 ``memory`` (see ``allocation``) from byte ``offset``, as ``dtype`` elements with
    ``shape`` and byte ``strides``, bounds already checked by the caller."""
    return require_cupy().ndarray(shape, dtype, memory.data + offset, strides)


def capturable_matmul(a, b):
    """``a @ b`` by NumPy's matmul rules, from agnostic's own kernels instead of cuBLAS, which CuPy refuses while a
    stream captures a CUDA graph (see ``cuda_kernels``' capturable matmul): the tiled kernel for floating-point
    matrices (half precision through float32, as cuBLAS accumulates it), a reduction kernel for other dtypes."""
    cupy = require_cupy()
    dtype = numpy.result_type(a.dtype, b.dtype)
    a, b, vectors = _as_matrices(a.astype(dtype, copy=False), b.astype(dtype, copy=False))
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shared dimensions differ: {a.shape} and {b.shape}")
    computed = numpy.dtype(numpy.float32) if dtype == numpy.float16 else dtype
    if computed in cuda_kernels.TILED_MATMUL_DTYPES:
        batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        product = _tiled_matmul(cupy, a.astype(computed, copy=False), b.astype(computed, copy=False), batch)
    else:
        product = None
    if product is None:
        product = cuda_kernels.kernel("agnostic_capturable_matmul")(a[..., :, :, None], b[..., None, :, :], axis=-2)
    return _from_matrices(product.astype(dtype, copy=False), vectors)


def _as_matrices(a, b):
    """``(a, b, vectors)``: the operands of ``a @ b`` as matrices, by NumPy's matmul rules (a 1-D ``a`` a row, a
    1-D ``b`` a column); ``_from_matrices`` takes the product back to the operands' shape."""
    vectors = a.ndim == 1, b.ndim == 1
    return (a[None, :] if vectors[0] else a), (b[:, None] if vectors[1] else b), vectors


def _from_matrices(product, vectors):
    """The product of ``_as_matrices``' operands without the dimensions their vectors gained."""
    vector_a, vector_b = vectors
    if vector_b:
        product = product[..., 0]
    if vector_a:
        product = product[..., 0, :] if not vector_b else product[..., 0]
    return product


_TILE_DEPTH = 16  # the tiled kernels' steps through the shared dimension
# Products of at least this many multiply-adds take the register-blocked kernel (64x64 tiles): smaller ones have too
# few of those tiles to occupy the GPU (an MLP step's 64-row products replayed 15% slower through it).
_BLOCKED_FROM = 1 << 25


@functools.cache
def _multiprocessors(device):
    """How many streaming multiprocessors device ``device`` has."""
    return require_cupy().cuda.runtime.getDeviceProperties(device)["multiProcessorCount"]


def _tiled_matmul(cupy, a, b, batch):
    """``a @ b`` (both of one float dtype, at least 2-D, batch dimensions broadcasting to ``batch``) by a tiled
    kernel (``cuda_kernels``: register-blocked 64x64 tiles for large products, 16x16 for small ones), splitting the
    shared dimension into chunks where the result has too few tiles to occupy the GPU; None where the launch grid
    would exceed CUDA's limits."""
    rows, shared, columns = a.shape[-2], a.shape[-1], b.shape[-1]
    matrices = int(numpy.prod(batch, dtype=numpy.int64))
    a = cupy.broadcast_to(a, (*batch, rows, shared)).reshape(matrices, rows, shared)
    b = cupy.broadcast_to(b, (*batch, shared, columns)).reshape(matrices, shared, columns)
    if not rows * columns * matrices * shared:
        return cupy.zeros((*batch, rows, columns), a.dtype)
    blocked = rows * columns * shared * matrices >= _BLOCKED_FROM
    span = 64 if blocked else 16
    tiles_across, tiles_down = -(-columns // span), -(-rows // span)
    wanted = 2 * _multiprocessors(cupy.cuda.runtime.getDevice())  # two blocks per multiprocessor
    splits = max(1, min(wanted // (tiles_across * tiles_down * matrices), shared // (4 * _TILE_DEPTH)))
    chunk = -(-shared // splits)
    chunk = -(-chunk // _TILE_DEPTH) * _TILE_DEPTH
    splits = -(-shared // chunk)
    if tiles_down > 65535 or matrices * splits > 65535:
        return None
    partial = cupy.empty((matrices * splits, rows, columns), a.dtype)
    size = a.itemsize
    kernel = cuda_kernels.kernel("agnostic_blocked_matmul" if blocked else "agnostic_tiled_matmul", a.dtype)
    kernel((tiles_across, tiles_down, matrices * splits), (16, 16),
           (a, b, partial, numpy.int32(rows), numpy.int32(columns), numpy.int32(shared), numpy.int32(chunk),
            numpy.int32(splits), *(numpy.int64(stride // size) for stride in a.strides + b.strides)))
    if splits > 1:
        partial = partial.reshape(matrices, splits, rows, columns).sum(axis=1)
    return partial.reshape(*batch, rows, columns)


def geqrf(matrices):
    """``(a, tau)``: LAPACK's ``geqrf`` of each matrix of ``matrices`` (..., m, n), as ``cpu_ops.geqrf``: CuPy's
    ``qr(mode='raw')`` (cuSOLVER's geqrf) gives the same factors, ``a`` transposed, one matrix at a time."""
    cupy = require_cupy()
    *batch, rows, columns = matrices.shape
    factored = cupy.empty(matrices.shape, matrices.dtype)
    scales = cupy.zeros((*batch, min(rows, columns)), matrices.dtype)
    if factored.size == 0:
        return factored, scales
    flat_matrices, flat_factored = matrices.reshape(-1, rows, columns), factored.reshape(-1, rows, columns)
    flat_scales = scales.reshape(-1, scales.shape[-1])
    for index in range(flat_matrices.shape[0]):
        transposed, tau = cupy.linalg.qr(flat_matrices[index], mode="raw")
        flat_factored[index], flat_scales[index] = transposed.T, tau
    return factored, scales


def nonzero(array):
    """The indices of ``array``'s nonzero elements, one array per dimension (``cupy.nonzero``, which waits for the
    device to learn their count: a synchronizing operation for ``agnostic.cuda.set_sync_debug_mode``)."""
    sync_debug.check_synchronizing("nonzero")
    return require_cupy().nonzero(array)


def fuse(trace, functions, outputs, name):
    """The ``ops._tracing.Trace`` ``trace`` (its ops' CuPy ``functions``, computing ``outputs``) compiled into one
    kernel named ``name`` by CuPy's fusion (``cupy.fuse``), on its first call for each combination of dtypes."""
    return require_cupy().fuse(kernel_name=name)(trace.program(functions, outputs))
