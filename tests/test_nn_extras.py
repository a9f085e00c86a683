"""SyncBatchNorm, the batch-norm building blocks, AdaptiveLogSoftmaxWithLoss, fractional max pooling,
CrossMapLRN2d, NLLLoss2d and the Muon optimizer: values against NumPy / hand-computed ones and against PyTorch."""

import os
import pathlib
import sys
import textwrap

import numpy
import pytest

import agnostic
import agnostic.distributed as dist
import agnostic.nn.functional as F

from conftest import run_launcher

ROOT = pathlib.Path(__file__).parent.parent


def _numpy(tensor):
    return tensor.detach().cpu().numpy()


# ----- batch-norm building blocks ---------------------------------------------------------------------------------
def _reference_stats(x, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    mean = x.mean(axes)
    var = x.var(axes)
    return mean, 1 / numpy.sqrt(var + eps), var


def test_batch_norm_stats_and_elemt_match_numpy(device):
    x = numpy.random.default_rng(0).normal(size=(4, 3, 5)) * 3 + 1
    mean, invstd = agnostic.batch_norm_stats(agnostic.tensor(x, device=device), 1e-5)
    want_mean, want_invstd, _ = _reference_stats(x, 1e-5)
    numpy.testing.assert_allclose(_numpy(mean), want_mean, rtol=1e-12)
    numpy.testing.assert_allclose(_numpy(invstd), want_invstd, rtol=1e-12)
    weight, bias = numpy.array([1.0, 2.0, -1.0]), numpy.array([0.5, 0.0, 1.0])
    out = agnostic.batch_norm_elemt(agnostic.tensor(x, device=device), agnostic.tensor(weight, device=device),
                                    agnostic.tensor(bias, device=device), mean, invstd, 1e-5)
    want = (x - want_mean[:, None]) * (want_invstd * weight)[:, None] + bias[:, None]
    numpy.testing.assert_allclose(_numpy(out), want, rtol=1e-10)
    half_mean, _ = agnostic.batch_norm_stats(agnostic.tensor(x, device=device).half(), 1e-5)
    assert half_mean.dtype == agnostic.float32  # PyTorch's CUDA kernels accumulate halves in float32


def test_gathered_stats_equal_the_whole_batch_stats(device):
    x = numpy.random.default_rng(1).normal(size=(7, 2, 3))
    pieces = [x[:2], x[2:7]]
    stats = [agnostic.batch_norm_stats(agnostic.tensor(piece, device=device), 1e-3) for piece in pieces]
    means = agnostic.stack([mean for mean, _ in stats])
    invstds = agnostic.stack([invstd for _, invstd in stats])
    running_mean, running_var = agnostic.zeros(2, device=device, dtype=agnostic.float64), \
        agnostic.ones(2, device=device, dtype=agnostic.float64)
    counts = agnostic.tensor([6.0, 15.0], device=device, dtype=agnostic.float64)
    mean, invstd = agnostic.batch_norm_gather_stats_with_counts(agnostic.tensor(x, device=device), means, invstds,
                                                               running_mean, running_var, 0.1, 1e-3, counts)
    want_mean, want_invstd, want_var = _reference_stats(x, 1e-3)
    numpy.testing.assert_allclose(_numpy(mean), want_mean, rtol=1e-10)
    numpy.testing.assert_allclose(_numpy(invstd), want_invstd, rtol=1e-10)
    numpy.testing.assert_allclose(_numpy(running_mean), 0.1 * want_mean, rtol=1e-10)
    numpy.testing.assert_allclose(_numpy(running_var), 0.9 + 0.1 * want_var * 21 / 20, rtol=1e-10)
    same = agnostic.batch_norm_gather_stats(agnostic.tensor(x, device=device), means[:1].repeat(2, 1),
                                            invstds[:1].repeat(2, 1), None, None, 0.1, 1e-3, 6)
    numpy.testing.assert_allclose(_numpy(same[0]), _numpy(means[0]), rtol=1e-12)
    numpy.testing.assert_allclose(_numpy(same[1]), _numpy(invstds[0]), rtol=1e-10)


def test_backward_building_blocks_give_batch_norms_gradients(device):
    rng = numpy.random.default_rng(2)
    x, g, w = rng.normal(size=(5, 3, 2)), rng.normal(size=(5, 3, 2)), rng.normal(size=3)
    input = agnostic.tensor(x, device=device, requires_grad=True)
    weight = agnostic.tensor(w, device=device, requires_grad=True)
    bias = agnostic.zeros(3, device=device, dtype=agnostic.float64, requires_grad=True)
    F.batch_norm(input, None, None, weight, bias, True, 0.1, 1e-5).backward(agnostic.tensor(g, device=device))
    plain = input.detach()
    mean, invstd = agnostic.batch_norm_stats(plain, 1e-5)
    sum_dy, sum_dy_xmu, grad_weight, grad_bias = agnostic.batch_norm_backward_reduce(
        agnostic.tensor(g, device=device), plain, mean, invstd, weight.detach(), True, True, True)
    numpy.testing.assert_allclose(_numpy(grad_weight), _numpy(weight.grad), rtol=1e-9)
    numpy.testing.assert_allclose(_numpy(grad_bias), _numpy(bias.grad), rtol=1e-9)
    numpy.testing.assert_allclose(_numpy(sum_dy), g.sum((0, 2)), rtol=1e-9)
    grad_input = agnostic.batch_norm_backward_elemt(agnostic.tensor(g, device=device), plain, mean, invstd,
                                                    weight.detach(), sum_dy, sum_dy_xmu,
                                                    agnostic.tensor([10], dtype=agnostic.int32, device=device))
    numpy.testing.assert_allclose(_numpy(grad_input), _numpy(input.grad), rtol=1e-9, atol=1e-12)
    nothing = agnostic.batch_norm_backward_reduce(agnostic.tensor(g, device=device), plain, mean, invstd, None,
                                                  False, False, True)
    assert nothing[:3] == (None, None, None) and nothing[3] is not None


def test_batch_norm_update_stats_matches_pytorch(device):
    torch = pytest.importorskip("torch")
    x = numpy.random.default_rng(3).normal(size=(6, 4, 3)).astype(numpy.float32)
    running = agnostic.zeros(4, device=device), agnostic.ones(4, device=device)
    result = agnostic.batch_norm_update_stats(agnostic.tensor(x, device=device), *running, 0.3)
    torch_running = torch.zeros(4), torch.ones(4)
    want = torch.batch_norm_update_stats(torch.tensor(x), *torch_running, 0.3)
    for ours, theirs in zip(result + running, want + torch_running):
        numpy.testing.assert_allclose(_numpy(ours), theirs.numpy(), rtol=1e-5, atol=1e-6)


# ----- SyncBatchNorm ----------------------------------------------------------------------------------------------
def test_sync_batch_norm_alone_is_batch_norm(device):
    agnostic.manual_seed(0)
    x = agnostic.randn(6, 3, 4, device=device) * 2 + 1
    sync, plain = agnostic.nn.SyncBatchNorm(3).to(device), agnostic.nn.BatchNorm1d(3).to(device)
    with agnostic.no_grad():
        for module in (sync, plain):
            module.weight.copy_(agnostic.tensor([1.0, 2.0, 0.5]))
    for _ in range(2):
        assert agnostic.equal(sync(x), plain(x))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        assert agnostic.equal(getattr(sync, name), getattr(plain, name))
    sync.eval(), plain.eval()
    assert agnostic.equal(sync(x), plain(x))
    with pytest.raises(ValueError, match="at least 2D"):
        sync(agnostic.ones(3, device=device))


def test_convert_sync_batchnorm_shares_parameters_and_skips_instance_norm():
    net = agnostic.nn.Sequential(agnostic.nn.Conv2d(1, 2, 1), agnostic.nn.BatchNorm2d(2),
                                 agnostic.nn.InstanceNorm2d(2), agnostic.nn.Sequential(agnostic.nn.BatchNorm1d(2)))
    weight, running_mean = net[1].weight, net[1].running_mean
    net.eval()
    converted = agnostic.nn.SyncBatchNorm.convert_sync_batchnorm(net, process_group="group")
    assert type(converted[1]) is agnostic.nn.SyncBatchNorm and type(converted[3][0]) is agnostic.nn.SyncBatchNorm
    assert type(converted[2]) is agnostic.nn.InstanceNorm2d
    assert converted[1].weight is weight and converted[1].running_mean is running_mean
    assert converted[1].process_group == "group" and not converted[1].training


_SYNC_WORKER = """
import numpy, agnostic, agnostic.distributed as dist
dist.init_process_group()
rank = dist.get_rank()
rng = numpy.random.default_rng(0)
x, g = rng.normal(size=(8, 3, 2)), rng.normal(size=(8, 3, 2))
rows = slice(0, 3) if rank == 0 else slice(3, 8)  # unequal shards: the merge must weight by counts
full, whole = agnostic.nn.BatchNorm1d(3).double(), agnostic.nn.SyncBatchNorm(3).double()
with agnostic.no_grad():
    for module in (full, whole):
        module.weight.copy_(agnostic.tensor([1.0, -2.0, 0.5])); module.bias.fill_(0.25)
inputs = agnostic.tensor(x, requires_grad=True)
expected = full(inputs)
expected.backward(agnostic.tensor(g))
shard = agnostic.tensor(x[rows], requires_grad=True)
out = whole(shard)
out.backward(agnostic.tensor(g[rows]))
numpy.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy()[rows], rtol=1e-10)
numpy.testing.assert_allclose(shard.grad.numpy(), inputs.grad.numpy()[rows], rtol=1e-9, atol=1e-12)
total = whole.weight.grad.clone()
dist.all_reduce(total)
numpy.testing.assert_allclose(total.numpy(), full.weight.grad.numpy(), rtol=1e-9)
numpy.testing.assert_allclose(whole.running_mean.numpy(), full.running_mean.numpy(), rtol=1e-10)
numpy.testing.assert_allclose(whole.running_var.numpy(), full.running_var.numpy(), rtol=1e-10)
print(f"rank {rank}: sync batch norm ok", flush=True)
dist.destroy_process_group()
"""


@pytest.mark.skipif(not dist.is_mpi_available(), reason="needs mpi4py: pip install 'agnostic-tensor[distributed]'")
def test_sync_batch_norm_across_two_processes_equals_batch_norm_of_the_whole_batch(tmp_path):
    script = tmp_path / "sync_worker.py"
    script.write_text(textwrap.dedent(_SYNC_WORKER))
    command = [sys.executable, "-m", "agnostic.distributed.run", "--nproc-per-node", "2", str(script)]
    result = run_launcher(command, 120, cwd=ROOT, env=dict(os.environ))
    assert result.returncode == 0, result.stderr[-4000:]
    for rank in range(2):
        assert f"rank {rank}: sync batch norm ok" in result.stdout


# ----- NLLLoss2d --------------------------------------------------------------------------------------------------
def test_nll_loss_2d_is_nll_loss(device):
    log_probs = agnostic.tensor(numpy.log(numpy.full((2, 3, 2, 2), 1 / 3)), device=device)
    target = agnostic.tensor([[[0, 1], [2, 0]], [[1, 1], [2, 2]]], device=device)
    loss = agnostic.nn.NLLLoss2d(reduction="sum")(log_probs, target)
    assert isinstance(agnostic.nn.NLLLoss2d(), agnostic.nn.NLLLoss)
    assert loss.item() == pytest.approx(8 * numpy.log(3))


# ----- AdaptiveLogSoftmaxWithLoss ---------------------------------------------------------------------------------
def _adaptive_pair(torch, head_bias):
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[4, 10], div_value=2.0, head_bias=head_bias).double()
    ours = agnostic.nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[4, 10], div_value=2.0, head_bias=head_bias)
    ours.double().load_state_dict({key: agnostic.tensor(value.numpy()) for key, value in theirs.state_dict().items()})
    return ours, theirs


