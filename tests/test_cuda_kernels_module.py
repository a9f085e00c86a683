"""The CUDA kernels' one module (``agnostic/_backends/cuda_kernels.py``): no kernel is built anywhere else, importing
agnostic imports no CuPy, every declaration is complete, and every declared kernel compiles and runs on each GPU."""

import itertools
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import agnostic
from agnostic import _backend
from agnostic._backends import philox as _philox
from agnostic._device import CPU
from agnostic._backends import cuda_kernels, cuda_ops, cuda_vectorized
from agnostic.nn import functional
from agnostic.nn.functional import _column_sums, _fused_lstm, _index_cross_entropy
from agnostic.ops import _relu_gradient
from agnostic.optim import _fused

from conftest import CUDA_DEVICES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agnostic"
KERNELS_MODULE = PACKAGE / "_backends" / "cuda_kernels.py"
CONSTRUCTORS = ("RawKernel(", "ElementwiseKernel(", "ReductionKernel(", "RawModule(")
SOURCE_SUFFIXES = (".py", ".pyi", ".pyx", ".pxd", ".c", ".h", ".cu", ".cuh")
INTEGERS = ("uint8", "int8", "int16", "int32", "int64")
DIVISION_DTYPES = ("float16", "float32", "float64") + INTEGERS


# ----- where kernels are built -----------------------------------------------------------------------------------
def test_kernels_are_built_only_in_the_cuda_kernels_module():
    sources = [path for path in PACKAGE.rglob("*") if path.is_file() and path.suffix in SOURCE_SUFFIXES]
    assert KERNELS_MODULE in sources
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sources if path != KERNELS_MODULE
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if any(constructor in line for constructor in CONSTRUCTORS)]
    assert not found, "CUDA kernels belong in agnostic/_backends/cuda_kernels.py:\n" + "\n".join(found)


