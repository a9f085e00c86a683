"""What every op's dispatch does: device checks, PyTorch's type promotion and result dtypes, broadcasting, the backend
call, and writing a result into an existing tensor under PyTorch's in-place rules."""

import functools
import inspect
import os
import sys
import warnings

import numpy

from .. import _dtypes
from .._device import as_device
from .._tensor import TensorBase, _check_broadcast_into, wrap

_ndarray = numpy.ndarray


def check_tensor(name, value, position=1, argument="input"):
    """Raise PyTorch's TypeError where ``value``, argument ``argument`` at ``position`` of op ``name``, is not a
    tensor (``position`` None: a keyword-only argument, which PyTorch names without a position).

        >>> agnostic.ops._dispatch.check_tensor("linear", [1.0])
        Traceback (most recent call last):
        TypeError: linear(): argument 'input' (position 1) must be Tensor, not list
        >>> agnostic.ops._dispatch.check_tensor("searchsorted", 3, None, "sorter")
        Traceback (most recent call last):
        TypeError: searchsorted(): argument 'sorter' must be Tensor, not int
    """
    if not isinstance(value, TensorBase):
        where = "" if position is None else f" (position {position})"
        raise TypeError(f"{name}(): argument '{argument}'{where} must be Tensor, not {type(value).__name__}")


def check_same_device(*tensors):
    """The device shared by ``tensors``; a 0-dim CPU tensor combines with any device, as a scalar (PyTorch's rule).

    Raises RuntimeError naming both devices otherwise.
    """
    device = None
    for tensor in tensors:
        candidate = tensor._device
        if candidate is device:
            continue
        if device is None:
            device = candidate
        elif candidate.backend.host and tensor._data.ndim == 0:
            continue
        elif device.backend.host and _only_cpu_scalars_so_far(tensors, tensor):
            device = candidate
        else:
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found {device} and {candidate}; "
                f"move one with .to({str(device)!r}) or .to({str(candidate)!r})"
            )
    return device


def _only_cpu_scalars_so_far(tensors, stop_at):
    for tensor in tensors:
        if tensor is stop_at:
            return True
        if tensor._device.backend.host and tensor._data.ndim != 0:
            return False
    return True


def result_dtype(*operands):
    """The dtype PyTorch's promotion gives ``operands`` (Tensors and Python scalars): dimensioned tensors first,
    then 0-dim tensors, then scalars, each lower tier counting only when its category is higher."""
    dimensioned = zero_dim = scalars = None
    promote = _dtypes._PROMOTION
    for operand in operands:
        if isinstance(operand, TensorBase):
            dt = operand.dtype
            if operand._data.ndim:
                dimensioned = dt if dimensioned is None else promote[(dimensioned, dt)]
            else:
                zero_dim = dt if zero_dim is None else promote[(zero_dim, dt)]
        else:
            dt = _dtypes.scalar_dtype(operand)
            scalars = dt if scalars is None else promote[(scalars, dt)]
    combine = _dtypes.combine_categories
    return combine(dimensioned, combine(zero_dim, scalars))


def as_operand(value, name="other"):
    """A Tensor or Python scalar, refusing anything else with a clear TypeError."""
    if isinstance(value, (TensorBase, bool, int, float, complex)):
        return value
    if isinstance(value, numpy.generic):
        return value.item()
    raise TypeError(
        f"{name} must be a Tensor or a Python number, got {type(value).__name__}; convert it with agnostic.tensor()"
    )


def operand_array(operand, dtype, device):
    """The backend value of ``operand`` cast to ``dtype``, ready to combine on ``device``.

    Scalars become 0-dim arrays of ``dtype`` (wrapping like a C cast, as PyTorch does) so the backend's own scalar
    rules never decide the result type.
    """
    numpy_dtype = dtype.numpy_dtype
    if isinstance(operand, TensorBase):
        array = operand._data
        if operand._device is not device:
            # A 0-dim CPU tensor taking part in a CUDA op: passed as a scalar, as PyTorch does (no copy).
            return array.astype(numpy_dtype)[()]
        if array.dtype != numpy_dtype:
            with device.backend.activate():
                array = array.astype(numpy_dtype)
        return array
    if dtype.category == 1 and not _fits(operand, numpy_dtype):
        return numpy.asarray(operand).astype(numpy_dtype)[()]  # a NumPy scalar: CuPy takes no host arrays
    return numpy_dtype.type(operand)


