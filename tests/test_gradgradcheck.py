"""autograd.gradgradcheck: second derivatives (create_graph backward) checked against finite differences of the
first ones, with respect to the inputs and to the output gradients."""

import pytest

import agnostic


def _inputs(device, *values):
    return tuple(agnostic.tensor(v, dtype=agnostic.float64, device=device, requires_grad=True) for v in values)


@pytest.mark.parametrize("function", [
    lambda x, y: x.sin() * y,
    lambda x, y: (x.exp() @ y.tanh(), x.sigmoid()),
    lambda x, y: (x * x * y).sum(dim=0),
    lambda x, y: x.pow(3) / (1 + y * y),
])
def test_correct_second_derivatives_pass(device, function):
    x, y = _inputs(device, [[0.3, -0.7], [1.1, 0.2]], [[0.5, 2.0], [-1.0, 0.4]])
    assert agnostic.autograd.gradgradcheck(function, (x, y))
    assert agnostic.autograd.gradgradcheck(function, (x, y), gen_non_contig_grad_outputs=True)


def test_given_grad_outputs_are_checked_too(device):
    (x,) = _inputs(device, [0.5, 1.5])
    (v,) = _inputs(device, [2.0, -1.0])
    assert agnostic.autograd.gradgradcheck(lambda t: t.log() * t, (x,), (v,))


def test_wrong_double_backward_is_caught(device):
    class WrongSquare(agnostic.autograd.Function):
        """x ** 2 whose backward, 2 * x * grad, is written with x detached: right first, wrong second derivative."""

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t * t

        @staticmethod
        def backward(ctx, grad):
            (t,) = ctx.saved_tensors
            return 2 * t.detach() * grad

    (x,) = _inputs(device, [0.5, -1.5])
    assert agnostic.autograd.gradcheck(WrongSquare.apply, (x,))
    assert not agnostic.autograd.gradgradcheck(WrongSquare.apply, (x,), raise_exception=False)
    with pytest.raises(agnostic.autograd.GradcheckError, match="Jacobian mismatch"):
        agnostic.autograd.gradgradcheck(WrongSquare.apply, (x,))


def test_matches_pytorchs_verdicts():
    torch = pytest.importorskip("torch")
    for library in (agnostic, torch):
        x = library.tensor([0.3, 0.9], dtype=library.float64, requires_grad=True)
        assert library.autograd.gradgradcheck(lambda t: t.atan() * t.cosh(), (x,))


def test_unsupported_modes_say_so():
    (x,) = _inputs(None, [1.0])
    with pytest.raises(NotImplementedError, match="forward-mode"):
        agnostic.autograd.gradgradcheck(lambda t: t * t, (x,), check_fwd_over_rev=True)
    with pytest.raises(AssertionError, match="at least one of"):
        agnostic.autograd.gradgradcheck(lambda t: t * t, (x,), check_rev_over_rev=False)