def test_importing_agnostic_imports_no_cupy():
    code = ("import sys, agnostic, agnostic._backends.cuda_kernels\n"
            "print(sorted(name for name in sys.modules if name == 'cupy' or name.startswith('cupy.')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


# ----- declarations (no CuPy needed) -----------------------------------------------------------------------------
def test_every_declared_kernel_is_complete():
    declared = cuda_kernels.declared_kernels()
    assert len(declared) == len(set(declared))
    built = set()
    for name, dtype in declared:
        kernel = cuda_kernels.declaration(name, dtype)
        assert kernel.kind in cuda_kernels.Kernel.KINDS and kernel.source.strip()
        if kernel.kind == "elementwise":
            assert kernel.in_params and kernel.out_params
        elif kernel.kind == "reduction":
            assert kernel.in_params and kernel.out_params and {"reduce_expr", "identity"} <= set(kernel.reduction)
        elif kernel.template:
            assert f"__global__ void {kernel.name.split('<')[0]}(" in kernel.source
        else:
            assert f'extern "C" __global__ void {kernel.name}(' in kernel.source
        built.add((kernel.kind, kernel.name))
    assert len(built) == len(declared)  # no two lookups build the same kernel


def test_the_lookups_of_the_launching_modules_are_declared():
    declared = set(cuda_kernels.declared_kernels())
    floats = [numpy.dtype(numpy.float32), numpy.dtype(numpy.float64)]
    expected = {("agnostic_relu_gradient", None), ("agnostic_cross_entropy_backward", None)}
    expected |= {(f"agnostic_cross_entropy_{part}", d) for part in ("block", "rows", "total") for d in floats}
    expected |= {("agnostic_column_sums", d) for d in floats}
    expected |= {("agnostic_whole_sum", d) for d in floats}
    updates = (_fused.SGD, _fused.ADAM, _fused.RMSPROP, _fused.ADAM_CAPTURABLE, _fused.COUNT)
    expected |= {(update.kernel_name, d) for update in updates for d in _fused._KERNEL_COMPUTE}
    expected |= {(f"philox_{kind}_{d.name}", None) for kind in ("uniform", "normal", "dropout") for d in floats}
    expected.add(("philox_integers", None))
    expected |= {(f"agnostic_{name}", numpy.dtype(d)) for name in ("floor_divide", "remainder", "fmod", "trunc_divide")
                 for d in DIVISION_DTYPES}
    expected |= {("agnostic_complex_divide", numpy.dtype(d)) for d in ("complex64", "complex128")}
    expected |= {("agnostic_float_to_integer", numpy.dtype(d)) for d in INTEGERS}
    expected.add(("agnostic_float64_to_float16", None))
    expected |= {(f"agnostic_lstm_step{part}", d) for part in ("", "_backward") for d in floats}
    expected |= {(f"agnostic_contiguous_{op}", d) for op in ("add", "sub", "mul", "div", "relu") for d in floats}
    expected |= {(f"agnostic_{op}_{part}rows", d) for op in ("softmax", "layer_norm") for part in ("", "backward_")
                 for d in floats}
    expected.add(("agnostic_capturable_matmul", None))
    expected |= {(f"{name}_{size}", d) for name in ("agnostic_attention_forward", "agnostic_attention_backward_query",
                                                   "agnostic_attention_backward_key")
                 for d, sizes in cuda_kernels.ATTENTION_MAX_DIMS.items() for size in sizes}
    expected |= {(name, d) for name in ("agnostic_tiled_matmul", "agnostic_blocked_matmul") for d in floats}
    assert declared == expected


def test_declaration_errors_name_the_kernel():
    with pytest.raises(KeyError, match="agnostic_missing"):
        cuda_kernels.declaration("agnostic_missing")
    with pytest.raises(ValueError, match="agnostic_column_sums"):
        cuda_kernels.declaration("agnostic_column_sums", "float32")  # a name, not a numpy.dtype: not a cache key
    with pytest.raises(ValueError, match="agnostic_column_sums"):
        cuda_kernels.declaration("agnostic_column_sums", numpy.dtype(numpy.int32))
    with pytest.raises(ValueError, match="agnostic_relu_gradient"):
        cuda_kernels.declaration("agnostic_relu_gradient", numpy.dtype(numpy.float32))


@pytest.mark.skipif(bool(CUDA_DEVICES), reason="CUDA is available")
def test_without_cuda_a_kernel_lookup_says_why():
    with pytest.raises(RuntimeError, match="CUDA"):
        cuda_kernels.kernel("agnostic_relu_gradient")


# ----- on each CUDA device ---------------------------------------------------------------------------------------
def _sample_arguments(cupy, declared, dtype):
    """Small arguments for an ElementwiseKernel's parameters: for ``T``, arrays of the kernel's dtype where its
    result is a ``T``, else float32; arrays of the named dtype for a kernel's only parameter; typed scalars
    otherwise."""
    parameters = declared.in_params.split(",")
    outputs = declared.out_params.split(",")
    t_dtype = dtype if "T" in declared.out_params.split() and dtype is not None else numpy.float32
    arguments = []
    for parameter in parameters:
        *modifiers, type_name, _ = parameter.split()  # after any modifier such as ``raw``
        if type_name == "T":
            # a raw array is indexed by the kernel itself: room for the four gates of each of 4 elements
            arguments.append(cupy.ones(16 if "raw" in modifiers else 4, t_dtype))
        elif len(parameters) == 1:
            arguments.append(cupy.ones(4, type_name))
        else:
            arguments.append(numpy.dtype(type_name).type(1))
    if any(output.split()[0] == "raw" for output in outputs):  # CuPy can't size a raw output: pass them all
        arguments += [cupy.empty(16 if output.split()[0] == "raw" else 4, t_dtype) for output in outputs]
    return arguments


def test_every_declared_kernel_compiles_on_each_cuda_device(cuda_device):
    cupy = _backend.require_cupy()
    with cupy.cuda.Device(cuda_device.index):
        for name, dtype in cuda_kernels.declared_kernels():
            declared, kernel = cuda_kernels.declaration(name, dtype), cuda_kernels.kernel(name, dtype)
            if declared.kind in ("elementwise", "reduction"):
                kernel(*_sample_arguments(cupy, declared, dtype))
            else:
                kernel.compile()
        cupy.cuda.get_current_stream().synchronize()


def test_every_declared_kernel_runs_on_each_cuda_device(cuda_device, monkeypatch):
    """Each kernel launched by the code that launches it, with the result compared with the CPU's; run on every
    device, this also checks that a kernel kept in the cache from one device runs on the next."""
    looked_up = set()
    lookup = cuda_kernels.kernel

    def recording(name, dtype=None):
        looked_up.add((name, dtype))
        return lookup(name, dtype)

    monkeypatch.setattr(cuda_kernels, "kernel", recording)
    cupy = _backend.require_cupy()
    rng = numpy.random.default_rng(cuda_device.index)
    with cupy.cuda.Device(cuda_device.index):
        _run_relu_gradient(rng, cuda_device)
        _run_cross_entropy(rng, cuda_device)
        _run_column_sums(cupy, rng, cuda_device)
        _run_whole_sum(rng, cuda_device)
        _run_optimizers(cupy, rng)
        _run_philox(cuda_device)
        _run_divisions(rng, cuda_device)
        _run_conversions(rng, cuda_device)
        _run_lstm(rng, cuda_device)
        _run_softmax(rng, cuda_device)
        _run_layer_norm(rng, cuda_device)
        _run_attention(rng, cuda_device)
        _run_capturable_matmul(cupy, rng)
        _run_contiguous(cupy, rng, cuda_device)
        cupy.cuda.get_current_stream().synchronize()
    assert looked_up == set(cuda_kernels.declared_kernels())


def _run_relu_gradient(rng, device):
    x, g = rng.standard_normal((2, 50)).astype(numpy.float32)
    result = _relu_gradient.relu_gradient(agnostic.tensor(g, device=device), agnostic.tensor(x, device=device))
    numpy.testing.assert_array_equal(result.cpu().numpy(), numpy.where(x > 0, g, 0))


def _run_cross_entropy(rng, device):
    for dtype, rows in itertools.product(("float32", "float64"), (5, cuda_ops._ONE_BLOCK_ROWS + 1)):
        logits = rng.standard_normal((rows, 3)).astype(dtype)
        labels = rng.integers(0, 3, rows)
        labels[0] = -100  # ignored
        losses, grads = [], []
        for where in ("cpu", device):
            input = agnostic.tensor(logits, device=where, requires_grad=True)
            target = agnostic.tensor(labels, device=where)
            assert _index_cross_entropy.supports(input, target, None, 0.0, "mean")
            loss = functional.cross_entropy(input, target)
            loss.backward()
            losses.append(loss.item())
            grads.append(input.grad.cpu().numpy())
        tolerance = 1e-5 if dtype == "float32" else 1e-12
        numpy.testing.assert_allclose(losses[1], losses[0], rtol=tolerance)
        numpy.testing.assert_allclose(grads[1], grads[0], rtol=tolerance, atol=tolerance / rows)


def _run_contiguous(cupy, rng, device):
    """The vectorized kernels of large same-shape operands (``a + b``... and relu) give CuPy's ufuncs' bits, specials
    included (NaN, infinities, signed zeros, float32 subnormals that CuPy flushes), with a tail of elements that
    fill no vector; a misaligned view or a broadcast operand takes CuPy's ufunc, with the same values."""
    ufuncs = {"add": cupy.add, "sub": cupy.subtract, "mul": cupy.multiply, "div": cupy.true_divide}
    size = cuda_vectorized.MIN_SIZE + 3
    for dtype in ("float32", "float64"):
        x, y = rng.standard_normal((2, size)).astype(dtype)
        x[:6] = [numpy.nan, numpy.inf, -numpy.inf, -0.0, 0.0, numpy.finfo(dtype).tiny / 4]
        y[:6] = [1.0, -numpy.inf, 2.0, 0.0, -0.0, numpy.finfo(dtype).tiny / 2]
        tensors = [agnostic.tensor(v, device=device) for v in (x, y)]
        unsigned = numpy.dtype(f"uint{numpy.dtype(dtype).itemsize * 8}")
        for name, op in (("add", agnostic.add), ("sub", agnostic.sub), ("mul", agnostic.mul),
                         ("div", agnostic.true_divide)):
            expected = ufuncs[name](cupy.asarray(x), cupy.asarray(y)).get()
            got = op(*tensors).cpu().numpy()
            numpy.testing.assert_array_equal(got.view(unsigned), expected.view(unsigned))
            misaligned = op(tensors[0][1:], tensors[1][1:]).cpu().numpy()
            numpy.testing.assert_array_equal(misaligned.view(unsigned), expected[1:].view(unsigned))
        expected = cupy.maximum(cupy.asarray(x), 0).get()
        numpy.testing.assert_array_equal(agnostic.relu(tensors[0]).cpu().numpy().view(unsigned),
                                         expected.view(unsigned))
        rows, row = size // 7, agnostic.tensor(y[:7], device=device)
        broadcast = (tensors[0][:rows * 7].reshape(rows, 7) + row).cpu().numpy()
        numpy.testing.assert_array_equal(broadcast, (cupy.asarray(x[:rows * 7]).reshape(rows, 7)
                                                     + cupy.asarray(y[:7])).get())


def _run_lstm(rng, device):
    """The fused LSTM layer (both cell kernels) against the CPU's, values and gradients, float32 and float64."""
    for dtype in ("float32", "float64"):
        arrays = [rng.standard_normal(shape).astype(dtype) * 0.5
                  for shape in ((6, 3, 4), (3, 5), (3, 5), (20, 4), (20, 5), (20,), (20,))]
        results = []
        for where in ("cpu", device):
            tensors = [agnostic.tensor(array, device=where, requires_grad=True) for array in arrays]
            outputs = _fused_lstm.LSTMLayer.apply(*tensors, False, None)
            sum(output.sum() * (k + 1) for k, output in enumerate(outputs)).backward()
            results.append([o.detach().cpu().numpy() for o in outputs] + [t.grad.cpu().numpy() for t in tensors])
        for got, expected in zip(results[1], results[0]):
            numpy.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == "float32" else 1e-12, atol=1e-5)


