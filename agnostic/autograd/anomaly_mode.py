"""Anomaly detection for autograd (``detect_anomaly``, ``set_detect_anomaly``), as ``torch.autograd.anomaly_mode``.

While it is on, every node the forward pass records keeps the traceback of the code that made it; in backward, a
node whose gradients hold NaN raises (``check_nan``), and any error while a node runs first warns with the traceback
of the forward call that created that node (and, for nodes made by a ``create_graph`` backward, of the node whose
backward made them). The engine calls ``remember_forward`` and ``run_checked`` only while ``_state.enabled``.
"""

import functools
import os
import threading
import traceback
import warnings
import weakref


class _AnomalyState:
    """Process-wide, as PyTorch's (not per thread)."""

    enabled = False
    check_nan = True


_state = _AnomalyState()

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_LAYERS = os.path.join(_ROOT, "nn") + os.sep  # agnostic.nn is Python in PyTorch too: its frames stay in the trace
_records: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> _Record, for the nodes made while anomaly mode was on
_running = threading.local()  # the node whose backward this thread is running (the parent of nodes it makes)


class _Record:
    __slots__ = ("stack", "parent_name", "parent")

    def __init__(self, stack, parent_name, parent):
        self.stack, self.parent_name, self.parent = stack, parent_name, parent


def is_anomaly_enabled():
    """True while autograd's anomaly detection is on (``torch.is_anomaly_enabled``).

        >>> agnostic.autograd.anomaly_mode.is_anomaly_enabled()
        False
    """
    return _state.enabled


def is_anomaly_check_nan_enabled():
    """True when anomaly detection, while on, also checks backward's gradients for NaN
    (``torch.is_anomaly_check_nan_enabled``).

        >>> agnostic.autograd.anomaly_mode.is_anomaly_check_nan_enabled()
        True
    """
    return _state.check_nan


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off, with or without the NaN check (``torch.set_anomaly_enabled``).

        >>> from agnostic.autograd import anomaly_mode
        >>> anomaly_mode.set_anomaly_enabled(True, check_nan=False)
        >>> anomaly_mode.is_anomaly_enabled(), anomaly_mode.is_anomaly_check_nan_enabled()
        (True, False)
        >>> anomaly_mode.set_anomaly_enabled(False)
    """
    _state.enabled = bool(enabled)
    _state.check_nan = bool(check_nan)


class detect_anomaly:
    """Turn on anomaly detection inside the block (or each call of the decorated function): backward reports the
    forward traceback of a failing node and, with ``check_nan``, raises when a node returns NaN gradients. Warns
    on creation that this slows the program down (use it to debug).

        >>> import warnings
        >>> x = agnostic.tensor([0.0, 1.0], requires_grad=True)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # the warnings: anomaly mode is on; the forward traceback
        ...     with agnostic.autograd.detect_anomaly():
        ...         y = (x * agnostic.tensor([float("nan"), 1.0])).sum()
        ...         y.backward()
        Traceback (most recent call last):
            ...
        RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.
    """

    def __init__(self, check_nan=True):
        self.prev = _state.enabled
        self.check_nan = check_nan
        self.prev_check_nan = _state.check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc_info):
        set_anomaly_enabled(self.prev, self.prev_check_nan)

    def __call__(self, function):
        """As a decorator (PyTorch's class is a context manager only): anomaly detection during each call."""
        @functools.wraps(function)
        def run(*args, **kwargs):
            previous = _state.enabled, _state.check_nan
            set_anomaly_enabled(True, self.check_nan)
            try:
                return function(*args, **kwargs)
            finally:
                set_anomaly_enabled(*previous)
        return run


class set_detect_anomaly:
    """Set anomaly detection on or off (``mode``), from the call on; as a context manager, the previous setting
    comes back at the end of the block.

        >>> with agnostic.autograd.set_detect_anomaly(True, check_nan=False):
        ...     agnostic.autograd.anomaly_mode.is_anomaly_enabled()
        True
        >>> agnostic.autograd.anomaly_mode.is_anomaly_enabled()
        False
    """

    def __init__(self, mode, check_nan=True):
        self.prev = _state.enabled
        self.prev_check_nan = _state.check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc_info):
        set_anomaly_enabled(self.prev, self.prev_check_nan)


# ----- the engine's hooks (called only while anomaly mode is on) ----------------------------------------------------
def remember_forward(node):
    """Keep the traceback of the code recording ``node`` (without agnostic's own recording frames), and the node
    whose backward is running, if any."""
    stack = traceback.extract_stack()
    end = len(stack)
    while end > 1 and stack[end - 1].filename.startswith(_ROOT) and not stack[end - 1].filename.startswith(_LAYERS):
        end -= 1
    parent = getattr(_running, "node", None)
    _records[node] = _Record(traceback.StackSummary.from_list(stack[:end]),
                             parent.name() if parent is not None else None,
                             _records.get(parent) if parent is not None else None)


def run_checked(node, run, grad_outputs):
    """``run(grad_outputs)``, the gradients of ``node``'s inputs, with PyTorch's anomaly checks: NaN in a gradient
    that flows on raises; any error first warns with the forward traceback of ``node``."""
    previous = getattr(_running, "node", None)
    _running.node = node
    try:
        grads = run(grad_outputs)
        if _state.check_nan:
            for index, (edge, grad) in enumerate(zip(node.next_edges, grads)):
                if edge is not None and grad is not None and bool(grad.isnan().any()):
                    raise RuntimeError(f"Function '{node.name()}' returned nan values in its {index}th output.")
        return grads
    except Exception:
        _warn_forward_stack(node)
        raise
    finally:
        _running.node = previous


def _warn_forward_stack(node):
    name = node.name()
    record = _records.get(node)
    if record is None:
        warnings.warn(f"Error detected in {name}. No forward pass information available. Enable detect anomaly "
                      "during forward pass for more information.", stacklevel=4)
        return
    warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the error:\n"
                  + "".join(record.stack.format()), stacklevel=4)
    while record.parent is not None:
        name, record = record.parent_name, record.parent
        warnings.warn(f"\n\nPrevious calculation was induced by {name}. Traceback of forward call that induced the "
                      "previous calculation:\n" + "".join(record.stack.format()), stacklevel=4)


__all__ = ["detect_anomaly", "set_detect_anomaly"]
