"""agnostic.cuda streams and events: torch.cuda's Stream, Event and stream() over CuPy's, so work runs where asked."""

import pytest

import agnostic
from agnostic import _streams
from agnostic.cuda import streams
from agnostic.cuda.streams import (
    Event, Stream, StreamContext, current_blas_handle, current_stream, default_stream, ipc_collect, set_stream,
    stream,
)

from conftest import CUDA_DEVICES
from test_no_cuda import run_python

no_cuda_only = pytest.mark.skipif(bool(CUDA_DEVICES), reason="checks behaviour on machines without CUDA")
two_gpus = pytest.mark.skipif(len(CUDA_DEVICES) < 2, reason="needs two CUDA devices")


def _busy(device, rounds=6):
    """Queue large matrix products on the current stream (a few hundred ms of GPU work); returns the result."""
    x = agnostic.ones(8192, 8192, device=device)
    for _ in range(rounds):
        x = x @ x * (1.0 / 8192)
    return x


# ----- without a GPU -----------------------------------------------------------------------------------------

@no_cuda_only
@pytest.mark.parametrize("call", [
    Stream, lambda: Stream(0), current_stream, default_stream, current_blas_handle, Stream.priority_range,
    lambda: Event(interprocess=True).ipc_handle(),
], ids=["Stream()", "Stream(0)", "current_stream", "default_stream", "current_blas_handle", "priority_range",
        "ipc_handle"])
def test_cuda_stream_calls_raise_without_cuda(call):
    with pytest.raises(RuntimeError, match="CuPy|CUDA"):
        call()


def test_none_streams_are_no_ops_everywhere():
    with stream(None):
        pass
    with StreamContext(None):
        pass
    assert set_stream(None) is None
    assert ipc_collect() is None


def test_only_cuda_streams_are_accepted():
    with pytest.raises(TypeError, match="agnostic.cuda.Stream"):
        stream(_streams.CpuStream())
    with pytest.raises(TypeError, match="agnostic.cuda.Stream"):
        set_stream(_streams.CpuStream())


def test_events_are_created_lazily():
    event = Event()
    assert event.query() is True                  # never recorded: nothing to wait for, as in PyTorch
    assert event.synchronize() is None
    assert event.wait() is None
    assert event.cuda_event == 0 and event.device is None and event.cupy_event is None
    assert repr(event) == "<agnostic.cuda.Event uninitialized>"
    assert isinstance(event, _streams.Event)


def test_event_timing_and_ipc_rules():
    with pytest.raises(ValueError, match="enable_timing=True"):
        Event().elapsed_time(Event())
    with pytest.raises(ValueError, match="enable_timing=True"):  # interprocess events never time, as in CUDA
        Event(enable_timing=True, interprocess=True).elapsed_time(Event(enable_timing=True, interprocess=True))
    with pytest.raises(ValueError, match="recorded"):
        Event(enable_timing=True).elapsed_time(Event(enable_timing=True))
    with pytest.raises(RuntimeError, match="interprocess=True"):
        Event().ipc_handle()


# ----- on a GPU ----------------------------------------------------------------------------------------------

def test_ops_inside_stream_run_on_it(cuda_device):
    import cupy

    agnostic.cuda.synchronize(cuda_device)
    s = Stream(cuda_device)
    assert s.device == cuda_device and isinstance(s.cupy_stream, cupy.cuda.Stream)
    assert isinstance(s, _streams.Stream)
    before = current_stream(cuda_device)
    with stream(s):
        assert cupy.cuda.get_current_stream() == s.cupy_stream
        assert cupy.cuda.runtime.getDevice() == cuda_device.index
        assert current_stream() == s and current_stream(cuda_device) == s
        x = _busy(cuda_device)
        assert not s.query(), "the kernels must be queued on s, and still be running"
        assert default_stream(cuda_device).query(), "nothing may land on the default stream"
    assert current_stream(cuda_device) == before
    s.synchronize()
    assert s.query()
    assert x.device == cuda_device
    assert x[0, 0].item() == 1.0


def test_stream_switches_to_its_device_and_restores(cuda_device):
    previous_device = agnostic.cuda.current_device()
    s = Stream(cuda_device)
    with stream(s):
        assert agnostic.cuda.current_device() == cuda_device.index
        assert current_stream() == s
        y = agnostic.arange(4, device="cuda") * 2                   # 'cuda' is the stream's device inside
        assert y.device == cuda_device
    assert agnostic.cuda.current_device() == previous_device
    s.synchronize()                                                 # y was computed on s, a non-blocking stream
    assert y.tolist() == [0, 2, 4, 6]


