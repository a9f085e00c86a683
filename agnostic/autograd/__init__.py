"""agnostic.autograd: reverse-mode automatic differentiation of tensor code, as torch.autograd."""

from . import anomaly_mode
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .functions import Function, FunctionCtx, backward, grad
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .graph import Node
from .tracking import make_leaf
from .variable import Variable

__all__ = ["Function", "FunctionCtx", "GradcheckError", "Node", "backward", "detect_anomaly", "enable_grad", "grad",
           "gradcheck", "gradgradcheck", "inference_mode", "is_grad_enabled", "make_leaf", "no_grad",
           "set_detect_anomaly", "set_grad_enabled", "Variable"]
