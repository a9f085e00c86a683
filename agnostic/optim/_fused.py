"""Optimizer updates over lists of arrays: one multi-tensor CUDA kernel per bucket, one per-element function elsewhere.

Each algorithm (``SGD``, ``ADAM``, ``RMSPROP``) is written once per kind of device, from the same formulas in the same
order of operations: a per-element CUDA C body (with every CUDA kernel, in ``agnostic/_backends/cuda_kernels.py``),
and here a per-element Python function, ``element(i, *arrays, scalars, flags)``, that reads and writes ``array[i]``
(its scalars and flags come as two tuples, unpacked in the kernel's order).
On CUDA, every contiguous parameter of one dtype is updated by a single launch of the multi-tensor kernel: a table
of pointers, sizes and (tensor, chunk) pairs, one pair per thread block, as PyTorch's ``multi_tensor_apply``.
On the CPU, numba compiles the Python function into one parallel pass over each large contiguous tensor
(``cpu_kernels.update``, where numba is installed). Everywhere else (small or strided tensors, no numba, other
dtypes on CUDA, ``foreach=False``) it runs once with ``i = ...``: ``array[...]`` is the whole array, and each
operation a NumPy or CuPy ufunc over it, with the same roundings.
Half-precision tensors are computed in float32 on every path and rounded once when stored.
"""

import numpy
from numpy import maximum, sqrt

from .. import _backend
from .._backends import cpu_kernels, cuda_kernels
from ..cuda.graphs import capture_in_progress, keep_alive

CHUNK = cuda_kernels.MULTI_TENSOR_CHUNK  # elements per thread block, as the kernel's source has it
THREADS = 256
_KERNEL_COMPUTE = {  # parameter dtype (not its .name, built on every access) -> the kernel's compute type C in NumPy
    numpy.dtype(numpy.float16): numpy.float32,
    numpy.dtype(numpy.float32): numpy.float32,
    numpy.dtype(numpy.float64): numpy.float64,
}


class Update:
    """One algorithm: the names of its array lists (``param`` first, then ``grad`` where it has one), of its scalar
    arguments (compute dtype) and flags (int), as its CUDA kernel declares them, the kernel's name, and the
    per-element function ``element(i, *arrays, scalars, flags)``. ``counters``: the positions of its lists of step
    counts (one float32 element per tensor, which the element function reads as ``count[0]``)."""

    def __init__(self, name, element):
        signature = cuda_kernels.MULTI_TENSOR_UPDATES[name]
        self.name, self.lists, self.scalars, self.flags = name, signature.lists, signature.scalars, signature.flags
        self.counters = frozenset(self.lists.index(counter) for counter in signature.counters)
        self.kernel_name, self.element = f"agnostic_{name}", element


def run(update, lists, scalars, flags, foreach=None):
    """Apply ``update`` to every tensor: ``lists`` holds one list of arrays per name in ``update.lists`` (None for a
    list the configuration does not use); ``scalars`` and ``flags`` map names to values. Tensors are grouped by
    device (and by dtype for the kernel), as PyTorch's foreach implementations do."""
    by_device = {}
    counters = update.counters
    for index, param in enumerate(lists[0]):
        arrays = tuple([None if arrays is None else arrays[index].reshape(1) if position in counters
                        else arrays[index] for position, arrays in enumerate(lists)])
        by_device.setdefault(_backend.device_of_array(param), []).extend(_real_tasks(arrays, counters))
    for device, tasks in by_device.items():
        backend = device.backend
        fusing = foreach is not False and backend.ops.MULTI_TENSOR_KERNELS
        fused, plain = {}, []
        for arrays in tasks:
            if fusing and _kernel_ready(arrays, update.counters):
                fused.setdefault(arrays[0].dtype, []).append(arrays)
            else:
                plain.append(arrays)
        with backend.activate():
            for dtype, group in fused.items():
                _launch(update, backend, dtype, group, scalars, flags)
            if plain:
                _run_host(update, backend, plain, scalars, flags)


def _real_tasks(arrays, counters):
    """PyTorch's ``view_as_real`` for complex parameters: the update is then elementwise over real components (the
    step counts at the positions ``counters`` stay as they are)."""
    if arrays[0].dtype.kind != "c":
        return [arrays]
    if all(a is None or a.flags.c_contiguous for a in arrays):
        real = arrays[0].real.dtype
        return [tuple(a if a is None or i in counters else a.reshape(-1).view(real) for i, a in enumerate(arrays))]
    return [tuple(a if a is None or i in counters else a.real for i, a in enumerate(arrays)),
            tuple(a if a is None or i in counters else a.imag for i, a in enumerate(arrays))]


