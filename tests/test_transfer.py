"""Pinned memory and non_blocking copies: asynchronous where PyTorch is, and never readable before they finish."""

import time

import numpy
import pytest

import agnostic

from conftest import CUDA_DEVICES


def _busy(device, products=12):
    """Queue large matrix products (tens of milliseconds each) on ``device``'s current stream and return an event
    after them."""
    import cupy

    x = agnostic.ones(8192, 8192, device=device)
    for _ in range(products):
        x = x @ x * (1.0 / 8192)
    done = cupy.cuda.get_current_stream().record()
    return x, done


def test_pinning_needs_cuda_without_it():
    if CUDA_DEVICES:
        pytest.skip("this machine has CUDA")
    tensor = agnostic.ones(4)
    assert not tensor.is_pinned()
    with pytest.raises(RuntimeError, match="CUDA is not available|CuPy"):
        tensor.pin_memory()
    with pytest.raises(RuntimeError, match="CUDA is not available|CuPy"):
        agnostic.zeros(3, pin_memory=True)


def test_pin_memory_gives_page_locked_copy(cuda_device):
    pageable = agnostic.arange(10, dtype=agnostic.float32)
    pinned = pageable.pin_memory()
    assert not pageable.is_pinned()
    assert pinned.is_pinned()
    assert pinned.pin_memory() is pinned
    assert pinned.tolist() == pageable.tolist()
    assert agnostic.zeros(5, pin_memory=True).is_pinned()
    assert agnostic.tensor([1, 2], pin_memory=True).is_pinned()
    with pytest.raises(RuntimeError, match="only CPU"):
        agnostic.ones(2, device=cuda_device).pin_memory()


def test_non_blocking_upload_from_pinned_returns_before_the_copy_ends(cuda_device):
    import cupy

    source = agnostic.full((64 * 2 ** 20,), 3.0, pin_memory=True)
    with cupy.cuda.Device(cuda_device.index):
        _, busy_done = _busy(cuda_device)
        uploaded = source.to(cuda_device, non_blocking=True)
        after_copy = cupy.cuda.get_current_stream().record()
        assert not after_copy.done, "a non_blocking copy from pinned memory must not wait for the device"
        assert not busy_done.done
        after_copy.synchronize()
    assert float(uploaded.sum().item()) == 3.0 * 64 * 2 ** 20


def test_non_blocking_upload_from_pageable_memory_is_synchronous(cuda_device):
    import cupy

    source = agnostic.full((16 * 2 ** 20,), 2.0)
    with cupy.cuda.Device(cuda_device.index):
        _, busy_done = _busy(cuda_device)
        uploaded = source.cuda(cuda_device, non_blocking=True)
        assert busy_done.done, "from pageable memory the copy degrades to a synchronous one, as in PyTorch"
    assert float(uploaded.sum().item()) == 2.0 * 16 * 2 ** 20


def test_non_blocking_download_is_asynchronous_and_reads_wait_for_it(cuda_device):
    import cupy

    count = 32 * 2 ** 20
    agnostic.empty(count, pin_memory=True)  # warm the pinned pool: allocating page-locked memory syncs the GPU
    # Load the kernels used below first: loading a kernel module synchronizes the device.
    (agnostic.arange(4, dtype=agnostic.float32, device=cuda_device) + agnostic.ones(1, 1, device=cuda_device)[0, 0]
     ).to("cpu", non_blocking=True).numpy()
    with cupy.cuda.Device(cuda_device.index):
        result, busy_done = _busy(cuda_device)
        values = agnostic.arange(count, dtype=agnostic.float32, device=cuda_device) + result[0, 0]
        started = time.perf_counter()
        host = values.to("cpu", non_blocking=True)
        returned_after = time.perf_counter() - started
        assert not busy_done.done, "the device-to-host copy must not wait for queued work"
        assert host.device == agnostic.device("cpu")
        assert host.is_pinned()
        expected = numpy.arange(count, dtype=numpy.float32) + numpy.float32(result[0, 0].item())
        numpy.testing.assert_array_equal(host.numpy(), expected)  # waits for the copy first
    assert returned_after < 0.5


@pytest.mark.parametrize("read", ["numpy", "item", "tolist", "index", "repr", "op"])
def test_every_host_read_waits_for_an_in_flight_copy(cuda_device, read):
    import cupy

    count = 16 * 2 ** 20
    agnostic.empty(count, pin_memory=True)
    with cupy.cuda.Device(cuda_device.index):
        _busy(cuda_device)
        values = agnostic.full((count,), 7.0, device=cuda_device)
        host = values.to("cpu", non_blocking=True)
        readers = {
            "numpy": lambda t: t.numpy()[-1],
            "item": lambda t: t[-1].item(),
            "tolist": lambda t: t.tolist()[-1],
            "index": lambda t: float(t[count - 1]),
            "repr": lambda t: float(repr(t).split("7.")[0] == "tensor([") * 7.0,
            "op": lambda t: (t + 0)[-1].item(),
        }
        assert readers[read](host) == 7.0


def test_copy_into_pinned_tensor_non_blocking(cuda_device):
    import cupy

    destination = agnostic.zeros(8 * 2 ** 20, pin_memory=True)
    with cupy.cuda.Device(cuda_device.index):
        _busy(cuda_device)
        source = agnostic.full((8 * 2 ** 20,), 5.0, device=cuda_device)
        returned = destination.copy_(source, non_blocking=True)
        assert returned is destination
        assert destination.numpy().min() == 5.0


def test_copy_into_pageable_tensor_is_synchronous_and_exact(device):
    destination = agnostic.zeros(2, 3)
    source = agnostic.tensor([1, 2, 3], device=device)
    destination.copy_(source, non_blocking=True)
    assert destination.tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]]


@pytest.mark.skipif(len(CUDA_DEVICES) < 2, reason="needs two CUDA devices")
def test_copy_between_gpus_is_ordered_after_source_work():
    source = agnostic.arange(2 ** 20, dtype=agnostic.float32, device="cuda:0") * 2
    moved = source.to("cuda:1")
    assert moved.device == agnostic.device("cuda:1")
    numpy.testing.assert_array_equal(moved.cpu().numpy(), numpy.arange(2 ** 20, dtype=numpy.float32) * 2)
    back = moved.t() if moved.ndim > 1 else moved[::2]
    numpy.testing.assert_array_equal(back.to("cuda:0").cpu().numpy(), moved.cpu().numpy()[::2])


@pytest.mark.skipif(not CUDA_DEVICES, reason="needs a CUDA device")
def test_peer_access_is_reported_as_the_runtime_reports_it():
    import cupy

    count = len(CUDA_DEVICES)
    for index in range(count):
        assert agnostic.cuda.can_device_access_peer(index, index) is False
        for peer in range(count):
            if peer != index:
                expected = bool(cupy.cuda.runtime.deviceCanAccessPeer(index, peer))
                assert agnostic.cuda.can_device_access_peer(f"cuda:{index}", peer) is expected
    with pytest.raises(RuntimeError, match="out of range"):
        agnostic.cuda.can_device_access_peer(0, count)
