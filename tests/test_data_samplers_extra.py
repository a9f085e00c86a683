"""WeightedRandomSampler and StackDataset (agnostic.utils.data), and the data classes' generic subscripting
(``Dataset[int]``, ``Sampler[int]``), with PyTorch's semantics. Distributions are checked with chi-square tests at
fixed seeds; the exact indices come from agnostic's RNG streams and need not equal PyTorch's."""

import collections

import numpy
import pytest
from hypothesis import given, settings, strategies as st

import agnostic
from agnostic.utils.data import (
    DataLoader, Dataset, IterableDataset, RandomSampler, Sampler, StackDataset, Subset, TensorDataset,
    WeightedRandomSampler,
)

scipy_stats = pytest.importorskip("scipy.stats")

SIGNIFICANCE = 1e-3  # a correct sampler fails a test at one fixed seed with this probability


def _chi_square_p(counts, probabilities):
    """p-value of observed ``counts`` against the expected ``probabilities`` (categories with zero probability
    must have zero counts, checked separately)."""
    counts, probabilities = numpy.asarray(counts, dtype=float), numpy.asarray(probabilities, dtype=float)
    assert counts[probabilities == 0].sum() == 0
    keep = probabilities > 0
    expected = probabilities[keep] / probabilities[keep].sum() * counts.sum()
    return scipy_stats.chisquare(counts[keep], expected).pvalue


# ----- WeightedRandomSampler ---------------------------------------------------------------------------------------
def test_with_replacement_follows_the_weights(device):
    weights = agnostic.tensor([1.0, 2.0, 0.0, 3.0, 4.0], device=device)
    sampler = WeightedRandomSampler(weights, 20000, generator=None)
    agnostic.manual_seed(1234)
    indices = list(sampler)
    assert len(indices) == len(sampler) == 20000
    assert all(type(index) is int for index in indices[:10])
    counts = numpy.bincount(indices, minlength=5)
    assert counts[2] == 0
    assert _chi_square_p(counts, [1, 2, 0, 3, 4]) > SIGNIFICANCE


def test_without_replacement_draws_each_index_once_with_the_right_order_probabilities():
    weights = [1.0, 2.0, 3.0, 4.0]
    total = sum(weights)
    generator = agnostic.Generator().manual_seed(99)
    sampler = WeightedRandomSampler(weights, 2, replacement=False, generator=generator)
    pairs = collections.Counter(tuple(sampler) for _ in range(6000))
    assert all(first != second for first, second in pairs)
    ordered = [(i, j) for i in range(4) for j in range(4) if i != j]
    # P(i first, then j) = w_i / W * w_j / (W - w_i): sequential draws without replacement.
    expected = [weights[i] / total * weights[j] / (total - weights[i]) for i, j in ordered]
    assert _chi_square_p([pairs[pair] for pair in ordered], expected) > SIGNIFICANCE


def test_without_replacement_all_indices_is_a_permutation(device):
    weights = agnostic.tensor([0.5, 1.0, 2.0, 8.0, 0.25], device=device)
    drawn = list(WeightedRandomSampler(weights, 5, replacement=False))
    assert sorted(drawn) == [0, 1, 2, 3, 4]


def test_same_seed_same_indices_and_generator_leaves_default_stream_alone():
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    agnostic.manual_seed(7)
    first = list(WeightedRandomSampler(weights, 50))
    agnostic.manual_seed(7)
    assert list(WeightedRandomSampler(weights, 50)) == first
    agnostic.manual_seed(8)
    assert list(WeightedRandomSampler(weights, 50)) != first

    def seeded(seed):
        return WeightedRandomSampler(weights, 50, generator=agnostic.Generator().manual_seed(seed))

    assert list(seeded(3)) == list(seeded(3))
    assert list(seeded(3)) != list(seeded(4))
    # A sampler given a generator draws from it only: the default stream is untouched.
    agnostic.manual_seed(11)
    expected = agnostic.rand(3)
    agnostic.manual_seed(11)
    list(seeded(5))
    assert agnostic.equal(agnostic.rand(3), expected)
    # Each epoch continues the generator's stream: epochs differ.
    sampler = seeded(6)
    assert list(sampler) != list(sampler)


@pytest.mark.parametrize("num_samples", [1, 7, 64])
def test_one_distributions_binary_search_draws_what_several_rows_comparisons_draw(device, num_samples):
    """multinomial with replacement searches one row's cumulative shares and compares several rows' with every
    sample: the same indices for the same uniforms (row 0 of two rows consumes the stream as one row does)."""
    weights = agnostic.rand(10, dtype=agnostic.float64, generator=agnostic.Generator().manual_seed(0)).to(device)
    weights[3] = 0.0
    one = agnostic.multinomial(weights, num_samples, True, generator=agnostic.Generator(device).manual_seed(5))
    two = agnostic.multinomial(agnostic.stack([weights, weights]), num_samples, True,
                               generator=agnostic.Generator(device).manual_seed(5))
    assert one.tolist() == two[0].tolist()
    assert 3 not in one.tolist()
    sampler = WeightedRandomSampler(weights.cpu(), num_samples, generator=agnostic.Generator().manual_seed(5))
    assert list(sampler) == agnostic.multinomial(weights.cpu(), num_samples, True,
                                                 generator=agnostic.Generator().manual_seed(5)).tolist()