def _kernel_ready(arrays, counters):
    dtype = arrays[0].dtype
    return dtype in _KERNEL_COMPUTE and all(
        a is None or (a.dtype == numpy.float32 if i in counters else a.dtype == dtype and a.flags.c_contiguous)
        for i, a in enumerate(arrays))


# ----- the ufunc path -------------------------------------------------------------------------------------------
def _compute_dtype(dtype):
    # float16 and ml_dtypes' bfloat16 (kind "V"): the two 2-byte floating types (``dtype.name`` is computed in Python)
    return numpy.dtype(numpy.float32) if dtype.itemsize == 2 and dtype.kind in "fV" else dtype


def _run_host(update, backend, tasks, scalars, flags):
    by_dtype = {}
    for arrays in tasks:
        by_dtype.setdefault(arrays[0].dtype, []).append(arrays)
    for dtype, group in by_dtype.items():
        compute = _compute_dtype(dtype)
        typed_scalars = tuple(compute.type(scalars[name]) for name in update.scalars)
        typed_flags = tuple(int(flags[name]) for name in update.flags)
        for arrays in group:
            if compute == dtype:
                _apply(update, arrays, typed_scalars, typed_flags)
                continue
            # float16/bfloat16: compute on float32 copies, round once when writing back (as PyTorch's opmath)
            wide = tuple(None if a is None else a.astype(compute) for a in arrays)
            _apply(update, wide, typed_scalars, typed_flags)
            for index, (narrow, result) in enumerate(zip(arrays, wide)):
                if narrow is not None and index != 1 and index not in update.counters:
                    backend.xp.copyto(narrow, result, casting="unsafe")


def _apply(update, arrays, scalars, flags):
    """One tensor's update: numba's parallel loop over its elements where it applies, else whole-array ufuncs."""
    if not cpu_kernels.update(update.element, arrays, scalars, flags):
        update.element(..., *arrays, scalars, flags)


def _sgd(i, param, grad, momentum_buffer, scalars, flags):
    weight_decay, momentum, one_minus_dampening, neg_lr = scalars
    maximize, nesterov, first = flags
    g = -grad[i] if maximize else grad[i]
    p = param[i]
    if weight_decay != 0:
        g = g + p * weight_decay
    if momentum != 0:
        b = g if first else momentum_buffer[i] * momentum + g * one_minus_dampening
        momentum_buffer[i] = b
        g = g + b * momentum if nesterov else b
    param[i] = p + g * neg_lr


def _adam(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, scalars, flags):
    (weight_decay, decay, one_minus_beta1, beta1_complement, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
     neg_step_size) = scalars
    maximize, decoupled, amsgrad = flags
    g = -grad[i] if maximize else grad[i]
    p = param[i]
    if weight_decay != 0:
        if decoupled:
            p = p * decay
        else:
            g = g + p * weight_decay
    m = exp_avg[i]
    # start.lerp_(end, weight) with PyTorch's two formulas (the one nearer the larger coefficient)
    m = m + one_minus_beta1 * (g - m) if -0.5 < one_minus_beta1 < 0.5 else g - (g - m) * beta1_complement
    v = exp_avg_sq[i] * beta2 + (g * g) * one_minus_beta2
    exp_avg[i] = m
    exp_avg_sq[i] = v
    if amsgrad:
        v = maximum(max_exp_avg_sq[i], v)  # NaN-propagating, as the CUDA body's comparison
        max_exp_avg_sq[i] = v
    denom = sqrt(v) / bias_correction2_sqrt + eps
    param[i] = p + (m / denom) * neg_step_size


def _adam_capturable(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, scalars, flags):
    weight_decay, decay, one_minus_beta1, beta1_complement, beta1, beta2, one_minus_beta2, eps, lr = scalars
    step_count = step[0]
    bias_correction2_sqrt = sqrt(1 - beta2 ** step_count)
    neg_step_size = -(lr / (1 - beta1 ** step_count))
    _adam(i, param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, (
        weight_decay, decay, one_minus_beta1, beta1_complement, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
        neg_step_size), flags)


def _count(i, count, scalars, flags):
    count[i] = count[i] + 1


