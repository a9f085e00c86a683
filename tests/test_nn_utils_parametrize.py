"""agnostic.nn.utils.parametrize and parametrizations.orthogonal behave as PyTorch's."""

import copy
import pickle

import numpy as np
import pytest

import agnostic
import agnostic.nn.utils.parametrize as P
from agnostic.nn.utils import parametrizations


class Symmetric(agnostic.nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).mT

    def right_inverse(self, A):
        return A.triu()


class Double(agnostic.nn.Module):
    def forward(self, X):
        return 2 * X

    def right_inverse(self, Y):
        return Y / 2


class RankOne(agnostic.nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, Z):
        return Z[:, 0].clone(), agnostic.ones_like(Z[0])


class NoInverse(agnostic.nn.Module):
    def forward(self, X):
        return X + 1


def _linear(device, n_in=3, n_out=3, dtype=agnostic.float32):
    return agnostic.nn.Linear(n_in, n_out, device=device, dtype=dtype)


# ----- register_parametrization -------------------------------------------------------------------------------------
def test_register_swaps_class_and_computes_the_tensor_from_the_original(device):
    layer = _linear(device)
    initial = layer.weight.detach().clone()
    original_parameter = layer.weight
    P.register_parametrization(layer, "weight", Symmetric())
    assert type(layer).__name__ == "ParametrizedLinear" and isinstance(layer, agnostic.nn.Linear)
    assert P.type_before_parametrizations(layer) is agnostic.nn.Linear
    # right_inverse ran at registration, in place: the original is the same Parameter object
    assert layer.parametrizations.weight.original is original_parameter
    np.testing.assert_array_equal(layer.parametrizations.weight.original.numpy(force=True),
                                  np.triu(initial.numpy(force=True)))
    weight = layer.weight.numpy(force=True)
    np.testing.assert_array_equal(weight, weight.T)
    assert sorted(layer.state_dict()) == ["bias", "parametrizations.weight.original"]
    assert [name for name, _ in layer.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert "weight" not in layer._parameters
    assert layer.weight.device == device


def test_gradient_flows_through_the_parametrization_to_the_original(device):
    layer = P.register_parametrization(_linear(device), "weight", Symmetric())
    layer.weight.sum().backward()
    expected = np.array([[1.0, 2.0, 2.0], [0.0, 1.0, 2.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    np.testing.assert_array_equal(layer.parametrizations.weight.original.grad.numpy(force=True), expected)


def test_assignment_runs_right_inverse(device):
    layer = P.register_parametrization(_linear(device, 2, 1), "weight", Double())
    layer.weight = agnostic.tensor([[2.0, 4.0]], device=device)
    np.testing.assert_allclose(layer.parametrizations.weight.original.numpy(force=True), [[1.0, 2.0]])
    np.testing.assert_allclose(layer.weight.numpy(force=True), [[2.0, 4.0]])
    with pytest.raises(KeyError, match="already exists"):
        layer.weight = agnostic.nn.Parameter(agnostic.ones(1, 2, device=device))


def test_right_inverse_returning_a_tuple_gives_numbered_originals(device):
    layer = P.register_parametrization(_linear(device, 3, 4), "weight", RankOne())
    group = layer.parametrizations.weight
    assert not group.is_tensor and group.ntensors == 2
    assert group.original0.shape == (4,) and group.original1.shape == (3,)
    assert isinstance(group.original0, agnostic.nn.Parameter) and group.original0.requires_grad
    assert np.linalg.matrix_rank(layer.weight.numpy(force=True)) == 1
    assert sorted(layer.state_dict()) == ["bias", "parametrizations.weight.original0",
                                          "parametrizations.weight.original1"]
    with pytest.raises(ValueError, match="leave_parametrized"):
        P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    value = layer.weight.detach().clone()
    P.remove_parametrizations(layer, "weight")
    np.testing.assert_array_equal(layer.weight.numpy(force=True), value.numpy(force=True))
    assert isinstance(layer.weight, agnostic.nn.Parameter)


def test_parametrizations_chain_in_registration_order(device):
    layer = _linear(device, 2, 2)
    with agnostic.no_grad():
        layer.weight.copy_(agnostic.tensor([[1.0, 2.0], [3.0, 4.0]]))
    P.register_parametrization(layer, "weight", Double())
    P.register_parametrization(layer, "weight", Symmetric())
    assert len(layer.parametrizations.weight) == 2
    # original = W / 2; weight = Symmetric(Double(original)) = symmetrized W
    np.testing.assert_allclose(layer.weight.numpy(force=True), [[1.0, 2.0], [2.0, 4.0]])
    layer.weight = agnostic.tensor([[2.0, 6.0], [6.0, 8.0]], device=device)
    np.testing.assert_allclose(layer.parametrizations.weight.original.numpy(force=True), [[1.0, 3.0], [0.0, 4.0]])


def test_shape_or_dtype_change_needs_unsafe(device):
    class Widen(agnostic.nn.Module):
        def forward(self, X):
            return agnostic.cat([X, X], dim=0)

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(_linear(device), "weight", Widen())
    layer = P.register_parametrization(_linear(device), "weight", Widen(), unsafe=True)
    assert layer.weight.shape == (6, 3)

    class ToDouble(agnostic.nn.Module):
        def forward(self, X):
            return X.double()

    with pytest.raises(ValueError, match="dtype"):
        P.register_parametrization(_linear(device), "weight", ToDouble())


def test_unknown_name_is_refused(device):
    with pytest.raises(ValueError, match="no parameter named 'kernel', nor a buffer"):
        P.register_parametrization(_linear(device), "kernel", Double())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(_linear(device), "weight")


def test_assigning_without_right_inverse_raises(device):
    layer = P.register_parametrization(_linear(device), "weight", NoInverse())
    original = layer.parametrizations.weight.original.numpy(force=True)
    np.testing.assert_array_equal(layer.weight.numpy(force=True), original + 1)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        layer.weight = agnostic.zeros(3, 3, device=device)


def test_buffers_can_be_parametrized_and_stay_buffers(device):
    module = agnostic.nn.Module()
    module.register_buffer("scale", agnostic.tensor([1.0, 2.0], device=device))
    P.register_parametrization(module, "scale", Double())
    assert [name for name, _ in module.named_buffers()] == ["parametrizations.scale.original"]
    assert list(module.parameters()) == []
    np.testing.assert_allclose(module.scale.numpy(force=True), [1.0, 2.0])
    P.remove_parametrizations(module, "scale")
    assert "scale" in module._buffers and type(module) is agnostic.nn.Module


def test_remove_leaves_value_or_original_and_restores_class(device):
    layer = P.register_parametrization(_linear(device), "weight", Double())
    original = layer.parametrizations.weight.original
    original_values = original.detach().clone()
    P.remove_parametrizations(layer, "weight")
    assert type(layer) is agnostic.nn.Linear and not hasattr(layer, "parametrizations")
    assert layer.weight is original  # the same Parameter, now holding the parametrized value
    np.testing.assert_allclose(layer.weight.numpy(force=True), 2 * original_values.numpy(force=True))
    assert not P.is_parametrized(layer)

    layer = P.register_parametrization(_linear(device), "weight", Double())
    original_values = layer.parametrizations.weight.original.detach().clone()
    P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    np.testing.assert_array_equal(layer.weight.numpy(force=True), original_values.numpy(force=True))


def test_one_class_per_module_with_several_parametrized_tensors(device):
    layer = P.register_parametrization(_linear(device), "weight", Double())
    P.register_parametrization(layer, "bias", Double())
    assert P.is_parametrized(layer, "weight") and P.is_parametrized(layer, "bias")
    other = _linear(device)
    assert not hasattr(type(other), "weight")  # properties live on the generated class only
    P.remove_parametrizations(layer, "weight")
    assert type(layer).__name__ == "ParametrizedLinear" and not P.is_parametrized(layer, "weight")
    P.remove_parametrizations(layer, "bias")
    assert type(layer) is agnostic.nn.Linear


def test_cached_computes_once_inside_the_context(device):
    calls = []

    class Counted(agnostic.nn.Module):
        def forward(self, X):
            calls.append(1)
            return X * 1

    layer = P.register_parametrization(_linear(device), "weight", Counted(), unsafe=True)
    calls.clear()
    with P.cached():
        first = layer.weight
        with P.cached():
            assert layer.weight is first
        assert layer.weight is first
    assert len(calls) == 1
    assert layer.weight is not first and len(calls) == 2


def test_state_dict_round_trip_between_parametrized_modules(device):
    source = P.register_parametrization(_linear(device), "weight", Symmetric())
    target = P.register_parametrization(_linear(device), "weight", Symmetric())
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(target.weight.numpy(force=True), source.weight.numpy(force=True))


def test_deepcopy_works_and_pickle_is_refused(device):
    layer = P.register_parametrization(_linear(device), "weight", Double())
    replica = copy.deepcopy(layer)
    assert type(replica) is type(layer)
    np.testing.assert_array_equal(replica.weight.numpy(force=True), layer.weight.numpy(force=True))
    assert replica.parametrizations.weight.original is not layer.parametrizations.weight.original
    with pytest.raises(RuntimeError, match="state_dict"):
        pickle.dumps(layer)


def test_transfer_parametrizations_and_params_shares_the_originals(device):
    source = parametrizations.weight_norm(_linear(device))
    target = P.transfer_parametrizations_and_params(source, _linear(device))
    assert target.parametrizations.weight.original0 is source.parametrizations.weight.original0
    assert target.parametrizations.weight.original1 is source.parametrizations.weight.original1
    np.testing.assert_allclose(target.weight.numpy(force=True), source.weight.numpy(force=True))
    plain = _linear(device)
    assert P.transfer_parametrizations_and_params(plain, _linear(device)) is not plain


def test_matches_pytorch_layout_values_and_gradients(device):
    torch = pytest.importorskip("torch")

    class TorchSymmetric(torch.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).mT

        def right_inverse(self, A):
            return A.triu()

    layer = _linear(device, 3, 3)
    reference = torch.nn.Linear(3, 3)
    with torch.no_grad():
        reference.weight.copy_(torch.from_numpy(layer.weight.numpy(force=True)))
        reference.bias.copy_(torch.from_numpy(layer.bias.numpy(force=True)))
    P.register_parametrization(layer, "weight", Symmetric())
    torch.nn.utils.parametrize.register_parametrization(reference, "weight", TorchSymmetric())
    assert list(layer.state_dict()) == list(reference.state_dict())
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    layer(agnostic.tensor(x, device=device)).square().sum().backward()
    reference(torch.from_numpy(x)).square().sum().backward()
    np.testing.assert_allclose(layer.weight.numpy(force=True), reference.weight.numpy(force=True))
    np.testing.assert_allclose(layer.parametrizations.weight.original.grad.numpy(force=True),
                               reference.parametrizations.weight.original.grad.numpy(force=True), rtol=1e-5, atol=1e-5)


# ----- orthogonal ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, orthogonal_map, trivialization", [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, True), ((5, 3), None, False),
    ((4, 4), "cayley", True), ((5, 3), "matrix_exp", True), ((2, 5, 3), "householder", False),
    ((3, 5), "householder", False),
])
def test_orthogonal_gives_orthonormal_columns_or_rows(device, shape, orthogonal_map, trivialization):
    module = agnostic.nn.Module()
    module.weight = agnostic.nn.Parameter(agnostic.randn(*shape, dtype=agnostic.float64, device=device))
    parametrizations.orthogonal(module, orthogonal_map=orthogonal_map, use_trivialization=trivialization)
    Q = module.weight.numpy(force=True)
    small = min(shape[-2:])
    gram = Q.swapaxes(-1, -2) @ Q if shape[-2] >= shape[-1] else Q @ Q.swapaxes(-1, -2)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(small), gram.shape), atol=1e-10)
    assert ("base" in module.parametrizations.weight[0]._buffers) == trivialization


