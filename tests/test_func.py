"""agnostic.func as torch.func: grad, vjp, jacrev/jacfwd/hessian, jvp/linearize, vmap, functional_call,
stack_module_state, and how they nest and compose with ordinary autograd."""

import numpy
import pytest

import agnostic
from agnostic.func import (
    debug_unwrap, functional_call, functionalize, grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize,
    replace_all_batch_norm_modules_, stack_module_state, vjp, vmap,
)


def _values(tensor):
    return tensor.detach().cpu().numpy()


def _close(tensor, expected, **tolerance):
    numpy.testing.assert_allclose(_values(tensor), expected, rtol=tolerance.get("rtol", 1e-6),
                                  atol=tolerance.get("atol", 1e-6))


RNG = numpy.random.default_rng(0)
X = RNG.standard_normal(4)
A = RNG.standard_normal((3, 4))
Q = RNG.standard_normal((4, 4))


# ----- grad ------------------------------------------------------------------------------------------------------
def test_grad_of_sum_of_cubes_is_three_x_squared(device):
    x = agnostic.tensor(X, device=device)
    gradient = grad(lambda x: (x ** 3).sum())(x)
    _close(gradient, 3 * X ** 2)
    assert gradient.device == device and gradient.grad_fn is None and not gradient.requires_grad
    torch = pytest.importorskip("torch")
    expected = torch.func.grad(lambda x: (x ** 3).sum())(torch.tensor(X))
    _close(gradient, expected.numpy())


def test_grad_and_value_argnums_tuple_and_pytree_arguments(device):
    params = {"w": agnostic.tensor(X, device=device), "b": [agnostic.tensor(2.0, device=device)]}
    data = agnostic.tensor(X[::-1].copy(), device=device)

    def loss(params, data):
        return ((params["w"] * data).sum() + params["b"][0]) ** 2

    gradients, value = grad_and_value(loss, argnums=(0, 1))(params, data)
    inner = (X * X[::-1]).sum() + 2.0
    assert isinstance(gradients, tuple) and set(gradients[0]) == {"w", "b"} and isinstance(gradients[0]["b"], list)
    _close(gradients[0]["w"], 2 * inner * X[::-1])
    _close(gradients[0]["b"][0], 2 * inner)
    _close(gradients[1], 2 * inner * X)
    _close(value, inner ** 2)
    _close(grad(loss, argnums=-1)(params, data), 2 * inner * X)
    torch = pytest.importorskip("torch")
    torch_params = {"w": torch.tensor(X), "b": [torch.tensor(2.0)]}
    expected = torch.func.grad(loss, argnums=(0, 1))(torch_params, torch.tensor(X[::-1].copy()))
    _close(gradients[0]["w"], expected[0]["w"].numpy())
    _close(gradients[1], expected[1].numpy())


def test_grad_has_aux_returns_aux_untouched(device):
    x = agnostic.tensor(X, device=device)
    gradient, aux = grad(lambda x: ((x ** 2).sum(), {"double": x * 2}), has_aux=True)(x)
    _close(gradient, 2 * X)
    _close(aux["double"], 2 * X)
    assert not aux["double"].requires_grad
    (gradient, (value, aux)) = grad_and_value(lambda x: ((x ** 2).sum(), 7), has_aux=True)(x)
    assert aux == 7
    _close(value, (X ** 2).sum())


def test_nested_grad_gives_higher_derivatives(device):
    x = agnostic.tensor(1.5, device=device)
    cube = lambda x: x ** 3  # noqa: E731
    _close(grad(cube)(x), 3 * 1.5 ** 2)
    _close(grad(grad(cube))(x), 6 * 1.5)
    _close(grad(grad(grad(cube)))(x), 6.0)
    # the inner transform closes over the outer one's variable: d/dx [d/dy (x*y)] = d/dx x = 1
    _close(grad(lambda x: grad(lambda y: x * y)(x))(x), 1.0)
    _close(grad(lambda x: grad(lambda y: x * y ** 2)(x))(x), 4 * 1.5)
    torch = pytest.importorskip("torch")
    expected = torch.func.grad(lambda x: torch.func.grad(lambda y: x * y ** 2)(x))(torch.tensor(1.5))
    _close(grad(lambda x: grad(lambda y: x * y ** 2)(x))(x), expected.item())


