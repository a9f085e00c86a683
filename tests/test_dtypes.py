"""dtypes: PyTorch's promotion table, result_type with 0-dim tensors and Python scalars, finfo/iinfo, properties."""

import numpy
import pytest

import agnostic

ALL_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
             "complex64", "complex128"]


def dt(name):
    return getattr(agnostic, name)


# torch.promote_types(a, b) for every unordered pair of the 12 dtypes agnostic supports (PyTorch's table).
PROMOTIONS = [
    ("bool", "bool", "bool"), ("bool", "uint8", "uint8"), ("bool", "int8", "int8"), ("bool", "int16", "int16"),
    ("bool", "int32", "int32"), ("bool", "int64", "int64"), ("bool", "float16", "float16"),
    ("bool", "bfloat16", "bfloat16"), ("bool", "float32", "float32"), ("bool", "float64", "float64"),
    ("bool", "complex64", "complex64"), ("bool", "complex128", "complex128"),
    ("uint8", "uint8", "uint8"), ("uint8", "int8", "int16"), ("uint8", "int16", "int16"), ("uint8", "int32", "int32"),
    ("uint8", "int64", "int64"), ("uint8", "float16", "float16"), ("uint8", "bfloat16", "bfloat16"),
    ("uint8", "float32", "float32"), ("uint8", "float64", "float64"), ("uint8", "complex64", "complex64"),
    ("uint8", "complex128", "complex128"),
    ("int8", "int8", "int8"), ("int8", "int16", "int16"), ("int8", "int32", "int32"), ("int8", "int64", "int64"),
    ("int8", "float16", "float16"), ("int8", "bfloat16", "bfloat16"), ("int8", "float32", "float32"),
    ("int8", "float64", "float64"), ("int8", "complex64", "complex64"), ("int8", "complex128", "complex128"),
    ("int16", "int16", "int16"), ("int16", "int32", "int32"), ("int16", "int64", "int64"),
    ("int16", "float16", "float16"), ("int16", "bfloat16", "bfloat16"), ("int16", "float32", "float32"),
    ("int16", "float64", "float64"), ("int16", "complex64", "complex64"), ("int16", "complex128", "complex128"),
    ("int32", "int32", "int32"), ("int32", "int64", "int64"), ("int32", "float16", "float16"),
    ("int32", "bfloat16", "bfloat16"), ("int32", "float32", "float32"), ("int32", "float64", "float64"),
    ("int32", "complex64", "complex64"), ("int32", "complex128", "complex128"),
    ("int64", "int64", "int64"), ("int64", "float16", "float16"), ("int64", "bfloat16", "bfloat16"),
    ("int64", "float32", "float32"), ("int64", "float64", "float64"), ("int64", "complex64", "complex64"),
    ("int64", "complex128", "complex128"),
    ("float16", "float16", "float16"), ("float16", "bfloat16", "float32"), ("float16", "float32", "float32"),
    ("float16", "float64", "float64"), ("float16", "complex64", "complex64"), ("float16", "complex128", "complex128"),
    ("bfloat16", "bfloat16", "bfloat16"), ("bfloat16", "float32", "float32"), ("bfloat16", "float64", "float64"),
    ("bfloat16", "complex64", "complex64"), ("bfloat16", "complex128", "complex128"),
    ("float32", "float32", "float32"), ("float32", "float64", "float64"), ("float32", "complex64", "complex64"),
    ("float32", "complex128", "complex128"),
    ("float64", "float64", "float64"), ("float64", "complex64", "complex128"), ("float64", "complex128", "complex128"),
    ("complex64", "complex64", "complex64"), ("complex64", "complex128", "complex128"),
    ("complex128", "complex128", "complex128"),
]


def test_promotion_table_is_complete():
    pairs = {frozenset((a, b)) for a, b, _ in PROMOTIONS}
    assert len(PROMOTIONS) == len(pairs) == 12 * 13 // 2


@pytest.mark.parametrize("a, b, expected", PROMOTIONS, ids=[f"{a}+{b}" for a, b, _ in PROMOTIONS])
def test_promote_types(a, b, expected):
    assert agnostic.promote_types(dt(a), dt(b)) is dt(expected)
    assert agnostic.promote_types(dt(b), dt(a)) is dt(expected)        # symmetric


def test_promote_types_accepts_names_and_numpy_types():
    assert agnostic.promote_types("uint8", "int8") is agnostic.int16
    assert agnostic.promote_types(numpy.int32, numpy.float16) is agnostic.float16


# ----- result_type: dimensioned tensors > 0-dim tensors > Python scalars, by category ---------------------

def _operand(spec):
    """('t', name): a 1-d tensor; ('s', name): a 0-dim tensor; anything else: that Python scalar."""
    if isinstance(spec, tuple):
        kind, name = spec
        return agnostic.ones(3, dtype=dt(name)) if kind == "t" else agnostic.tensor(1, dtype=dt(name))
    return spec


