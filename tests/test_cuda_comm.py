"""agnostic.cuda.comm: torch.cuda.comm's broadcast, reduce, scatter and gather, over NCCL or peer copies."""

import numpy
import pytest

import agnostic
from agnostic.cuda import comm
from agnostic.cuda.streams import Stream

from conftest import CUDA_DEVICES

two_gpus = pytest.mark.skipif(len(CUDA_DEVICES) < 2, reason="needs two CUDA devices")


@pytest.fixture(params=["auto", "peer"])
def path(request, monkeypatch):
    """Each implementation: NCCL where CuPy has it ('auto'), and peer copies only ('peer')."""
    if request.param == "peer":
        monkeypatch.setattr(comm, "_nccl_module", None)
    return request.param


def _values(tensor):
    return tensor.cpu().numpy()


def _same(tensor, expected, device):
    assert tensor.device == agnostic.device(device)
    numpy.testing.assert_array_equal(_values(tensor), _values(expected) if isinstance(expected, agnostic.Tensor)
                                     else expected)


# ----- argument errors (no GPU needed) -----------------------------------------------------------------------

def test_broadcast_argument_errors():
    t = agnostic.ones(3)
    with pytest.raises(RuntimeError, match="Exactly one of 'devices' and 'out'"):
        comm.broadcast(t)
    with pytest.raises(RuntimeError, match="Exactly one of 'devices' and 'out'"):
        comm.broadcast(t, [0], out=[t])
    with pytest.raises(RuntimeError, match="output tensor at index 0 has device 'cpu'"):
        comm.broadcast(t, out=[agnostic.ones(3)])
    with pytest.raises(ValueError, match="Expected a cuda device"):
        comm.broadcast(t, ["cpu"])
    with pytest.raises(RuntimeError, match=r"All tensors must be on devices\[0\]: 0"):
        comm.broadcast_coalesced([t], [0, 1])


def test_reduce_and_gather_need_gpu_inputs():
    with pytest.raises(AssertionError, match="reduce_add expects all inputs to be on GPUs"):
        comm.reduce_add([agnostic.ones(2), agnostic.ones(2)])
    with pytest.raises(RuntimeError, match="Expected all input tensors to be CUDA tensors, but tensor at index 0"):
        comm.gather([agnostic.ones(2)], destination="cpu")
    with pytest.raises(RuntimeError, match="at least one tensor to gather"):
        comm.gather([], destination="cpu")
    with pytest.raises(RuntimeError, match="'destination' must not be specified"):
        comm.gather([agnostic.ones(2)], destination=0, out=agnostic.ones(2))


def test_scatter_argument_errors():
    t = agnostic.ones(6, 2)
    with pytest.raises(RuntimeError, match="'devices' must not be specified"):
        comm.scatter(t, [0], out=[t])
    with pytest.raises(RuntimeError, match="'chunk_sizes' must not be specified"):
        comm.scatter(t, chunk_sizes=[6], out=[t])
    with pytest.raises(RuntimeError, match="Exactly one of 'devices' and 'out'"):
        comm.scatter(t)
    with pytest.raises(RuntimeError, match="at least one device"):
        comm.scatter(t, [])
    with pytest.raises(RuntimeError, match=r"len\(devices\) = 2 and len\(chunk_sizes\) = 1"):
        comm.scatter(t, [0, 0], chunk_sizes=[6])
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 6"):
        comm.scatter(t, [0, 0], chunk_sizes=[2, 3])
    with pytest.raises(RuntimeError, match="non-negative entries"):
        comm.scatter(t, [0, 0], chunk_sizes=[7, -1])
    with pytest.raises(IndexError, match="Dimension out of range"):
        comm.scatter(t, [0], dim=2)
    with pytest.raises(RuntimeError, match="output tensor at index 0 has device 'cpu'"):
        comm.scatter(t, out=[agnostic.ones(6, 2)])
    with pytest.raises(RuntimeError, match="at least one output tensor"):
        comm.scatter(t, out=[])


# ----- one GPU ----------------------------------------------------------------------------------------------

def test_broadcast_on_one_gpu(cuda_device, path):
    index = cuda_device.index
    t = agnostic.arange(12, dtype=agnostic.float32, device=cuda_device).reshape(3, 4)
    (same,) = comm.broadcast(t, [index])
    assert same is t
    first, second = comm.broadcast(t, [cuda_device, f"cuda:{index}"])
    assert first is t and second is t                               # the source device gets the source itself
    (copy,) = comm.broadcast(t.cpu(), [index])
    _same(copy, t, cuda_device)
    out = agnostic.empty(3, 4, device=cuda_device)
    assert comm.broadcast(t, out=[out])[0] is out
    _same(out, t, cuda_device)
    with pytest.raises(RuntimeError, match="same shape as the source tensor"):
        comm.broadcast(t, out=[agnostic.empty(4, 3, device=cuda_device)])


