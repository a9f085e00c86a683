"""agnostic.backends: the flags of ``torch.backends`` (cuDNN, cuBLAS, MPS, MKL-DNN, OpenMP, CPU), settable as
PyTorch's are (``agnostic.backends.cudnn.benchmark = True``), and the float32 matmul precision they tie to."""

from . import cpu, cuda, cudnn, mkldnn, mps, openmp
from ._precision import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["cpu", "cuda", "cudnn", "get_float32_matmul_precision", "mkldnn", "mps", "openmp",
           "set_float32_matmul_precision"]
