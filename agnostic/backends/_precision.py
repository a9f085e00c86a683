"""``set_float32_matmul_precision``: PyTorch's one knob for float32 matrix products, tied to
``backends.cuda.matmul.allow_tf32`` as PyTorch ties them."""

import warnings

from . import cuda
from ._flags import settings

_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision):
    """``"highest"``: float32 products in float32; ``"high"`` and ``"medium"``: TF32 tensor cores allowed on CUDA
    (``backends.cuda.matmul.allow_tf32`` becomes True; "medium" would allow bfloat16, which CuPy has no product for,
    so it is "high" there). Another value warns and changes nothing, as in PyTorch.

        >>> agnostic.set_float32_matmul_precision("high")
        >>> agnostic.backends.cuda.matmul.allow_tf32
        True
        >>> agnostic.set_float32_matmul_precision("highest")
    """
    if precision not in _PRECISIONS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    settings["matmul_allow_tf32"] = precision != "highest"
    settings["matmul_allow_bf16_in_float32"] = precision == "medium"
    cuda.apply_matmul_precision()


def get_float32_matmul_precision():
    """The float32 matmul precision: ``"highest"`` unless TF32 (``"high"``) or bfloat16 (``"medium"``) is allowed.

        >>> agnostic.get_float32_matmul_precision()
        'highest'
    """
    if settings["matmul_allow_bf16_in_float32"]:
        return "medium"
    return "high" if settings["matmul_allow_tf32"] else "highest"
