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
from .mechanisms.base import Mechanism, check_mechanism
from .relations import Relation

__all__ = ["r_alpha", "asymptote", "upper_bound", "lower_bound", "hoeffding_lower_bound",
           "exact", "Certified", "EXACT_LIMITS", "figure1_data", "Figure1Data", "plot_figure1",
           "BernoulliSampling", "BernoulliSampled"]

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
def _r_of_t(t: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """r_alpha(p) with t = |log((1-p)/p)| (001 Def. 2), overflow-free:

        r = t + [log sigmoid(t) + log1p(e^{-(2 alpha - 1) t})] / (alpha - 1),

    the same curve as binary randomized response with pure epsilon t; r(0) = 0, r(inf) = inf,
    and alpha = inf gives r = t (the max-divergence)."""
    t, alpha = np.broadcast_arrays(np.asarray(t, float), np.asarray(alpha, float))
    a = np.where(np.isinf(alpha), 2.0, alpha)
    tt = np.where(np.isinf(t), 1.0, t)
    with np.errstate(over="ignore", under="ignore"):
        body = (-np.logaddexp(0.0, -tt) + np.log1p(np.exp(-(2.0 * a - 1.0) * tt))) / (a - 1.0)
    out = np.where(np.isinf(alpha), tt, tt + body)
    out = np.where(t == 0, 0.0, out)
    return np.where(np.isinf(t), np.inf, out)


def _r_err(t: np.ndarray) -> np.ndarray:
    """Bound on the floating-point error of ``_r_of_t`` (a few ulps of t and of the bracket)."""
    return 1e-15 * (1.0 + t)


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
    """Largest t (up to ~1e-15 relative) with r_alpha(sigmoid(-t)) <= eps *proven*.

    r(t) <= t always (R_alpha <= R_inf), so t = eps is feasible; and r(t) >= t - log 2/(alpha-1)
    (the bracket term is >= log(1/2)), so the root lies in [eps, eps + log 2/(alpha-1)]. Bisection
    keeps ``lo`` feasible after accounting for the rounding error of r (``_r_err``)."""
    lo = eps.astype(float).copy()
    fin = np.isfinite(alpha)
    width = np.where(fin, math.log(2.0) / np.where(fin, alpha - 1.0, 1.0), 0.0)
    hi = lo + width
    for _ in range(64):
        mid = 0.5 * (lo + hi)
        ok = _r_of_t(mid, alpha) + _r_err(mid) <= eps
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
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
    r = _r_of_t(np.full(alpha.shape, t), alpha)
    return n * (r + _r_err(t)) * (1.0 + _REL) + _ABS


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
    x_err = np.where(ok, a * ell_err + 8e-16 * np.abs(x), 0.0)
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
    r = _r_of_t(np.full(alpha.shape, t), alpha)
    return np.maximum(n * (r - _r_err(t)) * (1.0 - _REL) - _ABS, 0.0)


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
        val = _r_of_t(tk, a[pos]) - _r_err(tk)
        out[pos] = np.where(ok, np.clip(val * (1.0 - _REL), 0.0, None), 0.0)
    inf_e = np.isinf(eps)
    if inf_e.any():  # p = 0: r_alpha(K) when K <= 1/2
        if K <= 0.5:
            tk = _log_odds(np.nextafter(K, 1.0)) * (1.0 - 1e-14)
            out[inf_e] = np.maximum(
                (_r_of_t(np.full(int(inf_e.sum()), tk), a[inf_e]) - _r_err(tk)) * (1 - _REL), 0)
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
#: with (k+1)^d <= 1000 outcomes (multi-start local search, a proven lower bound only)
EXACT_MAX_K_D1 = 2000
EXACT_MAX_D = 3
EXACT_MAX_OUTCOMES = 1000


def exact(epsilon, alpha, c, d, k=1, *, rtol=1e-6, atol=1e-10, max_cells=200_000, starts=8):
    """Post_{alpha,k}(epsilon) itself (001 Thms 1, 3; Algs 2, 3), as a proven bracket.

    Returns ``Certified(value, upper, certified)``, vectorised over epsilon and alpha
    (broadcast): ``value`` = R_alpha(Bern_k(P), Bern_k(Q)) for a pair (P, Q) of corner
    distributions *proven* to satisfy R_alpha(P, Q), R_alpha(Q, P) <= epsilon, hence
    lower_bound <= value <= Post; ``upper`` >= Post is proven; ``certified`` marks where
    upper - value <= atol + rtol * value, i.e. where Post is known to that tolerance.

    * d = 1 (k <= 2000): certified branch-and-bound over the two masses (x, y) of 001 Alg. 2
      (convex interpolation with tangent cuts and a dual LP bound on each cell, monotone
      constraint propagation; see :mod:`dpamp._bernoulli_search`). ``max_cells`` caps the
      cells per (epsilon, alpha); when it runs out the bracket is still proven but wider.
    * d = 2, 3 with (k+1)^d <= 1000: 001 Alg. 3 on the sufficient statistic (the number of
      ones per coordinate, (k+1)^d outcomes) by a multi-start local search (``starts`` random
      starts plus the pair of eqs. 3-4). Its value is verified feasible, so it is a proven
      lower bound on Post, but a local search proves nothing above it: ``upper`` is the
      closed-form ``upper_bound`` and ``certified`` is True only where that already closes
      the bracket.

    Larger sizes raise ValueError (``lower_bound`` and ``upper_bound`` bracket Post for every
    d and k). Orders must be finite."""
    c, d, k = _check_params(c, d, k)
    if d == 1 and k > EXACT_MAX_K_D1:
        raise ValueError(f"exact Post for d = 1 needs k <= {EXACT_MAX_K_D1} (got k={k}); "
                         "lower_bound and upper_bound give a certified bracket for any k")
    if d > 1 and (d > EXACT_MAX_D or (k + 1) ** d > EXACT_MAX_OUTCOMES):
        raise ValueError(
            f"exact Post for d > 1 is searched only for d <= {EXACT_MAX_D} and (k+1)^d <= "
            f"{EXACT_MAX_OUTCOMES} outcomes (got d={d}, k={k}); lower_bound and upper_bound "
            "give a certified bracket for any d and k")
    rtol = V.real("rtol", rtol, low=1e-12, high=1.0)
    atol = V.real("atol", atol, low=0.0, high=1.0)
    max_cells = V.integer("max_cells", max_cells, low=1000)
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
        e, al = eps[todo], a[todo]
        scale = al - 1.0
        if d == 1:
            from ._bernoulli_search import certify_d1
            best0 = low[todo] * scale * (1.0 - 4e-16)
            cap = up[todo] * scale * (1.0 + 4e-16)
            best, top, _ = certify_d1(e, al, c, k, best0, cap, rtol, atol, max_cells)
            value[todo] = np.maximum(best / scale * (1.0 - 4e-16), low[todo])
            upper[todo] = np.minimum(top / scale * (1.0 + 4e-16), up[todo])
        else:
            from ._bernoulli_search import local_search
            best = np.array([local_search(ee, aa, c, d, k, starts) for ee, aa in zip(e, al)])
            value[todo] = np.maximum(best / scale * (1.0 - 4e-16), low[todo])
    # (a little slack for the final roundings of the search's own stopping test)
    certified = upper - value <= (atol + rtol * value) * (1.0 + 1e-9) + 1e-15 * upper
    return Certified(_out(value), _out(upper), certified if certified.ndim else bool(certified))
