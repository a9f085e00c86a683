"""DLPack and ``__cuda_array_interface__``: agnostic tensors and NumPy, CuPy, PyTorch and JAX arrays handed over both
ways without a copy (each test writes through one side and reads through the other), capsules, ``copy``,
``dl_device``, ``max_version``, streams, dtypes and strided views, on every device."""

import numpy
import pytest

import agnostic
from agnostic._backends import dlpack as dlpack_structures
from agnostic.ops.creation import from_dlpack
from agnostic.utils.dlpack import DLDeviceType, to_dlpack

# agnostic dtype -> NumPy dtype name (None: NumPy's DLPack has no bfloat16)
DTYPES = {
    agnostic.bool: "bool", agnostic.uint8: "uint8", agnostic.int8: "int8", agnostic.int16: "int16",
    agnostic.int32: "int32", agnostic.int64: "int64", agnostic.float16: "float16", agnostic.bfloat16: None,
    agnostic.float32: "float32", agnostic.float64: "float64", agnostic.complex64: "complex64",
    agnostic.complex128: "complex128",
}


def _native(device):
    """The array library of ``device``'s own arrays: NumPy on the CPU, CuPy on CUDA."""
    return device.backend.xp


def _torch(device):
    torch = pytest.importorskip("torch")
    if not device.backend.host and not torch.cuda.is_available():
        pytest.skip("PyTorch here has no CUDA")
    return torch


def _sample(dtype, device):
    values = agnostic.arange(6, device=device).reshape(2, 3)
    return (values % 2 == 0) if dtype is agnostic.bool else values.to(dtype)


def _same_memory(a, b):
    return a.data_ptr() == b.data_ptr()


# ----- both ways with the device's own library, PyTorch, JAX ---------------------------------------------------
def test_the_device_array_library_and_agnostic_share_memory_both_ways(device):
    xp = _native(device)
    with device.backend.activate():
        array = xp.arange(4.0)
    tensor = from_dlpack(array)
    assert tensor.device == device and tensor.dtype == agnostic.float64
    tensor[0] = -1.0
    assert float(array[0]) == -1.0
    source = agnostic.arange(3, device=device)
    back = xp.from_dlpack(source)
    with device.backend.activate():  # CuPy writes from the current device
        back[1] = 42
    assert source.tolist() == [0, 42, 2]


def test_pytorch_and_agnostic_share_memory_both_ways(device):
    torch = _torch(device)
    original = torch.arange(4.0, device=str(device))
    tensor = from_dlpack(original)
    assert tensor.device == device and tensor.dtype == agnostic.float32
    tensor[1] = 9.0
    assert original.tolist() == [0.0, 9.0, 2.0, 3.0]
    source = agnostic.arange(4, device=device)
    shared = torch.from_dlpack(source)
    assert shared.device.type == device.type and shared.dtype == torch.int64
    shared[2] = -5
    assert source.tolist() == [0, 1, -5, 3]


def test_pytorch_capsules_from_to_dlpack_import_and_export(device):
    torch = _torch(device)
    original = torch.arange(3, device=str(device))
    shared = agnostic.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(original))
    shared[0] = 7
    assert original.tolist() == [7, 1, 2]
    source = agnostic.arange(3, device=device)
    back = torch.utils.dlpack.from_dlpack(to_dlpack(source))
    back[2] = 8
    assert source.tolist() == [0, 1, 8]


