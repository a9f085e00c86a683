"""The hook-based spectral normalization (spectral_norm, remove_spectral_norm), as torch.nn.utils.spectral_norm."""

import agnostic
from ...autograd import no_grad
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..functional import normalize
from ..parameter import Parameter

__all__ = ["spectral_norm", "remove_spectral_norm"]


class _SpectralNormHook:
    """Sets ``module.<name> = <name>_orig / sigma`` before each forward (PyTorch's SpectralNorm): ``sigma`` from the
    buffers ``<name>_u`` and ``<name>_v``, which advance ``n_power_iterations`` power-method steps in training mode."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(agnostic.mv(weight_mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(normalize(agnostic.mv(weight_mat, v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()  # the buffers change in place at the next step; backward needs these
        sigma = agnostic.dot(u, agnostic.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm before each forward, through a forward pre-hook, as PyTorch's
    older API: the parameter moves to ``<name>_orig``, the power method's vectors are the buffers ``<name>_u`` and
    ``<name>_v`` (advanced ``n_power_iterations`` steps per forward in training mode, not in eval mode), and
    ``module.<name>`` is a plain attribute. ``dim`` is the output dim (default 0, 1 for ConvTranspose). Returns
    ``module``; the newer form is ``agnostic.nn.utils.parametrizations.spectral_norm``.

        >>> layer = agnostic.nn.utils.spectral_norm(agnostic.nn.Linear(4, 3))
        >>> sorted(layer.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
        >>> layer.weight_u.shape, layer.weight_v.shape
        (agnostic.Size([3]), agnostic.Size([4]))
    """
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
    hook = _SpectralNormHook(name, n_power_iterations, dim, eps)
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
    with no_grad():
        weight_mat = hook.reshape_weight_to_matrix(weight)
        h, w = weight_mat.size()
        u = normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=hook.eps)
        v = normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=hook.eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(hook)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo ``spectral_norm``: ``module.<name>`` becomes a parameter holding ``<name>_orig / sigma`` (sigma from the
    current ``u`` and ``v``, without another power step). Returns ``module``.

        >>> layer = agnostic.nn.utils.spectral_norm(agnostic.nn.Linear(4, 3))
        >>> sorted(agnostic.nn.utils.remove_spectral_norm(layer).state_dict())
        ['bias', 'weight']
    """
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, _SpectralNormHook) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")
