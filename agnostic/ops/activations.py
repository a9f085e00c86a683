"""Activation ops that are Tensor methods too (hardshrink, prelu): declared here so that Tensor has them."""

from ._dispatch import check_same_device, check_tensor
from ._registry import composite, public_names
from .elementwise import ge, gt, le, logical_and, mul, where
from .reduction import sum


def _floating_only(name, input):
    check_tensor(name, input)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"{name}" not implemented for {input.dtype.name} tensors: it takes floating '
                                  f"point ones; convert with .float() first")


def _shrunk(input, lambd):
    """Where ``hardshrink`` gives 0: ``-lambd <= x <= lambd`` (NaN is outside, so it stays NaN)."""
    return logical_and(ge(input, -lambd), le(input, lambd))


@composite(gradients={"input": lambda grad, input, lambd: where(_shrunk(input, lambd), 0.0, grad)})
def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, 0 elsewhere, as ``torch.hardshrink`` (``torch.nn.functional.hardshrink``).

        >>> agnostic.hardshrink(agnostic.tensor([-1.0, 0.2, 0.7]))
        tensor([-1.0000,  0.0000,  0.7000])
        >>> import agnostic.nn.functional as F
        >>> F.hardshrink(agnostic.tensor([-2.0, 0.25, 1.0]))
        tensor([-2.,  0.,  1.])
    """
    _floating_only("hardshrink", input)
    return where(_shrunk(input, lambd), 0.0, input)


def _channel_weight(input, weight):
    """``weight`` shaped to broadcast over ``input``'s channels (dimension 1), after PyTorch's checks."""
    check_tensor("prelu", weight, 2, "weight")
    check_same_device(input, weight)
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.name} and {weight.dtype.name}; "
                           "convert the weight with .to(input.dtype)")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != weight.numel():
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
    if input.dim() > 1:
        return weight.reshape((1, -1) + (1,) * (input.dim() - 2))
    return weight.reshape(()) if weight.dim() == 1 and input.dim() == 0 else weight


def _prelu_weight_gradient(grad, input, weight):
    """``x * grad`` where ``x <= 0``, summed over everything but the channels (over everything for one weight)."""
    contribution = where(gt(input, 0), 0.0, mul(input, grad))
    if weight.numel() == 1 or input.dim() < 2:
        return sum(contribution).reshape(weight.shape)
    dims = [0] + list(range(2, input.dim()))
    return sum(contribution, dims).reshape(weight.shape)


@composite(gradients={
    "input": lambda grad, input, weight: where(gt(input, 0), grad, mul(_channel_weight(input, weight), grad)),
    "weight": _prelu_weight_gradient})
def prelu(input, weight):
    """``x`` where ``x > 0``, ``weight * x`` elsewhere, as ``torch.prelu`` (``torch.nn.functional.prelu``):
    ``weight`` has one element, or one per channel (dimension 1), and ``input``'s dtype.

        >>> agnostic.prelu(agnostic.tensor([-2.0, 3.0]), agnostic.tensor([0.25]))
        tensor([-0.5000,  3.0000])
        >>> agnostic.tensor([[-2.0, 1.0], [-4.0, -1.0]]).prelu(agnostic.tensor([0.5, 0.25]))
        tensor([[-1.0000,  1.0000],
                [-2.0000, -0.2500]])
    """
    _floating_only("prelu", input)
    return where(gt(input, 0), input, mul(_channel_weight(input, weight), input))


__all__ = public_names(globals())
