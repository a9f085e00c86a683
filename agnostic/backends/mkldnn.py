"""``agnostic.backends.mkldnn``: oneDNN (MKL-DNN), which agnostic's CPU ops don't use (they are NumPy's and its
BLAS's); ``enabled`` is recorded."""

enabled = True  # recorded, as PyTorch's flag


def is_available():
    """Whether oneDNN is used for CPU ops: False.

        >>> agnostic.backends.mkldnn.is_available()
        False
    """
    return False