def _run_softmax(rng, device):
    """softmax and log_softmax over the last dimension (both row kernels), values and gradients against the CPU's,
    with a NaN row and an all -inf row (NaN results, as NumPy's), and rows longer than a warp."""
    for dtype, cols in itertools.product(("float32", "float64"), (3, 70)):
        x = rng.standard_normal((5, cols)).astype(dtype)
        x[1, 0], x[2, :] = numpy.nan, -numpy.inf
        g = rng.standard_normal((5, cols)).astype(dtype)
        for function in (agnostic.softmax, agnostic.log_softmax):
            results = []
            for where in ("cpu", device):
                input = agnostic.tensor(x, device=where, requires_grad=True)
                output = function(input, -1)
                output.backward(agnostic.tensor(g, device=where))
                results.append((output.detach().cpu().numpy(), input.grad.cpu().numpy()))
            for got, expected in zip(results[1], results[0]):
                # the gradient subtracts a row's sum of 70 products: float32 rounds it to about 1e-7 of the terms
                numpy.testing.assert_allclose(got, expected, rtol=1e-5 if dtype == "float32" else 1e-12,
                                              atol=1e-6 if dtype == "float32" else 1e-14)


def _run_attention(rng, device):
    """Every instance of the attention kernels (a head size for each bound, causal or not): the output and the three
    gradients against the CPU's composed form."""
    for dtype, sizes in cuda_kernels.ATTENTION_MAX_DIMS.items():
        for size, causal in itertools.product(sizes, (False, True)):
            arrays = [rng.standard_normal((2, 3, rows, size - 5)).astype(dtype) for rows in (9, 12, 12)]
            results = []
            for where in ("cpu", device):
                q, k, v = (agnostic.tensor(a, device=where, requires_grad=True) for a in arrays)
                output = functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                output.pow(2).sum().backward()
                results.append([t.detach().cpu().numpy() for t in (output, q.grad, k.grad, v.grad)])
            tolerance = 1e-5 if dtype == numpy.float32 else 1e-12
            for got, expected in zip(results[1], results[0]):
                # a causal first row's query gradient is zero in exact arithmetic, rounding noise of the row's sums
                numpy.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * abs(expected).max())


