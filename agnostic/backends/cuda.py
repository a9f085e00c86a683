"""``agnostic.backends.cuda``: PyTorch's CUDA flags. ``matmul.allow_tf32`` switches CuPy's float32 matrix products
to TF32 tensor cores (PyTorch's default: off); the others are recorded."""

import importlib.util

from .._backends import cpu_ops, cuda_ops
from ._flags import check_bool, settings

_LINALG_LIBRARIES = ("default", "cusolver", "magma")

__all__ = ["cuBLASModule", "is_built", "matmul", "preferred_linalg_library"]


def is_built():
    """Whether agnostic can run on CUDA here: True when CuPy is installed (checked without importing it).

        >>> agnostic.backends.cuda.is_built() in (True, False)
        True
    """
    return importlib.util.find_spec("cupy") is not None


def apply_matmul_precision():
    """Hand the TF32 setting to every backend (only CUDA's has TF32)."""
    for ops in (cpu_ops, cuda_ops):
        ops.set_matmul_tf32(settings["matmul_allow_tf32"])


class cuBLASModule:
    """``agnostic.backends.cuda.matmul``: the cuBLAS flags, read and set as attributes, as PyTorch's.

        >>> agnostic.backends.cuda.matmul.allow_tf32
        False
    """

    __slots__ = ()
    _reductions = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __getattr__(self, name):
        if name == "allow_tf32":
            return settings["matmul_allow_tf32"]
        if name in self._reductions:
            return settings[name]
        raise AttributeError(f"Unknown attribute {name}; agnostic.backends.cuda.matmul has allow_tf32, "
                             + ", ".join(self._reductions))

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            settings["matmul_allow_tf32"] = check_bool("allow_tf32", value, TypeError)
            settings["matmul_allow_bf16_in_float32"] = False
            apply_matmul_precision()
        elif name in self._reductions:
            if isinstance(value, (tuple, list)) and value:
                value = value[0]  # (allow_reduced_precision, allow_splitk): split-K is cuBLAS's own choice here
            settings[name] = check_bool(name, value, TypeError)
        else:
            raise AttributeError(f"Unknown attribute {name}")

    def __repr__(self):
        return "<agnostic.backends.cuda.matmul>"


matmul = cuBLASModule()


def preferred_linalg_library(backend=None):
    """Record the linear algebra library CUDA ops should prefer (``"default"``, ``"cusolver"`` or ``"magma"``) and
    return the current choice; agnostic's CUDA linear algebra is CuPy's (cuSOLVER) whichever is named.

        >>> agnostic.backends.cuda.preferred_linalg_library()
        'default'
    """
    if backend is not None:
        name = getattr(backend, "name", backend)
        if not isinstance(name, str) or name.lower() not in _LINALG_LIBRARIES:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(_LINALG_LIBRARIES)}.")
        settings["linalg_library"] = name.lower()
    return settings["linalg_library"]

