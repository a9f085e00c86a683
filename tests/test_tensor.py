"""Tensor: metadata, conversions, repr, legacy types, copy semantics, devices, factories and random tensors."""

import math

import numpy
import pytest

import agnostic

CPU = agnostic.device("cpu")


def host(tensor):
    """The values of a tensor as a NumPy array (a copy for CUDA tensors)."""
    return tensor.cpu().numpy()


@pytest.fixture
def restore_default_dtype():
    saved = agnostic.get_default_dtype()
    yield
    agnostic.set_default_dtype(saved)


# ----- metadata ----------------------------------------------------------------------------------------------

def test_metadata(device):
    t = agnostic.arange(24, dtype=agnostic.float32, device=device).reshape(2, 3, 4)
    assert t.device == device
    assert t.dtype is agnostic.float32
    assert isinstance(t.shape, agnostic.Size) and t.shape == (2, 3, 4)
    assert isinstance(t.size(), agnostic.Size) and t.size() == (2, 3, 4)
    assert (t.size(0), t.size(1), t.size(-1)) == (2, 3, 4)
    assert t.dim() == t.ndim == 3
    assert t.numel() == 24
    assert t.is_cuda == (device.type == "cuda")
    assert t.stride() == (12, 4, 1)
    assert (t.stride(0), t.stride(-1)) == (12, 1)
    assert t.is_contiguous()
    assert repr(t.shape) == "agnostic.Size([2, 3, 4])"


def test_zero_dim_metadata(device):
    t = agnostic.tensor(3.5, device=device)
    assert t.shape == () and isinstance(t.shape, agnostic.Size)
    assert t.dim() == 0 and t.numel() == 1 and t.stride() == ()


def test_item_and_tolist_give_python_values(device):
    assert agnostic.tensor(3, device=device).item() == 3
    assert type(agnostic.tensor(3, device=device).item()) is int
    assert type(agnostic.tensor([2.5], device=device).item()) is float
    assert agnostic.tensor([[2.5]], device=device).item() == 2.5
    assert agnostic.tensor(True, device=device).item() is True
    values = agnostic.tensor([[1, 2], [3, 4]], device=device).tolist()
    assert values == [[1, 2], [3, 4]] and type(values[0][0]) is int
    floats = agnostic.tensor([0.5, 1.5], device=device).tolist()
    assert floats == [0.5, 1.5] and type(floats[0]) is float
    assert agnostic.tensor(7, device=device).tolist() == 7


def test_transposes(device):
    t = agnostic.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    assert t.T.tolist() == [[1, 4], [2, 5], [3, 6]]
    assert t.T.shape == (3, 2)
    assert t.T.stride() == (1, 3)
    assert not t.T.is_contiguous()
    batch = agnostic.zeros(5, 2, 3, device=device)
    assert batch.mT.shape == (5, 3, 2)
    assert batch.mT.stride() == (6, 1, 3)
    assert t.mT.tolist() == t.T.tolist()
    with pytest.raises(RuntimeError):
        agnostic.zeros(3, device=device).mT


def test_strided_view_metadata(device):
    t = agnostic.zeros(2, 6, device=device)
    view = t[:, ::2]
    assert view.shape == (2, 3)
    assert view.stride() == (6, 2)
    assert not view.is_contiguous()
    assert view.contiguous().is_contiguous()


# ----- numpy() -----------------------------------------------------------------------------------------------

def test_numpy_shares_memory_on_cpu():
    t = agnostic.tensor([1.0, 2.0, 3.0])
    array = t.numpy()
    assert isinstance(array, numpy.ndarray) and array.dtype == numpy.float32
    array[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0]
    t.add_(1)
    assert array.tolist() == [11.0, 3.0, 4.0]


def test_numpy_on_cuda_says_to_call_cpu(cuda_device):
    t = agnostic.ones(2, device=cuda_device)
    with pytest.raises(TypeError, match=r"\.cpu\(\)"):
        t.numpy()
    assert t.cpu().numpy().tolist() == [1.0, 1.0]


# ----- repr --------------------------------------------------------------------------------------------------

