"""agnostic.autograd: reverse-mode automatic differentiation of tensor code, as torch.autograd."""

from .functions import Function, FunctionCtx, backward, grad
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck
from .graph import Node
from .tracking import make_leaf
from .variable import Variable

__all__ = ["Function", "FunctionCtx", "GradcheckError", "Node", "backward", "enable_grad", "grad",
           "gradcheck", "inference_mode", "is_grad_enabled", "make_leaf", "no_grad", "set_grad_enabled", "Variable"]
