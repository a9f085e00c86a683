"""Scaled dot-product attention on all the CPU's cores, the (L, S) weights never in memory: the numba kernels behind
``cpu_ops.attention_forward`` and ``attention_backward``, computing what CUDA's attention kernels compute
(``cuda_kernels``' ``agnostic_attention_*``).

The forward's task is a block of ``QUERY_BLOCK`` query rows of one (batch, head) pair, walking over the keys
``KEY_TILE`` at a time; it keeps each row's running maximum and sum of exponentials across the tiles (an online
softmax) and returns the rows' log-sum-exp, from which the backward computes the weights again. The backward takes a
task per pair where the pairs keep every thread busy (``attention_backward_pairs``: five products and one exponential
per weight), else two kernels of a task per block of rows, one for the queries' gradient and one for the keys' and
values' (seven products and two exponentials, but as many tasks as blocks). A task copies its rows and each tile into
small C-contiguous scratch arrays first (the heads are strided views of a packed projection, rarely contiguous), as
rows or transposed, so that every product is a dot product of two contiguous rows (``_row_dots``: four by four,
sixteen sums kept in registers, each value read serving four).

Against the composed form (NumPy's products and the row kernels), 2-core VM, float32, forward and backward: 8 heads
of 1024 queries and keys of 64, 66 ms against 81 (causal: 35 against 90); 4 x 8 heads of 256, 18 against 22; 64 x 8
heads of 32 by 32, as fast (5.4 against 5.1 ms) and no copy of the heads out of a packed projection (a Transformer
layer's training step, 55.6-56.6 ms against 57.2-58.3).

Imported by ``cpu_kernels`` once numba has loaded (the ``fast-cpu`` extra), compiled on first use for each dtype and
cached on disk. The products are reassociated into fused multiply-adds, as BLAS's are; sums and the softmax's
arithmetic are rounded in the inputs' dtype, as the CUDA kernels round them; float32's exponential is a polynomial
within 1 ulp (``_exp_in_place``).
"""

import numba
import numpy
from numba import extending, prange, types

QUERY_BLOCK = 32  # query rows a forward or query-gradient task owns
KEY_TILE = 64  # keys such a task brings into its scratch arrays at a time
KEY_BLOCK = 32  # key rows a key-and-value-gradient task owns
QUERY_TILE = 64  # queries such a task brings in at a time

# A thread takes a few chunks of consecutive tasks, each chunk with its own scratch arrays: enough chunks that a
# thread slowed down shares its work, few enough that allocating the scratch arrays costs nothing.
CHUNKS_PER_THREAD = 4

_kernel = numba.njit(parallel=True, error_model="numpy", cache=True)
_inline = numba.njit(error_model="numpy", inline="always")
# A step two kernels share: compiled once and called (inlined into each, it took each kernel's compilation 2 s longer).
_shared = numba.njit(error_model="numpy", cache=True)


# exp of float32 (Cephes' expf): e^x = 2^n e^r with n the nearest integer to x / log(2), r = x - n log(2) in two
# parts (the high one exact in float32), e^r by a polynomial; within 1 ulp of the exact value for arguments from
# -87.3 (e^x = 2^-126) to 88, at most 2^-126 below (0 for -inf), e^88 above (a softmax's arguments are at most 0).
# 2^n comes from its bits, so the loop vectorizes (libm's expf, called for each element, took 4x as long).
_LOG2_E = numpy.float32(1.44269504088896341)
_LN2_HIGH, _LN2_LOW = numpy.float32(0.693359375), numpy.float32(-2.12194440e-4)
_EXP_POLYNOMIAL = tuple(numpy.float32(c) for c in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3,
                                                   4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1))
_EXP_RANGE = numpy.float32(-103.0), numpy.float32(88.0)  # arguments clamped so that n fits its bits (-inf gives 0)


def _exp_in_place(row, count, bits):
    """``row[:count] = exp(row[:count])`` (NaN stays NaN); ``bits`` is int32 scratch of ``count`` elements or more,
    where float32's exponentials build their powers of two."""


@extending.overload(_exp_in_place, jit_options={"error_model": "numpy", "fastmath": {"contract"}})
def _exp_in_place_typed(row, count, bits):
    return _exp_in_place_float32 if row.dtype == types.float32 else _exp_in_place_libm


def _exp_in_place_libm(row, count, bits):
    for j in range(count):
        row[j] = numpy.exp(row[j])


