"""Tight amplification of privacy profiles by subsampling (Balle et al. 2018, Sec. 3-4, App. B), and
the profile handlers of :class:`dpamp.Subsampled`.

Notation: gamma = TV between the subsample distributions of two neighbours; for alpha' = e^eps'
the inner order is alpha = 1 + (alpha' - 1)/gamma and beta = alpha'/alpha (Balle et al. 2018, Thm
2).

| scheme (inner -> outer relation)         | bound used                                  | tight?   |
|------------------------------------------|---------------------------------------------|----------|
| Poisson(q), add/remove -> add/remove     | Thm 8, both orders exact via Thm 2          | exact    |
| WithoutReplacement(m, n), subst -> subst | Thm 9: (m/n) delta(alpha)                   | yes (13) |
| WithReplacement(m, n), subst -> subst    | Thm 10: sum_k Bin(m,1/n)(k) delta_k(alpha)  | yes (13) |
| WithReplacement(m, n, outer=add/remove)  | Thm 11 (+ the add order by Thm 2)           | yes (12) |
| Poisson(q, SUBSTITUTION, population=n)   | Thm 14, tighter proof form (errata)         | no       |
| any scheme, randomized response of a bit | Lemma 12: gamma phi_p(alpha), exact         | exact    |

"tight" means: no bound that depends on the base profile alone can be smaller, because the
randomized membership mechanism attains it (Balle et al. 2018, Lemma 12, Thm 13).

Lower bounds: the membership pair. Take the base's own lower pair (P_b, Q_b), realised by a
query that depends only on whether a record v is in its input (a counting query for Gaussian /
Laplace, Balle et al. 2018, Sec. 5's randomized membership for randomized response); run on a
dataset x with v in x against x' without v, any natural scheme gives the pair ((1 - g) Q_b + g P_b,
Q_b), g = P[v in S(x)], whose two curves follow exactly from Thm 2 (:func:`mixture_pair_log`).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..core.relations import ADD_REMOVE
from ..core.sampling import Poisson
from ..mechanisms.family import amplification_of
from . import core
from .numerics import (ULP, ajc_epsilon, ajc_log_beta, ajc_reverse, down, envelope, log1mexp,
                        logaddexp, logsumexp, pad_down, pad_up, up)


# --- the general tool: advanced joint convexity (Balle et al. 2018, Thm 2)
# -----------------------------------

def ajc_parameters(eps_prime, gamma: float):
    """Balle et al. 2018, Thm 2: for alpha' = e^eps', the inner eps = log(1 + (e^eps' - 1)/gamma)
    and beta = alpha'/alpha. Vectorised over eps' >= 0; returns (eps, beta)."""
    e = np.asarray(eps_prime, dtype=float)
    lb, _ = ajc_log_beta(e, gamma)
    out = ajc_epsilon(e, gamma), np.exp(lb)
    return out


def advanced_joint_convexity(gamma: float, eps_prime, h10, h11):
    """Balle et al. 2018, Thm 2 with joint convexity: for mu = (1-gamma) mu0 + gamma mu1 and
    mu' = (1-gamma) mu0 + gamma mu1',

        H_{alpha'}(mu || mu') = gamma H_alpha(mu1 || (1-beta) mu0 + beta mu1')
                              <= gamma [(1 - beta) h10(eps) + beta h11(eps)],

    where h10(eps) >= H_{e^eps}(mu1 || mu0) and h11(eps) >= H_{e^eps}(mu1 || mu1') are callables
    (linear scale, vectorised). Returns the bound at each eps'."""
    e = np.asarray(eps_prime, dtype=float)
    if gamma == 0:
        return np.zeros_like(e)
    eps = down(ajc_epsilon(e, gamma))
    lb, l1b = ajc_log_beta(e, gamma)
    out = gamma * (np.exp(l1b) * np.asarray(h10(eps)) + np.exp(lb) * np.asarray(h11(eps)))
    return np.minimum(out * (1 + 1e-12), 1.0)


# --- the mixture pair ((1 - g) Q + g P, Q): Thm 8 and the membership lower bound ----------------

def mixture_pair_log(log_rows, gamma: float, eps, *, upper: bool = True):
    """log of both curves of the pair ((1 - gamma) Q + gamma P, Q) given the log curves of
    (P, Q) (``log_rows(eps) -> (2, ...)``, upper or lower bounds):

        row 0 = gamma H_alpha(P || Q)                 (Balle et al. 2018, Thm 2 with mu1' = mu0 = Q:
        exact) row 1 = c H_{alpha''}(Q || P), c = 1 - alpha'(1 - gamma), alpha'' = alpha' gamma / c
                (0 when alpha' >= 1/(1 - gamma)).

    This is Balle et al. 2018, Thm 8 for Poisson sampling under add/remove (row 0 the remove order,
    row 1 the add order) and, with lower-bound rows, the membership lower bound (Lemma 12)."""
    eps = np.asarray(eps, dtype=float)
    if gamma <= 0.0:
        return np.full((2,) + eps.shape, -np.inf)
    rnd = down if upper else up
    e0 = rnd(ajc_epsilon(eps, gamma))
    log_c, e2 = ajc_reverse(eps, gamma, upper=upper)
    e2 = rnd(e2)
    rows = log_rows(np.stack([e0, e2]))
    r0 = math.log(gamma) + rows[0, 0]
    r1 = np.where(np.isneginf(log_c), -np.inf, log_c + rows[1, 1])
    out = np.stack([r0, r1])
    return pad_up(out) if upper else pad_down(out)


def thm9_log_profile(log_sym, gamma: float, eps):
    """Balle et al. 2018, Thm 9 (sampling m of n without replacement, substitution): delta'(alpha')
    <= gamma delta(alpha), gamma = m/n, alpha = 1 + (alpha' - 1)/gamma; log, rounded up.
    Also Balle et al. 2018, Lemma 12 for randomized response of a bit under any scheme (gamma = sup
    TV)."""
    eps = np.asarray(eps, dtype=float)
    if gamma <= 0.0:
        return np.full(eps.shape, -np.inf)
    return pad_up(math.log(gamma) + log_sym(down(ajc_epsilon(eps, gamma))))


# --- binomial weights with a rigorous truncation bound ----------------------------------------

class BinomialWindow:
    """Binomial(N, p) log-probabilities on a window of j around the mode (j >= start), with
    rigorous upper bounds on the masses left out on either side: the pmf is log-concave, hence
    monotone away from its mode, so the mass of the j in (a, b] beyond the mode is at most
    (b - a) times the pmf at the end nearest the mode. ``err``: an absolute error allowance on
    each log weight (gammaln of large arguments)."""

    def __init__(self, N: int, p: float, *, start: int = 0, width: float = 40.0):
        self.N, self.p, self.start = N, p, start
        self.lp = math.log(p) if p > 0 else -math.inf
        self.lq = math.log1p(-p) if p < 1 else -math.inf
        sd = math.sqrt(N * p * (1 - p))
        self.mode = min(N, int(math.floor((N + 1) * p)))
        hi = min(N, int(self.mode + width * sd + 30))
        lo = min(max(start, int(self.mode - width * sd - 30)), hi)
        self.js = np.arange(lo, hi + 1)
        self.logw = self.logpmf(self.js)
        self.err = 16 * ULP * (gammaln(N + 1.0) + N * (abs(self.lp) + abs(self.lq)) + 1.0) \
            if 0 < p < 1 else 0.0

    def logpmf(self, j):
        j = np.asarray(j, dtype=float)
        if self.p >= 1.0:
            return np.where(j == self.N, 0.0, -np.inf)
        with np.errstate(invalid="ignore"):
            return (gammaln(self.N + 1.0) - gammaln(j + 1.0) - gammaln(self.N - j + 1.0)
                    + j * self.lp + np.where(self.N - j == 0, 0.0, (self.N - j) * self.lq))

    def log_mass_below(self) -> float:
        """log of a bound on the mass of start <= j < window start."""
        lo = int(self.js[0])
        if lo <= self.start:
            return -math.inf
        return math.log(lo - self.start) + float(self.logpmf(lo - 1)) + self.err + 1e-12

    def log_mass_between(self, a: int, b: int) -> float:
        """log of a bound on the mass of a < j <= b, for a >= mode."""
        if b <= a:
            return -math.inf
        return math.log(b - a) + float(self.logpmf(a + 1)) + self.err + 1e-12


def binomial_window(N: int, p: float, *, start: int = 0, width: float = 40.0):
    """(js, log weights, log bound on the mass outside the window, err) of Binomial(N, p)."""
    w = BinomialWindow(N, p, start=start, width=width)
    hi = int(w.js[-1])
    log_tail = float(logaddexp(w.log_mass_below(), w.log_mass_between(hi, N)))
    return w.js, w.logw, log_tail, w.err


def wr_gamma(m: int, n: int) -> float:
    """TV between with-replacement samples of two substitution neighbours: 1 - (1 - 1/n)^m."""
    return -math.expm1(m * math.log1p(-1.0 / n)) if n > 1 else 1.0


def _wr_sum(log_group, m, n, eps_inner):
    """log sum_{k=1}^m C(m,k) n^-k (1-1/n)^{m-k} delta_k(e^{eps_inner}) (rounded up). The
    group profile is non-decreasing in k, so the groups left out of the window are bounded by
    their mass times delta_{k_lo} (below) and delta_m (above): no spurious floor."""
    w = BinomialWindow(m, 1.0 / n, start=1)
    ks = w.js[w.js >= 1]
    logw = w.logw[w.js >= 1]
    shape = (ks.size,) + (1,) * eps_inner.ndim
    g = log_group(ks.reshape(shape), eps_inner[None, ...])
    s = logsumexp(logw.reshape(shape) + g, axis=0)
    low = w.log_mass_below()
    if np.isfinite(low):
        s = logaddexp(s, low + g[0])
    high = w.log_mass_between(int(ks[-1]), m)
    if np.isfinite(high):
        s = logaddexp(s, high + log_group(np.full(eps_inner.shape, m), eps_inner))
    return pad_up(s, w.err)


def thm10_log_profile(log_group, m: int, n: int, eps):
    """Balle et al. 2018, Thm 10 (m draws with replacement from n records, substitution; weights per
    errata):

        delta'(alpha') <= sum_{k=1}^m C(m,k) (1/n)^k (1 - 1/n)^{m-k} delta_{M,k}(alpha),
        alpha = 1 + (alpha' - 1)/gamma,  gamma = 1 - (1 - 1/n)^m,

    with ``log_group(k, eps)`` the log group-privacy profile. log, rounded up."""
    eps = np.asarray(eps, dtype=float)
    gamma = wr_gamma(m, n)
    return _wr_sum(log_group, m, n, down(ajc_epsilon(eps, gamma)))


def thm11_log_pair(log_group, m: int, n: int, eps):
    """Balle et al. 2018, Thm 11 (with replacement, inner substitution, OUTER add/remove) for
    datasets of size n: row 0 (remove order, |x| = N, |x'| = N - 1) is the Thm 10 sum with N; row 1
    (add order of the same pair) is, by the reverse form of Thm 2 (see ``mixture_pair_log``),
    (c / gamma_N) sum_k w_k delta_{M,k}(alpha''). A dataset of size n is the larger (N = n) or the
    smaller (N = n + 1) member of its pair: the rows are the maxima over both. log, rounded up."""
    eps = np.asarray(eps, dtype=float)
    rows = []
    for N in (n, n + 1):
        if N < 2:
            continue
        gamma = wr_gamma(m, N)
        r0 = _wr_sum(log_group, m, N, down(ajc_epsilon(eps, gamma)))
        log_c, e2 = ajc_reverse(eps, gamma)
        s = _wr_sum(log_group, m, N, down(e2))
        r1 = np.where(np.isneginf(log_c), -np.inf, pad_up(log_c - math.log(gamma) + s))
        rows.append(np.stack([r0, r1]))
    return np.maximum.reduce(rows)


def thm14_log_profile(log_sym, q: float, n: int, eps):
    """Balle et al. 2018, Thm 14 in the tighter form of its proof (errata): Poisson sampling with
    rate gamma = q under substitution, datasets of size n,

        delta'(alpha') <= gamma [beta delta(alpha) + (1 - beta)(sum_{k=1}^{n-1} g~_k delta(alpha_k)
                                                                 + g~_n)],
        g~_k = C(n-1, k-1) gamma^{k-1} (1-gamma)^{n-k},  alpha_k = alpha gamma/(1-gamma) (n/k - 1),

    where for alpha_k < 1, delta(a) := 1 - a + a delta(1/a) (the hockey-stick divergence below
    order 1, by the other order; ``log_sym`` is symmetric). log, rounded up."""
    eps = np.asarray(eps, dtype=float)
    if q >= 1.0:
        return pad_up(log_sym(eps))
    e0 = down(ajc_epsilon(eps, q))
    log_beta, log_1mb = ajc_log_beta(eps, q)
    a_term = log_beta + log_sym(e0)
    # j = k - 1 ~ Binomial(n - 1, q). g_k (the bracket terms, <= 1) is non-decreasing in k
    # (alpha_k decreases, the extended divergence decreases in its order): terms below the
    # window are bounded by g at the window start, terms above it up to j2 (40 sd) by g at j2,
    # the rest by 1. The central window is +-12 sd.
    w = BinomialWindow(n - 1, q, width=12.0)
    j2 = min(n - 1, int(w.mode + 40.0 * math.sqrt((n - 1) * q * (1 - q)) + 30))
    hi = int(w.js[-1])
    js = np.concatenate([w.js, [j2]]) if j2 > hi else w.js
    k = (js + 1).astype(float)
    shape = (k.size,) + (1,) * eps.ndim
    k = k.reshape(shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        la = (e0[None, ...] + math.log(q) - math.log1p(-q) + np.log(n - k) - np.log(k))
        # round log alpha_k down (delta is evaluated pessimistically at a smaller order)
        la = (np.where(la > 0, la * (1 - 8 * ULP), la * (1 + 8 * ULP))
              - (8 * ULP * (abs(math.log(q)) + 2 * math.log(n + 1.0)) + 1e-15))
    last = k == n  # the leftover term g~_n (no neighbour of equal size): divergence <= 1
    la = np.where(last, 0.0, la)
    ge1 = la >= 0
    g_hi = log_sym(np.where(ge1, la, 0.0))
    g_lo = logaddexp(log1mexp(np.minimum(la, 0.0)),
                     np.minimum(la, 0.0) + log_sym(np.where(ge1, 0.0, -la)))
    g = np.where(last, 0.0, np.where(ge1, g_hi, g_lo))
    nw = w.js.size
    s = logsumexp(w.logw.reshape((nw,) + (1,) * eps.ndim) + g[:nw], axis=0)
    s = logaddexp(s, w.log_mass_below() + g[0])
    if j2 > hi:
        s = logaddexp(s, w.log_mass_between(hi, j2) + g[-1])
    s = logaddexp(s, np.full(s.shape, w.log_mass_between(j2, n - 1)))
    err = w.err
    total = math.log(q) + logaddexp(a_term, log_1mb + s)
    return pad_up(total, err)


# --- the Subsampled handler -----------------------------------------------------------------

def member_gamma(scheme) -> float:
    """P[v in S(x)] for a dataset x containing v: the gamma of the membership pair (and the sup
    TV of Balle et al. 2018, Lemma 12), as the scheme declares it."""
    rule = amplification_of(scheme)
    if rule is None:
        raise core.no_profile(scheme, "sampling scheme with a privacy profile")
    return rule.member_gamma(scheme)


def subsampled_pair(m, eps):
    """Upper profile rows of a subsampled mechanism: Balle et al. 2018, Lemma 12 (exact for every
    scheme) for randomized response of a bit, else the scheme's own theorem (its declared
    ``profile_pair``)."""
    scheme = m.scheme
    if core.is_binary(m.base):  # Balle et al. 2018, Lemma 12: exact for every scheme
        g = member_gamma(scheme)
        if scheme.gives is ADD_REMOVE:
            return mixture_pair_log(lambda e: core.log_pair(m.base, e), g, eps)
        v = thm9_log_profile(lambda e: core.log_symmetric(m.base, e), g, eps)
        return np.stack([v, v])
    rule = amplification_of(scheme)
    if rule is None:
        raise core.no_profile(m)
    return rule.profile_pair(m, eps)


def poisson_profile_pair(m, eps):
    """Poisson sampling: Balle et al. 2018, Thm 8 under add/remove (both orders); under substitution
    Thm 14, or plain joint convexity over the coupling (y + v, y + v'), (y, y) (Balle et al. 2018,
    Sec. 3, after Thm 2): delta' <= gamma delta(alpha'), no amplification of eps, but at large eps
    it can beat the g~_n term of Thm 14; Thm 14 is not monotone in eps: envelope."""
    base, scheme = m.base, m.scheme
    if scheme.relation is ADD_REMOVE:
        return mixture_pair_log(lambda e: core.log_pair(base, e), scheme.rate, eps)
    n = getattr(scheme, "population", None)
    q = scheme.rate
    base_sym = lambda e: core.log_symmetric(base, e)  # noqa: E731
    if n is None:
        # Thm 14 needs the dataset size; joint convexity over the coupling does not, so a
        # plan without ``population`` keeps a profile (and the PLD built on it) rather than
        # leaving only RDP: delta'(eps) <= q delta(eps), non-increasing as delta is
        v = pad_up(math.log(q) + base_sym(eps))
        return np.stack([v, v])
    v = envelope(lambda e: np.minimum(thm14_log_profile(base_sym, q, n, e),
                                      pad_up(math.log(q) + base_sym(e))), eps)
    return np.stack([v, v])


def wor_profile_pair(m, eps):
    """Sampling without replacement: Balle et al. 2018, Thm 9 (a symmetric relation: the theorem
    bounds the max of both orders)."""
    v = thm9_log_profile(lambda e: core.log_symmetric(m.base, e),
                         m.scheme.batch / m.scheme.population, eps)
    return np.stack([v, v])


def wr_profile_pair(m, eps):
    """Sampling with replacement: Balle et al. 2018, Thm 11 under an add/remove outer relation, Thm
    10 under substitution, both on the base's group profiles."""
    scheme = m.scheme
    lg = lambda k, e: core.log_group(m.base, k, e)  # noqa: E731
    if scheme.gives is ADD_REMOVE:
        return thm11_log_pair(lg, scheme.batch, scheme.population, eps)
    v = thm10_log_profile(lg, scheme.batch, scheme.population, eps)
    return np.stack([v, v])


def _poisson_any_size(scheme) -> bool:
    return isinstance(scheme, Poisson) and scheme.relation is not ADD_REMOVE \
        and scheme.population is None


def subsampled_lower(m, eps):
    """Lower rows: the gamma-mixture of the base's own lower pair (Balle et al. 2018, Lemma 12's
    membership pair), or None where the base has none."""
    base_lower = core.log_pair_lower(m.base, np.zeros(1))
    if base_lower is None:
        return None
    if _poisson_any_size(m.scheme):
        # Poisson under substitution with the dataset size unknown: the class includes
        # datasets of one record, D = {x}, D' = {x'}, where the sample is empty (the same law
        # under both) with probability 1 - q; a base whose output when empty is far from
        # its outputs on {x}, {x'} (f(D) = c |D| + g(D), c -> inf, within the substitution
        # sensitivity) attains q H(B || C) in both orders: the upper bound of the
        # joint-convexity coupling above, so the bracket closes at that worst case
        return pad_down(math.log(m.scheme.rate) + core.log_pair_lower(m.base, eps),
                        8 * ULP)
    g = member_gamma(m.scheme)
    return mixture_pair_log(lambda e: core.log_pair_lower(m.base, e), g, eps, upper=False)