def _rmsprop(i, param, grad, square_avg, momentum_buffer, grad_avg, scalars, flags):
    weight_decay, alpha, one_minus_alpha, alpha_complement, eps, momentum, neg_lr = scalars
    maximize, centered = flags
    g = -grad[i] if maximize else grad[i]
    p = param[i]
    if weight_decay != 0:
        g = g + p * weight_decay
    sq = square_avg[i] * alpha + (g * g) * one_minus_alpha
    square_avg[i] = sq
    if centered:
        ga = grad_avg[i]
        ga = ga + one_minus_alpha * (g - ga) if -0.5 < one_minus_alpha < 0.5 else g - (g - ga) * alpha_complement
        grad_avg[i] = ga
        avg = sqrt(sq - ga * ga)
    else:
        avg = sqrt(sq)
    avg = avg + eps
    if momentum > 0:
        b = momentum_buffer[i] * momentum + g / avg
        momentum_buffer[i] = b
        param[i] = p + b * neg_lr
    else:
        param[i] = p + (g / avg) * neg_lr


# ----- the CUDA path ----------------------------------------------------------------------------------------------
_tables: dict = {}  # recent pointer tables already on the device, by content
_host_tables: dict = {}  # recent pointer tables, by their tensors' pointers and sizes
_TABLES_KEPT = 32


def kernel_source(update, dtype_name):
    """The CUDA C source of ``update``'s multi-tensor kernel for parameters of ``dtype_name``."""
    return cuda_kernels.declaration(update.kernel_name, numpy.dtype(dtype_name)).source


def launch_table(lists):
    """The int64 table the kernel reads: pointers (list-major), sizes, then each block's tensor and first element.
    (Remembered by pointers and sizes: a training loop updates the same tensors every step.)"""
    key = (tuple(0 if a is None else _backend.data_pointer(a) for arrays in lists for a in arrays),
           tuple(a.size for a in lists[0]))
    return _remembered(_host_tables, key, lambda: _new_launch_table(len(lists), *key))


def _remembered(cache, key, make):
    """``cache[key]``, from ``make()`` when missing; the cache keeps the ``_TABLES_KEPT`` most recently used."""
    found = cache.pop(key, None)
    if found is None:
        found = make()
        if len(cache) >= _TABLES_KEPT:
            cache.pop(next(iter(cache)))
    cache[key] = found
    return found


def _new_launch_table(list_count, flat_pointers, flat_sizes):
    count = len(flat_sizes)
    pointers = numpy.array(flat_pointers, numpy.int64).reshape(list_count, count)
    sizes = numpy.array(flat_sizes, numpy.int64).reshape(count)
    blocks = (sizes + CHUNK - 1) // CHUNK
    block_tensor = numpy.repeat(numpy.arange(count, dtype=numpy.int64), blocks)
    first = numpy.repeat(numpy.cumsum(blocks) - blocks, blocks)
    block_start = (numpy.arange(block_tensor.size, dtype=numpy.int64) - first) * CHUNK
    return numpy.concatenate([pointers.reshape(-1), sizes, block_tensor, block_start]), int(block_tensor.size)


def _device_table(host_table, backend):
    return _remembered(_tables, (backend.index, host_table.tobytes()), lambda: backend.xp.asarray(host_table))


def launch_arguments(update, dtype, tasks, scalars, flags):
    """The pointer table (on the host), the number of blocks, and the kernel's other arguments, each typed as the
    kernel declares it (``C`` scalars in the compute dtype, flags and counts as int32)."""
    lists = [[arrays[index] for arrays in tasks] for index in range(len(update.lists))]
    host_table, blocks = launch_table(lists)
    compute = _KERNEL_COMPUTE[dtype]
    arguments = [numpy.int32(len(tasks)), numpy.int32(blocks)]
    arguments += [compute(scalars[name]) for name in update.scalars]
    arguments += [numpy.int32(flags[name]) for name in update.flags]
    return host_table, blocks, arguments


def _launch(update, backend, dtype, tasks, scalars, flags):
    host_table, blocks, arguments = launch_arguments(update, dtype, tasks, scalars, flags)
    if not blocks:
        return
    if capture_in_progress() and backend.is_capturing():
        # A CUDA graph records the table's upload from pinned memory, which each replay copies again: the graph
        # keeps both copies (the tables cached for eager steps may be evicted and freed).
        device_table, pinned_table = backend.ops.captured_upload(host_table)
        keep_alive(device_table, pinned_table)
    else:
        device_table = _device_table(host_table, backend)
    backend.ops.multi_tensor_apply(update.kernel_name, dtype, blocks, THREADS, (device_table, *arguments))


# ----- the algorithms -------------------------------------------------------------------------------------------
SGD = Update("sgd", _sgd)
ADAM = Update("adam", _adam)
ADAM_CAPTURABLE = Update("adam_capturable", _adam_capturable)
COUNT = Update("count", _count)
RMSPROP = Update("rmsprop", _rmsprop)
