"""agnostic.cuda.jiterator: elementwise CUDA kernels from a C++ source string, as torch.cuda.jiterator.

``_create_jit_fn(code)`` parses the code's last ``template <typename T> R name(T a, T b, ...) {...}`` function and
returns a callable. On a call, the tensors are promoted to their common dtype (computing in float32 for float16 and
bfloat16, as PyTorch's op math does), broadcast, and ``name<T>`` runs once per element in a ``cupy.ElementwiseKernel``
built from the code (one per code string and argument kinds, kept in ``agnostic._backends.cuda_kernels``' cache;
CuPy compiles it once per dtype). The keyword scalars follow the tensors, typed as PyTorch types them (Python float:
``double``, int: ``int64``, bool: ``bool``, complex: ``complex<double>``).
"""

import re

import numpy

from .. import _dtypes
from .._backends import cuda_kernels
from .._tensor import TensorBase, wrap
from ._devices import is_available

__all__: list[str] = []

_MAX_TENSORS = 8
_COMPUTE_TYPE = "T"  # the kernel's type placeholder (CuPy takes one letter): the dtype the kernel is compiled for
_OP_MATH = {_dtypes.float16: _dtypes.float32, _dtypes.bfloat16: _dtypes.float32}


class _CodeParser:
    """The entry function of a jiterator code string: ``template <...> return_type function_name(params) {body}``;
    with several functions in the string, the last one. Parsed as PyTorch parses it."""

    _PATTERN = re.compile(
        r"\s*template\s*(?P<template_params>\<.+\>)\s*(?P<return_type>\w+)\s+(?P<function_name>\w+)\s*"
        r"(?P<function_params>\(.+\))\s*(?P<function_body>\{.+\})\s*",
        re.DOTALL,
    )

    def __init__(self, code_string):
        found = self._PATTERN.match(code_string)
        if found is None:
            raise ValueError(
                f"Couldn't parse code, please check correctness:\n {code_string}\n(jiterator expects a C++ function "
                "template such as 'template <typename T> T my_kernel(T x, T y) { return x + y; }')")
        self.template_params = found["template_params"]
        self.return_type = found["return_type"]
        self.function_name = found["function_name"]
        self.function_params = found["function_params"]
        self.function_body = found["function_body"]


def _scalar_dtype(value, name):
    """The NumPy dtype a keyword scalar reaches the kernel as (PyTorch's ``Scalar`` types)."""
    if isinstance(value, (bool, numpy.bool_)):
        return numpy.dtype(numpy.bool_)
    if isinstance(value, (int, numpy.integer)):
        return numpy.dtype(numpy.int64)
    if isinstance(value, (float, numpy.floating)):
        return numpy.dtype(numpy.float64)
    if isinstance(value, (complex, numpy.complexfloating)):
        return numpy.dtype(numpy.complex128)
    raise TypeError(f"jiterator's keyword argument {name!r} must be a Python number, got {type(value).__name__}")


def _declaration(function_name, code_string, num_inputs, scalar_dtypes, num_outputs, return_by_ref):
    """The ``cuda_kernels.Kernel`` that runs ``function_name<T>`` of ``code_string`` on ``num_inputs`` arrays of one
    dtype ``T`` and the scalars of ``scalar_dtypes``, writing ``num_outputs`` arrays of dtype ``T`` (as its return
    value, or through the references it takes after the scalars when ``return_by_ref``)."""
    inputs = [f"jiterator_in{i}" for i in range(num_inputs)]
    scalars = [f"jiterator_scalar{i}" for i in range(len(scalar_dtypes))]
    outputs = [f"jiterator_out{i}" for i in range(num_outputs)]
    in_params = ", ".join([f"{_COMPUTE_TYPE} {name}" for name in inputs]
                          + [f"{dtype.name} {name}" for dtype, name in zip(scalar_dtypes, scalars)])
    out_params = ", ".join(f"{_COMPUTE_TYPE} {name}" for name in outputs)
    call = f"{function_name}<{_COMPUTE_TYPE}>"
    if return_by_ref:
        operation = f"{call}({', '.join(inputs + scalars + outputs)})"
    else:
        operation = f"{outputs[0]} = {call}({', '.join(inputs + scalars)})"
    return cuda_kernels.Kernel("elementwise", f"jiterator_{function_name}", operation, in_params=in_params,
                               out_params=out_params, preamble=code_string)


def _common_dtype(tensors):
    """PyTorch's common dtype of the tensors: 0-dim tensors only change it when of a higher category."""
    dimensioned = zero_dim = None
    for tensor in tensors:
        if tensor.dim() > 0:
            dimensioned = tensor.dtype if dimensioned is None else _dtypes.promote_types(dimensioned, tensor.dtype)
        else:
            zero_dim = tensor.dtype if zero_dim is None else _dtypes.promote_types(zero_dim, tensor.dtype)
    return _dtypes.combine_categories(dimensioned, zero_dim)


