"""``agnostic.backends.cudnn``: PyTorch's cuDNN flags. agnostic's CUDA ops don't call cuDNN, so ``is_available()``
is False and the flags are recorded: ``deterministic`` and ``benchmark`` ask for what agnostic's CUDA ops already do
(the same algorithm on every run), ``allow_tf32`` (True, as in PyTorch) has no convolution of cuDNN's to affect."""

import contextlib
import sys

# The flags, PyTorch's defaults; plain module attributes, read and set as PyTorch's are (``cudnn.benchmark = True``).
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True

__all__ = ["allow_tf32", "benchmark", "deterministic", "enabled", "flags", "is_acceptable", "is_available", "version"]


def is_available():
    """Whether cuDNN is used: False, since agnostic's convolutions are its own (on CuPy), not cuDNN's.

        >>> agnostic.backends.cudnn.is_available()
        False
    """
    return False


def version():
    """cuDNN's version: None, as PyTorch answers where cuDNN isn't available.

        >>> print(agnostic.backends.cudnn.version())
        None
    """
    return None


def is_acceptable(tensor):
    """Whether cuDNN would take ``tensor``: False, cuDNN isn't used.

        >>> agnostic.backends.cudnn.is_acceptable(agnostic.ones(1))
        False
    """
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the cuDNN flags inside a ``with`` block and restore them after, as ``torch.backends.cudnn.flags``.

        >>> with agnostic.backends.cudnn.flags(enabled=True, deterministic=True):
        ...     print(agnostic.backends.cudnn.deterministic)
        True
        >>> agnostic.backends.cudnn.deterministic
        False
    """
    module = sys.modules[__name__]
    names = ("enabled", "benchmark", "deterministic", "allow_tf32")
    saved = {name: getattr(module, name) for name in names}
    for name, value in zip(names, (enabled, benchmark, deterministic, allow_tf32)):
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
