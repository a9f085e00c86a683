"""Allocation requests are checked before any memory is asked for: sizes that overflow int64, or bytes beyond what
the device could ever hold, raise PyTorch's RuntimeError naming the shape and the bytes (never NumPy's
``ValueError: array is too big`` or ``MemoryError``)."""

import os
import re

import pytest

import agnostic
from agnostic._allocation import check_allocation
from agnostic._backends import cpu_ops

HUGE = 2 ** 46  # float32 elements: 256 TiB, more than any machine or GPU has


def _refusal(call):
    with pytest.raises(RuntimeError) as caught:
        call()
    assert type(caught.value) is RuntimeError, f"leaked {type(caught.value).__name__}"
    return str(caught.value)


OVERFLOWING = {
    "ones": lambda d: agnostic.ones(2 ** 62, device=d),
    "zeros": lambda d: agnostic.zeros(2 ** 32, 2 ** 32, device=d),
    "empty": lambda d: agnostic.empty((2 ** 31, 2 ** 31, 4), device=d),
    "full": lambda d: agnostic.full((2 ** 62,), 1.0, device=d),
    "rand": lambda d: agnostic.rand(2 ** 32, 2 ** 32, device=d),
    "randn": lambda d: agnostic.randn(2 ** 62, device=d),
    "randint": lambda d: agnostic.randint(0, 5, (2 ** 61,), device=d),
    "arange": lambda d: agnostic.arange(2 ** 60, device=d),
    "eye": lambda d: agnostic.eye(2 ** 31, device=d),
    "repeat": lambda d: agnostic.ones(4, device=d).repeat(2 ** 60),
}


@pytest.mark.parametrize("name", OVERFLOWING)
def test_sizes_overflowing_int64_are_refused_naming_shape_and_bytes(name, device):
    message = _refusal(lambda: OVERFLOWING[name](device))
    assert message.startswith("Storage size calculation overflowed with sizes=["), message
    assert re.search(r"needs \d{19,} bytes", message), message


def test_overflow_names_the_exact_shape_and_bytes(device):
    message = _refusal(lambda: agnostic.zeros(2 ** 32, 2 ** 32, device=device))
    assert "sizes=[4294967296, 4294967296]" in message
    assert f"{2 ** 64 * 4} bytes" in message and "float32" in message


def test_overflow_matches_pytorch():
    torch = pytest.importorskip("torch")
    expected = re.escape("Storage size calculation overflowed with sizes=[4611686018427387904]")
    for lib in (agnostic, torch):
        with pytest.raises(RuntimeError, match=expected):
            lib.ones(2 ** 62)


BEYOND_THE_DEVICE = {
    "empty": lambda d: agnostic.empty(HUGE, device=d),
    "randn": lambda d: agnostic.randn(HUGE, device=d),
    "full_like": lambda d: agnostic.full_like(agnostic.ones(1, device=d).expand(HUGE), 2.0),
    "linspace": lambda d: agnostic.linspace(0, 1, HUGE, device=d),
    "repeat": lambda d: agnostic.ones(4, device=d).repeat(HUGE // 4),
}


@pytest.mark.parametrize("name", BEYOND_THE_DEVICE)
def test_more_bytes_than_the_device_holds_are_refused(name, device):
    if agnostic.device(device).type == "cuda":  # CUDA keeps its allocator's error, as PyTorch's
        with pytest.raises(agnostic.cuda.OutOfMemoryError, match="CUDA out of memory. Tried to allocate"):
            BEYOND_THE_DEVICE[name](device)
        return
    message = _refusal(lambda: BEYOND_THE_DEVICE[name](device))
    assert f"you tried to allocate {HUGE * 4} bytes" in message, message
    assert f"shape [{HUGE}]" in message and str(device) in message, message


def test_refusal_uses_the_backends_capacity(monkeypatch):
    monkeypatch.setattr(cpu_ops, "memory_capacity", lambda: 3 << 30)
    agnostic.empty(2 ** 29)  # 2 GiB: fits the pretended 3 GiB
    message = _refusal(lambda: agnostic.empty(2 ** 30))  # 4 GiB
    assert f"you tried to allocate {4 << 30} bytes for a tensor of shape [{2 ** 30}] and dtype float32" in message
    assert f"({3 << 30} bytes in all)" in message


def test_cpu_capacity_is_physical_memory_and_swap():
    capacity = cpu_ops.memory_capacity()
    if not hasattr(os, "sysconf"):
        assert capacity is None
        return
    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert capacity >= physical
    if os.path.exists("/proc/meminfo"):
        fields = dict(line.split(":", 1) for line in open("/proc/meminfo"))
        assert capacity == physical + int(fields["SwapTotal"].split()[0]) * 1024


def test_zero_elements_with_overflowing_strides_are_refused(device):
    message = _refusal(lambda: agnostic.ones(0, 2 ** 62, 2 ** 62, device=device))
    assert message.startswith("Stride calculation overflowed with sizes=[0, 4611686018427387904"), message


def test_large_requests_that_fit_are_left_alone(device):
    check_allocation((2 ** 28,), agnostic.float32, device)  # 1 GiB: only checked, nothing allocated
    check_allocation((0, 2 ** 40), agnostic.float64, device)
    assert agnostic.zeros(0, 2 ** 40, device=device).shape == (0, 2 ** 40)


def test_refused_random_request_leaves_the_generator_untouched():
    device = "cpu"  # a request the CPU refuses up front (CUDA's allocator refuses it after the draw is reserved)
    agnostic.manual_seed(7)
    _refusal(lambda: agnostic.randn(HUGE, device=device))
    after_refusal = agnostic.randn(4, device=device).cpu().tolist()
    agnostic.manual_seed(7)
    assert agnostic.randn(4, device=device).cpu().tolist() == after_refusal


def test_negative_sizes_give_pytorchs_message(device):
    for call in (lambda: agnostic.empty(2, -1, device=device), lambda: agnostic.rand(2, -1, device=device)):
        assert _refusal(call) == "Trying to create tensor with negative dimension -1: [2, -1]"
    assert _refusal(lambda: agnostic.eye(-1, device=device)) == "eye(): n must be greater or equal to 0, got -1"


def test_expanded_view_beyond_int64_bytes_is_refused_clearly(device):
    assert agnostic.ones(1, device=device).expand(2 ** 40).shape == (2 ** 40,)  # a view: nothing allocated
    message = _refusal(lambda: agnostic.ones(1, device=device).expand(2 ** 62))
    assert message.startswith(f"expand(): a view of shape [{2 ** 62}] would span {2 ** 64} bytes"), message