def _exp_in_place_float32(row, count, bits):
    c0, c1, c2, c3, c4, c5 = _EXP_POLYNOMIAL
    lowest, highest = _EXP_RANGE
    for j in range(count):
        x = row[j]
        x = lowest if x < lowest else highest if x > highest else x
        n = numpy.floor(x * _LOG2_E + numpy.float32(0.5))
        r = x - n * _LN2_HIGH - n * _LN2_LOW
        row[j] = (((((c0 * r + c1) * r + c2) * r + c3) * r + c4) * r + c5) * (r * r) + r + numpy.float32(1)
        exponent = numpy.int32(n) if n == n else numpy.int32(0)  # NaN: any power (the polynomial is NaN)
        bits[j] = (max(exponent, numpy.int32(-127)) + numpy.int32(127)) << numpy.int32(23)
    powers = bits.view(numpy.float32)
    for j in range(count):
        row[j] *= powers[j]


@_inline
def _padded(count):
    """``count`` rounded up to a multiple of 4: the scratch arrays' rows, so that ``_row_dots`` needs no edge cases
    (the extra rows' results are never read)."""
    return (count + 3) // 4 * 4


@numba.njit(error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)
def _row_dots(left, right, rows, cols, inner, out, accumulate):
    """``out[i, j] (+)= left[i, :inner] . right[j, :inner]`` for ``i < rows`` and ``j < cols``, both multiples of 4
    (C-contiguous arrays with that many rows): four rows of each at a time, sixteen sums."""
    zero = out.dtype.type(0)
    for i in range(0, rows, 4):
        a0, a1, a2, a3 = left[i, :inner], left[i + 1, :inner], left[i + 2, :inner], left[i + 3, :inner]
        for j in range(0, cols, 4):
            b0, b1, b2, b3 = right[j, :inner], right[j + 1, :inner], right[j + 2, :inner], right[j + 3, :inner]
            s00 = s01 = s02 = s03 = s10 = s11 = s12 = s13 = zero
            s20 = s21 = s22 = s23 = s30 = s31 = s32 = s33 = zero
            for d in range(inner):
                x0, x1, x2, x3 = a0[d], a1[d], a2[d], a3[d]
                y0, y1, y2, y3 = b0[d], b1[d], b2[d], b3[d]
                s00 += x0 * y0
                s01 += x0 * y1
                s02 += x0 * y2
                s03 += x0 * y3
                s10 += x1 * y0
                s11 += x1 * y1
                s12 += x1 * y2
                s13 += x1 * y3
                s20 += x2 * y0
                s21 += x2 * y1
                s22 += x2 * y2
                s23 += x2 * y3
                s30 += x3 * y0
                s31 += x3 * y1
                s32 += x3 * y2
                s33 += x3 * y3
            _put_four(out, i, j, s00, s01, s02, s03, accumulate)
            _put_four(out, i + 1, j, s10, s11, s12, s13, accumulate)
            _put_four(out, i + 2, j, s20, s21, s22, s23, accumulate)
            _put_four(out, i + 3, j, s30, s31, s32, s33, accumulate)


@_inline
def _put_four(out, i, j, s0, s1, s2, s3, accumulate):
    if accumulate:
        out[i, j] += s0
        out[i, j + 1] += s1
        out[i, j + 2] += s2
        out[i, j + 3] += s3
    else:
        out[i, j], out[i, j + 1], out[i, j + 2], out[i, j + 3] = s0, s1, s2, s3


@_inline
def _copy_rows(source, first, count, out):
    """``out[:count] = source[first:first + count]`` (a 2-D strided ``source``), zeros up to the padding; ``out`` may
    be a transposed scratch array's ``.T``."""
    for i in range(count):
        for d in range(source.shape[1]):
            out[i, d] = source[first + i, d]
    for i in range(count, min(_padded(count), out.shape[0])):
        out[i, :] = 0


@_inline
def _row_dot(a, b, row):
    """``a[row] . b[row]`` of two 2-D strided arrays: the softmax gradient's correction for a query row."""
    total = a[row, 0] * b[row, 0]
    for d in range(1, a.shape[1]):
        total += a[row, d] * b[row, d]
    return total


@_inline
def _chunk_bounds(chunk, chunks, tasks):
    """The tasks ``[start, stop)`` of chunk ``chunk`` of ``chunks``."""
    return chunk * tasks // chunks, (chunk + 1) * tasks // chunks