def _run_layer_norm(rng, device):
    """layer_norm over one and two trailing dimensions, with and without weight and bias: values, gradients and a
    second derivative (the recorded backward) against the CPU's composed form."""
    for dtype, (shape, normalized), affine in itertools.product(
            ("float32", "float64"), (((6, 70), (70,)), ((2, 3, 4, 5), (4, 5))), (True, False)):
        x = rng.standard_normal(shape).astype(dtype)
        w, b = rng.standard_normal((2,) + normalized).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        results = []
        for where in ("cpu", device):
            input = agnostic.tensor(x, device=where, requires_grad=True)
            weight, bias = (agnostic.tensor(v, device=where, requires_grad=True) for v in (w, b)) if affine \
                else (None, None)
            output = functional.layer_norm(input, normalized, weight, bias)
            grads = agnostic.autograd.grad(output, [t for t in (input, weight, bias) if t is not None],
                                           agnostic.tensor(g, device=where), create_graph=True)
            (second,) = agnostic.autograd.grad(grads[0].pow(2).sum(), input)
            results.append([output.detach().cpu().numpy(), second.cpu().numpy()]
                           + [grad.detach().cpu().numpy() for grad in grads])
            output = functional.layer_norm(input, normalized, weight, bias)  # the plain backward, not recorded
            output.backward(agnostic.tensor(g, device=where))
            results[-1].append(input.grad.cpu().numpy())
        for got, expected in zip(results[1], results[0]):
            numpy.testing.assert_allclose(got, expected, rtol=2e-4 if dtype == "float32" else 1e-10, atol=2e-4)


