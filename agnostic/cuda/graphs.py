"""CUDA graphs, as ``torch.cuda.graphs``: a sequence of GPU work captured once and replayed with one launch.

Capture records what ops queue on a side stream instead of running it (CuPy's stream capture); ``replay()`` runs the
recorded kernels again, on the same memory, without Python. Memory allocated during a capture comes from the graph's
private pool (shared by the graphs captured with one ``graph_pool_handle()``), so nothing outside the graph reuses
it. Inputs are read from, and outputs written to, the tensors the capture used ("static" tensors): copy new data
into the inputs before each replay and read the outputs after. As in PyTorch, the graph doesn't keep those tensors
alive: keep references to them (the model, its optimizer, the static inputs and outputs) for as long as you replay,
since a replay writes into their memory whether or not something else has been given it since.

What can't be captured raises while capturing, with what to do instead: anything that waits for the GPU on the host
(``.item()``, ``bool(t)``, printing, data-dependent shapes such as ``nonzero`` or boolean masks), random draws
(their offsets would repeat on every replay), and optimizers whose step count lives on the host (all but SGD, and
Adam or AdamW with ``capturable=True``).
Matrix products are captured through a CuPy reduction kernel instead of cuBLAS, which CuPy refuses during capture.
"""

import gc

from .. import _backend
from .._tensor import TensorBase
from ..autograd import Function, grad as autograd_grad
from ..ops.creation import empty_like
from . import memory, streams
from ._devices import _index, synchronize

# How many captures are running in this process (read by ``capture_in_progress``, which host-side code that can't be
# captured asks, without a CUDA call).
_captures = [0]
_capturing: dict = {}  # the capturing stream's pointer -> its CUDAGraph (for keep_alive)
_CAPTURE_MODES = ("global", "thread_local", "relaxed")
_MODULE_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")


def capture_in_progress():
    """Whether some CUDA graph is being captured in this process (a host-side check: no CUDA call).

        >>> agnostic.cuda.graphs.capture_in_progress()
        False
    """
    return _captures[0] > 0


def keep_alive(*objects):
    """Keep ``objects`` alive as long as the graph that the current stream is capturing: what its replays read
    besides tensors, such as the pinned host buffer of a captured host-to-device copy (each replay copies from it
    again) or a device array that only a captured kernel refers to."""
    graph = _capturing.get(_backend.require_cupy().cuda.get_current_stream().ptr)
    if graph is None:
        raise RuntimeError("keep_alive() needs a CUDA graph capture in progress on the current stream")
    graph._kept.extend(objects)


def is_current_stream_capturing():
    """Whether the current device's current stream is capturing a CUDA graph (False when CUDA isn't in use).

        >>> agnostic.cuda.is_current_stream_capturing()
        False
    """
    if not capture_in_progress():
        return False
    return _backend.require_cupy().cuda.get_current_stream().is_capturing()


def graph_pool_handle():
    """A handle to a new memory pool, to share between graphs (``graph(..., pool=handle)``) whose replays run one
    after another, as ``torch.cuda.graph_pool_handle``.

        >>> handle = agnostic.cuda.graph_pool_handle()
    """
    return memory.PrivatePools()


