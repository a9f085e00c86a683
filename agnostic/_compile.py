"""``agnostic.compile``: PyTorch's ``torch.compile`` entry point, so that code written for PyTorch 2 runs unchanged.

agnostic has no graph compiler: by default the model or function comes back as it is and runs eagerly, with the
same results, as PyTorch's own ``backend="eager"`` does (on machines with CUDA a one-time warning says so). The
modes that use CUDA graphs in PyTorch (``mode="reduce-overhead"`` or ``"max-autotune"``, ``backend="cudagraphs"``)
use them here too: for each signature of CUDA tensor arguments, the first call runs eagerly, the second captures it
and later calls replay it (``agnostic.cuda.graphs``). A call whose outputs need gradients (a model's forward) is
captured as a forward and a backward graph; any other (a whole training step: forward, ``backward``, optimizer
update) is captured whole, so each replay repeats its updates. As with any CUDA graph, work on the host inside the
function (Python side effects, CPU tensors) runs only while capturing: keep it outside the compiled function.
The arguments are checked as PyTorch checks them.
"""

import functools
import warnings

from . import cuda
from ._tensor import TensorBase
from .autograd.grad_mode import is_grad_enabled
from .cuda import graphs

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")
_warned: list = []  # one entry once the CUDA note has been given
_GRAPH_MODES = ("reduce-overhead", "max-autotune")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """``model`` (a function or an ``nn.Module``) ready to call, as ``torch.compile``: here the model itself, run
    eagerly (agnostic has no graph compiler), so ``torch.compile(model)`` in PyTorch code runs unchanged; on CUDA,
    ``mode="reduce-overhead"`` (or ``"max-autotune"``, or ``backend="cudagraphs"``) replays CUDA graphs of it, as
    PyTorch's do (see this module's docstring). Without ``model`` it returns a decorator. ``mode``, ``backend`` and
    ``options`` are checked as PyTorch checks them.

        >>> @agnostic.compile(mode="reduce-overhead")
        ... def total(x):
        ...     return (x * 2).sum()
        >>> total(agnostic.ones(3))
        tensor(6.)
        >>> model = agnostic.nn.Linear(2, 1)
        >>> agnostic.compile(model) is model
        True
    """
    settings = dict(fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                    disable=disable)
    if model is None:
        return functools.partial(_compiled, **settings)
    return _compiled(model, **settings)


def _compiled(model, *, fullgraph, dynamic, backend, mode, options, disable):
    if model is None:
        raise RuntimeError("Model can't be None")
    if not callable(model):
        raise TypeError(f"compile() takes a function or an nn.Module, not {type(model).__name__}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(MODES)}")
    if not callable(backend) and backend not in BACKENDS:
        raise RuntimeError(f"Invalid backend: {backend!r}; agnostic.compile takes {', '.join(BACKENDS)} or a callable "
                           "(all run the model eagerly here)")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, not {type(options).__name__}")
    if disable or not cuda.is_available():
        return model
    if mode in _GRAPH_MODES or backend == "cudagraphs":
        return _replayed_as_cuda_graphs(model)
    if not _warned:
        _warned.append(True)
        warnings.warn("agnostic.compile runs the model eagerly: agnostic has no graph compiler. Results are the same; "
                      "for the launch-overhead speed-up, capture the step as a CUDA graph with agnostic.cuda.graph or "
                      "agnostic.cuda.make_graphed_callables.", stacklevel=3)
    return model


def _replayed_as_cuda_graphs(model):
    """``model`` replaying CUDA graphs of itself, one per signature of its CUDA tensor arguments (the first call of a
    signature runs eagerly, as warm-up; the second captures). Calls whose outputs need gradients (a forward) are
    captured as a forward graph and a backward graph; the others (a whole training step, say) are captured whole.
    A Module's ``forward`` is replaced in place and the Module returned, as ``Module.compile`` does. Outputs are
    copies, so holding one across calls is safe; a module's graph is captured again when one of its parameters or
    buffers gets new memory; calls that can't be captured (random draws, host reads, arguments that aren't CUDA
    tensors) run eagerly, after one warning saying why."""
    module = model if callable(getattr(model, "parameters", None)) and hasattr(model, "training") else None
    function = model.forward if module is not None else model
    tensors = (lambda: tuple(module.parameters()) + tuple(module.buffers())) if module is not None else tuple
    captured = {}  # signature -> (replay, the data pointers of the module's tensors then), or None: eager
    needs_autograd = {}  # signature -> whether the warm-up's outputs needed gradients
    warned = []

    def eager_with_warning(reason, args, kwargs):
        if not warned:
            warned.append(True)
            warnings.warn(f"agnostic.compile could not capture this call as a CUDA graph, so it runs eagerly: {reason}",
                          stacklevel=3)
        return function(*args, **kwargs)

    @functools.wraps(function)
    def run(*args, **kwargs):
        key = _signature(args, kwargs, module)
        if key is None:
            return eager_with_warning("only calls whose arguments are all CUDA tensors (no keyword arguments) are "
                                      "captured", args, kwargs)
        if captured.get(key, 0) is None:
            return function(*args)
        state = tuple(t.data_ptr() for t in tensors())
        entry = captured.get(key)
        if entry is not None and entry[1] == state:
            return _copies(entry[0](*args))
        if key not in needs_autograd or entry is not None:  # a new signature, or memory moved since: warm up again
            captured.pop(key, None)
            outputs = function(*args)
            needs_autograd[key] = any(o.requires_grad for o in _tensors_in(outputs))
            return outputs
        placeholders = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
        try:
            if needs_autograd[key]:
                replay = graphs.capture_callable(function, placeholders,
                                                 tuple(t for t in tensors() if t.requires_grad))
            else:
                replay = graphs.capture_whole(function, placeholders)
        except RuntimeError as error:
            captured[key] = None
            return eager_with_warning(str(error), args, {})
        captured[key] = (replay, state)
        return _copies(replay(*args))

    if module is None:
        return run
    module.forward = run
    return module


def _signature(args, kwargs, module):
    """What a captured graph is specific to: the arguments' shapes, dtypes, devices and whether they need
    gradients, grad mode and training mode; None where the call can't be captured (not all CUDA tensors)."""
    if kwargs or not args or not all(isinstance(a, TensorBase) and not a.device.backend.host for a in args):
        return None
    return (is_grad_enabled(), module is not None and module.training,
            tuple((tuple(a.shape), a.dtype, a.device, a.requires_grad) for a in args))


def _tensors_in(outputs):
    """The tensors among a call's outputs (a tensor, or a tuple or list of them and other values)."""
    if isinstance(outputs, TensorBase):
        return (outputs,)
    if isinstance(outputs, (tuple, list)):
        return tuple(o for o in outputs if isinstance(o, TensorBase))
    return ()


def _copies(outputs):
    """The replay's outputs (the graph's own memory, rewritten by the next replay) as copies, gradients kept."""
    if isinstance(outputs, TensorBase):
        return outputs.clone()
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_copies(o) for o in outputs)
    return outputs
