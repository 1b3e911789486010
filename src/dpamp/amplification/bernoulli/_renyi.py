"""r_alpha(p) = R_alpha(Bern(p) || Bern(1-p)) of Imola & Chaudhuri 2021 (Def. 2) and its proven
inverse, in log space, and the argument checks shared by the public functions of this package.

r_alpha is evaluated through the log-odds t = log((1-p)/p), which keeps c = 0.01, d k = 60,
alpha = 500 finite; each value comes with a bound on its rounding error, so the closed-form
bounds and the searches built on it stay proofs.
"""
from __future__ import annotations

import math

import numpy as np

from ...core import validate as V


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------
def _check_params(c, d, k) -> tuple[float, int, int]:
    c = V.real("c", c, low=0.0, high=0.5, high_open=True)
    d = V.integer("d", d, low=1)
    k = V.integer("k", k, low=1)
    return c, d, k


def _check_eps_alpha(epsilon, alpha):
    eps = V.reals("epsilon", epsilon, low=0.0)
    a = V.orders(alpha)
    return np.broadcast_arrays(eps, a)


def _out(x: np.ndarray):
    return x if x.ndim else float(x)


# --------------------------------------------------------------------------------------------
# r_alpha and its inverse, in log-odds t = log((1-p)/p) >= 0
# --------------------------------------------------------------------------------------------
def _r_t(t, alpha):
    """r_alpha(p) with t = |log((1-p)/p)| (Imola & Chaudhuri 2021, Def. 2) and a bound on its
    rounding error.

    Bern(p) against Bern(1-p) has likelihood ratios e^{-t} (weight sigmoid(t)) and e^{t}
    (weight sigmoid(-t)), so with M = sigmoid(t) e^{-alpha t} + sigmoid(-t) e^{alpha t}:

        (alpha-1) r = log M = alpha t - softplus(t) + log1p(e^{-(2 alpha - 1) t})   (large M)
                    = log1p(sigmoid(t) expm1(-alpha t) + sigmoid(-t) expm1(alpha t)) (M < e),

    the second keeping full relative accuracy as t -> 0 or alpha -> 1. r(0) = 0, r(inf) = inf;
    alpha = inf gives r = t (the max-divergence)."""
    t, alpha = np.broadcast_arrays(np.asarray(t, float), np.asarray(alpha, float))
    tt = np.where(np.isinf(t), 1.0, t)
    inf_a = np.isinf(alpha)
    a = np.where(inf_a, 2.0, alpha)
    at = a * tt
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        sp = np.logaddexp(0.0, tt)
        big = at - sp + np.log1p(np.exp(-(2.0 * a - 1.0) * tt))
        err_big = 1e-15 * (1.0 + at + sp)
        u = np.exp(-np.logaddexp(0.0, -tt)) * np.expm1(-at)      # sigmoid(t) expm1(-a t)
        w = np.exp(-sp) * np.expm1(at)                            # sigmoid(-t) expm1(a t)
        small = np.log1p(u + w)
        err_small = 1e-15 * (np.abs(u) + np.abs(w)) * (4.0 + 2.0 * at)
    use_small = big < 1.0
    val = np.where(use_small, small, big)
    err = np.where(use_small, err_small, err_big)
    scale = a - 1.0
    r = np.where(inf_a, tt, val / scale)
    err = np.where(inf_a, 0.0, err / scale + 2e-16 * np.abs(r))
    r = np.where(t == 0, 0.0, np.where(np.isinf(t), np.inf, r))
    return r, np.where(np.isfinite(r), err, 0.0)


def _r_of_t(t, alpha):
    return _r_t(t, alpha)[0]


def _log_odds(p) -> np.ndarray:
    """t = |log((1-p)/p)| for p in [0, 1]."""
    p = np.asarray(p, float)
    q = np.minimum(p, 1.0 - p)
    with np.errstate(divide="ignore"):
        return np.log1p(-q) - np.log(q)


