"""PyTorch's remaining top-level functions that are ATen entry points (native_*, norms, grid samplers...) and the
small ``torch.*`` queries beside them (deterministic debug mode, device modules, the default generator).

Like ``_torch_level``, these delegate to ``agnostic.nn.functional`` and ``agnostic.linalg``, so gradients come with
them; ATen's enum arguments (grid samplers' modes) are ints, as in PyTorch.
"""

import builtins
import types

from . import _determinism, _dtypes, _layout, cuda, linalg
from ._streams import Event, Stream, current_stream, stream
from ._device import Device
from ._tensor import TensorBase
from .accelerator import is_available as _accelerator_available
from .nn import functional as _functional
from .nn.functional._conv import conv_tbc
from .nn.functional._sparse import _renorm_
from .ops import random as _random
from .ops.creation import empty, ones_like
from .ops.elementwise import rsqrt

# ----- creation ---------------------------------------------------------------------------------------------------
def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of shape ``size`` whose dimensions lie in memory in the order ``physical_layout``
    (outermost first), as ``torch.empty_permuted``: ``(0, 2, 3, 1)`` for an NCHW shape gives channels-last memory.

        >>> t = agnostic.empty_permuted((2, 3, 4), (0, 2, 1))
        >>> t.shape, t.stride()
        (agnostic.Size([2, 3, 4]), (12, 1, 3))
    """
    size, physical_layout = tuple(size), tuple(physical_layout)
    if layout not in (None, _layout.strided):
        raise RuntimeError(f"empty_permuted: only the strided layout is supported, got {layout}")
    if len(physical_layout) != len(size):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; "
                           f"size has {len(size)} dimensions and physical_layout {len(physical_layout)}")
    dims = len(size)
    normalized = [p + dims if isinstance(p, int) and p < 0 else p for p in physical_layout]
    if sorted(normalized) != list(builtins.range(dims)):
        raise RuntimeError(f"empty_permuted: physical_layout must be a permutation of the dimensions "
                           f"0..{dims - 1}, got {list(physical_layout)}")
    tensor = empty(*[size[p] for p in normalized], dtype=dtype, device=device, pin_memory=pin_memory)
    inverse = [0] * dims
    for position, dim in enumerate(normalized):
        inverse[dim] = position
    result = tensor.permute(*inverse)
    return result.requires_grad_() if requires_grad else result


# ----- norms ------------------------------------------------------------------------------------------------------
def _dims(dim):
    return [dim] if isinstance(dim, int) else list(dim)


def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over ``dim`` (one or two dimensions), as ``torch.frobenius_norm`` (deprecated there in favour of
    ``agnostic.linalg.vector_norm(input, 2, dim, keepdim)``, which it is).

        >>> agnostic.frobenius_norm(agnostic.tensor([[3.0, 4.0], [0.0, 0.0]]), [0, 1])
        tensor(5.)
    """
    dims = _dims(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    return linalg.vector_norm(input, 2, dims, keepdim)


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of each matrix (of the last two dimensions, or of the two in ``dim``), as
    ``torch.nuclear_norm``, which takes ``nuclear_norm(input, keepdim)`` and ``nuclear_norm(input, dim, keepdim)``
    (``agnostic.linalg.matrix_norm(input, 'nuc', dim, keepdim)``).

        >>> agnostic.nuclear_norm(agnostic.tensor([[3.0, 0.0], [0.0, -4.0]]))
        tensor(7.)
    """
    if isinstance(dim, bool):  # the overload nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    if dim is None:
        if not isinstance(input, TensorBase) or input.dim() != 2:
            ndim = input.dim() if isinstance(input, TensorBase) else 0
            raise RuntimeError(f"Expected a tensor with 2 dimensions, but got a tensor with {ndim} dimensions "
                               "instead; pass dim=(row_dim, column_dim) for batches")
        dim = (0, 1)
    dims = _dims(dim)
    if len(dims) != 2:
        raise RuntimeError(f"nuclear norm requires a 'dim' argument of size 2, got {len(dims)} dimensions")
    return linalg.matrix_norm(input, "nuc", dims, keepdim)


def native_norm(input, p=2, dim=None, keepdim=False, dtype=None):
    """The ``p``-norm of all of ``input``'s elements (of those over ``dim`` when given; ``p`` None is 2), as
    ``torch.native_norm`` (which PyTorch keeps for sparse tensors: ``agnostic.linalg.vector_norm``).

        >>> agnostic.native_norm(agnostic.tensor([3.0, -4.0]))
        tensor(5.)
    """
    return linalg.vector_norm(input, 2 if p is None else p, dim, keepdim, dtype=dtype)


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of each slice of ``v`` along ``dim``, over all the other dimensions, kept as size 1 (``dim``
    -1: the norm of all of ``v``), as ``torch.norm_except_dim`` (weight normalization's norm).

        >>> agnostic.norm_except_dim(agnostic.tensor([[3.0, 4.0], [6.0, 8.0]]), 2, 0)
        tensor([[ 5.],
                [10.]])
    """
    if dim == -1:
        return linalg.vector_norm(v, pow)
    if not 0 <= dim < v.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, {v.dim() - 1}], but got {dim})")
    others = [d for d in builtins.range(v.dim()) if d != dim]
    return linalg.vector_norm(v, pow, others, keepdim=True)