def _softmax_reference(asm, x):
    """Each class's log-probability from the module's own weights, in NumPy (the two-level factorization)."""
    def log_softmax(z):
        z = z - z.max(1, keepdims=True)
        return z - numpy.log(numpy.exp(z).sum(1, keepdims=True))
    head = x @ _numpy(asm.head.weight).T + (_numpy(asm.head.bias) if asm.head.bias is not None else 0)
    head = log_softmax(head)
    pieces = [head[:, :asm.shortlist_size]]
    for i, (to_hidden, to_output) in enumerate(asm.tail):
        cluster = log_softmax(x @ _numpy(to_hidden.weight).T @ _numpy(to_output.weight).T)
        pieces.append(cluster + head[:, asm.shortlist_size + i:asm.shortlist_size + i + 1])
    return numpy.concatenate(pieces, 1)


@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_pytorch_and_numpy(device, head_bias):
    torch = pytest.importorskip("torch")
    ours, theirs = _adaptive_pair(torch, head_bias)
    ours = ours.to(device)
    rng = numpy.random.default_rng(0)
    x, target = rng.normal(size=(7, 8)), numpy.array([0, 5, 19, 3, 12, 7, 10])
    ours_x, theirs_x = agnostic.tensor(x, device=device, requires_grad=True), torch.tensor(x, requires_grad=True)
    result = ours(ours_x, agnostic.tensor(target, device=device))
    expected = theirs(theirs_x, torch.tensor(target))
    full = _softmax_reference(ours, x)
    numpy.testing.assert_allclose(_numpy(result.output), full[numpy.arange(7), target], rtol=1e-12)
    numpy.testing.assert_allclose(_numpy(result.output), expected.output.detach().numpy(), rtol=1e-12)
    assert result.loss.item() == pytest.approx(expected.loss.item(), rel=1e-12)
    result.loss.backward(), expected.loss.backward()
    numpy.testing.assert_allclose(_numpy(ours_x.grad), theirs_x.grad.numpy(), rtol=1e-10, atol=1e-14)
    numpy.testing.assert_allclose(_numpy(ours.tail[1][0].weight.grad), theirs.tail[1][0].weight.grad.numpy(),
                                  rtol=1e-10, atol=1e-14)
    numpy.testing.assert_allclose(_numpy(ours.log_prob(agnostic.tensor(x, device=device))), full, rtol=1e-12)
    assert _numpy(ours.predict(agnostic.tensor(x, device=device))).tolist() == full.argmax(1).tolist()
    single = ours(agnostic.tensor(x[0], device=device), agnostic.tensor(5, device=device))
    assert single.output.shape == () and single.output.item() == pytest.approx(full[0, 5])