class CUDAGraph:
    """A captured CUDA graph, as ``torch.cuda.CUDAGraph``: ``capture_begin()``/``capture_end()`` around the work to
    record (or the ``agnostic.cuda.graph`` context), then ``replay()`` as often as wanted. (``keep_graph`` is
    accepted for PyTorch's signature: CuPy makes the graph ready to launch when the capture ends either way.)

        >>> g = agnostic.cuda.CUDAGraph()  # doctest: +SKIP
        >>> x = agnostic.zeros(3, device="cuda")  # doctest: +SKIP
        >>> with agnostic.cuda.graph(g):  # doctest: +SKIP
        ...     y = x * 2 + 1
        >>> x.copy_(agnostic.tensor([1.0, 2.0, 3.0]))  # doctest: +SKIP
        >>> g.replay()  # doctest: +SKIP
        >>> y  # doctest: +SKIP
        tensor([3., 5., 7.], device='cuda:0')
    """

    def __init__(self, keep_graph=False):
        self._graph = None
        self._pools = None
        self._device = None
        self._stream = None
        self._kept = []  # what the graph's replays read besides tensors (keep_alive)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        """Start recording the work queued on the current stream, which must not be the default stream. ``pool``: a
        ``graph_pool_handle()`` or another graph's ``pool()``, to share memory with graphs replayed in sequence.
        ``capture_error_mode`` is checked as PyTorch does; agnostic always captures in CUDA's relaxed mode, since its
        allocator may reserve memory from the driver during a capture."""
        if capture_error_mode not in _CAPTURE_MODES:
            raise RuntimeError(f"Unknown capture error mode. Expected `global`, `thread_local`, or `relaxed`, got "
                               f"{capture_error_mode!r}")
        if self._graph is not None or self._stream is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture a new graph, create "
                               "a new instance or call reset() first.")
        cupy = _backend.require_cupy()
        stream = cupy.cuda.get_current_stream()
        if stream.ptr == 0 or stream is cupy.cuda.Stream.null:
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, after capture, it's "
                               "ok to replay them on the default stream.) Capture inside `with agnostic.cuda.graph(g):`"
                               ", which uses a side stream, or inside `with agnostic.cuda.stream(s):`.")
        device = cupy.cuda.runtime.getDevice()
        pools = memory.PrivatePools() if pool is None else pool
        if not isinstance(pools, memory.PrivatePools):
            raise TypeError(f"pool must be a graph_pool_handle() or another CUDAGraph's pool(), got "
                            f"{type(pool).__name__}")
        if pools.device not in (None, device):
            raise RuntimeError(f"this memory pool belongs to cuda:{pools.device}; a graph on cuda:{device} needs its "
                               "own (graph_pool_handle())")
        pools.device = device
        memory._require().begin_capture(device, pools)
        try:
            stream.begin_capture()
        except Exception:
            memory._require().end_capture(device)
            raise
        _captures[0] += 1
        _capturing[stream.ptr] = self
        self._pools, self._device, self._stream = pools, device, stream

    def capture_end(self):
        """Stop recording; the graph is ready to ``replay()``."""
        if self._stream is None:
            raise RuntimeError("capture_end() without capture_begin(): start a capture first")
        stream, self._stream = self._stream, None
        _captures[0] -= 1
        _capturing.pop(stream.ptr, None)
        try:
            self._graph = stream.end_capture()
        finally:
            memory._require().end_capture(self._device)

    def _abandon_capture(self):
        """End a capture that failed midway: the stream stops capturing and the partial graph is dropped."""
        try:
            self.capture_end()
        except Exception:  # the capture was invalidated by the failing call: nothing to keep
            pass
        self._graph = None

    def replay(self):
        """Run the captured work again, on the current stream."""
        if self._graph is None:
            raise RuntimeError("replay() needs a captured graph: capture one first (agnostic.cuda.graph(g) or "
                               "capture_begin()/capture_end())")
        cupy = _backend.require_cupy()
        with cupy.cuda.Device(self._device):
            self._graph.launch(cupy.cuda.get_current_stream())

    def reset(self):
        """Drop the captured graph and this graph's hold on its memory pool."""
        if self._stream is not None:
            self._abandon_capture()
        self._graph = None
        self._pools = None
        self._kept = []

    def pool(self):
        """This graph's memory pool, for ``capture_begin(pool=...)`` or ``graph(..., pool=...)`` of another graph
        that replays after this one."""
        if self._pools is None:
            raise RuntimeError("pool() needs a graph that was captured (and not reset)")
        return self._pools


