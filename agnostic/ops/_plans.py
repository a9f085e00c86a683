"""How a declared elementwise op runs (``_registry.Elementwise``): the plan for its operands' kinds (a plain tensor's
dtype, a scalar's type, a tensor subclass), made on first use and kept in ``op.plans``.

A *direct* plan is one backend call and a wrap (tensors of one dtype the backend takes as they are); the *general*
plan promotes, casts and checks values on every call; the *recording* plan runs the plain op and records an autograd
node when an operand needs a gradient. What depends only on the kinds is decided once per combination (and again
after ``set_default_dtype``), never per call.
"""

import numpy

from .. import _autocast, _backend, _dtypes
from .._backends.cpu_kernels import MIN_BYTES as _LARGE_BYTES
from .._backends.cuda_vectorized import MIN_SIZE as _LARGE_CUDA_SIZE
from .._device import CPU
from .._tensor import TensorBase, _check_broadcast_into, wrap
from ..autograd import tracking
from ._dispatch import (
    Result, as_operand, broadcasting, check_same_device, check_tensor, operand_array, out_with_grad_error,
    raise_broadcast_error, result_dtype, write_out, write_result,
)
from ._tracing import Traced
from .creation import as_tensor

_INTEGER, _FLOATING = 1, 2  # dtype categories
_SCALARS = frozenset((bool, int, float, complex))
_HALF = (_dtypes.float16, _dtypes.bfloat16)
_ndarray = numpy.ndarray
_NEVER = 1 << 62  # an element count no array reaches (an int: compared with x.size, an int, on every call)
_new_tensor = object.__new__


def _kind(value):
    """What a plan depends on for an operand that isn't a plain Tensor: a Python scalar's type, a Tensor
    subclass with its dtype, or None for anything else (converted or refused by ``_coerced``)."""
    cls = value.__class__
    if cls in _SCALARS:
        return cls
    if isinstance(value, TensorBase):
        return cls, value._data.dtype
    return None


def unary_caller(op, as_operator=False):
    """``caller(input, out=None)``: the dispatch of a one-operand op. It finds the plan for the operand's kind,
    made on first use, and runs it."""
    plans = op.plans

    def caller(input, out=None):
        key = input._data.dtype if input.__class__ is TensorBase.plain else _kind(input)
        plan = plans.get(key)
        if plan is None:
            if key is None:
                if isinstance(input, Traced) and out is None:  # inside a function agnostic.fuse traces
                    return input.trace.apply(op, (input,))
                return caller(*_coerced(op, (input,), as_operator), out)
            plan = plans[key] = _make_plan(op, (input,))
        return plan(input, out)
    return caller


def binary_caller(op, as_operator=False, reflected=False):
    """``caller(input, other, out=None)``: the dispatch of a two-operand op. It finds the plan for the operands'
    kinds (a plain Tensor's dtype, a scalar's type), made on first use, and runs it. For operators, operands they
    can't take give NotImplemented, so Python tries the other side; ``reflected`` swaps the operands
    (``__radd__``)."""
    plans = op.plans
    recent = op.recent

    def caller(input, other, out=None):
        if reflected:
            input, other = other, input
        plain = TensorBase.plain
        kind_a = input.__class__
        kind_b = other.__class__
        key_a = input._data.dtype if kind_a is plain else kind_a if kind_a in _SCALARS else _kind(input)
        key_b = other._data.dtype if kind_b is plain else kind_b if kind_b in _SCALARS else _kind(other)
        last = recent[0]
        if last[0] is key_a and last[1] is key_b:
            return last[2](input, other, out)
        plan = plans.get(key_a)
        if plan is not None:
            plan = plan.get(key_b)
            if plan is not None:
                recent[0] = (key_a, key_b, plan)
                return plan(input, other, out)
        if key_a is None or key_b is None:
            traced = input if isinstance(input, Traced) else other if isinstance(other, Traced) else None
            if traced is not None and out is None:  # inside a function agnostic.fuse traces
                return traced.trace.apply(op, (input, other))
            operands = _coerced(op, (input, other), as_operator)
            return NotImplemented if operands is NotImplemented else op.call(*operands, out)
        by_second = plans.setdefault(key_a, {})
        if key_b not in by_second:
            by_second[key_b] = _make_plan(op, (input, other))
        return by_second[key_b](input, other, out)
    return caller


