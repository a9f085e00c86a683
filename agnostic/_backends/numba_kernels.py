"""The CPU kernels that numba compiles: one pass over memory on all cores for what NumPy's ufuncs do on one.

Imported by ``cpu_kernels`` on the first large CPU op, only where numba is installed (the ``fast-cpu`` extra). The
kernels compile on first use for each dtype; those written here are cached on disk (numba's ``cache=True``: beside
this file, or in the user's cache folder where the package is read-only), those made from a function (the arithmetic,
the optimizers' loops) compile once per process. They take flat or 2-D (rows) C-contiguous arrays and write ``out``
(or in place).

Every element takes the same IEEE operations, in the same order, as NumPy's ufunc would: no ``fastmath`` (no
reassociation, no fused multiply-add), and NumPy's error model (division by zero gives inf or nan, never raises).
The float32 LSTM cells are the exception: their tanh is a rational function (``tanh32``, within 7 ulp), since numba
has no vectorized tanh; they run on the calling thread, between the steps' BLAS products.
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
def layer_norm_backward_rows(grad, x, weight, mean, rstd, grad_input, grad_normalized, has_weight):
    """The input's gradient of ``layer_norm_rows``, ``rstd * (g - mean(g) - normalized * mean(g * normalized))``
    with ``g = grad * weight``, and ``grad * normalized`` (the weight's gradient, summed over rows by the caller)."""
    cols = x.shape[1]
    for r in prange(x.shape[0]):
        g, row, dx, gn = grad[r], x[r], grad_input[r], grad_normalized[r]
        centre, scale = mean[r], rstd[r]
        sum_g = 0.0
        sum_gx = 0.0
        for c in range(cols):
            normalized = (row[c] - centre) * scale
            scaled = g[c] * weight[c] if has_weight else g[c]
            sum_g += scaled
            sum_gx += scaled * normalized
            gn[c] = g[c] * normalized
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


@_one_core_kernel
def lstm_cell_forward(projected, recurrent, cell_prev, gates, cell, hidden):
    """One float32 LSTM time step of a batch: the gates ``sigmoid/tanh(projected + recurrent)`` ((B, 4H), PyTorch's
    order: input, forget, candidate, output) into ``gates``, ``cell = forget * cell_prev + input * candidate`` and
    ``hidden = output * tanh(cell)`` ((B, H)).

    A row at a time, in three short loops, each vectorized: the sum (``recurrent`` was just written by BLAS's
    threads, so its lines come from other cores' caches: read alone, 3x faster on 16 cores than beside six other
    streams), the activations in place, the states. A loop over an offset range (``range(2 * H, 3 * H)``) was not
    vectorized: each runs over a whole segment from 0."""
    size = cell.shape[1]
    for b in range(cell.shape[0]):
        z, r, g = projected[b], recurrent[b], gates[b]
        for k in range(g.size):
            g[k] = z[k] + r[k]
        _activate(g[:2 * size], False)  # input and forget gates
        _activate(g[2 * size:3 * size], True)
        _activate(g[3 * size:], False)
        input_gate, forget_gate, candidate, output_gate = g[:size], g[size:2 * size], g[2 * size:3 * size], \
            g[3 * size:]
        previous, c, h = cell_prev[b], cell[b], hidden[b]
        for j in range(size):
            value = forget_gate[j] * previous[j] + input_gate[j] * candidate[j]
            c[j] = value
            h[j] = output_gate[j] * tanh32(value)


@_one_core_kernel
def lstm_cell_backward(gates, cell, cell_prev, grad_hidden, grad_output, grad_cell, grad_cell_prev, grad_gates):
    """The gradients of ``lstm_cell_forward``'s step: with respect to the gates' pre-activations into
    ``grad_gates`` (B, 4H) and to the previous cell state into ``grad_cell_prev`` (B, H), from those reaching the
    step's hidden state (``grad_hidden`` from the next step plus ``grad_output`` from the layer's output) and its
    cell state (``grad_cell``). The hidden state's sum is taken first, alone (``grad_hidden`` was just written by
    BLAS's threads), into ``grad_cell_prev``, which then takes its own result."""
    size = cell.shape[1]
    one = numpy.float32(1)
    for b in range(cell.shape[0]):
        hidden_in, output_in, total = grad_hidden[b], grad_output[b], grad_cell_prev[b]
        for j in range(size):
            total[j] = hidden_in[j] + output_in[j]
        g, d = gates[b], grad_gates[b]
        input_gate, forget_gate, candidate, output_gate = g[:size], g[size:2 * size], g[2 * size:3 * size], \
            g[3 * size:]
        grad_input, grad_forget, grad_candidate, grad_output_gate = d[:size], d[size:2 * size], \
            d[2 * size:3 * size], d[3 * size:]
        c, previous, cell_in = cell[b], cell_prev[b], grad_cell[b]
        for j in range(size):
            i, f, candidate_j, o = input_gate[j], forget_gate[j], candidate[j], output_gate[j]
            tanh_cell = tanh32(c[j])
            hidden_total = total[j]
            cell_total = cell_in[j] + hidden_total * o * (one - tanh_cell * tanh_cell)
            total[j] = cell_total * f
            grad_input[j] = cell_total * candidate_j * i * (one - i)
            grad_forget[j] = cell_total * previous[j] * f * (one - f)
            grad_candidate[j] = cell_total * i * (one - candidate_j * candidate_j)
            grad_output_gate[j] = hidden_total * tanh_cell * o * (one - o)


def update_loop(element, array_count):
    """A parallel loop applying an optimizer's per-element function ``element(i, *arrays, scalars, flags)`` to every
    index of its ``array_count`` (3 or 5) arrays. The function is inlined into the loop (numba's ``inline="always"``):
    called instead, it costs each element a call and keeps the loop from being vectorized (14x slower)."""
    element = numba.njit(error_model="numpy", inline="always")(element)

    def three(a, b, c, scalars, flags):
        for i in prange(a.size):
            element(i, a, b, c, scalars, flags)

    def five(a, b, c, d, e, scalars, flags):
        for i in prange(a.size):
            element(i, a, b, c, d, e, scalars, flags)
    return numba.njit(parallel=True, error_model="numpy")(three if array_count == 3 else five)


def warm_up():
    """Run one parallel kernel now, so that numba loads its thread pool (an error here: no threading layer)."""
    relu(numpy.zeros(1, numpy.float32), numpy.empty(1, numpy.float32))
