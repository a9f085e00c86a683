"""dropout: zero elements with probability p and scale the rest by 1/(1-p), using agnostic's RNG."""

import agnostic


def dropout(input, p=0.5, training=True, inplace=False):
    """In training, each element is zeroed with probability ``p`` (a Bernoulli mask from agnostic's generator, so
    seeding with ``agnostic.manual_seed`` reproduces it) and the survivors are scaled by ``1 / (1 - p)``; outside
    training, ``input`` is returned as is.

        >>> import agnostic.nn.functional as F
        >>> _ = agnostic.manual_seed(0)
        >>> F.dropout(agnostic.ones(6), p=0.5)
        tensor([2., 2., 0., 2., 2., 2.])
        >>> F.dropout(agnostic.ones(6), p=0.5, training=False)
        tensor([1., 1., 1., 1., 1., 1.])
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        scale = agnostic.zeros(input.shape, dtype=input.dtype, device=input.device)
    else:
        # input only lends its shape and dtype here; the probability stays a scalar at full precision
        scale = agnostic.bernoulli(input.detach(), 1.0 - p).div_(1.0 - p)
    return input.mul_(scale) if inplace else agnostic.mul(input, scale)
