"""agnostic.cuda's runtime extras: capabilities, NVML, errors, sync debug mode, random, profiler, jiterator, nccl."""

import sys
import warnings

import numpy
import pytest

import agnostic
from agnostic._backends.sync_debug import check_synchronizing
from agnostic.cuda import jiterator

CUDA = agnostic.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
without_cuda = pytest.mark.skipif(CUDA, reason="checks the answers given without CUDA")


@without_cuda
def test_capability_queries_answer_as_pytorch_without_cuda():
    assert agnostic.cuda.is_bf16_supported() is False
    assert agnostic.cuda.is_bf16_supported(including_emulation=False) is False
    assert agnostic.cuda.is_tf32_supported() is False
    assert agnostic.cuda.get_arch_list() == []
    assert agnostic.cuda.get_gencode_flags() == ""
    assert len(agnostic.cuda.default_generators) == 0 and agnostic.cuda.default_generators == ()


@needs_cuda
def test_capability_queries_on_a_gpu():
    major, _ = agnostic.cuda.get_device_capability()
    assert agnostic.cuda.is_tf32_supported() == (major >= 8)
    assert agnostic.cuda.is_bf16_supported(including_emulation=False) == (major >= 8)
    arches = agnostic.cuda.get_arch_list()
    assert arches and all(a.startswith("sm_") for a in arches)
    assert agnostic.cuda.get_gencode_flags().count("-gencode") == len(arches)
    generators = agnostic.cuda.default_generators
    assert len(generators) == agnostic.cuda.device_count()
    assert generators[0].device == agnostic.device("cuda", 0)
    generators[0].manual_seed(5)
    assert agnostic.cuda.initial_seed() == 5 or agnostic.cuda.current_device() != 0


def test_gencode_flags_follow_pytorchs_form(monkeypatch):
    from agnostic.cuda import _capabilities

    monkeypatch.setattr(_capabilities, "get_arch_list", lambda: ["sm_80", "sm_90"])
    assert _capabilities.get_gencode_flags() == (
        "-gencode compute=compute_80,code=sm_80 -gencode compute=compute_90,code=sm_90")


def test_nvml_queries_name_the_package_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails, as without nvidia-ml-py
    for query in (agnostic.cuda.utilization, agnostic.cuda.temperature, agnostic.cuda.power_draw,
                  agnostic.cuda.clock_rate, agnostic.cuda.memory_usage, agnostic.cuda.device_memory_used):
        with pytest.raises(ModuleNotFoundError, match="pip install nvidia-ml-py"):
            query()


@pytest.mark.parametrize("variable, expected", [
    ("0,1", [0, 1]), ("1gpu2,2ampere", [1, 2]), ("0,0", []), ("2,-1,3", [2]), ("x", []),
    ("GPU-ab,GPU-cd,3", ["GPU-ab", "GPU-cd"]),
])
def test_nvml_reads_cuda_visible_devices_as_the_runtime_does(monkeypatch, variable, expected):
    from agnostic.cuda import _nvml

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", variable)
    assert _nvml._visible_devices() == expected


def test_cuda_error_and_check_error(monkeypatch):
    from agnostic.cuda import _errors

    monkeypatch.setattr(_errors, "_error_string", lambda code: {34: "device not ready"}[code])
    error = agnostic.cuda.CudaError(34)
    assert isinstance(error, RuntimeError) and str(error) == "device not ready (34)" and error.code == 34
    agnostic.cuda.check_error(0)
    with pytest.raises(agnostic.cuda.CudaError, match=r"device not ready \(34\)"):
        agnostic.cuda.check_error(34)


@without_cuda
def test_cudart_and_profiler_explain_that_cuda_is_unavailable():
    with pytest.raises(RuntimeError, match="CUDA|CuPy"):
        agnostic.cuda.cudart()
    with pytest.raises(RuntimeError, match="CUDA|CuPy"):
        agnostic.cuda.profiler.start()
    with pytest.raises(AssertionError, match="CUDA12"):
        agnostic.cuda.profiler.init("trace.prof")


@needs_cuda
def test_profiler_starts_and_stops():
    runtime = agnostic.cuda.cudart()
    assert runtime.cudaGetErrorString(34)
    with agnostic.cuda.profiler.profile():
        (agnostic.ones(4, device="cuda") * 2).sum()


@pytest.fixture
def sync_debug_mode():
    yield
    agnostic.cuda.set_sync_debug_mode("default")


