"""The CPU kernels that numba compiles: one pass over memory on all cores for what NumPy's ufuncs do on one.

Imported by ``cpu_kernels`` on the first large CPU op, only where numba is installed (the ``fast-cpu`` extra). The
kernels compile on first use for each dtype; those written here are cached on disk (numba's ``cache=True``: beside
this file, or in the user's cache folder where the package is read-only), those made from a function (the arithmetic,
the optimizers' loops) compile once per process. They take flat or 2-D (rows) C-contiguous arrays and write ``out``
(or in place).

Every element takes the same IEEE operations, in the same order, as NumPy's ufunc would: no ``fastmath`` (no
reassociation, no fused multiply-add), and NumPy's error model (division by zero gives inf or nan, never raises).
The float32 LSTM kernels are the exception: their tanh is a rational function (``tanh32``, within 7 ulp), since numba
has no vectorized tanh, and their hidden-to-gates products are reassociated dot products with fused multiply-adds,
as BLAS's are (see ``lstm_forward_sequence``).
"""

import operator

import numba
import numpy
from numba import prange

_kernel = numba.njit(parallel=True, error_model="numpy", cache=True)
# A kernel run by the calling thread: work between BLAS products (an LSTM's cells), where waking numba's threads
# (35 us on 16 cores) while BLAS's poll for their next product costs more than the work.
_one_core_kernel = numba.njit(error_model="numpy", cache=True)


@_kernel
def relu(x, out):
    """``max(x, 0)`` as ``numpy.maximum``: NaN kept, -0.0 and negatives give +0.0."""
    for i in prange(x.size):
        value = x[i]
        out[i] = 0 if value <= 0 else value


@_kernel
def relu_gradient(grad, x, out):
    """``grad`` where ``x > 0``, else +0.0 (a NaN input passes no gradient)."""
    for i in prange(x.size):
        out[i] = grad[i] if x[i] > 0 else 0


@_kernel
def add_row(matrix, row):
    """``matrix += row`` for a 2-D ``matrix`` (the bias add of a linear layer), one row per task."""
    for r in prange(matrix.shape[0]):
        for c in range(matrix.shape[1]):
            matrix[r, c] += row[c]


def _binary(operation):
    # A closure is not cached on disk: each binary kernel compiles once per process and dtype (about 0.3 s).
    @numba.njit(parallel=True, error_model="numpy")
    def kernel(x, y, out):
        for i in prange(out.size):
            out[i] = operation(x[i], y[i])
    return kernel


def _with_scalar(operation):
    # ``y`` comes in the array's dtype (a NumPy scalar), so that each element takes NumPy's operation.
    @numba.njit(parallel=True, error_model="numpy")
    def kernel(x, y, out):
        for i in prange(out.size):
            out[i] = operation(x[i], y)
    return kernel


_OPERATIONS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv}
BINARY = {name: _binary(operation) for name, operation in _OPERATIONS.items()}
WITH_SCALAR = {name: _with_scalar(operation) for name, operation in _OPERATIONS.items()}


@_kernel
def copy_2d(source, target):
    """``target[...] = source`` for 2-D arrays of one shape and any strides, a row per task (explicit loops: numba's
    array assignment is several times slower)."""
    for i in prange(source.shape[0]):
        for j in range(source.shape[1]):
            target[i, j] = source[i, j]


@_kernel
def copy_3d(source, target):
    """``copy_2d`` for 3-D arrays."""
    for i in prange(source.shape[0]):
        for j in range(source.shape[1]):
            for k in range(source.shape[2]):
                target[i, j, k] = source[i, j, k]


@_kernel
def copy_4d(source, target):
    """``copy_2d`` for 4-D arrays."""
    for i in prange(source.shape[0]):
        for j in range(source.shape[1]):
            for k in range(source.shape[2]):
                for m in range(source.shape[3]):
                    target[i, j, k, m] = source[i, j, k, m]


COPIES = {2: copy_2d, 3: copy_3d, 4: copy_4d}