REPRS = [
    (lambda d: agnostic.tensor([1, 2, 3], device=d), "[1, 2, 3]", None),
    (lambda d: agnostic.tensor([1.0, 2.0], device=d), "[1., 2.]", None),
    (lambda d: agnostic.tensor([1.5, 2.0], device=d), "[1.5000, 2.0000]", None),
    (lambda d: agnostic.tensor([-1.0, 2.0], device=d), "[-1.,  2.]", None),
    (lambda d: agnostic.tensor([0.1, 100.0], device=d), "[  0.1000, 100.0000]", None),
    (lambda d: agnostic.tensor([1e-5, 1.0], device=d), "[1.0000e-05, 1.0000e+00]", None),
    (lambda d: agnostic.tensor([1, 2], dtype=agnostic.int32, device=d), "[1, 2]", "agnostic.int32"),
    (lambda d: agnostic.tensor([1, 2], dtype=agnostic.uint8, device=d), "[1, 2]", "agnostic.uint8"),
    (lambda d: agnostic.tensor([1.0, 2.0], dtype=agnostic.float64, device=d), "[1., 2.]", "agnostic.float64"),
    (lambda d: agnostic.tensor([1.0, 2.0], dtype=agnostic.float16, device=d), "[1., 2.]", "agnostic.float16"),
    (lambda d: agnostic.tensor(3.0, device=d), "3.", None),
    (lambda d: agnostic.tensor(2.5, device=d), "2.5000", None),
    (lambda d: agnostic.tensor(3, device=d), "3", None),
    (lambda d: agnostic.tensor(3, dtype=agnostic.int8, device=d), "3", "agnostic.int8"),
    (lambda d: agnostic.tensor([True, False], device=d), "[ True, False]", None),
    (lambda d: agnostic.tensor(True, device=d), "True", None),
    (lambda d: agnostic.tensor([1 + 2j, 3 - 1j], device=d), "[1.+2.j, 3.-1.j]", None),
    (lambda d: agnostic.tensor([[1, 2], [3, 4]], device=d), "[[1, 2],\n        [3, 4]]", None),
    (lambda d: agnostic.tensor([], device=d), "[]", None),
    (lambda d: agnostic.zeros(2, 0, dtype=agnostic.int32, device=d), "[]", "agnostic.int32"),
]


@pytest.mark.parametrize("make, body, dtype", REPRS, ids=[body for _, body, _ in REPRS])
def test_repr(device, make, body, dtype):
    # PyTorch's suffix order: device, then size (for empty tensors that are not 1-d), then dtype.
    t = make(device)
    expected = "tensor(" + body
    if device.type == "cuda":
        expected += f", device='{device}'"
    if t.numel() == 0 and t.dim() != 1:
        expected += f", size={tuple(t.shape)}"
    if dtype is not None:
        expected += f", dtype={dtype}"
    expected += ")"
    assert repr(t) == expected
    assert str(t) == expected