def test_sync_debug_mode_by_name_and_number(sync_debug_mode):
    assert agnostic.cuda.get_sync_debug_mode() == 0
    for name, number in (("warn", 1), ("error", 2), ("default", 0)):
        agnostic.cuda.set_sync_debug_mode(name)
        assert agnostic.cuda.get_sync_debug_mode() == number
        agnostic.cuda.set_sync_debug_mode(number)
        assert agnostic.cuda.get_sync_debug_mode() == number
    with pytest.raises(RuntimeError, match="expected one of `default`, `warn`, `error`"):
        agnostic.cuda.set_sync_debug_mode("loud")
    with pytest.raises(RuntimeError, match="0,1,2"):
        agnostic.cuda.set_sync_debug_mode(3)


def test_check_synchronizing_follows_the_mode(sync_debug_mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_synchronizing("item()")  # default: silent
    agnostic.cuda.set_sync_debug_mode("warn")
    with pytest.warns(UserWarning, match="called a synchronizing CUDA operation: item()"):
        check_synchronizing("item()")
    agnostic.cuda.set_sync_debug_mode(2)
    with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation: nonzero"):
        check_synchronizing("nonzero")


@needs_cuda
def test_copies_to_the_host_follow_the_sync_debug_mode(sync_debug_mode):
    x = agnostic.arange(4.0, device="cuda")
    agnostic.cuda.set_sync_debug_mode("warn")
    with pytest.warns(UserWarning, match="synchronizing CUDA operation"):
        assert x.sum().item() == 6.0
    agnostic.cuda.set_sync_debug_mode("error")
    for synchronizing in (lambda: x.cpu(), lambda: x.tolist(), lambda: bool(x[1]), lambda: x.nonzero()):
        with pytest.raises(RuntimeError, match="synchronizing CUDA operation"):
            synchronizing()
    assert (x * 2).to("cpu", non_blocking=True).tolist() == [0.0, 2.0, 4.0, 6.0]  # asynchronous: allowed


def test_cuda_random_reexports_the_seeding_functions():
    for name in set(agnostic.cuda.random.__all__) - {"DefaultGenerators"}:  # the class of default_generators
        assert getattr(agnostic.cuda.random, name) is getattr(agnostic.cuda, name)
    agnostic.cuda.random.manual_seed(3)  # a silent no-op without CUDA, as in PyTorch
    agnostic.cuda.random.seed_all()


def test_jiterator_parses_the_entry_function():
    code = ("template <typename T> T helper(T x) { return x > 0 ? x : 0; }\n"
            "template <typename T> T my_kernel(T x, T y, T alpha) { return helper(x) + alpha * y; }")
    parsed = jiterator._CodeParser(code)
    assert parsed.function_name == "my_kernel" and parsed.return_type == "T"
    assert parsed.function_params == "(T x, T y, T alpha)"
    assert jiterator._create_jit_fn(code, alpha=1.0).kernel_name == "my_kernel"
    with pytest.raises(ValueError, match="Couldn't parse code"):
        jiterator._create_jit_fn("float f(float x) { return x; }")
    with pytest.raises(AssertionError, match="single output"):
        jiterator._JittedFunction(code, return_by_ref=False, num_outputs=2)


def test_jiterator_kernel_calls_the_function_with_tensors_then_scalars_then_outputs():
    by_value = jiterator._declaration("f", "code", 2, (numpy.dtype("float64"), numpy.dtype("int64")), 1, False)
    assert by_value.kind == "elementwise" and by_value.preamble == "code"
    assert by_value.source == (
        "jiterator_out0 = f<T>(jiterator_in0, jiterator_in1, jiterator_scalar0, jiterator_scalar1)")
    assert by_value.in_params.endswith("float64 jiterator_scalar0, int64 jiterator_scalar1")
    by_reference = jiterator._declaration("g", "code", 1, (), 2, True)
    assert by_reference.source == "g<T>(jiterator_in0, jiterator_out0, jiterator_out1)"
    assert by_reference.out_params == "T jiterator_out0, T jiterator_out1"


def test_jiterator_common_dtype_lets_zero_dim_tensors_promote_only_across_categories():
    ints = agnostic.ones(2, dtype=agnostic.int32)
    assert jiterator._common_dtype([ints, agnostic.tensor(1.0, dtype=agnostic.float64)]) == agnostic.float64
    half = agnostic.ones(2, dtype=agnostic.float16)
    assert jiterator._common_dtype([half, agnostic.tensor(1.0, dtype=agnostic.float64)]) == agnostic.float16
    assert jiterator._common_dtype([half, agnostic.ones(2, dtype=agnostic.float64)]) == agnostic.float64


@without_cuda
def test_jiterator_refuses_without_cuda_as_pytorch():
    axpy = jiterator._create_jit_fn("template <typename T> T axpy(T x, T y, T a) { return a * x + y; }", a=1.0)
    with pytest.raises(AssertionError, match="only supported on CUDA"):
        axpy(agnostic.ones(2), agnostic.ones(2))


@needs_cuda
def test_jiterator_refuses_cpu_tensors_and_unknown_keywords():
    axpy = jiterator._create_jit_fn("template <typename T> T axpy(T x, T y, T a) { return a * x + y; }", a=1.0)
    with pytest.raises(RuntimeError, match="CUDA tensors only"):
        axpy(agnostic.ones(2), agnostic.ones(2))
    with pytest.raises(KeyError, match="beta is not declared"):
        axpy(agnostic.ones(2, device="cuda"), agnostic.ones(2, device="cuda"), beta=2.0)
    with pytest.raises(AssertionError, match="up to 8"):
        axpy(*[agnostic.ones(1, device="cuda")] * 9)


@needs_cuda
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_jiterator_runs_and_broadcasts(dtype):
    axpy = jiterator._create_jit_fn("template <typename T> T axpy(T x, T y, T a) { return a * x + y; }", a=1.0)
    x = numpy.arange(6, dtype=dtype).reshape(2, 3)
    y = numpy.array([1.0, 2.0, 3.0], dtype=dtype)
    result = axpy(agnostic.tensor(x, device="cuda"), agnostic.tensor(y, device="cuda"), a=2.0)
    assert result.dtype == getattr(agnostic, dtype) and result.shape == (2, 3)
    numpy.testing.assert_allclose(result.cpu().numpy(), 2.0 * x + y, rtol=1e-3)
    assert axpy(agnostic.tensor(x, device="cuda"), agnostic.tensor(y, device="cuda")).cpu().numpy().tolist() == (
        (x + y).tolist())


@needs_cuda
def test_jiterator_multiple_outputs():
    code = "template <typename T> void sum_diff(T x, T y, T& s, T& d) { s = x + y; d = x - y; }"
    sum_diff = jiterator._create_multi_output_jit_fn(code, num_outputs=2)
    s, d = sum_diff(agnostic.tensor([5.0, 1.0], device="cuda"), agnostic.tensor([2.0, 1.0], device="cuda"))
    assert s.cpu().tolist() == [7.0, 2.0] and d.cpu().tolist() == [3.0, 0.0]


def test_nccl_checks_its_inputs():
    assert agnostic.cuda.nccl.is_available([agnostic.ones(2)]) is False
    with pytest.raises(TypeError, match="collection of tensors"):
        agnostic.cuda.nccl.all_reduce(agnostic.ones(2))
    with pytest.raises(TypeError, match="collection of tensors"):
        agnostic.cuda.nccl.broadcast(agnostic.ones(2))


@pytest.mark.skipif(agnostic.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_nccl_collectives_on_two_gpus():
    nccl = agnostic.cuda.nccl
    xs = [agnostic.full((4,), float(i + 1), device=f"cuda:{i}") for i in range(2)]
    if not nccl.is_available(xs):
        pytest.skip("CuPy's NCCL is not available")
    assert len(nccl.version()) == 3 and len(nccl.unique_id()) == 128
    nccl.all_reduce(xs)
    assert [x.cpu().tolist() for x in xs] == [[3.0] * 4] * 2
    xs = [agnostic.full((2,), float(i), device=f"cuda:{i}") for i in range(2)]
    ys = [agnostic.empty(4, device=f"cuda:{i}") for i in range(2)]
    nccl.all_gather(xs, ys)
    assert ys[1].cpu().tolist() == [0.0, 0.0, 1.0, 1.0]
    zs = [agnostic.empty(1, device=f"cuda:{i}") for i in range(2)]
    nccl.reduce_scatter(xs, zs)
    assert [z.cpu().tolist() for z in zs] == [[1.0], [1.0]]
    xs = [agnostic.arange(3.0, device="cuda:0"), agnostic.zeros(3, device="cuda:1")]
    nccl.broadcast(xs)
    assert xs[1].cpu().tolist() == [0.0, 1.0, 2.0]


@needs_cuda
def test_external_stream_wraps_a_foreign_stream():
    import cupy

    theirs = cupy.cuda.Stream(non_blocking=True)
    stream = agnostic.cuda.ExternalStream(theirs.ptr)
    assert stream.cuda_stream == theirs.ptr and isinstance(stream, agnostic.cuda.Stream)
    with agnostic.cuda.stream(stream):
        assert agnostic.cuda.current_stream() == stream
        y = agnostic.ones(3, device="cuda") * 2
    stream.synchronize()
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]
    assert agnostic.cuda.get_stream_from_external(theirs.ptr) == stream