@two_gpus
def test_stream_on_another_device_restores_both_devices_streams():
    with agnostic.cuda.device(0):
        previous_0, previous_1 = current_stream(0), current_stream(1)
        s1 = Stream(1)
        with stream(s1):
            assert agnostic.cuda.current_device() == 1
            assert current_stream() == s1 and current_stream(1) == s1
            assert current_stream(0) == previous_0
        assert agnostic.cuda.current_device() == 0
        assert current_stream(0) == previous_0 and current_stream(1) == previous_1


def test_set_stream_switches_device_and_stream(cuda_device):
    previous_device = agnostic.cuda.current_device()
    previous = current_stream(cuda_device)
    s = Stream(cuda_device)
    try:
        set_stream(s)
        assert agnostic.cuda.current_device() == cuda_device.index
        assert current_stream() == s
    finally:
        set_stream(previous)
        agnostic.cuda.set_device(previous_device)
    assert current_stream(cuda_device) == previous


def test_wait_stream_orders_work(cuda_device):
    first, second = Stream(cuda_device), Stream(cuda_device)
    with stream(first):
        y = _busy(cuda_device) * 2
    second.wait_stream(first)
    with stream(second):
        z = y + 1
    assert not second.query(), "second's work must wait for first's"
    second.synchronize()
    assert first.query(), "second finished, so the work it waited for on first is done too"
    assert z[0, 0].item() == 3.0


def test_event_record_wait_query_synchronize(cuda_device):
    s, other = Stream(cuda_device), Stream(cuda_device)
    event = Event()
    with stream(s):
        x = _busy(cuda_device)
        recorded = s.record_event(event)
    assert recorded is event
    assert event.device == cuda_device and event.cuda_event != 0
    assert not event.query()
    other.wait_event(event)
    with stream(other):
        y = x + 1
    event.synchronize()
    assert event.query()
    other.synchronize()
    assert y[0, 0].item() == 2.0
    assert s.record_event().device == cuda_device                  # a new event by default


@two_gpus
def test_event_device_is_fixed_by_its_first_record():
    event = Event()
    event.record(Stream(0))
    with pytest.raises(RuntimeError, match="does not match"):
        event.record(Stream(1))
    Stream(1).wait_event(event)                                     # streams of any device may wait on it


def test_elapsed_time_of_real_work(cuda_device):
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    with stream(Stream(cuda_device)):
        start.record()
        _busy(cuda_device)
        end.record()
    end.synchronize()
    assert start.elapsed_time(end) > 0
    with pytest.raises(ValueError, match="enable_timing"):
        Event().elapsed_time(end)


def test_equality_and_hash(cuda_device):
    s, t = Stream(cuda_device), Stream(cuda_device)
    assert s == s and s != t and s != "stream"
    with stream(s):
        current = current_stream()
        assert current == s and current is not s and hash(current) == hash(s)
        assert len({current, s, t}) == 2
    assert default_stream(cuda_device) == default_stream(cuda_device)
    assert current_stream(cuda_device) == default_stream(cuda_device)
    assert f"device={cuda_device}" in repr(s)
    assert s.cuda_stream == s.cupy_stream.ptr != 0


@two_gpus
def test_default_streams_of_two_devices_differ():
    assert default_stream(0) != default_stream(1)                   # same handle value, different devices
    assert len({default_stream(0), default_stream(1)}) == 2


def test_priorities(cuda_device):
    with agnostic.cuda.device(cuda_device):
        least, greatest = Stream.priority_range()
    assert least == 0 and greatest < 0
    assert Stream(cuda_device).priority == 0
    assert Stream(cuda_device, priority=greatest).priority == greatest
    assert Stream(cuda_device, priority=greatest - 100).priority == greatest   # clamped to the range
    assert Stream(cuda_device, priority=5).priority == least


def test_current_blas_handle(cuda_device):
    with agnostic.cuda.device(cuda_device):
        handle = current_blas_handle()
    assert isinstance(handle, int) and handle != 0


def test_event_shared_with_another_process(cuda_device):
    event = Event(interprocess=True)
    with stream(Stream(cuda_device)):
        x = _busy(cuda_device)
        event.record()
    handle = event.ipc_handle()
    assert isinstance(handle, bytes) and len(handle) == 64
    result = run_python(f"""
        from agnostic.cuda.streams import Event
        event = Event.from_ipc_handle({cuda_device.index}, bytes.fromhex("{handle.hex()}"))
        event.synchronize()
        print(event.query(), event.device)
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", str(cuda_device)]
    assert x.device == cuda_device


def test_module_exports_the_torch_names():
    for name in ("Stream", "Event", "StreamContext", "stream", "set_stream", "current_stream", "default_stream",
                 "current_blas_handle", "ipc_collect"):
        assert callable(getattr(streams, name))
