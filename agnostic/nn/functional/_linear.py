"""linear: ``y = x W^T + b``."""

import agnostic


def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input`` (any leading dimensions)."""
    output = agnostic.matmul(input, weight.t())
    return output if bias is None else agnostic.add(output, bias)
