"""Philox4x64-10, the counter-based stream behind every random tensor, computed the same way on the CPU and on CUDA.

The stream is NumPy's own ``numpy.random.Philox`` (Salmon et al., SC11), bit for bit:

* key: the generator's 64-bit seed as the 128-bit Philox key (low word = seed, high word = 0);
* counter: a 256-bit block counter. A draw that starts at offset ``start`` produces its 4x64-bit block ``i`` from
  counter ``start + 1 + i`` (NumPy increments the counter before each block), and every draw consumes whole
  blocks, so each call starts on a block boundary (as PyTorch's Philox offset does);
* words of a block are used in order; a float32 takes the low then the high 32-bit half of each word.

From the words:

* float32 uniform: ``(u32 >> 8) * 2**-24``; float64: ``(u64 >> 11) * 2**-53`` (NumPy ``Generator.random``); float16
  and bfloat16 keep the top 11 or 8 bits of the u32 so that the value is exact and stays below 1;
* ``uniform(a, b)``: ``u * (b - a) + a`` rounded after each operation, in float32 (or float64);
* normal (Box-Muller): a draw of ``n`` values takes ``H`` blocks of radius uniforms and the next ``H`` blocks of
  angle uniforms (``H`` just large enough for ``ceil(n / 2)`` pairs). Pair ``k`` gives
  ``r = sqrt(-2 log(1 - u_k))`` and ``t = 2pi v_k``; element ``k`` is ``r cos t`` and element ``8H + k`` (float32;
  ``4H + k`` for float64) is ``r sin t``. Both devices round the same operations, but log/sin/cos come from
  different math libraries, so normals agree to a few ulp rather than bit for bit;
* integers in ``[low, low + span)``: ``low + word % span``, one word each. The modulo bias is at most
  ``span / 2**64`` (below 1e-9 for any span under 2**34), far under what a test can see.

On the CPU each chunk of blocks is a ``numpy.random.Philox(key=seed, counter=start + first_block)`` feeding NumPy's C
samplers, and large draws split into chunks computed by a few threads (NumPy releases the GIL); on CUDA one kernel
thread computes one block (two for normals) and writes exactly the values NumPy would.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy

from . import cuda_kernels
from .cupy_loader import require_cupy

BLOCK_WORDS = 4
_MANTISSA_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}
_CHUNK_BLOCKS = 16384  # blocks per CPU task: 128K float32, small enough to stay in cache through the Box-Muller passes
_PARALLEL_BLOCKS = 4 * _CHUNK_BLOCKS
_TWO_PI = 2 * numpy.pi


# ----- sizes of draws --------------------------------------------------------------------------------------------
def _compute_dtype(numpy_dtype):
    """float64 draws compute in float64; every other floating dtype in float32, then casts."""
    return numpy.dtype(numpy.float64) if numpy.dtype(numpy_dtype) == numpy.float64 else numpy.dtype(numpy.float32)


def _per_block(compute_dtype):
    return 4 if compute_dtype == numpy.float64 else 8


def uniform_blocks(count, numpy_dtype):
    """Blocks consumed by ``count`` uniform values of ``numpy_dtype``."""
    return -(-count // _per_block(_compute_dtype(numpy_dtype)))


def normal_blocks(count, numpy_dtype):
    """Blocks consumed by ``count`` normal values: radius blocks plus as many angle blocks."""
    return 2 * _half_blocks(count, _per_block(_compute_dtype(numpy_dtype)))


def integer_blocks(count):
    """Blocks consumed by ``count`` integers (one 64-bit word each)."""
    return -(-count // BLOCK_WORDS)


def _half_blocks(count, per_block):
    pairs = -(-count // 2)
    return -(-pairs // per_block)


def _mantissa_bits(numpy_dtype):
    return _MANTISSA_BITS[numpy.dtype(numpy_dtype).name]


# ----- public draws ----------------------------------------------------------------------------------------------
def uniform(device, seed, start, count, numpy_dtype, low=0.0, high=1.0):
    """``count`` values uniform in [low, high) as a 1-D array of ``numpy_dtype`` on ``device``."""
    compute = _compute_dtype(numpy_dtype)
    bits = _mantissa_bits(numpy_dtype)
    scale, low = compute.type(high - low), compute.type(low)
    if device.backend.host:
        values = _cpu_uniform(seed, start, count, compute, bits, scale, low)
    else:
        values = _cuda_uniform(seed, start, count, compute, bits, scale, low)
    return values.astype(numpy_dtype, copy=False)


def dropout_scaled(device, seed, start, array, keep):
    """``array`` (float32 or float64, C-contiguous, on ``device``) times the scales of a dropout whose draw starts at
    ``start``: ``1 / keep`` where the uniform of ``array``'s dtype at each element's place is below ``keep``, 0
    elsewhere. The numbers of ``agnostic.bernoulli(empty_like(array), keep)`` divided by ``keep`` and multiplied in,
    bit for bit, in one pass on CUDA."""
    compute = numpy.dtype(array.dtype)
    typed_keep = compute.type(keep)
    if device.backend.host:
        return array * host_dropout_scales(seed, start, array.size, compute, keep).reshape(array.shape)
    out = require_cupy().empty_like(array)
    if array.size:
        _launch(f"philox_dropout_{compute.name}", -(-array.size // _per_block(compute)),
                (*counter_arguments(seed, start), numpy.uint64(array.size), typed_keep, array, out))
    return out


def host_dropout_scales(seed, start, count, numpy_dtype, keep):
    """The ``count`` scales (a 1-D NumPy array of ``numpy_dtype``, float32 or float64) of a dropout whose draw starts
    at ``start``: ``1 / keep`` where the draw's uniform of that dtype is below ``keep``, 0 elsewhere."""
    compute = numpy.dtype(numpy_dtype)
    typed_keep = compute.type(keep)
    uniforms = _cpu_uniform(seed, start, count, compute, _MANTISSA_BITS[compute.name], compute.type(1),
                            compute.type(0))
    scales = (uniforms < typed_keep).astype(compute)
    numpy.divide(scales, typed_keep, out=scales)
    return scales


