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

from . import _backend
from ._device import CPU

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
    if device is CPU:
        values = _cpu_uniform(seed, start, count, compute, bits, scale, low)
    else:
        values = _cuda_uniform(seed, start, count, compute, bits, scale, low)
    return values.astype(numpy_dtype, copy=False)


def normal(device, seed, start, count, numpy_dtype, mean=0.0, std=1.0):
    """``count`` normal values (Box-Muller) as a 1-D array of ``numpy_dtype`` on ``device``."""
    compute = _compute_dtype(numpy_dtype)
    std, mean = compute.type(std), compute.type(mean)
    if device is CPU:
        values = _cpu_normal(seed, start, count, compute, std, mean)
    else:
        values = _cuda_normal(seed, start, count, compute, std, mean)
    return values.astype(numpy_dtype, copy=False)


def integers(device, seed, start, count, low, span):
    """``count`` int64 values ``low + word % span`` on ``device``; ``span == 0`` means the raw words plus ``low``."""
    low_bits = numpy.uint64(low % 2 ** 64)
    span = numpy.uint64(span)
    if device is CPU:
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


# ----- CUDA: one kernel thread per Philox block ------------------------------------------------------------------
_CUDA_SOURCE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

struct Block { u64 v[4]; };

// Philox4x64-10 as NumPy's numpy/random/src/philox/philox.h; the counter is base + index as a 256-bit integer
// (base < 2**128, so the carry stops in the second word).
__device__ __forceinline__ Block philox_block(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 index) {
    u64 c0 = base_lo + index;
    u64 c1 = base_hi + (c0 < base_lo ? 1ULL : 0ULL);
    u64 c2 = 0ULL, c3 = 0ULL;
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        if (round > 0) {
            key0 += 0x9E3779B97F4A7C15ULL;
            key1 += 0xBB67AE8584CAA73BULL;
        }
        const u64 hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, c0);
        const u64 lo0 = 0xD2E7470EE14C6C93ULL * c0;
        const u64 hi1 = __umul64hi(0xCA5A826395121157ULL, c2);
        const u64 lo1 = 0xCA5A826395121157ULL * c2;
        c0 = hi1 ^ c1 ^ key0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ key1;
        c3 = lo0;
    }
    Block out = {{c0, c1, c2, c3}};
    return out;
}

// The j-th of the 8 32-bit halves of a block, low half of each word first (NumPy's next_uint32).
__device__ __forceinline__ u32 half_word(const Block& block, int j) {
    const u64 word = block.v[j >> 1];
    return (j & 1) ? (u32)(word >> 32) : (u32)word;
}