# ----- normalization and dropout ----------------------------------------------------------------------------------
def native_group_norm(input, weight, bias, N, C, HxW, group, eps):
    """``(output, mean, rstd)``, as ``torch.native_group_norm``: group normalization of ``input`` (``N`` samples of
    ``C`` channels and ``HxW`` positions each) with the statistics of each sample's groups, of shape ``(N, group)``.

        >>> x = agnostic.tensor([[[1.0], [3.0]]])
        >>> out, mean, rstd = agnostic.native_group_norm(x, None, None, 1, 2, 1, 1, 0.0)
        >>> out.flatten(), mean, rstd
        (tensor([-1.,  1.]), tensor([[2.]]), tensor([[1.]]))
    """
    if input.numel() != N * C * HxW:
        raise RuntimeError(f"Expected input to have N * C * HxW = {N * C * HxW} elements, got {input.numel()} "
                           f"(shape {list(input.shape)}); pass N, C and HxW that match it")
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={group}")
    output = _functional.group_norm(input, group, weight, bias, eps)
    grouped = input.reshape(N, group, -1)
    mean = grouped.mean(dim=-1)
    return output, mean, rsqrt(grouped.var(dim=-1, correction=0) + eps)


def native_dropout(input, p, train):
    """``(output, mask)``, as ``torch.native_dropout``: in training (``train`` True or None) each element is kept
    with probability ``1 - p`` and scaled by ``1 / (1 - p)``, and ``mask`` (bool) says which were kept; otherwise
    the output is a copy of ``input`` and the mask all True.

        >>> out, mask = agnostic.native_dropout(agnostic.ones(3), 0.5, False)
        >>> out, mask
        (tensor([1., 1., 1.]), tensor([True, True, True]))
    """
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if train is False:
        return input.clone(), ones_like(input, dtype=_dtypes.bool)
    mask = _random.bernoulli(empty(*input.shape, dtype=input.dtype, device=input.device), 1.0 - p).bool()
    scale = 0.0 if p == 1 else 1.0 / (1.0 - p)
    return input * mask * scale, mask