@_inline
def _block_of(task, blocks, heads, block, count):
    """``(pair, b, h, first, rows)`` of task ``task``: block ``task % blocks`` (``block`` rows of ``count``, the last
    shorter) of (batch, head) pair ``task // blocks``."""
    pair, first = task // blocks, task % blocks * block
    return pair, pair // heads, pair % heads, first, min(block, count - first)


@_inline
def _seen(causal, query, start, tile):
    """How many keys of the tile from key ``start`` query row ``query`` attends to: the whole tile, or with
    ``causal`` those up to its own position (0 or fewer: none)."""
    return min(tile, query + 1 - start) if causal else tile


@_kernel
def attention_forward(q, k, v, out, lse, scale, causal, scales, threads):
    """``out = softmax(scale * q k^T) v`` for (B, H, L, D) ``q``, (B, H, S, D) ``k``, (B, H, S, Dv) ``v`` and
    (B, H, L, Dv) ``out`` (strided), each weight times its dropout factor in ``scales`` (flat (B, H, L, S); empty for
    no dropout) before it meets ``v``; ``lse`` (B, H, L) gets each row's log-sum-exp of its scaled scores."""
    batch, heads, queries, dim = q.shape
    keys, value_dim = v.shape[2], v.shape[3]
    blocks = -(-queries // QUERY_BLOCK)
    tasks = batch * heads * blocks
    chunks = min(tasks, CHUNKS_PER_THREAD * threads)
    scale, dropping = q.dtype.type(scale), scales.size > 0
    for chunk in prange(chunks):
        query_rows = numpy.zeros((QUERY_BLOCK, dim), q.dtype)
        key_rows = numpy.zeros((KEY_TILE, dim), q.dtype)
        values_t = numpy.zeros((_padded(value_dim), KEY_TILE), q.dtype)
        weights = numpy.zeros((QUERY_BLOCK, KEY_TILE), q.dtype)
        sums = numpy.empty((QUERY_BLOCK, _padded(value_dim)), q.dtype)
        largest = numpy.empty(QUERY_BLOCK, q.dtype)
        total = numpy.empty(QUERY_BLOCK, q.dtype)
        bits = numpy.empty(KEY_TILE, numpy.int32)
        first_task, stop_task = _chunk_bounds(chunk, chunks, tasks)
        for task in range(first_task, stop_task):
            pair, b, h, first, rows = _block_of(task, blocks, heads, QUERY_BLOCK, queries)
            padded_rows = _padded(rows)
            _copy_rows(q[b, h], first, rows, query_rows)
            sums[:] = 0
            largest[:] = -numpy.inf
            total[:] = 0
            key_end = min(keys, first + rows) if causal else keys
            for start in range(0, key_end, KEY_TILE):
                tile = min(KEY_TILE, key_end - start)
                _copy_rows(k[b, h], start, tile, key_rows)
                _copy_rows(v[b, h], start, tile, values_t.T)
                _row_dots(query_rows, key_rows, padded_rows, _padded(tile), dim, weights, False)
                for i in range(rows):
                    query = first + i
                    seen = _seen(causal, query, start, tile)
                    new_largest = largest[i]
                    for j in range(seen):
                        score = weights[i, j] * scale
                        weights[i, j] = score
                        if score > new_largest or score != score:  # NaN wins, as softmax's maximum
                            new_largest = score
                    if seen > 0:
                        shrink = numpy.exp(largest[i] - new_largest)
                        if shrink != 1:
                            for e in range(value_dim):
                                sums[i, e] *= shrink
                        row = weights[i]
                        for j in range(seen):
                            row[j] -= new_largest
                        _exp_in_place(row, seen, bits)
                        row_total = total[i] * shrink
                        for j in range(seen):
                            row_total += row[j]
                        if dropping:
                            dropped = scales[(pair * queries + query) * keys + start:]
                            for j in range(seen):
                                row[j] *= dropped[j]
                        largest[i], total[i] = new_largest, row_total
                    for j in range(max(seen, 0), tile):
                        weights[i, j] = 0
                _row_dots(weights, values_t, padded_rows, _padded(value_dim), tile, sums, True)
            for i in range(rows):
                for e in range(value_dim):
                    out[b, h, first + i, e] = sums[i, e] / total[i]
                lse[b, h, first + i] = largest[i] + numpy.log(total[i])


@_inline
def _load_query_block(q, grad, out, b, h, first, rows, query_rows, grad_rows, corrections):
    """A block of query rows for the gradients: its queries and their output's gradient as scratch rows, and each
    row's softmax-gradient correction ``grad . out``."""
    _copy_rows(q[b, h], first, rows, query_rows)
    _copy_rows(grad[b, h], first, rows, grad_rows)
    for i in range(rows):
        corrections[i] = _row_dot(grad[b, h], out[b, h], first + i)


@_shared
def _query_block_gradients(k, v, lse, b, h, pair, first, rows, start, tile, scale, causal, scales, query_rows,
                           grad_rows, corrections, key_rows, keys_t, value_rows, scores, weight_grads, query_sums,
                           bits):
    """One key tile of a query block's gradients: the weights computed again from ``lse``; ``scores`` ends with the
    scores' gradients ``w * (grad . v * dropout - correction)``, ``weight_grads`` with the (dropped) weights, both
    zero past what each row attends to, and ``query_sums`` gains the scores' gradients times the keys."""
    queries, keys = lse.shape[2], k.shape[2]
    dim, value_dim = k.shape[3], v.shape[3]
    padded_rows = _padded(rows)
    _copy_rows(k[b, h], start, tile, key_rows)
    _copy_rows(k[b, h], start, tile, keys_t.T)
    _copy_rows(v[b, h], start, tile, value_rows)
    _row_dots(query_rows, key_rows, padded_rows, _padded(tile), dim, scores, False)
    _row_dots(grad_rows, value_rows, padded_rows, _padded(tile), value_dim, weight_grads, False)
    for i in range(padded_rows):
        query = first + i
        seen = max(_seen(causal, query, start, tile), 0) if i < rows else 0
        row = scores[i]
        row_lse = lse[b, h, query] if i < rows else lse.dtype.type(0)
        for j in range(seen):
            row[j] = row[j] * scale - row_lse
        _exp_in_place(row, seen, bits)
        if scales.size:
            dropped = scales[(pair * queries + query) * keys + start:]
            for j in range(seen):
                weight_grads[i, j] *= dropped[j]
                row[j], weight_grads[i, j] = row[j] * (weight_grads[i, j] - corrections[i]), row[j] * dropped[j]
        else:
            for j in range(seen):
                row[j], weight_grads[i, j] = row[j] * (weight_grads[i, j] - corrections[i]), row[j]
        for j in range(seen, tile):
            row[j] = 0
            weight_grads[i, j] = 0
    _row_dots(scores, keys_t, padded_rows, _padded(dim), tile, query_sums, True)


@_kernel
def attention_backward_query(q, k, v, out, grad, lse, grad_q, scale, causal, scales, threads):
    """``grad_q`` of ``attention_forward`` for the gradient ``grad`` of its ``out``: each query row's weights
    computed again from ``lse``, their gradient ``w * (grad . v * dropout - grad . out)``, times ``scale k``."""
    batch, heads, queries, dim = q.shape
    keys, value_dim = v.shape[2], v.shape[3]
    blocks = -(-queries // QUERY_BLOCK)
    tasks = batch * heads * blocks
    chunks = min(tasks, CHUNKS_PER_THREAD * threads)
    scale = q.dtype.type(scale)
    for chunk in prange(chunks):
        query_rows = numpy.zeros((QUERY_BLOCK, dim), q.dtype)
        grad_rows = numpy.zeros((QUERY_BLOCK, value_dim), q.dtype)
        corrections = numpy.empty(QUERY_BLOCK, q.dtype)
        key_rows = numpy.zeros((KEY_TILE, dim), q.dtype)
        keys_t = numpy.zeros((_padded(dim), KEY_TILE), q.dtype)
        value_rows = numpy.zeros((KEY_TILE, value_dim), q.dtype)
        scores = numpy.zeros((QUERY_BLOCK, KEY_TILE), q.dtype)
        weight_grads = numpy.zeros((QUERY_BLOCK, KEY_TILE), q.dtype)
        query_sums = numpy.empty((QUERY_BLOCK, _padded(dim)), q.dtype)
        bits = numpy.empty(KEY_TILE, numpy.int32)
        first_task, stop_task = _chunk_bounds(chunk, chunks, tasks)
        for task in range(first_task, stop_task):
            pair, b, h, first, rows = _block_of(task, blocks, heads, QUERY_BLOCK, queries)
            _load_query_block(q, grad, out, b, h, first, rows, query_rows, grad_rows, corrections)
            query_sums[:] = 0
            key_end = min(keys, first + rows) if causal else keys
            for start in range(0, key_end, KEY_TILE):
                _query_block_gradients(k, v, lse, b, h, pair, first, rows, start, min(KEY_TILE, key_end - start),
                                       scale, causal, scales, query_rows, grad_rows, corrections, key_rows, keys_t,
                                       value_rows, scores, weight_grads, query_sums, bits)
            for i in range(rows):
                for d in range(dim):
                    grad_q[b, h, first + i, d] = query_sums[i, d] * scale


@_kernel
def attention_backward_key(q, k, v, out, grad, lse, grad_k, grad_v, scale, causal, scales, threads):
    """``grad_k`` and ``grad_v`` of ``attention_forward``: for each key row, the weights of every query on it computed
    again from ``lse``; ``grad_v`` sums the (dropped) weights times ``grad``, ``grad_k`` the weights' gradient times
    ``scale q``."""
    batch, heads, queries, dim = q.shape
    keys, value_dim = v.shape[2], v.shape[3]
    blocks = -(-keys // KEY_BLOCK)
    tasks = batch * heads * blocks
    chunks = min(tasks, CHUNKS_PER_THREAD * threads)
    scale, one, dropping = q.dtype.type(scale), q.dtype.type(1), scales.size > 0
    for chunk in prange(chunks):
        key_rows = numpy.zeros((KEY_BLOCK, dim), q.dtype)
        value_rows = numpy.zeros((KEY_BLOCK, value_dim), q.dtype)
        query_rows = numpy.zeros((QUERY_TILE, dim), q.dtype)
        queries_t = numpy.zeros((_padded(dim), QUERY_TILE), q.dtype)
        grad_rows = numpy.zeros((QUERY_TILE, value_dim), q.dtype)
        grads_t = numpy.zeros((_padded(value_dim), QUERY_TILE), q.dtype)
        corrections = numpy.empty(QUERY_TILE, q.dtype)
        tile_lse = numpy.empty(QUERY_TILE, q.dtype)
        bits = numpy.empty(QUERY_TILE, numpy.int32)
        scores = numpy.zeros((KEY_BLOCK, QUERY_TILE), q.dtype)
        weight_grads = numpy.zeros((KEY_BLOCK, QUERY_TILE), q.dtype)
        key_sums = numpy.empty((KEY_BLOCK, _padded(dim)), q.dtype)
        value_sums = numpy.empty((KEY_BLOCK, _padded(value_dim)), q.dtype)
        first_task, stop_task = _chunk_bounds(chunk, chunks, tasks)
        for task in range(first_task, stop_task):
            pair, b, h, first, rows = _block_of(task, blocks, heads, KEY_BLOCK, keys)
            padded_rows = _padded(rows)
            _copy_rows(k[b, h], first, rows, key_rows)
            _copy_rows(v[b, h], first, rows, value_rows)
            key_sums[:] = 0
            value_sums[:] = 0
            # causal: the queries before the block's first key attend to none of its keys
            for start in range(first if causal else 0, queries, QUERY_TILE):
                tile = min(QUERY_TILE, queries - start)
                _copy_rows(q[b, h], start, tile, query_rows)
                _copy_rows(q[b, h], start, tile, queries_t.T)
                _copy_rows(grad[b, h], start, tile, grad_rows)
                _copy_rows(grad[b, h], start, tile, grads_t.T)
                for j in range(tile):
                    corrections[j] = _row_dot(grad[b, h], out[b, h], start + j)
                    tile_lse[j] = lse[b, h, start + j]
                _row_dots(key_rows, query_rows, padded_rows, _padded(tile), dim, scores, False)
                _row_dots(value_rows, grad_rows, padded_rows, _padded(tile), value_dim, weight_grads, False)
                for i in range(rows):
                    key = first + i
                    # causal: the tile's queries before this key attend to none of it
                    unseen = min(tile, max(key - start, 0)) if causal else 0
                    for j in range(unseen):
                        scores[i, j] = 0
                        weight_grads[i, j] = 0
                    row = scores[i, unseen:]
                    for j in range(tile - unseen):
                        row[j] = row[j] * scale - tile_lse[unseen + j]
                    _exp_in_place(row, tile - unseen, bits)
                    for j in range(unseen, tile):
                        weight = scores[i, j]
                        kept = scales[(pair * queries + start + j) * keys + key] if dropping else one
                        scores[i, j] = weight * (weight_grads[i, j] * kept - corrections[j])
                        weight_grads[i, j] = weight * kept
                _row_dots(weight_grads, grads_t, padded_rows, _padded(value_dim), tile, value_sums, True)
                _row_dots(scores, queries_t, padded_rows, _padded(dim), tile, key_sums, True)
            for i in range(rows):
                for d in range(dim):
                    grad_k[b, h, first + i, d] = key_sums[i, d] * scale
                for e in range(value_dim):
                    grad_v[b, h, first + i, e] = value_sums[i, e]


@_inline
def _transpose(source, rows, cols, out):
    """``out[:cols, :rows] = source[:rows, :cols].T`` (scratch arrays)."""
    for i in range(rows):
        for j in range(cols):
            out[j, i] = source[i, j]


@_kernel
def attention_backward_pairs(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal, scales, threads):
    """The three gradients of ``attention_forward`` in one pass, a task per (batch, head) pair: each block of query
    rows against each tile of keys computes the weights again from ``lse`` once, for the block's ``grad_q`` and the
    tile's share of ``grad_k`` and ``grad_v`` (summed over the pair's query blocks in the task's scratch). Five
    products and one exponential per weight, where ``attention_backward_query`` and ``attention_backward_key`` take
    seven and two; the choice where the pairs keep every thread busy."""
    batch, heads, queries, dim = q.shape
    keys, value_dim = v.shape[2], v.shape[3]
    tasks = batch * heads
    chunks = min(tasks, CHUNKS_PER_THREAD * threads)
    scale = q.dtype.type(scale)
    for chunk in prange(chunks):
        query_rows = numpy.zeros((QUERY_BLOCK, dim), q.dtype)
        queries_t = numpy.zeros((_padded(dim), QUERY_BLOCK), q.dtype)
        grad_rows = numpy.zeros((QUERY_BLOCK, value_dim), q.dtype)
        grads_t = numpy.zeros((_padded(value_dim), QUERY_BLOCK), q.dtype)
        corrections = numpy.empty(QUERY_BLOCK, q.dtype)
        key_rows = numpy.zeros((KEY_TILE, dim), q.dtype)
        keys_t = numpy.zeros((_padded(dim), KEY_TILE), q.dtype)
        value_rows = numpy.zeros((KEY_TILE, value_dim), q.dtype)
        scores = numpy.zeros((QUERY_BLOCK, KEY_TILE), q.dtype)
        weight_grads = numpy.zeros((QUERY_BLOCK, KEY_TILE), q.dtype)
        scores_t = numpy.zeros((KEY_TILE, QUERY_BLOCK), q.dtype)
        weights_t = numpy.zeros((KEY_TILE, QUERY_BLOCK), q.dtype)
        query_sums = numpy.empty((QUERY_BLOCK, _padded(dim)), q.dtype)
        key_sums = numpy.empty((_padded(keys) + KEY_TILE, _padded(dim)), q.dtype)
        value_sums = numpy.empty((_padded(keys) + KEY_TILE, _padded(value_dim)), q.dtype)
        bits = numpy.empty(KEY_TILE, numpy.int32)
        first_task, stop_task = _chunk_bounds(chunk, chunks, tasks)
        for pair in range(first_task, stop_task):
            b, h = pair // heads, pair % heads
            key_sums[:] = 0
            value_sums[:] = 0
            for first in range(0, queries, QUERY_BLOCK):
                rows = min(QUERY_BLOCK, queries - first)
                padded_rows = _padded(rows)
                _load_query_block(q, grad, out, b, h, first, rows, query_rows, grad_rows, corrections)
                _copy_rows(q[b, h], first, rows, queries_t.T)
                _copy_rows(grad[b, h], first, rows, grads_t.T)
                query_sums[:] = 0
                key_end = min(keys, first + rows) if causal else keys
                for start in range(0, key_end, KEY_TILE):
                    tile = min(KEY_TILE, key_end - start)
                    _query_block_gradients(k, v, lse, b, h, pair, first, rows, start, tile, scale, causal, scales,
                                           query_rows, grad_rows, corrections, key_rows, keys_t, value_rows, scores,
                                           weight_grads, query_sums, bits)
                    _transpose(scores, padded_rows, tile, scores_t)
                    _transpose(weight_grads, padded_rows, tile, weights_t)
                    _row_dots(weights_t, grads_t, _padded(tile), _padded(value_dim), padded_rows,
                              value_sums[start:], True)
                    _row_dots(scores_t, queries_t, _padded(tile), _padded(dim), padded_rows, key_sums[start:], True)
                for i in range(rows):
                    for d in range(dim):
                        grad_q[b, h, first + i, d] = query_sums[i, d] * scale
            for key in range(keys):
                for d in range(dim):
                    grad_k[b, h, key, d] = key_sums[key, d] * scale
                for e in range(value_dim):
                    grad_v[b, h, key, e] = value_sums[key, e]