def _run_column_sums(cupy, rng, device):
    for dtype in ("float32", "float64"):
        rows = rng.standard_normal((70, 45)).astype(dtype)
        sums = _column_sums.column_sums(cupy.asarray(rows), device).get()
        # the usual bound on a sum's rounding error, whatever the order of its additions
        bound = len(rows) * numpy.finfo(dtype).eps * numpy.abs(rows).sum(0)
        assert numpy.all(numpy.abs(sums - rows.astype(numpy.float64).sum(0)) <= bound)


def _run_whole_sum(rng, device):
    for dtype in ("float32", "float64"):
        values = rng.standard_normal(1000).astype(dtype)
        x = agnostic.tensor(values, device=device)
        bound = len(values) * numpy.finfo(dtype).eps * numpy.abs(values).sum()
        assert abs(x.sum().item() - values.astype(numpy.float64).sum()) <= bound
        assert abs(x.mean().item() - values.astype(numpy.float64).mean()) <= bound / len(values)


_OPTIMIZER_CASES = {  # scalars and flags of one step each
    "sgd": (dict(weight_decay=0.1, momentum=0.9, one_minus_dampening=0.7, neg_lr=-0.1),
            dict(maximize=1, nesterov=1, first=0)),
    "adam": (dict(weight_decay=0.1, decay=0.99, one_minus_beta1=0.7, beta1_complement=0.3, beta2=0.9,
                  one_minus_beta2=0.1, bias_correction2_sqrt=0.3, eps=1e-8, neg_step_size=-0.01),
             dict(maximize=1, decoupled=0, amsgrad=1)),
    "rmsprop": (dict(weight_decay=0.1, alpha=0.9, one_minus_alpha=0.1, alpha_complement=0.9, eps=1e-8, momentum=0.5,
                     neg_lr=-0.01), dict(maximize=0, centered=1)),
    "adam_capturable": (dict(weight_decay=0.1, decay=0.99, one_minus_beta1=0.1, beta1_complement=0.9, beta1=0.9,
                             beta2=0.999, one_minus_beta2=0.001, eps=1e-8, lr=0.01),
                        dict(maximize=0, decoupled=1, amsgrad=1)),
    "count": ({}, {}),
}


def _run_optimizers(cupy, rng):
    shapes = [(3, 5), (5000,)]  # the second takes two thread blocks
    updates = (_fused.SGD, _fused.ADAM, _fused.RMSPROP, _fused.ADAM_CAPTURABLE, _fused.COUNT)
    for update, dtype in itertools.product(updates, _fused._KERNEL_COMPUTE):
        scalars, flags = _OPTIMIZER_CASES[update.name]
        lists = [[numpy.full((), 3.0 + index, numpy.float32) if position in update.counters
                  else numpy.asarray(_optimizer_array(rng, name, shape), dtype) for index, shape in enumerate(shapes)]
                 for position, name in enumerate(update.lists)]
        on_device = [[cupy.asarray(array) for array in arrays] for arrays in lists]
        _fused.run(update, lists, scalars, flags)
        _fused.run(update, on_device, scalars, flags)
        tolerance = 2e-3 if dtype == numpy.float16 else 1e-5
        for host_arrays, device_arrays in zip(lists, on_device):
            for host, device in zip(host_arrays, device_arrays):
                numpy.testing.assert_allclose(device.get().astype(numpy.float64), host.astype(numpy.float64),
                                              rtol=tolerance, atol=tolerance)


def _optimizer_array(rng, name, shape):
    """Values for the array ``name``: squared averages above 1 and a small mean gradient, so that every square
    root (of ``square_avg - grad_avg ** 2`` too) is defined."""
    if name in ("param", "grad", "momentum_buffer", "exp_avg"):
        return rng.standard_normal(shape)
    return rng.random(shape) * 0.01 if name == "grad_avg" else rng.random(shape) + 1


