"""Log-space helpers and directed rounding shared by the profile modules.

Every profile is computed as log H so that tiny values (H = e^{-30000} at a large epsilon) keep
their meaning through the amplification formulas and the Thm 6 integral. Upper bounds are padded
up and lower bounds down after each closed-form evaluation; epsilons handed to a decreasing
function are rounded toward the pessimistic side (down for an upper bound, up for a lower bound).
"""
from __future__ import annotations

import math

import numpy as np

from ..core.logspace import log1mexp, log_expm1, logaddexp, logsumexp  # noqa: F401 (re-exported)

ULP = float(np.finfo(float).eps)
#: relative slack added to every padded value: covers a few roundings per formula evaluation
PAD = 1e-13


def pad_up(log_v, extra=0.0):
    """log of an upper bound on v when log_v has a small relative error: add PAD plus a few
    ulps of |log v| (the absolute error of a large log) plus ``extra`` (a formula-specific
    error bound); -inf (an exact zero) stays -inf. Never above 0 (H <= 1)."""
    log_v = np.asarray(log_v, dtype=float)
    with np.errstate(invalid="ignore"):
        out = log_v + (PAD + 8 * ULP * np.abs(log_v) + extra)
    out = np.where(np.isneginf(log_v), -np.inf, out)
    return np.minimum(out, 0.0)


def pad_down(log_v, extra=0.0):
    """log of a lower bound on v (see pad_up)."""
    log_v = np.asarray(log_v, dtype=float)
    with np.errstate(invalid="ignore"):
        out = log_v - (PAD + 8 * ULP * np.abs(log_v) + extra)
    return np.where(np.isneginf(log_v), -np.inf, np.minimum(out, 0.0))


def down(x):
    """x >= 0 rounded toward 0 by a relative 16 ulps (an epsilon fed to a decreasing profile
    when an upper bound is wanted)."""
    return np.asarray(x, dtype=float) * (1.0 - 16 * ULP)


def up(x):
    """x >= 0 rounded away from 0 by a relative 16 ulps (for lower bounds)."""
    return np.asarray(x, dtype=float) * (1.0 + 16 * ULP)


def to_linear_upper(log_v):
    """exp of a log upper bound for reporting: a finite log (a positive true value) never
    rounds to 0, it reports the smallest positive double instead; capped at 1."""
    log_v = np.asarray(log_v, dtype=float)
    with np.errstate(under="ignore"):
        v = np.exp(np.minimum(log_v, 0.0))
    # exp rounds to nearest; below the normal range that is an absolute error of up to half
    # the smallest subnormal, so one more step of it keeps the value an upper bound
    v = np.where(v < 2.2250738585072014e-308, v + 5e-324, v)
    out = np.where(np.isfinite(log_v), np.maximum(v, 5e-324), np.where(log_v > 0, 1.0, 0.0))
    return np.where(np.isnan(log_v), 1.0, out)  # never a nan: 1 is always an upper bound


def to_linear_lower(log_v):
    log_v = np.asarray(log_v, dtype=float)
    with np.errstate(under="ignore"):
        v = np.exp(np.minimum(log_v, 0.0))
    # (subnormal results round to nearest: one step down keeps a lower bound)
    v = np.where(v < 2.2250738585072014e-308, np.maximum(v - 5e-324, 0.0), v)
    return np.where(np.isnan(log_v), 0.0, v)


# --- the epsilon maps of advanced joint convexity (Balle et al. 2018, Thm 2)
# -----------------------------------

def ajc_epsilon(eps_prime, gamma: float):
    """Balle et al. 2018, Thm 2: alpha = 1 + (alpha' - 1)/gamma with alpha = e^eps, alpha' = e^eps':
    eps = log(1 + (e^{eps'} - 1)/gamma), written eps' - log gamma + log1p(-(1-gamma) e^{-eps'})
    for eps' > 1 so that nothing overflows. Exact value (callers round it)."""
    e = np.asarray(eps_prime, dtype=float)
    if gamma >= 1.0:
        return e.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        # log(1 + x / gamma) in log space: (e^{eps'} - 1) / gamma overflows for gamma < 1e-308
        small = logaddexp(0.0, log_expm1(np.minimum(e, 1.0)) - math.log(gamma))
        big = e - np.log(gamma) + np.log1p(-(1.0 - gamma) * np.exp(-np.maximum(e, 1.0)))
    return np.where(e <= 1.0, small, big)


