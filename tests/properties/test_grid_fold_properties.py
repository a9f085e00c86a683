"""grid_sample, affine_grid, fold/unfold, channel_shuffle and pdist on random shapes agree across devices and with
independent NumPy references: an identity affine grid reproduces any image in every mode; Fold of Unfold is the
image times each pixel's window count; channel_shuffle is a reshape-transpose permutation; pdist is the upper
triangle of the pairwise distance matrix."""

import itertools

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import agnostic.nn.functional as F
from _strategies import arrays, check_tensor, fewer_examples, on_all_devices

FLOAT_NAMES = ["float32", "float64"]


@fewer_examples(0.5)
@given(st.sampled_from(FLOAT_NAMES), st.integers(1, 2), st.integers(1, 3), st.integers(1, 5), st.integers(1, 5),
       st.sampled_from(["bilinear", "nearest", "bicubic"]), st.sampled_from(["zeros", "border", "reflection"]),
       st.data())
def test_identity_grid_reproduces_the_image(name, batch, channels, height, width, mode, padding_mode, data):
    image = data.draw(arrays(name, (batch, channels, height, width), lo=-10, hi=10))
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], dtype=name), (batch, 1, 1))

    def sample(x, t):
        grid = F.affine_grid(t, tuple(x.shape), align_corners=False)
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)

    check_tensor(on_all_devices(sample, image, theta), image, name, rtol=1e-4, atol=1e-4)


@fewer_examples(0.5)
@given(st.sampled_from(FLOAT_NAMES), st.integers(1, 2), st.integers(2, 5), st.integers(2, 5), st.integers(1, 3),
       st.integers(1, 2), st.integers(0, 1), st.data())
def test_fold_of_unfold_counts_each_pixel_s_windows(name, channels, height, width, kernel, stride, padding, data):
    assume(kernel <= min(height, width) + 2 * padding)  # at least one window (else both refuse, as PyTorch)
    image = data.draw(arrays(name, (1, channels, height, width), lo=-10, hi=10))

    def round_trip(x):
        columns = F.unfold(x, kernel, padding=padding, stride=stride)
        return F.fold(columns, (height, width), kernel, padding=padding, stride=stride)

    counts = np.zeros((height + 2 * padding, width + 2 * padding))
    for i in range(0, height + 2 * padding - kernel + 1, stride):
        for j in range(0, width + 2 * padding - kernel + 1, stride):
            counts[i:i + kernel, j:j + kernel] += 1
    counts = counts[padding:padding + height, padding:padding + width]
    check_tensor(on_all_devices(round_trip, image), image * counts, name, rtol=1e-5, atol=1e-4)


@fewer_examples(0.5)
@given(st.sampled_from(["int64", "float32", "bool"]), st.integers(1, 2), st.integers(1, 3), st.integers(1, 3),
       st.integers(1, 3), st.data())
def test_channel_shuffle_is_a_group_transpose(name, batch, groups, per_group, length, data):
    array = data.draw(arrays(name, (batch, groups * per_group, length)))
    expected = array.reshape(batch, groups, per_group, length).transpose(0, 2, 1, 3).reshape(array.shape)
    check_tensor(on_all_devices(lambda x: F.channel_shuffle(x, groups), array), expected, name)


@fewer_examples(0.5)
@given(st.sampled_from(FLOAT_NAMES), st.integers(0, 5), st.integers(1, 4), st.sampled_from([1.0, 2.0, 3.0]),
       st.data())
def test_pdist_is_the_upper_triangle_of_distances(name, rows, columns, p, data):
    array = data.draw(arrays(name, (rows, columns), lo=-10, hi=10))
    wide = array.astype(np.float64)
    expected = [(np.abs(wide[i] - wide[j]) ** p).sum() ** (1 / p) for i, j in itertools.combinations(range(rows), 2)]
    check_tensor(on_all_devices(lambda x: F.pdist(x, p), array), np.array(expected, dtype=name).reshape(-1), name,
                 rtol=1e-4, atol=1e-4)
