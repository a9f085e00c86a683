"""``agnostic.backends.mps``: Apple's Metal backend, which agnostic doesn't have."""


def is_available():
    """Whether the MPS device can be used: False (agnostic runs on CPUs and NVIDIA GPUs).

        >>> agnostic.backends.mps.is_available()
        False
    """
    return False


def is_built():
    """Whether agnostic was built with MPS support: False.

        >>> agnostic.backends.mps.is_built()
        False
    """
    return False