def test_grad_is_differentiable_by_ordinary_autograd(device):
    x = agnostic.tensor(X, device=device, requires_grad=True)
    gradient = grad(lambda x: (x ** 3).sum())(x)
    assert gradient.requires_grad
    gradient.sum().backward()
    _close(x.grad, 6 * X)
    gradcheck_input = agnostic.tensor(X, dtype=agnostic.float64, device=device, requires_grad=True)
    assert agnostic.autograd.gradcheck(lambda x: grad(lambda y: (y.sin() * y).sum())(x), (gradcheck_input,))


def test_grad_keeps_closed_over_parameters_differentiable(device):
    weight = agnostic.tensor(2.0, device=device, requires_grad=True)
    x = agnostic.tensor(X, device=device)
    gradient = grad(lambda x: (weight * x ** 2).sum())(x)  # 2 * weight * x
    assert gradient.requires_grad
    gradient.sum().backward()
    _close(weight.grad, 2 * X.sum())


def test_grad_under_no_grad_computes_but_does_not_track(device):
    x = agnostic.tensor(X, device=device, requires_grad=True)
    with agnostic.no_grad():
        gradient = grad(lambda x: (x ** 3).sum())(x)
    _close(gradient, 3 * X ** 2)
    assert not gradient.requires_grad

    def partly_constant(x):
        with agnostic.no_grad():
            c = x ** 2
        return (x - c).sum()

    _close(grad(partly_constant)(agnostic.tensor(X, device=device)), numpy.ones(4))


def test_grad_of_an_unused_or_constant_input_is_zero(device):
    x, y = agnostic.tensor(X, device=device), agnostic.tensor(X + 1, device=device)
    _close(grad(lambda x, y: (y ** 2).sum())(x, y), numpy.zeros(4))
    _close(grad(lambda x: agnostic.tensor(3.0, device=device))(x), numpy.zeros(4))


@pytest.mark.parametrize("call, message", [
    (lambda x: grad(lambda x: x.sum(), argnums=[0])(x), "argnums must be int or Tuple"),
    (lambda x: grad(lambda x: x.sum(), argnums=1)(x), "Got argnum=1, but only 1 positional inputs"),
    (lambda x: grad(lambda x: x.sum(), argnums=())(x), "argnums must be non-empty"),
    (lambda x: grad(lambda x, y: x.sum(), argnums=(0, -2))(x, x), "argnums elements must be unique"),
    (lambda x: grad(lambda x: x)(x), "Expected f\\(\\*args\\) to return a scalar Tensor, got tensor with 1 dims"),
    (lambda x: grad(lambda x: 1.0)(x), "Expected f\\(\\*args\\) to return a Tensor"),
    (lambda x: grad(lambda x: x.sum(), has_aux=True)(x), "should be a tuple: \\(output, aux\\)"),
])
def test_grad_refuses_bad_calls_as_pytorch(device, call, message):
    with pytest.raises(RuntimeError, match=message):
        call(agnostic.tensor(X, device=device))


def test_grad_refuses_non_tensor_arguments():
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        grad(lambda x: x)(1.0)


# ----- vjp, jacrev, jacfwd, hessian ------------------------------------------------------------------------------
def test_vjp_is_the_transposed_jacobian_times_the_cotangent(device):
    a, x = agnostic.tensor(A, device=device), agnostic.tensor(X, device=device)
    output, vjp_fn = vjp(lambda x: agnostic.tanh(a @ x), x)
    pre = numpy.tanh(A @ X)
    _close(output, pre)
    cotangent = numpy.arange(3.0)
    (result,) = vjp_fn(agnostic.tensor(cotangent, device=device))
    _close(result, A.T @ (cotangent * (1 - pre ** 2)))
    (again,) = vjp_fn(agnostic.tensor(cotangent, device=device))  # may be called again
    _close(again, _values(result))
    torch = pytest.importorskip("torch")
    _, torch_vjp = torch.func.vjp(lambda x: torch.tanh(torch.tensor(A) @ x), torch.tensor(X))
    _close(result, torch_vjp(torch.tensor(cotangent))[0].numpy())


