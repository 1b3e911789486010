"""Amplification by Bernoulli sampling from a private parameter (paper 001, Imola & Chaudhuri).

A mechanism A releases theta in [c, 1-c]^d with Rényi-DP epsilon at order alpha; instead of theta
one releases k independent samples v_1..v_k of Bern(theta) (each v_i in {0,1}^d). The best RDP
guarantee of the samples that holds for *every* such A is

    Post_{alpha,k}(epsilon) = sup_{P,Q on {c,1-c}^d, R_a(P,Q), R_a(Q,P) <= epsilon}
                              R_a(Bern_k(P), Bern_k(Q))                     (001 Thms 1, 3)

and this module brackets it:

* ``upper_bound``: min(epsilon, d k r_alpha(c)), post-processing and 001 Thm 5 (eqs. 2, 6);
* ``lower_bound``: the two-point pair of eqs. 3-4 with r_alpha(p) = epsilon, evaluated in O(dk)
  by 001 Thm 4 (eqs. 5, 7); the paper conjectures it equals Post;
* ``hoeffding_lower_bound``: 001 Thm 2, r_alpha(p + K), K = exp(-2 (1/2 - c)^2 d k);
* ``exact``: Post itself, by a certified branch-and-bound (see :mod:`dpamp._bernoulli_search`).

Here r_alpha(p) = 1/(alpha-1) log(p^a (1-p)^(1-a) + (1-p)^a p^(1-a)) is the Rényi divergence of
Bern(p) from Bern(1-p) (001 Def. 2). Everything is evaluated in log space through the log-odds
t = log((1-p)/p), which keeps c = 0.01, d k = 60, alpha = 500 finite.

``BernoulliSampling(c, d, k)`` is the post-processing kernel: ``mech.post_process(kernel)``
returns a :class:`BernoulliSampled` mechanism whose RDP curve is the upper bound above applied
order by order (001 Thms 3, 5) and whose ``rdp_lower`` is the lower bound.
"""
from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
from scipy.special import expit, gammaln

from . import _validate as V
from .mechanisms.base import Mechanism, PostProcessing, check_mechanism
from .relations import Relation

__all__ = ["r_alpha", "asymptote", "upper_bound", "lower_bound", "hoeffding_lower_bound",
           "exact", "Certified", "EXACT_MAX_K_D1", "EXACT_MAX_D", "EXACT_MAX_OUTCOMES",
           "EXACT_DEFAULTS_D1", "EXACT_DEFAULTS_MULTI",
           "figure1_data", "Figure1Data", "plot_figure1",
           "BernoulliSampling", "BernoulliSampled", "BernoulliWitness", "WITNESS_OFFSETS"]

#: relative and absolute slack that covers floating-point rounding in the closed forms below
#: (measured below 1e-13 relative against 50-digit mpmath in tests/test_bernoulli.py)
_REL = 1e-12
_ABS = 1e-14
#: chunk size (elements x outcomes) for the O(dk) sums, to bound memory for large d k
_CHUNK = 1 << 21


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
    """r_alpha(p) with t = |log((1-p)/p)| (001 Def. 2) and a bound on its rounding error.

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
    """Binary symmetric Rényi divergence (001 Def. 2), vectorised over p and alpha:

        r_alpha(p) = 1/(alpha-1) log(p^alpha (1-p)^{1-alpha} + (1-p)^alpha p^{1-alpha}),

    i.e. R_alpha(Bern(p) || Bern(1-p)). Symmetric about p = 1/2 where it is 0; +inf at p in
    {0, 1}; convex (001 Lemma 1); alpha = inf gives |log((1-p)/p)|."""
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
    _feasible_log_odds.iterations = it + 1
    return lo


# --------------------------------------------------------------------------------------------
# bounds
# --------------------------------------------------------------------------------------------
def asymptote(alpha, c, d, k=1):
    """d k r_alpha(c) = R_alpha(Bern_k({c}^d), Bern_k({1-c}^d)): the limit of Post as
    epsilon -> inf and an upper bound for every epsilon (001 Thm 5, eqs. 2 and 6). Rounded up."""
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
    001 Thm 5 (quasi-convexity and additivity over the d k independent coins). Vectorised over
    epsilon and alpha (broadcast); alpha = inf gives the pure-DP version min(eps, d k log((1-c)/c))."""
    c, d, k = _check_params(c, d, k)
    eps, a = _check_eps_alpha(epsilon, alpha)
    return _out(np.minimum(eps, _asymptote(a, c, d * k)))