def normal(device, seed, start, count, numpy_dtype, mean=0.0, std=1.0):
    """``count`` normal values (Box-Muller) as a 1-D array of ``numpy_dtype`` on ``device``."""
    compute = _compute_dtype(numpy_dtype)
    std, mean = compute.type(std), compute.type(mean)
    if device.backend.host:
        values = _cpu_normal(seed, start, count, compute, std, mean)
    else:
        values = _cuda_normal(seed, start, count, compute, std, mean)
    return values.astype(numpy_dtype, copy=False)


def integers(device, seed, start, count, low, span):
    """``count`` int64 values ``low + word % span`` on ``device``; ``span == 0`` means the raw words plus ``low``."""
    low_bits = numpy.uint64(low % 2 ** 64)
    span = numpy.uint64(span)
    if device.backend.host:
        words = _cpu_integers(seed, start, count, span, low_bits)
    else:
        words = _cuda_integers(seed, start, count, span, low_bits)
    return words.view(numpy.int64)


# ----- CPU: NumPy's Philox, chunked and threaded -----------------------------------------------------------------
_pool_lock = threading.Lock()
_pool = None


def _worker_count():
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(8, cores))


def _thread_pool():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_worker_count(), thread_name_prefix="agnostic-random")
        return _pool


def _forget_thread_pool():
    """A forked child has none of its parent's threads: it must start a pool of its own."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_thread_pool)


def _in_chunks(block_count, work):
    """Call ``work(first, end)`` over block ranges covering ``[0, block_count)``; large draws run on threads."""
    spans = [(first, min(first + _CHUNK_BLOCKS, block_count)) for first in range(0, block_count, _CHUNK_BLOCKS)]
    if block_count < _PARALLEL_BLOCKS or _worker_count() == 1:
        for first, end in spans:
            work(first, end)
    else:
        for _ in _thread_pool().map(lambda span: work(*span), spans):
            pass


def _numpy_generator(seed, counter):
    """NumPy's Generator over Philox positioned so that its next block is ``counter + 1``."""
    return numpy.random.Generator(numpy.random.Philox(key=seed, counter=counter))


def _numpy_uniform(seed, counter, out):
    """Fill ``out`` with NumPy's uniforms from the blocks after ``counter``."""
    _numpy_generator(seed, counter).random(out=out, dtype=out.dtype)
    return out


def _keep_top_bits(values, bits):
    """``floor(u * 2**bits) / 2**bits`` in place: the top ``bits`` of each u32, as the CUDA kernel's shift."""
    scale = values.dtype.type(2.0 ** bits)
    numpy.multiply(values, scale, out=values)
    numpy.floor(values, out=values)
    numpy.multiply(values, values.dtype.type(1 / scale), out=values)


def _affine(values, scale, low):
    """``values * scale + low`` in place, each operation rounded (skipped when it is the identity)."""
    if scale != 1 or low != 0:
        numpy.multiply(values, scale, out=values)
        numpy.add(values, low, out=values)


