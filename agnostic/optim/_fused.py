"""Optimizer updates over lists of arrays: one multi-tensor CUDA kernel per bucket, in-place ufuncs elsewhere.

Each algorithm (``SGD``, ``ADAM``, ``RMSPROP``) is written twice from the same formulas, in the same order of
operations: a per-element CUDA C body (with every CUDA kernel, in ``agnostic/_backends/cuda_kernels.py``), and here a
NumPy/CuPy version built from ``out=`` ufuncs and two scratch buffers.
On CUDA, every contiguous parameter of one dtype is updated by a single launch of the multi-tensor kernel: a table
of pointers, sizes and (tensor, chunk) pairs, one pair per thread block, as PyTorch's ``multi_tensor_apply``.
Everything else (the CPU, strided tensors, other dtypes, ``foreach=False``) takes the ufunc path, per tensor; on
the CPU its ``y += a * x`` steps on large arrays are BLAS axpy calls (``_host_blas``), run on BLAS's threads, and
Adam's whole update on a contiguous float32/float64 tensor is one threaded C pass (``_host_kernels``).
Half-precision tensors are computed in float32 on both paths and rounded once when stored.
"""

import math

import numpy

from .. import _backend, _host_blas, _host_kernels
from .._backends import cuda_kernels

CHUNK = cuda_kernels.MULTI_TENSOR_CHUNK  # elements per thread block, as the kernel's source has it
THREADS = 256
_KERNEL_COMPUTE = {  # parameter dtype (not its .name, built on every access) -> the kernel's compute type C in NumPy
    numpy.dtype(numpy.float16): numpy.float32,
    numpy.dtype(numpy.float32): numpy.float32,
    numpy.dtype(numpy.float64): numpy.float64,
}
_LOW_PRECISION = ("float16", "bfloat16")


class Update:
    """One algorithm: the names of its array lists (``param`` and ``grad`` first), of its scalar arguments (compute
    dtype) and flags (int), as its CUDA kernel declares them, the kernel's name, and the ufunc version
    ``host(xp, arrays, s, scratch)``."""

    def __init__(self, name, host):
        signature = cuda_kernels.MULTI_TENSOR_UPDATES[name]
        self.name, self.lists, self.scalars, self.flags = name, signature.lists, signature.scalars, signature.flags
        self.kernel_name, self.host = f"agnostic_{name}", host


class _Scalars:
    """Attribute access to the scalar arguments, each a NumPy scalar of the compute dtype (flags stay ints)."""

    def __init__(self, values):
        self.__dict__.update(values)


def run(update, lists, scalars, flags, foreach=None):
    """Apply ``update`` to every tensor: ``lists`` holds one list of arrays per name in ``update.lists`` (None for a
    list the configuration does not use); ``scalars`` and ``flags`` map names to values. Tensors are grouped by
    device (and by dtype for the kernel), as PyTorch's foreach implementations do."""
    by_device = {}
    for index, param in enumerate(lists[0]):
        arrays = tuple(None if arrays is None else arrays[index] for arrays in lists)
        by_device.setdefault(_backend.device_of_array(param), []).extend(_real_tasks(arrays))
    for device, tasks in by_device.items():
        backend = device.backend
        fused, plain = {}, []
        for arrays in tasks:
            if foreach is not False and backend.ops.MULTI_TENSOR_KERNELS and _kernel_ready(arrays):
                fused.setdefault(arrays[0].dtype, []).append(arrays)
            else:
                plain.append(arrays)
        with backend.activate():
            for dtype, group in fused.items():
                _launch(update, backend, dtype, group, scalars, flags)
            if plain:
                _run_host(update, backend, plain, scalars, flags)


def _real_tasks(arrays):
    """PyTorch's ``view_as_real`` for complex parameters: the update is then elementwise over real components."""
    if arrays[0].dtype.kind != "c":
        return [arrays]
    if all(a is None or a.flags.c_contiguous for a in arrays):
        real = arrays[0].real.dtype
        return [tuple(None if a is None else a.reshape(-1).view(real) for a in arrays)]
    return [tuple(None if a is None else a.real for a in arrays),
            tuple(None if a is None else a.imag for a in arrays)]


def _kernel_ready(arrays):
    dtype = arrays[0].dtype
    return dtype in _KERNEL_COMPUTE and all(
        a is None or (a.dtype == dtype and a.flags.c_contiguous) for a in arrays)


# ----- the ufunc path -------------------------------------------------------------------------------------------
def _compute_dtype(dtype):
    return numpy.dtype(numpy.float32) if dtype.name in _LOW_PRECISION else dtype


def _typed(values, dtype):
    return _Scalars({name: dtype.type(value) for name, value in values.items()})


class _Scratch:
    """Two flat buffers as large as the largest tensor, handed out as views shaped like the current one."""

    def __init__(self, backend, size, dtype):
        self.buffers = [backend.ops.reusable_empty((size,), dtype) for _ in range(2)]
        self.shape, self.count = (), 1

    def use(self, shape):
        """Hand out views shaped ``shape`` from now on."""
        self.shape, self.count = shape, math.prod(shape)

    def __call__(self, slot):
        return self.buffers[slot][:self.count].reshape(self.shape)


