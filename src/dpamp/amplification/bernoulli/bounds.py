"""Closed-form bounds on Post_{alpha,k}(epsilon) of Imola & Chaudhuri 2021 (Imola & Chaudhuri), each
O(d k) and certified (rounded so that the inequality is proven):

* ``upper_bound``: min(epsilon, d k r_alpha(c)), post-processing and Imola & Chaudhuri 2021, Thm 5
(eqs. 2, 6);
  ``asymptote`` is d k r_alpha(c) alone, the limit of Post as epsilon -> inf;
* ``lower_bound``: the two-point pair of eqs. 3-4 with r_alpha(p) = epsilon, evaluated in O(dk)
  by Imola & Chaudhuri 2021, Thm 4 (eqs. 5, 7); the paper conjectures it equals Post;
* ``hoeffding_lower_bound``: Imola & Chaudhuri 2021, Thm 2, r_alpha(p + K), K = exp(-2 (1/2 - c)^2 d
k).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import expit

from ...core import validate as V
from ._moments import _moment_d1
from ._renyi import (_check_eps_alpha, _check_params, _feasible_log_odds, _log_odds, _out,
                     _r_t)

__all__ = ["asymptote", "upper_bound", "lower_bound", "hoeffding_lower_bound"]

#: relative and absolute slack that covers floating-point rounding in the closed forms below
#: (measured below 1e-13 relative against 50-digit mpmath in tests/test_bernoulli.py)
_REL = 1e-12
_ABS = 1e-14


# --------------------------------------------------------------------------------------------
# upper bound: post-processing and Imola & Chaudhuri 2021, Thm 5
# --------------------------------------------------------------------------------------------
def asymptote(alpha, c, d, k=1):
    """d k r_alpha(c) = R_alpha(Bern_k({c}^d), Bern_k({1-c}^d)): the limit of Post as
    epsilon -> inf and an upper bound for every epsilon (Imola & Chaudhuri 2021, Thm 5, eqs. 2 and
    6). Rounded up."""
    c, d, k = _check_params(c, d, k)
    a = V.orders(alpha)
    return _out(_asymptote(a, c, d * k))


def _asymptote(alpha: np.ndarray, c: float, n: int) -> np.ndarray:
    if c == 0.0:
        return np.full(alpha.shape, np.inf)
    t = math.log1p(-c) - math.log(c)
    r, err = _r_t(np.full(alpha.shape, t), alpha)
    return n * (r + err) * (1.0 + _REL)


def upper_bound(epsilon, alpha, c, d, k=1):
    """Certified upper bound on Post_{alpha,k}(epsilon): min(epsilon, d k r_alpha(c)).

    epsilon: post-processing (data-processing inequality R_a(MP, MQ) <= R_a(P, Q)); d k r_alpha(c):
    Imola & Chaudhuri 2021, Thm 5 (quasi-convexity and additivity over the d k independent coins).
    Vectorised over epsilon and alpha (broadcast); alpha = inf gives the pure-DP version min(eps, d
    k log((1-c)/c))."""
    c, d, k = _check_params(c, d, k)
    eps, a = _check_eps_alpha(epsilon, alpha)
    return _out(np.minimum(eps, _asymptote(a, c, d * k)))


# --------------------------------------------------------------------------------------------
# lower bounds: Imola & Chaudhuri 2021, Thm 4 (eqs. 5, 7) and Thm 2
# --------------------------------------------------------------------------------------------
def _logs_of_t(t):
    """log p, log(1-p), p - (1-p) for p = sigmoid(-t), accurate for every t >= 0."""
    return -np.logaddexp(0.0, t), -np.logaddexp(0.0, -t), -np.tanh(0.5 * t)


def _lower(eps: np.ndarray, alpha: np.ndarray, c: float, n: int) -> np.ndarray:
    """Thm 4 value at the proven-feasible p (see ``lower_bound``), rounded down."""
    out = np.zeros(eps.shape)
    if c == 0.0:
        # no amplification: Bern_k of a corner of {0,1}^d is deterministic, Post = epsilon
        return eps.astype(float).copy()
    inf_e = np.isinf(eps)
    out[inf_e] = _thm4_at_zero(alpha[inf_e], c, n)
    pos = np.isfinite(eps) & (eps > 0)
    if pos.any():
        e, a = eps[pos], alpha[pos]
        t = _feasible_log_odds(e, a)
        # P = p 1[c] + (1-p) 1[1-c], Q = mirror, p = sigmoid(-t): x = p, y = 1-p; everything
        # from t, so p = e^{-t} far below the float range is still the pair we certified
        lp, lq, dxy = _logs_of_t(t)
        log_s, err = _moment_d1(lp, lq, lq, lp, dxy, a, c, n)
        fin = np.isfinite(a)
        val = np.where(fin, log_s / np.where(fin, a - 1.0, 1.0), log_s)
        err = np.where(fin, err / np.where(fin, a - 1.0, 1.0), err)
        val = val * (1.0 - _REL) - err
        # the pair is a post-processing of (P, Q), so the value is also <= epsilon
        out[pos] = np.clip(val, 0.0, e)
    return out


def _thm4_at_zero(alpha: np.ndarray, c: float, n: int) -> np.ndarray:
    """p = 0: R_alpha(Bern_k({c}^d), Bern_k({1-c}^d)) = d k r_alpha(c), rounded down."""
    t = math.log1p(-c) - math.log(c)
    r, err = _r_t(np.full(alpha.shape, t), alpha)
    return np.maximum(n * (r - err) * (1.0 - _REL) - _ABS, 0.0)


def lower_bound(epsilon, alpha, c, d, k=1):
    """Certified lower bound on Post_{alpha,k}(epsilon) (Imola & Chaudhuri 2021, eqs. 5, 7 via Thm
    4), O(d k).

    Take p in (0, 1/2] with r_alpha(p) = epsilon (solved in log-odds, rounded so that
    r_alpha(p) <= epsilon is proven), P = p 1[{c}^d] + (1-p) 1[{1-c}^d] and Q its mirror
    (eqs. 3-4); then R_alpha(P, Q) = R_alpha(Q, P) = r_alpha(p) <= epsilon and

        Post_{alpha,k}(epsilon) >= R_alpha(Bern_k(P), Bern_k(Q))
            = 1/(alpha-1) log sum_{j=0}^{dk} C(dk, j) P_j^alpha Q_j^{1-alpha}     (Thm 4)

    with P_j = p c^j (1-c)^{dk-j} + (1-p) c^{dk-j} (1-c)^j and Q_j its mirror. The paper
    conjectures equality. Depends on d, k only through d k. Vectorised over epsilon and alpha;
    epsilon = inf gives d k r_alpha(c); c = 0 gives epsilon (no amplification)."""
    c, d, k = _check_params(c, d, k)
    eps, a = _check_eps_alpha(epsilon, alpha)
    return _out(_lower(eps, a, c, d * k))


def hoeffding_lower_bound(epsilon, alpha, c, d, k=1):
    """Imola & Chaudhuri 2021, Thm 2: with p as in ``lower_bound`` and K = exp(-2 (1/2 - c)^2 d k),

        Post_{alpha,k}(epsilon) >= R_alpha(Bern_k(P), Bern_k(Q)) >= r_alpha(p + K)
        whenever p + K <= 1/2,

    and 0 (the trivial bound) where that condition fails. The paper states it for k = 1; since
    Bern_k({c}^d) = Bern({c}^{dk}) the same proof applies with d k coins. Weaker than
    ``lower_bound`` (it lower-bounds the same quantity) but explains when Post ~ epsilon."""
    c, d, k = _check_params(c, d, k)
    eps, a = _check_eps_alpha(epsilon, alpha)
    n = d * k
    out = np.zeros(eps.shape)
    if c == 0.0:
        return _out(eps.astype(float).copy())
    K = math.exp(-2.0 * (0.5 - c) ** 2 * n)
    pos = np.isfinite(eps) & (eps > 0)
    if pos.any():
        t = _feasible_log_odds(eps[pos], a[pos])
        # round p + K up: r_alpha decreases on (0, 1/2], so a larger argument is conservative
        p_up = np.nextafter(expit(-t) * (1.0 + 4e-15), 1.0)
        pk = np.nextafter((p_up + K) * (1.0 + 4e-16), 1.0)
        ok = pk <= 0.5
        tk = np.where(ok, _log_odds(np.minimum(pk, 0.5)), 0.0)
        # the error of the log-odds of pk is a few ulps of 1/pk relative to tk
        tk = np.maximum(tk * (1.0 - 1e-14) - 1e-15 * (1.0 + tk), 0.0)
        r, err = _r_t(tk, a[pos])
        val = r - err
        out[pos] = np.where(ok, np.clip(val * (1.0 - _REL), 0.0, None), 0.0)
    inf_e = np.isinf(eps)
    if inf_e.any():  # p = 0: r_alpha(K) when K <= 1/2
        if K <= 0.5:
            tk = _log_odds(np.nextafter(K, 1.0)) * (1.0 - 1e-14)
            r, err = _r_t(np.full(int(inf_e.sum()), tk), a[inf_e])
            out[inf_e] = np.maximum((r - err) * (1 - _REL), 0)
    return _out(out)