def test_jax_arrays_import_and_export(device, monkeypatch):
    # JAX's GPU client otherwise takes 75% of the GPU's memory when it starts (even for jax.devices("cpu")) and keeps
    # it for this worker's life: the other test processes on the GPU then run out of memory.
    monkeypatch.setenv("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    if device.backend.host:
        platform_devices = jax.devices("cpu")
    else:
        try:
            platform_devices = jax.devices("gpu")
        except RuntimeError:
            pytest.skip("JAX here has no GPU")
    if (device.index or 0) >= len(platform_devices):
        pytest.skip(f"JAX here sees no {device}")
    values = jax.device_put(jnp.arange(5.0), platform_devices[device.index or 0])
    tensor = from_dlpack(values)
    assert tensor.device == device and tensor.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    back = jnp.from_dlpack(agnostic.arange(3.0, device=device))
    assert back.tolist() == [0.0, 1.0, 2.0]


def test_an_agnostic_tensor_imported_by_agnostic_shares_memory(device):
    source = agnostic.zeros(3, device=device)
    shared = from_dlpack(source)
    assert _same_memory(shared, source) and shared is not source
    shared[0] = 1.0
    assert source.tolist() == [1.0, 0.0, 0.0]


# ----- capsules and versions ---------------------------------------------------------------------------------------
def test_max_version_chooses_the_legacy_or_the_versioned_capsule(device):
    tensor = agnostic.arange(3, device=device)
    assert "dltensor\"" in repr(tensor.__dlpack__())
    assert "dltensor\"" in repr(tensor.__dlpack__(max_version=(0, 8)))
    assert "dltensor_versioned" in repr(tensor.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(tensor.__dlpack__(max_version=(2, 3)))  # a newer consumer reads 1.x
    for capsule in (to_dlpack(tensor), tensor.__dlpack__(max_version=(1, 0))):
        shared = from_dlpack(capsule)
        shared[1] = 10
        assert tensor.tolist() == [0, 10, 2]
        shared[1] = 1


def test_a_capsule_is_imported_once():
    capsule = to_dlpack(agnostic.arange(3))
    from_dlpack(capsule)
    with pytest.raises(BufferError, match="already imported"):
        from_dlpack(capsule)


def test_the_dlpack_device_is_the_tensors(device):
    device_type, index = agnostic.zeros(2, device=device).__dlpack_device__()
    assert isinstance(device_type, DLDeviceType)
    expected = (DLDeviceType.kDLCPU, 0) if device.backend.host else (DLDeviceType.kDLCUDA, device.index)
    assert (device_type, index) == expected
    assert dlpack_structures.capsule_device(agnostic.zeros(2, device=device).__dlpack__()) == expected


def test_producers_on_other_device_types_are_refused_with_the_supported_ones_named():
    class OpenCLArray:
        def __dlpack__(self, **keywords):
            raise AssertionError("not asked: the device is refused first")

        def __dlpack_device__(self):
            return (DLDeviceType.kDLOpenCL, 0)

    with pytest.raises(BufferError, match="kDLOpenCL.*CPU.*CUDA"):
        from_dlpack(OpenCLArray())
    with pytest.raises(TypeError, match="__dlpack__"):
        from_dlpack([1, 2, 3])


def test_an_old_producer_without_the_newer_keywords_still_exports():
    class OldProducer:  # DLPack 0.x: __dlpack__(stream=None) only
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    array = numpy.arange(3.0)
    shared = from_dlpack(OldProducer(array))
    shared[0] = 5.0
    assert array[0] == 5.0
    copied = from_dlpack(OldProducer(array), copy=True)  # the consumer makes the copy the producer couldn't
    copied[0] = -5.0
    assert array[0] == 5.0
    with pytest.raises(TypeError):
        from_dlpack(OldProducer(array), copy=False)  # copy=False can't be promised by this producer


# ----- copy and dl_device ------------------------------------------------------------------------------------------
def test_copy_true_exports_and_imports_independent_memory(device):
    source = agnostic.arange(3.0, device=device)
    capsule = source.__dlpack__(max_version=(1, 0), copy=True)
    assert dlpack_structures._managed(capsule).flags & dlpack_structures.IS_COPIED
    exported = from_dlpack(capsule)
    imported = from_dlpack(source, copy=True)
    for copy in (exported, imported):
        assert not _same_memory(copy, source)
        copy[0] = 100.0
    assert source.tolist() == [0.0, 1.0, 2.0]
    assert _same_memory(from_dlpack(source, copy=False), source)
    assert _same_memory(from_dlpack(source, copy=None), source)


def test_dl_device_cpu_exports_host_memory(device):
    source = agnostic.arange(4.0, device=device)
    host = numpy.from_dlpack(source, device="cpu")  # NumPy asks for dl_device=(kDLCPU, 0)
    numpy.testing.assert_array_equal(host, [0.0, 1.0, 2.0, 3.0])
    if device.backend.host:
        host[0] = 7.0  # the CPU tensor's own memory
        assert source[0].item() == 7.0
    else:
        with pytest.raises(BufferError, match="copy=False"):  # device memory reaches the host only as a copy
            source.__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False)


def test_dl_device_elsewhere_is_a_buffer_error():
    with pytest.raises(BufferError):
        agnostic.zeros(2).__dlpack__(dl_device=(DLDeviceType.kDLCUDA, 0))
    assert "dltensor" in repr(agnostic.zeros(2).__dlpack__(dl_device=(DLDeviceType.kDLCPU, 0), copy=False))


def test_from_dlpack_device_moves_and_copy_false_refuses_a_move(device):
    array = numpy.arange(3.0)
    same = from_dlpack(array, device="cpu", copy=False)
    same[0] = 4.0
    assert array[0] == 4.0
    if device.backend.host:
        return
    moved = from_dlpack(array, device=device)
    assert moved.device == device and moved.tolist() == [4.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="copy=False"):
        from_dlpack(array, device=device, copy=False)
    back = from_dlpack(agnostic.arange(2.0, device=device), device="cpu")
    assert back.device == agnostic.device("cpu") and back.tolist() == [0.0, 1.0]


# ----- what is refused ---------------------------------------------------------------------------------------------
def test_tensors_that_require_grad_are_refused_as_in_pytorch(device):
    weights = agnostic.ones(2, device=device, requires_grad=True)
    with pytest.raises(BufferError, match=r"require gradient, use tensor.detach\(\)"):
        weights.__dlpack__()
    with pytest.raises(BufferError, match="require gradient"):
        (weights * 2).__dlpack__()
    assert from_dlpack(weights.detach()).tolist() == [1.0, 1.0]
    if not device.backend.host:
        with pytest.raises(RuntimeError, match="requires grad"):
            weights.__cuda_array_interface__


# ----- streams -------------------------------------------------------------------------------------------------------
def test_cpu_tensors_take_no_stream():
    tensor = agnostic.zeros(2)
    assert "dltensor" in repr(tensor.__dlpack__(stream=None))
    assert "dltensor" in repr(tensor.__dlpack__(stream=-1))  # "no synchronization", which PyTorch accepts too
    with pytest.raises(BufferError, match="stream=None"):
        tensor.__dlpack__(stream=5)


def test_the_consumer_stream_sees_the_work_queued_before_the_export(cuda_device):
    cupy = pytest.importorskip("cupy")
    with cuda_device.backend.activate():
        consumer = cupy.cuda.Stream(non_blocking=True)
        source = agnostic.ones(1 << 22, device=cuda_device)
        result = source * 3  # queued on the current stream
        capsule = result.__dlpack__(stream=consumer.ptr, max_version=(1, 0))
        with consumer:  # read on the consumer's stream: ordered after the multiplication by the export's event
            total = float(cupy.from_dlpack(capsule).sum())
    assert total == 3.0 * (1 << 22)
    assert "dltensor" in repr(result.__dlpack__(stream=-1))
    assert "dltensor" in repr(result.__dlpack__(stream=None))


# ----- dtypes and strides --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda d: d.name)
def test_every_dtype_round_trips_through_a_capsule(device, dtype):
    tensor = _sample(dtype, device)
    back = from_dlpack(to_dlpack(tensor))
    assert back.dtype is dtype and back.tolist() == tensor.tolist() and _same_memory(back, tensor)
    versioned = from_dlpack(tensor.__dlpack__(max_version=(1, 0)))
    assert versioned.dtype is dtype and versioned.tolist() == tensor.tolist()


@pytest.mark.parametrize("dtype", [d for d, name in DTYPES.items() if name], ids=lambda d: d.name)
def test_every_dtype_crosses_to_and_from_the_device_array_library(device, dtype):
    xp = _native(device)
    tensor = _sample(dtype, device)
    array = xp.from_dlpack(tensor)
    assert str(array.dtype) == DTYPES[dtype]
    assert array.tolist() == tensor.tolist()
    assert from_dlpack(array).dtype is dtype


@pytest.mark.parametrize("dtype", list(DTYPES), ids=lambda d: d.name)
def test_every_dtype_crosses_to_and_from_pytorch(device, dtype):
    torch = _torch(device)
    tensor = _sample(dtype, device)
    theirs = torch.from_dlpack(tensor)
    assert theirs.dtype == getattr(torch, dtype.name)
    assert theirs.tolist() == tensor.tolist()
    ours = from_dlpack(theirs)
    assert ours.dtype is dtype and _same_memory(ours, tensor)


def test_bfloat16_shares_memory_with_pytorch(device):
    torch = _torch(device)
    original = torch.tensor([1.5, 2.0], dtype=torch.bfloat16, device=str(device))
    shared = from_dlpack(original)
    assert shared.dtype is agnostic.bfloat16
    shared[0] = 3.0
    assert original.tolist() == [3.0, 2.0]


def _views(device):
    base = agnostic.arange(24.0, device=device).reshape(4, 6)
    return {"transpose": base.t(), "step": base[:, 1::2], "rows": base[1:3], "column": base[:, 2],
            "scalar": base[1, 1], "empty": base[:0]}


@pytest.mark.parametrize("view", ["transpose", "step", "rows", "column", "scalar", "empty"])
def test_strided_views_keep_their_strides_and_memory(device, view):
    tensor = _views(device)[view]
    shared = from_dlpack(tensor)
    assert shared.shape == tensor.shape and shared.stride() == tensor.stride()
    assert shared.tolist() == tensor.tolist()
    if tensor.numel():
        assert _same_memory(shared, tensor)
    array = _native(device).from_dlpack(tensor)
    assert array.strides == tuple(s * tensor.itemsize for s in tensor.stride())


@pytest.mark.parametrize("view", ["transpose", "step", "rows", "column"])
def test_strided_views_keep_their_strides_in_pytorch(device, view):
    torch = _torch(device)
    tensor = _views(device)[view]
    theirs = torch.from_dlpack(tensor)
    assert theirs.stride() == tensor.stride() and theirs.tolist() == tensor.tolist()
    theirs.fill_(-1.0)
    assert (tensor == -1.0).all().item()
    transposed = torch.arange(12.0, device=str(device)).reshape(3, 4).t()
    ours = from_dlpack(transposed)
    assert ours.stride() == transposed.stride() and ours.tolist() == transposed.tolist()


# ----- as_tensor, asarray, from_numpy, tensor ------------------------------------------------------------------------
def test_as_tensor_shares_pytorch_memory_and_converts_when_asked(device):
    torch = _torch(device)
    original = torch.arange(3.0, device=str(device))
    for convert in (agnostic.as_tensor, agnostic.asarray):
        shared = convert(original)
        shared[0] = 11.0
        assert original[0].item() == 11.0
    converted = agnostic.as_tensor(original, dtype=agnostic.float64)
    converted[0] = -1.0
    assert converted.dtype is agnostic.float64 and original[0].item() == 11.0
    copied = agnostic.tensor(original)
    copied[1] = 50.0
    assert copied.device == device and original[1].item() == 1.0


def test_from_numpy_shares_memory_with_cpu_arrays_of_other_libraries():
    torch = pytest.importorskip("torch")
    original = torch.zeros(3, dtype=torch.int32)
    shared = agnostic.from_numpy(original)
    shared[2] = 4
    assert original.tolist() == [0, 0, 4] and shared.dtype is agnostic.int32


def test_from_numpy_refuses_device_arrays(cuda_device):
    cupy = pytest.importorskip("cupy")
    with cuda_device.backend.activate():
        array = cupy.zeros(2)
    with pytest.raises(TypeError, match="from_dlpack"):
        agnostic.from_numpy(array)


def test_as_tensor_shares_memory_with_a_cuda_array_interface(cuda_device):
    cupy = pytest.importorskip("cupy")
    with cuda_device.backend.activate():
        array = cupy.arange(4.0)

    class NumbaLikeDeviceArray:  # only the CUDA array interface, as Numba's device arrays
        __cuda_array_interface__ = property(lambda self: array.__cuda_array_interface__)

    shared = agnostic.as_tensor(NumbaLikeDeviceArray())
    assert shared.device == cuda_device
    shared[0] = -3.0
    assert float(array[0]) == -3.0


def test_as_tensor_of_a_numba_device_array(cuda_device):
    numba_cuda = pytest.importorskip("numba.cuda")
    device_array = numba_cuda.to_device(numpy.arange(3.0))
    shared = agnostic.as_tensor(device_array)
    shared[1] = 8.0
    assert device_array.copy_to_host().tolist() == [0.0, 8.0, 2.0]


# ----- __cuda_array_interface__ and __array__ ------------------------------------------------------------------------
def test_cpu_tensors_have_no_cuda_array_interface():
    tensor = agnostic.zeros(2)
    assert not hasattr(tensor, "__cuda_array_interface__")
    with pytest.raises(AttributeError, match=r"tensor.cuda\(\)"):
        tensor.__cuda_array_interface__


def test_cuda_array_interface_is_version_3_with_the_current_stream(cuda_device):
    cupy = pytest.importorskip("cupy")
    tensor = agnostic.arange(6.0, device=cuda_device).reshape(2, 3)
    interface = tensor.__cuda_array_interface__
    assert interface["version"] == 3 and interface["shape"] == (2, 3) and interface["typestr"] == "<f4"
    assert interface["data"] == (tensor.data_ptr(), False) and interface["strides"] is None
    assert isinstance(interface["stream"], int) and interface["stream"] != 0  # version 3 forbids 0
    assert tensor.t().__cuda_array_interface__["strides"] == (4, 12)
    with cuda_device.backend.activate():
        shared = cupy.asarray(tensor)
        shared[0, 0] = 9.0
    assert tensor[0, 0].item() == 9.0


def test_pytorch_reads_a_cuda_tensor_through_its_cuda_array_interface(cuda_device):
    torch = _torch(cuda_device)
    tensor = agnostic.arange(3.0, device=cuda_device)
    theirs = torch.as_tensor(tensor, device=str(cuda_device))
    theirs[0] = 5.0
    assert tensor.tolist() == [5.0, 1.0, 2.0]


def test_numpy_asarray_of_a_cuda_tensor_asks_for_cpu(cuda_device):
    with pytest.raises(TypeError, match=r"Tensor.cpu\(\)"):
        numpy.asarray(agnostic.zeros(2, device=cuda_device))