@_kernel
def batched_matmul(a, b, out):
    """``out[p] = a[p] @ b[p]`` for stacks of small matrices (3-D arrays), a BLAS product per task (SciPy's BLAS,
    which numba's ``numpy.dot`` calls: NumPy's loop calls it for one matrix after another). A transposed matrix is
    copied first: BLAS takes contiguous ones."""
    for p in prange(a.shape[0]):
        numpy.dot(numpy.ascontiguousarray(a[p]), numpy.ascontiguousarray(b[p]), out[p])


@_kernel
def softmax_rows(x, out, logarithm):
    """softmax (or log_softmax) of each row of a 2-D array into ``out``: the row's maximum (NaN wins, as NumPy's),
    the sum of exponentials in float64, then the composed form's arithmetic, ``x - max`` first, rounded once."""
    for r in prange(x.shape[0]):
        row, result = x[r], out[r]
        largest = row[0]
        for c in range(1, row.size):
            value = row[c]
            if value > largest or value != value:
                largest = value
        total = 0.0
        for c in range(row.size):
            exponential = numpy.exp(row[c] - largest)
            result[c] = exponential
            total += exponential
        if logarithm:
            log_total = numpy.log(total)
            for c in range(row.size):
                result[c] = (row[c] - largest) - log_total
        else:
            for c in range(row.size):
                result[c] = result[c] / total


@_kernel
def softmax_backward_rows(grad, result, out, logarithm):
    """The gradient of ``softmax_rows`` from its result, a row at a time: ``result * (grad - sum(grad * result))``,
    or for log_softmax ``grad - exp(result) * sum(grad)``, the sums in float64."""
    for r in prange(grad.shape[0]):
        g, y, o = grad[r], result[r], out[r]
        total = 0.0
        if logarithm:
            for c in range(g.size):
                total += g[c]
            for c in range(g.size):
                o[c] = g[c] - numpy.exp(y[c]) * total
        else:
            for c in range(g.size):
                total += g[c] * y[c]
            for c in range(g.size):
                o[c] = y[c] * (g[c] - total)


@_kernel
def layer_norm_rows(x, weight, bias, out, mean, rstd, eps, has_weight, has_bias):
    """Each row of a 2-D array less its mean, times ``1 / sqrt(var + eps)`` (biased variance, two passes as NumPy's
    var), times ``weight`` plus ``bias`` where given; the statistics in float64, each result rounded once. Writes
    each row's mean and reciprocal deviation (float64) for the gradient."""
    cols = x.shape[1]
    for r in prange(x.shape[0]):
        row, result = x[r], out[r]
        total = 0.0
        for c in range(cols):
            total += row[c]
        centre = total / cols
        squares = 0.0
        for c in range(cols):
            deviation = row[c] - centre
            squares += deviation * deviation
        scale = 1.0 / numpy.sqrt(squares / cols + eps)
        for c in range(cols):
            value = (row[c] - centre) * scale
            if has_weight:
                value *= weight[c]
            if has_bias:
                value += bias[c]
            result[c] = value
        mean[r] = centre
        rstd[r] = scale


