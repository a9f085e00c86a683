"""Autocast's state and policies: which ops run in lower precision (float16/bfloat16), which in float32 and which in
the widest input type inside an ``agnostic.autocast`` region, as PyTorch's autocast lists say, per device type.

The state is per thread, as PyTorch's. An op named in ``POLICIES`` is wrapped once, where it is declared
(``autocasting``): outside every autocast region the wrapper costs one check of a counter; inside one, the op's
floating-point tensor arguments are cast (recorded by autograd, so gradients flow back in the leaves' dtype) and
the op runs with autocast off, as PyTorch runs an autocast op's implementation.
"""

import functools
import threading

from . import _dtypes

LOWER, FLOAT32, PROMOTE = "lower precision", "float32", "widest type"

# PyTorch 2.x's autocast lists (torch/csrc/autograd/autocast_mode.cpp) for the ops agnostic has, by device type.
_CUDA_LOWER = ("matmul", "mm", "mv", "bmm", "addmm", "addmv", "addbmm", "baddbmm", "addr", "chain_matmul",
               "multi_dot", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d", "prelu", "scaled_dot_product_attention", "rnn_cell", "lstm_cell", "gru_cell")
_CUDA_FLOAT32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
                 "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "nll_loss",
                 "cross_entropy", "binary_cross_entropy_with_logits", "mse_loss", "l1_loss", "smooth_l1_loss",
                 "huber_loss", "kl_div", "cosine_similarity", "cosine_embedding_loss", "hinge_embedding_loss",
                 "margin_ranking_loss", "multilabel_margin_loss", "multi_margin_loss", "poisson_nll_loss",
                 "soft_margin_loss", "triplet_margin_loss", "softmax", "log_softmax", "softmin", "cumsum",
                 "cumprod", "prod", "dist", "pdist", "cdist", "renorm", "logsumexp", "normalize", "vector_norm",
                 "matrix_norm", "sum")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "grid_sample", "index_put",
                 "scatter_add", "tensordot")
_CPU_LOWER = ("matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "conv1d", "conv2d", "conv3d",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
              "vecdot")
_CPU_FLOAT32 = ("prod", "quantile", "nanquantile", "cdist", "trace", "cholesky", "inv", "pinv", "mse_loss",
                "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
                "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss",
                "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss",
                "binary_cross_entropy_with_logits", "vector_norm", "matrix_norm", "eigh", "svd", "qr", "solve",
                "det", "slogdet", "lstsq")
# Ops that apply their float32 policy themselves, on their half-precision path (``runs_in_float32``): a wrapper
# would cost every call of these hot ops, also outside autocast.
SELF_CHECKED = frozenset({"sum"})
POLICIES: dict = {}
for _type, _names, _policy in (("cuda", _CUDA_LOWER, LOWER), ("cuda", _CUDA_FLOAT32, FLOAT32),
                               ("cuda", _CUDA_PROMOTE, PROMOTE), ("cpu", _CPU_LOWER, LOWER),
                               ("cpu", _CPU_FLOAT32, FLOAT32)):
    for _name in _names:
        POLICIES.setdefault(_name, {})[_type] = _policy

DEFAULT_DTYPES = {"cuda": _dtypes.float16, "cpu": _dtypes.bfloat16}
_FLOATING = 2  # the dtype category of float16, bfloat16, float32 and float64
_WIDTH = {_dtypes.float16: 2, _dtypes.bfloat16: 2, _dtypes.float32: 4, _dtypes.float64: 8}


class _State(threading.local):
    """This thread's autocast settings: ``{device type: dtype}`` of the enabled regions, and the casts of leaf
    tensors (weights) made in them, kept for reuse while ``cache_enabled``."""

    def __init__(self):
        self.enabled = {}
        self.configured = {}  # {device type: dtype} set by set_autocast_dtype while autocast was off
        self.cache_enabled = True
        self.cache = {}  # id(leaf) -> (leaf, (dtype, cast))


STATE = _State()


def configured_dtype(device_type):
    """The dtype autocast uses on ``device_type`` in this thread: its enabled region's, else the one
    ``set_autocast_dtype`` set, else the default (float16 on CUDA, bfloat16 on the CPU)."""
    return STATE.enabled.get(device_type) or STATE.configured.get(device_type) or DEFAULT_DTYPES[device_type]
