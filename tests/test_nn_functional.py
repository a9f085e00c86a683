"""nn.functional: forward values against NumPy references, gradients with gradcheck (float64), errors."""

import math
import re

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.autograd import gradcheck

RNG = numpy.random.default_rng(1234)


def host(tensor):
    return tensor.detach().cpu().numpy()


def make(array, device, requires_grad=False, dtype=None):
    tensor = agnostic.tensor(numpy.asarray(array), device=device, dtype=dtype)
    return tensor.requires_grad_() if requires_grad else tensor


def randn(*shape):
    return RNG.standard_normal(shape)


# ----- references ---------------------------------------------------------------------------------------------

def conv2d_reference(x, w, b, stride, padding, dilation, groups):
    """Direct loops over output pixels; ``padding`` is (top, bottom, left, right)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    top, bottom, left, right = padding
    xp = numpy.zeros((n, c, h + top + bottom, wd + left + right))
    xp[:, :, top:top + h, left:left + wd] = x
    oh = (xp.shape[2] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = numpy.zeros((n, o, oh, ow))
    per_group = o // groups
    for batch in range(n):
        for channel in range(o):
            g = channel // per_group
            for i in range(oh):
                for j in range(ow):
                    total = 0.0
                    for cc in range(cg):
                        for ki in range(kh):
                            for kj in range(kw):
                                total += xp[batch, g * cg + cc, i * stride[0] + ki * dilation[0],
                                            j * stride[1] + kj * dilation[1]] * w[channel, cc, ki, kj]
                    out[batch, channel, i, j] = total + (0.0 if b is None else b[channel])
    return out


def pool_reference(x, kernel, stride, padding, dilation, ceil_mode, kind, count_include_pad=True, divisor=None):
    n, c, h, w = x.shape

    def size(length, k, s, p, d):
        out = (length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= length + p:
            out -= 1
        return out

    oh, ow = size(h, kernel[0], stride[0], padding[0], dilation[0]), size(w, kernel[1], stride[1], padding[1],
                                                                           dilation[1])
    out = numpy.zeros((n, c, oh, ow))
    indices = numpy.zeros((n, c, oh, ow), dtype=numpy.int64)
    for i in range(oh):
        for j in range(ow):
            rows = [i * stride[0] - padding[0] + a * dilation[0] for a in range(kernel[0])]
            cols = [j * stride[1] - padding[1] + b * dilation[1] for b in range(kernel[1])]
            inside = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
            if kind == "max":
                for batch in range(n):
                    for channel in range(c):
                        values = [x[batch, channel, r, q] for r, q in inside]
                        best = int(numpy.argmax(values))
                        out[batch, channel, i, j] = values[best]
                        indices[batch, channel, i, j] = inside[best][0] * w + inside[best][1]
            else:
                hstart, wstart = i * stride[0] - padding[0], j * stride[1] - padding[1]
                hend, wend = min(hstart + kernel[0], h + padding[0]), min(wstart + kernel[1], w + padding[1])
                pool = (hend - hstart) * (wend - wstart)
                total = sum(x[:, :, r, q] for r, q in inside) if inside else numpy.zeros((n, c))
                count = divisor or (pool if count_include_pad else len(inside))
                out[:, :, i, j] = total / count
    return out, indices


# ----- erf and activations --------------------------------------------------------------------------------------

def test_erf_is_float64_accurate(device):
    values = numpy.concatenate([numpy.linspace(-7, 7, 2001), RNG.normal(0, 2, 1000),
                                [0.0, -0.0, 1e-300, 0.84375, 1.25, 1 / 0.35, 6.0, numpy.inf, -numpy.inf]])
    got = host(F.erf(make(values, device)))
    expected = numpy.array([math.erf(v) for v in values])
    ulps = numpy.abs(got - expected) / numpy.spacing(numpy.maximum(numpy.abs(expected), 1e-300))
    assert ulps.max() <= 2
    assert numpy.isnan(host(F.erf(make([numpy.nan], device)))).all()
    single = F.erf(make(values, device, dtype=agnostic.float32))
    assert single.dtype is agnostic.float32
    assert numpy.allclose(host(single), expected, atol=1e-7)


def test_activations_forward(device):
    x = randn(3, 4)
    t = make(x, device)
    assert numpy.allclose(host(F.relu(t)), numpy.maximum(x, 0))
    assert numpy.allclose(host(F.tanh(t)), numpy.tanh(x))
    assert numpy.allclose(host(F.sigmoid(t)), 1 / (1 + numpy.exp(-x)))
    assert numpy.allclose(host(F.logsigmoid(t)), -numpy.log1p(numpy.exp(-x)))
    erf = numpy.vectorize(math.erf)
    assert numpy.allclose(host(F.gelu(t)), 0.5 * x * (1 + erf(x / math.sqrt(2))), atol=1e-15, rtol=1e-14)
    tanh_form = 0.5 * x * (1 + numpy.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    assert numpy.allclose(host(F.gelu(t, approximate="tanh")), tanh_form)
    exp = numpy.exp(x - x.max(1, keepdims=True))
    assert numpy.allclose(host(F.softmax(t, dim=1)), exp / exp.sum(1, keepdims=True))
    assert numpy.allclose(host(F.log_softmax(t, dim=1)), numpy.log(exp / exp.sum(1, keepdims=True)))
    assert host(F.logsigmoid(make([-800.0, 800.0], device))).tolist() == [-800.0, 0.0]
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        implicit = F.softmax(t)
    assert numpy.allclose(host(implicit), host(F.softmax(t, 1)))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh."):
        F.gelu(t, approximate="fast")
    inplace = make(x, device)
    assert F.relu(inplace, inplace=True) is inplace and (host(inplace) >= 0).all()


@pytest.mark.parametrize("function", [
    F.erf, F.tanh, F.sigmoid, F.logsigmoid, lambda x: F.gelu(x), lambda x: F.gelu(x, approximate="tanh"),
    lambda x: F.softmax(x, dim=1), lambda x: F.log_softmax(x, dim=0), F.relu,
], ids=["erf", "tanh", "sigmoid", "logsigmoid", "gelu", "gelu_tanh", "softmax", "log_softmax", "relu"])
def test_activation_gradients(device, function):
    x = randn(2, 3)
    x[numpy.abs(x) < 0.05] = 0.3  # keep relu away from its kink
    assert gradcheck(function, (make(x, device, True),))


def test_logsigmoid_gradient_at_zero(device):
    x = make([0.0], device, True)
    F.logsigmoid(x).sum().backward()
    assert host(x.grad).tolist() == [0.5]


# ----- linear and convolution -----------------------------------------------------------------------------------

def test_linear(device):
    x, w, b = randn(2, 5, 3), randn(4, 3), randn(4)
    out = F.linear(make(x, device), make(w, device), make(b, device))
    assert out.shape == (2, 5, 4) and numpy.allclose(host(out), x @ w.T + b)
    assert numpy.allclose(host(F.linear(make(x[0, 0], device), make(w, device))), x[0, 0] @ w.T)
    assert gradcheck(F.linear, (make(x[0], device, True), make(w, device, True), make(b, device, True)))


@pytest.mark.parametrize("stride, padding, dilation, groups", [
    (1, 0, 1, 1), (2, 1, 1, 1), (1, (2, 1), 2, 1), ((2, 1), 1, 1, 2), (1, "same", 1, 1), (1, "valid", 1, 1),
    (1, "same", 2, 2),
])
def test_conv2d_matches_direct_loops(device, stride, padding, dilation, groups):
    x = randn(2, 4, 6, 5)
    w = randn(6, 4 // groups, 3, 2)
    b = randn(6)
    out = F.conv2d(make(x, device), make(w, device), make(b, device), stride, padding, dilation, groups)
    s, d = (stride, stride) if isinstance(stride, int) else stride, (dilation, dilation)
    if padding == "same":
        total = [d[0] * 2, d[1] * 1]
        pads = (total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2)
    elif padding == "valid":
        pads = (0, 0, 0, 0)
    else:
        ph, pw = (padding, padding) if isinstance(padding, int) else padding
        pads = (ph, ph, pw, pw)
    expected = conv2d_reference(x, w, b, s, pads, d, groups)
    assert out.shape == expected.shape
    assert numpy.allclose(host(out), expected)
    if padding == "same":
        assert out.shape[2:] == x.shape[2:]


def test_conv2d_unbatched_no_bias_and_errors(device):
    x, w = randn(2, 5, 5), randn(3, 2, 3, 3)
    out = F.conv2d(make(x, device), make(w, device))
    assert out.shape == (3, 3, 3)
    assert numpy.allclose(host(out), conv2d_reference(x[None], w, None, (1, 1), (0,) * 4, (1, 1), 1)[0])
    with pytest.raises(RuntimeError, match=r"Given groups=1, weight of size \[3, 2, 3, 3\], expected "
                                           r"input\[1, 4, 5, 5\] to have 2 channels, but got 4 channels instead"):
        F.conv2d(make(randn(1, 4, 5, 5), device), make(w, device))
    with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input size"):
        F.conv2d(make(randn(1, 2, 2, 2), device), make(w, device))
    with pytest.raises(RuntimeError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(make(x, device), make(w, device), stride=2, padding="same")


def test_conv2d_gradients(device):
    x, w, b = make(randn(1, 4, 5, 4), device, True), make(randn(2, 2, 2, 3), device, True), make(randn(2), device,
                                                                                                 True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                     (x, w, b))
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding="same"), (make(randn(1, 2, 3, 3), device, True),
                                                                   make(randn(1, 2, 2, 2), device, True)))


def test_conv2d_second_order_gradient(device):
    """d/dw of <d sum(conv^2)/dx, v>: autograd through the unfold/fold backward vs central differences."""
    x, v = randn(1, 1, 4, 4), randn(1, 1, 4, 4)
    w = randn(1, 1, 2, 2)

    def inner(weights, create_graph=False):
        xt = make(x, device, True)
        first = agnostic.autograd.grad((F.conv2d(xt, weights) ** 2).sum(), xt, create_graph=create_graph)[0]
        return (first * make(v, device)).sum()

    wt = make(w, device, True)
    analytic = host(agnostic.autograd.grad(inner(wt, create_graph=True), wt)[0])
    numeric = numpy.zeros_like(w)
    for index in numpy.ndindex(*w.shape):
        shifted = [w.copy(), w.copy()]
        shifted[0][index] += 1e-6
        shifted[1][index] -= 1e-6
        values = [inner(make(s, device, True)).item() for s in shifted]
        numeric[index] = (values[0] - values[1]) / 2e-6
    assert numpy.allclose(analytic, numeric, rtol=1e-5, atol=1e-6)


def test_unfold_and_fold(device):
    x = randn(2, 3, 5, 4)
    columns = F.unfold(make(x, device), (2, 3), dilation=1, padding=1, stride=(2, 1))
    assert columns.shape == (2, 3 * 6, 3 * 4)
    weights = randn(1, 3, 2, 3)
    via_matmul = (weights.reshape(1, -1) @ host(columns)).reshape(2, 1, 3, 4)
    assert numpy.allclose(via_matmul, conv2d_reference(x, weights, None, (2, 1), (1, 1, 1, 1), (1, 1), 1))
    ones = make(numpy.ones((1, 1, 4, 4)), device)
    counts = F.fold(F.unfold(ones, 2, stride=1), (4, 4), 2, stride=1)
    assert host(counts)[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]
    assert gradcheck(lambda t: F.fold(t, (3, 3), 2), (make(randn(1, 4, 4), device, True),))


# ----- pooling ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel, stride, padding, dilation, ceil_mode", [
    (2, None, 0, 1, False), (3, 2, 1, 1, False), ((3, 2), (2, 1), (1, 0), (1, 2), False), (2, 2, 0, 1, True),
    (3, 2, 1, 1, True),
])
def test_max_pool2d_matches_loops(device, kernel, stride, padding, dilation, ceil_mode):
    x = randn(2, 2, 7, 6)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    expected, indices = pool_reference(x, pair(kernel), pair(stride or kernel), pair(padding), pair(dilation),
                                       ceil_mode, "max")
    values, got_indices = F.max_pool2d(make(x, device), kernel, stride, padding, dilation, ceil_mode,
                                       return_indices=True)
    assert values.shape == expected.shape and numpy.allclose(host(values), expected)
    assert got_indices.dtype is agnostic.int64 and numpy.array_equal(host(got_indices), indices)


@pytest.mark.parametrize("kernel, stride, padding, ceil_mode, count_include_pad, divisor", [
    (2, None, 0, False, True, None), (3, 2, 1, False, True, None), (3, 2, 1, False, False, None),
    (3, 2, 1, True, True, None), (3, 2, 1, True, False, None), ((2, 3), (1, 2), (1, 1), False, True, 5),
])
def test_avg_pool2d_matches_loops(device, kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    x = randn(2, 3, 6, 7)
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    expected, _ = pool_reference(x, pair(kernel), pair(stride or kernel), pair(padding), (1, 1), ceil_mode, "avg",
                                 count_include_pad, divisor)
    got = F.avg_pool2d(make(x, device), kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    assert got.shape == expected.shape and numpy.allclose(host(got), expected)


def test_pooling_gradients_and_errors(device):
    x = make(RNG.permutation(50).reshape(1, 2, 5, 5) / 7.0, device, True)  # distinct values: no ties
    assert gradcheck(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False), (x,))
    unbatched = F.max_pool2d(make(randn(2, 4, 4), device), 2)
    assert unbatched.shape == (2, 2, 2)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(2x5x5\). Calculated output size: \(2x0x0\). "
                                           r"Output size is too small"):
        F.avg_pool2d(x, 6)


def test_max_pool_gradient_goes_to_the_maximum(device):
    x = make([[[[1.0, 5.0], [3.0, 2.0]]]], device, True)
    F.max_pool2d(x, 2).sum().backward()
    assert host(x.grad).tolist() == [[[[0.0, 1.0], [0.0, 0.0]]]]


# ----- normalization -------------------------------------------------------------------------------------------

def test_batch_norm_training_and_eval(device):
    x = randn(4, 3, 2, 2)
    mean, var = make(numpy.zeros(3), device), make(numpy.ones(3), device)
    w, b = randn(3), randn(3)
    out = F.batch_norm(make(x, device), mean, var, make(w, device), make(b, device), training=True, momentum=0.2)
    mu, sigma2 = x.mean((0, 2, 3)), x.var((0, 2, 3))
    shape = (1, 3, 1, 1)
    expected = (x - mu.reshape(shape)) / numpy.sqrt(sigma2.reshape(shape) + 1e-5) * w.reshape(shape) + b.reshape(shape)
    assert numpy.allclose(host(out), expected)
    assert numpy.allclose(host(mean), 0.2 * mu)
    assert numpy.allclose(host(var), 0.8 + 0.2 * x.var((0, 2, 3), ddof=1))
    evaluated = F.batch_norm(make(x, device), mean, var, training=False, eps=1e-3)
    expected = (x - host(mean).reshape(shape)) / numpy.sqrt(host(var).reshape(shape) + 1e-3)
    assert numpy.allclose(host(evaluated), expected)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training, got input size "
                                         r"agnostic.Size\(\[1, 3\]\)"):
        F.batch_norm(make(randn(1, 3), device), None, None, training=True)


def test_layer_norm(device):
    x, w, b = randn(2, 3, 4), randn(3, 4), randn(3, 4)
    out = F.layer_norm(make(x, device), (3, 4), make(w, device), make(b, device), eps=1e-6)
    mu, var = x.mean((1, 2), keepdims=True), x.var((1, 2), keepdims=True)
    assert numpy.allclose(host(out), (x - mu) / numpy.sqrt(var + 1e-6) * w + b)
    assert numpy.allclose(host(F.layer_norm(make(x, device), 4)), (x - x.mean(-1, keepdims=True)) /
                          numpy.sqrt(x.var(-1, keepdims=True) + 1e-5))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], but "
                                           r"got input of size\[2, 3, 4\]"):
        F.layer_norm(make(x, device), (5,))


def test_normalization_gradients(device):
    x, w, b = make(randn(3, 2, 2), device, True), make(randn(2), device, True), make(randn(2), device, True)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (x, w, b))
    running = (make(randn(2) * 0.1, device), make(numpy.ones(2) * 1.5, device))
    assert gradcheck(lambda x, w, b: F.batch_norm(x, *running, w, b, training=False), (x, w, b))
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (2, 2), w.reshape(1, 2).expand(2, 2), b.reshape(2, 1)
                                                  .expand(2, 2)), (x, w, b))


# ----- embedding, one_hot, dropout, pad -----------------------------------------------------------------------

def test_embedding(device):
    weight = randn(5, 3)
    indices = numpy.array([[0, 2, 4], [2, 2, 1]])
    out = F.embedding(make(indices, device), make(weight, device))
    assert out.shape == (2, 3, 3) and numpy.array_equal(host(out), weight[indices])
    w = make(weight, device, True)
    F.embedding(make(indices, device), w, padding_idx=2).sum().backward()
    expected = numpy.zeros((5, 3))
    numpy.add.at(expected, indices.reshape(-1), 1.0)
    expected[2] = 0.0
    assert numpy.array_equal(host(w.grad), expected)
    w.grad = None
    F.embedding(make(indices, device), w, scale_grad_by_freq=True).sum().backward()
    assert numpy.array_equal(host(w.grad), (expected > 0) | (numpy.arange(5) == 2)[:, None])
    assert gradcheck(lambda w: F.embedding(make(indices, device), w), (w,))  # padding_idx deliberately breaks it
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(make([5], device), w)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of the following "
                                           "scalar types: Long, Int"):
        F.embedding(make([1.0], device), w)


def test_embedding_max_norm_renormalizes_used_rows(device):
    weight = make(numpy.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]]), device)
    out = F.embedding(make([0, 1], device), weight, max_norm=1.0)
    assert numpy.allclose(host(weight)[0], [0.6, 0.8], atol=1e-6) and numpy.allclose(host(weight)[1], [0.3, 0.4])
    assert host(weight)[2].tolist() == [6.0, 8.0] and numpy.allclose(host(out), host(weight)[:2])


def test_one_hot(device):
    out = F.one_hot(make([0, 2, 1], device))
    assert out.dtype is agnostic.int64 and host(out).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(make([[1]], device), 4).shape == (1, 1, 4)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(make([1.0], device))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(make([3], device), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(make([-1], device))


def test_dropout(device):
    x = make(numpy.ones((200, 50)), device)
    agnostic.manual_seed(0)
    out = host(F.dropout(x, 0.3))
    kept = out != 0
    assert numpy.allclose(out[kept], 1 / 0.7) and abs(kept.mean() - 0.7) < 0.02
    assert F.dropout(x, 0.3, training=False) is x
    assert not host(F.dropout(x, 1.0)).any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    y = make(randn(4, 5), device, True)
    agnostic.manual_seed(1)
    mask = host(F.dropout(y, 0.5)) != 0
    agnostic.manual_seed(1)
    F.dropout(y, 0.5).sum().backward()
    assert numpy.array_equal(host(y.grad), mask * 2.0)


def test_dropout_masks_are_device_invariant(device):
    agnostic.manual_seed(7)
    on_cpu = host(F.dropout(agnostic.ones(64, 32), 0.4))
    agnostic.manual_seed(7)
    on_device = host(F.dropout(agnostic.ones(64, 32, device=device), 0.4))
    assert numpy.array_equal(on_cpu, on_device)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_pass_dropout_gives_the_composed_masks_bits(device, dtype):
    # dropout of float32/float64 is one pass (DropoutDraw); bernoulli's mask, divided by the keeping probability and
    # multiplied in, is the reference: the same bits (NaN where an infinity or NaN is dropped), the same gradient,
    # and the generator moved past the same draw
    values = numpy.random.default_rng(4).standard_normal((37, 13)).astype(dtype)
    values[0, :4] = [numpy.inf, -numpy.inf, numpy.nan, -0.0]
    x = make(values, device, True)
    agnostic.manual_seed(9)
    out = F.dropout(x, 0.3)
    after = host(agnostic.rand(3, device=device))
    assert out.grad_fn.name() == "DropoutDrawBackward"
    agnostic.manual_seed(9)
    scales = agnostic.bernoulli(agnostic.empty(37, 13, dtype=getattr(agnostic, dtype), device=device), 0.7)
    scales.div_(0.7)
    expected = host(x.detach() * scales)
    numpy.testing.assert_array_equal(host(out), expected)
    numpy.testing.assert_array_equal(host(agnostic.rand(3, device=device)), after)
    out.backward(agnostic.full_like(out, 3.0))
    numpy.testing.assert_array_equal(host(x.grad), 3.0 * host(scales))
    # create_graph: the gradient is the same dropout again, recorded (d/dy of sum(dropout(y) * y) is 2 scales y)
    agnostic.manual_seed(9)
    y = make(values[1:], device, True)
    (grad,) = agnostic.autograd.grad((F.dropout(y, 0.3) * y).sum(), y, create_graph=True)
    grad.sum().backward()
    numpy.testing.assert_array_equal(host(y.grad), 2 * host(scales)[:36])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_match_numpy(device, mode):
    x = randn(2, 3, 4, 5)
    numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    got = F.pad(make(x, device), (2, 1, 3, 0), mode=mode)
    expected = numpy.pad(x, ((0, 0), (0, 0), (3, 0), (2, 1)), mode=numpy_mode)
    assert numpy.array_equal(host(got), expected)
    assert gradcheck(lambda t: F.pad(t, (1, 2), mode=mode), (make(randn(1, 2, 3), device, True),))


def test_constant_pad(device):
    x = randn(2, 3, 4)
    got = F.pad(make(x, device), (1, 2, 0, 1), value=7.0)
    assert numpy.array_equal(host(got), numpy.pad(x, ((0, 0), (0, 1), (1, 2)), constant_values=7.0))
    cropped = F.pad(make(x, device), (-1, 1, 0, -2))
    assert numpy.array_equal(host(cropped), numpy.pad(x[:, :1, 1:], ((0, 0), (0, 0), (0, 1))))
    assert gradcheck(lambda t: F.pad(t, (1, -1, 2, 0)), (make(randn(2, 3), device, True),))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(make(x, device), (1, 2, 3))
    with pytest.raises(RuntimeError, match="Argument #4: Padding size should be less than the corresponding input "
                                           "dimension"):
        F.pad(make(x, device), (4, 4), mode="reflect")


@pytest.mark.parametrize("arguments, named", [
    (([1.0, 2.0], "weight"), "argument 'input' (position 1) must be Tensor, not list"),
    (("input", 3), "argument 'weight' (position 2) must be Tensor, not int"),
    (("input", "weight", [0.0]), "argument 'bias' (position 3) must be Tensor, not list"),
])
def test_linear_names_an_argument_that_is_not_a_tensor(device, arguments, named):
    """PyTorch's TypeError, not an AttributeError from inside."""
    tensors = {"input": agnostic.ones(1, 2, device=device), "weight": agnostic.ones(3, 2, device=device)}
    with pytest.raises(TypeError, match=re.escape(named)):
        F.linear(*[tensors.get(value, value) if isinstance(value, str) else value for value in arguments])
