"""agnostic.func.rearrange on random shapes, dtypes and patterns agrees across devices and with NumPy's
reshape-transpose-reshape, keeping the dtype."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from _strategies import ALL, arrays, check_tensor, on_all_devices, shapes
from agnostic.func import rearrange


def _groups(draw, names):
    """``names`` cut into consecutive runs, drawn at random: a partition into groups."""
    groups, current = [], []
    for name in names:
        current.append(name)
        if draw(st.booleans()):
            groups.append(current)
            current = []
    return groups + ([current] if current else [])


def _spelled(groups):
    return " ".join(group[0] if len(group) == 1 else f"({' '.join(group)})" for group in groups)


@given(st.tuples(st.sampled_from(ALL), shapes(min_dims=1, max_dims=5, max_side=3))
       .flatmap(lambda case: arrays(case[0], case[1], -50, 50)), st.data())
def test_split_permute_merge_matches_numpy(a, data):
    names = [f"x{i}" for i in range(a.ndim)]
    left = _groups(data.draw, names)  # the tensor's dimensions: the sizes of groups' axes multiplied
    tensor_shape = tuple(int(np.prod([a.shape[names.index(n)] for n in group])) for group in left)
    order = data.draw(st.permutations(range(a.ndim)))
    right = _groups(data.draw, [names[i] for i in order])
    size = lambda name: a.shape[names.index(name)]  # noqa: E731
    # all lengths of a group but its first, inferred (all of them for an empty group: 0 / 0 can't be inferred)
    lengths = {name: size(name) for group in left for name in (group if 0 in map(size, group) else group[1:])}
    pattern = f"{_spelled(left)} -> {_spelled(right)}"
    expected = a.transpose(order).reshape([int(np.prod([a.shape[names.index(n)] for n in g])) for g in right])
    outcome = on_all_devices(lambda t: rearrange(t, pattern, **lengths), a.reshape(tensor_shape))
    check_tensor(outcome, expected, a.dtype.name)


@given(st.tuples(st.sampled_from(ALL), shapes(min_dims=0, max_dims=4, max_side=3))
       .flatmap(lambda case: arrays(case[0], case[1], -50, 50)), st.integers(0, 4))
def test_ellipsis_moves_the_unnamed_dimensions(a, named):
    named = min(named, a.ndim)
    heads = [f"h{i}" for i in range(named)]
    pattern = f"{' '.join(heads)} ... -> ... {' '.join(reversed(heads))}"
    order = list(range(named, a.ndim)) + list(reversed(range(named)))
    check_tensor(on_all_devices(lambda t: rearrange(t, pattern), a), a.transpose(order), a.dtype.name)
