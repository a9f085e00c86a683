"""``__array_namespace_info__``: what the namespace supports, on which devices, with which default dtypes."""

import agnostic
from . import _helpers

_KINDS = {
    "bool": _helpers.BOOL, "signed integer": _helpers.SIGNED, "unsigned integer": _helpers.UNSIGNED,
    "integral": _helpers.INTEGERS, "real floating": _helpers.REAL_FLOATS,
    "complex floating": _helpers.COMPLEX_FLOATS,
    "numeric": _helpers.INTEGERS + _helpers.REAL_FLOATS + _helpers.COMPLEX_FLOATS,
}


class Info:
    """The standard's inspection object of ``agnostic.array_api``.

        >>> agnostic.array_api.__array_namespace_info__().default_dtypes()["indexing"]
        agnostic.int64
    """

    __module__ = "agnostic.array_api"

    def capabilities(self):
        """Boolean indexing and data-dependent output shapes are supported; up to 64 dimensions.

            >>> agnostic.array_api.__array_namespace_info__().capabilities()["boolean indexing"]
            True
        """
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        """The device creation functions use when given none (``agnostic.get_default_device()``).

            >>> agnostic.array_api.__array_namespace_info__().default_device()
            device(type='cpu')
        """
        return agnostic.empty(0).device  # with its index ("cuda:0"), as devices() lists it

    def default_dtypes(self, *, device=None):
        """The default dtype of each kind (the real one is ``agnostic.get_default_dtype()``).

            >>> agnostic.array_api.__array_namespace_info__().default_dtypes()["real floating"]
            agnostic.float32
        """
        real = agnostic.get_default_dtype()
        complex_ = agnostic.complex128 if real == agnostic.float64 else agnostic.complex64
        return {"real floating": real, "complex floating": complex_, "integral": agnostic.int64,
                "indexing": agnostic.int64}

    def dtypes(self, *, device=None, kind=None):
        """The standard's dtypes agnostic has, by name, optionally of one kind (or of any of a tuple of kinds).

            >>> list(agnostic.array_api.__array_namespace_info__().dtypes(kind="signed integer"))
            ['int8', 'int16', 'int32', 'int64']
        """
        if kind is None:
            chosen = _helpers.STANDARD_DTYPES
        else:
            kinds = kind if isinstance(kind, tuple) else (kind,)
            unknown = [k for k in kinds if k not in _KINDS]
            if unknown:
                raise ValueError(f"unknown dtype kind {unknown[0]!r}: use one of {sorted(_KINDS)}")
            chosen = [d for d in _helpers.STANDARD_DTYPES if any(d in _KINDS[k] for k in kinds)]
        return {str(d).removeprefix("agnostic."): d for d in chosen}

    def devices(self):
        """Every device agnostic can use here: the CPU and each CUDA device.

            >>> agnostic.array_api.__array_namespace_info__().devices()[0]
            device(type='cpu')
        """
        cuda = [agnostic.device("cuda", i) for i in range(agnostic.cuda.device_count())] \
            if agnostic.cuda.is_available() else []
        return [agnostic.device("cpu")] + cuda


def __array_namespace_info__():
    """The namespace's inspection object (``capabilities()``, ``default_device()``, ``devices()``...).

        >>> agnostic.array_api.__array_namespace_info__().capabilities()["max dimensions"]
        64
    """
    return Info()
