"""What the current CUDA build and devices support (bf16, tf32, architectures), as torch.cuda's queries."""

import importlib.util

from .. import _backend
from ._devices import current_device, device_count, get_device_properties, is_available
from .random import default_generators

__all__ = ["default_generators", "get_arch_list", "get_gencode_flags", "is_bf16_supported", "is_tf32_supported"]

def is_bf16_supported(including_emulation=True):
    """Whether the current CUDA device supports bfloat16: natively from compute capability 8.0 (Ampere), or, with
    ``including_emulation``, at all: agnostic's bfloat16 is ml_dtypes' on every device, so wherever that package
    is installed (one of agnostic's dependencies). False without CUDA.

        >>> agnostic.cuda.is_bf16_supported() or not agnostic.cuda.is_available()
        True
    """
    if not is_available():
        return False
    index = current_device()
    if get_device_properties(index).major >= 8:
        return True
    return including_emulation and importlib.util.find_spec("ml_dtypes") is not None


def is_tf32_supported():
    """Whether the current CUDA device has TensorFloat-32 matmuls: those that support bfloat16 natively (compute
    capability 8.0 and up). False without CUDA.

        >>> agnostic.cuda.is_tf32_supported() or not agnostic.cuda.is_available()
        True
    """
    return is_bf16_supported(including_emulation=False)


def get_arch_list():
    """The CUDA architectures kernels can be built for, as ``['sm_50', ..., 'sm_90']``: PyTorch lists those its
    binary was compiled for; agnostic compiles at run time with CuPy's NVRTC, so these are the ones NVRTC can
    target (the visible devices' own when NVRTC can't say). ``[]`` without CUDA.

        >>> isinstance(agnostic.cuda.get_arch_list(), list)
        True
        >>> agnostic.cuda.get_arch_list()  # doctest: +SKIP
        ['sm_50', 'sm_52', 'sm_53', 'sm_60', 'sm_61', 'sm_62', 'sm_70', 'sm_72', 'sm_75', 'sm_80', 'sm_86', 'sm_90']
    """
    if not is_available():
        return []
    cupy = _backend.require_cupy()
    try:
        architectures = sorted(int(arch) for arch in cupy.cuda.nvrtc.getSupportedArchs())
    except Exception:  # an NVRTC without nvrtcGetSupportedArchs, or none loadable: the devices' own
        architectures = sorted({properties.major * 10 + properties.minor
                                for properties in map(get_device_properties, range(device_count()))})
    return [f"sm_{arch}" for arch in architectures]


def get_gencode_flags():
    """NVCC ``-gencode`` flags for ``get_arch_list()``'s architectures, in PyTorch's form; ``""`` without CUDA.

        >>> agnostic.cuda.get_gencode_flags().count("-gencode") == len(agnostic.cuda.get_arch_list())
        True
        >>> agnostic.cuda.get_gencode_flags()  # doctest: +SKIP
        '-gencode compute=compute_50,code=sm_50 ... -gencode compute=compute_90,code=sm_90'
    """
    return " ".join(f"-gencode compute=compute_{arch},code={kind}_{arch}"
                    for kind, arch in (name.split("_") for name in get_arch_list()))
