"""``Variable``: PyTorch 0.3's wrapper of a tensor for autograd, kept (as in PyTorch) so that old code runs."""


def Variable(data, requires_grad=False, volatile=False):
    """``data`` itself, with ``requires_grad`` set when asked: tensors record autograd history on their own, so
    ``Variable`` wraps nothing (PyTorch has kept it as such since 0.4).

        >>> v = agnostic.autograd.Variable(agnostic.ones(2), requires_grad=True)
        >>> isinstance(v, agnostic.Tensor), v.requires_grad
        (True, True)
    """
    if requires_grad:
        data.requires_grad_(True)
    return data