# Expected values are torch.result_type's.
RESULT_TYPES = [
    (("t", "int32"), ("s", "float64"), "float64"),      # higher category 0-dim tensor wins its category...
    (("t", "float32"), ("s", "float64"), "float32"),    # ...but not its width
    (("t", "uint8"), ("s", "int64"), "uint8"),
    (("t", "uint8"), ("s", "int8"), "uint8"),
    (("t", "int32"), ("s", "int64"), "int32"),
    (("t", "int16"), ("s", "float16"), "float16"),
    (("t", "float16"), ("s", "float64"), "float16"),
    (("t", "bool"), ("s", "int8"), "int8"),
    (("t", "bool"), ("s", "float64"), "float64"),
    (("t", "uint8"), ("s", "bool"), "uint8"),
    (("t", "float32"), ("s", "complex128"), "complex64"),
    (("t", "float64"), ("s", "complex64"), "complex128"),
    (("t", "complex64"), ("s", "float64"), "complex64"),
    (("t", "int32"), ("t", "int64"), "int64"),          # two dimensioned tensors: plain promotion
    (("t", "int32"), 2.5, "float32"),                   # int tensor + Python float -> default dtype
    (("t", "int64"), 2.5, "float32"),
    (("t", "bool"), 1, "int64"),
    (("t", "bool"), True, "bool"),
    (("t", "bool"), 1.5, "float32"),
    (("t", "uint8"), 1, "uint8"),
    (("t", "int8"), 1000, "int8"),
    (("t", "float16"), 2.5, "float16"),
    (("t", "float32"), 1j, "complex64"),
    (("t", "float64"), 1j, "complex128"),
    (("t", "int64"), 1j, "complex64"),
    (("t", "complex64"), 2.5, "complex64"),
    (("s", "int32"), ("s", "float16"), "float16"),      # two 0-dim tensors: plain promotion
    (("s", "uint8"), ("s", "int8"), "int16"),
    (("s", "int32"), 2.5, "float32"),
    (("s", "int32"), 7, "int32"),
    (("s", "bool"), 7, "int64"),
    (("s", "float64"), 2, "float64"),
    (("s", "float16"), 2.5, "float16"),
    (("s", "float32"), 1j, "complex64"),
    (("s", "float64"), 1j, "complex128"),
    (2, 3, "int64"),
    (2, 2.5, "float32"),
    (True, False, "bool"),
    (True, 2, "int64"),
]


@pytest.mark.parametrize("a, b, expected", RESULT_TYPES, ids=[f"{a}-{b}" for a, b, _ in RESULT_TYPES])
def test_result_type(a, b, expected):
    assert agnostic.result_type(_operand(a), _operand(b)) is dt(expected)


def test_result_type_is_what_ops_produce():
    ints = agnostic.tensor([1, 2], dtype=agnostic.int32)
    assert (ints + agnostic.tensor(1.0, dtype=agnostic.float64)).dtype is agnostic.float64
    assert (agnostic.tensor([1.0, 2.0]) + agnostic.tensor(1.0, dtype=agnostic.float64)).dtype is agnostic.float32
    assert (agnostic.tensor([1, 2], dtype=agnostic.uint8) + agnostic.tensor(1)).dtype is agnostic.uint8
    assert (agnostic.tensor([1, 2]) + 2.5).dtype is agnostic.float32
    assert (agnostic.tensor([True, False]) + 1).dtype is agnostic.int64
    assert (ints / ints).dtype is agnostic.float32


@pytest.fixture
def restore_default_dtype():
    saved = agnostic.get_default_dtype()
    yield
    agnostic.set_default_dtype(saved)


def test_result_type_follows_default_dtype(restore_default_dtype):
    agnostic.set_default_dtype(agnostic.float64)
    assert agnostic.result_type(agnostic.tensor([1, 2]), 2.5) is agnostic.float64
    assert agnostic.result_type(agnostic.tensor([1, 2]), 1j) is agnostic.complex128
    assert agnostic.result_type(agnostic.tensor([1.0], dtype=agnostic.float32), 2.5) is agnostic.float32


def test_result_type_rejects_non_numbers():
    with pytest.raises(TypeError):
        agnostic.result_type(agnostic.tensor([1]), "a")