def _cpu_uniform(seed, start, count, compute, bits, scale, low):
    out = numpy.empty(count, compute)
    per_block = _per_block(compute)

    def work(first, end):
        target = out[first * per_block:end * per_block]
        _numpy_uniform(seed, start + first, target)
        if bits < _MANTISSA_BITS[compute.name]:
            _keep_top_bits(target, bits)
        _affine(target, scale, low)

    _in_chunks(-(-count // per_block), work)
    return out


def _cpu_normal(seed, start, count, compute, std, mean):
    out = numpy.empty(count, compute)
    per_block = _per_block(compute)
    half_blocks = _half_blocks(count, per_block)
    half = half_blocks * per_block
    minus_two, two_pi = compute.type(-2.0), compute.type(_TWO_PI)

    def work(first, end):
        pairs = (end - first) * per_block
        radius = _numpy_uniform(seed, start + first, numpy.empty(pairs, compute))
        angle = _numpy_uniform(seed, start + half_blocks + first, numpy.empty(pairs, compute))
        numpy.subtract(compute.type(1), radius, out=radius)
        numpy.log(radius, out=radius)
        numpy.multiply(radius, minus_two, out=radius)
        numpy.sqrt(radius, out=radius)
        numpy.multiply(angle, two_pi, out=angle)
        _polar_part(numpy.cos, radius, angle, out[first * per_block:min(end * per_block, count)], std, mean)
        _polar_part(numpy.sin, radius, angle, out[half + first * per_block:half + end * per_block], std, mean)

    _in_chunks(half_blocks, work)
    return out


def _polar_part(function, radius, angle, target, std, mean):
    """``target = radius * function(angle)`` over the pairs that have a place in the output."""
    used = target.shape[0]
    function(angle[:used], out=target)
    numpy.multiply(target, radius[:used], out=target)
    _affine(target, std, mean)


def _cpu_integers(seed, start, count, span, low_bits):
    out = numpy.empty(count, numpy.uint64)

    def work(first, end):
        target = out[first * BLOCK_WORDS:end * BLOCK_WORDS]
        words = numpy.random.Philox(key=seed, counter=start + first).random_raw(target.shape[0])
        _reduce_words(words, span, low_bits, target)

    _in_chunks(-(-count // BLOCK_WORDS), work)
    return out


def _reduce_words(words, span, low_bits, target):
    """``target = low + words % span`` with wrapping uint64 arithmetic (a mask when span is a power of two)."""
    if span == 0:
        pass
    elif (span & (span - numpy.uint64(1))) == 0:
        numpy.bitwise_and(words, span - numpy.uint64(1), out=words)
    else:
        numpy.remainder(words, span, out=words)
    numpy.add(words, low_bits, out=target)


# ----- CUDA: one kernel thread per Philox block (the kernels: agnostic/_backends/cuda_kernels.py) -----------------
_THREADS_PER_BLOCK = 256


def refuse_during_capture():
    """Raise if the current CUDA stream is capturing a graph: a draw's place in the stream is fixed on the host."""
    if require_cupy().cuda.get_current_stream().is_capturing():
        raise RuntimeError("random numbers can't be drawn while a CUDA graph captures: the generator's position "
                           "advances on the host, so every replay would repeat the same numbers. Draw them before "
                           "the capture (into a tensor the graph reads), or keep the random op out of the graph")


def _launch(name, threads, arguments):
    refuse_during_capture()
    grid = -(-threads // _THREADS_PER_BLOCK)
    cuda_kernels.kernel(name)((grid,), (_THREADS_PER_BLOCK,), arguments)


def counter_arguments(seed, start):
    """Key words and the 128-bit counter of the draw's first block (``start + 1``), as kernel arguments."""
    base = start + 1
    return (numpy.uint64(seed), numpy.uint64(0), numpy.uint64(base % 2 ** 64), numpy.uint64(base >> 64))


def _cuda_uniform(seed, start, count, compute, bits, scale, low):
    cupy = require_cupy()
    out = cupy.empty(count, compute)
    if count:
        per_block = _per_block(compute)
        word_bits = 64 if compute == numpy.float64 else 32
        shift = numpy.int32(word_bits - bits)
        unit = compute.type(2.0 ** -bits)
        _launch(f"philox_uniform_{compute.name}", -(-count // per_block),
                (*counter_arguments(seed, start), numpy.uint64(count), shift, unit, scale, low, out))
    return out


def _cuda_normal(seed, start, count, compute, std, mean):
    cupy = require_cupy()
    out = cupy.empty(count, compute)
    if count:
        half_blocks = _half_blocks(count, _per_block(compute))
        _launch(f"philox_normal_{compute.name}", half_blocks,
                (*counter_arguments(seed, start), numpy.uint64(count), numpy.uint64(half_blocks),
                 compute.type(-2.0), compute.type(_TWO_PI), std, mean, out))
    return out


def _cuda_integers(seed, start, count, span, low_bits):
    cupy = require_cupy()
    out = cupy.empty(count, numpy.uint64)
    if count:
        _launch("philox_integers", -(-count // BLOCK_WORDS),
                (*counter_arguments(seed, start), numpy.uint64(count), span, low_bits, out))
    return out
