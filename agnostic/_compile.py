"""``agnostic.compile``: PyTorch's ``torch.compile`` entry point, so that code written for PyTorch 2 runs unchanged.

agnostic has no graph compiler: the model or function comes back as it is and runs eagerly, with the same results,
as PyTorch's own ``backend="eager"`` does. The arguments are checked as PyTorch checks them. On machines with CUDA a
one-time warning says that nothing is captured, and that CUDA graphs are available explicitly
(``agnostic.cuda.graph``, ``agnostic.cuda.make_graphed_callables``).
"""

import functools
import warnings

from . import cuda

MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune")
BACKENDS = ("inductor", "eager", "aot_eager", "cudagraphs")
_warned: list = []  # one entry once the CUDA note has been given


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,
            disable=False):
    """``model`` (a function or an ``nn.Module``) ready to call, as ``torch.compile``: here the model itself, run
    eagerly (agnostic has no graph compiler), so ``torch.compile(model)`` in PyTorch code runs unchanged. Without
    ``model`` it returns a decorator. ``mode``, ``backend`` and ``options`` are checked as PyTorch checks them.

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
    if not disable and not _warned and cuda.is_available():
        _warned.append(True)
        warnings.warn("agnostic.compile runs the model eagerly: agnostic has no graph compiler. Results are the same; "
                      "for the launch-overhead speed-up, capture the step as a CUDA graph with agnostic.cuda.graph or "
                      "agnostic.cuda.make_graphed_callables.", stacklevel=3)
    return model