def test_adaptive_log_softmax_refuses_bad_arguments():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        agnostic.nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[5, 3])
    asm = agnostic.nn.AdaptiveLogSoftmaxWithLoss(4, 10, cutoffs=[5])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        asm(agnostic.zeros(2, 4), agnostic.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        asm(agnostic.zeros(3, 4), agnostic.tensor([1, 2]))


# ----- fractional max pooling -------------------------------------------------------------------------------------
def _fractional_reference(x, kernel, output, samples):
    """NumPy fractional max pooling of (N, C, *spatial) ``x`` with ATen's intervals (float32 arithmetic) and samples
    per axis in ATen's order (2-D planes read theirs as (width, height))."""
    dims = len(kernel)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    n, c = x.shape[:2]
    result = numpy.empty((n, c) + tuple(output))
    indices = numpy.empty((n, c) + tuple(output), dtype=numpy.int64)
    for i in range(n):
        for j in range(c):
            starts = []
            for axis in range(dims):
                u, size, out, k = samples[i, j, order[axis]], x.shape[2 + axis], output[axis], kernel[axis]
                alpha = numpy.float32(size - k) / numpy.float32(max(out - 1, 1))
                sequence = [int((numpy.float32(t) + u) * alpha) - int(u * alpha) for t in range(out - 1)]
                starts.append(sequence + [size - k])
            for position in numpy.ndindex(*output):
                window = tuple(slice(starts[a][position[a]], starts[a][position[a]] + kernel[a]) for a in range(dims))
                block = x[(i, j) + window]
                best = numpy.unravel_index(numpy.argmax(block), block.shape)
                where = tuple(starts[a][position[a]] + best[a] for a in range(dims))
                result[(i, j) + position] = block[best]
                indices[(i, j) + position] = numpy.ravel_multi_index(where, x.shape[2:])
    return result, indices


@pytest.mark.parametrize("dims, spatial, kernel, output", [(2, (7, 9), (2, 3), (4, 5)), (2, (5, 5), (2, 2), (4, 4)),
                                                           (3, (5, 6, 7), (2, 2, 3), (3, 4, 2))])
def test_fractional_max_pool_matches_numpy_and_pytorch_exactly(device, dims, spatial, kernel, output):
    rng = numpy.random.default_rng(dims)
    x = rng.normal(size=(2, 3) + spatial).astype(numpy.float32)
    samples = rng.random(size=(2, 3, dims)).astype(numpy.float32)
    pool = getattr(F, f"fractional_max_pool{dims}d")
    result, indices = pool(agnostic.tensor(x, device=device), kernel, output_size=output, return_indices=True,
                           _random_samples=agnostic.tensor(samples, device=device))
    want, want_indices = _fractional_reference(x, kernel, output, samples)
    assert numpy.array_equal(_numpy(result), want) and numpy.array_equal(_numpy(indices), want_indices)
    torch = pytest.importorskip("torch")
    theirs, their_indices = getattr(torch.nn.functional, f"fractional_max_pool{dims}d")(
        torch.tensor(x), kernel, output_size=output, return_indices=True, _random_samples=torch.tensor(samples))
    assert numpy.array_equal(_numpy(result), theirs.numpy())
    assert numpy.array_equal(_numpy(indices), their_indices.numpy())


def test_fractional_max_pool_picks_the_last_nan_of_a_window_as_aten_does(device):
    x = numpy.arange(36.0).reshape(1, 1, 6, 6)
    x[0, 0, 1, 1] = x[0, 0, 2, 1] = numpy.nan  # flat positions 7 and 13, both in the first window
    output, indices = F.fractional_max_pool2d(agnostic.tensor(x, device=device), 3, output_size=2,
                                              return_indices=True,
                                              _random_samples=agnostic.full((1, 1, 2), 0.5, device=device))
    assert _numpy(indices)[0, 0, 0, 0] == 13 and numpy.isnan(_numpy(output)[0, 0, 0, 0])
    assert _numpy(indices)[0, 0, 1, 1] == 35


def test_fractional_max_pool_gradient_reaches_the_selected_maxima(device):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(5)
    x, samples = rng.normal(size=(2, 2, 6, 7)), rng.random(size=(2, 2, 2))
    g = rng.normal(size=(2, 2, 3, 4))
    ours = agnostic.tensor(x, device=device, requires_grad=True)
    F.fractional_max_pool2d(ours, 2, output_size=(3, 4), _random_samples=agnostic.tensor(samples, device=device)) \
        .backward(agnostic.tensor(g, device=device))
    theirs = torch.tensor(x, requires_grad=True)
    torch.nn.functional.fractional_max_pool2d(theirs, 2, output_size=(3, 4), _random_samples=torch.tensor(samples)) \
        .backward(torch.tensor(g))
    numpy.testing.assert_array_equal(_numpy(ours.grad), theirs.grad.numpy())


def test_fractional_max_pool_passes_gradcheck(device):
    agnostic.manual_seed(0)
    x = agnostic.randn(1, 2, 5, 5, 5, device=device, dtype=agnostic.float64, requires_grad=True)
    samples = agnostic.rand(1, 2, 3, device=device, dtype=agnostic.float64)
    assert agnostic.autograd.gradcheck(lambda t: F.fractional_max_pool3d(t, 2, output_size=3,
                                                                         _random_samples=samples), (x,))


def test_fractional_max_pool_modules_and_ratio(device):
    agnostic.manual_seed(0)
    x = agnostic.randn(3, 10, 12, device=device)  # unbatched
    output, indices = agnostic.nn.FractionalMaxPool2d(3, output_ratio=(0.5, 0.25), return_indices=True)(x)
    assert output.shape == (3, 5, 3) and indices.shape == (3, 5, 3)
    flat = x.reshape(3, -1)
    assert agnostic.equal(flat.gather(1, indices.reshape(3, -1)).reshape(3, 5, 3), output)
    first, second = agnostic.nn.FractionalMaxPool2d(2, output_size=4)(x), agnostic.nn.FractionalMaxPool2d(2, 4)(x)
    assert first.shape == second.shape == (3, 4, 4)
    with pytest.raises(ValueError, match="either an output size, or a pooling ratio"):
        agnostic.nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        agnostic.nn.FractionalMaxPool3d(2, output_size=2, output_ratio=0.5)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        agnostic.nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="pool height 3 too large relative to input height 5"):
        F.fractional_max_pool2d(agnostic.zeros(1, 1, 5, 5, device=device), 3, output_size=4)
    with pytest.raises(RuntimeError, match="pool time 2 too large relative to input time 5"):
        F.fractional_max_pool3d(agnostic.zeros(1, 1, 5, 5, 5, device=device), 2, output_size=4)
    with pytest.raises(RuntimeError, match="equals to input channel size"):
        F.fractional_max_pool2d(agnostic.zeros(1, 2, 5, 5, device=device), 2, output_size=2,
                                _random_samples=agnostic.rand(1, 3, 2, device=device))