def keep_negative_zero(value, device):
    """A NumPy scalar as ``device``'s arrays should receive it in ``array[...] = value`` (a negative zero stays
    negative: see the backends' ``writable_scalar``)."""
    return device.backend.writable_scalar(value)


def _fits(value, numpy_dtype):
    info = numpy.iinfo(numpy_dtype)
    return info.min <= value <= info.max


def finish(array, dtype, device):
    """Wrap a backend result as a Tensor of ``dtype``, casting if the backend chose another type."""
    if isinstance(array, numpy.generic):
        array = numpy.asarray(array)
    numpy_dtype = dtype.numpy_dtype
    if array.dtype != numpy_dtype:
        with device.backend.activate():
            array = array.astype(numpy_dtype)
    return wrap(array, device)


def xp_of(device):
    return device.backend.xp


# ----- result dtypes and writing results ----------------------------------------------------------------------------
class Result:
    """How an op's result dtype follows from its promoted input dtype."""

    SAME = "same"  # computed and returned in the promoted dtype
    FLOAT = "float"  # integers and bools compute in the default float dtype (``int / int`` is a float)
    BOOL = "bool"  # computed in the promoted dtype, returns bool (comparisons, isnan...)
    LOGICAL = "logical"  # truth taken in the promoted dtype, computed and returned as bool


def refuse(categories, message):
    """A dtype check refusing promoted dtypes of the given categories with ``message`` (``{name}``, ``{dtype}``)."""
    def check(name, dtype):
        if dtype.category in categories:
            # NotImplementedError is a RuntimeError, and what PyTorch raises for unsupported dtypes.
            raise NotImplementedError(message.format(name=name, dtype=dtype))
    return check


def check_can_cast(source, target, name, fix=None):
    """PyTorch's rule for writing results: no float -> integer, complex -> real, or non-bool -> bool. ``fix`` says
    what to do instead (by default: convert ``self``, the in-place methods' case)."""
    if source.category > target.category:
        raise RuntimeError(f"{name}: result type {source.name} can't be cast to the desired output type {target.name}; "
                           f"{fix or f'convert self first (e.g. self.to({source!r}))'}")


def broadcasting(function, arrays):
    """Call a backend function, turning its broadcasting ValueError into PyTorch's RuntimeError."""
    try:
        return function(*arrays)
    except ValueError:
        raise_broadcast_error(*arrays)
        raise


def _broadcastable(shapes):
    try:
        numpy.broadcast_shapes(*shapes)
        return True
    except ValueError:
        return False


def broadcast_error(*shapes):
    """PyTorch's error for shapes that don't broadcast, naming the first mismatching dimension."""
    shapes = [tuple(shape) for shape in shapes]
    ndim = max(len(shape) for shape in shapes)
    padded = [(1,) * (ndim - len(shape)) + shape for shape in shapes]
    for dim in range(ndim):
        sizes = [shape[dim] for shape in padded if shape[dim] != 1]
        if len(set(sizes)) > 1:
            return RuntimeError(f"The size of tensor a ({sizes[0]}) must match the size of tensor b ({sizes[1]}) "
                                f"at non-singleton dimension {dim}")
    return RuntimeError(f"shapes {[list(shape) for shape in shapes]} cannot be broadcast together")


def write_result(target, result, name):
    """Store an out-of-place result into ``target`` after PyTorch's in-place checks (shape and castability)."""
    if result._device is not target._device:
        raise RuntimeError(
            f"{name}: the result is on {result._device} but the output tensor is on {target._device}; "
            "move the inputs to the output's device first"
        )
    _check_broadcast_into(target, result._data.shape, name)
    check_can_cast(result.dtype, target.dtype, name)
    with target._device.backend.activate():
        target._device.backend.xp.copyto(target._data, result._data, casting="unsafe")
    return target


# Warnings name the caller's line: the first frame outside agnostic (Python 3.12's ``skip_file_prefixes``; before,
# the line that called the function that takes ``out=``).
_USER_FRAME = {"skip_file_prefixes": (os.path.dirname(os.path.dirname(__file__)),)} if sys.version_info >= (3, 12) \
    else {"stacklevel": 4}