def test_repr_follows_default_dtype(restore_default_dtype):
    agnostic.set_default_dtype(agnostic.float64)
    assert repr(agnostic.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(agnostic.tensor([1.0, 2.0], dtype=agnostic.float32)) == "tensor([1., 2.], dtype=agnostic.float32)"


@pytest.mark.parametrize("values, expected", [
    ([1.0, float("nan"), float("inf")], "tensor([1., nan, inf])"),
    ([1.0, -float("inf")], "tensor([1., -inf])"),
    ([0.5, float("nan")], "tensor([0.5000,    nan])"),
])
def test_repr_non_finite_values_do_not_widen_columns(values, expected):
    # PyTorch sizes columns from the finite values only.
    assert repr(agnostic.tensor(values)) == expected


def test_repr_integral_floats_with_a_wide_range_use_scientific_notation():
    assert repr(agnostic.tensor([1.0, 2000.0])) == "tensor([1.0000e+00, 2.0000e+03])"
    assert repr(agnostic.tensor([1.0, 999.0])) == "tensor([  1., 999.])"


def test_repr_summarizes_large_tensors_like_torch():
    assert repr(agnostic.arange(1500)) == "tensor([   0,    1,    2,  ..., 1497, 1498, 1499])"


def test_format_of_zero_dim_tensor():
    assert f"{agnostic.tensor(2.5):.2f}" == "2.50"


# ----- legacy types ------------------------------------------------------------------------------------------

def test_legacy_constructors_and_isinstance():
    t = agnostic.FloatTensor([1, 2])
    assert t.dtype is agnostic.float32 and t.device == CPU and t.tolist() == [1.0, 2.0]
    assert isinstance(t, agnostic.FloatTensor) and isinstance(t, agnostic.Tensor)
    assert not isinstance(t, agnostic.DoubleTensor)
    assert not isinstance(t, agnostic.cuda.FloatTensor)
    assert agnostic.LongTensor([1, 2]).dtype is agnostic.int64
    assert agnostic.IntTensor(2, 3).shape == (2, 3) and agnostic.IntTensor(2, 3).dtype is agnostic.int32
    assert agnostic.BoolTensor([1, 0]).tolist() == [True, False]
    assert not isinstance(agnostic.tensor([1.0]), agnostic.LongTensor)


@pytest.mark.parametrize("dtype, name", [
    ("float32", "FloatTensor"), ("float64", "DoubleTensor"), ("float16", "HalfTensor"), ("uint8", "ByteTensor"),
    ("int8", "CharTensor"), ("int16", "ShortTensor"), ("int32", "IntTensor"), ("int64", "LongTensor"),
    ("bool", "BoolTensor"), ("complex64", "ComplexFloatTensor"), ("complex128", "ComplexDoubleTensor"),
])
def test_type_name(device, dtype, name):
    t = agnostic.zeros(2, dtype=getattr(agnostic, dtype), device=device)
    prefix = "agnostic.cuda." if device.type == "cuda" else "agnostic."
    assert t.type() == prefix + name
    legacy = agnostic.cuda if device.type == "cuda" else agnostic
    assert isinstance(t, getattr(legacy, name))


def test_type_casts(device):
    legacy = agnostic.cuda if device.type == "cuda" else agnostic
    t = agnostic.tensor([1.5, 2.5], device=device)
    double = t.type(legacy.DoubleTensor)
    assert double.dtype is agnostic.float64 and double.device == device and double.tolist() == [1.5, 2.5]
    prefix = "agnostic.cuda." if device.type == "cuda" else "agnostic."
    ints = t.type(prefix + "IntTensor")
    assert ints.dtype is agnostic.int32 and ints.device == device and ints.tolist() == [1, 2]
    assert t.type(agnostic.float64).dtype is agnostic.float64
    assert t.type(legacy.FloatTensor) is t
    with pytest.raises(ValueError):
        t.type("agnostic.NoSuchTensor")


def test_type_cast_to_cpu_type_moves_cuda_tensor(cuda_device):
    t = agnostic.tensor([1.0, 2.0], device=cuda_device)
    moved = t.type("agnostic.IntTensor")
    assert moved.device == CPU and moved.dtype is agnostic.int32 and moved.tolist() == [1, 2]
    assert t.type(agnostic.DoubleTensor).device == CPU
    assert isinstance(agnostic.cuda.FloatTensor([1, 2]), agnostic.cuda.FloatTensor)
    assert agnostic.cuda.FloatTensor([1, 2]).device.type == "cuda"


def test_legacy_tensor_constructor():
    t = agnostic.Tensor([1, 2])
    assert isinstance(t, agnostic.Tensor)
    assert t.dtype is agnostic.float32 and t.device == CPU and t.tolist() == [1.0, 2.0]
    sized = agnostic.Tensor(2, 3)
    assert sized.shape == (2, 3) and sized.dtype is agnostic.float32 and sized.device == CPU


# ----- copy semantics ----------------------------------------------------------------------------------------

def test_to_returns_self_when_nothing_changes(device):
    t = agnostic.ones(3, device=device)
    assert t.to(device) is t
    assert t.to(str(device)) is t
    assert t.to(agnostic.float32) is t
    assert t.to(device, agnostic.float32) is t
    assert t.to(device=device, dtype=agnostic.float32) is t
    assert t.to(agnostic.zeros(1, device=device)) is t
    assert t.to(device, non_blocking=True) is t


def test_to_copies_when_asked(device):
    t = agnostic.ones(3, device=device)
    copy = t.to(device, agnostic.float32, non_blocking=True, copy=True)
    assert copy is not t and copy.data_ptr() != t.data_ptr()
    assert copy.device == device and copy.dtype is agnostic.float32
    copy.add_(1)
    assert t.tolist() == [1.0, 1.0, 1.0]
    positional = t.to(device, agnostic.float32, False, True)
    assert positional is not t and positional.data_ptr() != t.data_ptr()


def test_to_dtype(device):
    t = agnostic.tensor([1.5, -2.7], device=device)
    as_int = t.to(agnostic.int64)
    assert as_int is not t and as_int.dtype is agnostic.int64 and as_int.device == device
    assert as_int.tolist() == [1, -2]                        # truncation, as a C cast
    assert t.dtype is agnostic.float32
    assert t.to(dtype=agnostic.float64).dtype is agnostic.float64
    assert t.to("float64").dtype is agnostic.float64


def test_to_other_tensor(device):
    t = agnostic.tensor([1, 2], device=device)
    other = agnostic.zeros(1, dtype=agnostic.float64, device=device)
    converted = t.to(other)
    assert converted.dtype is agnostic.float64 and converted.device == device
    assert converted.tolist() == [1.0, 2.0]


def test_to_invalid_arguments():
    t = agnostic.ones(2)
    with pytest.raises(TypeError):
        t.to("cpu", agnostic.float32, False, False, "extra")
    with pytest.raises(TypeError):
        t.to(bogus=True)


def test_moving_between_cpu_and_cuda(cuda_device):
    t = agnostic.tensor([1.0, 2.0])
    moved = t.to(cuda_device)
    assert moved.device == cuda_device and moved.tolist() == [1.0, 2.0] and moved.is_cuda
    assert moved.to(cuda_device) is moved
    assert moved.cuda(cuda_device.index) is moved
    back = moved.cpu()
    assert back.device == CPU and back.tolist() == [1.0, 2.0]
    back.add_(1)
    assert moved.tolist() == [1.0, 2.0]
    assert t.to(agnostic.ones(1, dtype=agnostic.float64, device=cuda_device)).device == cuda_device
    both = t.to(cuda_device, agnostic.int32)
    assert both.device == cuda_device and both.dtype is agnostic.int32
    with agnostic.cuda.device(cuda_device.index):
        current = t.cuda()
        assert current.device == cuda_device
        assert t.to("cuda").device == cuda_device


def test_cpu_on_cpu_tensor_returns_self():
    t = agnostic.ones(2)
    assert t.cpu() is t


def test_cuda_rejects_cpu_devices():
    with pytest.raises((ValueError, RuntimeError)):
        agnostic.ones(2).cuda("cpu")


def test_clone_copies(device):
    t = agnostic.tensor([1, 2, 3], device=device)
    c = t.clone()
    assert c is not t and c.data_ptr() != t.data_ptr()
    assert c.device == device and c.dtype is t.dtype and c.tolist() == [1, 2, 3]
    c.add_(10)
    assert t.tolist() == [1, 2, 3]


def test_detach_shares_memory(device):
    t = agnostic.tensor([1, 2, 3], device=device)
    d = t.detach()
    assert d is not t and d.data_ptr() == t.data_ptr()
    d.add_(10)
    assert t.tolist() == [11, 12, 13]


def test_copy_with_broadcasting_and_casting(device):
    dst = agnostic.zeros(2, 3, dtype=agnostic.int32, device=device)
    result = dst.copy_(agnostic.tensor([1.7, 2.2, -3.9]))      # from a CPU source on every device
    assert result is dst
    assert dst.dtype is agnostic.int32 and dst.shape == (2, 3)
    assert dst.tolist() == [[1, 2, -3], [1, 2, -3]]
    back = agnostic.zeros(3, dtype=agnostic.float64).copy_(dst[0])   # to the CPU from the tensor's device
    assert back.tolist() == [1.0, 2.0, -3.0] and back.device == CPU


def test_copy_across_devices(cuda_device):
    src = agnostic.tensor([[1.0], [2.0]], device=cuda_device)
    dst = agnostic.zeros(2, 2)
    assert dst.copy_(src) is dst
    assert dst.tolist() == [[1.0, 1.0], [2.0, 2.0]] and dst.device == CPU


def test_copy_refuses_to_change_shape(device):
    dst = agnostic.zeros(2, 3, device=device)
    with pytest.raises(RuntimeError):
        dst.copy_(agnostic.zeros(4, device=device))
    with pytest.raises(RuntimeError):
        dst.copy_(agnostic.zeros(2, 2, 3, device=device))
    assert dst.shape == (2, 3)


# ----- devices in ops ----------------------------------------------------------------------------------------

def test_mixing_devices_raises_naming_both(cuda_device):
    a = agnostic.ones(2)
    b = agnostic.ones(2, device=cuda_device)
    for compute in (lambda: a + b, lambda: b + a, lambda: b.add_(a), lambda: agnostic.cat([a, b])):
        with pytest.raises(RuntimeError) as excinfo:
            compute()
        message = str(excinfo.value)
        assert "cpu" in message and str(cuda_device) in message, message


def test_zero_dim_cpu_tensor_acts_as_scalar_on_cuda(cuda_device):
    b = agnostic.tensor([1.0, 2.0], device=cuda_device)
    scalar = agnostic.tensor(3.0)
    for result in (b + scalar, scalar * b, b.add(scalar)):
        assert result.device == cuda_device
    assert (b + scalar).tolist() == [4.0, 5.0]
    assert (scalar * b).tolist() == [3.0, 6.0]
    b.add_(scalar)
    assert b.tolist() == [4.0, 5.0]


# ----- in-place ops ------------------------------------------------------------------------------------------

def test_in_place_keeps_shape(device):
    t = agnostic.zeros(3, device=device)
    t.add_(agnostic.ones(3, device=device))
    assert t.tolist() == [1.0, 1.0, 1.0]
    matrix = agnostic.zeros(2, 3, device=device)
    matrix.add_(agnostic.tensor([1.0, 2.0, 3.0], device=device))            # broadcasting into self is fine
    assert matrix.tolist() == [[1.0, 2.0, 3.0]] * 2
    with pytest.raises(RuntimeError, match="shape"):
        t.add_(agnostic.ones(2, 3, device=device))
    with pytest.raises(RuntimeError, match="shape"):
        t += agnostic.ones(2, 3, device=device)
    with pytest.raises(RuntimeError):
        t.mul_(agnostic.ones(4, device=device))
    assert t.shape == (3,) and t.tolist() == [1.0, 1.0, 1.0]


def test_in_place_refuses_float_results_into_int_tensors(device):
    t = agnostic.tensor([1, 2, 3], device=device)
    for compute in (lambda: t.add_(0.5), lambda: t.mul_(agnostic.tensor([1.5], device=device)),
                    lambda: t.div_(2), lambda: t.__itruediv__(2), lambda: t.__imul__(1.5)):
        with pytest.raises(RuntimeError, match="can't be cast"):
            compute()
    assert t.tolist() == [1, 2, 3] and t.dtype is agnostic.int64
    t.add_(2)
    t *= 2
    assert t.tolist() == [6, 8, 10] and t.dtype is agnostic.int64
    flags = agnostic.tensor([True, False], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        flags.add_(1)


def test_in_place_into_float_from_int_is_allowed(device):
    t = agnostic.zeros(2, device=device)
    t += agnostic.tensor([1, 2], device=device)
    assert t.dtype is agnostic.float32 and t.tolist() == [1.0, 2.0]


# ----- from_numpy / as_tensor / tensor -----------------------------------------------------------------------

def test_from_numpy_shares_memory():
    array = numpy.array([1.0, 2.0, 3.0])
    t = agnostic.from_numpy(array)
    assert t.dtype is agnostic.float64 and t.device == CPU
    array[0] = 7.0
    assert t.tolist() == [7.0, 2.0, 3.0]
    t.mul_(2)
    assert array.tolist() == [14.0, 4.0, 6.0]
    with pytest.raises(TypeError):
        agnostic.from_numpy([1.0, 2.0])


def test_as_tensor_shares_memory_with_matching_dtype():
    array = numpy.arange(4, dtype=numpy.int32)
    t = agnostic.as_tensor(array)
    assert t.dtype is agnostic.int32
    assert t.data_ptr() == array.__array_interface__["data"][0]
    array[0] = 9
    assert t.tolist()[0] == 9
    same = agnostic.as_tensor(array, dtype=agnostic.int32, device="cpu")
    assert same.data_ptr() == array.__array_interface__["data"][0]
    cast = agnostic.as_tensor(array, dtype=agnostic.float32)
    assert cast.dtype is agnostic.float32 and cast.data_ptr() != array.__array_interface__["data"][0]
    existing = agnostic.ones(2)
    assert agnostic.as_tensor(existing) is existing


def test_as_tensor_to_device(device):
    array = numpy.array([1.0, 2.0])
    t = agnostic.as_tensor(array, device=device)
    assert t.device == device and t.dtype is agnostic.float64 and t.tolist() == [1.0, 2.0]


def test_tensor_always_copies(device):
    array = numpy.array([1.0, 2.0])
    t = agnostic.tensor(array, device=device)
    array[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    source = agnostic.tensor([1, 2], device=device)
    copy = agnostic.tensor(source)
    assert copy is not source and copy.data_ptr() != source.data_ptr() and copy.device == device
    copy.add_(1)
    assert source.tolist() == [1, 2]


@pytest.mark.parametrize("data, expected", [
    ([1.0, 2.0], "float32"),
    (2.5, "float32"),
    ([1, 2], "int64"),
    (3, "int64"),
    ([True, False], "bool"),
    (True, "bool"),
    ([1, 2.0], "float32"),
    ([True, 1], "int64"),
    ([1, 1j], "complex64"),
    ([[1.5], [2.5]], "float32"),
    (numpy.array([1.0, 2.0]), "float64"),
    (numpy.array([1, 2], dtype=numpy.int32), "int32"),
    (numpy.array([1, 2], dtype=numpy.uint8), "uint8"),
    (numpy.array([True]), "bool"),
    (numpy.float64(1.0), "float64"),          # NumPy scalars keep their dtype, as arrays do
    (numpy.int32(3), "int32"),
    (numpy.float32(1.0), "float32"),
])
def test_dtype_inference(device, data, expected):
    assert agnostic.tensor(data, device=device).dtype is getattr(agnostic, expected)


def test_dtype_inference_follows_default_dtype(restore_default_dtype):
    agnostic.set_default_dtype(agnostic.float64)
    assert agnostic.tensor([1.0]).dtype is agnostic.float64
    assert agnostic.tensor(numpy.array([1.0], dtype=numpy.float32)).dtype is agnostic.float32


@pytest.mark.parametrize("data", [[[1, 2], [3]], [[1], [2, 3]], [[[1, 2]], [[3]]]])
def test_ragged_lists_raise_value_error(data):
    with pytest.raises(ValueError):
        agnostic.tensor(data)


# ----- factories ---------------------------------------------------------------------------------------------

def test_filled_factories(device):
    for factory, fill in ((agnostic.zeros, 0.0), (agnostic.ones, 1.0)):
        for t in (factory(2, 3, device=device), factory((2, 3), device=device), factory([2, 3], device=device)):
            assert t.shape == (2, 3) and t.device == device and t.dtype is agnostic.float32
            assert (host(t) == fill).all()
        typed = factory(4, dtype=agnostic.int32, device=device)
        assert typed.dtype is agnostic.int32 and typed.tolist() == [int(fill)] * 4
    e = agnostic.empty(3, 2, dtype=agnostic.float64, device=device)
    assert e.shape == (3, 2) and e.dtype is agnostic.float64 and e.device == device
    assert agnostic.zeros(0, device=device).shape == (0,)
    assert agnostic.zeros((), device=device).shape == ()


def test_negative_size_raises():
    with pytest.raises(RuntimeError, match="negative"):
        agnostic.zeros(2, -1)


def test_full(device):
    assert agnostic.full((2,), 3, device=device).dtype is agnostic.int64
    assert agnostic.full((2,), 3.0, device=device).dtype is agnostic.float32
    assert agnostic.full((2,), True, device=device).dtype is agnostic.bool
    t = agnostic.full((2, 2), 1.5, dtype=agnostic.float64, device=device)
    assert t.device == device and t.tolist() == [[1.5, 1.5], [1.5, 1.5]]


@pytest.mark.parametrize("dtype", [agnostic.float16, agnostic.float32, agnostic.float64, agnostic.complex64])
def test_negative_zero_is_kept(device, dtype):
    # CuPy writes scalar zeros with a memset (+0.0); PyTorch keeps the sign of -0.0 everywhere.
    def signs(tensor):
        values = tensor.cpu().numpy().ravel()
        return numpy.signbit(values.real).tolist()

    assert signs(agnostic.full((3,), -0.0, dtype=dtype, device=device)) == [True] * 3
    assert signs(agnostic.tensor(-0.0, dtype=dtype, device=device)) == [True]
    assert signs(agnostic.tensor(numpy.array(-0.0), dtype=dtype, device=device)) == [True]
    assert signs(agnostic.ones(3, dtype=dtype, device=device).fill_(-0.0)) == [True] * 3
    sliced = agnostic.ones(4, dtype=dtype, device=device)
    sliced[1:3] = -0.0
    assert signs(sliced) == [False, True, True, False]
    assert signs(agnostic.tensor(-0.0, device=device).reciprocal()) == [True]  # -inf
    assert agnostic.tensor(-0.0, device=device).reciprocal().item() == -math.inf


def test_like_factories(device):
    base = agnostic.ones(2, 3, dtype=agnostic.int32, device=device)
    for made in (agnostic.zeros_like(base), agnostic.ones_like(base), agnostic.empty_like(base),
                 agnostic.full_like(base, 7), agnostic.rand_like(agnostic.ones(2, 3, device=device)).to(agnostic.int32)):
        assert made.shape == (2, 3) and made.dtype is agnostic.int32 and made.device == device
    assert agnostic.zeros_like(base).tolist() == [[0] * 3] * 2
    assert agnostic.ones_like(base).tolist() == [[1] * 3] * 2
    assert agnostic.full_like(base, 7.9).tolist() == [[7] * 3] * 2
    assert agnostic.zeros_like(base, dtype=agnostic.float64).dtype is agnostic.float64
    assert agnostic.ones_like(base, device="cpu").device == CPU
    assert agnostic.randn_like(agnostic.ones(4, dtype=agnostic.float64, device=device)).dtype is agnostic.float64


@pytest.mark.parametrize("args", [
    (5,), (0, 10, 3), (10, 0, -3), (-5, 5, 2), (5, -5, -2), (1, 10, 4), (5, 5), (0,),
    (0, 1, 0.1), (0, 1, 0.3), (1, 2.5, 0.5), (-1, 1, 0.5), (0.5, 3), (0, 2.2, 0.2), (0, 1e-3, 1e-4), (5.0,),
])
def test_arange_length(device, args):
    start, end, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    t = agnostic.arange(*args, device=device)
    assert t.shape == (math.ceil((end - start) / step),)
    integral = all(isinstance(x, int) for x in args)
    assert t.dtype is (agnostic.int64 if integral else agnostic.float32)
    assert t.device == device
    if t.numel():
        assert t[0].item() == pytest.approx(start)
        assert t[-1].item() == pytest.approx(start + (t.numel() - 1) * step, rel=1e-6)


def test_arange_values_and_dtypes(device):
    assert agnostic.arange(0, 10, 3, device=device).tolist() == [0, 3, 6, 9]
    assert agnostic.arange(10, 0, -3, device=device).tolist() == [10, 7, 4, 1]
    assert agnostic.arange(-1.0, 1.0, 0.5, device=device).tolist() == [-1.0, -0.5, 0.0, 0.5]
    assert agnostic.arange(4, dtype=agnostic.float64, device=device).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert agnostic.arange(4, dtype=agnostic.float64, device=device).dtype is agnostic.float64
    assert agnostic.arange(0.0, 3.0, dtype=agnostic.int32, device=device).tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError):
        agnostic.arange(0, 10, 0, device=device)
    with pytest.raises(RuntimeError):
        agnostic.arange(0, 10, -1, device=device)


def test_linspace(device):
    t = agnostic.linspace(0, 1, 5, device=device)
    assert t.dtype is agnostic.float32 and t.device == device and t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert agnostic.linspace(-1, 1, 3, dtype=agnostic.float64, device=device).tolist() == [-1.0, 0.0, 1.0]
    assert agnostic.linspace(0, 10, 1, device=device).tolist() == [0.0]
    assert agnostic.linspace(0, 10, 0, device=device).shape == (0,)


def test_eye(device):
    t = agnostic.eye(2, 3, device=device)
    assert t.dtype is agnostic.float32 and t.device == device
    assert t.tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    square = agnostic.eye(3, dtype=agnostic.int32, device=device)
    assert square.shape == (3, 3) and square.dtype is agnostic.int32
    assert host(square).tolist() == numpy.eye(3, dtype=numpy.int32).tolist()


# ----- random ------------------------------------------------------------------------------------------------

def test_random_shapes_dtypes_and_ranges(device):
    r = agnostic.rand(200, 5, device=device)
    assert r.shape == (200, 5) and r.dtype is agnostic.float32 and r.device == device
    values = host(r)
    assert values.min() >= 0.0 and values.max() < 1.0 and values.std() > 0.1
    assert agnostic.rand((2, 3), dtype=agnostic.float64, device=device).dtype is agnostic.float64
    assert agnostic.rand((), device=device).shape == ()

    n = agnostic.randn(4000, device=device)
    assert n.shape == (4000,) and n.dtype is agnostic.float32
    assert abs(float(host(n).mean())) < 0.1 and 0.9 < float(host(n).std()) < 1.1

    i = agnostic.randint(-3, 3, (1000,), device=device)
    assert i.dtype is agnostic.int64 and i.shape == (1000,) and i.device == device
    assert set(host(i).tolist()) == {-3, -2, -1, 0, 1, 2}
    assert agnostic.randint(5, (2, 3), device=device).shape == (2, 3)
    assert agnostic.randint(0, 10, (3,), dtype=agnostic.int32, device=device).dtype is agnostic.int32
    assert host(agnostic.randint(5, (100,), device=device)).max() <= 4

    p = agnostic.randperm(10, device=device)
    assert p.dtype is agnostic.int64 and p.device == device
    assert sorted(p.tolist()) == list(range(10))
    assert agnostic.randperm(0, device=device).shape == (0,)


def test_random_errors():
    with pytest.raises(RuntimeError):
        agnostic.rand(2, dtype=agnostic.int64)
    with pytest.raises(RuntimeError):
        agnostic.randint(3, 1, (2,))


def test_manual_seed_reproducible(device):
    def draw():
        return (host(agnostic.rand(5, device=device)), host(agnostic.randn(5, device=device)),
                host(agnostic.randint(0, 1000, (5,), device=device)), host(agnostic.randperm(8, device=device)))

    assert isinstance(agnostic.manual_seed(1234), agnostic.Generator)
    first = draw()
    second = draw()
    agnostic.manual_seed(1234)
    again = draw()
    for a, b in zip(first, again):
        numpy.testing.assert_array_equal(a, b)
    assert not numpy.array_equal(first[0], second[0])          # the stream advances
    agnostic.manual_seed(4321)
    assert not numpy.array_equal(first[0], host(agnostic.rand(5, device=device)))
    assert agnostic.initial_seed() == 4321


def test_generator_reproducible(device):
    g1 = agnostic.Generator(device).manual_seed(7)
    g2 = agnostic.Generator(device).manual_seed(7)
    assert isinstance(g1, agnostic.Generator) and g1.device == device and g1.initial_seed() == 7
    a = agnostic.rand(6, generator=g1, device=device)
    b = agnostic.rand(6, generator=g2, device=device)
    assert a.device == device
    numpy.testing.assert_array_equal(host(a), host(b))
    numpy.testing.assert_array_equal(host(agnostic.randn(3, generator=g1)), host(agnostic.randn(3, generator=g2)))
    agnostic.manual_seed(0)                    # the global seed does not touch explicit generators
    numpy.testing.assert_array_equal(host(agnostic.randperm(9, generator=g1)),
                                     host(agnostic.randperm(9, generator=g2)))
    g3 = agnostic.Generator(device).manual_seed(8)
    assert not numpy.array_equal(host(agnostic.rand(6, generator=g3)),
                                 host(agnostic.rand(6, generator=agnostic.Generator(device).manual_seed(7))))


def test_generator_on_wrong_device_raises(cuda_device):
    cpu_generator = agnostic.Generator("cpu")
    with pytest.raises(RuntimeError):
        agnostic.rand(2, generator=cpu_generator, device=cuda_device)


# ----- errors ------------------------------------------------------------------------------------------------

def test_item_on_many_elements_raises(device):
    with pytest.raises(RuntimeError, match="2 elements"):
        agnostic.tensor([1, 2], device=device).item()
    with pytest.raises(RuntimeError):
        agnostic.zeros(0, device=device).item()


def test_bool_is_ambiguous_for_many_elements(device):
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(agnostic.tensor([1, 2], device=device))
    assert bool(agnostic.tensor([1], device=device)) is True
    assert bool(agnostic.tensor(0.0, device=device)) is False


@pytest.mark.parametrize("call", [
    lambda t: t.size(2), lambda t: t.size(-3), lambda t: t.stride(2), lambda t: t.sum(dim=5),
    lambda t: t.transpose(0, 2), lambda t: t.squeeze(4), lambda t: t.unsqueeze(-4),
])
def test_out_of_range_dims_raise_index_error_with_range(device, call):
    t = agnostic.zeros(2, 3, device=device)
    with pytest.raises(IndexError) as excinfo:
        call(t)
    message = str(excinfo.value)
    assert "[-2, 1]" in message or "[-3, 2]" in message, message


def test_size_of_zero_dim_tensor_raises_clear_index_error():
    with pytest.raises(IndexError, match="(?i)dimension"):
        agnostic.zeros(()).size(0)


def test_logical_ops_take_truth_in_the_common_dtype(device):
    # A float64 0-dim tensor beside a float16 tensor promotes to float16, where 1.2e-126 is 0 (as in PyTorch).
    tiny = agnostic.tensor(1.2e-126, dtype=agnostic.float64, device=device)
    ones = agnostic.ones(2, dtype=agnostic.float16, device=device)
    assert agnostic.logical_and(tiny, ones).tolist() == [False, False]
    assert agnostic.logical_or(ones * 0, tiny).tolist() == [False, False]
    assert agnostic.logical_xor(agnostic.tensor([0.0, 1e-300], dtype=agnostic.float64, device=device), 1).tolist() \
        == [True, False]


def test_inf_norm_refuses_only_empty_reduced_dims(device):
    empty_columns = agnostic.empty(1, 0, device=device)
    assert agnostic.norm(empty_columns, math.inf, dim=0).shape == (0,)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        agnostic.norm(empty_columns, math.inf, dim=1)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        agnostic.norm(empty_columns, -math.inf)
