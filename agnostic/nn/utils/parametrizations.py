"""Ready-made parametrizations (orthogonal, spectral_norm, weight_norm), as torch.nn.utils.parametrizations.

Each registers a Module through ``agnostic.nn.utils.parametrize.register_parametrization``, so the parametrized
module's layout (``parametrizations.<name>.original...``) and state_dict keys are PyTorch's.
"""

from enum import Enum, auto

import agnostic
from ...autograd import no_grad
from ..._tensor_classes import Tensor
from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..functional import normalize
from ..module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ----- orthogonal ---------------------------------------------------------------------------------------------------
def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    identity = agnostic.eye(k, dtype=Q.dtype, device=Q.device)
    return agnostic.allclose(Q.mH @ Q, identity, atol=10.0 * n * agnostic.finfo(Q.dtype).eps)


def _make_orthogonal(A):
    """The Q of ``A = QR`` (``A`` tall) with ``diag(R)`` real and non-negative: unique, so it equals PyTorch's
    geqrf/householder_product construction."""
    Q, R = agnostic.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_product(A, tau):
    """``torch.linalg.householder_product``: the first ``k`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H``
    with ``v_i`` column ``i`` of ``A`` below the diagonal and 1 on it; differentiable through agnostic's ops."""
    n, k = A.size(-2), A.size(-1)
    reflectors = A.tril(-1) + agnostic.eye(n, k, dtype=A.dtype, device=A.device)
    Q = agnostic.eye(n, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], n, n)
    for i in range(k):
        v = reflectors[..., :, i:i + 1]
        Q = Q - (Q @ v) * tau[..., i:i + 1].unsqueeze(-1) @ v.mH
    return Q[..., :, :k]


def _geqrf(A):
    """``torch.geqrf`` for real tall ``A`` (LAPACK's dgeqrf convention: R on and above the diagonal, the reflectors'
    tails below it, and their ``tau``), by Householder steps written with agnostic's ops."""
    A = A.clone()
    n, k = A.size(-2), A.size(-1)
    taus = []
    for j in range(k):
        alpha = A[..., j, j]
        tail = A[..., j + 1:, j]
        tail_norm = tail.norm(dim=-1) if j + 1 < n else agnostic.zeros_like(alpha)
        reflects = tail_norm != 0
        beta = -agnostic.where(alpha >= 0, 1.0, -1.0).to(A.dtype) * agnostic.hypot(alpha, tail_norm)
        safe_beta = agnostic.where(reflects, beta, agnostic.ones_like(beta))
        tau = agnostic.where(reflects, (safe_beta - alpha) / safe_beta, agnostic.zeros_like(alpha))
        scale = agnostic.where(reflects, 1 / (alpha - safe_beta), agnostic.zeros_like(alpha))
        if j + 1 < n:
            A[..., j + 1:, j] = tail * scale.unsqueeze(-1)
        A[..., j, j] = agnostic.where(reflects, beta, alpha)
        if j + 1 < k:
            v = agnostic.cat([agnostic.ones_like(alpha).unsqueeze(-1), A[..., j + 1:, j]], dim=-1).unsqueeze(-1)
            block = A[..., j:, j + 1:]
            A[..., j:, j + 1:] = block - tau.unsqueeze(-1).unsqueeze(-1) * (v @ (v.mT @ block))
        taus.append(tau)
    return A, agnostic.stack(taus, dim=-1)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """Maps an unconstrained matrix (or batch) to an orthogonal one (unitary for complex), as PyTorch's."""

    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = agnostic.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = agnostic.matrix_exp(A)
            else:
                identity = agnostic.eye(n, dtype=A.dtype, device=A.device)
                Q = agnostic.linalg.solve(agnostic.add(identity, A, alpha=-0.5), agnostic.add(identity, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                                 f"Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError("It is not possible to assign to the matrix exponential or the Cayley "
                                              "parametrizations when use_trivialization=False.")
                A, tau = _geqrf(Q)
                signs = A.diagonal(dim1=-2, dim2=-1).sign()
                signs = agnostic.where(tau == 0.0, -signs, signs)
                A = A.tril(-1) + A.triu(1) + agnostic.eye(n, k, dtype=A.dtype, device=A.device) * signs.unsqueeze(-2)
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                fill = agnostic.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(agnostic.cat([Q, fill], dim=-1))
            self.base = Q
            return (-agnostic.eye(Q_init.size(-2), Q_init.size(-1), dtype=Q_init.dtype, device=Q_init.device)
                    ).expand(Q_init.shape).clone()


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Make ``module.<name>`` (a matrix or a batch of matrices) orthogonal (unitary when complex): orthonormal columns
    when tall, orthonormal rows when wide, as PyTorch's. ``orthogonal_map`` is ``"matrix_exp"``, ``"cayley"`` or
    ``"householder"`` (default: ``"matrix_exp"`` for square or complex matrices, ``"householder"`` otherwise).
    With ``use_trivialization`` (default), the starting orthogonal matrix is kept in the buffer
    ``module.parametrizations.<name>[0].base`` and the initial value is the weight itself if orthogonal, else the Q
    of its QR decomposition. Returns ``module``.

        >>> layer = agnostic.nn.utils.parametrizations.orthogonal(agnostic.nn.Linear(3, 5))
        >>> Q = layer.weight
        >>> agnostic.allclose(Q.T @ Q, agnostic.eye(3), atol=1e-5)
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    parametrization = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, parametrization, unsafe=True)
    return module


