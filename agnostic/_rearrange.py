"""rearrange: einops-style reordering of a tensor's dimensions ("b (h w) c -> b c h w"), as torch.func.rearrange.

A pattern names the tensor's axes on the left and says on the right how to lay them out again; parentheses group
axes into one dimension (split on the left, merged on the right), ``...`` stands for the dimensions the pattern does
not name, and ``1`` (or ``()``) is an axis of size one. The result is a reshape into every named axis, a permute
into the right-hand order and a reshape into the right-hand groups, so it is differentiable and as often a view as
PyTorch's. The grammar, its checks and error messages follow PyTorch's (``functorch.einops``, adapted from einops).
"""

import functools
import keyword
import math
import warnings

from ._tensor import TensorBase
from .ops.shape import stack

_ELLIPSIS = "\u2026"  # one character standing for "..." once a pattern is parsed


class DimensionBindError(Exception):
    """The tensor's sizes don't fit the pattern's axes: what PyTorch's rearrange raises then (its
    ``functorch.dim.DimensionBindError``, an ``Exception`` that is neither a ValueError nor a RuntimeError)."""


class _AnonymousAxis:
    """A number in a pattern: an axis without a name (each occurrence distinct, as in einops)."""

    def __init__(self, text):
        self.value = int(text)
        if self.value < 1:
            raise ValueError(f"Anonymous axis should have positive length, not {self.value}")

    def __repr__(self):
        return f"{self.value}-axis"


def _axis_name_problem(name):
    """Why ``name`` can't name an axis, or None (warning about discouraged names, as einops)."""
    if not name.isidentifier():
        return "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return "axis name should should not start or end with underscore"
    if keyword.iskeyword(name):
        warnings.warn(f"It is discouraged to use axes names that are keywords: {name}", RuntimeWarning)
    if name == "axis":
        warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an error in future",
                      FutureWarning)
    return None


class _Side:
    """One side of a pattern: ``groups``, a list whose entries are a list of axes (an axis of the tensor: one name,
    a parenthesized group, or [] for ``1``) or the ellipsis itself (at the top level)."""

    def __init__(self, expression):
        self.has_ellipsis = False
        self.ellipsis_parenthesized = None
        self.identifiers = set()
        self.has_non_unitary_anonymous_axes = False
        self.groups = []
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); "
                                 "only one ellipsis for tensor ")
            expression = expression.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        self._bracket = None
        word = ""
        for char in expression:
            if char in "() ":
                if word:
                    self._add(word)
                word = ""
                if char == "(":
                    if self._bracket is not None:
                        raise ValueError("Axis composition is one-level (brackets inside brackets not allowed)")
                    self._bracket = []
                elif char == ")":
                    if self._bracket is None:
                        raise ValueError("Brackets are not balanced")
                    self.groups.append(self._bracket)
                    self._bracket = None
            elif char.isalnum() or char in ("_", _ELLIPSIS):
                word += char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if self._bracket is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")
        if word:
            self._add(word)

    def _add(self, word):
        if word in self.identifiers:
            raise ValueError(f"Indexing expression contains duplicate dimension '{word}'")
        if word == _ELLIPSIS:
            self.identifiers.add(_ELLIPSIS)
            self.ellipsis_parenthesized = self._bracket is not None
            (self.groups if self._bracket is None else self._bracket).append(_ELLIPSIS)
            return
        is_number = word.isdecimal()
        if is_number and int(word) == 1:  # an axis of size one: nothing to name (and nothing at all inside a group)
            if self._bracket is None:
                self.groups.append([])
            return
        problem = None if is_number else _axis_name_problem(word)
        if problem:
            raise ValueError(f"Invalid axis identifier: {word}\n{problem}")
        axis = _AnonymousAxis(word) if is_number else word
        self.identifiers.add(axis)
        self.has_non_unitary_anonymous_axes |= is_number
        if self._bracket is None:
            self.groups.append([axis])
        else:
            self._bracket.append(axis)