# A binary op's last call: (kinds, plan), one tuple so that threads read it whole. Consecutive calls mostly repeat
# the kinds, and comparing them costs less than two dict lookups.
NOTHING_RECENT = (object(), object(), None)


def forget(op):
    """Drop ``op``'s plans (made again on next use)."""
    op.plans.clear()
    op.recent[0] = NOTHING_RECENT


def _coerced(op, operands, as_operator):
    """Operands that aren't tensors or Python scalars: NumPy scalars become Python numbers; for operators, arrays
    become tensors and anything else gives NotImplemented; for functions, a TypeError names the argument."""
    coerced = []
    for name, value in zip(op.parameters, operands):
        if isinstance(value, numpy.generic):
            value = value.item()
        elif as_operator and not isinstance(value, TensorBase) and type(value) not in _SCALARS:
            if not (isinstance(value, numpy.ndarray) or _backend.is_backend_array(value)):
                return NotImplemented
            value = as_tensor(value)
        if op.arity == 1 and not isinstance(value, TensorBase):
            check_tensor(op.name, value)
        coerced.append(as_operand(value, name))
    return tuple(coerced)


def _make_plan(op, operands, autocast=True):
    """The plan for operands of these kinds: ``plan(*operands, out)``."""
    if op.arity == 1 and not isinstance(operands[0], TensorBase):
        check_tensor(op.name, operands[0])
    tensors = [x for x in operands if isinstance(x, TensorBase)]
    if not tensors:
        raise TypeError(f"{op.name}(): expected at least one Tensor argument, got two Python numbers")
    if autocast and _autocast.casts_half_operands(op.name) and any(x.dtype in _HALF for x in tensors):
        return _autocast_plan(op, _make_plan(op, operands, autocast=False))
    if any(isinstance(x, TensorBase.recording) for x in tensors):
        return _recording_plan(op, operands)
    if all(type(x) is TensorBase.plain for x in tensors) and len({x.dtype for x in tensors}) == 1:
        dtype = tensors[0].dtype
        if result_dtype(*operands) is dtype and op.types(dtype)[0] is dtype and \
                dtype.numpy_dtype.kind not in op.kind_implementations:
            if op.check_operands is not None:
                op.check_operands(*operands, compute=dtype)  # what depends only on the kinds (a bool operand)
            scalar_kinds = {type(x) for x in operands if not isinstance(x, TensorBase)}
            # NumPy's bfloat16 (ml_dtypes') widens with a Python float, where PyTorch keeps bfloat16: the general
            # plan converts the scalar first.
            if not scalar_kinds or op.python_scalars and dtype is not _dtypes.bfloat16 and (
                    dtype.category >= _FLOATING or scalar_kinds <= {bool, int}):
                if op.arity == 1:
                    return _direct_unary_plan(op, dtype)
                return _direct_binary_plan(op, dtype, isinstance(operands[0], TensorBase),
                                           isinstance(operands[1], TensorBase))
    return _general_plan(op)


