"""Random numbers: every device follows the same Philox4x64-10 stream, checked against an independent NumPy reference.

The reference below recomputes Philox4x64-10 from its definition (Salmon et al., SC11; NumPy's philox.h) with
32-bit limb arithmetic, and is itself checked against ``numpy.random.Philox``. CPU results must equal it bit for bit;
CUDA results too, except Box-Muller normals, whose log/sin/cos come from CUDA's math library (a few ulp).
"""

import numpy
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agnostic
from agnostic._backends import philox as _philox
from agnostic.cuda import _random as cuda_random
from agnostic.ops import random as random_ops

NORMAL_ULPS = 8  # NumPy's float32 log is within 4 ulp, CUDA's logf/sincosf within 2: products stay under 8
MASK64 = (1 << 64) - 1


# ----- independent reference -------------------------------------------------------------------------------------
def _mulhilo(a, multiplier):
    """High and low 64-bit words of ``a * multiplier`` for a uint64 array, from 32-bit limbs."""
    low32 = numpy.uint64(0xFFFFFFFF)
    a_lo, a_hi = a & low32, a >> numpy.uint64(32)
    m_lo, m_hi = numpy.uint64(multiplier & 0xFFFFFFFF), numpy.uint64(multiplier >> 32)
    lo_lo, hi_lo, lo_hi, hi_hi = a_lo * m_lo, a_hi * m_lo, a_lo * m_hi, a_hi * m_hi
    cross = (lo_lo >> numpy.uint64(32)) + (hi_lo & low32) + lo_hi
    high = hi_hi + (hi_lo >> numpy.uint64(32)) + (cross >> numpy.uint64(32))
    return high, a * numpy.uint64(multiplier)