def _run_philox(device):
    for dtype in (numpy.float32, numpy.float64):
        numpy.testing.assert_array_equal(_philox.uniform(device, 7, 3, 1001, dtype).get(),
                                         _philox.uniform(CPU, 7, 3, 1001, dtype))
        numpy.testing.assert_allclose(_philox.normal(device, 7, 3, 1001, dtype).get(),
                                      _philox.normal(CPU, 7, 3, 1001, dtype), rtol=1e-5, atol=1e-5)
    numpy.testing.assert_array_equal(_philox.integers(device, 7, 3, 1001, -5, 10).get(),
                                     _philox.integers(CPU, 7, 3, 1001, -5, 10))
    cupy = _backend.require_cupy()
    for dtype in (numpy.float32, numpy.float64):
        values = numpy.linspace(-3, 3, 1001, dtype=dtype)
        values[:3] = [numpy.inf, numpy.nan, -0.0]
        keep = float(dtype(0.6))
        numpy.testing.assert_array_equal(_philox.dropout_scaled(device, 7, 3, cupy.asarray(values), keep).get(),
                                         _philox.dropout_scaled(CPU, 7, 3, values, keep))


def _run_divisions(rng, device):
    """floor_divide, remainder, fmod and both rounding modes of div on every dtype with a kernel, and complex
    division: the CPU's values (no subnormal float32 operands, which CuPy flushes)."""
    divisions = (agnostic.floor_divide, agnostic.remainder, agnostic.fmod,
                 lambda a, b: agnostic.div(a, b, rounding_mode="trunc"),
                 lambda a, b: agnostic.div(a, b, rounding_mode="floor"))
    for name in DIVISION_DTYPES:
        a = rng.integers(-100, 100, 64).astype(name)
        b = rng.integers(1, 9, 64).astype(name)
        if name.startswith("float"):
            a, b = a / numpy.dtype(name).type(3), b * rng.choice([-1, 1], 64).astype(name)
        for division in divisions:
            expected = division(agnostic.tensor(a), agnostic.tensor(b)).numpy()
            result = division(agnostic.tensor(a, device=device), agnostic.tensor(b, device=device))
            numpy.testing.assert_array_equal(result.cpu().numpy(), expected)
    for dtype in (agnostic.complex64, agnostic.complex128):
        a, b = (agnostic.tensor(rng.standard_normal((2, 32)).view(numpy.complex128), dtype=dtype) for _ in range(2))
        numpy.testing.assert_allclose((a.to(device) / b.to(device)).cpu().numpy(), (a / b).numpy(), rtol=1e-6)


def _run_conversions(rng, device):
    """Floats to every integer dtype (out of range and NaN too), and float64 to float16: the CPU's values."""
    values = numpy.concatenate([rng.standard_normal(64) * 1e3, [-1.0, numpy.nan, numpy.inf, -1e30, 2.0 ** 40]])
    for source in ("float16", "float32", "float64"):
        tensor = agnostic.tensor(values).to(getattr(agnostic, source))
        on_device = tensor.to(device)
        for target in INTEGERS:
            numpy.testing.assert_array_equal(on_device.to(getattr(agnostic, target)).cpu().numpy(),
                                             tensor.to(getattr(agnostic, target)).numpy())
    tensor = agnostic.tensor(values, dtype=agnostic.float64)
    numpy.testing.assert_array_equal(tensor.to(device).half().cpu().numpy(), tensor.half().numpy())


def _run_capturable_matmul(cupy, rng):
    from agnostic._backends import cuda_ops

    cases = [((5, 7), (7, 3)), ((64, 784), (784, 256)), ((3, 1, 4, 40), (2, 40, 5)), ((40,), (40, 6)), ((6, 40), (40,)),
             ((33,), (33,)), ((0, 4), (4, 3)), ((4, 0), (0, 3)),
             ((300, 600), (600, 200))]  # the last: the register-blocked kernel (from 2 ** 25 multiply-adds)
    for dtype, tolerance in (("float16", 1e-2), ("float32", 1e-5), ("float64", 1e-12), ("int64", 0),
                             ("complex64", 1e-5)):
        for shape_a, shape_b in cases:
            a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
            if dtype == "int64":
                a, b = rng.integers(-9, 9, shape_a), rng.integers(-9, 9, shape_b)
            a, b = a.astype(dtype), b.astype(dtype)
            expected = a.astype(numpy.complex128 if dtype == "complex64" else numpy.float64) @ b
            for left, right in ((cupy.asarray(a), cupy.asarray(b)),  # and transposed memory: strided reads
                                (cupy.asfortranarray(cupy.asarray(a)), cupy.asfortranarray(cupy.asarray(b)))):
                product = cuda_ops.capturable_matmul(left, right)
                assert product.dtype == numpy.dtype(dtype) and product.shape == expected.shape
                numpy.testing.assert_allclose(product.get().astype(expected.dtype), expected,
                                              rtol=tolerance, atol=tolerance * max(1, shape_a[-1] ** 0.5))