# ----- CrossMapLRN2d ----------------------------------------------------------------------------------------------
def test_cross_map_lrn_matches_the_local_response_norm_formula_on_its_window(device):
    x = numpy.random.default_rng(6).normal(size=(2, 3, 2, 2))
    out = agnostic.nn.CrossMapLRN2d(5, alpha=0.3, beta=0.75, k=2.0)(agnostic.tensor(x, device=device))
    # with at most pre_pad + 1 channels, every channel's window is all of them
    scale = 2.0 + 0.3 / 5 * (x ** 2).sum(1, keepdims=True)
    numpy.testing.assert_allclose(_numpy(out), x * scale ** -0.75, rtol=1e-12)
    with pytest.raises(ValueError, match="Expected input to be 4D"):
        agnostic.nn.CrossMapLRN2d(3)(agnostic.zeros(2, 3, device=device))


@pytest.mark.parametrize("size, channels", [(2, 5), (3, 7), (5, 10), (4, 3)])
def test_cross_map_lrn_matches_pytorch_values_and_gradients(device, size, channels):
    torch = pytest.importorskip("torch")
    rng = numpy.random.default_rng(size)
    x, g = rng.normal(size=(2, channels, 3, 2)), rng.normal(size=(2, channels, 3, 2))
    ours = agnostic.tensor(x, device=device, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    result = agnostic.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(ours)
    expected = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=1.5)(theirs)
    numpy.testing.assert_allclose(_numpy(result), expected.detach().numpy(), rtol=1e-12)
    result.backward(agnostic.tensor(g, device=device)), expected.backward(torch.tensor(g))
    numpy.testing.assert_allclose(_numpy(ours.grad), theirs.grad.numpy(), rtol=1e-10, atol=1e-14)
    assert repr(agnostic.nn.CrossMapLRN2d(size)) == repr(torch.nn.CrossMapLRN2d(size))