# ----- finfo / iinfo -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, numpy_type", [
    ("float16", numpy.float16), ("float32", numpy.float32), ("float64", numpy.float64),
    ("complex64", numpy.float32), ("complex128", numpy.float64),
])
def test_finfo_matches_numpy(name, numpy_type):
    info, reference = agnostic.finfo(dt(name)), numpy.finfo(numpy_type)
    assert info.bits == reference.bits
    assert info.eps == float(reference.eps)
    assert info.max == float(reference.max)
    assert info.min == float(reference.min)
    assert info.tiny == float(reference.tiny)
    assert info.smallest_normal == float(reference.smallest_normal)
    assert info.dtype == numpy.dtype(numpy_type).name
    for attribute in ("eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert type(getattr(info, attribute)) is float, attribute
    assert type(info.bits) is int


@pytest.mark.parametrize("name, resolution", [("float16", 0.001), ("float32", 1e-06), ("float64", 1e-15)])
def test_finfo_resolution_is_a_power_of_ten(name, resolution):
    # torch.finfo(...).resolution is 10 ** -precision as a Python float: exactly 0.001 for float16, not the
    # float16 value nearest it (0.0010004...).
    assert agnostic.finfo(dt(name)).resolution == resolution


def test_finfo_bfloat16():
    info = agnostic.finfo(agnostic.bfloat16)        # torch.finfo(torch.bfloat16)
    assert info.bits == 16
    assert info.eps == 0.0078125
    assert info.max == 3.3895313892515355e+38
    assert info.min == -3.3895313892515355e+38
    assert info.tiny == info.smallest_normal == 1.1754943508222875e-38
    assert info.resolution == 0.01
    assert info.dtype == "bfloat16"


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_half_precision_stays_half_beside_python_scalars_and_in_products(device, name):
    # As PyTorch: a Python scalar takes the tensor's dtype; a product of two bfloat16 matrices is bfloat16 (NumPy's
    # bfloat16, from ml_dtypes, would widen both to float32).
    dtype = getattr(agnostic, name)
    x = agnostic.tensor([1.0, 2.0, 3.0], dtype=dtype, device=device)
    for result in (x * 2.5, 2.5 * x, x + 1.5, x / 3, x - 0.25, x ** 2.0, x @ x, x[None] @ x[:, None],
                   agnostic.addmm(x[:2, None] * x[None, :2], x[:2, None], x[None, :2]), agnostic.mm(x[None], x[:, None])):
        assert result.dtype is dtype
    matrix = agnostic.tensor([[1.0, 2.0, 3.0], [0.5, 0.25, 2.0]], dtype=dtype, device=device, requires_grad=True)
    layer = agnostic.nn.Linear(3, 2).to(device=device, dtype=dtype)
    for result in (agnostic.einsum("ij,kj->ik", matrix, matrix), agnostic.bmm(matrix[None], matrix.mT[None]),
                   agnostic.tensordot(matrix, matrix.mT, 1), layer(matrix)):
        assert result.dtype is dtype
        result.sum().backward()
    assert matrix.grad.dtype is dtype and layer.weight.grad.dtype is dtype
    assert (x * 2.5).float().tolist() == [2.5, 5.0, 7.5]
    assert (x @ x).item() == 14.0
    torch = pytest.importorskip("torch")
    assert str((torch.ones(2, dtype=getattr(torch, name)) * 2.5).dtype) == f"torch.{name}"


def test_finfo_default_is_default_dtype(restore_default_dtype):
    assert agnostic.finfo().dtype == "float32"
    agnostic.set_default_dtype(agnostic.float64)
    assert agnostic.finfo().dtype == "float64"
    assert agnostic.finfo().eps == float(numpy.finfo(numpy.float64).eps)


@pytest.mark.parametrize("name", ["bool", "uint8", "int32", "int64"])
def test_finfo_rejects_non_floating(name):
    with pytest.raises(TypeError):
        agnostic.finfo(dt(name))


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_numpy(name):
    info, reference = agnostic.iinfo(dt(name)), numpy.iinfo(name)
    assert info.bits == reference.bits
    assert info.min == int(reference.min)
    assert info.max == int(reference.max)
    assert type(info.min) is int and type(info.max) is int
    assert info.dtype == name


def test_iinfo_known_values():
    assert (agnostic.iinfo(agnostic.uint8).min, agnostic.iinfo(agnostic.uint8).max) == (0, 255)
    assert agnostic.iinfo(agnostic.int64).min == -2 ** 63
    assert agnostic.iinfo(agnostic.int64).max == 2 ** 63 - 1


@pytest.mark.parametrize("name", ["bool", "float32", "float16", "complex64"])
def test_iinfo_rejects_non_integer(name):
    with pytest.raises(TypeError):
        agnostic.iinfo(dt(name))


# ----- dtype properties --------------------------------------------------------------------------------------

# name: (is_floating_point, is_complex, is_signed, itemsize)
PROPERTIES = {
    "bool": (False, False, False, 1), "uint8": (False, False, False, 1), "int8": (False, False, True, 1),
    "int16": (False, False, True, 2), "int32": (False, False, True, 4), "int64": (False, False, True, 8),
    "float16": (True, False, True, 2), "bfloat16": (True, False, True, 2), "float32": (True, False, True, 4),
    "float64": (True, False, True, 8), "complex64": (False, True, True, 8), "complex128": (False, True, True, 16),
}


@pytest.mark.parametrize("name", ALL_NAMES)
def test_dtype_properties(name):
    d = dt(name)
    assert (d.is_floating_point, d.is_complex, d.is_signed, d.itemsize) == PROPERTIES[name]
    assert repr(d) == f"agnostic.{name}"


@pytest.mark.parametrize("name, real", [
    ("complex64", "float32"), ("complex128", "float64"), ("float32", "float32"), ("float16", "float16"),
    ("int32", "int32"), ("bool", "bool"),
])
def test_to_real(name, real):
    assert dt(name).to_real() is dt(real)


@pytest.mark.parametrize("name, complex_name", [
    ("float32", "complex64"), ("float64", "complex128"), ("bfloat16", "complex64"),
    ("complex64", "complex64"), ("complex128", "complex128"),
])
def test_to_complex(name, complex_name):
    assert dt(name).to_complex() is dt(complex_name)


@pytest.mark.parametrize("name", ["int32", "uint8", "bool"])
def test_to_complex_rejects_non_floating(name):
    with pytest.raises(RuntimeError):
        dt(name).to_complex()


def test_aliases_are_the_same_objects():
    assert agnostic.half is agnostic.float16
    assert agnostic.float is agnostic.float32
    assert agnostic.double is agnostic.float64
    assert agnostic.short is agnostic.int16
    assert agnostic.int is agnostic.int32
    assert agnostic.long is agnostic.int64
    assert agnostic.cfloat is agnostic.complex64
    assert agnostic.cdouble is agnostic.complex128
    assert agnostic.float32 == agnostic.float and agnostic.float32 != agnostic.float64


def test_dtypes_pickle_to_the_same_object():
    import pickle

    for name in ALL_NAMES:
        assert pickle.loads(pickle.dumps(dt(name))) is dt(name)


# ----- as_dtype ----------------------------------------------------------------------------------------------

from agnostic._dtypes import as_dtype  # noqa: E402  (the converter every dtype= argument goes through)


@pytest.mark.parametrize("spec, expected", [
    ("float32", "float32"), ("int64", "int64"), ("bool", "bool"), ("complex128", "complex128"),
    ("agnostic.float64", "float64"), ("float", "float32"), ("double", "float64"), ("long", "int64"),
    ("half", "float16"), ("int", "int32"), ("bfloat16", "bfloat16"),
    (numpy.float32, "float32"), (numpy.dtype("float64"), "float64"), (numpy.dtype("int16"), "int16"),
    (numpy.uint8, "uint8"), (numpy.bool_, "bool"), (numpy.complex64, "complex64"), (numpy.int8, "int8"),
    (float, "float64"), (int, "int64"), (bool, "bool"), (complex, "complex128"),
])
def test_as_dtype(spec, expected):
    assert as_dtype(spec) is dt(expected)


def test_as_dtype_passes_dtypes_and_none_through():
    assert as_dtype(agnostic.int8) is agnostic.int8
    assert as_dtype(None) is None


@pytest.mark.parametrize("spec", ["float128", "floatt", "", numpy.uint16, numpy.dtype("uint32"), "str", object])
def test_as_dtype_rejects_unknown(spec):
    with pytest.raises(TypeError):
        as_dtype(spec)


def test_dtype_arguments_accept_names_and_numpy_dtypes():
    assert agnostic.zeros(2, dtype="float64").dtype is agnostic.float64
    assert agnostic.zeros(2, dtype=numpy.int16).dtype is agnostic.int16
    assert agnostic.tensor([1, 2], dtype=numpy.dtype("uint8")).dtype is agnostic.uint8


def test_batched_bfloat16_products_of_the_cuda_backend_take_one_product_per_matrix(monkeypatch):
    # The CUDA backend's workaround for CuPy's batched products (no bfloat16), its array calls answered by NumPy
    # here: broadcast batches, vectors on either side, each matrix product into its slice.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from agnostic._backends import cuda as cuda_backend

    monkeypatch.setattr(cuda_backend, "require_cupy", lambda: numpy)
    rng = numpy.random.default_rng(0)
    for shape_a, shape_b in (((2, 3, 4), (4, 5)), ((2, 1, 3, 4), (3, 4, 2)), ((4,), (2, 4, 3)), ((2, 3, 4), (4,))):
        a = rng.standard_normal(shape_a).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal(shape_b).astype(ml_dtypes.bfloat16)
        product = cuda_backend._batched_bfloat16_matmul(a, b)
        expected = numpy.matmul(a.astype(numpy.float32), b.astype(numpy.float32))
        assert product.dtype == a.dtype and product.shape == expected.shape
        numpy.testing.assert_allclose(product.astype(numpy.float32), expected, rtol=1e-2, atol=1e-2)