def ajc_reverse(eps_prime, gamma: float, upper: bool = True):
    """The add order of a gamma-mixture pair: for any P, Q and A' = (1 - gamma) Q + gamma P,

        H_{a'}(Q || A') = c H_{a''}(Q || P),   c = 1 - a'(1 - gamma),  a'' = a' gamma / c,

    when c > 0, and 0 when a' >= 1/(1 - gamma) (integrate [(1 - a'(1-gamma)) q - a' gamma p]_+).
    a'' >= 1 whenever a' >= 1. Returns (log c, eps'' = log a''), log c = -inf where c <= 0.
    c cancels near the cut-off, so x = eps' + log(1 - gamma) is rounded first: down (c larger,
    eps'' smaller: both pessimistic) for an upper bound, up for a lower bound."""
    e = np.asarray(eps_prime, dtype=float)
    if gamma >= 1.0:
        return np.zeros_like(e), e.copy()
    l1g = math.log1p(-gamma)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = e + l1g
        slack = np.where(np.isfinite(e), 4 * ULP * (np.abs(e) + abs(l1g)), 0.0)
        x = x - slack if upper else x + slack
        log_c = log1mexp(np.minimum(x, 0.0))
        log_c = np.where(x >= 0.0, -np.inf, log_c)
        # a'' - 1 = (a' - 1)/c: log(1 + (e^{eps'} - 1)/c) has no cancellation, where
        # eps' + log gamma - log c lost ~u |log gamma| absolute (far more than eps'' at tiny eps')
        eps2 = logaddexp(0.0, log_expm1(e) - log_c)
    eps2 = np.where(np.isneginf(log_c), np.inf, np.maximum(eps2, 0.0))
    return log_c, eps2


def ajc_log_beta(eps_prime, gamma: float):
    """Balle et al. 2018, Thm 2: beta = alpha'/alpha = gamma / (1 - (1-gamma) e^{-eps'}); returns
    (log beta, log(1 - beta)), with 1 - beta = (1-gamma)(1 - e^{-eps'})/(1 - (1-gamma)e^{-eps'})."""
    e = np.asarray(eps_prime, dtype=float)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        # log(1 - (1-gamma) e^{-eps'}) = log(gamma e^{-eps'} + (1 - e^{-eps'})): a sum of two
        # nonnegative terms (the difference cancels for tiny gamma and eps')
        den = logaddexp(math.log(gamma) - e, log1mexp(-e))
        log_beta = np.log(gamma) - den
        log_1mb = np.log1p(-gamma) + log1mexp(-e) - den if gamma < 1 else np.full_like(e, -np.inf)
    log_1mb = np.where(e == 0, -np.inf, log_1mb)
    return np.minimum(log_beta, 0.0), log_1mb


#: fixed grid for monotone envelopes (see ``envelope``)
ENV_GRID = np.concatenate([[0.0], np.geomspace(1e-3, 200.0, 120)])


def envelope(log_bound, eps):
    """A bound B on a non-increasing function f (f(eps) <= B(eps) for all eps) also gives
    f(eps) <= B(g) for every g <= eps. Returns, at each requested eps, the minimum of B over the
    requested points and the points of ENV_GRID at or below it: still a bound, and
    non-increasing along the requested points. Used for the bounds that are not monotone by
    construction (Balle et al. 2018, Thm 14, black-box group profiles). ``log_bound`` maps an eps
    array to log bounds of the same shape."""
    eps = np.asarray(eps, dtype=float)
    pts = np.concatenate([eps.ravel(), ENV_GRID])
    vals = np.asarray(log_bound(pts), dtype=float)
    order = np.argsort(pts, kind="stable")
    run = np.minimum.accumulate(vals[order])
    out = np.empty_like(run)
    out[order] = run
    return out[: eps.size].reshape(eps.shape)