# ----- weight_norm --------------------------------------------------------------------------------------------------
def _norm_except_dim(v, dim):
    """``torch.norm_except_dim(v, 2, dim)``: the 2-norm over every dim but ``dim`` (over all of them for -1), keeping
    ``v``'s number of dims."""
    if dim == -1:
        return v.norm()
    dim = dim % v.ndim if v.ndim else 0
    others = [d for d in range(v.ndim) if d != dim]
    return v.norm(2, others, keepdim=True) if others else v.abs()


def _weight_norm(v, g, dim):
    """``torch._weight_norm``: ``v * (g / ||v||)``, the norm over every dim but ``dim``."""
    return v * (g / _norm_except_dim(v, dim))


class _WeightNorm(Module):
    """``weight = g * v / ||v||``, the norm taken over every dim but ``dim`` (of the whole tensor for -1)."""

    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, self.dim), weight


def _add_load_state_dict_pre_hook(module, hook):
    """Run ``hook(state_dict, prefix)`` before ``module`` loads its own entries (PyTorch's
    ``_register_load_state_dict_pre_hook``), on the module's own parametrized class, so other modules are untouched."""
    cls = type(module)
    previous = cls.__dict__.get("_load_from_state_dict")

    def _load_from_state_dict(self, state_dict, prefix, *args):
        hook(state_dict, prefix)
        if previous is not None:
            return previous(self, state_dict, prefix, *args)
        return super(cls, self)._load_from_state_dict(state_dict, prefix, *args)

    cls._load_from_state_dict = _load_from_state_dict


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||`` (Salimans and Kingma's weight normalization), the norm
    over every dim but ``dim`` (over the whole tensor for None): ``g`` and ``v`` become
    ``module.parametrizations.<name>.original0`` and ``original1``, and ``module.<name>`` is computed from them on
    each access. State dicts saved with the older ``agnostic.nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) load
    into it. Returns ``module``.

        >>> layer = agnostic.nn.utils.parametrizations.weight_norm(agnostic.nn.Linear(3, 2))
        >>> layer.parametrizations.weight.original0.shape, layer.parametrizations.weight.original1.shape
        (agnostic.Size([2, 1]), agnostic.Size([2, 3]))
        >>> sorted(layer.state_dict())
        ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_old_layout(state_dict, prefix):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    _add_load_state_dict_pre_hook(module, load_old_layout)
    return module


# ----- spectral_norm ------------------------------------------------------------------------------------------------
class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of the weight (reshaped to a matrix with ``dim``
    first) estimated by power iteration on the buffers ``_u`` and ``_v``, which advance only in training mode."""

    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)  # start from a good estimate of the singular vectors

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(agnostic.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(agnostic.mv(weight_mat.mH, self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()  # the buffers change in place at the next access
        sigma = agnostic.vdot(u, agnostic.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm (largest singular value), as PyTorch's parametrization: the norm
    is estimated by ``n_power_iterations`` steps of the power method on each access in training mode (15 at
    registration), from the vectors kept in ``module.parametrizations.<name>[0]._u`` and ``_v``; eval mode reuses them.
    ``dim`` is the output dim (default 0, 1 for ConvTranspose). A 1-D tensor is just normalized. Returns ``module``.

        >>> _ = agnostic.manual_seed(0)  # the power method's estimate depends on its random start
        >>> layer = agnostic.nn.utils.parametrizations.spectral_norm(agnostic.nn.Linear(4, 3))
        >>> sigma = agnostic.linalg.matrix_norm(layer.weight, ord=2)
        >>> abs(sigma.item() - 1.0) < 1e-3
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{type(module).__name__}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
