"""pad: constant (negative amounts crop), reflect, replicate and circular padding of trailing dimensions."""

import numpy

import agnostic

_NON_CONSTANT = ("reflect", "replicate", "circular")


def _constant(input, pad, value):
    for position in range(len(pad) // 2):
        dim = input.dim() - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        size = input.shape[dim]
        start, stop = max(-before, 0), size - max(-after, 0)
        if stop < start:
            raise RuntimeError(f"The input size {size}, plus negative padding {before} and {after} resulted in a "
                               f"negative output size, which is invalid. Check dimension {dim} of your input.")
        if start or stop != size:
            input = agnostic.narrow(input, dim, start, stop - start)
        pieces = []
        for amount in (before, after):
            shape = list(input.shape)
            shape[dim] = max(amount, 0)
            pieces.append(agnostic.full(shape, value, dtype=input.dtype, device=input.device) if amount > 0 else None)
        parts = [p for p in (pieces[0], input, pieces[1]) if p is not None]
        if len(parts) > 1:
            input = agnostic.cat(parts, dim)
    return input


def _source_positions(size, before, after, mode):
    """For each output position along one dimension, the input position it copies."""
    positions = numpy.arange(-before, size + after)
    if mode == "replicate":
        return numpy.clip(positions, 0, size - 1)
    if mode == "circular":
        # PyTorch crops a negative side first, then wraps around what is left
        start, kept = max(-before, 0), size - max(-before, 0) - max(-after, 0)
        return start + numpy.arange(-max(before, 0), kept + max(after, 0)) % kept
    period = 2 * (size - 1)  # reflect: mirror about the edge elements, without repeating them
    folded = numpy.abs(positions) % period if period else numpy.zeros_like(positions)
    return numpy.where(folded >= size, period - folded, folded)


def _indexed(input, pad, mode):
    ndim = input.dim()
    for position in range(len(pad) // 2):
        dim = ndim - 1 - position
        before, after = pad[2 * position], pad[2 * position + 1]
        size = input.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if before == 0 and after == 0:
            continue
        index = agnostic.tensor(_source_positions(size, before, after, mode), dtype=agnostic.int64,
                                device=input.device)
        input = agnostic.index_select(input, dim, index)
    return input


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions: ``pad = (last_before, last_after, previous_before, ...)``.

    ``constant`` fills with ``value`` (0 by default; negative amounts crop); ``reflect`` mirrors without repeating
    the edge, ``replicate`` repeats the edge, ``circular`` wraps around.

        >>> import agnostic.nn.functional as F
        >>> F.pad(agnostic.tensor([[1, 2], [3, 4]]), (1, 0, 0, 1))
        tensor([[0, 1, 2],
                [0, 3, 4],
                [0, 0, 0]])
        >>> F.pad(agnostic.tensor([[1.0, 2.0, 3.0]]), (2, 2), mode="reflect")
        tensor([[3., 2., 1., 2., 3., 2., 1.]])
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode == "constant":
        return _constant(input, pad, 0 if value is None else value)
    if mode not in _NON_CONSTANT:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise NotImplementedError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    dims = len(pad) // 2
    if dims > 3 or input.dim() not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\nSupported combinations for "
            "non-constant padding:\n  - 2D or 3D input: padding size = 2 (pads last dimension)\n  - 3D or 4D input: "
            "padding size = 4 (pads last 2 dimensions)\n  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    return _indexed(input, pad, mode)


__all__ = ["pad"]
