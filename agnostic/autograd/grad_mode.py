"""Whether operations record gradients: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``."""

import functools
import threading


class _GradState(threading.local):
    def __init__(self):
        self.enabled = True
        self.inference_mode = False  # inside inference_mode() (``agnostic.is_inference_mode_enabled``)


_state = _GradState()


def is_grad_enabled():
    """True when operations on tensors that require grad record a graph (per thread, on by default).

        >>> agnostic.is_grad_enabled()
        True
        >>> with agnostic.no_grad():
        ...     agnostic.is_grad_enabled()
        False
    """
    return _state.enabled


class _GradModeContext:
    """Base of the grad-mode context managers; each also works as a function decorator."""

    mode = True

    def __enter__(self):
        self.previous = _state.enabled
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with type(self)() if type(self) is not set_grad_enabled else set_grad_enabled(self.mode):
                return function(*args, **kwargs)
        return run


class no_grad(_GradModeContext):
    """Disable gradient recording inside the block (or the decorated function).

        >>> x = agnostic.ones(2, requires_grad=True)
        >>> with agnostic.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
        >>> @agnostic.no_grad()
        ... def doubled(t):
        ...     return t * 2
        >>> doubled(x).requires_grad
        False
    """

    mode = False


class enable_grad(_GradModeContext):
    """Enable gradient recording inside the block, even within ``no_grad``.

        >>> x = agnostic.ones(2, requires_grad=True)
        >>> with agnostic.no_grad():
        ...     with agnostic.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
    """

    mode = True


class set_grad_enabled(_GradModeContext):
    """Set gradient recording to ``mode``: immediately (like PyTorch), and restored when used as a context.

        >>> x = agnostic.ones(2, requires_grad=True)
        >>> with agnostic.set_grad_enabled(False):
        ...     (x * 2).requires_grad
        False
        >>> _ = agnostic.set_grad_enabled(False)
        >>> (x * 2).requires_grad
        False
        >>> _ = agnostic.set_grad_enabled(True)
        >>> (x * 2).requires_grad
        True
    """

    def __init__(self, mode):
        self.previous = _state.enabled
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self):
        return self


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (PyTorch's faster variant of it); ``inference_mode(False)`` is a no-op.

        >>> x = agnostic.ones(2, requires_grad=True)
        >>> with agnostic.inference_mode():
        ...     (x * 2).requires_grad
        False
        >>> with agnostic.inference_mode(False):
        ...     (x * 2).requires_grad
        True
    """

    def __init__(self, mode=True):
        self.mode = not mode
        self.active = mode

    def __enter__(self):
        self.previous = _state.enabled
        self.previous_inference = _state.inference_mode
        if self.active:
            _state.enabled = False
        _state.inference_mode = self.active
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous
        _state.inference_mode = self.previous_inference
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with inference_mode(self.active):
                return function(*args, **kwargs)
        return run
