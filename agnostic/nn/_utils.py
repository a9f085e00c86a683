"""Argument helpers shared by layers and functional ops: ints or pairs, as PyTorch's ``_pair``."""

import collections.abc
from itertools import repeat


def _ntuple(n, name):
    def parse(value):
        if isinstance(value, collections.abc.Iterable):
            return tuple(value)
        return tuple(repeat(value, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(values, n):
    """``(a, b)`` -> ``(b, b, a, a)`` for ``n=2``: per-dimension sizes as ``F.pad``'s last-dimension-first list."""
    return tuple(x for x in reversed(values) for _ in range(n))