# ----- Muon -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
@pytest.mark.parametrize("nesterov, adjust_lr_fn", [(True, None), (False, "match_rms_adamw"),
                                                    (True, "spectral_unclamped")])
def test_muon_trajectory_matches_pytorch(device, shape, nesterov, adjust_lr_fn):
    # PyTorch's Muon: 2.9 and later; its "spectral_unclamped" adjustment: 2.14 and later
    torch = pytest.importorskip("torch", minversion="2.14" if adjust_lr_fn == "spectral_unclamped" else "2.9")
    rng = numpy.random.default_rng(0)
    w, x = rng.normal(size=shape).astype(numpy.float32), rng.normal(size=(8, shape[1])).astype(numpy.float32)
    ours = agnostic.nn.Parameter(agnostic.tensor(w, device=device))
    theirs = torch.nn.Parameter(torch.tensor(w))
    ours_optimizer = agnostic.optim.Muon([ours], lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust_lr_fn)
    theirs_optimizer = torch.optim.Muon([theirs], lr=0.02, nesterov=nesterov, adjust_lr_fn=adjust_lr_fn)
    for _ in range(5):
        ours_optimizer.zero_grad(), theirs_optimizer.zero_grad()
        (agnostic.tensor(x, device=device) @ ours.T).sin().sum().backward()
        (torch.tensor(x) @ theirs.T).sin().sum().backward()
        ours_optimizer.step(), theirs_optimizer.step()
    numpy.testing.assert_allclose(_numpy(ours), theirs.detach().numpy(), rtol=1e-5, atol=1e-6)
    numpy.testing.assert_allclose(_numpy(ours_optimizer.state[ours]["momentum_buffer"]),
                                  theirs_optimizer.state[theirs]["momentum_buffer"].numpy(), rtol=1e-5, atol=1e-6)


