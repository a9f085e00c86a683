"""agnostic.cuda's CUDA graphs (torch.cuda.graphs): capture once, replay with one launch, on private memory; what can't
be captured is refused with a clear error."""

import numpy
import pytest

import agnostic
import agnostic.nn.functional as F
from agnostic.cuda import graphs, memory

from conftest import CUDA_DEVICES
from test_cuda_memory import MiB, fake_cupy, stat

no_cuda_only = pytest.mark.skipif(bool(CUDA_DEVICES), reason="checks behaviour on machines without CUDA")


# ----- without a GPU -------------------------------------------------------------------------------------------------

def test_graph_objects_are_made_without_touching_cuda():
    assert not graphs.capture_in_progress()
    assert not agnostic.cuda.is_current_stream_capturing()
    handle = agnostic.cuda.graph_pool_handle()
    assert handle.device is None and "memory pool" in repr(handle)
    g = agnostic.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="replay\\(\\) needs a captured graph"):
        g.replay()
    with pytest.raises(RuntimeError, match="pool\\(\\) needs a graph that was captured"):
        g.pool()
    with pytest.raises(RuntimeError, match="capture_end\\(\\) without capture_begin"):
        g.capture_end()


def test_capture_modes_are_checked_as_pytorch_checks_them():
    with pytest.raises(RuntimeError, match="Unknown capture error mode"):
        agnostic.cuda.CUDAGraph().capture_begin(capture_error_mode="everything")


@no_cuda_only
def test_capturing_without_cuda_says_why():
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        agnostic.cuda.CUDAGraph().capture_begin()


def test_fake_capture_serves_blocks_from_the_private_pool_and_counts_them_on_the_device():
    cupy = fake_cupy()
    allocator = memory._Allocator(cupy)
    before = allocator.malloc(2 * MiB)
    private = memory.PrivatePools()
    allocator.begin_capture(0, private)
    inside = allocator.malloc(2 * MiB)
    small_inside = allocator.malloc(1000)
    allocator.end_capture(0)
    after = allocator.malloc(2 * MiB)
    assert inside.mem.stats is private.large and small_inside.mem.stats is private.small
    assert after.mem.stats is allocator.state(0).large and before.mem.stats is allocator.state(0).large
    nested = allocator.state(0).nested()
    assert stat(nested, "allocated_bytes")[0] == 6 * MiB + 1024  # current: every block, private ones included
    freed_ptr = inside.ptr
    del inside
    reused = allocator.malloc(2 * MiB)  # outside a capture: never the graph's freed block
    assert reused.ptr != freed_ptr
    allocator.begin_capture(0, private)  # a second capture with the same pool gets it back
    again = allocator.malloc(2 * MiB)
    allocator.end_capture(0)
    assert again.ptr == freed_ptr
    assert {b["state"] for s in allocator.snapshot() for b in s["blocks"]} >= {"active_allocated"}
    assert sum(b["size"] for s in allocator.snapshot() for b in s["blocks"] if b["state"] == "active_allocated") == \
        stat(allocator.state(0).nested(), "allocated_bytes")[0]
    del before, small_inside, after, reused, again


# ----- on a GPU ------------------------------------------------------------------------------------------------------

def _capture(function, pool=None):
    g = agnostic.cuda.CUDAGraph()
    with agnostic.cuda.graph(g, pool=pool):
        result = function()
    return g, result


def test_replay_recomputes_from_the_static_inputs(cuda_device):
    with agnostic.cuda.device(cuda_device):
        x = agnostic.zeros(1000, device=cuda_device)
        g, y = _capture(lambda: (x * 2 + 1).exp().sum())
        for value in (0.5, -1.0, 2.0):
            x.copy_(agnostic.full((1000,), value, device=cuda_device))
            g.replay()
            assert y.item() == pytest.approx(1000 * numpy.exp(2 * value + 1), rel=1e-5)


