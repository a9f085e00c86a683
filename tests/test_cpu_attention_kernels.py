"""The CPU's attention kernels (numba, the ``fast-cpu`` extra; ``numba_attention``): the forward and both forms of the
backward against a float64 NumPy reference on strided heads, with causal masks, dropout scales and lengths across
tiles; float32's exponential within 1 ulp; which attention takes them; NumPy's gradients where numba can no longer run
(a child forked after the forward)."""

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic._backends import cpu_kernels, cpu_ops
from agnostic.nn.functional import _attention

numba = pytest.importorskip("numba", reason="the fast-cpu extra (numba) is not installed")
from agnostic._backends import numba_attention  # noqa: E402  (needs numba)

RNG = numpy.random.default_rng(5)
TOLERANCE = {numpy.float32: 3e-5, numpy.float64: 1e-12}
SHAPES = [  # (batch, heads, queries, keys, dim, value_dim)
    (2, 3, 5, 7, 8, 8),  # fewer rows than a block, not multiples of 4
    (1, 2, 33, 70, 32, 32),  # rows across blocks, keys past a tile
    (2, 2, 100, 130, 16, 20),  # several tiles each way, a value size of its own
    (3, 1, 1, 1, 1, 3),  # one of everything
]


def reference(q, k, v, scale, causal, scales, grad):
    """``(out, lse, grad_q, grad_k, grad_v)`` in float64: the weights in memory, as the composed form has them."""
    q, k, v, grad = (a.astype(numpy.float64) for a in (q, k, v, grad))
    scores = q @ k.swapaxes(-1, -2) * scale
    if causal:
        scores = numpy.where(numpy.tri(*scores.shape[-2:], dtype=bool), scores, -numpy.inf)
    largest = scores.max(-1, keepdims=True)
    exponentials = numpy.exp(scores - largest)
    total = exponentials.sum(-1, keepdims=True)
    weights = exponentials / total
    drop = 1.0 if scales is None else scales
    out = (weights * drop) @ v
    weight_grads = grad @ v.swapaxes(-1, -2) * drop
    score_grads = weights * (weight_grads - (weight_grads * weights).sum(-1, keepdims=True))
    return (out, (largest + numpy.log(total))[..., 0], score_grads @ k * scale,
            score_grads.swapaxes(-1, -2) @ q * scale, (weights * drop).swapaxes(-1, -2) @ grad)


def strided_heads(batch, heads, rows, dim, dtype):
    """(B, H, rows, D) heads as a packed projection holds them: a transposed view of (B, rows, H, D)."""
    return RNG.standard_normal((batch, rows, heads, dim)).astype(dtype).transpose(0, 2, 1, 3)


