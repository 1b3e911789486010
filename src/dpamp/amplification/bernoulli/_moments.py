"""Rényi moments of the Bernoulli samples: the objective and the constraints of Imola & Chaudhuri
2021's Algs 2 and 3, in log space, each with a bound on its rounding error.

* :func:`_log_moment`: log sum_j w_j e^{alpha ell_j}, the Rényi moment (alpha-1) R_alpha(P || Q)
  from weights and log-likelihood ratios;
* two corners (Alg. 2 with the errata's x_j, y_j): :func:`_moment_d1` for
  P = x 1[c] + (1-x) 1[1-c] against Q = y 1[c] + (1-y) 1[1-c] through the number of ones among
  the n coins, and on it the d = 1 search's objective G(x, y), its constraints H1, H2 and the
  gradient of H;
* any d (Alg. 3): :func:`statistic_channel`, the channel from a corner to the counts of ones per
  coordinate, and the moments through it.

Shared by the closed-form bounds (:mod:`dpamp.amplification.bernoulli.bounds`), the d = 1 search
(:mod:`dpamp.amplification.bernoulli._d1_search`) and the d > 1 searches.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

#: chunk size (elements x outcomes) for the O(dk) sums, to bound memory for large d k
_CHUNK = 1 << 21


# --------------------------------------------------------------------------------------------
# the Rényi moment from weights and log-likelihood ratios
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# two corners (Imola & Chaudhuri 2021, Alg. 2): the number of ones among the n coins
# --------------------------------------------------------------------------------------------
def _binomial_tables(c: float, n: int):
    """For Bern_n of a point mass at c or 1-c, and j = number of ones among the n coins:
    log C(n, j) + h_j and log a_j, log b_j <= 0 with max(a_j, b_j) = 1 such that

        C(n,j) [x c^j (1-c)^{n-j} + (1-x) c^{n-j} (1-c)^j] = e^{log C + h_j} (x a_j + (1-x) b_j)

    (the errata's form of Imola & Chaudhuri 2021, Alg. 2's x_j), which never under- or overflows."""
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
    Q = y 1[c] + (1-y) 1[1-c] (Imola & Chaudhuri 2021, Alg. 2 with the errata's x_j, y_j), given log
    x, log(1-x), log y, log(1-y) and dxy = x - y (each passed so that it can be computed without
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


def _logs(v: np.ndarray):
    with np.errstate(divide="ignore"):
        return np.log(v), np.log1p(-v)


def _objective(x, y, alpha, c, k):
    """G(x, y) with its rounding-error bound (Imola & Chaudhuri 2021, Alg. 2 objective, errata
    form)."""
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    return _moment_d1(lx, l1x, ly, l1y, x - y, alpha, c, k)


def _constraints(x, y, alpha):
    """H1 = (alpha-1) R_alpha(P_x || P_y), H2 = (alpha-1) R_alpha(P_y || P_x), error bounds."""
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    h1, e1 = _moment_d1(lx, l1x, ly, l1y, x - y, alpha, 0.0, 1, tables=_PAIR_TABLES)
    h2, e2 = _moment_d1(ly, l1y, lx, l1x, y - x, alpha, 0.0, 1, tables=_PAIR_TABLES)
    return h1, e1, h2, e2


def _grad_h(x, y, alpha):
    """Gradient of H(x, y) = log(x^a y^(1-a) + (1-x)^a (1-y)^(1-a)) at interior points, with an
    absolute error bound per component: dH/dx = a (w/x - (1-w)/(1-x)),
    dH/dy = (1-a) (w/y - (1-w)/(1-y)), w = x^a y^(1-a) / (sum) (a softmax weight)."""
    lx, l1x = _logs(x)
    ly, l1y = _logs(y)
    t1 = alpha * lx + (1.0 - alpha) * ly
    t2 = alpha * l1x + (1.0 - alpha) * l1y
    w = 1.0 / (1.0 + np.exp(np.clip(t2 - t1, -700.0, 700.0)))
    w2 = 1.0 / (1.0 + np.exp(np.clip(t1 - t2, -700.0, 700.0)))
    ux, vx = w / x, w2 / (1.0 - x)
    uy, vy = w / y, w2 / (1.0 - y)
    gx = alpha * (ux - vx)
    gy = (1.0 - alpha) * (uy - vy)
    # t1, t2 carry a few ulps of the magnitudes they are built from; through the softmax
    # that is the relative error of w, and a few more ulps for the divisions
    rel = 1e-15 * (8.0 + alpha * (np.abs(lx) + np.abs(l1x))
                   + (alpha - 1.0) * (np.abs(ly) + np.abs(l1y)))
    ex = alpha * (ux + vx) * rel
    ey = (alpha - 1.0) * (uy + vy) * rel
    return gx, gy, ex, ey


# --------------------------------------------------------------------------------------------
# any d (Imola & Chaudhuri 2021, Alg. 3): the counts of ones in each coordinate
# --------------------------------------------------------------------------------------------
def statistic_channel(c: float, d: int, k: int) -> np.ndarray:
    """log Pr[m | corner i] for the sufficient statistic m = (number of ones in each of the d
    coordinates over the k samples) in {0..k}^d, corner i in {0,1}^d (bit 1: theta_l = 1-c):

        Pr[m | i] = prod_l C(k, m_l) theta_l^{m_l} (1 - theta_l)^{k - m_l}.

    Bern_k(P) depends on the samples only through m (the k samples of each coordinate are
    exchangeable given theta), so R_alpha(Bern_k P, Bern_k Q) is the Rényi divergence of the
    pushforwards through this (k+1)^d x 2^d channel (Imola & Chaudhuri 2021, Alg. 3 with outcomes
    merged)."""
    j = np.arange(k + 1, dtype=float)
    log_binom = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
    lc, l1c = np.log(c), np.log1p(-c)
    one = np.stack([log_binom + j * lc + (k - j) * l1c,      # theta = c
                    log_binom + j * l1c + (k - j) * lc], 1)  # theta = 1 - c
    logw = np.zeros((1, 1))
    for _ in range(d):  # Kronecker product in log space: outcomes x corners
        logw = (logw[:, None, :, None] + one[None, :, None, :]).reshape(
            logw.shape[0] * (k + 1), logw.shape[1] * 2)
    return logw


def _lse(z, axis=-1):
    """log-sum-exp (plain numpy: scipy's wrapper costs more than the sum at these sizes)."""
    m = np.max(z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(z - m), axis=axis))