def _direct_unary_plan(op, dtype):
    """A tensor whose dtype the backend function takes and returns as PyTorch would: one call, no casts."""
    cpu_function = op.backend_function(CPU)
    by_device = op.functions_by_device
    large_cpu = op.large_cpu
    large_size = _large_size(dtype, large_cpu)
    large_cuda = op.large_cuda
    large_cuda_size = _NEVER if large_cuda is None else _LARGE_CUDA_SIZE
    plain = TensorBase.plain  # plans are made on first use, when the classes exist
    writes_out = op.writes_out
    name = op.name

    def plan(input, out):
        device = input._device
        backend = device.backend
        x = input._data
        if out is input and writes_out:
            backend.run(op.backend_function(device), x, out=x)
            return out
        if backend.host:  # NumPy's own call, inline: the hot path
            if x.size < large_size:
                array = cpu_function(x)
            else:
                array = large_cpu(x)
                if array is None:
                    array = cpu_function(x)
            if array.__class__ is not _ndarray:
                array = numpy.asarray(array)
        else:
            array = None
            if x.size >= large_cuda_size:
                array = large_cuda(x) if backend.is_current() else backend.run(large_cuda, x)
            if array is None:
                function = by_device.get(device) or op.backend_function(device)
                array = function(x) if backend.is_current() else backend.run(function, x)
        tensor = _new_tensor(plain)
        tensor._data = array
        tensor._device = device
        return tensor if out is None else _written(out, tensor, input, name)
    return plan


def _direct_binary_plan(op, dtype, first_is_tensor, second_is_tensor):
    """Operands of one dtype that the backend function takes as they are: tensors' arrays, and Python scalars, which
    NumPy and CuPy convert to the tensors' dtype as PyTorch does (integers that don't fit wrap, so they take the
    general plan). One call, no casts; in place (``out`` is ``input``) the function writes into ``input``."""
    cpu_function = op.backend_function(CPU)
    by_device = op.functions_by_device
    plain = TensorBase.plain  # plans are made on first use, when the classes exist
    large_cpu = op.large_cpu if first_is_tensor else None  # a tensor and a tensor, or a tensor and a number
    large_size = _large_size(dtype, large_cpu)
    large_cuda = op.large_cuda if first_is_tensor and second_is_tensor else None
    large_cuda_size = _NEVER if large_cuda is None else _LARGE_CUDA_SIZE
    integers = dtype.category == _INTEGER  # a Python int must fit (bool tensors take only bool scalars here)
    check_values = op.check_operands if integers else None  # division by zero, negative powers: integers only
    general = _general_plan(op)
    # A CuPy without NumPy 2's weak-scalar rule may widen a result by a Python scalar's type: cast back then.
    cuda_result = None if first_is_tensor and second_is_tensor else \
        dtype.numpy_dtype if op.result in (Result.SAME, Result.FLOAT) else numpy.dtype(numpy.bool_)

    def plan(input, other, out):
        if first_is_tensor:
            device = input._device
            x = input._data
            if second_is_tensor:
                y = other._data
                if other._device is not device:
                    return general(input, other, out)
            else:
                y = other
                if integers and not _fits(y, x.dtype):
                    return general(input, other, out)
        else:
            device = other._device
            y = other._data
            x = input
            if integers and not _fits(x, y.dtype):
                return general(input, other, out)
        if check_values is not None:
            check_values(input, other, compute=dtype)
        if out is not None:
            return _direct_into(op, device, x, y, input, out)
        try:
            if device.backend.host:  # NumPy's own call, inline: the hot path
                if large_cpu is None or x.size < large_size:  # x may be a Python scalar
                    array = cpu_function(x, y)
                else:
                    array = large_cpu(x, y)
                    if array is None:
                        array = cpu_function(x, y)
                if array.__class__ is not _ndarray:
                    array = numpy.asarray(array)
            else:
                backend = device.backend
                array = None
                if large_cuda is not None and x.size >= large_cuda_size:
                    array = large_cuda(x, y) if backend.is_current() else backend.run(large_cuda, x, y)
                if array is None:
                    function = by_device.get(device) or op.backend_function(device)
                    array = function(x, y) if backend.is_current() else backend.run(function, x, y)
                if cuda_result is not None and array.dtype != cuda_result:
                    array = backend.run(array.astype, cuda_result)
        except ValueError:
            raise_broadcast_error(x, y)
            raise
        tensor = _new_tensor(plain)
        tensor._data = array
        tensor._device = device
        return tensor
    return plan