def r_alpha(p, alpha):
    """Binary symmetric Rényi divergence (Imola & Chaudhuri 2021, Def. 2), vectorised over p and
    alpha:

        r_alpha(p) = 1/(alpha-1) log(p^alpha (1-p)^{1-alpha} + (1-p)^alpha p^{1-alpha}),

    i.e. R_alpha(Bern(p) || Bern(1-p)). Symmetric about p = 1/2 where it is 0; +inf at p in
    {0, 1}; convex (Imola & Chaudhuri 2021, Lemma 1); alpha = inf gives |log((1-p)/p)|."""
    p = V.reals("p", p, low=0.0)
    if (p > 1).any():
        raise ValueError(f"p must be in [0, 1] (got {p[p > 1].ravel()[0]:g})")
    a = V.orders(alpha)
    return _out(_r_of_t(_log_odds(p), a))


def _feasible_log_odds(eps: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Largest t (to ~1e-15 relative) with r_alpha(sigmoid(-t)) <= eps *proven*.

    r(t) <= t always (R_alpha <= R_inf), so t = eps is feasible; and r(t) >= t - log 2/(alpha-1)
    (the log-sum is >= log sigmoid(t) + alpha t >= alpha t - t - log 2), so the root lies in
    [eps, eps + log 2/(alpha-1)]. Illinois (regula falsi) steps then bisection; ``lo`` only
    moves to points where r + (its rounding error bound) <= eps, so it stays feasible."""
    eps = np.asarray(eps, dtype=float)
    lo = eps.copy()
    fin = np.isfinite(alpha)
    hi = lo + np.where(fin, math.log(2.0) / np.where(fin, alpha - 1.0, 1.0), 0.0)
    # r_alpha >= KL(Bern(p) || Bern(1-p)) = t tanh(t/2), which exceeds eps at
    # t = sqrt(2 eps) + eps: a much tighter bracket when eps is small (correctness never
    # depends on hi: lo only moves to points proven feasible)
    hi = np.minimum(hi, np.sqrt(2.0 * eps) + eps)
    r_lo, e_lo = _r_t(lo, alpha)
    r_hi, e_hi = _r_t(hi, alpha)
    f_lo, f_hi = r_lo + e_lo - eps, r_hi + e_hi - eps
    # lo = eps is feasible by the inequality r(t) <= t even where rounding hides it; then the
    # bracket holds no provable improvement and the search stops there
    hi = np.where(f_lo >= 0, lo, hi)
    side = np.zeros(eps.shape)
    active = np.ones(eps.shape, dtype=bool)
    for it in range(40):
        # an element stops once its bracket is a few ulps wide or lo is within ~1e-15 of the
        # constraint; stopped elements are frozen, so a result never depends on its batch
        active &= ~((hi - lo <= 4e-16 * (1.0 + hi)) | (f_lo >= -2e-15 * (1.0 + eps)))
        if not active.any():
            break
        if it < 30:
            with np.errstate(divide="ignore", invalid="ignore"):
                mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            mid = np.where(np.isfinite(mid) & (mid > lo) & (mid < hi), mid, 0.5 * (lo + hi))
        else:
            mid = 0.5 * (lo + hi)
        r, err = _r_t(mid, alpha)
        f_mid = r + err - eps
        ok = f_mid <= 0
        up, down = active & ok, active & ~ok
        # Illinois: halve the stale end's value when the same end is kept twice
        f_hi = np.where(up & (side == 1), 0.5 * f_hi, f_hi)
        f_lo = np.where(down & (side == -1), 0.5 * f_lo, f_lo)
        lo, f_lo = np.where(up, mid, lo), np.where(up, f_mid, f_lo)
        hi, f_hi = np.where(down, mid, hi), np.where(down, f_mid, f_hi)
        side = np.where(up, 1, np.where(down, -1, side))
    _feasible_log_odds.iterations = it + 1  # type: ignore[attr-defined]  # a diagnostic
    return lo