def _log_moment(log_w: np.ndarray, ell: np.ndarray, ell_err: np.ndarray, alpha: np.ndarray):
    """log sum_j w_j e^{alpha ell_j} over the last axis, for weights w_j = e^{log_w_j} that sum
    to 1 (a distribution Q) and log-likelihood ratios ell_j = log(P_j / Q_j) known to within
    ``ell_err``: the Rényi moment (alpha-1) R_alpha(P || Q) in log space. ``alpha`` has the
    shape of the result. Returns (value, bound on its rounding error).

    Large moments (value >= 1) use log-sum-exp; small ones use
    log1p(sum_j w_j expm1(alpha ell_j)), which keeps full relative accuracy as epsilon -> 0
    (the plain sum would lose everything to cancellation against 1). alpha = inf returns
    max_j ell_j over the support (the max-divergence)."""
    inf_a = np.isinf(alpha)
    a = np.where(inf_a, 2.0, alpha)[..., None]
    ok = np.isfinite(log_w)
    x = np.where(ok, a * ell, 0.0)
    # P has no mass there (ell = -inf): the term is exactly 0, with no error
    x_err = np.where(ok & np.isfinite(x), a * ell_err + 8e-16 * np.abs(x), 0.0)
    z = np.where(ok, log_w + x, -np.inf)
    m = np.max(z, axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(under="ignore", divide="ignore"):
        big = m_safe[..., 0] + np.log(np.exp(z - m_safe).sum(axis=-1))
    mag = np.where(ok, 3.0 * np.abs(log_w) * 8e-16 + x_err, 0.0).max(axis=-1)
    err_big = mag + 4e-15 * (1.0 + np.abs(big) + np.log(ell.shape[-1] + 1.0))
    # small branch: signed terms w_j expm1(x_j), computed through logs so nothing overflows
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        log_abs = np.where(x > 0, x + np.log(-np.expm1(-x)), np.log(-np.expm1(x)))
        terms = np.where(ok & (x != 0), np.sign(x) * np.exp(log_w + log_abs), 0.0)
        small = np.log1p(terms.sum(axis=-1))
        wex = np.where(ok, np.exp(np.minimum(log_w + x, 700.0)), 0.0)  # w_j e^{x_j}
        err_small = ((np.abs(terms) * 1e-15 * (8.0 + 4.0 * np.where(ok, np.abs(log_w), 0.0)))
                     + wex * x_err).sum(axis=-1) + 1e-300
    use_small = big < 1.0
    val = np.where(use_small, small, big)
    err = np.where(use_small, err_small, err_big)
    val = np.maximum(val, 0.0)  # a Rényi moment is >= 1
    if inf_a.any():
        emax = np.where(ok, ell, -np.inf).max(axis=-1)
        eerr = np.where(ok, ell_err, 0.0).max(axis=-1)
        val = np.where(inf_a, np.maximum(emax, 0.0), val)
        err = np.where(inf_a, eerr + 8e-16 * np.abs(emax) + 1e-300, err)
    return val, err


def _binomial_tables(c: float, n: int):
    """For Bern_n of a point mass at c or 1-c, and j = number of ones among the n coins:
    log C(n, j) + h_j and log a_j, log b_j <= 0 with max(a_j, b_j) = 1 such that

        C(n,j) [x c^j (1-c)^{n-j} + (1-x) c^{n-j} (1-c)^j] = e^{log C + h_j} (x a_j + (1-x) b_j)

    (the errata's form of 001 Alg. 2's x_j), which never under- or overflows."""
    s = math.log1p(-c) - math.log(c)
    j = np.arange(n + 1, dtype=float)
    log_c_nj = gammaln(n + 1.0) - gammaln(j + 1.0) - gammaln(n - j + 1.0)
    m = (n - 2.0 * j) * s
    log_a = np.minimum(m, 0.0)
    log_b = -np.maximum(m, 0.0)
    h = n * math.log1p(-c) - np.minimum(j, n - j) * s
    return log_c_nj + h, log_a, log_b


def _log_ratio(lnum, lden, z):
    """ell = lnum - lden with its error bound; log1p(z) (z = num/den - 1 computed without
    cancellation) where the ratio is near 1, the difference of logs elsewhere."""
    with np.errstate(invalid="ignore", divide="ignore"):
        diff = lnum - lden          # nan where both masses vanish; the caller masks those
        near = np.abs(diff) < 0.5
        ell = np.where(near, np.log1p(np.where(near, z, 0.0)), diff)
        err = np.where(near, 8e-16 * np.abs(ell),
                       4e-16 * (np.abs(lnum) + np.abs(lden)) + 8e-16 * np.abs(ell))
    return ell, err


#: the identity channel on the two corners: R_alpha(P || Q) of the parameter distributions
_PAIR_TABLES = (np.zeros(2), np.array([0.0, -np.inf]), np.array([-np.inf, 0.0]))


def _moment_d1(lx, l1x, ly, l1y, dxy, alpha, c: float, n: int, tables=None):
    """Log Rényi moment (alpha-1) R_alpha(Bern_n(P), Bern_n(Q)) for P = x 1[c] + (1-x) 1[1-c],
    Q = y 1[c] + (1-y) 1[1-c] (001 Alg. 2 with the errata's x_j, y_j), given log x, log(1-x),
    log y, log(1-y) and dxy = x - y (each passed so that it can be computed without
    cancellation or underflow). Broadcasts its inputs; the outcome axis (n+1 counts of ones)
    is appended and summed in chunks. Returns (value, error bound).

    ``tables=_PAIR_TABLES`` gives R_alpha(P || Q) itself (the constraint of Alg. 2); a zero
    mass of Q where P has mass then gives +inf."""
    log_cw, log_a, log_b = _binomial_tables(c, n) if tables is None else tables
    a, b = np.exp(log_a), np.exp(log_b)
    arrs = np.broadcast_arrays(*(np.asarray(v, float) for v in (lx, l1x, ly, l1y, dxy, alpha)))
    shape = arrs[0].shape
    flat = [v.ravel() for v in arrs]
    val = np.empty(flat[0].shape)
    err = np.empty(flat[0].shape)
    step = max(1, _CHUNK // (n + 1))
    for i0 in range(0, flat[0].size, step):
        sl = slice(i0, i0 + step)
        lx_, l1x_, ly_, l1y_, d_ = (v[sl, None] for v in flat[:5])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            lnum = np.logaddexp(lx_ + log_a, l1x_ + log_b)
            lden = np.logaddexp(ly_ + log_a, l1y_ + log_b)
            z = d_ * (a - b) * np.exp(-lden)
        ell, ell_err = _log_ratio(lnum, lden, z)
        v, e = _log_moment(log_cw + lden, ell, ell_err, flat[5][sl])
        # P has mass where Q has none: R_alpha = inf (only possible for the pair tables)
        bad = (np.isneginf(lden) & np.isfinite(lnum)).any(axis=-1)
        val[sl], err[sl] = np.where(bad, np.inf, v), np.where(bad, 0.0, e)
    return val.reshape(shape), err.reshape(shape)


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
    """Certified lower bound on Post_{alpha,k}(epsilon) (001 eqs. 5, 7 via Thm 4), O(d k).

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
    """001 Thm 2: with p as in ``lower_bound`` and K = exp(-2 (1/2 - c)^2 d k),

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


# --------------------------------------------------------------------------------------------
# the exact value (certified)
# --------------------------------------------------------------------------------------------
class Certified(NamedTuple):
    """A certified bracket on Post_{alpha,k}(epsilon): ``value`` is attained by a proven-feasible
    pair (so value <= Post) and ``upper`` >= Post is proven; upper - value <= the tolerance
    unless the search budget ran out (then it is still a proven bracket, see ``certified``)."""

    value: np.ndarray | float
    upper: np.ndarray | float
    certified: np.ndarray | bool


#: sizes for which ``exact`` runs: d = 1 with k <= 2000 (certified 2-variable search); d = 2, 3
#: with (k+1)^d <= 64 outcomes of the sufficient statistic (certified search over supports of
#: at most 4 corners, :mod:`dpamp._bernoulli_global`; its cost per cell grows with the outcomes)
EXACT_MAX_K_D1 = 2000
EXACT_MAX_D = 3
EXACT_MAX_OUTCOMES = 64
#: defaults of ``exact`` for d = 1 and for d = 2, 3 (rtol, max_cells per (epsilon, alpha)):
#: the d > 1 search is a 6-dimensional branch-and-bound, so its defaults aim at seconds
EXACT_DEFAULTS_D1 = (1e-6, 200_000)
EXACT_DEFAULTS_MULTI = (2e-2, 6000)


def exact(epsilon, alpha, c, d, k=1, *, rtol=None, atol=1e-12, max_cells=None, starts=8):
    """Post_{alpha,k}(epsilon) itself (001 Thms 1, 3; Algs 2, 3), as a proven bracket.

    Returns ``Certified(value, upper, certified)``, vectorised over epsilon and alpha
    (broadcast): ``value`` = R_alpha(Bern_k(P), Bern_k(Q)) for a pair (P, Q) of corner
    distributions *proven* to satisfy R_alpha(P, Q), R_alpha(Q, P) <= epsilon, hence
    lower_bound <= value <= Post; ``upper`` >= Post is proven; ``certified`` marks where
    upper - value <= atol + rtol * value, i.e. where Post is known to that tolerance.

    * d = 1 (k <= 2000): certified branch-and-bound over the two masses (x, y) of 001 Alg. 2
      (convex interpolation with tangent cuts and a dual LP bound on each cell, monotone
      constraint propagation; see :mod:`dpamp._bernoulli_search`). Defaults rtol = 1e-6,
      max_cells = 200000.
    * d = 2, 3 with (k+1)^d <= 64: Post is the largest of three certified searches
      (:mod:`dpamp._bernoulli_global`): an optimal pair can be taken on at most 4 corners, with
      both Rényi constraints active on 4 and one on 3; pairs on 2 corners are the d = 1 problem
      with d k samples (searched as above); supports of 3 and 4 corners, one per symmetry
      orbit of the cube, by a branch-and-bound in 4 and 6 dimensions with LP-duality bounds on
      each cell. ``value`` is the best of the pair of eqs. 3-4, a multi-start local search
      (``starts`` random starts, every result re-verified) and the two-corner search. Defaults
      rtol = 2e-2, max_cells = 6000 (4-13 s per (epsilon, alpha); docs/bernoulli.md lists
      what they certify: mostly large epsilon; a larger max_cells shrinks the bracket further,
      e.g. 30000 certifies most d = 2 instances measured there, d = 3 needs ~10^5). Instances
      with (alpha-1) epsilon > 600 are
      not searched (their upper end is ``upper_bound``).

    ``max_cells`` caps the cells per (epsilon, alpha); when it runs out the bracket is still
    proven, only wider, and ``certified`` is False there. Larger sizes raise ValueError
    (``lower_bound`` and ``upper_bound`` bracket Post for every d and k). Orders must be
    finite."""
    c, d, k = _check_params(c, d, k)
    if d == 1 and k > EXACT_MAX_K_D1:
        raise ValueError(f"exact Post for d = 1 needs k <= {EXACT_MAX_K_D1} (got k={k}); "
                         "lower_bound and upper_bound give a certified bracket for any k")
    if d > 1 and (d > EXACT_MAX_D or (k + 1) ** d > EXACT_MAX_OUTCOMES):
        raise ValueError(
            f"exact Post for d > 1 is searched only for d <= {EXACT_MAX_D} and (k+1)^d <= "
            f"{EXACT_MAX_OUTCOMES} outcomes (d = 2: k <= 7; d = 3: k <= 3; got d={d}, k={k}); "
            "lower_bound and upper_bound give a certified bracket for any d and k")
    d_rtol, d_cells = EXACT_DEFAULTS_D1 if d == 1 else EXACT_DEFAULTS_MULTI
    rtol = d_rtol if rtol is None else V.real("rtol", rtol, low=1e-12, high=1.0)
    atol = V.real("atol", atol, low=0.0, high=1.0)
    max_cells = d_cells if max_cells is None else V.integer("max_cells", max_cells, low=1000)
    starts = V.integer("starts", starts, low=0)
    eps, a = _check_eps_alpha(epsilon, alpha)
    if np.isinf(a).any():
        raise ValueError("alpha must be finite for exact (got inf); lower_bound and "
                         "upper_bound accept alpha = inf")
    n = d * k
    low = np.array(_lower(eps, a, c, n), dtype=float)
    up = np.array(np.minimum(eps, _asymptote(a, c, n)), dtype=float)
    value, upper = low.copy(), up.copy()
    # search only where the closed-form bracket is wider than the tolerance
    todo = (c > 0.0) & np.isfinite(eps) & (eps > 0) & (up - low > atol + rtol * low)
    if todo.any():
        if d == 1:
            from ._bernoulli_search import certify_d1
            e, al = eps[todo], a[todo]
            scale = al - 1.0
            best0 = low[todo] * scale * (1.0 - 4e-16)
            cap = up[todo] * scale * (1.0 + 4e-16)
            best, top, _ = certify_d1(e, al, c, k, best0, cap, rtol, atol, max_cells)
            value[todo] = np.maximum(best / scale * (1.0 - 4e-16), low[todo])
            upper[todo] = np.minimum(top / scale * (1.0 + 4e-16), up[todo])
        else:
            for i in zip(*np.nonzero(todo)) if todo.ndim else [()]:
                value[i], upper[i] = _exact_multi(float(eps[i]), float(a[i]), c, d, k,
                                                  float(low[i]), float(up[i]), rtol, atol,
                                                  max_cells, starts)
    # (a little slack for the final roundings of the search's own stopping test)
    certified = upper - value <= (atol + rtol * value) * (1.0 + 1e-9) + 1e-15 * upper
    return Certified(_out(value), _out(upper), certified if certified.ndim else bool(certified))


def _exact_multi(eps, a, c, d, k, low, up, rtol, atol, max_cells, starts):
    """(value, upper) of Post for d = 2, 3 at one (epsilon, alpha): see :func:`exact` and
    :mod:`dpamp._bernoulli_global` (module docstring (2) for why the three searches cover
    every candidate maximiser)."""
    from ._bernoulli_global import MAX_E, SupportSearch, search_supports, support_orbits
    from ._bernoulli_search import certify_d1, local_search, statistic_channel
    scale = a - 1.0
    # lower end: proven-feasible pairs only
    best = max(low, local_search(eps, a, c, d, k, starts) / scale * (1.0 - 4e-16))
    if scale * eps > MAX_E:
        return best, up
    # supports of 2 corners: the d = 1 problem with d k samples (its own cell budget)
    e1, a1 = np.array([eps]), np.array([a])
    b1, t1, _ = certify_d1(e1, a1, c, d * k, np.array([best * scale * (1.0 - 4e-16)]),
                           np.array([up * scale * (1.0 + 4e-16)]), rtol, atol,
                           max(max_cells, 20_000))
    best = max(best, float(b1[0]) / scale * (1.0 - 4e-16))
    top = float(t1[0]) / scale * (1.0 + 4e-16)
    # supports of 3 and 4 corners, one per symmetry orbit, under one shared budget
    logw = statistic_channel(c, d, k)
    searches = [SupportSearch(eps, a, logw[:, list(sub)], chain, best, rtol, atol, up)
                for m in (3, 4) for sub, chain in support_orbits(d, m)]
    search_supports(searches, max_cells)
    top = max([top] + [s.upper for s in searches])
    return best, min(max(top, best), up)


# --------------------------------------------------------------------------------------------
# Figure 1 of paper 001
# --------------------------------------------------------------------------------------------
class Figure1Data(NamedTuple):
    """The curves of 001 Figure 1 (and Figs. 2-3) against epsilon: ``post`` (exact Post, the
    proven value of ``exact``; None when not computed), ``post_upper`` (its certified upper
    bound), ``lower`` (eqs. 5/7), ``asymptote`` (d k r_alpha(c), eqs. 2/6) and
    ``post_processing`` (epsilon itself)."""

    epsilon: np.ndarray
    post: np.ndarray | None
    post_upper: np.ndarray | None
    lower: np.ndarray
    asymptote: np.ndarray
    post_processing: np.ndarray
    c: float
    d: int
    k: int
    alpha: float


def figure1_data(c=0.1, d=1, alpha=50.0, k=1, epsilon=None, *, with_exact=None):
    """Data of 001 Figure 1: Post_{alpha,k}(epsilon), the lower bound (5)/(7), the asymptote
    d k r_alpha(c) (2)/(6) and the post-processing bound epsilon, on an epsilon grid
    (default 100 points on (0, 10]). ``with_exact``: compute Post (default: only for d = 1,
    where it is certified; the paper also omits it for larger d)."""
    c, d, k = _check_params(c, d, k)
    a = float(V.orders(alpha))
    eps = np.linspace(0.1, 10.0, 100) if epsilon is None else V.reals("epsilon", epsilon, low=0)
    eps = np.asarray(eps, dtype=float)
    if with_exact is None:
        with_exact = d == 1
    post = post_upper = None
    if with_exact:
        res = exact(eps, a, c, d, k)
        post, post_upper = np.asarray(res.value, float), np.asarray(res.upper, float)
    lower = np.asarray(lower_bound(eps, a, c, d, k), float)
    asym = np.full(eps.shape, asymptote(a, c, d, k))
    return Figure1Data(eps, post, post_upper, lower, asym, eps.copy(), c, d, k, a)


def plot_figure1(path_or_ax=None, c=0.1, d=1, alpha=50.0, k=1, epsilon=None, *,
                 with_exact=None):
    """Draw 001 Figure 1 (Post, lower bound, asymptote and post-processing bound against
    epsilon). ``path_or_ax``: a matplotlib Axes to draw on, a file path to save a PNG/PDF/SVG
    to, or None for a new figure. Returns the Axes. Needs matplotlib (extra ``plot``)."""
    try:
        from matplotlib.figure import Figure
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("plot_figure1 needs matplotlib: pip install 'dpamp[plot]'") from err
    data = figure1_data(c, d, alpha, k, epsilon, with_exact=with_exact)
    save_to = None
    if path_or_ax is None or isinstance(path_or_ax, (str, bytes)) or hasattr(path_or_ax,
                                                                              "__fspath__"):
        save_to = path_or_ax
        fig = Figure(figsize=(5.0, 3.6))
        ax = fig.subplots()
    else:
        ax = path_or_ax
    e = data.epsilon
    if data.post is not None:
        ax.plot(e, data.post, color="C0", lw=2, label=r"Post$_{\alpha,k}(\varepsilon)$")
    ax.plot(e, data.lower, color="C1", ls="--", label="lower bound (LB)")
    ax.plot(e, data.post_processing, color="C2", ls=":", label="post-processing (PPI)")
    ax.plot(e, data.asymptote, color="C3", ls="-.", label=r"asymptote $dk\,r_\alpha(c)$")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylabel("Rényi DP of the samples")
    ax.set_title(f"c = {data.c:g}, d = {data.d}, k = {data.k}, α = {data.alpha:g}")
    ax.set_ylim(0, max(float(e.max()), float(data.asymptote[0])) * 1.05
                if np.isfinite(data.asymptote[0]) else float(e.max()) * 1.05)
    ax.legend(fontsize="small")
    if save_to is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(save_to, dpi=120)
    return ax


# --------------------------------------------------------------------------------------------
# the post-processing kernel and the post-processed mechanism
# --------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BernoulliSampling:
    """Release k independent Bern(theta) samples instead of theta in [c, 1-c]^d (paper 001).

    ``mech.post_process(BernoulliSampling(c, d, k))`` gives a :class:`BernoulliSampled`
    mechanism whose RDP curve maps the base curve order by order to the amplified one. The
    base mechanism must output theta in [c, 1-c]^d (e.g. project onto it; projection is
    post-processing, so the base RDP curve still applies). ``exact_search=True`` tightens the
    curve with the certified search of :func:`exact` (d = 1 only; slower)."""

    c: float
    d: int
    k: int = 1
    exact_search: bool = False

    def __post_init__(self):
        c, d, k = _check_params(self.c, self.d, self.k)
        object.__setattr__(self, "c", c)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "k", k)
        if not isinstance(self.exact_search, (bool, np.bool_)):
            raise ValueError(f"exact_search must be True or False (got {self.exact_search!r})")
        if self.exact_search and (d != 1 or k > EXACT_MAX_K_D1):
            raise ValueError("exact_search needs d = 1 and k <= "
                             f"{EXACT_MAX_K_D1} (got d={d}, k={k}); the default curve "
                             "(001 Thm 5 bound) works for any d and k")

    def apply(self, mechanism):
        check_mechanism(mechanism)
        return BernoulliSampled(mechanism, self)

    def upper(self, epsilon, alpha):
        """Certified upper bound on Post at (epsilon, alpha) (see :func:`upper_bound`)."""
        return upper_bound(epsilon, alpha, self.c, self.d, self.k)

    def lower(self, epsilon, alpha):
        """Certified lower bound on Post at (epsilon, alpha) (see :func:`lower_bound`)."""
        return lower_bound(epsilon, alpha, self.c, self.d, self.k)


@dataclasses.dataclass(frozen=True)
class BernoulliSampled(PostProcessing):
    """``base`` followed by Bernoulli sampling (001): RDP epsilon'(alpha) = an upper bound on
    Post_{alpha,k}(epsilon_base(alpha)), order by order:

        epsilon'(alpha) = min(epsilon_base(alpha), d k r_alpha(c))          (001 Thm 5)

    or, with ``kernel.exact_search``, the certified upper end of :func:`exact` (d = 1). At
    alpha = inf this is min(epsilon_base(inf), d k log((1-c)/c)): Bernoulli sampling turns any
    base mechanism into a pure-DP one. The relation is the base mechanism's."""

    base: Mechanism
    kernel: BernoulliSampling
    _cache: dict = dataclasses.field(default_factory=dict, compare=False, hash=False,
                                     repr=False)

    def _rdp(self, alpha):
        alpha = np.asarray(alpha, dtype=float)
        kn = self.kernel
        eps = np.asarray(self.base._rdp(alpha), dtype=float)
        out = np.minimum(eps, _asymptote(alpha, kn.c, kn.d * kn.k))
        if kn.exact_search:
            fin = np.isfinite(alpha)
            if fin.any():
                key = (alpha[fin].tobytes(), eps[fin].tobytes())
                up = self._cache.get(key)
                if up is None:
                    up = np.asarray(exact(eps[fin], alpha[fin], kn.c, kn.d, kn.k).upper, float)
                    self._cache[key] = up
                out[fin] = np.minimum(out[fin], up)
        return out

    def rdp_lower(self, alpha):
        """lower_bound(epsilon_base(alpha)) (001 eqs. 5/7): no bound derived from the base
        mechanism's RDP curve alone can be below it, since a [c, 1-c]^d-valued mechanism with
        that Rényi divergence attains it (001 Thm 3 remark). Uses the base's own lower curve,
        or its curve when that is attained (``tight_rdp``); None otherwise."""
        a = V.orders(alpha)
        base_low = self.base.rdp_lower(a)
        if base_low is None:
            if not self.base.tight_rdp:
                return None
            base_low = self.base._rdp(a.astype(float))
        kn = self.kernel
        return lower_bound(np.asarray(base_low, float), a, kn.c, kn.d, kn.k)

    def witnesses(self):
        """Threshold witnesses (see :class:`BernoulliWitness`), one per threshold of
        :data:`WITNESS_OFFSETS`, when the base mechanism is a Gaussian, Laplace or randomized
        response whose worst pair is attained (``tight_rdp``); else ()."""
        kn = self.kernel
        return tuple(BernoulliWitness(*test, kn.c, kn.d * kn.k, self.base.relation)
                     for test in _attained_tests(self.base))

    def __repr__(self):
        return f"{self.base!r}.post_process({self.kernel!r})"


#: thresholds of the witnesses: the midpoint of the attained pair plus these multiples of the
#: base's noise scale (the other side gives the same epsilon(delta) with the orders swapped).
#: The best depends on the query; measured (NOTES.md): 0.5 was best for most plans, the
#: midpoint for a 10000-step one, 1-1.5 for single steps. Each costs one PLD run of the
#: witness (2-500 ms), so only two are tried
WITNESS_OFFSETS = (0.0, 0.5)


def _attained_tests(base):
    """For each threshold t (``WITNESS_OFFSETS``), the logs (P[S], P[not S], Q[S], Q[not S])
    of S = {output > t} on the attained worst pair (P, Q) of a tight base mechanism:

    * Gaussian, P = N(Delta, sigma^2), Q = N(0, sigma^2), t = Delta/2 + u sigma:
      P[S] = Phi((Delta - t)/sigma), Q[S] = Phi(-t/sigma) (log_ndtr, both tails accurate);
    * Laplace, P = Lap(Delta, b), Q = Lap(0, b), t = Delta/2 + u b: with the tail
      T(x) = e^{-x/b}/2 for x >= 0, P[S] = 1 - T(t - Delta) if t < Delta else T(t - Delta),
      Q[S] = T(t);
    * randomized response: S = {the reported bit is 1}, P[S] = e^eps0/(1+e^eps0) = Q[not S]
      (one test only);

    () for other mechanisms."""
    from scipy.special import log_ndtr
    from .mechanisms.gaussian import Gaussian
    from .mechanisms.laplace import Laplace
    from .mechanisms.randomized_response import RandomizedResponse
    if not getattr(base, "tight_rdp", False):
        return ()
    out = []
    if isinstance(base, Gaussian):
        mu = base.sensitivity / base.sigma
        for u in WITNESS_OFFSETS:
            t = mu / 2 + u                                  # in units of sigma
            out.append((float(log_ndtr(mu - t)), float(log_ndtr(t - mu)),
                        float(log_ndtr(-t)), float(log_ndtr(t))))
    elif isinstance(base, Laplace):
        e0 = base.eps0                                      # Delta / b
        half = math.log(0.5)

        def log_sf(x):       # log P[Lap(0, 1) > x], log P[Lap(0, 1) <= x]
            if x >= 0:
                lt = half - x
                return lt, math.log1p(-math.exp(lt))
            lt = half + x
            return math.log1p(-math.exp(lt)), lt

        for u in WITNESS_OFFSETS:
            t = e0 / 2 + u                                  # in units of b
            out.append(log_sf(t - e0) + log_sf(t))
    elif isinstance(base, RandomizedResponse):
        e0 = base.eps0
        l1 = -math.log1p(math.exp(-e0))
        l0 = -e0 - math.log1p(math.exp(-e0))
        out.append((l1, l0, l0, l1))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class BernoulliWitness(Mechanism):
    """One pair of outputs that ``base.post_process(BernoulliSampling(c, d, k))`` attains, known
    exactly (a *witness*, ``Mechanism.witnesses``): the post-processing that maps the base's
    output to the corner (1-c, ..., 1-c) when it lies beyond a threshold and to (c, ..., c)
    otherwise is one of those the guarantee covers, so its epsilon(delta) lower-bounds the true
    value. On the two neighbours the corner (1-c)^d has probability p = e^lp and q = e^lq (and
    the other corner e^lp_c = 1 - p, e^lq_c = 1 - q, each computed without cancellation); the
    n = d k samples' number of ones j is a sufficient statistic (both corners are constant
    across coordinates):

        A_j = C(n, j) [p (1-c)^j c^(n-j) + (1-p) c^j (1-c)^(n-j)],
        B_j = C(n, j) [q (1-c)^j c^(n-j) + (1-q) c^j (1-c)^(n-j)],

    a pair of n + 1 atoms (losses log A_j / B_j, in log space); symmetric (B_j = A_(n-j)) when
    q = 1 - p."""

    lp: float
    lp_c: float
    lq: float
    lq_c: float
    c: float
    n: int
    relation: Relation
    source = "001 Thm 3 remark: a threshold post-processing attained (witness)"

    def _rdp(self, alpha):
        """The pair's own Rényi divergence, the larger of both orders:
        (1/(alpha-1)) log sum_j A_j^alpha B_j^(1-alpha), max_j |log A_j / B_j| at alpha = inf."""
        from scipy.special import logsumexp
        la, lb = self._log_masses()
        a = np.asarray(alpha, dtype=float)
        fin = np.isfinite(a)
        af = np.where(fin, a, 2.0)[..., None]
        with np.errstate(over="ignore"):
            out = np.maximum(logsumexp(af * la + (1.0 - af) * lb, axis=-1),
                             logsumexp(af * lb + (1.0 - af) * la, axis=-1)) / (af[..., 0] - 1.0)
        return np.where(fin, np.maximum(out, 0.0), float(np.max(np.abs(la - lb))))

    def _log_masses(self):
        """log A_j and log B_j, j = 0..n (see the class docstring)."""
        n, c = self.n, self.c
        j = np.arange(n + 1, dtype=float)
        lcomb = gammaln(n + 1.0) - gammaln(j + 1.0) - gammaln(n - j + 1.0)
        hi = j * math.log1p(-c) + (n - j) * math.log(c)     # log (1-c)^j c^(n-j)
        lo = j * math.log(c) + (n - j) * math.log1p(-c)
        return (lcomb + np.logaddexp(self.lp + hi, self.lp_c + lo),
                lcomb + np.logaddexp(self.lq + hi, self.lq_c + lo))

    @property
    def rel_err(self) -> float:
        """Bound on the relative rounding error of each atom's mass: a few roundings (each a
        relative error of the log's magnitude) of logs that reach n |log c| + the largest
        |log| of the four threshold probabilities."""
        big = (self.n * (abs(math.log(self.c)) + abs(math.log1p(-self.c)))
               + max(abs(self.lp), abs(self.lp_c), abs(self.lq), abs(self.lq_c)) + 10.0)
        return 64 * 2.3e-16 * big

    def exact_loss(self):
        from .pld import loss as L
        la, lb = self._log_masses()
        loss = la - lb
        pa, pb = np.exp(la), np.exp(lb)
        mean = float(np.sum(pa * loss))
        var = float(np.sum(pa * (loss - mean) ** 2))
        sym = self.lq == self.lp_c and self.lq_c == self.lp
        return L.LossDistribution(loss, pa, pb, symmetric=sym, mean=mean, var=var,
                                  name=f"bernoulli_witness(n={self.n}, c={self.c:g})")
