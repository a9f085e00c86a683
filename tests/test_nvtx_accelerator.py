"""agnostic.cuda.nvtx (profiler annotations that never fail) and agnostic.accelerator (torch.accelerator)."""

import pytest

import agnostic
from agnostic import accelerator
from agnostic.cuda import nvtx, streams

from conftest import CUDA_DEVICES
from test_no_cuda import run_json

no_cuda_only = pytest.mark.skipif(bool(CUDA_DEVICES), reason="checks behaviour on machines without CUDA")


class _Recorder:
    """Stands in for cupy.cuda.nvtx and records what it is asked to do."""

    available = True

    def __init__(self):
        self.calls = []

    def Mark(self, msg):
        self.calls.append(("mark", msg))

    def RangePush(self, msg):
        self.calls.append(("push", msg))

    def RangePop(self):
        self.calls.append(("pop",))

    def RangeStart(self, msg, color):
        self.calls.append(("start", msg))
        return 42

    def RangeEnd(self, range_id):
        self.calls.append(("end", range_id))


@pytest.fixture
def recorder(monkeypatch):
    fake = _Recorder()
    monkeypatch.setattr(nvtx, "_library", fake)
    return fake


# ----- nvtx --------------------------------------------------------------------------------------------------

def test_nvtx_calls_never_raise():
    assert nvtx.mark("step") is None
    assert nvtx.range_push("outer") == 0
    assert nvtx.range_push("inner") == 1
    assert nvtx.range_pop() == 1
    assert nvtx.range_pop() == 0
    assert nvtx.range_pop() == -1                                    # nothing open
    nvtx.range_end(nvtx.range_start("across threads"))
    with nvtx.range("block {}", 1):
        pass


def test_nvtx_forwards_to_cupy(recorder):
    nvtx.mark("m")
    assert nvtx.range_push("a") == 0 and nvtx.range_pop() == 0
    assert nvtx.range_start("r") == 42
    nvtx.range_end(42)
    assert recorder.calls == [("mark", "m"), ("push", "a"), ("pop",), ("start", "r"), ("end", 42)]


def test_range_is_a_context_manager_and_a_decorator_with_format_arguments(recorder):
    with nvtx.range("epoch {} of {total}", 3, total=10):
        recorder.calls.append(("body",))
    assert recorder.calls == [("push", "epoch 3 of 10"), ("body",), ("pop",)]

    @nvtx.range("step {name}", name="train")
    def step(x):
        recorder.calls.append(("body", x))
        return x * 2

    recorder.calls.clear()
    assert step(1) == 2 and step(2) == 4                             # re-entered on every call
    assert recorder.calls == [("push", "step train"), ("body", 1), ("pop",), ("push", "step train"), ("body", 2),
                              ("pop",)]

    recorder.calls.clear()
    with pytest.raises(KeyError):
        with nvtx.range("fails"):
            raise KeyError("x")
    assert recorder.calls == [("push", "fails"), ("pop",)]           # the range closes on errors too


def test_nvtx_is_a_no_op_without_its_library(monkeypatch):
    monkeypatch.setattr(nvtx, "_library", None)
    assert nvtx.mark("x") is None
    assert nvtx.range_push("x") == 0 and nvtx.range_pop() == 0
    assert nvtx.range_start("x") == 0 and nvtx.range_end(0) is None
    with nvtx.range("x"):
        pass


def test_nvtx_without_cupy():
    report = run_json("""
        import json, sys
        sys.modules["cupy"] = None
        from agnostic.cuda import nvtx
        nvtx.mark("m")
        depths = [nvtx.range_push("a"), nvtx.range_pop()]
        with nvtx.range("r {}", 1):
            pass
        nvtx.range_end(nvtx.range_start("s"))
        print(json.dumps({"depths": depths, "cupy": sys.modules.get("cupy") is not None}))
    """)
    assert report == {"depths": [0, 0], "cupy": False}


def test_new_modules_do_not_import_cupy():
    report = run_json("""
        import json, sys
        import agnostic, agnostic._streams, agnostic.accelerator
        import agnostic.cuda.comm, agnostic.cuda.nvtx, agnostic.cuda.streams
        print(json.dumps([name for name in sys.modules if name.split(".")[0] in ("cupy", "cupy_backends")]))
    """)
    assert report == []


# ----- accelerator -------------------------------------------------------------------------------------------

@no_cuda_only
def test_accelerator_without_one():
    assert accelerator.is_available() is False
    assert accelerator.current_accelerator() is None
    assert accelerator.current_accelerator(check_available=True) is None
    assert accelerator.device_count() == 0
    for call in (accelerator.current_device_index, accelerator.synchronize, accelerator.current_stream,
                 lambda: accelerator.set_device_index(0)):
        with pytest.raises(RuntimeError, match="none is available"):
            call()
    with pytest.raises(RuntimeError, match="none is available"):
        with accelerator.device_index(0):
            pass


def test_accelerator_no_op_forms_work_everywhere():
    assert accelerator.set_device_index(-1) is None
    with accelerator.device_index(None):
        pass
    device = accelerator.current_accelerator() or agnostic.device("cpu")     # the device-agnostic idiom
    assert agnostic.ones(2, device=device).sum().item() == 2.0


def test_accelerator_with_cuda(cuda_device):
    assert accelerator.is_available() is True
    assert accelerator.current_accelerator() == agnostic.device("cuda")
    assert accelerator.current_accelerator().index is None
    assert accelerator.device_count() == agnostic.cuda.device_count() == len(CUDA_DEVICES)
    previous = accelerator.current_device_index()
    assert previous == agnostic.cuda.current_device()
    try:
        accelerator.set_device_index(cuda_device.index)
        assert accelerator.current_device_index() == cuda_device.index
        accelerator.set_device_index(-1)                                      # negative: no-op
        assert accelerator.current_device_index() == cuda_device.index
    finally:
        accelerator.set_device_index(previous)
    with accelerator.device_index(cuda_device.index):
        assert accelerator.current_device_index() == cuda_device.index
        assert accelerator.current_stream() == streams.current_stream(cuda_device)
    assert accelerator.current_device_index() == previous


def test_accelerator_synchronize_waits_for_queued_work(cuda_device):
    s = streams.Stream(cuda_device)
    with streams.stream(s):
        x = agnostic.ones(4096, 4096, device=cuda_device)
        for _ in range(4):
            x = x @ x * (1.0 / 4096)
    accelerator.synchronize(cuda_device)
    assert s.query()
    with accelerator.device_index(cuda_device.index):
        accelerator.synchronize()
    assert x[0, 0].item() == 1.0


def test_accelerator_set_stream(cuda_device):
    previous_device = accelerator.current_device_index()
    previous = streams.current_stream(cuda_device)
    s = streams.Stream(cuda_device)
    try:
        accelerator.set_stream(s)
        assert accelerator.current_device_index() == cuda_device.index
        assert accelerator.current_stream() == s
    finally:
        streams.set_stream(previous)
        accelerator.set_device_index(previous_device)


@pytest.mark.skipif(len(CUDA_DEVICES) < 2, reason="needs two CUDA devices")
def test_device_index_switches_and_restores():
    with accelerator.device_index(0):
        with accelerator.device_index(1):
            assert accelerator.current_device_index() == 1
            assert agnostic.ones(1, device="cuda").device == agnostic.device("cuda:1")
        assert accelerator.current_device_index() == 0