def test_vjp_with_several_primals_outputs_and_aux(device):
    x, y = agnostic.tensor(X, device=device), agnostic.tensor(X * 2, device=device)
    output, vjp_fn, aux = vjp(lambda x, y: ((x * y, {"s": x.sum()}), "aux"), x, y, has_aux=True)
    assert aux == "aux"
    grads = vjp_fn((agnostic.ones(4, device=device), {"s": agnostic.tensor(2.0, device=device)}))
    assert isinstance(grads, tuple) and len(grads) == 2
    _close(grads[0], X * 2 + 2)
    _close(grads[1], X)
    with pytest.raises(RuntimeError, match="Expected pytree structure of cotangents"):
        vjp_fn(agnostic.ones(4, device=device))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        vjp(lambda x: x * 2, x)[1](agnostic.ones(3, device=device))
    with pytest.raises(RuntimeError, match="All outputs of f must be floating-point"):
        vjp(lambda x: x.long(), x)


def test_jacrev_of_a_linear_map_is_its_matrix(device):
    a = agnostic.tensor(A, device=device)
    _close(jacrev(lambda x: a @ x)(agnostic.tensor(X, device=device)), A)
    _close(jacfwd(lambda x: a @ x)(agnostic.tensor(X, device=device)), A)
    jacobian = jacrev(lambda m: m @ agnostic.tensor(X, device=device))(a)
    assert tuple(jacobian.shape) == (3, 3, 4)
    _close(jacobian, numpy.einsum("ij,k->ijk", numpy.eye(3), X))


def test_jacrev_structure_follows_outputs_and_argnums(device):
    x, y = agnostic.tensor(X, device=device), agnostic.tensor(2.0, device=device)

    def f(x, y):
        return {"square": x ** 2 * y, "total": (x * y).sum()}

    jacobians = jacrev(f, argnums=(0, 1))(x, y)
    assert set(jacobians) == {"square", "total"}
    assert tuple(jacobians["square"][0].shape) == (4, 4) and tuple(jacobians["square"][1].shape) == (4,)
    _close(jacobians["square"][0], numpy.diag(2 * X * 2.0))
    _close(jacobians["square"][1], X ** 2)
    _close(jacobians["total"][0], numpy.full(4, 2.0))
    _close(jacobians["total"][1], X.sum())
    jacobian, aux = jacrev(lambda x: (x.sin(), x.cos()), has_aux=True, chunk_size=2)(x)
    _close(jacobian, numpy.diag(numpy.cos(X)))
    _close(aux, numpy.cos(X))
    torch = pytest.importorskip("torch")
    expected = torch.func.jacrev(f, argnums=(0, 1))(torch.tensor(X), torch.tensor(2.0))
    for key in ("square", "total"):
        for position in (0, 1):
            _close(jacobians[key][position], expected[key][position].numpy())


def test_jacfwd_equals_pytorchs(device):
    torch = pytest.importorskip("torch")
    x = agnostic.tensor(X, device=device)
    ours = jacfwd(lambda x: agnostic.softmax(x, 0) * x.sum())(x)
    theirs = torch.func.jacfwd(lambda x: torch.softmax(x, 0) * x.sum())(torch.tensor(X))
    _close(ours, theirs.numpy())


def test_hessian_of_a_quadratic_form_is_its_symmetrized_matrix(device):
    q, x = agnostic.tensor(Q, device=device), agnostic.tensor(X, device=device)
    _close(hessian(lambda x: x @ q @ x)(x), Q + Q.T)
    _close(jacrev(jacrev(lambda x: x @ q @ x))(x), Q + Q.T)
    torch = pytest.importorskip("torch")
    expected = torch.func.hessian(lambda x: (x.sin() * x).sum())(torch.tensor(X))
    _close(hessian(lambda x: (x.sin() * x).sum())(x), expected.numpy())


