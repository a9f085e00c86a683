"""``agnostic.backends.openmp``: whether ops run on OpenMP threads (agnostic's CPU threads are NumPy's BLAS and its
own pool; see ``agnostic.set_num_threads``)."""


def is_available():
    """Whether agnostic was built with OpenMP: False (it is pure Python on NumPy).

        >>> agnostic.backends.openmp.is_available()
        False
    """
    return False