def _run_host(update, backend, tasks, scalars, flags):
    xp = backend.xp
    by_dtype = {}
    for arrays in tasks:
        by_dtype.setdefault(arrays[0].dtype, []).append(arrays)
    for dtype, group in by_dtype.items():
        compute = _compute_dtype(dtype)
        s = _typed(scalars, compute)
        s.__dict__.update(flags)
        scratch = _Scratch(backend, max(a[0].size for a in group), compute)
        for arrays in group:
            scratch.use(arrays[0].shape)
            if compute == dtype:
                update.host(xp, arrays, s, scratch)
                continue
            # float16/bfloat16: compute on float32 copies, round once when writing back (as PyTorch's opmath)
            wide = tuple(None if a is None else a.astype(compute) for a in arrays)
            update.host(xp, wide, s, scratch)
            for index, (narrow, result) in enumerate(zip(arrays, wide)):
                if narrow is not None and index != 1:
                    xp.copyto(narrow, result, casting="unsafe")


def _add_scaled(xp, y, alpha, x, tmp):
    """``y += alpha * x``: one BLAS axpy on BLAS's threads for a large host array, else a product in ``tmp`` (which
    may be ``x``) and a sum."""
    if not _host_blas.axpy(alpha, x, y):
        y += x if alpha == 1 else xp.multiply(x, alpha, out=tmp)


def _lerp(xp, start, end, weight, one_minus_weight, tmp):
    """``start.lerp_(end, weight)`` with PyTorch's two formulas (the one nearer the larger coefficient)."""
    diff = xp.subtract(end, start, out=tmp)
    if -0.5 < weight < 0.5:
        _add_scaled(xp, start, weight, diff, diff)
    else:
        diff *= one_minus_weight
        xp.subtract(end, diff, out=start)


def _decayed_grad(xp, p, g, s, scratch):
    """``-grad`` when maximizing, then ``+ weight_decay * param`` (L2), in scratch slot 0 when changed."""
    if s.maximize:
        g = xp.negative(g, out=scratch(0))
    if s.weight_decay != 0 and not getattr(s, "decoupled", 0):
        decay = xp.multiply(p, s.weight_decay, out=scratch(1))
        g = xp.add(g, decay, out=scratch(0))
    return g


def _sgd_host(xp, arrays, s, scratch):
    p, g, buf = arrays
    g = _decayed_grad(xp, p, g, s, scratch)
    if s.momentum != 0:
        if s.first:
            xp.copyto(buf, g)
        else:
            buf *= s.momentum
            _add_scaled(xp, buf, s.one_minus_dampening, g, scratch(1))
        if s.nesterov:
            g = xp.add(g, xp.multiply(buf, s.momentum, out=scratch(1)), out=scratch(0))
        else:
            g = buf
    _add_scaled(xp, p, s.neg_lr, g, scratch(1))


def _adam_host(xp, arrays, s, scratch):
    if _host_kernels.adam(arrays, s):
        return  # the same operations, one threaded pass (contiguous host arrays)
    p, g, exp_avg, exp_avg_sq, max_exp_avg_sq = arrays
    if s.weight_decay != 0 and s.decoupled:
        p *= s.decay
    g = _decayed_grad(xp, p, g, s, scratch)
    tmp = scratch(1)
    _lerp(xp, exp_avg, g, s.one_minus_beta1, s.beta1_complement, tmp)
    exp_avg_sq *= s.beta2
    _add_scaled(xp, exp_avg_sq, s.one_minus_beta2, xp.multiply(g, g, out=tmp), tmp)
    second = exp_avg_sq
    if s.amsgrad:
        xp.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)
        second = max_exp_avg_sq
    denom = xp.sqrt(second, out=tmp)
    denom /= s.bias_correction2_sqrt
    denom += s.eps
    _add_scaled(xp, p, s.neg_step_size, xp.divide(exp_avg, denom, out=tmp), tmp)


def _rmsprop_host(xp, arrays, s, scratch):
    p, g, square_avg, momentum_buffer, grad_avg = arrays
    g = _decayed_grad(xp, p, g, s, scratch)
    tmp = scratch(1)
    square_avg *= s.alpha
    _add_scaled(xp, square_avg, s.one_minus_alpha, xp.multiply(g, g, out=tmp), tmp)
    if s.centered:
        _lerp(xp, grad_avg, g, s.one_minus_alpha, s.alpha_complement, tmp)
        avg = xp.subtract(square_avg, xp.multiply(grad_avg, grad_avg, out=tmp), out=tmp)
        xp.sqrt(avg, out=avg)
    else:
        avg = xp.sqrt(square_avg, out=tmp)
    avg += s.eps
    if s.momentum > 0:
        momentum_buffer *= s.momentum
        momentum_buffer += xp.divide(g, avg, out=avg)
        _add_scaled(xp, p, s.neg_lr, momentum_buffer, tmp)
    else:
        _add_scaled(xp, p, s.neg_lr, xp.divide(g, avg, out=tmp), tmp)


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
    if blocks:
        backend.ops.multi_tensor_apply(update.kernel_name, dtype, blocks, THREADS,
                                       (_device_table(host_table, backend), *arguments))


# ----- the algorithms -------------------------------------------------------------------------------------------
SGD = Update("sgd", _sgd_host)
ADAM = Update("adam", _adam_host)
RMSPROP = Update("rmsprop", _rmsprop_host)