def test_jacrev_refuses_bad_calls(device):
    with pytest.raises(ValueError, match="chunk_size` should be greater than 0"):
        jacrev(lambda x: x, chunk_size=0)
    with pytest.raises(RuntimeError, match="Expected all inputs to be real"):
        jacrev(lambda x: x)(agnostic.tensor([1 + 1j], device=device))
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        jacfwd(lambda x: x, randomness="sometimes")


# ----- jvp, linearize --------------------------------------------------------------------------------------------
def test_jvp_is_the_jacobian_times_the_tangent(device):
    a, x = agnostic.tensor(A, device=device), agnostic.tensor(X, device=device)
    tangent = numpy.linspace(-1, 1, 4)
    output, product = jvp(lambda x: agnostic.tanh(a @ x), (x,), (agnostic.tensor(tangent, device=device),))
    pre = numpy.tanh(A @ X)
    _close(output, pre)
    _close(product, (1 - pre ** 2) * (A @ tangent))
    assert product.grad_fn is None and output.grad_fn is None
    torch = pytest.importorskip("torch")
    _, expected = torch.func.jvp(lambda x: torch.tanh(torch.tensor(A) @ x), (torch.tensor(X),),
                                 (torch.tensor(tangent),))
    _close(product, expected.numpy())


def test_jvp_with_pytrees_aux_and_constant_outputs(device):
    x, y = agnostic.tensor(X, device=device), agnostic.tensor(3.0, device=device)
    ones = agnostic.ones(4, device=device)
    output, product, aux = jvp(lambda x, y: ({"p": x * y, "c": agnostic.zeros(2, device=device)}, "aux"), (x, y),
                               (ones, agnostic.tensor(1.0, device=device)), has_aux=True)
    assert aux == "aux"
    _close(product["p"], 3.0 + X)
    _close(product["c"], numpy.zeros(2))
    with pytest.raises(RuntimeError, match="strict=True"):
        jvp(lambda x: agnostic.zeros(2, device=device), (x,), (ones,), strict=True)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda x: x, x, ones)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(lambda x: x, (x,), [ones])
    with pytest.raises(RuntimeError, match="different size"):
        jvp(lambda x: x, (x,), (agnostic.ones(3, device=device),))


def test_linearize_reuses_one_graph_for_many_tangents(device):
    x = agnostic.tensor(X, device=device)
    output, jvp_fn = linearize(lambda x: x.sin() * 2, x)
    _close(output, numpy.sin(X) * 2)
    for tangent in (numpy.ones(4), numpy.arange(4.0)):
        _close(jvp_fn(agnostic.tensor(tangent, device=device)), 2 * numpy.cos(X) * tangent)
    with pytest.raises(RuntimeError, match="tangent:0 with shape"):
        jvp_fn(agnostic.ones(3, device=device))


def test_forward_and_reverse_transforms_nest(device):
    x = agnostic.tensor(X, device=device)
    # grad of a jvp: d/dx [f'(x) . t] with f = sum(x^3), t = 1 gives 6x
    _close(grad(lambda x: jvp(lambda y: (y ** 3).sum(), (x,), (agnostic.ones(4, device=device),))[1])(x), 6 * X)
    # jvp of grad: the Hessian-vector product
    q = agnostic.tensor(Q, device=device)
    _, product = jvp(grad(lambda x: x @ q @ x), (x,), (agnostic.ones(4, device=device),))
    _close(product, (Q + Q.T) @ numpy.ones(4))