def _check_tensors(tensors):
    if not tensors:
        raise ValueError("a jiterator function needs at least one tensor argument")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, TensorBase):
            raise TypeError(f"jiterator functions take tensors as positional arguments (scalars as keyword "
                            f"arguments); argument {position} is a {type(tensor).__name__}")
    device = tensors[0].device
    for tensor in tensors:
        if not tensor.is_cuda:
            raise RuntimeError(f"jiterator kernels run on CUDA tensors only, got a tensor on {tensor.device}: "
                               "move it with .cuda() or .to('cuda')")
        if tensor.device != device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{device} and {tensor.device}")
    return device


class _JittedFunction:
    """A jiterator kernel made from a code string; call it with the tensors, and the scalars as keyword arguments
    (those declared when it was made, whose values are the defaults)."""

    def __init__(self, code_string, return_by_ref, num_outputs, **kwargs):
        if not (return_by_ref or num_outputs == 1):
            raise AssertionError("Return by value only works for single output.")
        if not 1 <= num_outputs <= _MAX_TENSORS:
            raise AssertionError(f"jiterator supports 1 to {_MAX_TENSORS} outputs, got {num_outputs}")
        self.code_string = code_string
        self.return_by_ref = return_by_ref
        self.num_outputs = num_outputs
        self.kernel_name = _CodeParser(code_string).function_name
        self.kwargs_dict = kwargs

    def __call__(self, *tensors, **kwargs):
        if not is_available():
            raise AssertionError("Jiterator is only supported on CUDA and ROCm GPUs, none are available.")
        if len(tensors) > _MAX_TENSORS:
            raise AssertionError(f"jiterator only supports up to {_MAX_TENSORS} tensor inputs, got {len(tensors)}")
        scalars = dict(self.kwargs_dict)
        for key, value in kwargs.items():
            if key not in self.kwargs_dict:
                raise KeyError(f"{key} is not declared in function definition")
            scalars[key] = value
        device = _check_tensors(tensors)
        common = _common_dtype(tensors)
        compute = _OP_MATH.get(common, common)
        arrays = [tensor.to(compute)._data for tensor in tensors]
        scalar_dtypes = tuple(_scalar_dtype(value, name) for name, value in scalars.items())
        declared = _declaration(self.kernel_name, self.code_string, len(arrays), scalar_dtypes, self.num_outputs,
                                self.return_by_ref)
        values = [dtype.type(value) for dtype, value in zip(scalar_dtypes, scalars.values())]
        with device.backend.activate():
            results = cuda_kernels.runtime_kernel(declared)(*arrays, *values)
        results = results if isinstance(results, tuple) else (results,)
        outputs = tuple(wrap(array, device) for array in results)
        if compute != common:
            outputs = tuple(output.to(common) for output in outputs)
        return outputs[0] if self.num_outputs == 1 else outputs


def _create_jit_fn(code_string, **kwargs):
    """A function running the CUDA code ``code_string`` on each element of its tensor arguments, as
    ``torch.cuda.jiterator._create_jit_fn``. The code is a C++ function template returning the element's result;
    ``kwargs`` declare its trailing scalar parameters and their defaults. Tensors are promoted and broadcast; at
    most 8. CUDA tensors only: PyTorch raises without a GPU, and so does this.

        >>> code = "template <typename T> T axpy(T x, T y, T alpha) { return alpha * x + y; }"
        >>> axpy = agnostic.cuda.jiterator._create_jit_fn(code, alpha=1.0)
        >>> axpy.kernel_name
        'axpy'
        >>> x = agnostic.tensor([1.0, 2.0], device="cuda")  # doctest: +SKIP
        >>> axpy(x, x, alpha=3.0)  # doctest: +SKIP
        tensor([4., 8.], device='cuda:0')
    """
    return _JittedFunction(code_string, return_by_ref=False, num_outputs=1, **kwargs)


def _create_multi_output_jit_fn(code_string, num_outputs, **kwargs):
    """As ``_create_jit_fn``, for a ``void`` function template that writes ``num_outputs`` results through its
    last parameters (references, after the scalars); the call returns a tuple of ``num_outputs`` tensors.

        >>> code = "template <typename T> void sincos_(T x, T& s, T& c) { s = sin(x); c = cos(x); }"
        >>> sincos = agnostic.cuda.jiterator._create_multi_output_jit_fn(code, num_outputs=2)
        >>> sincos.num_outputs
        2
        >>> s, c = sincos(agnostic.zeros(2, device="cuda"))  # doctest: +SKIP
        >>> s, c  # doctest: +SKIP
        (tensor([0., 0.], device='cuda:0'), tensor([1., 1.], device='cuda:0'))
    """
    return _JittedFunction(code_string, return_by_ref=True, num_outputs=num_outputs, **kwargs)