def test_muon_orthogonalizes_the_update(device):
    # one step from zero momentum without weight decay moves w by lr * NS(g), whose singular values are near 1
    rng = numpy.random.default_rng(1)
    w = agnostic.nn.Parameter(agnostic.zeros(4, 6, device=device))
    w.grad = agnostic.tensor(rng.normal(size=(4, 6)).astype(numpy.float32), device=device)
    agnostic.optim.Muon([w], lr=1.0, weight_decay=0.0, nesterov=False).step()
    singular = numpy.linalg.svd(_numpy(w), compute_uv=False)
    assert numpy.all((singular > 0.5) & (singular < 1.5)), singular


def test_muon_refuses_what_pytorch_refuses():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        agnostic.optim.Muon([agnostic.nn.Parameter(agnostic.zeros(3))])
    with pytest.raises(ValueError, match="Learning rate should be >= 0"):
        agnostic.optim.Muon([agnostic.nn.Parameter(agnostic.zeros(2, 2))], lr=-1.0)
    with pytest.raises(ValueError, match="Adjust learning rate function cosine is not supported"):
        agnostic.optim.Muon([agnostic.nn.Parameter(agnostic.zeros(2, 2))], adjust_lr_fn="cosine")
    w = agnostic.nn.Parameter(agnostic.zeros(2, 2))
    w.grad = agnostic.ones(2, 2)
    with pytest.raises(ValueError, match="less than 100"):
        agnostic.optim.Muon([w], ns_steps=100).step()