def log_softmax(v):
    return v - _lse(v)


def _moment_general(lx, ly, logw, alpha):
    """(value, error) of log sum_m ybar_m (xbar_m / ybar_m)^alpha, xbar = W x (logs given)."""
    lxb = _lse(logw + lx[None, :], axis=1)
    lyb = _lse(logw + ly[None, :], axis=1)
    ell = lxb - lyb
    ell_err = 1e-15 * (4.0 + 4.0 * (np.abs(lxb) + np.abs(lyb)) + np.log(lx.size))
    return _log_moment((lyb + 0.0)[None, :], ell[None, :], ell_err[None, :],
                       np.array([alpha]))


def _pair_moment(lx, ly, alpha):
    """(value, error) of log sum_i x_i^alpha y_i^(1-alpha) (the constraint), logs given."""
    with np.errstate(invalid="ignore"):
        ell = lx - ly
    if (np.isneginf(ly) & np.isfinite(lx)).any():
        return np.array([np.inf]), np.array([0.0])
    ell_err = 1e-15 * (4.0 + 4.0 * (np.abs(lx) + np.abs(ly)))
    ell = np.where(np.isfinite(ly), ell, 0.0)
    return _log_moment(ly[None, :], ell[None, :], np.where(np.isfinite(ell_err), ell_err, 0.0)[None, :],
                       np.array([alpha]))
