"""``torch.nn.modules.utils``'s path: the argument helpers layers use (``_pair``...) and
``consume_prefix_in_state_dict_if_present``."""

from .._utils import _ntuple, _pair, _quadruple, _reverse_repeat_tuple, _single, _triple  # noqa: F401
from ._paths import mirror


def _list_with_default(out_size, defaults):
    """An adaptive pooling's output size with its None entries taken from ``defaults`` (the input's sizes)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [size if size is not None else default for size, default in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix):
    """Strip ``prefix`` from the keys of ``state_dict`` that start with it, in place (and from its ``_metadata``),
    as PyTorch's: loads a checkpoint saved from a wrapped model (``module.`` of DataParallel) into the bare one.

        >>> from collections import OrderedDict
        >>> state = OrderedDict([("module.weight", 1), ("module.bias", 2), ("step", 3)])
        >>> agnostic.nn.modules.utils.consume_prefix_in_state_dict_if_present(state, "module.")
        >>> list(state)
        ['step', 'weight', 'bias']
    """
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # the root module's entry is "" after stripping; PyTorch keys the wrapper's own entry "module"
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)


__all__ = mirror(globals(), "utils")
