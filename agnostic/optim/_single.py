"""What the optimizers written one parameter at a time share: argument checks, the parameters each step updates
with their state, and the gradient each update sees."""

from .optimizer import advance, scalar, sparse_gradient_refusal, step_tensor, zeros_state


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


def parameters_to_update(optimizer, group, *buffers, sparse=False, **initial):
    """``(param, state, step)`` for each parameter of ``group`` that has a gradient, its ``step`` already advanced.
    A parameter seen for the first time gets a ``step`` counter, a zero tensor like it for each name in ``buffers``,
    and ``initial``'s other entries (name: a function making the value). A sparse gradient is refused with
    PyTorch's error unless the optimizer has a ``sparse`` update."""
    for param in group["params"]:
        if param.grad is None:
            continue
        if param.grad.is_sparse and not sparse:
            raise sparse_gradient_refusal(optimizer)
        state = optimizer.state[param]
        if len(state) == 0:
            state["step"] = step_tensor()
            for name, make in initial.items():
                state[name] = make()
            for name in buffers:
                state[name] = zeros_state(param)
        yield param, state, advance(state)