@pytest.mark.parametrize("shape, orthogonal_map, trivialization", [
    ((4, 4), None, True), ((5, 3), None, True), ((3, 5), None, False), ((4, 4), "cayley", True),
    ((5, 3), "matrix_exp", True), ((2, 5, 3), "householder", False),
])
def test_orthogonal_matches_pytorch(device, shape, orthogonal_map, trivialization):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(1).standard_normal(shape)
    module, reference = agnostic.nn.Module(), torch.nn.Module()
    module.weight = agnostic.nn.Parameter(agnostic.tensor(values, device=device))
    reference.weight = torch.nn.Parameter(torch.from_numpy(values.copy()))
    parametrizations.orthogonal(module, orthogonal_map=orthogonal_map, use_trivialization=trivialization)
    torch.nn.utils.parametrizations.orthogonal(reference, orthogonal_map=orthogonal_map,
                                               use_trivialization=trivialization)
    np.testing.assert_allclose(module.weight.numpy(force=True), reference.weight.numpy(force=True), atol=1e-10)
    np.testing.assert_allclose(module.parametrizations.weight.original.numpy(force=True),
                               reference.parametrizations.weight.original.numpy(force=True), atol=1e-10)
    assert list(module.state_dict()) == list(reference.state_dict())
    if trivialization:  # a wide or tall base is completed with random columns: take PyTorch's
        module.parametrizations.weight[0].base = agnostic.tensor(
            reference.parametrizations.weight[0].base.numpy(), device=device)
    update = np.random.default_rng(2).standard_normal(shape) * 0.1
    with agnostic.no_grad():
        module.parametrizations.weight.original.add_(agnostic.tensor(update, device=device))
    with torch.no_grad():
        reference.parametrizations.weight.original.add_(torch.from_numpy(update))
    module.weight.sum().backward()
    reference.weight.sum().backward()
    np.testing.assert_allclose(module.weight.numpy(force=True), reference.weight.numpy(force=True), atol=1e-10)
    np.testing.assert_allclose(module.parametrizations.weight.original.grad.numpy(force=True),
                               reference.parametrizations.weight.original.grad.numpy(force=True), atol=1e-8)


