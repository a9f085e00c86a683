"""What the optimizers written one parameter at a time share: argument checks and the gradient each update sees."""

from .optimizer import scalar


def check_hyperparameters(lr, eps=None, weight_decay=0, differentiable=False, **named):
    """PyTorch's constructor checks: a non-negative ``lr``, ``eps`` and ``weight_decay``; each ``betas``-style pair
    in ``[0, 1)`` and each other named value non-negative."""
    if not 0.0 <= scalar(lr):
        raise ValueError(f"Invalid learning rate: {lr}")
    if eps is not None and not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")
    for name, value in named.items():
        if name == "betas":
            for index, beta in enumerate(value):
                if not 0.0 <= beta < 1.0:
                    raise ValueError(f"Invalid beta parameter at index {index}: {beta}")
        elif not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")
    if differentiable:
        raise NotImplementedError("differentiable=True is not supported: agnostic optimizers update parameters "
                                  "in place, outside autograd")


def update_gradient(param, grad, group, decoupled=False):
    """The gradient an update uses: negated for ``maximize``; plus ``weight_decay * param`` (L2), or, when
    ``decoupled`` (AdamW-style), the parameter shrunk by ``lr * weight_decay`` in place instead."""
    if group.get("maximize"):
        grad = -grad
    weight_decay = scalar(group["weight_decay"])
    if weight_decay != 0:
        if decoupled:
            param.mul_(1 - scalar(group["lr"]) * weight_decay)
        else:
            grad = grad + weight_decay * param
    return grad
