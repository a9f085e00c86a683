"""Optimizers: PyTorch's documented update rules (hand-computed values and a float64 reference), the same results on
every device and on both the fused-kernel and the per-tensor paths, state_dict format, groups and zero_grad."""

import shutil
import subprocess

import numpy
import pytest

import agnostic
from agnostic import optim
from agnostic.optim import _fused



def _param(values, device="cpu", dtype=agnostic.float32):
    return agnostic.tensor(values, dtype=dtype, device=device)


def _step(optimizer, params, grads):
    for p, g in zip(params, grads):
        p.grad = agnostic.tensor(g, dtype=p.dtype, device=p.device)
    optimizer.step()


# ----- hand-computed single and double steps ---------------------------------------------------------------------
@pytest.mark.parametrize("options, expected", [
    (dict(lr=0.1), [0.95, -2.025]),
    (dict(lr=0.1, weight_decay=0.1), [0.94, -2.005]),  # g + 0.1 * p = [0.6, 0.05]
    (dict(lr=0.1, maximize=True), [1.05, -1.975]),
])
def test_sgd_one_step(device, options, expected):
    p = _param([1.0, -2.0], device)
    _step(optim.SGD([p], **options), [p], [[0.5, 0.25]])
    numpy.testing.assert_allclose(p.cpu().numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("options, expected", [
    (dict(momentum=0.9), [-0.24, -0.28]),  # b = g1, then 0.9 * b + g2 = [1.4, 0.8]
    (dict(momentum=0.9, nesterov=True), [-0.366, -0.352]),  # steps g + 0.9 * b: 1.9 * g1, then [1.76, -0.28]
    (dict(momentum=0.9, dampening=0.5), [-0.215, -0.33]),  # no dampening at step 1; b = 0.9 * g1 + 0.5 * g2
])
def test_sgd_momentum_two_steps(device, options, expected):
    p = _param([0.0, 0.0], device)
    opt = optim.SGD([p], lr=0.1, **options)
    _step(opt, [p], [[1.0, 2.0]])
    _step(opt, [p], [[0.5, -1.0]])
    numpy.testing.assert_allclose(p.cpu().numpy(), expected, rtol=1e-6)
    assert opt.state[p]["momentum_buffer"].device == p.device


def test_adam_first_step_moves_by_lr_times_sign(device):
    p = _param([1.0, -1.0], device)
    _step(optim.Adam([p], lr=0.01), [p], [[0.1, -3.0]])  # m_hat = g, v_hat = g * g
    numpy.testing.assert_allclose(p.cpu().numpy(), [0.99, -0.99], rtol=1e-6)


def test_adam_second_step_bias_corrections(device):
    p = _param([0.0], device)
    opt = optim.Adam([p], lr=0.1)
    _step(opt, [p], [[1.0]])
    _step(opt, [p], [[-1.0]])
    # m = 0.09 - 0.1 = -0.01, v = 0.000999 + 0.001 = 0.001999; m_hat = -0.01 / 0.19, v_hat = 1
    numpy.testing.assert_allclose(p.cpu().numpy(), [-0.1 + 0.1 * 0.01 / 0.19], rtol=1e-5)
    assert float(opt.state[p]["step"]) == 2.0


def test_adamw_decays_before_the_update(device):
    p = _param([1.0], device)
    _step(optim.AdamW([p], lr=0.1, weight_decay=0.01), [p], [[0.5]])
    numpy.testing.assert_allclose(p.cpu().numpy(), [1.0 * (1 - 0.1 * 0.01) - 0.1], rtol=1e-6)


def test_rmsprop_first_steps(device):
    p = _param([1.0, -1.0], device)
    _step(optim.RMSprop([p], lr=0.01), [p], [[2.0, -0.5]])  # sqrt(0.01 g^2) = 0.1 |g|
    numpy.testing.assert_allclose(p.cpu().numpy(), [0.9, -0.9], rtol=1e-5)
    q = _param([1.0], device)
    _step(optim.RMSprop([q], lr=0.01, centered=True), [q], [[2.0]])  # sqrt(0.01 g^2 - (0.01 g)^2)
    numpy.testing.assert_allclose(q.cpu().numpy(), [1.0 - 0.01 / numpy.sqrt(0.0099)], rtol=1e-5)


# ----- a float64 reference of PyTorch's documented algorithms ----------------------------------------------------
def _reference(kind, options, init, grads):
    """The algorithms as PyTorch's documentation writes them, in float64 NumPy, one parameter."""
    o = dict(options)
    p = numpy.array(init, dtype=numpy.float64)
    state = {}
    for t, g in enumerate(grads, start=1):
        g = numpy.array(g, dtype=numpy.float64)
        if o.get("maximize"):
            g = -g
        lr, wd = o.get("lr", 1e-3 if kind != "rmsprop" else 1e-2), o.get("weight_decay", 1e-2 if kind == "adamw"
                                                                           else 0)
        if kind == "adamw":
            p = p * (1 - lr * wd)
        elif wd:
            g = g + wd * p
        if kind == "sgd":
            mu, tau = o.get("momentum", 0), o.get("dampening", 0)
            if mu:
                b = g.copy() if t == 1 else mu * state["b"] + (1 - tau) * g
                state["b"] = b
                g = g + mu * b if o.get("nesterov") else b
            p = p - lr * g
        elif kind in ("adam", "adamw"):
            b1, b2 = o.get("betas", (0.9, 0.999))
            m = b1 * state.get("m", 0) + (1 - b1) * g
            v = b2 * state.get("v", 0) + (1 - b2) * g * g
            state.update(m=m, v=v)
            v_hat_source = v
            if o.get("amsgrad"):
                state["v_max"] = numpy.maximum(state.get("v_max", 0), v)
                v_hat_source = state["v_max"]
            m_hat = m / (1 - b1 ** t)
            v_hat = v_hat_source / (1 - b2 ** t)
            p = p - lr * m_hat / (numpy.sqrt(v_hat) + o.get("eps", 1e-8))
        else:
            alpha, eps, mu = o.get("alpha", 0.99), o.get("eps", 1e-8), o.get("momentum", 0)
            v = alpha * state.get("v", 0) + (1 - alpha) * g * g
            state["v"] = v
            v_tilde = v
            if o.get("centered"):
                state["g_avg"] = alpha * state.get("g_avg", 0) + (1 - alpha) * g
                v_tilde = v - state["g_avg"] ** 2
            if mu > 0:
                state["b"] = mu * state.get("b", 0) + g / (numpy.sqrt(v_tilde) + eps)
                p = p - lr * state["b"]
            else:
                p = p - lr * g / (numpy.sqrt(v_tilde) + eps)
    return p


_CLASSES = {"sgd": optim.SGD, "adam": optim.Adam, "adamw": optim.AdamW, "rmsprop": optim.RMSprop}
_CONFIGS = [
    ("sgd", dict(lr=0.1)),
    ("sgd", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.1, maximize=True)),
    ("sgd", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("adam", dict(lr=0.01)),
    ("adam", dict(lr=0.01, betas=(0.3, 0.5), amsgrad=True, weight_decay=0.1, maximize=True)),
    ("adamw", dict(lr=0.01, amsgrad=True)),
    ("adamw", dict(lr=0.02, weight_decay=0.1, betas=(0.8, 0.9), eps=1e-3)),
    ("rmsprop", dict(lr=0.01)),
    ("rmsprop", dict(lr=0.01, momentum=0.5, centered=True, weight_decay=0.1, alpha=0.9)),
    ("rmsprop", dict(lr=0.001, alpha=0.3, centered=True, maximize=True, eps=1e-4)),
]
_SHAPES = [(3, 4), (7,), ()]


def _trajectory_inputs(seed=0, steps=4, shapes=_SHAPES, dtype=numpy.float32):
    rng = numpy.random.default_rng(seed)
    init = [numpy.asarray(rng.standard_normal(s), dtype) for s in shapes]
    grads = [[numpy.asarray(rng.standard_normal(s), dtype) for s in shapes] for _ in range(steps)]
    return init, grads


def _run(kind, options, init, grads, device="cpu", dtype=agnostic.float32, **extra):
    params = [agnostic.tensor(x, dtype=dtype, device=device) for x in init]
    opt = _CLASSES[kind](params, **options, **extra)
    for step_grads in grads:
        _step(opt, params, step_grads)
    return [p.cpu().numpy() for p in params], opt


@pytest.mark.parametrize("kind, options", _CONFIGS)
def test_matches_documented_algorithm(device, kind, options):
    init, grads = _trajectory_inputs()
    results, _ = _run(kind, options, init, grads, device)
    for index, result in enumerate(results):
        expected = _reference(kind, options, init[index], [g[index] for g in grads])
        numpy.testing.assert_allclose(result, expected, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kind, options", _CONFIGS)
def test_matches_pytorch(kind, options):
    torch = pytest.importorskip("torch")
    init, grads = _trajectory_inputs(seed=1)
    ours, _ = _run(kind, options, init, grads)
    params = [torch.tensor(x, requires_grad=True) for x in init]
    theirs = getattr(torch.optim, _CLASSES[kind].__name__)(params, **options)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g)
        theirs.step()
    for a, b in zip(ours, params):
        numpy.testing.assert_allclose(a, b.detach().numpy(), rtol=1e-5, atol=1e-6)


# ----- devices, dtypes, layouts and the fused path --------------------------------------------------------------
_DEVICE_SHAPES = [(3, 4), (7,), (), (0,), (10_000,), (2, 4100)]  # several kernel chunks, an empty and a 0-dim one


@pytest.mark.parametrize("kind, options", _CONFIGS[1::2] + [_CONFIGS[4]])
@pytest.mark.parametrize("dtype", [agnostic.float32, agnostic.float64])
@pytest.mark.parametrize("foreach", [None, False])
def test_same_result_on_every_device_and_path(device, kind, options, dtype, foreach):
    init, grads = _trajectory_inputs(seed=2, steps=3, shapes=_DEVICE_SHAPES, dtype=dtype.numpy_dtype)
    on_cpu, _ = _run(kind, options, init, grads, "cpu", dtype)
    here, opt = _run(kind, options, init, grads, device, dtype, foreach=foreach)
    tolerance = dict(rtol=1e-5, atol=1e-6) if dtype is agnostic.float32 else dict(rtol=1e-12, atol=1e-13)
    for a, b in zip(here, on_cpu):
        numpy.testing.assert_allclose(a, b, **tolerance)
    for state in opt.state.values():
        assert all(v.device == agnostic.device(device) for k, v in state.items() if k != "step")


@pytest.mark.parametrize("kind, options", [_CONFIGS[2], _CONFIGS[4], _CONFIGS[8]])
def test_float16_updates_in_float32_and_rounds_once(device, kind, options):
    init, grads = _trajectory_inputs(seed=3, steps=3, shapes=[(5, 6), (4100,)], dtype=numpy.float16)
    here, opt = _run(kind, options, init, grads, device, agnostic.float16)
    for index, result in enumerate(here):
        assert result.dtype == numpy.float16
        expected = _reference(kind, options, init[index].astype(numpy.float64),
                              [g[index].astype(numpy.float64) for g in grads])
        numpy.testing.assert_allclose(result.astype(numpy.float64), expected, rtol=4e-3, atol=4e-3)
    assert all(v.dtype is agnostic.float16 for s in opt.state.values() for k, v in s.items() if k != "step")


@pytest.mark.parametrize("kind, options", [_CONFIGS[1], _CONFIGS[4], _CONFIGS[8]])
def test_complex_parameters_update_as_real_pairs(device, kind, options):
    """PyTorch's view_as_real: a complex parameter updates like the real tensor of its (re, im) pairs."""
    rng = numpy.random.default_rng(4)
    pairs = [rng.standard_normal((3, 2)).astype(numpy.float32) for _ in range(4)]
    as_complex = [p[:, 0] + 1j * p[:, 1] for p in pairs]
    z, _ = _run(kind, options, [as_complex[0]], [[g] for g in as_complex[1:]], device, agnostic.complex64)
    r, _ = _run(kind, options, [pairs[0]], [[g] for g in pairs[1:]], "cpu", agnostic.float32)
    numpy.testing.assert_allclose(numpy.stack([z[0].real, z[0].imag], axis=-1), r[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind, options", [_CONFIGS[1], _CONFIGS[4], _CONFIGS[8]])
def test_non_contiguous_parameters(device, kind, options):
    init, grads = _trajectory_inputs(seed=5, steps=2, shapes=[(6, 5)])
    expected, _ = _run(kind, options, init, grads)
    base = agnostic.tensor(init[0].T.copy(), device=device)
    param = base.t()  # a transposed view: the update must land in ``base``'s memory
    assert not param.is_contiguous()
    opt = _CLASSES[kind]([param], **options)
    for step_grads in grads:
        _step(opt, [param], step_grads)
    numpy.testing.assert_allclose(base.t().cpu().numpy(), expected[0], rtol=1e-5, atol=1e-6)


def test_cuda_group_updates_in_one_launch(cuda_device, monkeypatch):
    launches = []
    original = _fused._launch
    monkeypatch.setattr(_fused, "_launch", lambda *args: launches.append(len(args[3])) or original(*args))
    sizes = [(256, 784), (256,), (256, 256), (256,), (10, 256), (10,)]
    params = [agnostic.randn(*s, device=cuda_device) for s in sizes]
    for opt in (optim.Adam(params, amsgrad=True), optim.SGD(params, lr=0.1, momentum=0.9), optim.RMSprop(params)):
        for _ in range(2):
            for p in params:
                p.grad = agnostic.ones_like(p)
            opt.step()
    assert launches == [6] * 6  # one launch per step, for all six tensors (SGD's first step too)
    launches.clear()
    opt = optim.Adam(params, foreach=False)
    opt.step()
    assert launches == []


def test_launch_table_layout():
    a, b, c = numpy.zeros(5000, numpy.float32), numpy.zeros(3, numpy.float32), numpy.zeros(0, numpy.float32)
    table, blocks = _fused.launch_table([[a, b, c], [a, b, c], [None, None, None]])
    n = 3
    assert blocks == 3  # 5000 elements -> 2 chunks of 4096, 3 -> 1, 0 -> none
    sizes = table[3 * n:4 * n]
    assert sizes.tolist() == [5000, 3, 0]
    assert table[4 * n:4 * n + blocks].tolist() == [0, 0, 1]
    assert table[4 * n + blocks:].tolist() == [0, _fused.CHUNK, 0]
    assert table[2 * n:3 * n].tolist() == [0, 0, 0]
    assert table[0] == a.__array_interface__["data"][0]


def _cpu_compiler():
    return shutil.which("g++") or shutil.which("clang++")


@pytest.mark.skipif(_cpu_compiler() is None, reason="no C++ compiler")
def test_cuda_kernels_compiled_for_the_cpu_match_the_array_path(tmp_path):
    """The multi-tensor kernels' source, compiled as plain C++ and run block by block on the CPU, gives exactly what
    the NumPy path gives: checks the pointer table, the chunking and the formulas on machines without a GPU."""
    import ctypes

    prelude = ("#include <cmath>\n#define __device__\n#define __forceinline__ inline\n#define __global__\n"
               "struct Index { unsigned x; };\nstatic Index blockIdx, threadIdx, blockDim;\nusing std::sqrt;\n"
               "extern \"C\" void set_ids(unsigned b, unsigned t, unsigned n) "
               "{ blockIdx.x = b; threadIdx.x = t; blockDim.x = n; }\n")
    updates = (_fused.SGD, _fused.ADAM, _fused.RMSPROP, _fused.ADAM_CAPTURABLE, _fused.COUNT)
    dtypes = ("float32", "float64")
    units = [f"namespace k{i} {{\n{_fused.kernel_source(u, d)}\n}}" for i, (u, d) in
             enumerate((u, d) for u in updates for d in dtypes)]
    source = tmp_path / "kernels.cpp"
    source.write_text(prelude + "\n".join(units))
    library = tmp_path / "kernels.so"
    subprocess.run([_cpu_compiler(), "-O0", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    lib = ctypes.CDLL(str(library))
    cases = {
        _fused.SGD: [dict(weight_decay=0.1, momentum=0.9, one_minus_dampening=0.7, neg_lr=-0.1),
                     dict(maximize=1, nesterov=1, first=0)],
        _fused.ADAM: [dict(weight_decay=0.1, decay=0.99, one_minus_beta1=0.7, beta1_complement=0.3, beta2=0.9,
                           one_minus_beta2=0.1, bias_correction2_sqrt=0.3, eps=1e-8, neg_step_size=-0.01),
                      dict(maximize=1, decoupled=0, amsgrad=1)],
        _fused.RMSPROP: [dict(weight_decay=0.1, alpha=0.9, one_minus_alpha=0.1, alpha_complement=0.9, eps=1e-8,
                              momentum=0.5, neg_lr=-0.01), dict(maximize=0, centered=1)],
        _fused.ADAM_CAPTURABLE: [dict(weight_decay=0.1, decay=0.999, one_minus_beta1=0.1, beta1_complement=0.9,
                                      beta1=0.9, beta2=0.999, one_minus_beta2=0.001, eps=1e-8, lr=0.01),
                                 dict(maximize=1, decoupled=1, amsgrad=1)],
        _fused.COUNT: [{}, {}],
    }
    rng = numpy.random.default_rng(6)
    shapes = [(3, 5), (5000,), (), (0,)]
    c_types = {numpy.int32: ctypes.c_int, numpy.float32: ctypes.c_float, numpy.float64: ctypes.c_double}
    for update, (scalars, flags) in cases.items():
        for dtype_name in dtypes:
            dtype = numpy.dtype(dtype_name)
            lists = [[numpy.full(1, 7.0 + i, numpy.float32) if position in update.counters
                      else numpy.asarray(rng.standard_normal(s), dtype) for i, s in enumerate(shapes)]
                     for position in range(len(update.lists))]
            for position, state in enumerate(lists[2:], 2):  # squared averages must stay above the squared mean
                for index, array in enumerate(state):
                    if position not in update.counters:
                        state[index] = numpy.asarray(numpy.abs(array) + 1, dtype)
            if update is _fused.RMSPROP:
                lists[4] = [numpy.asarray(a * 0.01, dtype) for a in lists[4]]
            on_host = [[a.copy() for a in arrays] for arrays in lists]
            _fused._run_host(update, agnostic.device("cpu").backend,
                             [tuple(arrays[i] for arrays in on_host) for i in range(len(shapes))],
                             scalars, flags)
            tasks = [tuple(arrays[i] for arrays in lists) for i in range(len(shapes))]
            table, blocks, arguments = _fused.launch_arguments(update, dtype, tasks, scalars, flags)
            # the arguments as the C signature declares them: a wrong width would read garbage
            arguments = [table.ctypes.data_as(ctypes.c_void_p)] + [c_types[type(a)](a.item()) for a in arguments]
            kernel = getattr(lib, f"agnostic_{update.name}_{dtype_name}")
            threads = 32
            for block in range(blocks):
                for thread in range(threads):
                    lib.set_ids(block, thread, threads)
                    kernel(*arguments)
            for kernel_arrays, host_arrays in zip(lists, on_host):
                for a, b in zip(kernel_arrays, host_arrays):
                    numpy.testing.assert_array_equal(a, b)


def test_kernel_arguments_are_typed_as_the_kernel_declares():
    tasks = [(numpy.zeros(3, numpy.float16), numpy.zeros(3, numpy.float16), None)]
    scalars = dict(weight_decay=0.1, momentum=0.9, one_minus_dampening=1.0, neg_lr=-0.1)
    flags = dict(maximize=0, nesterov=0, first=1)
    for dtype, compute in (("float16", numpy.float32), ("float32", numpy.float32), ("float64", numpy.float64)):
        _, blocks, arguments = _fused.launch_arguments(_fused.SGD, numpy.dtype(dtype), tasks, scalars, flags)
        assert blocks == 1
        assert [type(a) for a in arguments] == [numpy.int32] * 2 + [compute] * 4 + [numpy.int32] * 3
        source = _fused.kernel_source(_fused.SGD, dtype)
        assert f"typedef {'double' if compute is numpy.float64 else 'float'} C;" in source


# ----- state_dict, groups, zero_grad, closures and argument checks ----------------------------------------------
def test_state_dict_has_pytorchs_format():
    p, q = _param([1.0, 2.0]), _param([3.0])
    opt = optim.Adam([{"params": [p]}, {"params": [q], "lr": 0.5}], amsgrad=True)
    _step(opt, [p, q], [[0.1, 0.2], [0.3]])
    state = opt.state_dict()
    assert set(state) == {"state", "param_groups"}
    assert set(state["state"]) == {0, 1}
    assert set(state["state"][0]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}
    step = state["state"][0]["step"]
    assert step.dtype is agnostic.float32 and step.device == agnostic.device("cpu") and step.item() == 1.0
    assert [g["params"] for g in state["param_groups"]] == [[0], [1]]
    assert [g["lr"] for g in state["param_groups"]] == [1e-3, 0.5]
    assert state["param_groups"][0]["betas"] == (0.9, 0.999)


@pytest.mark.parametrize("kind", sorted(_CLASSES))
def test_group_keys_match_pytorch(kind):
    torch = pytest.importorskip("torch")
    ours = _CLASSES[kind]([_param([1.0])]).state_dict()["param_groups"][0]
    theirs = getattr(torch.optim, _CLASSES[kind].__name__)([torch.zeros(1, requires_grad=True)])
    assert ours == theirs.state_dict()["param_groups"][0]


def test_sgd_state_only_with_momentum():
    p = _param([1.0])
    opt = optim.SGD([p], lr=0.1)
    _step(opt, [p], [[1.0]])
    assert opt.state_dict()["state"] == {}


@pytest.mark.parametrize("kind, options", [_CONFIGS[1], _CONFIGS[4], _CONFIGS[8]])
def test_load_state_dict_resumes_exactly(device, kind, options):
    init, grads = _trajectory_inputs(seed=7, steps=4)
    uninterrupted, _ = _run(kind, options, init, grads, device)
    first, opt = _run(kind, options, init, grads[:2], "cpu")
    params = [agnostic.tensor(x, device=device) for x in first]
    resumed = _CLASSES[kind](params, **options)
    resumed.load_state_dict(opt.state_dict())
    for state in resumed.state.values():
        for key, value in state.items():
            assert value.device == (agnostic.device("cpu") if key == "step" else agnostic.device(device))
    for step_grads in grads[2:]:
        _step(resumed, params, step_grads)
    for a, b in zip(params, uninterrupted):
        numpy.testing.assert_allclose(a.cpu().numpy(), b, rtol=1e-6, atol=1e-7)


def test_load_state_dict_restores_groups_and_casts_state():
    p = _param([1.0, 2.0])
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    _step(opt, [p], [[1.0, 1.0]])
    state = opt.state_dict()
    q = _param([0.0, 0.0], dtype=agnostic.float64)
    other = optim.SGD([q], lr=0.5)
    other.load_state_dict(state)
    assert other.param_groups[0]["lr"] == 0.1 and other.param_groups[0]["momentum"] == 0.9
    assert other.param_groups[0]["params"][0] is q
    assert other.state[q]["momentum_buffer"].dtype is agnostic.float64
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.SGD([{"params": [q]}, {"params": [_param([1.0])]}], lr=0.1).load_state_dict(state)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.SGD([q, _param([1.0])], lr=0.1).load_state_dict(state)


def test_param_groups_and_add_param_group():
    p, q, r = _param([1.0]), _param([1.0]), _param([1.0])
    opt = optim.SGD([{"params": [p]}, {"params": q, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["params"] == [q] and opt.param_groups[1]["momentum"] == 0.9
    opt.add_param_group({"params": [r], "momentum": 0.0})
    _step(opt, [p, q, r], [[1.0], [1.0], [1.0]])
    numpy.testing.assert_allclose([p.item(), q.item(), r.item()], [0.9, 0.5, 0.9])
    assert r not in opt.state
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [p]})
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {_param([1.0])}})
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([1.0], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(_param([1.0]), lr=0.1)


def test_named_parameters():
    p = _param([1.0])
    opt = optim.Adam([("weight", p)])
    assert opt.param_groups[0]["params"] == [p] and opt.param_groups[0]["param_names"] == ["weight"]


@pytest.mark.parametrize("make, message", [
    (lambda p: optim.SGD(p, lr=-1), "Invalid learning rate"),
    (lambda p: optim.SGD(p, momentum=-0.1), "Invalid momentum"),
    (lambda p: optim.SGD(p, nesterov=True), "Nesterov momentum requires"),
    (lambda p: optim.Adam(p, betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
    (lambda p: optim.Adam(p, eps=-1), "Invalid epsilon"),
    (lambda p: optim.AdamW(p, weight_decay=-1), "Invalid weight_decay"),
    (lambda p: optim.RMSprop(p, alpha=-1), "Invalid alpha"),
])
def test_invalid_hyperparameters(make, message):
    with pytest.raises(ValueError, match=message):
        make([_param([1.0])])


def test_parameters_without_grad_are_skipped():
    p, q = _param([1.0]), _param([2.0])
    p.grad, q.grad = agnostic.tensor([1.0]), None
    opt = optim.Adam([p, q], lr=0.1)
    opt.step()
    assert q.item() == 2.0 and q not in opt.state and p.item() == pytest.approx(0.9)


def test_zero_grad():
    p = _param([1.0, 2.0])
    p.grad = agnostic.tensor([3.0, 4.0])
    opt = optim.SGD([p], lr=0.1)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_returns_closure_loss():
    p = _param([1.0])
    opt = optim.SGD([p], lr=0.1)

    def closure():
        p.grad = agnostic.tensor([2.0])
        return 7.0

    assert opt.step(closure) == 7.0
    assert p.item() == pytest.approx(0.8)


def test_repr_lists_groups():
    text = repr(optim.SGD([_param([1.0])], lr=0.1))
    assert text.startswith("SGD (\nParameter Group 0\n") and "    lr: 0.1\n" in text


@pytest.mark.parametrize("kind, options", [("sgd", dict(lr=0.05, momentum=0.9)), ("adam", dict(lr=0.05)),
                                           ("adamw", dict(lr=0.05)), ("rmsprop", dict(lr=0.01))])
def test_trains_a_model_with_autograd(device, kind, options):
    nn = pytest.importorskip("agnostic.nn")
    agnostic.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
    x = agnostic.randn(64, 3, device=device)
    y = (x * agnostic.tensor([1.0, -2.0, 0.5], device=device)).sum(1, keepdim=True)
    opt = _CLASSES[kind](model.parameters(), **options)
    losses = []
    for _ in range(60):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
    assert all(p.grad is not None for p in model.parameters())
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_step_counts_as_an_in_place_change_for_autograd():
    nn = pytest.importorskip("agnostic.nn")
    weight = nn.Parameter(agnostic.tensor([1.0, 2.0]))
    loss = (weight * weight).sum()  # saves weight for the backward pass
    weight.grad = agnostic.ones(2)
    optim.SGD([weight], lr=0.1).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