@pytest.mark.parametrize("orthogonal_map, shape", [("matrix_exp", (3, 3)), ("cayley", (3, 3)),
                                                   ("householder", (4, 2))])
def test_orthogonal_map_gradcheck(device, orthogonal_map, shape):
    module = agnostic.nn.Module()
    module.weight = agnostic.nn.Parameter(agnostic.randn(*shape, dtype=agnostic.float64, device=device))
    parametrizations.orthogonal(module, orthogonal_map=orthogonal_map, use_trivialization=False) \
        if orthogonal_map == "householder" else parametrizations.orthogonal(module, orthogonal_map=orthogonal_map)
    mapping = module.parametrizations.weight[0]
    start = module.parametrizations.weight.original.detach().clone()
    # householder reads only the sign of the diagonal (a step function): vary the entries below it
    diagonal = start - start.tril(-1)
    below = start.tril(-1).requires_grad_(True)
    assert agnostic.autograd.gradcheck(lambda lower: mapping(lower.tril(-1) + diagonal), (below,))


def test_orthogonal_assignment_and_errors(device):
    layer = parametrizations.orthogonal(agnostic.nn.Linear(3, 3, device=device, dtype=agnostic.float64))
    rotation = agnostic.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=agnostic.float64,
                               device=device)
    layer.weight = rotation
    np.testing.assert_allclose(layer.weight.numpy(force=True), rotation.numpy(force=True), atol=1e-12)
    with pytest.raises(ValueError, match="Expected a matrix"):
        parametrizations.orthogonal(agnostic.nn.Linear(3, 3, device=device), name="bias")
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        parametrizations.orthogonal(agnostic.nn.Linear(3, 3, device=device), orthogonal_map="qr")
    with pytest.raises(ValueError, match="no parameter or buffer"):
        parametrizations.orthogonal(agnostic.nn.Linear(3, 3, device=device), name="kernel")
