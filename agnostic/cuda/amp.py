"""agnostic.cuda.amp: the CUDA aliases of ``agnostic.amp`` that older PyTorch code uses (``torch.cuda.amp``)."""

from .. import amp


class autocast(amp.autocast):
    """``agnostic.amp.autocast("cuda", ...)``, as ``torch.cuda.amp.autocast`` (deprecated there in favour of
    ``torch.autocast("cuda")``, which agnostic also has).

        >>> with agnostic.cuda.amp.autocast(enabled=False):
        ...     agnostic.is_autocast_enabled("cuda")
        False
    """

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(amp.GradScaler):
    """``agnostic.amp.GradScaler("cuda", ...)``, as ``torch.cuda.amp.GradScaler``.

        >>> agnostic.cuda.amp.GradScaler(enabled=False).get_scale()
        1.0
    """

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(forward=None, *, cast_inputs=None):
    """``agnostic.amp.custom_fwd(device_type="cuda")``, as ``torch.cuda.amp.custom_fwd``.

        >>> agnostic.cuda.amp.custom_fwd(lambda ctx, x: x).__name__
        '<lambda>'
    """
    return amp.custom_fwd(forward, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(backward=None):
    """``agnostic.amp.custom_bwd(device_type="cuda")``, as ``torch.cuda.amp.custom_bwd``.

        >>> agnostic.cuda.amp.custom_bwd(lambda ctx, grad: grad).__name__
        '<lambda>'
    """
    return amp.custom_bwd(backward, device_type="cuda")

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