def write_out(out, result, name, cast=True):
    """A function's ``out=``, as PyTorch's: ``result`` (a tensor, or a tuple of them for ops with several outputs,
    which then take a tuple of as many) written into ``out``, which is returned (the tuple as ``result``'s type). An
    ``out`` of another shape is resized, with PyTorch's warning where it had elements, and its device must be the
    result's. Its dtype must be the result's, or, with ``cast`` and a single result, one the result casts to (no
    float into an integer tensor...): PyTorch's elementwise ops, reductions and concatenations cast, its other ops
    don't.

        >>> buffer = agnostic.empty(2)
        >>> agnostic.sum(agnostic.ones(2, 3), 1, out=buffer) is buffer, buffer
        (True, tensor([3., 3.]))
    """
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{name}(): argument 'out' must be tuple of {len(result)} Tensors, not "
                            f"{type(out).__name__}")
        for target, value in zip(out, result):
            _write_one_out(target, value, name, False)
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    _write_one_out(out, result, name, cast)
    return out


def _write_one_out(out, result, name, cast):
    check_tensor(name, out, None, "out")
    if result._device is not out._device:
        raise RuntimeError(f"{name}(): Expected out tensor to have device {result._device}, but got {out._device} "
                           "instead; pass an out tensor on the inputs' device")
    if cast:
        check_can_cast(result.dtype, out.dtype, f"{name}()", f"pass an out tensor of dtype {result.dtype.name}")
    elif result.dtype != out.dtype:
        raise RuntimeError(f"{name}(): Expected out tensor to have dtype {result.dtype.name}, but got "
                           f"{out.dtype.name} instead; pass an out tensor of dtype {result.dtype.name}")
    shape = result._data.shape
    if out._data.shape != shape:
        if out._data.size:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they have "
                          "zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero "
                          "elements with t.resize_(0).", UserWarning, **_USER_FRAME)
        out.resize_(shape)
    with out._device.backend.activate():
        out._device.backend.xp.copyto(out._data, result._data, casting="unsafe")


def out_with_grad_error(name):
    """PyTorch's RuntimeError for a call of ``name`` with ``out=`` on arguments that require grad (autograd can't
    follow a result written into an existing tensor)."""
    return RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, but one "
                        "of the arguments requires grad.")


def factory_out(factory):
    """``factory`` (``zeros``, ``arange``, ``rand``...) with PyTorch's keyword-only ``out=``: the values are made
    in ``out``'s dtype and on its device (a ``dtype`` or ``device`` given must be those) and written into ``out``,
    which is resized without a warning, as PyTorch's factories resize it, and returned; ``requires_grad=True`` then
    marks ``out``.

        >>> buffer = agnostic.empty(0, dtype=agnostic.int32)
        >>> agnostic.arange(4, out=buffer) is buffer, buffer
        (True, tensor([0, 1, 2, 3], dtype=agnostic.int32))
    """
    name = factory.__name__

    @functools.wraps(factory)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return factory(*args, **kwargs)
        check_tensor(name, out, None, "out")
        if out.requires_grad:
            raise out_with_grad_error(name)
        dtype, device = _dtypes.as_dtype(kwargs.pop("dtype", None)), kwargs.pop("device", None)
        if dtype is not None and dtype != out.dtype:
            raise RuntimeError(f"{name}(): dtype {dtype.name} does not match dtype of out parameter "
                               f"({out.dtype.name}); pass one of them only, or the same")
        if device is not None and as_device(device).type != out._device.type:
            raise RuntimeError(f"{name}(): device type {as_device(device).type} does not match device type of out "
                               f"parameter ({out._device.type}); pass one of them only, or the same")
        requires_grad = kwargs.pop("requires_grad", False)
        made = factory(*args, dtype=out.dtype, device=out._device, **kwargs)
        if out._data.shape != made._data.shape:
            out.resize_(made._data.shape)
        _write_one_out(out, made, name, cast=False)
        return out.requires_grad_() if requires_grad else out
    with_out.__signature__ = signature_with_out(inspect.signature(factory))
    return with_out


def signature_with_out(signature):
    """``signature`` with a keyword-only ``out=None`` (before ``**kwargs``, where it has them)."""
    parameters = list(signature.parameters.values())
    last = len(parameters) - bool(parameters and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD)
    parameters.insert(last, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    return signature.replace(parameters=parameters)


def raise_broadcast_error(*arrays):
    """PyTorch's RuntimeError when a backend's ValueError came from shapes that don't broadcast."""
    shapes = [a.shape for a in arrays if hasattr(a, "shape")]
    if len(shapes) > 1 and not _broadcastable(shapes):
        raise broadcast_error(*shapes) from None