# Autocast regions open in any thread: while none is, a wrapped op only reads this.
OPEN_REGIONS = [0]


def autocasting(name, function):
    """``function`` (the op ``name``) casting its arguments by its autocast policy inside an autocast region;
    ``function`` itself for an op with no policy."""
    policies = POLICIES.get(name)
    if policies is None or name in SELF_CHECKED:
        return function

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if not OPEN_REGIONS[0]:
            return function(*args, **kwargs)
        device_type = _device_type(args, kwargs)
        dtype = STATE.enabled.get(device_type)
        policy = policies.get(device_type)
        if dtype is None or policy is None:
            return function(*args, **kwargs)
        target = _target_dtype(policy, dtype, args, kwargs)
        cast = functools.partial(_cast, target=target, device_type=device_type)
        args = tuple(_map(cast, value) for value in args)
        kwargs = {key: _map(cast, value) for key, value in kwargs.items()}
        enabled = STATE.enabled
        STATE.enabled = {}  # the op's own inner ops run as written, as in PyTorch
        try:
            return function(*args, **kwargs)
        finally:
            STATE.enabled = enabled
    return wrapper


def policy(function):
    """Decorator: ``function``, named as its op (``linear``, ``conv2d``...), with that op's autocast policy."""
    return autocasting(function.__name__, function)


def casts_half_operands(name):
    """Whether the elementwise op ``name`` runs float16/bfloat16 operands in float32 in some autocast region (its
    plans for such operands check ``half_operands_to_float32``; float32 operands' plans are unaffected)."""
    return any(policy == FLOAT32 for policy in POLICIES.get(name, {}).values())


def runs_in_float32(name, tensor):
    """Whether this thread's autocast region for ``tensor``'s device type runs ``name`` in float32."""
    if not OPEN_REGIONS[0]:
        return False
    device_type = tensor._device.type
    return device_type in STATE.enabled and POLICIES[name].get(device_type) == FLOAT32


def float32_operands(name, operands):
    """``operands`` with float16/bfloat16 tensors cast to float32 when this thread's autocast region for their
    device type runs ``name`` in float32; None when autocast leaves them as they are."""
    if not OPEN_REGIONS[0]:
        return None
    device_type = _device_type(operands, {})
    if STATE.enabled.get(device_type) is None or POLICIES[name].get(device_type) != FLOAT32:
        return None
    cast = functools.partial(_cast, target=_dtypes.float32, device_type=device_type)
    return tuple(_map(cast, value) for value in operands)


def _tensors(values):
    for value in values:
        if hasattr(value, "_data") and hasattr(value, "_device"):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from _tensors(value)


def _device_type(args, kwargs):
    for tensor in _tensors(list(args) + list(kwargs.values())):
        return tensor._device.type
    return None


def _target_dtype(policy, dtype, args, kwargs):
    if policy == LOWER:
        return dtype
    if policy == FLOAT32:
        return _dtypes.float32
    floating = [t.dtype for t in _tensors(list(args) + list(kwargs.values())) if t.dtype.category == _FLOATING]
    return max(floating, key=_WIDTH.__getitem__) if floating else None


def _map(cast, value):
    if isinstance(value, (list, tuple)) and any(True for _ in _tensors(value)):
        return type(value)(_map(cast, item) for item in value)
    return cast(value)


def _cast(value, target, device_type):
    """A floating tensor of this device type in ``target`` (the float32 policy only raises lower precisions:
    float64 stays), through the differentiable ``to``; anything else as it is."""
    if target is None or not hasattr(value, "_data") or value._device.type != device_type:
        return value
    current = value.dtype
    if current.category != _FLOATING or current is target or \
            (target is _dtypes.float32 and _WIDTH[current] > _WIDTH[target]):
        return value
    leaf = STATE.cache_enabled and value.is_leaf and value.requires_grad
    if leaf:  # a weight used by several ops is cast once per region, as PyTorch caches it
        cached = STATE.cache.get(id(value))
        if cached is not None and cached[0] is value and cached[1][0] is target:
            return cached[1][1]
    cast = value.to(target)
    if leaf:
        STATE.cache[id(value)] = (value, (target, cast))
    return cast
