"""``GradScaler``: loss scaling for float16 training, as ``torch.amp.GradScaler`` (scale the loss, unscale the
gradients, skip the steps whose gradients overflowed, and adapt the scale)."""

from enum import Enum

from .. import _dtypes
from ..autograd.grad_mode import no_grad
from ..ops.creation import full
from ..ops.elementwise import isfinite


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    """Scale the loss by a factor (``init_scale``) so float16 gradients don't underflow; ``step(optimizer)``
    unscales the gradients and skips the optimizer's step when any is inf or NaN; ``update()`` then halves the scale
    (``backoff_factor``) after such a step, or doubles it (``growth_factor``) after ``growth_interval`` good steps in
    a row. With ``enabled=False`` every method passes through, so one training loop serves both.

        >>> w = agnostic.nn.Parameter(agnostic.tensor([1.0, 2.0]))
        >>> optimizer = agnostic.optim.SGD([w], lr=0.1)
        >>> scaler = agnostic.amp.GradScaler("cpu", init_scale=1024.0)
        >>> scaler.scale((w ** 2).sum()).backward()
        >>> w.grad
        tensor([2048., 4096.])
        >>> scaler.step(optimizer)
        >>> scaler.update()
        >>> w
        Parameter containing:
        tensor([0.8000, 1.6000], requires_grad=True)
        >>> scaler.get_scale()
        1024.0
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # a float32 tensor on the device of the first scaled output
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = 0
            self._per_optimizer_states = {}

    def is_enabled(self):
        """Whether this scaler scales (``enabled`` at construction)."""
        return self._enabled

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples of them) multiplied by the current scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(output) for output in outputs)
        if self._scale is None:
            self._scale = full((), self._init_scale, dtype=_dtypes.float32, device=outputs.device)
        return outputs * self._scale.to(device=outputs.device, non_blocking=True)

    def _state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), {"stage": OptState.READY, "found_inf": None})

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale in place (before clipping them, say) and record whether any
        is inf or NaN; at most once per ``step``/``update``."""
        if not self._enabled:
            return
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        if self._scale is None:
            raise RuntimeError("Attempted unscale_ but _scale is None.  This may indicate your script did not use "
                               "scaler.scale(loss or outputs) earlier in the iteration.")
        inverse_scale = 1.0 / float(self._scale.item())
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if grad.dtype is _dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    grad.mul_(inverse_scale)
                    found_inf = found_inf or not bool(isfinite(grad).all())
        state["found_inf"] = found_inf
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale ``optimizer``'s gradients (unless ``unscale_`` did) and run ``optimizer.step(*args, **kwargs)``
        unless one of them is inf or NaN; returns what the step returned (None when skipped)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        result = None if state["found_inf"] else optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return result

    def update(self, new_scale=None):
        """Adapt the scale after this iteration's steps (or set it to ``new_scale``, a float or a 1-element
        tensor), and get ready for the next iteration."""
        if not self._enabled:
            return
        if self._scale is None:
            return
        if new_scale is not None:
            self._scale.fill_(float(new_scale))
        else:
            found_inf = [state["found_inf"] for state in self._per_optimizer_states.values()
                         if state["found_inf"] is not None]
            if not found_inf:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(found_inf):
                self._scale.mul_(self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale.mul_(self._growth_factor)
                    self._growth_tracker = 0
        self._per_optimizer_states = {}

    def get_scale(self):
        """The current scale, a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self):
        """The factor the scale grows by after ``growth_interval`` good steps."""
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        """Set the growth factor."""
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        """The factor the scale shrinks by after a step with inf or NaN gradients."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        """Set the backoff factor."""
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        """How many good steps in a row grow the scale."""
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        """Set the growth interval."""
        self._growth_interval = new_interval

    def state_dict(self):
        """The scaler's state (``scale``, factors, interval, ``_growth_tracker``), as PyTorch's; empty when
        disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        """Restore ``state_dict()``'s state (from agnostic or PyTorch)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._growth_tracker = state_dict["_growth_tracker"]


__all__ = ["GradScaler"]