class graph:
    """``with agnostic.cuda.graph(g):`` captures the work inside into the CUDAGraph ``g``, as ``torch.cuda.graph``:
    it synchronizes, frees cached memory, switches to a side stream (``stream``, or one kept per device) and captures
    there; ``pool`` shares memory with other graphs. Work that can't be captured raises a RuntimeError naming it.

        >>> g = agnostic.cuda.CUDAGraph()  # doctest: +SKIP
        >>> static_x = agnostic.ones(4, device="cuda")  # doctest: +SKIP
        >>> with agnostic.cuda.graph(g):  # doctest: +SKIP
        ...     static_y = static_x.exp()
        >>> g.replay()  # doctest: +SKIP
    """

    _side_streams: dict = {}  # device index -> the stream captures run on when none is given

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream
        self.capture_error_mode = capture_error_mode
        self._stream_context = None

    def __enter__(self):
        synchronize()
        gc.collect()
        memory.empty_cache()
        stream = self.capture_stream
        if stream is None:
            index = _index(None)
            stream = graph._side_streams.get(index)
            if stream is None:
                stream = graph._side_streams[index] = streams.Stream()
        self._stream_context = streams.stream(stream)
        self._stream_context.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self._stream_context.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind, error, traceback):
        try:
            if error is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._abandon_capture()
        finally:
            self._stream_context.__exit__(None, None, None)
        if error is not None and _is_capture_refusal(error):
            raise RuntimeError(f"this operation can't be captured in a CUDA graph ({error}). Inside a capture nothing "
                               "may wait for the GPU on the host: no .item(), bool(tensor), printing, .cpu(), or ops "
                               "with data-dependent shapes (nonzero, boolean masks); move it before or after the "
                               "capture") from error
        return False