# ----- vmap ------------------------------------------------------------------------------------------------------
def test_vmap_maps_over_in_dims_and_places_out_dims(device):
    x = agnostic.tensor(A, device=device)  # 3 x 4
    _close(vmap(agnostic.sum)(x), A.sum(1))
    _close(vmap(agnostic.sum, in_dims=1)(x), A.sum(0))
    _close(vmap(lambda row: row * 2, out_dims=1)(x), (A * 2).T)
    _close(vmap(lambda row: row * 2, out_dims=-1)(x), (A * 2).T)
    _close(vmap(lambda row, v: row @ v, in_dims=(0, None))(x, agnostic.tensor(X, device=device)), A @ X)
    _close(vmap(lambda row, scale: row * scale, in_dims=(-1, None))(x, 3.0), (A * 3).T)
    _close(vmap(lambda row, power=1: row ** power)(x, power=2), A ** 2)
    _close(vmap(lambda x: x.sum(), out_dims=(0,))(x), A.sum(1))
    torch = pytest.importorskip("torch")
    expected = torch.vmap(lambda row, v: torch.outer(row, v), in_dims=(1, None), out_dims=2)(
        torch.tensor(A), torch.tensor(X))
    ours = vmap(lambda row, v: agnostic.outer(row, v), in_dims=(1, None), out_dims=2)(x, agnostic.tensor(X,
                                                                                                  device=device))
    assert tuple(ours.shape) == tuple(expected.shape)
    _close(ours, expected.numpy())


def test_vmap_takes_and_returns_pytrees(device):
    x = agnostic.tensor(A, device=device)
    inputs = {"a": x, "b": [x * 2, None]}
    result = vmap(lambda tree, k: {"sum": tree["a"] + tree["b"][0], "pair": (tree["a"][0], k)},
                  in_dims=({"a": 0, "b": [1, None]}, None), out_dims={"sum": 0, "pair": (0, None)})(
        {"a": x, "b": [(x * 2).T, None]}, "k")
    _close(result["sum"], A * 3)
    _close(result["pair"][0], A[:, 0])
    assert result["pair"][1] == "k"
    returned = vmap(lambda tree: tree, in_dims=({"a": 0, "b": [0, None]},), out_dims={"a": 1, "b": [0, None]})(inputs)
    _close(returned["a"], A.T)
    assert returned["b"][1] is None
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'NoneType'>"):
        vmap(lambda tree: tree, in_dims=({"a": 0, "b": [0, None]},))(inputs)


def test_nested_vmap_is_an_outer_map(device):
    x, y = agnostic.tensor(A[:, 0], device=device), agnostic.tensor(X, device=device)
    outer = vmap(vmap(agnostic.mul, in_dims=(None, 0)), in_dims=(0, None))(x, y)
    _close(outer, numpy.outer(A[:, 0], X))


def test_vmap_of_an_empty_batch_keeps_the_shape(device):
    result = vmap(lambda row: row * 2)(agnostic.zeros(0, 3, device=device))
    assert tuple(result.shape) == (0, 3) and result.device == device
    torch = pytest.importorskip("torch")
    assert tuple(torch.vmap(lambda row: row * 2)(torch.zeros(0, 3)).shape) == (0, 3)


def test_vmap_result_is_differentiable(device):
    x = agnostic.tensor(A, device=device, requires_grad=True)
    vmap(lambda row: (row ** 2).sum())(x).sum().backward()
    _close(x.grad, 2 * A)


def test_grad_of_vmap_and_jacrev_of_vmap(device):
    x = agnostic.tensor(A, device=device)
    _close(grad(lambda x: vmap(lambda row: (row ** 3).sum())(x).sum())(x), 3 * A ** 2)
    jacobian = jacrev(vmap(lambda row: row.sin()))(x)
    assert tuple(jacobian.shape) == (3, 4, 3, 4)
    _close(jacobian.reshape(12, 12), numpy.diag(numpy.cos(A).reshape(-1)))


