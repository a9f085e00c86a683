"""``autocast``: a region (context manager or decorator) in which ops run in lower precision where PyTorch's
autocast lists say it is safe, as ``torch.autocast``."""

import functools
import threading
import warnings

from .. import _autocast, _dtypes

_SUPPORTED = {"cuda": (_dtypes.float16, _dtypes.bfloat16), "cpu": (_dtypes.bfloat16, _dtypes.float16)}
_regions_lock = threading.Lock()


class autocast:
    """Run the ops inside in mixed precision on ``device_type`` (``"cuda"`` or ``"cpu"``), as ``torch.autocast``:
    matrix products, linear layers and convolutions in ``dtype`` (float16 on CUDA and bfloat16 on the CPU by
    default), softmax, losses, norms and reductions in float32, and ops of several inputs in their widest type.
    Casts are recorded by autograd, so ``backward`` (called after the region) gives gradients in the parameters'
    own dtype. Nested regions may turn autocast off (``enabled=False``) or change its dtype; leaf tensors cast
    inside a region are cast once and reused while ``cache_enabled``. Works as a decorator too.

        >>> w = agnostic.randn(3, 3, requires_grad=True)
        >>> with agnostic.autocast(device_type="cpu", dtype=agnostic.float16):
        ...     y = agnostic.ones(2, 3) @ w
        ...     z = y.prod(dim=-1)
        >>> y.dtype, z.dtype
        (agnostic.float16, agnostic.float32)
        >>> z.sum().backward()
        >>> w.grad.dtype
        agnostic.float32
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _SUPPORTED:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}': agnostic "
                               "autocasts on 'cuda' and 'cpu'")
        self.device = device_type
        self.fast_dtype = _autocast.configured_dtype(device_type) if dtype is None else _dtypes.as_dtype(dtype)
        self._cache_enabled = True if cache_enabled is None else bool(cache_enabled)
        self._enabled = bool(enabled)
        if self._enabled and self.fast_dtype not in _SUPPORTED[device_type]:
            names = ", ".join(d.name for d in _SUPPORTED[device_type])
            warnings.warn(f"In {device_type.upper()} autocast, but the target dtype {self.fast_dtype.name} is not "
                          f"supported (supported: {names}). Disabling autocast.", UserWarning, stacklevel=2)
            self._enabled = False

    def __enter__(self):
        state = _autocast.STATE
        self._previous = (state.enabled, state.cache_enabled)
        enabled = dict(state.enabled)
        if self._enabled:
            enabled[self.device] = self.fast_dtype
        else:
            enabled.pop(self.device, None)
        state.enabled, state.cache_enabled = enabled, self._cache_enabled
        with _regions_lock:
            _autocast.OPEN_REGIONS[0] += 1
        return self

    def __exit__(self, *exc_info):
        state = _autocast.STATE
        state.enabled, state.cache_enabled = self._previous
        if not state.enabled:
            state.cache.clear()  # the outermost region ends: its casts of the weights go
        with _regions_lock:
            _autocast.OPEN_REGIONS[0] -= 1
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return function(*args, **kwargs)
        return decorated


def is_autocast_available(device_type):
    """Whether autocast supports ``device_type`` (``"cuda"`` and ``"cpu"``), as ``torch.amp.is_autocast_available``.

        >>> agnostic.amp.is_autocast_available("cuda"), agnostic.amp.is_autocast_available("mps")
        (True, False)
    """
    return device_type in _SUPPORTED


def is_autocast_enabled(device_type="cuda"):
    """Whether this thread is in an enabled autocast region for ``device_type``, as ``torch.is_autocast_enabled``.

        >>> with agnostic.autocast("cpu"):
        ...     agnostic.is_autocast_enabled("cpu"), agnostic.is_autocast_enabled("cuda")
        (True, False)
    """
    return device_type in _autocast.STATE.enabled


def get_autocast_dtype(device_type):
    """The dtype autocast uses on ``device_type`` in this thread (its default outside a region), as
    ``torch.get_autocast_dtype``.

        >>> agnostic.get_autocast_dtype("cuda"), agnostic.get_autocast_dtype("cpu")
        (agnostic.float16, agnostic.bfloat16)
    """
    return _autocast.configured_dtype(device_type)


def custom_fwd(forward=None, *, device_type="cuda", cast_inputs=None):
    """Decorate a custom ``autograd.Function``'s ``forward``: with ``cast_inputs`` (a dtype) it runs with autocast
    off on its floating inputs cast to that dtype when called inside a region; without, it runs in the region's
    state, and ``custom_bwd`` gives ``backward`` the same state, as ``torch.amp.custom_fwd``.

        >>> class Square(agnostic.autograd.Function):
        ...     @staticmethod
        ...     @agnostic.amp.custom_fwd(device_type="cpu", cast_inputs=agnostic.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @agnostic.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, grad):
        ...         x, = ctx.saved_tensors
        ...         return 2 * x * grad
        >>> with agnostic.autocast("cpu", dtype=agnostic.float16):
        ...     Square.apply(agnostic.ones(2, dtype=agnostic.float16)).dtype
        agnostic.float32
    """
    if forward is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(forward)
    def decorated(ctx, *args, **kwargs):
        ctx._autocast_dtype = _autocast.STATE.enabled.get(device_type)
        if cast_inputs is None or ctx._autocast_dtype is None:
            return forward(ctx, *args, **kwargs)
        target = _dtypes.as_dtype(cast_inputs)
        cast = functools.partial(_cast_floating, target=target, device_type=device_type)
        with autocast(device_type, enabled=False):
            return forward(ctx, *[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})
    return decorated


def custom_bwd(backward=None, *, device_type="cuda"):
    """Decorate a custom ``autograd.Function``'s ``backward`` (see ``custom_fwd``): it runs in the autocast state
    its forward ran in, as ``torch.amp.custom_bwd``.

        >>> agnostic.amp.custom_bwd(device_type="cpu")(lambda ctx, grad: grad).__name__
        '<lambda>'
    """
    if backward is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(backward)
    def decorated(ctx, *args, **kwargs):
        dtype = getattr(ctx, "_autocast_dtype", None)
        with autocast(device_type, dtype=dtype, enabled=dtype is not None):
            return backward(ctx, *args, **kwargs)
    return decorated


def _cast_floating(value, target, device_type):
    if hasattr(value, "_data") and value._device.type == device_type and value.dtype.category == 2:
        return value.to(target)
    return value


__all__ = ["autocast", "custom_bwd", "custom_fwd", "get_autocast_dtype", "is_autocast_available",
           "is_autocast_enabled"]