def _is_capture_refusal(error):
    """Whether ``error`` is CUDA's or CuPy's refusal of an operation that a capture can't record (agnostic's own
    refusals already say what to do, and name the CUDA graph: they pass through as they are)."""
    text = str(error)
    return isinstance(error, (RuntimeError, NotImplementedError)) and "captur" in text.lower() and \
        "CUDA graph" not in text


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graphed versions of functions or ``nn.Module`` s, as ``torch.cuda.make_graphed_callables``: each one's forward
    and backward are captured (after ``num_warmup_iters`` warm-up runs on a side stream) with ``sample_args``, and
    later calls copy their arguments into the captured inputs and replay. Arguments must have the sample arguments'
    shapes, dtypes and devices; a Module's forward is replaced while it is in training mode. Returns one callable,
    or a tuple for a tuple of callables (captured in order, sharing one memory pool).

        >>> model = agnostic.nn.Linear(4, 2).cuda()  # doctest: +SKIP
        >>> model = agnostic.cuda.make_graphed_callables(model, (agnostic.randn(8, 4, device="cuda"),))  # doctest: +SKIP
        >>> model(agnostic.randn(8, 4, device="cuda")).sum().backward()  # doctest: +SKIP
    """
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError("make_graphed_callables needs one tuple of sample arguments per callable")
    shared_pool = graph_pool_handle() if pool is None else pool
    graphed = []
    for function, arguments in zip(callables, sample_args):
        arguments = tuple(arguments) if isinstance(arguments, (tuple, list)) else (arguments,)
        if not all(isinstance(a, TensorBase) for a in arguments):
            raise TypeError("In the beta API, sample_args for each callable must contain only Tensors. Other types "
                            "are not allowed.")
        if _is_module(function):
            if any(getattr(function, hooks, None) for hooks in _MODULE_HOOKS):
                raise RuntimeError("Modules must not have hooks registered at the time they are passed. However, "
                                   "registering hooks on modules after passing them through make_graphed_callables "
                                   "is allowed.")
            parameters = tuple(function.parameters())
            if not all(p.requires_grad for p in parameters):
                raise RuntimeError("In any Module passed to make_graphed_callables, if any parameters require grad, "
                                   "they all must require grad.")
        else:
            parameters = ()
        graphed.append(capture_callable(function, arguments, parameters, num_warmup_iters, allow_unused_input,
                                        shared_pool))
    results = []
    for function, replayed in zip(callables, graphed):
        if _is_module(function):
            function.forward = _training_only(function, function.forward, replayed)
            results.append(function)
        else:
            results.append(replayed)
    return results[0] if just_one else tuple(results)


def _is_module(function):
    """Whether ``function`` is an ``nn.Module`` (by what it has: the nn package sits above agnostic.cuda)."""
    return callable(getattr(function, "parameters", None)) and hasattr(function, "training")


def capture_callable(function, arguments, parameters=(), warmups=0, allow_unused=True, pool=None):
    """``function`` (of the tensors ``arguments``, reading the tensors ``parameters`` too) captured as a forward graph
    and, where its outputs need gradients, a backward graph, after ``warmups`` runs on a side stream; returns the
    callable that copies its arguments into the captured ones and replays (an autograd Function: gradients reach
    the arguments and ``parameters`` through the backward graph). Raises what the capture raised."""
    pool = graph_pool_handle() if pool is None else pool  # the forward's and the backward's graphs share memory
    inputs = arguments + parameters
    differentiable = tuple(t for t in inputs if t.requires_grad)
    side = streams.Stream()
    side.wait_stream(streams.current_stream())
    with streams.stream(side):
        for _ in range(warmups):
            outputs = _as_tuple(function(*arguments))
            needing = tuple(o for o in outputs if o.requires_grad)
            if needing and differentiable:
                autograd_grad(needing, differentiable, grad_outputs=tuple(o.new_ones(o.shape) for o in needing),
                              allow_unused=allow_unused)
            del outputs, needing
    streams.current_stream().wait_stream(side)
    forward_graph, backward_graph = CUDAGraph(), CUDAGraph()
    with graph(forward_graph, pool=pool):
        static_outputs = _as_tuple(function(*arguments))
    needing = tuple(o for o in static_outputs if o.requires_grad)
    static_grad_outputs = tuple(empty_like(o) for o in needing)
    static_grad_inputs = ()
    if needing and differentiable:
        with graph(backward_graph, pool=pool):
            static_grad_inputs = autograd_grad(needing, differentiable, grad_outputs=static_grad_outputs,
                                               allow_unused=allow_unused)
    grads_by_input = dict(zip(map(id, differentiable), static_grad_inputs))
    single_output = len(static_outputs) == 1 and not isinstance(static_outputs, list)

    class Graphed(Function):
        @staticmethod
        def forward(ctx, *values):
            for static, value in zip(inputs, values):
                if static.data_ptr() != value.data_ptr():
                    static.copy_(value)
            forward_graph.replay()
            return tuple(o.detach() for o in static_outputs)

        @staticmethod
        def backward(ctx, *grads):
            grads_of_needing = [g for g, o in zip(grads, static_outputs) if o.requires_grad]
            for static, incoming in zip(static_grad_outputs, grads_of_needing):
                if incoming is None:
                    static.zero_()
                elif static.data_ptr() != incoming.data_ptr():
                    static.copy_(incoming)
            if static_grad_inputs:
                backward_graph.replay()
            return tuple(None if grads_by_input.get(id(t)) is None else grads_by_input[id(t)].detach()
                         for t in inputs)

    def replayed(*values):
        if len(values) != len(arguments):
            raise TypeError(f"this graphed callable takes {len(arguments)} tensor arguments, got {len(values)}")
        outputs = Graphed.apply(*(values + parameters))
        return outputs[0] if single_output else outputs

    return replayed


def capture_whole(function, arguments):
    """``function`` of the CUDA tensors ``arguments`` captured whole, side effects included (a training step's
    backward and optimizer update write into the model's memory on every replay), as PyTorch's whole-network
    capture; returns the callable that copies its arguments into ``arguments`` (which become the graph's inputs),
    replays, and returns the outputs of the capture (memory that the next replay rewrites). Work on the host
    (Python side effects, CPU tensors) runs once, while capturing. Raises what the capture raised."""
    whole = CUDAGraph()
    with graph(whole, pool=graph_pool_handle()):
        outputs = function(*arguments)

    def replayed(*values):
        if len(values) != len(arguments):
            raise TypeError(f"this captured function takes {len(arguments)} tensor arguments, got {len(values)}")
        for static, value in zip(arguments, values):
            if static.data_ptr() != value.data_ptr():
                static.copy_(value)
        whole.replay()
        return outputs

    return replayed


def _as_tuple(outputs):
    return outputs if isinstance(outputs, tuple) else (outputs,)


def _training_only(module, eager_forward, replayed):
    """A Module's forward that replays its graphs in training mode and runs eagerly in eval mode, as PyTorch's."""
    def forward(*values):
        return replayed(*values) if module.training else eager_forward(*values)
    return forward


__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing", "make_graphed_callables"]