@pytest.mark.parametrize("make_call, message", [
    (lambda x: vmap(agnostic.add, in_dims=(0, 0))(x, x[:2]), "same size in the mapped dimension, got sizes \\[3, 2\\]"),
    (lambda x: vmap(agnostic.add, in_dims=(0,))(x, x), "in_dims is not compatible with the structure of `inputs`"),
    (lambda x: vmap(agnostic.sum, in_dims=[0])(x), "expected `in_dims` to be int or a \\(potentially nested\\) tuple"),
    (lambda x: vmap(agnostic.sum, in_dims=(None,))(x), "Expected at least one Tensor to vmap over"),
    (lambda x: vmap(agnostic.sum, in_dims=(2,))(x), "expected in_dim to satisfy -2 <= in_dim < 2"),
    (lambda x: vmap(lambda x, s: x, in_dims=(0, 0))(x, 1.0), "We cannot vmap over non-Tensor arguments"),
    (lambda x: vmap(lambda: x)(), "got no inputs"),
    (lambda x: vmap(lambda row: 1.0)(x), "must only return Tensors, got type <class 'float'>"),
    (lambda x: vmap(lambda row: row, out_dims=(0, 1))(x), "out_dims is not compatible with the structure of `outputs`"),
    (lambda x: vmap(lambda row: row, out_dims="a")(x), "`out_dims` must be an int, None"),
    (lambda x: vmap(lambda row: row, out_dims=None)(x), "can not return a BatchedTensor when out_dim is None"),
    (lambda x: vmap(lambda row: row, chunk_size=0), "chunk_size should be None or greater than 0"),
])
def test_vmap_refuses_bad_calls_as_pytorch(device, make_call, message):
    with pytest.raises(ValueError, match=message):
        make_call(agnostic.tensor(A[:, :2].copy(), device=device))


def test_vmap_unbatched_output_with_out_dims_none(device):
    constant = agnostic.tensor(X, device=device)
    rows, same = vmap(lambda row: (row * 2, constant), out_dims=(0, None))(agnostic.tensor(A, device=device))
    assert same is constant
    _close(rows, A * 2)


def test_vmap_randomness_modes(device):
    ones = agnostic.ones(3, 2, device=device)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error mode"):
        vmap(lambda row: row * agnostic.rand(2, device=device))(ones)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda row: row, randomness="sometimes")
    same = vmap(lambda row: row * agnostic.rand(2, device=device), randomness="same")(ones)
    _close(same[1], _values(same[0]))
    _close(same[2], _values(same[0]))
    after_same = agnostic.rand(2, device=device)
    different = vmap(lambda row: row * agnostic.rand(2, device=device), randomness="different")(ones)
    assert not numpy.allclose(_values(different[0]), _values(different[1]))
    # 'same' draws once for the batch: the next draw continues from there
    agnostic.manual_seed(3)
    first = agnostic.rand(2, device=device)
    following = agnostic.rand(2, device=device)
    agnostic.manual_seed(3)
    drawn = vmap(lambda row: agnostic.rand(2, device=device), randomness="same")(ones)
    _close(drawn[2], _values(first))
    _close(agnostic.rand(2, device=device), _values(following))
    assert after_same.shape == (2,)


def test_vmap_of_grad_gives_per_sample_gradients(device):
    torch = pytest.importorskip("torch")
    agnostic.manual_seed(0)
    model = agnostic.nn.Sequential(agnostic.nn.Linear(4, 3), agnostic.nn.Tanh(), agnostic.nn.Linear(3, 1)).to(device)
    params = {name: value.detach() for name, value in model.named_parameters()}
    inputs = agnostic.tensor(RNG.standard_normal((5, 4)), dtype=agnostic.float32, device=device)
    targets = agnostic.tensor(RNG.standard_normal((5, 1)), dtype=agnostic.float32, device=device)

    def loss(params, sample, target):
        prediction = functional_call(model, params, (sample.unsqueeze(0),))
        return agnostic.nn.functional.mse_loss(prediction, target.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, inputs, targets)
    assert set(per_sample) == set(params) and tuple(per_sample["0.weight"].shape) == (5, 3, 4)
    for index in range(5):  # each row is the gradient of that sample's loss alone
        model.zero_grad()
        loss(dict(model.named_parameters()), inputs[index], targets[index]).backward()
        for name, parameter in model.named_parameters():
            _close(per_sample[name][index], _values(parameter.grad), rtol=1e-5, atol=1e-6)
    torch_model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 1))
    torch_params = {name: torch.tensor(_values(value)) for name, value in params.items()}

    def torch_loss(params, sample, target):
        prediction = torch.func.functional_call(torch_model, params, (sample.unsqueeze(0),))
        return torch.nn.functional.mse_loss(prediction, target.unsqueeze(0))

    expected = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))(
        torch_params, torch.tensor(_values(inputs)), torch.tensor(_values(targets)))
    for name in params:
        _close(per_sample[name], expected[name].numpy(), rtol=1e-5, atol=1e-6)