def test_broadcast_coalesced_on_one_gpu(cuda_device, path):
    tensors = [agnostic.arange(5, device=cuda_device), agnostic.ones(2, 2, device=cuda_device),
               agnostic.full((3,), 7, dtype=agnostic.int32, device=cuda_device)]
    (same,) = comm.broadcast_coalesced(tensors, [cuda_device.index])
    assert all(a is b for a, b in zip(same, tensors))
    originals, copies = comm.broadcast_coalesced(tensors, [cuda_device.index] * 2, buffer_size=16)
    assert all(a is b for a, b in zip(originals, tensors))
    for copy, tensor in zip(copies, tensors):
        assert copy.dtype == tensor.dtype and copy.shape == tensor.shape
        _same(copy, tensor, cuda_device)


def test_reduce_add_on_one_gpu(cuda_device, path):
    a = agnostic.arange(6, dtype=agnostic.float32, device=cuda_device).reshape(2, 3)
    b = agnostic.full((2, 3), 10.0, device=cuda_device)
    assert comm.reduce_add([a], destination=cuda_device.index) is a
    _same(comm.reduce_add([a, b], destination=cuda_device), a + b, cuda_device)
    with pytest.raises(ValueError, match="input 1 has invalid size: got 3x2, but expected 2x3"):
        comm.reduce_add([a, b.reshape(3, 2)], destination=cuda_device.index)
    sums = comm.reduce_add_coalesced([[a, b.long()], [b, a.long()]], destination=cuda_device.index, buffer_size=8)
    _same(sums[0], a + b, cuda_device)
    assert sums[1].dtype == agnostic.int64
    _same(sums[1], (a + b).long(), cuda_device)


def test_scatter_on_one_gpu(cuda_device, path):
    index = cuda_device.index
    t = agnostic.arange(40, dtype=agnostic.float32).reshape(10, 4)
    pieces = comm.scatter(t, [index, index], chunk_sizes=[4, 6])
    assert [tuple(p.shape) for p in pieces] == [(4, 4), (6, 4)]
    _same(pieces[1], t[4:], cuda_device)
    side = Stream(cuda_device)
    pieces = comm.scatter(t, [index, index, index], dim=1, streams=[side, None, None])
    side.synchronize()                                              # the copy ran on side, as asked
    assert [tuple(p.shape) for p in pieces] == [(10, 2), (10, 2)]     # chunk's sizes: fewer pieces than devices
    _same(pieces[0], t[:, :2], cuda_device)
    on_gpu = t.to(cuda_device)
    (view,) = comm.scatter(on_gpu, [index])
    assert view.data_ptr() == on_gpu.data_ptr()                     # the source device keeps a view
    out = [agnostic.empty(3, 4, device=cuda_device), agnostic.empty(7, 4, device=cuda_device)]
    assert all(a is b for a, b in zip(comm.scatter(t, out=out), out))
    _same(out[0], t[:3], cuda_device)
    _same(out[1], t[3:], cuda_device)
    with pytest.raises(RuntimeError, match="Total size for output tensors along scatter dim 0"):
        comm.scatter(t, out=[agnostic.empty(3, 4, device=cuda_device)])
    with pytest.raises(RuntimeError, match="Output tensor at index 0 has incorrect shape"):
        comm.scatter(t, out=[agnostic.empty(10, 3, device=cuda_device)])


def test_gather_on_one_gpu(cuda_device):
    a = agnostic.arange(6, dtype=agnostic.float32, device=cuda_device).reshape(2, 3)
    b = agnostic.ones(4, 3, device=cuda_device)
    expected = numpy.concatenate([_values(a), _values(b)])
    _same(comm.gather([a, b], destination=cuda_device.index), expected, cuda_device)
    _same(comm.gather([a, b], destination="cpu"), expected, "cpu")
    with pytest.warns(UserWarning, match="deprecated"):
        _same(comm.gather([a, b], destination=-1), expected, "cpu")
    _same(comm.gather([a, a], dim=1, destination=cuda_device), numpy.concatenate([_values(a)] * 2, 1), cuda_device)
    out = agnostic.empty(6, 3)
    assert comm.gather([a, b], out=out) is out
    _same(out, expected, "cpu")
    with pytest.raises(RuntimeError, match=r"Expected out tensor to have shape \[6, 3\], but got \[5, 3\]"):
        comm.gather([a, b], out=agnostic.empty(5, 3))
    with pytest.raises(RuntimeError, match=r"Input tensor at index 1 has invalid shape \[2, 4\]"):
        comm.gather([a, agnostic.ones(2, 4, device=cuda_device)], destination=cuda_device.index)


# ----- two GPUs ---------------------------------------------------------------------------------------------

@two_gpus
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "bool", "complex64"])
def test_broadcast_to_two_gpus(path, dtype):
    source = (agnostic.arange(12, device="cuda:0").reshape(3, 4) % 3).to(getattr(agnostic, dtype))
    results = comm.broadcast(source, [0, 1])
    assert results[0] is source
    _same(results[1], source, "cuda:1")
    assert results[1].dtype == source.dtype
    for device, result in zip(("cuda:1", "cuda:0"), comm.broadcast(source.cpu(), [1, "cuda:0"])):
        _same(result, source, device)
    _same(comm.broadcast(source.t(), [0, 1])[1], source.t(), "cuda:1")      # non-contiguous source
    out = [agnostic.empty(3, 4, dtype=source.dtype, device="cuda:1")]
    comm.broadcast(source, out=out)
    _same(out[0], source, "cuda:1")
    if path == "auto" and comm._nccl() is not None:
        assert (0, 1) in comm._communicators                          # NCCL did it, and keeps its communicator