@functools.lru_cache(256)
def _plan(ndim, pattern, lengths):
    """For a tensor of ``ndim`` dimensions: the axes each of its dimensions splits into (names, with ellipsis axes
    numbered and left-hand ``1``s named too), the given lengths, the axes summed away (left-hand ``1``s, as
    PyTorch), the order of the kept axes, and the right-hand groups (tuples of axes)."""
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    lengths = dict(lengths)
    if _ELLIPSIS in lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Side(left_text), _Side(right_text)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.has_ellipsis and left.ellipsis_parenthesized:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.has_non_unitary_anonymous_axes or right.has_non_unitary_anonymous_axes:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    one_sided = left.identifiers ^ right.identifiers
    if one_sided:
        raise ValueError(f"Identifiers only on one side of rearrange expression (should be on both): {one_sided}")
    unknown = lengths.keys() - left.identifiers
    if unknown:
        raise ValueError(f"Identifiers not found in rearrange expression: {unknown}")

    ones = sum(not group for group in left.groups)
    if left.has_ellipsis:
        ellipsis_dims = ndim - (len(left.groups) - 1)
        named = ones + len(left.identifiers) - 1
        if named > ndim:
            raise ValueError(f"Number of dimensions in pattern ({named}) must be less than or equal to the number of "
                             f"dimensions in the tensor ({ndim})")
    else:
        ellipsis_dims = 0
        if len(left.groups) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({len(left.groups)}) must be equal to the number of "
                             f"dimensions in the tensor ({ndim})")
    ellipsis_axes = tuple(f"{_ELLIPSIS}{i}" for i in range(ellipsis_dims))

    splits, summed = [], []
    for group in left.groups:
        if group == _ELLIPSIS:
            splits += [(axis,) for axis in ellipsis_axes]
        elif not group:
            summed.append(f"1{len(summed)}")  # a name no identifier can have
            splits.append((summed[-1],))
        else:
            splits.append(tuple(group))
    right_groups = []
    for group in right.groups:
        if group == _ELLIPSIS:
            right_groups += [(axis,) for axis in ellipsis_axes]
        else:
            right_groups.append(tuple(axis for entry in group
                                      for axis in (ellipsis_axes if entry == _ELLIPSIS else (entry,))))
    kept = [axis for axes in right_groups for axis in axes]
    return tuple(splits), tuple(summed), tuple(kept), tuple(right_groups)


def _bind(size, axes, lengths):
    """The sizes of ``axes`` that together make one dimension of ``size`` (at most one of them not given)."""
    sizes = [lengths.get(axis, -1) for axis in axes]
    unknown = [i for i, value in enumerate(sizes) if value == -1]
    if len(unknown) > 1:
        raise DimensionBindError(f"cannot infer the sizes of two dimensions at once {axes[unknown[0]]} and "
                                 f"{axes[unknown[1]]}")
    known = math.prod(value for value in sizes if value != -1)
    if unknown:
        if size % known:
            shown = tuple("?" if value == -1 else value for value in sizes)
            raise DimensionBindError(f"inferred dimension does not evenly fit into larger dimension: {size} vs {shown}")
        sizes[unknown[0]] = size // known
    elif known != size:
        raise DimensionBindError(f"Dimension sizes to do not match ({size} != {known}) when matching dimension pack "
                                 f"{tuple(axes)}")
    return sizes


def rearrange(tensor, pattern, **axes_lengths):
    """``tensor`` (or a sequence of tensors, stacked first) with its dimensions reordered, split and merged as
    ``pattern`` says, as ``torch.func.rearrange`` (einops' ``rearrange``): ``"b h w c -> b c h w"`` permutes,
    ``"b h w c -> b (h w c)"`` merges, ``"(h1 h) w -> h1 h w"`` splits (give all lengths but one as keywords:
    ``h1=2``), ``...`` stands for the dimensions not named, ``1`` or ``()`` is a dimension of size one (on the left,
    PyTorch sums over it). Differentiable; a view of ``tensor`` where a reshape would be.

        >>> images = agnostic.zeros(32, 30, 40, 3)
        >>> agnostic.func.rearrange(images, "b h w c -> b c h w").shape
        agnostic.Size([32, 3, 30, 40])
        >>> agnostic.func.rearrange(images, "b (h h1) (w w1) c -> b h w (c h1 w1)", h1=2, w1=2).shape
        agnostic.Size([32, 15, 20, 12])
        >>> agnostic.func.rearrange(agnostic.arange(6).reshape(2, 3), "a b -> (b a)")
        tensor([0, 3, 1, 4, 2, 5])
        >>> agnostic.func.rearrange(agnostic.ones(2, 3, 4), "a ... -> ... a").shape
        agnostic.Size([3, 4, 2])
    """
    if not isinstance(tensor, TensorBase):
        tensor = stack(tensor)
    splits, summed, kept, right_groups = _plan(tensor.dim(), pattern, tuple(sorted(axes_lengths.items())))
    if not splits:  # a 0-d tensor and no axes: PyTorch returns it as it is, even for "-> 1"
        return tensor
    sizes = {}
    for size, axes in zip(tensor.shape, splits):
        sizes.update(zip(axes, _bind(size, axes, axes_lengths)))
    axes = [axis for group in splits for axis in group]
    tensor = tensor.reshape([sizes[axis] for axis in axes])
    order = [axes.index(axis) for axis in kept + summed]
    if order != list(range(len(order))):
        tensor = tensor.permute(order)
    if summed:  # last, as PyTorch, whose sum also makes the result contiguous (and integers int64)
        tensor = tensor.sum(list(range(len(kept), len(order)))).contiguous()
    return tensor.reshape([math.prod(sizes[axis] for axis in group) for group in right_groups])