def reference_words(seed, start, count):
    """The first ``count`` 64-bit words of the blocks at counters ``start + 1, start + 2, ...`` under key ``seed``."""
    blocks = -(-count // 4)
    base = start + 1
    c0 = numpy.uint64(base & MASK64) + numpy.arange(blocks, dtype=numpy.uint64)
    c1 = numpy.uint64(base >> 64) + (c0 < numpy.uint64(base & MASK64)).astype(numpy.uint64)
    c2 = numpy.zeros(blocks, numpy.uint64)
    c3 = numpy.zeros(blocks, numpy.uint64)
    key0, key1 = seed, 0
    for round_index in range(10):
        if round_index:
            key0, key1 = (key0 + 0x9E3779B97F4A7C15) & MASK64, (key1 + 0xBB67AE8584CAA73B) & MASK64
        hi0, lo0 = _mulhilo(c0, 0xD2E7470EE14C6C93)
        hi1, lo1 = _mulhilo(c2, 0xCA5A826395121157)
        c0, c1, c2, c3 = hi1 ^ c1 ^ numpy.uint64(key0), lo1, hi0 ^ c3 ^ numpy.uint64(key1), lo0
    return numpy.stack([c0, c1, c2, c3], axis=1).reshape(-1)[:count]


def reference_uniform(seed, start, count, dtype=numpy.float32, bits=None):
    """Uniforms as NumPy's Generator.random makes them; ``bits`` keeps only the top bits of each u32."""
    if numpy.dtype(dtype) == numpy.float64:
        words = reference_words(seed, start, count)
        return (words >> numpy.uint64(11)).astype(numpy.float64) * 2.0 ** -53
    bits = 24 if bits is None else bits
    halves = reference_words(seed, start, -(-count // 2)).view(numpy.uint32)[:count]  # little-endian: low half first
    return (halves >> numpy.uint32(32 - bits)).astype(numpy.float32) * numpy.float32(2.0 ** -bits)


def uniform_blocks(count, dtype=numpy.float32):
    return -(-count // (4 if numpy.dtype(dtype) == numpy.float64 else 8))


def reference_normal(seed, start, count, dtype=numpy.float32):
    """Box-Muller over the documented layout: cos values first, then sin values of the same pairs."""
    dtype = numpy.dtype(dtype)
    per_block = 4 if dtype == numpy.float64 else 8
    half_blocks = -(-(-(-count // 2)) // per_block)
    half = half_blocks * per_block
    radius_uniform = reference_uniform(seed, start, half, dtype)
    angle_uniform = reference_uniform(seed, start + half_blocks, half, dtype)
    radius = numpy.sqrt(numpy.log(dtype.type(1) - radius_uniform) * dtype.type(-2))
    angle = angle_uniform * dtype.type(2 * numpy.pi)
    cos_part = numpy.cos(angle) * radius
    sin_part = numpy.sin(angle) * radius
    return numpy.concatenate([cos_part, sin_part[:max(count - half, 0)]])[:count], 2 * half_blocks


def reference_integers(seed, start, count, low, high):
    words = reference_words(seed, start, count)
    return numpy.array([low + int(word) % (high - low) for word in words], dtype=numpy.int64)


def state_of(seed, offset):
    return agnostic.tensor(numpy.array([seed, offset], "<u8").view(numpy.uint8))


def generator_at(device, seed, offset=0):
    return agnostic.Generator(device).set_state(state_of(seed, offset))


def host(tensor):
    return tensor.cpu().numpy()


def assert_normals_close(actual, expected, device):
    if device.type == "cpu":
        numpy.testing.assert_array_equal(actual, expected)
        return
    tolerance = NORMAL_ULPS * numpy.spacing(numpy.maximum(numpy.abs(actual), numpy.abs(expected)))
    assert (numpy.abs(actual - expected) <= tolerance).all(), numpy.max(numpy.abs(actual - expected) / tolerance)


@pytest.fixture
def small_chunks(monkeypatch):
    """Split CPU draws into 3-block chunks on threads, so chunk boundaries and the thread pool see small sizes."""
    monkeypatch.setattr(_philox, "_CHUNK_BLOCKS", 3)
    monkeypatch.setattr(_philox, "_PARALLEL_BLOCKS", 6)
    monkeypatch.setattr(_philox, "_worker_count", lambda: 2)


@pytest.fixture(autouse=True)
def restore_seed():
    """Leave the global generators as an unseeded process would find them."""
    yield
    agnostic.manual_seed(random_ops._DEFAULT_SEED)


# ----- the reference is NumPy's Philox -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed, start", [(0, 0), (12345, 3), (MASK64, MASK64 - 1), (2 ** 63 + 5, 2 ** 40)])
def test_reference_is_numpys_philox(seed, start):
    expected = numpy.random.Philox(key=seed, counter=start).random_raw(37)
    numpy.testing.assert_array_equal(reference_words(seed, start, 37), expected)


def test_rand_is_numpys_philox_stream(device):
    agnostic.manual_seed(2024)
    count = 3 * 2 ** 17 + 5  # several CPU chunks, so the threaded path runs
    expected = numpy.random.Generator(numpy.random.Philox(key=2024)).random(count, dtype=numpy.float32)
    numpy.testing.assert_array_equal(host(agnostic.rand(count, device=device)), expected)


# ----- bit-exact draws on every device ---------------------------------------------------------------------------
@pytest.mark.parametrize("count", [0, 1, 2, 7, 8, 9, 17, 100, 1001])
@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64])
def test_rand_matches_reference(device, count, dtype):
    generator = generator_at(device, 77, 5)
    first = host(agnostic.rand(count, generator=generator, dtype=dtype))
    second = host(agnostic.rand(3, generator=generator, dtype=dtype))
    numpy_dtype = dtype.numpy_dtype
    numpy.testing.assert_array_equal(first, reference_uniform(77, 5, count, numpy_dtype))
    numpy.testing.assert_array_equal(second, reference_uniform(77, 5 + uniform_blocks(count, numpy_dtype), 3,
                                                               numpy_dtype))
    assert first.dtype == numpy_dtype and ((0 <= first) & (first < 1)).all()


@pytest.mark.parametrize("dtype, bits", [(agnostic.float16, 11), (agnostic.bfloat16, 8)])
def test_rand_half_precision_keeps_top_bits(device, dtype, bits):
    try:
        values = agnostic.rand(1000, generator=generator_at(device, 3), dtype=dtype)
    except (RuntimeError, TypeError, ValueError, NotImplementedError) as error:  # bfloat16: ml_dtypes, CuPy
        pytest.skip(f"{dtype} unavailable here: {error}")
    values = host(values).astype(numpy.float32)
    numpy.testing.assert_array_equal(values, reference_uniform(3, 0, 1000, numpy.float32, bits))
    assert values.max() < 1


def test_uniform_fill_matches_reference(device):
    tensor = agnostic.empty(4, 50, device=device)
    tensor.uniform_(-2.5, 4.0, generator=generator_at(device, 9))
    u = reference_uniform(9, 0, 200)
    expected = u * numpy.float32(6.5) + numpy.float32(-2.5)
    numpy.testing.assert_array_equal(host(tensor).reshape(-1), expected)
    assert ((-2.5 <= host(tensor)) & (host(tensor) <= 4.0)).all()


@pytest.mark.parametrize("low, high", [(0, 10), (-5, 5), (0, 2 ** 32), (-(2 ** 63), 2 ** 63 - 1),
                                       (2 ** 62, 2 ** 62 + 3)])
def test_randint_matches_reference(device, low, high):
    values = agnostic.randint(low, high, (101,), generator=generator_at(device, 11, 2))
    assert values.dtype is agnostic.int64
    numpy.testing.assert_array_equal(host(values), reference_integers(11, 2, 101, low, high))
    assert ((low <= host(values)) & (host(values) < high)).all()


def test_randint_forms_and_dtypes(device):
    agnostic.manual_seed(1)
    assert agnostic.randint(5, (3, 4), device=device).shape == (3, 4)
    small = agnostic.randint(-3, 3, (50,), dtype=agnostic.int8, device=device)
    assert small.dtype is agnostic.int8 and ((-3 <= host(small)) & (host(small) < 3)).all()
    assert agnostic.randint(0, 2, (8,), dtype=agnostic.bool, device=device).dtype is agnostic.bool
    assert agnostic.randint(0, 4, (8,), dtype=agnostic.float32, device=device).dtype is agnostic.float32
    with pytest.raises(RuntimeError, match="int8"):
        agnostic.randint(0, 300, (2,), dtype=agnostic.int8, device=device)
    with pytest.raises(RuntimeError, match="from"):
        agnostic.randint(4, 4, (2,), device=device)


@pytest.mark.parametrize("n", [0, 1, 2, 10, 257])
def test_randperm_matches_reference(device, n):
    values = host(agnostic.randperm(n, generator=generator_at(device, 21), device=device))
    expected = numpy.argsort(reference_words(21, 0, n), kind="stable")
    numpy.testing.assert_array_equal(values, expected)
    numpy.testing.assert_array_equal(numpy.sort(values), numpy.arange(n))
    assert values.dtype == numpy.int64


def test_bernoulli_matches_reference(device):
    probabilities = agnostic.linspace(0, 1, 300, device=device)
    samples = agnostic.bernoulli(probabilities, generator=generator_at(device, 5))
    expected = (reference_uniform(5, 0, 300) < host(probabilities)).astype(numpy.float32)
    numpy.testing.assert_array_equal(host(samples), expected)
    scalar = agnostic.bernoulli(agnostic.zeros(300, dtype=agnostic.float64, device=device), 0.25,
                                generator=generator_at(device, 5))
    numpy.testing.assert_array_equal(host(scalar), (reference_uniform(5, 0, 300, numpy.float64) < 0.25))
    assert scalar.dtype is agnostic.float64
    with pytest.raises(RuntimeError, match=r"\[0, 1\]"):
        agnostic.bernoulli(probabilities, 1.5)


@pytest.mark.parametrize("count", [1, 2, 3, 16, 17, 33, 1000])
@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64])
def test_randn_matches_reference(device, count, dtype):
    generator = generator_at(device, 4, 1)
    values = host(agnostic.randn(count, generator=generator, dtype=dtype))
    expected, blocks = reference_normal(4, 1, count, dtype.numpy_dtype)
    assert_normals_close(values, expected, device)
    numpy.testing.assert_array_equal(host(generator.get_state()), host(state_of(4, 1 + blocks)))


def test_normal_fill_and_normal(device):
    tensor = agnostic.empty(64, device=device).normal_(3.0, 0.5, generator=generator_at(device, 8))
    z, _ = reference_normal(8, 0, 64)
    assert_normals_close(host(tensor), z * numpy.float32(0.5) + numpy.float32(3.0), device)
    drawn = agnostic.normal(3.0, 0.5, (64,), generator=generator_at(device, 8))
    numpy.testing.assert_array_equal(host(drawn), host(tensor))
    means = agnostic.zeros(2, 1, device=device)
    assert agnostic.normal(means, agnostic.ones(3, device=device)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="std"):
        tensor.normal_(0.0, -1.0)


def test_randn_is_standard_normal(device):
    values = host(agnostic.randn(200_000, generator=generator_at(device, 99)))
    assert abs(values.mean()) < 0.01 and abs(values.std() - 1) < 0.01
    assert numpy.isfinite(values).all()


def test_chunked_threaded_cpu_draws(small_chunks):
    """Tiny chunks make every CPU draw cross chunk boundaries on the thread pool."""
    generator = generator_at("cpu", 31, 7)
    numpy.testing.assert_array_equal(host(agnostic.rand(101, generator=generator)), reference_uniform(31, 7, 101))
    values = host(agnostic.randn(203, generator=generator_at("cpu", 31, 7)))
    numpy.testing.assert_array_equal(values, reference_normal(31, 7, 203)[0])
    values = host(agnostic.randint(-4, 1000, (99,), generator=generator_at("cpu", 31, 7)))
    numpy.testing.assert_array_equal(values, reference_integers(31, 7, 99, -4, 1000))


@given(seed=st.integers(0, MASK64), offset=st.integers(0, 2 ** 63), count=st.integers(0, 70),
       low=st.integers(-(2 ** 40), 2 ** 40), span=st.integers(1, 2 ** 50))
def test_streams_from_any_state(seed, offset, count, low, span):
    for device in [agnostic.device(name) for name in ["cpu", *[f"cuda:{i}" for i in range(
            agnostic.cuda.device_count())]]]:
        generator = generator_at(device, seed, offset)
        numpy.testing.assert_array_equal(host(agnostic.rand(count, generator=generator)),
                                         reference_uniform(seed, offset, count))
        after = offset + uniform_blocks(count)
        values = agnostic.randint(low, low + span, (count,), generator=generator)
        numpy.testing.assert_array_equal(host(values), reference_integers(seed, after, count, low, low + span))


# ----- seeding, state and generators -----------------------------------------------------------------------------
def test_manual_seed_reproduces(device):
    agnostic.manual_seed(123)
    first = [host(agnostic.rand(10, device=device)), host(agnostic.randn(10, device=device)),
             host(agnostic.randint(0, 100, (10,), device=device)), host(agnostic.randperm(10, device=device))]
    agnostic.manual_seed(123)
    second = [host(agnostic.rand(10, device=device)), host(agnostic.randn(10, device=device)),
              host(agnostic.randint(0, 100, (10,), device=device)), host(agnostic.randperm(10, device=device))]
    for a, b in zip(first, second):
        numpy.testing.assert_array_equal(a, b)
    assert agnostic.initial_seed() == 123
    assert random_ops.default_generator(device).initial_seed() == 123


def test_generator_state_round_trip(device):
    generator = agnostic.Generator(device).manual_seed(-1)
    assert generator.initial_seed() == MASK64
    agnostic.rand(5, generator=generator, device=device)
    state = generator.get_state()
    assert state.dtype is agnostic.uint8 and state.shape == (16,) and state.device == agnostic.device("cpu")
    numpy.testing.assert_array_equal(host(state), host(state_of(MASK64, 1)))
    expected = host(agnostic.randn(9, generator=generator))
    assert generator.set_state(state) is generator
    numpy.testing.assert_array_equal(host(agnostic.randn(9, generator=generator)), expected)
    with pytest.raises(RuntimeError, match="uint8"):
        generator.set_state(agnostic.zeros(16))


def test_default_cpu_state_round_trip():
    agnostic.manual_seed(5)
    state = random_ops.get_rng_state()
    expected = host(agnostic.rand(20))
    random_ops.set_rng_state(state)
    numpy.testing.assert_array_equal(host(agnostic.rand(20)), expected)


def test_seed_is_fresh_and_recorded():
    new_seed = random_ops.seed()
    assert agnostic.initial_seed() == new_seed and 0 <= new_seed < 2 ** 64
    generator = agnostic.Generator()
    assert generator.seed() == generator.initial_seed()


def test_dtype_rules():
    assert agnostic.rand(2).dtype is agnostic.float32
    assert agnostic.randn(2, dtype=agnostic.float64).dtype is agnostic.float64
    assert agnostic.randint(3, (2,)).dtype is agnostic.int64
    assert agnostic.randperm(4).dtype is agnostic.int64
    assert agnostic.randperm(4, dtype=agnostic.int16).dtype is agnostic.int16
    for function in (agnostic.rand, agnostic.randn):
        with pytest.raises(RuntimeError, match="floating"):
            function(3, dtype=agnostic.int64)
    with pytest.raises(RuntimeError, match="floating"):
        agnostic.zeros(3, dtype=agnostic.int32).uniform_()
    with pytest.raises(RuntimeError, match="int8"):
        agnostic.randperm(200, dtype=agnostic.int8)


def test_generator_must_match_device(device):
    other = "cpu" if device.type == "cuda" else None
    tensor = agnostic.zeros(3, device=device)
    if other is not None:
        with pytest.raises(RuntimeError, match="generator"):
            tensor.uniform_(generator=agnostic.Generator(other))
    with pytest.raises(TypeError, match="Generator"):
        agnostic.rand(3, generator=object())
    assert agnostic.rand(3, generator=agnostic.Generator(device)).device == device


def test_cpu_generator_with_cuda_tensor_is_an_error(cuda_device):
    with pytest.raises(RuntimeError, match="generator"):
        agnostic.rand(3, device=cuda_device, generator=agnostic.Generator("cpu"))
    with pytest.raises(RuntimeError, match="generator"):
        agnostic.randn(3, generator=agnostic.Generator(cuda_device), device="cpu")


# ----- across devices --------------------------------------------------------------------------------------------
def test_devices_draw_identical_streams(cuda_device):
    draws = {
        "rand": lambda device: agnostic.rand(1000, device=device),
        "rand64": lambda device: agnostic.rand(999, dtype=agnostic.float64, device=device),
        "uniform_": lambda device: agnostic.empty(77, device=device).uniform_(-3, 7),
        "randint": lambda device: agnostic.randint(-7, 10 ** 12, (513,), device=device),
        "randperm": lambda device: agnostic.randperm(1000, device=device),
        "bernoulli": lambda device: agnostic.bernoulli(agnostic.full((1000,), 0.3, device=device)),
        "dropout mask": lambda device: agnostic.bernoulli(agnostic.empty(3, 333, device=device), 0.9),
    }
    for name, draw in draws.items():
        agnostic.manual_seed(0)
        on_cpu = host(draw("cpu"))
        agnostic.manual_seed(0)
        numpy.testing.assert_array_equal(host(draw(cuda_device)), on_cpu, err_msg=name)
    for dtype in (agnostic.float32, agnostic.float64):
        agnostic.manual_seed(0)
        on_cpu = host(agnostic.randn(4097, dtype=dtype))
        agnostic.manual_seed(0)
        assert_normals_close(host(agnostic.randn(4097, dtype=dtype, device=cuda_device)), on_cpu, cuda_device)


def test_large_cuda_draw_matches_numpy(cuda_device):
    count = 2 ** 22 + 3
    agnostic.manual_seed(7)
    expected = numpy.random.Generator(numpy.random.Philox(key=7)).random(count, dtype=numpy.float32)
    numpy.testing.assert_array_equal(host(agnostic.rand(count, device=cuda_device)), expected)


def test_cuda_rng_state(cuda_device):
    agnostic.cuda.manual_seed_all(17)
    assert cuda_random.initial_seed() == 17
    states = cuda_random.get_rng_state_all()
    assert len(states) == agnostic.cuda.device_count()
    state = cuda_random.get_rng_state(cuda_device)
    expected = host(agnostic.rand(10, device=cuda_device))
    cuda_random.set_rng_state(state, cuda_device)
    numpy.testing.assert_array_equal(host(agnostic.rand(10, device=cuda_device)), expected)
    cuda_random.set_rng_state_all(states)
    numpy.testing.assert_array_equal(host(cuda_random.get_rng_state(cuda_device)), host(state))


@pytest.mark.skipif(agnostic.cuda.is_available(), reason="checks behaviour without CUDA")
def test_without_cuda_seeding_is_silent_and_state_explains():
    for seeding in (lambda: cuda_random.manual_seed(1), lambda: cuda_random.manual_seed_all(1),
                    cuda_random.seed, cuda_random.seed_all):
        assert seeding() is None
    for needs_cuda in (cuda_random.get_rng_state, cuda_random.get_rng_state_all, cuda_random.initial_seed,
                       lambda: cuda_random.set_rng_state(state_of(0, 0)),
                       lambda: cuda_random.set_rng_state_all([state_of(0, 0)])):
        with pytest.raises(RuntimeError, match="CUDA"):
            needs_cuda()


def test_public_names_are_exported():
    for name in ("get_rng_state", "set_rng_state", "manual_seed", "seed", "initial_seed", "Generator"):
        assert getattr(agnostic, name) is getattr(random_ops, name), name
    for name in ("get_rng_state", "set_rng_state", "get_rng_state_all", "set_rng_state_all", "manual_seed",
                 "manual_seed_all", "seed", "seed_all", "initial_seed"):
        assert getattr(agnostic.cuda, name) is getattr(cuda_random, name), name


def test_philox_block_counts():
    assert _philox.uniform_blocks(9, numpy.float32) == 2 and _philox.uniform_blocks(9, numpy.float64) == 3
    assert _philox.normal_blocks(17, numpy.float32) == 4 and _philox.normal_blocks(1, numpy.float64) == 2
    assert _philox.integer_blocks(5) == 2 and _philox.integer_blocks(0) == 0
