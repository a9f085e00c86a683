"""agnostic.Stream / Event / stream(): one stream API for every device, so device-agnostic code needs no ``if``."""

import time

import pytest

import agnostic
from agnostic._streams import CpuEvent, CpuStream, Event, Stream, current_stream, stream
from agnostic.cuda import streams as cuda_streams

from conftest import CUDA_DEVICES


def _work(device):
    x = agnostic.ones(512, 512, device=device)
    for _ in range(8):
        x = x @ x * (1.0 / 512)
    return x


def test_stream_on_every_device(device):
    s = Stream(device)
    assert s.device == device and isinstance(s, Stream)
    with stream(s):
        assert current_stream(device) == s
        y = _work(device)
    s.synchronize()
    assert s.query()
    assert y.device == device and y[0, 0].item() == 1.0


def test_events_time_and_order_work_on_every_device(device):
    s, other = Stream(device), Stream(device)
    start, end = Event(device, enable_timing=True), Event(device, enable_timing=True)
    start.record(s)
    with stream(s):
        y = _work(device)
    end.record(s)
    other.wait_event(end)
    other.wait_stream(s)
    with stream(other):
        z = y + 1
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) > 0
    other.synchronize()
    assert z[0, 0].item() == 2.0
    assert isinstance(s.record_event(), Event)


def test_none_means_the_current_accelerator_device_or_the_cpu():
    expected = agnostic.device("cuda", agnostic.cuda.current_device()) if CUDA_DEVICES else agnostic.device("cpu")
    assert Stream().device == expected
    assert current_stream().device == expected
    assert Event().query()


def test_cpu_stream_is_synchronous():
    s = Stream("cpu")
    assert isinstance(s, CpuStream)
    assert s.query() is True and s.synchronize() is None
    assert s == Stream("cpu") == current_stream("cpu") and hash(s) == hash(current_stream("cpu"))
    assert s != object() and s.priority == 0
    assert repr(s) == "<agnostic.Stream device=cpu>"
    with stream(s):
        assert agnostic.ones(2).sum().item() == 2.0
    with stream(None):
        pass


def test_cpu_event():
    event = Event("cpu")
    assert isinstance(event, CpuEvent) and event.device == agnostic.device("cpu")
    assert event.query() and event.synchronize() is None and event.wait() is None
    start, end = Event("cpu", enable_timing=True), Event("cpu", enable_timing=True)
    with pytest.raises(ValueError, match="recorded"):
        start.elapsed_time(end)
    start.record()
    time.sleep(0.01)
    end.record(Stream("cpu"))
    assert 5.0 < start.elapsed_time(end) < 5000.0
    with pytest.raises(ValueError, match="enable_timing"):
        event.elapsed_time(end)
    with pytest.raises(RuntimeError, match="CUDA events"):
        event.ipc_handle()


def test_cuda_device_gives_the_cuda_classes(cuda_device):
    s = Stream(cuda_device, priority=-1)
    assert type(s) is cuda_streams.Stream and s.device == cuda_device
    event = Event(cuda_device, enable_timing=True)
    assert type(event) is cuda_streams.Event and event.device == cuda_device
    with pytest.raises(RuntimeError, match="does not match"):
        Event("cpu").record(s)
    assert current_stream(cuda_device) == cuda_streams.current_stream(cuda_device)


def test_cpu_and_gpu_streams_wait_on_each_other(cuda_device):
    cpu, gpu = Stream("cpu"), Stream(cuda_device)
    with stream(gpu):
        y = agnostic.ones(8192, 8192, device=cuda_device) @ agnostic.ones(8192, 8192, device=cuda_device)
    cpu.wait_stream(gpu)                         # the host is the CPU stream's executor: it blocks
    assert gpu.query()
    gpu.wait_stream(cpu)                         # CPU work is done when issued: nothing to wait for
    assert y[0, 0].item() == 8192.0