@_kernel
def layer_norm_backward_rows(grad, x, weight, mean, rstd, grad_input, parameter_sums, has_weight):
    """The input's gradient of ``layer_norm_rows``, ``rstd * (g - mean(g) - normalized * mean(g * normalized))``
    with ``g = grad * weight``, and the parameters' gradients in the same pass: each of the ``len(parameter_sums)``
    chunks of rows adds its rows' ``grad * normalized`` and ``grad`` into ``parameter_sums[chunk]`` (float64, zeros
    to start), which the caller sums over the chunks."""
    rows, cols = x.shape
    chunks = parameter_sums.shape[0]
    for chunk in prange(chunks):
        weight_sums, bias_sums = parameter_sums[chunk, 0], parameter_sums[chunk, 1]
        for r in range(chunk * rows // chunks, (chunk + 1) * rows // chunks):
            g, row, dx = grad[r], x[r], grad_input[r]
            centre, scale = mean[r], rstd[r]
            sum_g = 0.0
            sum_gx = 0.0
            for c in range(cols):
                normalized = (row[c] - centre) * scale
                scaled = g[c] * weight[c] if has_weight else g[c]
                sum_g += scaled
                sum_gx += scaled * normalized
                weight_sums[c] += g[c] * normalized
                bias_sums[c] += g[c]
            sum_g /= cols
            sum_gx /= cols
            for c in range(cols):
                normalized = (row[c] - centre) * scale
                scaled = g[c] * weight[c] if has_weight else g[c]
                dx[c] = scale * (scaled - sum_g - normalized * sum_gx)


# tanh of float32 by the 13/6-degree rational function that Eigen, XLA and ONNX Runtime's MLAS use for float32 tanh:
# arithmetic only, so the LSTM cells' loops vectorize (numba's math.tanh calls the C library's scalar tanhf; NumPy's
# tanh took 5x as long on AVX2; on AVX-512, where it is vectorized too, about as long). Within 7 ulp of the exact tanh
# (measured over all magnitudes; NumPy's: 1.4), NaN kept, +-1 from +-7.9053 (where the rational function reaches 1).
_TANH_CLAMP = numpy.float32(7.90531110763549805)
_TANH_NUMERATOR = tuple(numpy.float32(c) for c in (
    -2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11, 5.12229709037114e-08, 1.48572235717979e-05,
    6.37261928875436e-04, 4.89352455891786e-03))
_TANH_DENOMINATOR = tuple(numpy.float32(c) for c in (
    1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03, 4.89352518554385e-03))


@numba.njit(error_model="numpy", inline="always")
def tanh32(x):
    """tanh of a float32 (see ``_TANH_CLAMP``), without a call: vectorizable."""
    if x > _TANH_CLAMP:
        x = _TANH_CLAMP
    elif x < -_TANH_CLAMP:
        x = -_TANH_CLAMP
    square = x * x
    numerator = _TANH_NUMERATOR[0]
    for coefficient in _TANH_NUMERATOR[1:]:
        numerator = numerator * square + coefficient
    denominator = _TANH_DENOMINATOR[0]
    for coefficient in _TANH_DENOMINATOR[1:]:
        denominator = denominator * square + coefficient
    return x * numerator / denominator


@numba.njit(error_model="numpy", inline="always")
def _sigmoid32(x):
    half = numpy.float32(0.5)
    return half * tanh32(half * x) + half


@numba.njit(error_model="numpy", inline="always")
def _activate(gates, candidate):
    """``sigmoid`` of a segment of a row of gates in place, or tanh for the candidate gate."""
    for k in range(gates.size):
        gates[k] = tanh32(gates[k]) if candidate else _sigmoid32(gates[k])


@numba.njit(error_model="numpy", inline="always")
def _lstm_cell_units(g, cell_prev, cell, hidden, size, first, stop):
    """Hidden units ``first`` to ``stop`` of one batch row of an LSTM step, from its gates' pre-activations ``g``
    (4H, PyTorch's order: input, forget, candidate, output), activated in place: ``cell = forget * cell_prev + input
    * candidate``, ``hidden = output * tanh(cell)``. Each loop runs over a segment from 0 (a loop over an offset
    range, ``range(2 * H, 3 * H)``, was not vectorized)."""
    input_gate, forget_gate = g[first:stop], g[size + first:size + stop]
    candidate, output_gate = g[2 * size + first:2 * size + stop], g[3 * size + first:3 * size + stop]
    _activate(input_gate, False)
    _activate(forget_gate, False)
    _activate(candidate, True)
    _activate(output_gate, False)
    previous, c, h = cell_prev[first:stop], cell[first:stop], hidden[first:stop]
    for j in range(stop - first):
        value = forget_gate[j] * previous[j] + input_gate[j] * candidate[j]
        c[j] = value
        h[j] = output_gate[j] * tanh32(value)


@numba.njit(error_model="numpy", inline="always")
def _lstm_cell_backward_units(g, cell, cell_prev, hidden_total, grad_cell, grad_cell_prev, d, size, first, stop):
    """Hidden units ``first`` to ``stop`` of one batch row of ``lstm_cell_backward``: from the gradient reaching the
    step's hidden state (``hidden_total``) and its cell state (``grad_cell``), the gates' pre-activation gradients
    into ``d`` (4H) and the previous cell state's into ``grad_cell_prev``, which may be ``hidden_total`` or
    ``grad_cell`` (each element is read before it is written)."""
    one = numpy.float32(1)
    input_gate, forget_gate = g[first:stop], g[size + first:size + stop]
    candidate, output_gate = g[2 * size + first:2 * size + stop], g[3 * size + first:3 * size + stop]
    grad_input, grad_forget = d[first:stop], d[size + first:size + stop]
    grad_candidate, grad_output_gate = d[2 * size + first:2 * size + stop], d[3 * size + first:3 * size + stop]
    c, previous, totals = cell[first:stop], cell_prev[first:stop], hidden_total[first:stop]
    cell_in, cell_out = grad_cell[first:stop], grad_cell_prev[first:stop]
    for j in range(stop - first):
        i, f, candidate_j, o = input_gate[j], forget_gate[j], candidate[j], output_gate[j]
        tanh_cell = tanh32(c[j])
        total = totals[j]
        cell_total = cell_in[j] + total * o * (one - tanh_cell * tanh_cell)
        cell_out[j] = cell_total * f
        grad_input[j] = cell_total * candidate_j * i * (one - i)
        grad_forget[j] = cell_total * previous[j] * f * (one - f)
        grad_candidate[j] = cell_total * i * (one - candidate_j * candidate_j)
        grad_output_gate[j] = total * tanh_cell * o * (one - o)


@_one_core_kernel
def lstm_cell_forward(projected, recurrent, cell_prev, gates, cell, hidden):
    """One float32 LSTM time step of a batch: the gates ``sigmoid/tanh(projected + recurrent)`` ((B, 4H), PyTorch's
    order: input, forget, candidate, output) into ``gates``, ``cell = forget * cell_prev + input * candidate`` and
    ``hidden = output * tanh(cell)`` ((B, H)).

    A row at a time, in three short loops, each vectorized: the sum (``recurrent`` was just written by BLAS's
    threads, so its lines come from other cores' caches: read alone, 3x faster on 16 cores than beside six other
    streams), the activations in place, the states."""
    size = cell.shape[1]
    for b in range(cell.shape[0]):
        z, r, g = projected[b], recurrent[b], gates[b]
        for k in range(g.size):
            g[k] = z[k] + r[k]
        _lstm_cell_units(g, cell_prev[b], cell[b], hidden[b], size, 0, size)


@_one_core_kernel
def lstm_cell_backward(gates, cell, cell_prev, grad_hidden, grad_output, grad_cell, grad_cell_prev, grad_gates):
    """The gradients of ``lstm_cell_forward``'s step: with respect to the gates' pre-activations into
    ``grad_gates`` (B, 4H) and to the previous cell state into ``grad_cell_prev`` (B, H), from those reaching the
    step's hidden state (``grad_hidden`` from the next step plus ``grad_output`` from the layer's output) and its
    cell state (``grad_cell``). The hidden state's sum is taken first, alone (``grad_hidden`` was just written by
    BLAS's threads), into ``grad_cell_prev``, which then takes its own result."""
    size = cell.shape[1]
    for b in range(cell.shape[0]):
        hidden_in, output_in, total = grad_hidden[b], grad_output[b], grad_cell_prev[b]
        for j in range(size):
            total[j] = hidden_in[j] + output_in[j]
        _lstm_cell_backward_units(gates[b], cell[b], cell_prev[b], total, grad_cell[b], total, grad_gates[b], size, 0,
                                  size)


# The whole LSTM recurrence in one call, as oneDNN's LSTM layer runs it (PyTorch's CPU LSTM): each thread owns a
# slice of the hidden units, and computes, each step, its units' four gates for the whole batch (their rows of the
# hidden-to-gates weight stay in its cache from step to step) and then their cells; a step's threads wait for each
# other once (the next step needs every unit's hidden state). Each step is one parallel region, started from compiled
# code; its threads spin briefly before they sleep (``GOMP_SPINCOUNT``, set in ``cpu_kernels``), so that the next
# step's region finds them awake: 1 to 7 us a step, instead of the 40 us of waking sleeping threads. Through BLAS,
# a step was a product on BLAS's threads and then a cell pass on one core. Where the whole weight fits a core's cache,
# each thread owns a slice of the batch rows instead, for every step, in one region: a row's steps depend on that row
# alone, so the threads never wait for each other (``lstm_forward_rows``, chosen by ``cpu_kernels``).
# The products are dot products, four rows of the batch with four weight rows at once (``_row_products``); their sums
# are reassociated and their multiply-adds fused, as BLAS's are (``reassoc``, ``contract``). Written as
# ``acc[j] += x * w[j]`` over the weight's columns instead, they stored their sums as they went: 1.5x to 1.8x slower
# on the 16-core host's Xeon.
_sequence_kernel = numba.njit(parallel=True, error_model="numpy", cache=True)


# The products' blocking: the reduction runs over chunks of _CHUNK columns, and the rows of ``left`` go by tiles of
# _TILE_BYTES of such chunks, so that a tile and four weight rows' chunks stay in a core's first-level cache while
# every weight row of the slice meets every row of the tile (all the rows at once overflowed it from about 28 rows of
# 256: 4x slower; whole rows of 2048 overflowed it with four weight rows alone).
_CHUNK = 512
_TILE_BYTES = 16384


@numba.njit(error_model="numpy", inline="always")
def _put(out, base, b, n, value, has_base, accumulate):
    """``out[b, n]`` takes a sum: added to what it holds (a later chunk), or to ``base[b, n]``, or alone."""
    if accumulate:
        out[b, n] += value
    elif has_base:
        out[b, n] = base[b, n] + value
    else:
        out[b, n] = value


@numba.njit(error_model="numpy", inline="always")
def _put_four(out, base, b, n, s0, s1, s2, s3, has_base, accumulate):
    """``out[b, n:n + 4]`` take four sums (``_put``)."""
    _put(out, base, b, n, s0, has_base, accumulate)
    _put(out, base, b, n + 1, s1, has_base, accumulate)
    _put(out, base, b, n + 2, s2, has_base, accumulate)
    _put(out, base, b, n + 3, s3, has_base, accumulate)


@numba.njit(error_model="numpy", fastmath={"reassoc", "contract"})
def _row_products(left, weight, first, stop, out, base, has_base):
    """``out[b, n] = base[b, n] + left[b] @ weight[n]`` (``base`` counted only where ``has_base``) for every row ``b``
    of ``left`` (B, K) and the weight rows ``n`` from ``first`` to ``stop`` of ``weight`` (N, K): four weight rows
    and four rows of ``left`` at once (sixteen sums, each value read serving four), then what remains; blocked as
    ``_CHUNK`` and ``_TILE_BYTES`` say."""
    rows, columns = left.shape
    quads_end = first + (stop - first) // 4 * 4
    chunk = min(columns, _CHUNK)
    tile = max(4, _TILE_BYTES // (16 * chunk) * 4)
    zero = numpy.float32(0)
    for chunk_start in range(0, columns, chunk):
        chunk_stop = min(columns, chunk_start + chunk)
        accumulate = chunk_start > 0
        for tile_start in range(0, rows, tile):
            tile_stop = min(rows, tile_start + tile)
            blocks_end = tile_stop - (tile_stop - tile_start) % 4
            for n in range(first, quads_end, 4):
                w0, w1 = weight[n, chunk_start:chunk_stop], weight[n + 1, chunk_start:chunk_stop]
                w2, w3 = weight[n + 2, chunk_start:chunk_stop], weight[n + 3, chunk_start:chunk_stop]
                for b in range(tile_start, blocks_end, 4):
                    x, y = left[b, chunk_start:chunk_stop], left[b + 1, chunk_start:chunk_stop]
                    z, u = left[b + 2, chunk_start:chunk_stop], left[b + 3, chunk_start:chunk_stop]
                    x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = zero
                    z0 = z1 = z2 = z3 = u0 = u1 = u2 = u3 = zero
                    for k in range(x.size):
                        v0, v1, v2, v3 = w0[k], w1[k], w2[k], w3[k]
                        xk, yk, zk, uk = x[k], y[k], z[k], u[k]
                        x0 += xk * v0
                        x1 += xk * v1
                        x2 += xk * v2
                        x3 += xk * v3
                        y0 += yk * v0
                        y1 += yk * v1
                        y2 += yk * v2
                        y3 += yk * v3
                        z0 += zk * v0
                        z1 += zk * v1
                        z2 += zk * v2
                        z3 += zk * v3
                        u0 += uk * v0
                        u1 += uk * v1
                        u2 += uk * v2
                        u3 += uk * v3
                    _put_four(out, base, b, n, x0, x1, x2, x3, has_base, accumulate)
                    _put_four(out, base, b + 1, n, y0, y1, y2, y3, has_base, accumulate)
                    _put_four(out, base, b + 2, n, z0, z1, z2, z3, has_base, accumulate)
                    _put_four(out, base, b + 3, n, u0, u1, u2, u3, has_base, accumulate)
                for b in range(blocks_end, tile_stop):
                    x = left[b, chunk_start:chunk_stop]
                    x0 = x1 = x2 = x3 = zero
                    for k in range(x.size):
                        xk = x[k]
                        x0 += xk * w0[k]
                        x1 += xk * w1[k]
                        x2 += xk * w2[k]
                        x3 += xk * w3[k]
                    _put_four(out, base, b, n, x0, x1, x2, x3, has_base, accumulate)
            for n in range(quads_end, stop):
                w = weight[n, chunk_start:chunk_stop]
                for b in range(tile_start, tile_stop):
                    x = left[b, chunk_start:chunk_stop]
                    total = zero
                    for k in range(x.size):
                        total += x[k] * w[k]
                    _put(out, base, b, n, total, has_base, accumulate)


@numba.njit(error_model="numpy", inline="always")
def _time(position, steps, reverse):
    """The time index of the layer's ``position``-th step."""
    return steps - 1 - position if reverse else position


@numba.njit(error_model="numpy", inline="always")
def _forward_step(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse, position, rows_start,
                  rows_stop, first, stop):
    """The ``position``-th step of ``lstm_forward_sequence``'s layer for the batch rows ``rows_start`` to ``rows_stop``
    and the hidden units ``first`` to ``stop``: their gates' products, then their cells."""
    steps, size = len(projected), cells.shape[2]
    t = _time(position, steps, reverse)
    if position == 0:
        hidden, cell_prev = first_hidden[rows_start:rows_stop], first_cell[rows_start:rows_stop]
    else:
        previous = _time(position - 1, steps, reverse)
        hidden, cell_prev = outputs[previous, rows_start:rows_stop], cells[previous, rows_start:rows_stop]
    gates_t, projected_t = gates[t, rows_start:rows_stop], projected[t, rows_start:rows_stop]
    cells_t, outputs_t = cells[t, rows_start:rows_stop], outputs[t, rows_start:rows_stop]
    for gate in range(4):
        _row_products(hidden, weight_hh, gate * size + first, gate * size + stop, gates_t, projected_t, True)
    for b in range(rows_stop - rows_start):
        _lstm_cell_units(gates_t[b], cell_prev[b], cells_t[b], outputs_t[b], size, first, stop)


@_sequence_kernel
def lstm_forward_sequence(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse, slices):
    """Every step of a float32 LSTM layer direction (``cpu_ops.lstm_forward_steps``' arrays), the hidden units in
    ``slices`` parallel slices."""
    steps, batch, width = projected.shape
    size = width // 4
    for position in range(steps):
        for part in prange(slices):
            _forward_step(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse, position, 0,
                          batch, part * size // slices, (part + 1) * size // slices)


@_sequence_kernel
def lstm_forward_rows(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse, groups):
    """``lstm_forward_sequence`` with each of ``groups`` threads owning a slice of the batch rows for all the steps
    (a row's steps depend on that row alone: no barrier), every unit of them: each reads the whole weight each
    step, which must stay in its core's cache."""
    steps, batch = projected.shape[:2]
    for group in prange(groups):
        rows_start, rows_stop = group * batch // groups, (group + 1) * batch // groups
        for position in range(steps):
            _forward_step(projected, first_hidden, first_cell, weight_hh, gates, cells, outputs, reverse, position,
                          rows_start, rows_stop, 0, cells.shape[2])


@numba.njit(error_model="numpy", inline="always")
def _backward_step(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell, grad_gates, reverse,
                   position, rows_start, rows_stop, first, stop):
    """Region ``position`` of ``lstm_backward_sequence`` for the batch rows ``rows_start`` to ``rows_stop`` and the
    hidden units ``first`` to ``stop``."""
    steps, size = len(gates), cells.shape[2]
    rows_hidden = grad_hidden[rows_start:rows_stop]
    if position < steps:  # the product takes the gate gradients of step ``later``
        later = _time(position, steps, reverse)
        _row_products(grad_gates[later, rows_start:rows_stop], weight_hh_t, first, stop, rows_hidden, rows_hidden,
                      False)
    if position > 0:  # then step ``t``'s cell gradients
        t = _time(position - 1, steps, reverse)
        cell_prev = first_cell if position <= 1 else cells[_time(position - 2, steps, reverse)]
        total = numpy.empty(size, numpy.float32)  # a row's hidden-state gradients, in their places
        for b in range(rows_start, rows_stop):
            hidden_in, output_in, units = grad_hidden[b, first:stop], grad_outputs[t, b, first:stop], total[first:stop]
            for j in range(stop - first):
                units[j] = hidden_in[j] + output_in[j]
            _lstm_cell_backward_units(gates[t, b], cells[t, b], cell_prev[b], total, grad_cell[b], grad_cell[b],
                                      grad_gates[t, b], size, first, stop)


@_sequence_kernel
def lstm_backward_sequence(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell, grad_gates,
                           reverse, slices):
    """The gradients of every step of ``lstm_forward_sequence``'s layer, last step first
    (``cpu_ops.lstm_backward_steps``' arrays; ``weight_hh_t`` is the (H, 4H) transpose of the hidden-to-gates
    weight, contiguous; ``grad_hidden`` and ``grad_cell`` come in holding the final states' gradients and leave
    holding the first states'), the hidden units in ``slices`` parallel slices.

    A thread's region ``position`` takes, for its units, the hidden state's gradient through step ``position``'s
    gates (the product, which needs every unit's gate gradients: the previous region's) and then step
    ``position - 1``'s cell gradients (which need only its own units' hidden-state gradients, just computed)."""
    steps, batch, width = gates.shape
    size = width // 4
    for position in range(steps, -1, -1):
        for part in prange(slices):
            _backward_step(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell, grad_gates,
                           reverse, position, 0, batch, part * size // slices, (part + 1) * size // slices)


@_sequence_kernel
def lstm_backward_rows(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell, grad_gates,
                       reverse, groups):
    """``lstm_backward_sequence`` with each of ``groups`` threads owning a slice of the batch rows for all the steps,
    as ``lstm_forward_rows``."""
    steps, batch = gates.shape[:2]
    for group in prange(groups):
        rows_start, rows_stop = group * batch // groups, (group + 1) * batch // groups
        for position in range(steps, -1, -1):
            _backward_step(gates, cells, first_cell, weight_hh_t, grad_outputs, grad_hidden, grad_cell, grad_gates,
                           reverse, position, rows_start, rows_stop, 0, cells.shape[2])


def update_loop(element, array_count):
    """A parallel loop applying an optimizer's per-element function ``element(i, *arrays, scalars, flags)`` to every
    index of its ``array_count`` (3 or 5) arrays, on ``threads`` threads (1: the calling thread alone, waking none).
    The function is inlined into the loop (numba's ``inline="always"``): called instead, it costs each element a call
    and keeps the loop from being vectorized (14x slower). A loop compiled without ``parallel`` ran Adam's update
    11x slower than this one on one thread (505 against 44 us, 200K float32): it was not vectorized."""
    element = numba.njit(error_model="numpy", inline="always")(element)

    def three(a, b, c, scalars, flags, threads):
        everyone = numba.get_num_threads()
        numba.set_num_threads(threads)
        for i in prange(a.size):
            element(i, a, b, c, scalars, flags)
        numba.set_num_threads(everyone)

    def five(a, b, c, d, e, scalars, flags, threads):
        everyone = numba.get_num_threads()
        numba.set_num_threads(threads)
        for i in prange(a.size):
            element(i, a, b, c, d, e, scalars, flags)
        numba.set_num_threads(everyone)
    return numba.njit(parallel=True, error_model="numpy")(three if array_count == 3 else five)


def warm_up():
    """Run one parallel kernel now, so that numba loads its thread pool (an error here: no threading layer)."""
    relu(numpy.zeros(1, numpy.float32), numpy.empty(1, numpy.float32))