@two_gpus
def test_broadcast_coalesced_to_two_gpus(path):
    tensors = [agnostic.arange(3, dtype=agnostic.float32, device="cuda:0"),
               agnostic.arange(4, device="cuda:0").reshape(2, 2),
               agnostic.full((5,), 2.5, device="cuda:0"),
               agnostic.ones(4, dtype=agnostic.float16, device="cuda:0"),
               agnostic.tensor(3.0, device="cuda:0")]
    originals, copies = comm.broadcast_coalesced(tensors, [0, 1], buffer_size=16)
    assert all(a is b for a, b in zip(originals, tensors))
    for copy, tensor in zip(copies, tensors):
        assert copy.dtype == tensor.dtype and copy.shape == tensor.shape
        _same(copy, tensor, "cuda:1")


@two_gpus
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16", "int16", "complex64"])
def test_reduce_add_from_two_gpus(path, dtype):
    a = agnostic.arange(12, device="cuda:0").reshape(3, 4).to(getattr(agnostic, dtype))
    b = (agnostic.arange(12, device="cuda:1").reshape(3, 4) * 2).to(getattr(agnostic, dtype))
    expected = _values(a) + _values(b)
    with agnostic.cuda.device(0):
        total = comm.reduce_add([a, b])
    assert total.dtype == a.dtype
    _same(total, expected, "cuda:0")
    _same(comm.reduce_add([a, b], destination=1), expected, "cuda:1")
    with pytest.raises(RuntimeError, match="destination to be on the same GPU"):
        comm.reduce_add([a, a.to("cuda:0")], destination=1)


@two_gpus
def test_reduce_add_coalesced_from_two_gpus(path):
    def make(device, scale):
        return [agnostic.arange(3, dtype=agnostic.float32, device=device) * scale,
                agnostic.arange(4, device=device).reshape(2, 2) * scale,
                agnostic.full((5,), 1.5 * scale, device=device)]
    first, second = make("cuda:0", 1), make("cuda:1", 10)
    sums = comm.reduce_add_coalesced([first, second], destination=1, buffer_size=16)
    assert len(sums) == 3
    for total, a, b in zip(sums, first, second):
        assert total.dtype == a.dtype and total.shape == a.shape
        _same(total, _values(a) + _values(b), "cuda:1")


@two_gpus
def test_scatter_to_two_gpus(path):
    t = agnostic.arange(30, dtype=agnostic.float32).reshape(10, 3)
    for source in (t, t.to("cuda:0")):
        streams = [Stream(0), Stream(1)]
        pieces = comm.scatter(source, [0, 1], chunk_sizes=[3, 7], streams=streams)
        for s in streams:
            s.synchronize()                                         # the copies ran on the given streams
        assert [tuple(p.shape) for p in pieces] == [(3, 3), (7, 3)]
        _same(pieces[0], t[:3], "cuda:0")
        _same(pieces[1], t[3:], "cuda:1")
    left, right = comm.scatter(t, ["cuda:1", "cuda:0"], dim=1)
    assert tuple(left.shape) == (10, 2) and tuple(right.shape) == (10, 1)
    _same(left, t[:, :2], "cuda:1")
    _same(right, t[:, 2:], "cuda:0")
    out = [agnostic.empty(4, 3, device="cuda:0"), agnostic.empty(6, 3, device="cuda:1")]
    side = Stream(1)
    comm.scatter(t, out=out, streams=[None, side])
    side.synchronize()
    _same(out[0], t[:4], "cuda:0")
    _same(out[1], t[4:], "cuda:1")
    with pytest.raises(RuntimeError, match=r"stream at index 0 \(was 1\) to match the device supplied at that index"):
        comm.scatter(t, [0, 1], streams=[Stream(1), None])


@two_gpus
def test_gather_from_two_gpus():
    a = agnostic.arange(6, dtype=agnostic.float32, device="cuda:0").reshape(2, 3)
    b = agnostic.ones(4, 3, device="cuda:1")
    expected = numpy.concatenate([_values(a), _values(b)])
    with agnostic.cuda.device(1):
        _same(comm.gather([a, b]), expected, "cuda:1")              # default: the current device
    _same(comm.gather([a, b], destination=0), expected, "cuda:0")
    _same(comm.gather([a, b], destination="cpu"), expected, "cpu")
    _same(comm.gather([b, b.to("cuda:0")], dim=1, destination=1), numpy.ones((4, 6)), "cuda:1")
    out = agnostic.empty(6, 3, device="cuda:1")
    comm.gather([a, b], out=out)
    _same(out, expected, "cuda:1")
