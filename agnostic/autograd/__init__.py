"""agnostic.autograd: reverse-mode automatic differentiation of tensor code, as torch.autograd."""

import functools
import threading

from . import anomaly_mode
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .functions import Function, FunctionCtx, backward, grad
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
from .tracking import make_leaf
from .variable import Variable

__all__ = ["Function", "FunctionCtx", "GradcheckError", "Node", "backward", "detect_anomaly", "enable_grad", "grad",
           "gradcheck", "gradgradcheck", "inference_mode", "is_grad_enabled", "make_leaf", "no_grad",
           "set_detect_anomaly", "set_grad_enabled", "Variable"]


class _MultithreadingState(threading.local):
    enabled = True


_multithreading = _MultithreadingState()


class set_multithreading_enabled:
    """Allow (``mode=True``, the default state) or forbid multithreaded backward passes, as
    ``torch.autograd.set_multithreading_enabled``: set at once, and restored on leaving when used as a context
    manager or decorator; per thread. agnostic's engine runs every backward pass on the calling thread, so the
    setting is recorded and changes nothing.

        >>> with agnostic.autograd.set_multithreading_enabled(False):
        ...     agnostic.autograd._is_multithreading_enabled()
        False
        >>> agnostic.autograd._is_multithreading_enabled()
        True
    """

    def __init__(self, mode):
        self.previous = _multithreading.enabled
        self.mode = bool(mode)
        _multithreading.enabled = self.mode

    def __enter__(self):
        return None

    def __exit__(self, *exception):
        _multithreading.enabled = self.previous

    def clone(self):
        """A new context of the same mode (what a decorator enters on each call)."""
        return self.__class__(self.mode)

    def __call__(self, function):
        _multithreading.enabled = self.previous  # as a decorator, the mode applies only inside calls

        @functools.wraps(function)
        def call(*args, **kwargs):
            with self.clone():
                return function(*args, **kwargs)
        return call


def _is_multithreading_enabled():
    """Whether multithreaded backward is allowed on this thread (``set_multithreading_enabled``)."""
    return _multithreading.enabled


__all__ += ["set_multithreading_enabled"]
