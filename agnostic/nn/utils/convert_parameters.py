"""parameters_to_vector and vector_to_parameters, as torch.nn.utils'."""

from ... import _tensor
from ...ops.shape import cat

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(parameter, first_device):
    """The device of the first parameter; a TypeError (PyTorch's) for a parameter on another one."""
    if first_device is None:
        return parameter.device
    if parameter.device != first_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported. Move the "
                        f"parameters to one device first (got {first_device} and {parameter.device}).")
    return first_device


def _typename(value):
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def parameters_to_vector(parameters):
    """The ``parameters`` (an iterable of tensors on one device) flattened and concatenated into one vector.

        >>> layer = agnostic.nn.Linear(2, 1)
        >>> agnostic.nn.utils.parameters_to_vector(layer.parameters()).shape
        agnostic.Size([3])
    """
    device = None
    flat = []
    for parameter in parameters:
        device = _check_same_device(parameter, device)
        flat.append(parameter.view(-1))
    return cat(flat)


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of the vector ``vec`` into ``parameters`` (each takes its own number of elements):
    each parameter's ``data`` becomes a view of ``vec``, as in PyTorch.

        >>> layer = agnostic.nn.Linear(2, 1)
        >>> agnostic.nn.utils.vector_to_parameters(agnostic.tensor([1.0, 2.0, 3.0]), layer.parameters())
        >>> layer.weight.data, layer.bias.data
        (tensor([[1., 2.]]), tensor([3.]))
    """
    if not isinstance(vec, _tensor.TensorBase):
        raise TypeError(f"expected agnostic.Tensor, but got: {_typename(vec)}; convert it with agnostic.tensor()")
    device = None
    start = 0
    for parameter in parameters:
        device = _check_same_device(parameter, device)
        count = parameter.numel()
        parameter.data = vec[start:start + count].view_as(parameter).data
        start += count