def _large_size(dtype, large_cpu):
    """The element count from which a CPU result of ``dtype`` takes an op's ``large_cpu`` call (never, for an op
    without one: then the one comparison per call decides it; ``x.size`` is cheaper to read than ``x.nbytes``)."""
    if large_cpu is None:
        return _NEVER
    return -(-_LARGE_BYTES // dtype.numpy_dtype.itemsize)


def _direct_into(op, device, x, y, input, out):
    """A direct plan's result written into ``out``: in place through the function's ``out=`` where it has one."""
    if out is input and op.writes_out:
        _check_broadcast_into(input, getattr(y, "shape", ()), op.name + "_")
        with device.backend.activate():
            broadcasting(lambda a, b: op.backend_function(device)(a, b, out=a), (x, y))
        return out
    array = device.backend.run(broadcasting, op.backend_function(device), (x, y))
    return _written(out, wrap(array, device), input, op.name)


def _written(out, result, input, name):
    """``result`` written into ``out``: by the in-place rule where ``out`` is the first operand (``x.add_(y)``, which
    keeps ``x``'s shape), else as ``out=`` (``_dispatch.write_out``: resized to the result's shape)."""
    return write_result(out, result, name) if out is input else write_out(out, result, name)


def _fits(value, numpy_dtype):
    info = numpy.iinfo(numpy_dtype)
    return info.min <= value <= info.max


def _general_plan(op):
    """Any operands: device check, promotion, casts and value checks on every call."""
    def plan(*operands_and_out):
        return _compute(op, operands_and_out[:-1], operands_and_out[-1])
    return plan


def _compute(op, operands, out):
    tensors = [x for x in operands if isinstance(x, TensorBase)]
    device = check_same_device(*tensors)
    promoted = result_dtype(*operands)
    compute, result = op.types(promoted)
    if op.check_operands is not None:
        op.check_operands(*operands, compute=compute)
    if op.result == Result.LOGICAL and promoted is not compute:
        # As PyTorch: truth is taken in the common dtype (a float64 1e-300 beside a float16 tensor is 0 there).
        arrays = [_truth(operand_array(x, promoted, device), device) for x in operands]
    else:
        arrays = [operand_array(x, compute, device) for x in operands]
    backend = device.backend
    array = backend.run(broadcasting, op.backend_function(device, compute), arrays)
    if array.dtype != result.numpy_dtype:
        array = backend.run(array.astype, result.numpy_dtype)
    result_tensor = wrap(array, device)
    return _written(out, result_tensor, operands[0], op.name) if out is not None else result_tensor


def _truth(array, device):
    with device.backend.activate():
        return array.astype(numpy.bool_)


def _autocast_plan(op, plan):
    """Half-precision operands of an op that autocast runs in float32 (``exp``, ``log``, ``pow``...): cast to
    float32 inside such an autocast region, ``plan`` as usual outside (float32 operands never come here)."""
    def autocast_plan(*operands_and_out):
        operands = _autocast.float32_operands(op.name, operands_and_out[:-1])
        if operands is None:
            return plan(*operands_and_out)
        return op.call(*operands, operands_and_out[-1])
    return autocast_plan


def _recording_plan(op, operands):
    """Operands among which some may require grad: the plain result, recorded when grad mode is on and a gradient
    is needed. ``out=`` is refused then, as PyTorch refuses it. The result comes from the plan of plain operands of
    the same kinds, called with these operands as they are (plans read only their arrays and devices)."""
    node_name = tracking.backward_name(op.name)
    compute = _make_plan(op, tuple(_plain(x) for x in operands), autocast=False)  # autocast came first
    needs_grad = tracking.needs_grad

    def plan(*operands_and_out):
        operands, out = operands_and_out[:-1], operands_and_out[-1]
        if not needs_grad(operands):
            return compute(*operands_and_out)  # in place (``out`` is the first operand) stays in place
        if out is not None:
            raise out_with_grad_error(op.name)
        output = compute(*operands_and_out)
        if op.backward is None:
            return output
        return tracking.record(node_name, op.backward, operands, {}, output)
    return plan


def _plain(value):
    return wrap(value._data, value._device) if isinstance(value, TensorBase.recording) else value