# ----- embeddings and convolution ---------------------------------------------------------------------------------
def embedding_renorm_(input, indices, max_norm, norm_type):
    """Rescale in place the rows of ``input`` that ``indices`` name whose ``norm_type``-norm exceeds ``max_norm``,
    to norm ``max_norm`` (what ``embedding(max_norm=...)`` does first), as ``torch.embedding_renorm_``.

        >>> weight = agnostic.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> agnostic.embedding_renorm_(weight, agnostic.tensor([0, 1]), 1.0, 2.0)
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    if indices.dtype.is_floating_point or indices.dtype.is_complex or indices.dtype.category == 0:
        raise RuntimeError(f"embedding_renorm_: Expected indices to have an integer dtype, but got "
                           f"{indices.dtype}; convert them with .long()")
    _renorm_(input, indices, max_norm, norm_type)
    return input


# ----- sampling grids ---------------------------------------------------------------------------------------------
_INTERPOLATION_MODES = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING_MODES = {0: "zeros", 1: "border", 2: "reflection"}


def affine_grid_generator(theta, size, align_corners):
    """The sampling grid of the affine maps ``theta`` for an output of ``size``, as
    ``torch.affine_grid_generator`` (``torch.nn.functional.affine_grid`` with every argument given).

        >>> agnostic.affine_grid_generator(agnostic.eye(2, 3)[None], [1, 1, 1, 2], False)
        tensor([[[[-0.5000,  0.0000],
                  [ 0.5000,  0.0000]]]])
    """
    return _functional.affine_grid(theta, size, align_corners)


def _grid_modes(interpolation_mode, padding_mode):
    if interpolation_mode not in _INTERPOLATION_MODES:
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode to be 0 (bilinear), 1 (nearest) or "
                           f"2 (bicubic), but got: {interpolation_mode}")
    if padding_mode not in _PADDING_MODES:
        raise RuntimeError(f"grid_sampler(): expected padding_mode to be 0 (zeros), 1 (border) or 2 (reflection), "
                           f"but got: {padding_mode}")
    return _INTERPOLATION_MODES[interpolation_mode], _PADDING_MODES[padding_mode]


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``input`` sampled at ``grid``'s points, as ``torch.grid_sampler`` (``torch.nn.functional.grid_sample`` with
    ATen's int modes: interpolation 0 bilinear, 1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection).

        >>> image = agnostic.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> agnostic.grid_sampler(image, agnostic.tensor([[[[0.0, 0.0]]]]), 0, 0, False)
        tensor([[[[2.5000]]]])
    """
    mode, padding = _grid_modes(interpolation_mode, padding_mode)
    return _functional.grid_sample(input, grid, mode, padding, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` of a 4-D ``input`` (N, C, H, W) at a (N, H_out, W_out, 2) ``grid``, as
    ``torch.grid_sampler_2d``.

        >>> image = agnostic.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        >>> agnostic.grid_sampler_2d(image, agnostic.tensor([[[[1.0, 1.0]]]]), 1, 1, True)
        tensor([[[[4.]]]])
    """
    if input.dim() != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes {list(input.shape)}; "
                           "use grid_sampler_3d for volumes")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """``grid_sampler`` of a 5-D ``input`` (N, C, D, H, W) at a (N, D_out, H_out, W_out, 3) ``grid``, as
    ``torch.grid_sampler_3d`` (no bicubic mode, as in PyTorch).

        >>> volume = agnostic.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> agnostic.grid_sampler_3d(volume, agnostic.zeros(1, 1, 1, 1, 3), 0, 0, False).flatten()
        tensor([3.5000])
    """
    if input.dim() != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes {list(input.shape)}; "
                           "use grid_sampler_2d for images")
    if interpolation_mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


# ----- global state and queries -----------------------------------------------------------------------------------
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """Set how ops without a deterministic implementation behave, as ``torch.set_deterministic_debug_mode``:
    ``"default"`` or 0 (run), ``"warn"`` or 1 (warn), ``"error"`` or 2 (raise); the same setting as
    ``use_deterministic_algorithms``.

        >>> agnostic.set_deterministic_debug_mode("warn")
        >>> agnostic.get_deterministic_debug_mode(), agnostic.is_deterministic_algorithms_warn_only_enabled()
        (1, True)
        >>> agnostic.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    _determinism.use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """The deterministic debug mode, as ``torch.get_deterministic_debug_mode``: 0 (default), 1 (warn) or 2 (error).

        >>> agnostic.get_deterministic_debug_mode()
        0
    """
    if not _determinism.are_deterministic_algorithms_enabled():
        return 0
    return 1 if _determinism.is_deterministic_algorithms_warn_only_enabled() else 2


def is_distributed(input):
    """False: a tensor is never split over machines, as ``torch.is_distributed`` says of every dense tensor.

        >>> agnostic.is_distributed(agnostic.ones(2))
        False
    """
    if not isinstance(input, TensorBase):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False


def is_vulkan_available():
    """False: agnostic runs on CPUs and CUDA GPUs, never Vulkan, as ``torch.is_vulkan_available`` on most builds.

        >>> agnostic.is_vulkan_available()
        False
    """
    return False


def _cpu_module():
    """The CPU's device module, as ``torch.cpu``: the same queries ``agnostic.cuda`` answers, for the one CPU."""
    module = types.ModuleType("agnostic.cpu", "The CPU as a device module, as torch.cpu (see get_device_module).")

    def synchronize(device=None):
        """Nothing to wait for: CPU work is done when issued."""

    module.__dict__.update(
        is_available=lambda: True, is_initialized=lambda: True, device_count=lambda: 1,
        current_device=lambda: "cpu", set_device=lambda device: None, synchronize=synchronize,
        current_stream=lambda device=None: current_stream(Device("cpu")), stream=stream, Stream=Stream, Event=Event)
    return module


_CPU_MODULE = _cpu_module()


def get_device_module(device=None):
    """The module of ``device``'s type, as ``torch.get_device_module``: ``agnostic.cuda`` for CUDA, a CPU module
    (``is_available``, ``device_count``, ``synchronize``, ``current_stream``...) for the CPU; None means the
    current accelerator, or the CPU without one.

        >>> agnostic.get_device_module("cuda") is agnostic.cuda
        True
        >>> agnostic.get_device_module("cpu").device_count()
        1
    """
    if device is None:
        kind = "cuda" if _accelerator_available() else "cpu"
    elif isinstance(device, Device):
        kind = device.type
    elif isinstance(device, str):
        kind = device.split(":")[0]
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or None")
    if kind == "cuda":
        return cuda
    if kind == "cpu":
        return _CPU_MODULE
    raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered as 'agnostic.{kind}'.")


# The CPU's default generator, which ``manual_seed`` seeds and random functions use when given none.
default_generator = _random.default_generator()


__all__ = [
    "empty_permuted", "frobenius_norm", "nuclear_norm", "native_norm", "norm_except_dim", "native_group_norm",
    "native_dropout", "embedding_renorm_", "conv_tbc", "affine_grid_generator", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "set_deterministic_debug_mode", "get_deterministic_debug_mode", "is_distributed",
    "is_vulkan_available", "get_device_module", "default_generator",
]
