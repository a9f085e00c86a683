"""Packed and padded sequences for the recurrent layers: PackedSequence, pad_sequence, pack_padded_sequence,
pad_packed_sequence, pack_sequence, as torch.nn.utils.rnn."""

from collections import namedtuple
from collections.abc import Iterable

import agnostic


def _index_tensor(values, device=None):
    return agnostic.tensor(list(values), dtype=agnostic.int64, device=device)


class PackedSequence(namedtuple("PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    """Sequences of different lengths packed time step by time step, as ``torch.nn.utils.rnn.PackedSequence``:
    ``data`` holds step 0 of every sequence, then step 1 of those still running, ...; ``batch_sizes`` (an int64
    CPU tensor) says how many sequences each step holds; ``sorted_indices`` / ``unsorted_indices`` map between the
    caller's batch order and the decreasing-length order (None when the input was already sorted). Build one with
    ``pack_padded_sequence`` or ``pack_sequence``; every recurrent layer accepts it and returns one.

        >>> from agnostic.nn.utils.rnn import pack_sequence
        >>> pack_sequence([agnostic.tensor([1, 2, 3]), agnostic.tensor([4, 5]), agnostic.tensor([6])])
        PackedSequence(data=tensor([1, 4, 6, 2, 5, 3]), batch_sizes=tensor([3, 2, 1]),
                       sorted_indices=None, unsorted_indices=None)
    """

    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif not batch_sizes.is_cpu:
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(*args, **kwargs)``, with the index tensors following ``data``'s device; ``self`` when
        nothing changes."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self

        def follow(indices):
            return None if indices is None else indices.to(data.device)
        return type(self)(data, self.batch_sizes, follow(self.sorted_indices), follow(self.unsorted_indices))

    def cuda(self, device=None):
        """The same sequences with ``data`` (and the indices) on a CUDA device."""
        return self.to(device="cuda" if device is None else device)

    def cpu(self):
        """The same sequences with ``data`` (and the indices) on the CPU."""
        return self.to(device="cpu")

    def pin_memory(self):
        """The same sequences with ``data`` in page-locked host memory."""
        def pinned(indices):
            return None if indices is None else indices.pin_memory()
        return type(self)(self.data.pin_memory(), self.batch_sizes, pinned(self.sorted_indices),
                          pinned(self.unsorted_indices))

    def double(self):
        """``data`` as float64."""
        return self.to(dtype=agnostic.float64)

    def float(self):
        """``data`` as float32."""
        return self.to(dtype=agnostic.float32)

    def half(self):
        """``data`` as float16."""
        return self.to(dtype=agnostic.float16)

    def long(self):
        """``data`` as int64."""
        return self.to(dtype=agnostic.int64)

    def int(self):
        """``data`` as int32."""
        return self.to(dtype=agnostic.int32)

    def short(self):
        """``data`` as int16."""
        return self.to(dtype=agnostic.int16)

    def char(self):
        """``data`` as int8."""
        return self.to(dtype=agnostic.int8)

    def byte(self):
        """``data`` as uint8."""
        return self.to(dtype=agnostic.uint8)

    @property
    def is_cuda(self):
        """Whether ``data`` is on a CUDA device."""
        return self.data.is_cuda

    def is_pinned(self):
        """Whether ``data`` is in page-locked host memory."""
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The inverse of a 1-D permutation tensor (None stays None).

        >>> agnostic.nn.utils.rnn.invert_permutation(agnostic.tensor([2, 0, 1]))
        tensor([1, 2, 0])
    """
    if permutation is None:
        return None
    return agnostic.argsort(permutation)


def _lengths_list(lengths):
    if isinstance(lengths, agnostic.Tensor):
        return [int(length) for length in lengths.tolist()]
    return [int(length) for length in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Pack a padded batch (T, B, *) ((B, T, *) with ``batch_first``) whose sequences have the given ``lengths``
    into a ``PackedSequence``, as torch's. With ``enforce_sorted`` the lengths must decrease; otherwise the batch is
    sorted (stably, longest first) and the permutation kept in the result.

        >>> from agnostic.nn.utils.rnn import pack_padded_sequence
        >>> padded = agnostic.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
        >>> pack_padded_sequence(padded, [2, 1, 3], batch_first=True, enforce_sorted=False)
        PackedSequence(data=tensor([4, 1, 3, 5, 2, 6]), batch_sizes=tensor([3, 2, 1]),
                       sorted_indices=tensor([2, 0, 1]), unsorted_indices=tensor([1, 2, 0]))
    """
    lengths = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
        lengths = [lengths[i] for i in order]
        sorted_indices = _index_tensor(order, input.device)
        input = input.index_select(batch_dim, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    batch = input.shape[1]
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if any(length <= 0 for length in lengths):
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if enforce_sorted and any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You "
                           "can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lengths[0] > input.shape[0]:
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} is longer than the padded input's "
                           f"{input.shape[0]} time steps; pass lengths no longer than the padding")
    batch_sizes = [sum(1 for length in lengths if length > t) for t in range(lengths[0])]
    steps = input.unbind(0)
    pieces = [step if size == batch else step[:size] for step, size in zip(steps, batch_sizes)]
    data = pieces[0] if len(pieces) == 1 else agnostic.cat(pieces, 0)
    return PackedSequence(data, _index_tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Undo ``pack_padded_sequence``: ``(padded, lengths)`` with ``padded`` (T, B, *) ((B, T, *) with
    ``batch_first``) in the caller's original batch order, padded with ``padding_value`` (to ``total_length`` steps
    when given) and ``lengths`` an int64 CPU tensor.

        >>> from agnostic.nn.utils.rnn import pack_sequence, pad_packed_sequence
        >>> packed = pack_sequence([agnostic.tensor([1, 2]), agnostic.tensor([3, 4, 5])], enforce_sorted=False)
        >>> padded, lengths = pad_packed_sequence(packed, batch_first=True)
        >>> padded
        tensor([[1, 2, 0],
                [3, 4, 5]])
        >>> lengths
        tensor([2, 3])
    """
    data = sequence.data
    batch_sizes = [int(size) for size in sequence.batch_sizes.tolist()]
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {steps}")
    else:
        total_length = steps
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    rows = []
    for piece, size in zip(data.split(batch_sizes, 0), batch_sizes):
        if size < batch:
            filler = agnostic.full((batch - size,) + trailing, padding_value, dtype=data.dtype, device=data.device)
            piece = agnostic.cat([piece, filler], 0)
        rows.append(piece)
    if total_length > steps:
        rows.extend([agnostic.full((batch,) + trailing, padding_value, dtype=data.dtype, device=data.device)]
                    * (total_length - steps))
    padded = agnostic.stack(rows, 1 if batch_first else 0)
    lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        order = sequence.unsorted_indices
        padded = padded.index_select(0 if batch_first else 1, order)
        lengths = [lengths[i] for i in _lengths_list(order.cpu())]
    return padded, _index_tensor(lengths)


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stack sequences of shape (L_i, *) into one (T, B, *) tensor ((B, T, *) with ``batch_first``), padding each
    with ``padding_value`` on the right (or the left) up to the longest length T.

        >>> from agnostic.nn.utils.rnn import pad_sequence
        >>> pad_sequence([agnostic.tensor([1, 2]), agnostic.tensor([3])], batch_first=True, padding_value=-1)
        tensor([[ 1,  2],
                [ 3, -1]])
    """
    if isinstance(sequences, agnostic.Tensor):
        sequences = sequences.unbind(0)
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    longest = max(sequence.shape[0] for sequence in sequences)
    trailing = tuple(sequences[0].shape[1:])
    for sequence in sequences[1:]:
        if tuple(sequence.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: every sequence needs the trailing shape {list(trailing)} of the "
                               f"first, but one has {list(sequence.shape[1:])}")
    padded = []
    for sequence in sequences:
        missing = longest - sequence.shape[0]
        if missing:
            filler = agnostic.full((missing,) + trailing, padding_value, dtype=sequence.dtype,
                                   device=sequence.device)
            sequence = agnostic.cat([sequence, filler] if padding_side == "right" else [filler, sequence], 0)
        padded.append(sequence)
    return agnostic.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Split a padded (T, B, *) tensor ((B, T, *) with ``batch_first``) back into a list of B tensors of their
    ``lengths``.

        >>> from agnostic.nn.utils.rnn import unpad_sequence
        >>> unpad_sequence(agnostic.tensor([[1, 2], [3, 0]]), agnostic.tensor([2, 1]), batch_first=True)
        [tensor([1, 2]), tensor([3])]
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [sequence[:length] for sequence, length in zip(padded_sequences.unbind(0), _lengths_list(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Pack a list of sequences of shape (L_i, *): ``pack_padded_sequence(pad_sequence(sequences), lengths)``.

        >>> from agnostic.nn.utils.rnn import pack_sequence
        >>> pack_sequence([agnostic.tensor([1, 2]), agnostic.tensor([3, 4, 5])], enforce_sorted=False).batch_sizes
        tensor([2, 2, 1])
    """
    lengths = [sequence.shape[0] for sequence in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a ``PackedSequence`` holds, in the original order.

        >>> from agnostic.nn.utils.rnn import pack_sequence, unpack_sequence
        >>> unpack_sequence(pack_sequence([agnostic.tensor([1, 2]), agnostic.tensor([3])]))
        [tensor([1, 2]), tensor([3])]
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]
