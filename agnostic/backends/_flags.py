"""The store of ``agnostic.backends``' matmul flags, which ``cuda.matmul`` reads and writes."""

# PyTorch's defaults: TF32 off for matmuls, on for convolutions (torch.backends.cuda.matmul / torch.backends.cudnn).
settings = {
    "matmul_allow_tf32": False,
    "matmul_allow_bf16_in_float32": False,  # "medium" precision
    "allow_fp16_reduced_precision_reduction": True,
    "allow_bf16_reduced_precision_reduction": True,
    "linalg_library": "default",
}


def check_bool(name, value, error=RuntimeError):
    """PyTorch's matmul flags take bools only (``matmul.allow_tf32 = 1`` raises)."""
    if not isinstance(value, bool):
        raise error(f"{name} expects a bool, but got {type(value).__name__}; pass True or False")
    return value