def run_kernels(q, k, v, scale, causal, scales, grad, per_pair):
    threads = numba.get_num_threads()
    flat = numpy.empty(0, q.dtype) if scales is None else scales.reshape(-1)
    out = numpy.empty(q.shape[:3] + v.shape[3:], q.dtype)
    lse = numpy.empty(q.shape[:3], q.dtype)
    numba_attention.attention_forward(q, k, v, out, lse, scale, causal, flat, threads)
    grad_q, grad_k, grad_v = numpy.empty_like(q), numpy.empty_like(k), numpy.empty_like(v)
    if per_pair:
        numba_attention.attention_backward_pairs(q, k, v, out, grad, lse, grad_q, grad_k, grad_v, scale, causal,
                                                 flat, threads)
    else:
        numba_attention.attention_backward_query(q, k, v, out, grad, lse, grad_q, scale, causal, flat, threads)
        numba_attention.attention_backward_key(q, k, v, out, grad, lse, grad_k, grad_v, scale, causal, flat, threads)
    return out, lse, grad_q, grad_k, grad_v


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dropout", [False, True])
@pytest.mark.parametrize("per_pair", [False, True])
def test_the_kernels_match_the_weights_in_memory(dtype, shape, causal, dropout, per_pair):
    batch, heads, queries, keys, dim, value_dim = shape
    if causal and keys < queries:
        keys = queries  # every query row keeps key 0 and up to its own position
    q = strided_heads(batch, heads, queries, dim, dtype)
    k, v = strided_heads(batch, heads, keys, dim, dtype), strided_heads(batch, heads, keys, value_dim, dtype)
    grad = RNG.standard_normal((batch, heads, queries, value_dim)).astype(dtype)
    scales = ((RNG.random((batch, heads, queries, keys)) < 0.7) / dtype(0.7)).astype(dtype) if dropout else None
    found = run_kernels(q, k, v, 0.3, causal, scales, grad, per_pair)
    for result, expected in zip(found, reference(q, k, v, 0.3, causal, scales, grad)):
        assert result.dtype == dtype
        numpy.testing.assert_allclose(result, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def test_float32_exponentials_are_within_an_ulp():
    @numba.njit
    def exponentials(values):
        numba_attention._exp_in_place(values, values.size, numpy.empty(values.size, numpy.int32))

    x = numpy.linspace(-87.3, 88.0, 2_000_001, dtype=numpy.float32)
    found = x.copy()
    exponentials(found)
    exact = numpy.exp(x.astype(numpy.float64))
    assert (numpy.abs(found - exact) / numpy.spacing(exact.astype(numpy.float32))).max() <= 1.01
    special = numpy.array([numpy.nan, -numpy.inf, -1e4, -100.0, 0.0, -0.0], numpy.float32)
    exponentials(special)
    assert numpy.isnan(special[0]) and special[1] == 0 and 0 <= special[2] <= 2.0 ** -126
    assert 0 <= special[3] <= 2.0 ** -126 and special[4] == special[5] == 1


def test_large_attention_takes_the_kernels_and_small_attention_the_composed_form():
    pairs, length, dim = 64 * 8, 32, 32
    assert pairs * length * length * 2 * dim >= cpu_kernels.MIN_ATTENTION_WORK
    assert cpu_ops.attention_fits(numpy.dtype(numpy.float32), pairs, length, length, dim, dim)
    assert not cpu_ops.attention_fits(numpy.dtype(numpy.float32), 1, 3, 3, 4, 4)
    q = agnostic.randn(64, 8, length, dim, requires_grad=True)
    assert F.scaled_dot_product_attention(q, q, q).grad_fn.name() == "_FusedAttentionBackward"
    small = agnostic.randn(1, 1, 3, 4, requires_grad=True)
    assert F.scaled_dot_product_attention(small, small, small).grad_fn.name() != "_FusedAttentionBackward"


def test_the_gradients_come_from_numpy_where_numba_can_no_longer_run(monkeypatch):
    arrays = [RNG.standard_normal((8, 4, 40, 16)) for _ in range(3)]

    def gradients(causal):
        q, k, v = (agnostic.tensor(a).requires_grad_() for a in arrays)
        agnostic.manual_seed(2)
        output = F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=0.3)
        assert output.grad_fn.name() == "_FusedAttentionBackward"
        return output, (q, k, v)

    for causal in (False, True):
        output, leaves = gradients(causal)
        output.pow(2).sum().backward()
        expected = [t.grad.numpy() for t in leaves]
        output, leaves = gradients(causal)
        with monkeypatch.context() as patch:
            patch.setattr(cpu_kernels, "_kernels", False)  # what a forked child has
            output.pow(2).sum().backward()
        for tensor, grad in zip(leaves, expected):
            numpy.testing.assert_allclose(tensor.grad.numpy(), grad, rtol=1e-12, atol=1e-12)


def test_kernels_and_composed_form_agree_through_a_transformer_layer(monkeypatch):
    source = RNG.standard_normal((64, 20, 32)).astype(numpy.float32)
    calls = []
    forward = cpu_kernels.attention_forward
    monkeypatch.setattr(cpu_kernels, "attention_forward", lambda *args: calls.append(1) or forward(*args))

    def run():
        agnostic.manual_seed(1)
        layer = agnostic.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
        x = agnostic.tensor(source, requires_grad=True)
        layer(x).pow(2).sum().backward()
        return [x.grad.numpy()] + [p.grad.numpy() for p in layer.parameters()]

    fused = run()
    assert calls == [1]
    monkeypatch.setattr(_attention, "_fused_attention_applies", lambda *args: False)
    composed = run()
    assert calls == [1]
    for found, expected in zip(fused, composed):
        numpy.testing.assert_allclose(found, expected, rtol=2e-4, atol=2e-4)
