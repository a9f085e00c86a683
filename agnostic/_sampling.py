"""Poisson and binomial samples (``torch.poisson``, ``torch.binomial``), drawn from agnostic's Philox stream so that
every device gives the same numbers for the same seed."""

import math

from . import _dtypes
from ._tensor import TensorBase
import agnostic as _agnostic


def _uniform(shape, generator, device):
    """float64 uniforms in [0, 1) from the device's Philox stream (the same on every device)."""
    return _agnostic.rand(shape, generator=generator, dtype=_dtypes.float64, device=device)


def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (non-negative, floating), in ``input``'s dtype, as ``torch.poisson``.

    Every device draws the same numbers for the same seed: all draws are float64 uniforms from agnostic's Philox
    stream, taken in rounds of one per element (an element that has its sample ignores the rest of the round).
    Rates below 10 use multiplication of uniforms (Knuth: the count of factors before the product drops below
    ``exp(-rate)``); larger rates use Hörmann's transformed rejection with squeeze (PTRS, 1993), two uniforms a
    round, accepting by the exact log-probability. The results carry no gradient.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.poisson(agnostic.tensor([0.0, 1.0, 4.0, 100.0]))
        tensor([ 0.,  0.,  7., 93.])
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError(f'"poisson" is not implemented for {input.dtype}; use a floating-point rate tensor')
    rate = input.detach().to(_dtypes.float64)
    if bool((rate < 0).any()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    shape, device = rate.shape, rate.device
    result = _agnostic.zeros(shape, dtype=_dtypes.float64, device=device)
    small = rate < 10
    if bool(small.any()):
        # Knuth: multiply uniforms until the product falls to exp(-rate); the sample is the count before that.
        limit = _agnostic.exp(-rate)
        product = _agnostic.ones_like(rate)
        active = small & (rate > 0)
        while bool(active.any()):
            product = _agnostic.where(active, product * _uniform(shape, generator, device), product)
            more = active & (product > limit)
            result = _agnostic.where(more, result + 1, result)
            active = more
    large = ~small & ~_agnostic.isnan(rate)
    if bool(large.any()):
        result = _agnostic.where(large, _poisson_ptrs(rate.clamp(min=10), large, generator), result)
    result = _agnostic.where(_agnostic.isnan(rate), rate, result)
    return result.to(input.dtype)


def _poisson_ptrs(rate, pending, generator):
    """Hörmann's PTRS samples for ``rate >= 10`` where ``pending``."""
    shape, device = rate.shape, rate.device
    root, log_rate = rate.sqrt(), rate.log()
    b = 0.931 + 2.53 * root
    a = -0.059 + 0.02483 * b
    log_inverse_alpha = _agnostic.log(1.1239 + 1.1328 / (b - 3.4))
    v_r = 0.9277 - 3.6224 / (b - 2)
    result = _agnostic.zeros_like(rate)
    while bool(pending.any()):
        u = _uniform(shape, generator, device) - 0.5
        v = _uniform(shape, generator, device)
        us = 0.5 - u.abs()
        k = _agnostic.floor((2 * a / us + b) * u + rate + 0.43)
        quick = (us >= 0.07) & (v <= v_r)
        possible = (k >= 0) & ~((us < 0.013) & (v > us))
        safe_k = k.clamp(min=0)
        log_ratio = -rate + safe_k * log_rate - _agnostic.lgamma(safe_k + 1)
        accepted = quick | (possible & (v.log() + log_inverse_alpha - _agnostic.log(a / (us * us) + b) <= log_ratio))
        taken = pending & accepted
        result = _agnostic.where(taken, k, result)
        pending = pending & ~accepted
    return result


def binomial(count, prob, generator=None):
    """Binomial samples: successes in ``count`` trials of success probability ``prob`` (floating tensors,
    broadcast together), in ``count``'s dtype, as ``torch.binomial``.

    Every device draws the same numbers for the same seed: all draws are float64 uniforms from agnostic's Philox
    stream, in rounds of one per element. With ``p = min(prob, 1 - prob)`` (the sample is mirrored as
    ``count - k`` for ``prob > 0.5``): where ``count * p < 10``, inversion by geometric waiting times (PyTorch's
    algorithm: count the successes whose geometric gaps fit in ``count`` trials); elsewhere Hörmann's BTRS
    (transformed rejection with squeeze, 1993), accepting by the exact log-probability ratio. The results carry no
    gradient.

        >>> _ = agnostic.manual_seed(0)
        >>> agnostic.binomial(agnostic.tensor([10.0, 10.0, 1000.0]), agnostic.tensor([0.0, 1.0, 0.5]))
        tensor([  0.,  10., 510.])
    """
    for name, value in (("count", count), ("prob", prob)):
        if not isinstance(value, TensorBase) or not value.dtype.is_floating_point:
            described = value.dtype if isinstance(value, TensorBase) else type(value).__name__
            raise ValueError(f"binomial only supports floating-point dtypes for {name}, got: {described}")
    trials, probability = _agnostic.broadcast_tensors(count.detach().to(_dtypes.float64),
                                                      prob.detach().to(_dtypes.float64))
    trials, probability = trials.contiguous(), probability.contiguous()
    shape, device = trials.shape, trials.device
    mirrored = probability > 0.5
    p = _agnostic.where(mirrored, 1 - probability, probability).clamp(min=0.0)
    undefined = _agnostic.isnan(trials) | _agnostic.isnan(probability)
    trivial = (trials <= 0) | (p <= 0) | undefined
    result = _agnostic.zeros(shape, dtype=_dtypes.float64, device=device)
    mean = trials * p
    inversion = ~trivial & (mean < 10)
    if bool(inversion.any()):
        # Successes are the geometric gaps (trials to the next success) that fit in ``trials`` trials.
        log_q = _agnostic.log1p(-p.clamp(max=0.5))
        used = _agnostic.zeros_like(trials)
        active = inversion.clone()
        while bool(active.any()):
            gap = _agnostic.ceil(_uniform(shape, generator, device).log() / log_q)
            used = _agnostic.where(active, used + gap, used)
            fits = active & (used <= trials)
            result = _agnostic.where(fits, result + 1, result)
            active = fits
    rejection = ~trivial & ~(mean < 10)
    if bool(rejection.any()):
        safe = _agnostic.where(rejection, p, _agnostic.full_like(p, 0.5))
        safe_trials = _agnostic.where(rejection, trials, _agnostic.full_like(trials, 100.0))
        result = _agnostic.where(rejection, _binomial_btrs(safe_trials, safe, rejection, generator), result)
    result = _agnostic.where(mirrored & ~undefined, trials - result, result)
    result = _agnostic.where(undefined, _agnostic.full_like(result, math.nan), result)
    return result.to(count.dtype)


def _binomial_btrs(n, p, pending, generator):
    """Hörmann's BTRS samples for ``n * p >= 10`` and ``p <= 0.5`` where ``pending``."""
    shape, device = n.shape, n.device
    spread = (n * p * (1 - p)).sqrt()
    b = 1.15 + 2.53 * spread
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    v_r = 0.92 - 4.2 / b
    log_odds = _agnostic.log(p) - _agnostic.log1p(-p)
    log_alpha = _agnostic.log((2.83 + 5.1 / b) * spread)
    mode = _agnostic.floor((n + 1) * p)
    log_mode_probability = -_agnostic.lgamma(mode + 1) - _agnostic.lgamma(n - mode + 1) + mode * log_odds
    result = _agnostic.zeros_like(n)
    while bool(pending.any()):
        u = _uniform(shape, generator, device) - 0.5
        v = _uniform(shape, generator, device)
        us = 0.5 - u.abs()
        k = _agnostic.floor((2 * a / us + b) * u + c)
        inside = (k >= 0) & (k <= n)
        quick = inside & (us >= 0.07) & (v <= v_r)
        safe_k = k.clamp(min=0).minimum(n)
        log_ratio = (-_agnostic.lgamma(safe_k + 1) - _agnostic.lgamma(n - safe_k + 1) + safe_k * log_odds
                     - log_mode_probability)
        accepted = quick | (inside & (v.log() + log_alpha - _agnostic.log(a / (us * us) + b) <= log_ratio))
        result = _agnostic.where(pending & accepted, k, result)
        pending = pending & ~accepted
    return result


__all__ = ["poisson", "binomial"]