def test_weights_are_kept_as_float64_of_any_input():
    for weights in ([1, 2, 3], (0.5, 1.5), numpy.array([1.0, 2.0], dtype=numpy.float32),
                    agnostic.tensor([1.0, 2.0], requires_grad=True)):
        sampler = WeightedRandomSampler(weights, 3)
        assert sampler.weights.dtype == agnostic.float64
        assert sampler.weights.ndim == 1
        assert sampler.num_samples == 3 and sampler.replacement is True and sampler.generator is None
    assert WeightedRandomSampler([1.0, 2.0], 3).weights.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("arguments, message", [
    (([1.0, 2.0], 0), "num_samples should be a positive integer value, but got num_samples=0"),
    (([1.0, 2.0], -3), "num_samples should be a positive integer value, but got num_samples=-3"),
    (([1.0, 2.0], 2.0), "num_samples should be a positive integer value, but got num_samples=2.0"),
    (([1.0, 2.0], True), "num_samples should be a positive integer value, but got num_samples=True"),
    (([1.0, 2.0], 2, 1), "replacement should be a boolean value, but got replacement=1"),
    (([[1.0, 2.0]], 2), r"weights should be a 1d sequence but given weights have shape \(1, 2\)"),
    ((5.0, 2), r"weights should be a 1d sequence but given weights have shape \(\)"),
])
def test_constructor_errors_match_pytorch(arguments, message):
    with pytest.raises(ValueError, match=message):
        WeightedRandomSampler(*arguments)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=message):
        torch.utils.data.WeightedRandomSampler(*arguments)


@pytest.mark.parametrize("arguments, message", [
    (([1.0, -1.0], 2), "element < 0|< 0"),
    (([1.0, float("nan")], 2), "nan|< 0"),
    (([1.0, float("inf")], 2), "inf"),
    (([0.0, 0.0], 2), "sum of probabilities <= 0"),
    (([], 2), "sum of probabilities <= 0"),
    (([1.0, 1.0], 3, False), "cannot sample n_sample > prob_dist.size"),
])
def test_bad_weights_raise_runtime_error_when_iterated_as_pytorch(arguments, message):
    sampler = WeightedRandomSampler(*arguments)  # PyTorch accepts these at construction; multinomial refuses them
    with pytest.raises(RuntimeError, match=message):
        list(sampler)
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError):
        list(torch.utils.data.WeightedRandomSampler(*arguments))


def test_balances_an_imbalanced_dataset_through_dataloader():
    labels = agnostic.tensor([0] * 90 + [1] * 10)
    features = agnostic.arange(100.0)
    counts = agnostic.bincount(labels)
    sample_weights = (1.0 / counts.double())[labels]
    generator = agnostic.Generator().manual_seed(2024)
    sampler = WeightedRandomSampler(sample_weights, num_samples=4000, generator=generator)
    loader = DataLoader(TensorDataset(features, labels), batch_size=500, sampler=sampler)
    assert len(loader) == 8
    drawn = agnostic.cat([batch_labels for _, batch_labels in loader])
    assert drawn.shape == (4000,)
    ones = int(drawn.sum())
    assert scipy_stats.binomtest(ones, 4000, 0.5).pvalue > SIGNIFICANCE
    # Features travel with their labels: feature i has label 1 exactly when i >= 90.
    batch_features, batch_labels = next(iter(loader))
    assert agnostic.equal(batch_labels, (batch_features >= 90).long())


def test_distribution_matches_pytorch_frequencies():
    torch = pytest.importorskip("torch")
    weights = [0.1, 0.9, 0.4, 0.7, 3.0, 0.6]
    torch.manual_seed(0)
    reference = numpy.bincount(list(torch.utils.data.WeightedRandomSampler(weights, 20000)), minlength=6)
    agnostic.manual_seed(0)
    ours = numpy.bincount(list(WeightedRandomSampler(weights, 20000)), minlength=6)
    # Two samples of one distribution: a chi-square test of homogeneity.
    assert scipy_stats.chi2_contingency(numpy.stack([reference, ours])).pvalue > SIGNIFICANCE


# ----- StackDataset ------------------------------------------------------------------------------------------------
class Counted(Dataset):
    """``i -> scale * i``, counting ``__getitem__`` calls; with ``batched`` it has ``__getitems__`` too."""

    def __init__(self, n, scale, batched=False, short=False):
        self.n, self.scale, self.short = n, scale, short
        self.single_calls = self.batch_calls = 0
        if batched:
            self.__getitems__ = self._getitems

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        self.single_calls += 1
        return self.scale * index

    def _getitems(self, indices):
        self.batch_calls += 1
        values = [self.scale * index for index in indices]
        return values[:-1] if self.short else values