@pytest.mark.parametrize("shapes", [((64, 30), (30, 20)), ((3, 5, 7), (7, 4)), ((7,), (7, 3)), ((4, 7), (7,)),
                                    ((2, 1, 3, 5), (4, 5, 2)), ((7,), (7,)), ((64, 784), (784, 256)),
                                    ((2, 300, 400), (400, 150))], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64", "int64"])
def test_matrix_products_are_captured(cuda_device, shapes, dtype):
    rng = numpy.random.default_rng(0)
    host_a, host_b = (rng.integers(-3, 4, size=s).astype(dtype) for s in shapes)
    with agnostic.cuda.device(cuda_device):
        a, b = agnostic.tensor(host_a, device=cuda_device), agnostic.tensor(host_b, device=cuda_device)
        g, product = _capture(lambda: a @ b)
        a.mul_(2)
        g.replay()
        expected = numpy.matmul(host_a * 2, host_b)
        numpy.testing.assert_allclose(product.cpu().numpy().astype(expected.dtype), expected,
                                      rtol=1e-3 if dtype == "float16" else 1e-6)


def _mlp(seed, device):
    agnostic.manual_seed(seed)
    return agnostic.nn.Sequential(agnostic.nn.Linear(784, 256), agnostic.nn.ReLU(), agnostic.nn.Linear(256, 256),
                                  agnostic.nn.ReLU(), agnostic.nn.Linear(256, 10)).to(device)


OPTIMIZERS = {
    "SGD": lambda parameters: agnostic.optim.SGD(parameters, lr=0.05, momentum=0.9),
    "Adam capturable": lambda parameters: agnostic.optim.Adam(parameters, lr=1e-3, capturable=True),
    "AdamW capturable amsgrad": lambda parameters: agnostic.optim.AdamW(parameters, lr=1e-3, amsgrad=True,
                                                                        capturable=True),
}


class _LSTMClassifier(agnostic.nn.Module):
    """An LSTM whose last step's output is classified (the training benchmark's model, smaller)."""

    def __init__(self):
        super().__init__()
        self.lstm = agnostic.nn.LSTM(16, 32, batch_first=True)
        self.head = agnostic.nn.Linear(32, 10)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.head(output[:, -1])


def _lstm(seed, device):
    agnostic.manual_seed(seed)
    return _LSTMClassifier().to(device)


class _EncoderClassifier(agnostic.nn.Module):
    """A Transformer encoder layer whose mean token is classified (the training benchmark's model, smaller)."""

    def __init__(self):
        super().__init__()
        self.layer = agnostic.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = agnostic.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(self.layer(x).mean(dim=1))


def _encoder(seed, device):
    agnostic.manual_seed(seed)
    return _EncoderClassifier().to(device)


@pytest.mark.parametrize("make_optimizer", OPTIMIZERS.values(), ids=OPTIMIZERS.keys())
def test_a_captured_training_step_trains_as_the_eager_one(cuda_device, make_optimizer):
    """PyTorch's whole-network capture recipe: warm up on a side stream, capture zero_grad, forward, loss, backward
    and the optimizer's step, then replay with new data copied into the static input."""
    _check_captured_training(cuda_device, _mlp, make_optimizer, (784,))


def test_a_captured_lstm_training_step_trains_as_the_eager_one(cuda_device):
    """The LSTM layer's step kernels and its products (the capturable ones inside the graph) replay as eager runs."""
    _check_captured_training(cuda_device, _lstm, OPTIMIZERS["Adam capturable"], (12, 16))


def test_a_captured_transformer_training_step_trains_as_the_eager_one(cuda_device):
    """Attention's batched products, softmax and layer norms replay as eager runs. With SGD: the key projection's
    bias has a gradient of exactly 0 (softmax ignores a constant added to every score), so its computed gradient is
    rounding noise, which Adam's normalized step would turn into updates of the learning rate's size."""
    _check_captured_training(cuda_device, _encoder, OPTIMIZERS["SGD"], (6, 16))


def _check_captured_training(cuda_device, make_model, make_optimizer, input_shape):
    rng = numpy.random.default_rng(1)
    batches = [(rng.standard_normal((64, *input_shape)).astype(numpy.float32), rng.integers(0, 10, 64))
               for _ in range(8)]
    with agnostic.cuda.device(cuda_device):
        eager, graphed = make_model(0, cuda_device), make_model(0, cuda_device)
        eager_optimizer = make_optimizer(eager.parameters())
        optimizer = make_optimizer(graphed.parameters())
        static_input = agnostic.tensor(batches[0][0], device=cuda_device)
        static_target = agnostic.tensor(batches[0][1], device=cuda_device)

        def step(model, opt, x, y):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        side = agnostic.cuda.Stream()
        side.wait_stream(agnostic.cuda.current_stream())
        with agnostic.cuda.stream(side):
            for x, y in batches[:3]:
                for model, opt in ((graphed, optimizer), (eager, eager_optimizer)):
                    step(model, opt, agnostic.tensor(x, device=cuda_device), agnostic.tensor(y, device=cuda_device))
        agnostic.cuda.current_stream().wait_stream(side)
        g, static_loss = _capture(lambda: step(graphed, optimizer, static_input, static_target))
        for x, y in batches[3:]:
            static_input.copy_(agnostic.tensor(x, device=cuda_device))
            static_target.copy_(agnostic.tensor(y, device=cuda_device))
            g.replay()
            loss = step(eager, eager_optimizer, agnostic.tensor(x, device=cuda_device),
                        agnostic.tensor(y, device=cuda_device))
            assert static_loss.item() == pytest.approx(loss.item(), rel=1e-4)
        for ours, theirs in zip(graphed.parameters(), eager.parameters()):
            numpy.testing.assert_allclose(ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=1e-4,
                                          atol=1e-5)


def test_many_replays_keep_memory_statistics_steady(cuda_device):
    with agnostic.cuda.device(cuda_device):
        x = agnostic.ones(256, 256, device=cuda_device)
        g, y = _capture(lambda: ((x @ x).relu() + 1).sum(0))
        agnostic.cuda.synchronize()
        before = agnostic.cuda.memory_stats(cuda_device)
        for _ in range(200):
            g.replay()
        agnostic.cuda.synchronize()
        after = agnostic.cuda.memory_stats(cuda_device)
        for key in ("allocated_bytes.all.current", "allocation.all.current", "reserved_bytes.all.current",
                    "segment.all.current"):
            assert after[key] == before[key], key
        assert y[0].item() == 257.0 * 256


def test_graphs_sharing_a_pool_replay_in_sequence(cuda_device):
    with agnostic.cuda.device(cuda_device):
        x = agnostic.arange(10.0, device=cuda_device)
        first, middle = _capture(lambda: x * 3)
        second, last = _capture(lambda: middle + 1, pool=first.pool())
        assert second.pool() is first.pool()
        x.copy_(agnostic.ones(10, device=cuda_device))
        first.replay()
        second.replay()
        assert last.tolist() == [4.0] * 10
        first.reset()
        with pytest.raises(RuntimeError, match="needs a captured graph"):
            first.replay()


@pytest.mark.parametrize("work, says", [
    (lambda x: (x * 2).sum().item(), "can't be copied to the host while a CUDA graph captures"),
    (lambda x: bool((x > 0).any()), "can't be copied to the host"),
    (lambda x: x + agnostic.randn(3, device=x.device), "random numbers can't be drawn while a CUDA graph captures"),
    (lambda x: agnostic.linalg.inv(agnostic.eye(3, device=x.device) + x.diag()),  # cuSOLVER and a host read
     "this operation can't be captured in a CUDA graph .*move it before or after the capture"),
], ids=["item", "bool", "randn", "inv"])
def test_what_cannot_be_captured_says_so(cuda_device, work, says):
    with agnostic.cuda.device(cuda_device):
        x = agnostic.ones(3, device=cuda_device)
        g = agnostic.cuda.CUDAGraph()
        with pytest.raises(RuntimeError, match=says):
            with agnostic.cuda.graph(g):
                work(x)
        assert not graphs.capture_in_progress()
        assert (x * 2).sum().item() == 6.0  # the stream works again after the failed capture
        g2, y = _capture(lambda: x + 1)  # and a new capture succeeds
        g2.replay()
        assert y.tolist() == [2.0, 2.0, 2.0]


def test_an_optimizer_with_a_host_step_count_refuses_capture(cuda_device):
    with agnostic.cuda.device(cuda_device):
        model = agnostic.nn.Linear(3, 1).to(cuda_device)
        optimizer = agnostic.optim.Adam(model.parameters())
        model(agnostic.ones(2, 3, device=cuda_device)).sum().backward()
        optimizer.step()
        with pytest.raises(RuntimeError, match="step\\(\\) can't be captured in a CUDA graph"):
            with agnostic.cuda.graph(agnostic.cuda.CUDAGraph()):
                optimizer.step()


def test_capture_needs_a_side_stream(cuda_device):
    with agnostic.cuda.device(cuda_device):
        with pytest.raises(RuntimeError, match="non-default stream"):
            agnostic.cuda.CUDAGraph().capture_begin()
        assert not graphs.capture_in_progress()


def test_graphed_module_gives_eager_outputs_and_gradients(cuda_device):
    rng = numpy.random.default_rng(2)
    with agnostic.cuda.device(cuda_device):
        agnostic.manual_seed(3)
        model = agnostic.nn.Sequential(agnostic.nn.Linear(16, 32), agnostic.nn.Tanh(), agnostic.nn.Linear(32, 4))
        model = model.to(cuda_device)
        reference = agnostic.nn.Sequential(agnostic.nn.Linear(16, 32), agnostic.nn.Tanh(), agnostic.nn.Linear(32, 4))
        reference.load_state_dict(model.state_dict())
        reference = reference.to(cuda_device)
        sample = agnostic.tensor(rng.standard_normal((8, 16)).astype(numpy.float32), device=cuda_device,
                                 requires_grad=True)
        graphed = agnostic.cuda.make_graphed_callables(model, (sample,))
        assert graphed is model
        for _ in range(3):
            host = rng.standard_normal((8, 16)).astype(numpy.float32)
            x = agnostic.tensor(host, device=cuda_device, requires_grad=True)
            x_ref = agnostic.tensor(host, device=cuda_device, requires_grad=True)
            out, out_ref = graphed(x), reference(x_ref)
            numpy.testing.assert_allclose(out.detach().cpu().numpy(), out_ref.detach().cpu().numpy(), rtol=1e-5,
                                          atol=1e-6)
            (out ** 2).sum().backward()
            (out_ref ** 2).sum().backward()
            numpy.testing.assert_allclose(x.grad.cpu().numpy(), x_ref.grad.cpu().numpy(), rtol=1e-4, atol=1e-6)
            for p, q in zip(model.parameters(), reference.parameters()):
                numpy.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.cpu().numpy(), rtol=1e-4, atol=1e-5)
                p.grad = q.grad = None
        model.eval()  # eval mode runs the module eagerly, as PyTorch's graphed modules do
        numpy.testing.assert_allclose(model(sample).detach().cpu().numpy(),
                                      reference(sample).detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("options", [{}, {"amsgrad": True}, {"weight_decay": 0.1}, {"maximize": True},
                                     {"weight_decay": 0.1, "decoupled_weight_decay": True}], ids=str)
def test_capturable_adam_counts_steps_on_the_device_and_updates_as_adam(device, options):
    trajectories = []
    for capturable in (False, True):
        agnostic.manual_seed(0)
        model = agnostic.nn.Linear(5, 3).to(device, agnostic.float64)
        optimizer = agnostic.optim.Adam(model.parameters(), lr=0.05, capturable=capturable, **options)
        x = agnostic.randn(8, 5, dtype=agnostic.float64, device=device)
        for _ in range(10):
            optimizer.zero_grad()
            (model(x) ** 2).sum().backward()
            optimizer.step()
        step = optimizer.state[model.weight]["step"]
        assert step.item() == 10 and step.device == (model.weight.device if capturable else agnostic.device("cpu"))
        trajectories.append([p.detach().cpu().numpy() for p in model.parameters()])
    for eager, on_device in zip(*trajectories):
        # the step count is float32 (as PyTorch's capturable Adam), so the bias corrections round in float32
        numpy.testing.assert_allclose(on_device, eager, rtol=1e-4, atol=1e-5)