def test_model_ensembling_with_stack_module_state_and_vmap(device):
    agnostic.manual_seed(1)
    models = [agnostic.nn.Linear(4, 2).to(device) for _ in range(3)]
    params, buffers = stack_module_state(models)
    assert tuple(params["weight"].shape) == (3, 2, 4) and params["weight"].is_leaf and params["weight"].requires_grad
    assert buffers == {}
    data = agnostic.tensor(RNG.standard_normal((5, 4)), dtype=agnostic.float32, device=device)

    def call(params, buffers, data):
        return functional_call(models[0], (params, buffers), (data,))

    outputs = vmap(call, in_dims=(0, 0, None))(params, buffers, data)
    assert tuple(outputs.shape) == (3, 5, 2)
    for index, model in enumerate(models):
        _close(outputs[index], _values(model(data)), rtol=1e-5)
    outputs.sum().backward()  # the stacked parameters are trainable leaves
    _close(params["bias"].grad, numpy.full((3, 2), 5.0))


def test_stack_module_state_stacks_buffers_and_refuses_mixed_models(device):
    norms = [agnostic.nn.BatchNorm1d(2).to(device) for _ in range(2)]
    params, buffers = stack_module_state(norms)
    assert set(buffers) == {"running_mean", "running_var", "num_batches_tracked"}
    assert tuple(buffers["running_var"].shape) == (2, 2) and not buffers["running_var"].requires_grad
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        stack_module_state([agnostic.nn.Linear(2, 2), agnostic.nn.Bilinear(2, 2, 2)])
    with pytest.raises(RuntimeError, match="same training/eval mode"):
        stack_module_state([agnostic.nn.Linear(2, 2), agnostic.nn.Linear(2, 2).eval()])


def test_functional_call_takes_a_dict_or_a_tuple_of_dicts(device):
    layer = agnostic.nn.Linear(2, 1).to(device)
    weight, bias = agnostic.ones(1, 2, device=device), agnostic.tensor([0.5], device=device)
    x = agnostic.tensor([[1.0, 2.0]], device=device)
    _close(functional_call(layer, {"weight": weight, "bias": bias}, x), [[3.5]])
    _close(functional_call(layer, ({"weight": weight}, {"bias": bias}), (x,)), [[3.5]])
    assert layer.weight is not weight  # the module's own tensors are back
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(layer, ({"weight": weight}, {"weight": weight}), x)
    with pytest.raises(ValueError, match="Expected all elements of parameter_and_buffer_dicts to be dictionaries"):
        functional_call(layer, ({"weight": weight}, 3), x)
    with pytest.raises(ValueError, match="to be a dict, or a list/tuple of dicts"):
        functional_call(layer, 3, x)


def test_functionalize_debug_unwrap_and_batch_norm_replacement(device):
    def in_place(x):
        y = x.clone()
        y.mul_(2)
        return y

    x = agnostic.tensor(X, device=device)
    _close(functionalize(in_place)(x), 2 * X)
    with pytest.raises(RuntimeError, match="invalid argument for remove"):
        functionalize(in_place, remove="everything")
    assert debug_unwrap(x) is x
    model = agnostic.nn.Sequential(agnostic.nn.Linear(2, 2), agnostic.nn.BatchNorm1d(2))
    assert replace_all_batch_norm_modules_(model) is model
    assert model[1].running_mean is None and model[1].running_var is None and not model[1].track_running_stats


def test_vmap_and_func_are_reachable_as_in_pytorch():
    assert agnostic.func.vmap is vmap
    assert "vmap" in agnostic.func.__all__ and "grad" in agnostic.func.__all__