def test_tuple_and_dict_samples(device):
    images = agnostic.arange(12.0, device=device).reshape(4, 3)
    labels = [3, 1, 4, 1]
    stacked = StackDataset(images, labels)
    assert len(stacked) == 4
    image, label = stacked[2]
    assert agnostic.equal(image, images[2]) and label == 4
    named = StackDataset(image=images, label=labels)
    sample = named[3]
    assert list(sample) == ["image", "label"]
    assert agnostic.equal(sample["image"], images[3]) and sample["label"] == 1
    assert isinstance(stacked, Dataset) and isinstance(stacked.datasets, tuple) and isinstance(named.datasets, dict)


def test_matches_pytorch_on_plain_sequences():
    torch = pytest.importorskip("torch")
    first, second = list(range(5)), [chr(97 + i) for i in range(5)]
    for args, kwargs in (((first, second), {}), ((), {"x": first, "y": second})):
        ours, theirs = StackDataset(*args, **kwargs), torch.utils.data.StackDataset(*args, **kwargs)
        assert len(ours) == len(theirs)
        assert [ours[i] for i in range(5)] == [theirs[i] for i in range(5)]
        assert ours.__getitems__([4, 0, 2]) == theirs.__getitems__([4, 0, 2])


def test_getitems_uses_inner_getitems_where_present():
    batched, plain = Counted(6, 10, batched=True), Counted(6, 100)
    for stacked, unpack in ((StackDataset(batched, plain), tuple), (StackDataset(a=batched, b=plain), dict)):
        batched.single_calls = batched.batch_calls = plain.single_calls = 0
        samples = stacked.__getitems__([5, 1, 3])
        expected = [(50, 500), (10, 100), (30, 300)]
        if unpack is dict:
            expected = [{"a": a, "b": b} for a, b in expected]
        assert samples == expected
        assert (batched.batch_calls, batched.single_calls, plain.single_calls) == (1, 0, 3)
    assert StackDataset(batched, plain).__getitems__([]) == []


def test_nested_getitems_of_the_wrong_size_is_refused():
    for stacked in (StackDataset(Counted(4, 1, batched=True, short=True)),
                    StackDataset(x=Counted(4, 1, batched=True, short=True))):
        with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 3, got 2"):
            stacked.__getitems__([0, 1, 2])


def test_dataloader_collates_stacked_samples_with_one_batched_read():
    images = Counted(10, 2, batched=True)
    loader = DataLoader(StackDataset(image=images, index=list(range(10))), batch_size=4)
    batches = list(loader)
    assert len(batches) == 3 and images.batch_calls == 3 and images.single_calls == 0
    assert agnostic.equal(batches[0]["image"], agnostic.tensor([0, 2, 4, 6]))
    assert agnostic.equal(batches[2]["index"], agnostic.tensor([8, 9]))
    pairs = list(DataLoader(StackDataset(list(range(5)), list(range(5, 10))), batch_size=5))
    assert len(pairs) == 1 and agnostic.equal(pairs[0][1], agnostic.arange(5, 10))


@pytest.mark.parametrize("args, kwargs, message", [
    (([1, 2],), {"b": [1, 2]}, "Supported either ``tuple``- \\(via ``args``\\) or"),
    ((), {}, "At least one dataset should be passed"),
    (([1, 2], [1, 2, 3]), {}, "Size mismatch between datasets"),
    ((), {"a": [1], "b": []}, "Size mismatch between datasets"),
])
def test_stack_errors(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        StackDataset(*args, **kwargs)
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=message):
        torch.utils.data.StackDataset(*args, **kwargs)


@settings(max_examples=40, deadline=None)
@given(lengths=st.integers(0, 6).flatmap(lambda n: st.tuples(st.just(n), st.integers(1, 3))),
       data=st.data())
def test_getitems_equals_getitem_per_index(lengths, data):
    n, width = lengths
    datasets = [Counted(n, scale, batched=bool(scale % 2)) for scale in range(1, width + 1)]
    indices = data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=8) if n else st.just([]))
    for stacked in (StackDataset(*datasets), StackDataset(**{f"d{i}": d for i, d in enumerate(datasets)})):
        assert len(stacked) == n
        assert stacked.__getitems__(indices) == [stacked[index] for index in indices]


# ----- generic subscripting ----------------------------------------------------------------------------------------
def test_generic_classes_subscript_as_in_pytorch():
    class Numbers(Dataset[int]):
        def __len__(self):
            return 3

        def __getitem__(self, index):
            return index * 2

    class Stream(IterableDataset[str]):
        def __iter__(self):
            return iter("ab")

    class Evens(Sampler[int]):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(0, self.n, 2))

        def __len__(self):
            return (self.n + 1) // 2

    assert list(DataLoader(Numbers(), sampler=Evens(3), batch_size=None)) == [0, 4]
    assert list(Stream()) == ["a", "b"]
    assert isinstance(Stream(), collections.abc.Iterable)
    for generic in (Dataset, IterableDataset, Subset, StackDataset, Sampler):
        generic[int]  # noqa: B018 (subscripting must work)
    for concrete in (TensorDataset, RandomSampler, WeightedRandomSampler):
        with pytest.raises(TypeError, match="is not a generic class"):
            concrete[int]  # noqa: B018