__device__ __forceinline__ u64 thread_index() {
    return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

// Explicit _rn intrinsics everywhere: no FMA contraction, so each operation rounds exactly as NumPy's does.
__device__ __forceinline__ float uniform_float(u32 bits, int shift, float unit) {
    return __fmul_rn(__uint2float_rn(bits >> shift), unit);
}

__device__ __forceinline__ double uniform_double(u64 bits, int shift, double unit) {
    return __dmul_rn(__ull2double_rn(bits >> shift), unit);
}

__device__ __forceinline__ float affine(float x, float scale, float low) {
    return __fadd_rn(__fmul_rn(x, scale), low);
}

__device__ __forceinline__ double affine(double x, double scale, double low) {
    return __dadd_rn(__dmul_rn(x, scale), low);
}

// Draws are allocated 16-byte aligned and start each thread at a multiple of 32 bytes: full blocks store as vectors.
__device__ __forceinline__ void store(float* out, u64 first, u64 count, const float (&value)[8]) {
    if (first + 8 <= count) {
        float4* vectors = reinterpret_cast<float4*>(out + first);
        vectors[0] = make_float4(value[0], value[1], value[2], value[3]);
        vectors[1] = make_float4(value[4], value[5], value[6], value[7]);
    } else {
        for (int j = 0; j < 8; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

__device__ __forceinline__ void store(double* out, u64 first, u64 count, const double (&value)[4]) {
    if (first + 4 <= count) {
        double2* vectors = reinterpret_cast<double2*>(out + first);
        vectors[0] = make_double2(value[0], value[1]);
        vectors[1] = make_double2(value[2], value[3]);
    } else {
        for (int j = 0; j < 4; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

__device__ __forceinline__ void store(u64* out, u64 first, u64 count, const u64 (&value)[4]) {
    if (first + 4 <= count) {
        ulonglong2* vectors = reinterpret_cast<ulonglong2*>(out + first);
        vectors[0] = make_ulonglong2(value[0], value[1]);
        vectors[1] = make_ulonglong2(value[2], value[3]);
    } else {
        for (int j = 0; j < 4; ++j) {
            if (first + j < count) out[first + j] = value[j];
        }
    }
}

extern "C" __global__ void philox_uniform_float32(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  int shift, float unit, float scale, float low, float* out) {
    const u64 index = thread_index();
    const u64 first = index * 8;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool scaled = scale != 1.0f || low != 0.0f;
    float value[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float u = uniform_float(half_word(block, j), shift, unit);
        value[j] = scaled ? affine(u, scale, low) : u;
    }
    store(out, first, count, value);
}

extern "C" __global__ void philox_uniform_float64(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                  int shift, double unit, double scale, double low, double* out) {
    const u64 index = thread_index();
    const u64 first = index * 4;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool scaled = scale != 1.0 || low != 0.0;
    double value[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const double u = uniform_double(block.v[j], shift, unit);
        value[j] = scaled ? affine(u, scale, low) : u;
    }
    store(out, first, count, value);
}

extern "C" __global__ void philox_normal_float32(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                 u64 half_blocks, float minus_two, float two_pi, float scale,
                                                 float low, float* out) {
    const u64 index = thread_index();
    if (index >= half_blocks) return;
    const Block radius_bits = philox_block(key0, key1, base_lo, base_hi, index);
    const Block angle_bits = philox_block(key0, key1, base_lo, base_hi, half_blocks + index);
    const bool scaled = scale != 1.0f || low != 0.0f;
    const float unit = 1.0f / 16777216.0f;
    float cos_part[8], sin_part[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const float u = __fsub_rn(1.0f, uniform_float(half_word(radius_bits, j), 8, unit));
        const float radius = __fsqrt_rn(__fmul_rn(logf(u), minus_two));
        const float angle = __fmul_rn(uniform_float(half_word(angle_bits, j), 8, unit), two_pi);
        float s, c;
        sincosf(angle, &s, &c);
        cos_part[j] = __fmul_rn(c, radius);
        sin_part[j] = __fmul_rn(s, radius);
        if (scaled) {
            cos_part[j] = affine(cos_part[j], scale, low);
            sin_part[j] = affine(sin_part[j], scale, low);
        }
    }
    store(out, index * 8, count, cos_part);
    store(out, half_blocks * 8 + index * 8, count, sin_part);
}

extern "C" __global__ void philox_normal_float64(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count,
                                                 u64 half_blocks, double minus_two, double two_pi, double scale,
                                                 double low, double* out) {
    const u64 index = thread_index();
    if (index >= half_blocks) return;
    const Block radius_bits = philox_block(key0, key1, base_lo, base_hi, index);
    const Block angle_bits = philox_block(key0, key1, base_lo, base_hi, half_blocks + index);
    const bool scaled = scale != 1.0 || low != 0.0;
    const double unit = 1.0 / 9007199254740992.0;
    double cos_part[4], sin_part[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const double u = __dsub_rn(1.0, uniform_double(radius_bits.v[j], 11, unit));
        const double radius = __dsqrt_rn(__dmul_rn(log(u), minus_two));
        const double angle = __dmul_rn(uniform_double(angle_bits.v[j], 11, unit), two_pi);
        double s, c;
        sincos(angle, &s, &c);
        cos_part[j] = __dmul_rn(c, radius);
        sin_part[j] = __dmul_rn(s, radius);
        if (scaled) {
            cos_part[j] = affine(cos_part[j], scale, low);
            sin_part[j] = affine(sin_part[j], scale, low);
        }
    }
    store(out, index * 4, count, cos_part);
    store(out, half_blocks * 4 + index * 4, count, sin_part);
}

extern "C" __global__ void philox_integers(u64 key0, u64 key1, u64 base_lo, u64 base_hi, u64 count, u64 span,
                                           u64 low, u64* out) {
    const u64 index = thread_index();
    const u64 first = index * 4;
    if (first >= count) return;
    const Block block = philox_block(key0, key1, base_lo, base_hi, index);
    const bool power_of_two = (span & (span - 1ULL)) == 0ULL;
    u64 value[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        u64 word = block.v[j];
        if (span != 0ULL) word = power_of_two ? (word & (span - 1ULL)) : (word % span);
        value[j] = word + low;
    }
    store(out, first, count, value);
}
"""

_THREADS_PER_BLOCK = 256
_kernels = {}


def _kernel(name):
    """The compiled kernel ``name`` (CuPy caches the binary per device and shares one compilation of the source)."""
    found = _kernels.get(name)
    if found is None:
        found = _kernels[name] = _backend.require_cupy().RawKernel(_CUDA_SOURCE, name)
    return found


def _launch(name, threads, arguments):
    grid = -(-threads // _THREADS_PER_BLOCK)
    _kernel(name)((grid,), (_THREADS_PER_BLOCK,), arguments)


def _counter_arguments(seed, start):
    """Key words and the 128-bit counter of the draw's first block (``start + 1``), as kernel arguments."""
    base = start + 1
    return (numpy.uint64(seed), numpy.uint64(0), numpy.uint64(base % 2 ** 64), numpy.uint64(base >> 64))


def _cuda_uniform(seed, start, count, compute, bits, scale, low):
    cupy = _backend.require_cupy()
    out = cupy.empty(count, compute)
    if count:
        per_block = _per_block(compute)
        word_bits = 64 if compute == numpy.float64 else 32
        shift = numpy.int32(word_bits - bits)
        unit = compute.type(2.0 ** -bits)
        _launch(f"philox_uniform_{compute.name}", -(-count // per_block),
                (*_counter_arguments(seed, start), numpy.uint64(count), shift, unit, scale, low, out))
    return out


def _cuda_normal(seed, start, count, compute, std, mean):
    cupy = _backend.require_cupy()
    out = cupy.empty(count, compute)
    if count:
        half_blocks = _half_blocks(count, _per_block(compute))
        _launch(f"philox_normal_{compute.name}", half_blocks,
                (*_counter_arguments(seed, start), numpy.uint64(count), numpy.uint64(half_blocks),
                 compute.type(-2.0), compute.type(_TWO_PI), std, mean, out))
    return out


def _cuda_integers(seed, start, count, span, low_bits):
    cupy = _backend.require_cupy()
    out = cupy.empty(count, numpy.uint64)
    if count:
        _launch("philox_integers", -(-count // BLOCK_WORDS),
                (*_counter_arguments(seed, start), numpy.uint64(count), span, low_bits, out))
    return out
