"""Privacy profile -> moment generating function -> Rényi DP (Balle et al. 2018, Thm 6).

For a pair (P, Q) with privacy loss L = log dP/dQ under P and s >= 0,

    E[e^{sL}] = 1 + s(s+1) int_0^inf (e^{s eps} H_{e^eps}(P||Q) + e^{-(s+1) eps} H_{e^eps}(Q||P))
    deps,

so D_{s+1}(P||Q) = log E[e^{sL}] / s. The integrand is increasing in both curves, so upper
bounds on the curves give an upper bound on the moment. The integral is bounded above, not
approximated: in the variable alpha = e^eps a hockey-stick curve is convex (a supremum of affine
functions of alpha), so on each grid cell [alpha_i, alpha_{i+1}] it lies below the chord through
(upper bounds on) its end values; the chord times the weight (alpha^{s-1}, resp. alpha^{-s-2}) is
integrated in closed form, with the cancellation in those closed forms covered by an explicit
rounding margin. Beyond the last grid point E the second curve is bounded by its value at E,
the first by the Chernoff bound H_{e^eps}(P||Q) <= P[L > eps] <= E[e^{tL}] e^{-t eps} (t > s)
with a cruder moment bound supplied by the caller. Cells are split where the curve falls fast
(the chord is second-order accurate) and the cell matters, within a budget of evaluations.
"""
from __future__ import annotations

import math

import numpy as np

from ..core import validate as V
from ..mechanisms.base import Mechanism
from ..core.relations import ADD_REMOVE
from . import core
from .numerics import ULP, log1mexp, log_expm1, logaddexp, logsumexp

_T_FACTORS = np.array([1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0])


def _log_int_exp(c, d):
    """log of I(c) = int_0^d e^{ct} dt = expm1(c d)/c (c != 0, d > 0), no overflow."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        x = c * d
        return np.where(c > 0, log_expm1(np.maximum(x, 0.0)) - np.log(np.abs(c)),
                        log1mexp(np.minimum(x, 0.0)) - np.log(np.abs(c)))


def _log_diff_up(l1, l2):
    """log of an upper bound on e^{l1} - e^{l2} >= 0 when l1, l2 carry rounding errors of a few
    ulps of their magnitude: adds (8 ulp (1 + |l|) + 4 ulp) of each term."""
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.minimum(l2 - l1, 0.0)
        e1 = 8 * ULP * (1 + np.abs(l1)) + 4 * ULP
        e2 = 8 * ULP * (1 + np.abs(l2)) + 4 * ULP
        return l1 + np.log(-np.expm1(d) + e1 + e2 * np.exp(d))


def _log_chord_weights(c, d):
    """For the weight e^{ct} on t in [0, d] and the chord lambda(t) = (e^t - 1)/(e^d - 1)
    (linear in alpha = alpha_i e^t): log A = log int e^{ct}(1 - lambda), log B = log int
    e^{ct} lambda, both rounded up.  B = [I(c+1) - I(c)]/expm1(d);  A = e^{(c+1)d}
    [I(-c) - I(-c-1)]/expm1(d) (the same integral read from the right end)."""
    led = log_expm1(d)
    log_b = _log_diff_up(_log_int_exp(c + 1, d), _log_int_exp(c, d)) - led
    log_a = (c + 1) * d + _log_diff_up(_log_int_exp(-c, d), _log_int_exp(-c - 1, d)) - led
    return log_a, log_b


def _cells(t, lh0, lh1, s):
    """log upper bounds of both integrals per cell (Balle et al. 2018, Thm 6 with chords), shape (S,
    N)."""
    d = np.diff(t)[None, :]
    S = s[:, None]
    out = []
    for c, lh in ((S, lh0), (-(S + 1), lh1)):
        la, lb = _log_chord_weights(c, d)
        with np.errstate(invalid="ignore"):
            out.append(c * t[None, :-1] + logaddexp(lh[None, :-1] + la, lh[None, 1:] + lb))
    return logaddexp(out[0], out[1])


def _tail(E, lh0_E, lh1_E, s, log_tail_mgf):
    """log of the bound on both integrals beyond E."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t2 = lh1_E - (s + 1) * E - np.log(s + 1)
    if np.isneginf(lh0_E):
        t1 = np.full(s.shape, -np.inf)
    elif log_tail_mgf is None:
        t1 = np.full(s.shape, np.inf)
    else:
        tt = s[:, None] * _T_FACTORS[None, :] + 0.5
        k = np.asarray(log_tail_mgf(tt), dtype=float)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            cand = k - (tt - s[:, None]) * E - np.log(tt - s[:, None])
        cand = np.where(np.isnan(cand), np.inf, cand)
        t1 = np.min(cand, axis=1)
    return logaddexp(t1, t2)


def _eval(log_rows, pts, chunk=1024):
    parts = [np.asarray(log_rows(pts[i:i + chunk]), dtype=float)
             for i in range(0, pts.size, chunk)]
    return np.concatenate(parts, axis=1)


def _mgf(log_rows, s, log_tail_mgf, tau, budget, orientations, tol=1e-6):
    """log E[e^{sL}] bounds for the requested orientations (0: P||Q, 1: Q||P) on one grid."""
    if log_tail_mgf is not None:  # H(eps) <= E[e^{uL}] e^{-u eps} for every u > 0 (Chernoff)
        us = np.geomspace(0.05, 2e4, 90)
        ku = np.asarray(log_tail_mgf(us), dtype=float)
        ok = np.isfinite(ku)
        us, ku = us[ok], ku[ok]

        def curves(e):
            r = _eval(log_rows, e)
            if us.size:
                cher = np.min(ku[:, None] - us[:, None] * e[None, :], axis=0)
                r = np.minimum(r, cher[None, :])
            return r
    else:
        curves = lambda e: _eval(log_rows, e)  # noqa: E731
    t = np.linspace(0.0, 8.0, 129)
    rows = curves(t)
    used = t.size
    while True:
        totals, rels, tails = [], [], []
        for o in orientations:
            a, b = (rows[0], rows[1]) if o == 0 else (rows[1], rows[0])
            cells = _cells(t, a, b, s)
            tail = _tail(t[-1], a[-1], b[-1], s, log_tail_mgf)
            total = logaddexp(logsumexp(cells, axis=1), tail)
            with np.errstate(over="ignore", invalid="ignore"):
                rel = np.exp(cells - total[:, None])
                tail_rel = np.exp(tail - total)
            rels.append(np.where(np.isnan(rel), 1.0, rel).max(axis=0))
            tails.append(np.where(np.isnan(tail_rel), 1.0, tail_rel).max())
            totals.append(total)
        with np.errstate(invalid="ignore"):
            drops = np.abs(np.diff(rows, axis=1))
        drop = np.where(np.isnan(drops), 0.0, drops).max(axis=0)  # -inf to -inf: flat
        # the chord's relative excess over a log-linear curve is about drop^2 / 8
        err = np.maximum.reduce(rels) * np.minimum(1.0, drop * drop / 8)
        bad = (drop > tau) & (err > tol)
        need_tail = max(tails) > 1e-6 and t[-1] < 1e6
        new = []
        if bad.any():
            i = np.nonzero(bad)[0]
            frac = np.arange(1, 4) / 4.0
            new.append((t[i][:, None] + np.diff(t)[i][:, None] * frac[None, :]).ravel())
        if need_tail:
            new.append(np.linspace(t[-1], 2.0 * t[-1], 129)[1:])
        if not new or used >= budget:
            break
        pts = np.concatenate(new)
        r = curves(pts)
        used += pts.size
        t = np.concatenate([t, pts])
        order = np.argsort(t, kind="stable")
        t = t[order]
        rows = np.concatenate([rows, r], axis=1)[:, order]
    out = []
    for total in totals:
        with np.errstate(divide="ignore"):
            v = logaddexp(np.zeros_like(s), np.log(s) + np.log(s + 1) + total)
        out.append(v * (1 + 1e-12) + 1e-14)  # rounding slack of the sums above
    return out


def log_mgf_from_profile(log_rows, s, *, log_tail_mgf=None, tau: float = 0.05,
                         budget: int = 8_000):
    """Upper bound on log E_P[e^{sL}] (Balle et al. 2018, Thm 6) for s > 0 (array), from the log
    curves ``log_rows(eps) -> (2, ...)`` (row 0 = log H(P||Q), row 1 = log H(Q||P), upper bounds)
    and an optional ``log_tail_mgf(t)`` bounding log E_P[e^{tL}] for t > s (vectorised), used only
    for the tail of the first integral. Cells where log H drops by more than ``tau`` are split while
    they matter (relative chord error about tau^2/8), up to ``budget`` curve evaluations; any
    grid gives a valid bound."""
    s = V.reals("s", s, low=0.0, low_open=True, allow_inf=False).ravel()
    tau, budget = V.positive("tau", tau), V.integer("budget", budget, low=1)
    return _mgf(log_rows, s, log_tail_mgf, tau, budget, (0,))[0]


def rdp_from_profile(log_rows, alpha, *, log_tail_mgf=None, tau: float = 0.05,
                     budget: int = 8_000):
    """Upper bound on the Rényi divergence of orders alpha > 1 of the pair whose curves are
    bounded by ``log_rows``, in both orders (max of D(P||Q) and D(Q||P)): Balle et al. 2018, Thm 6
    with s = alpha - 1. ``log_tail_mgf(t)`` bounds log E[e^{tL}] for either order (see
    :func:`log_mgf_from_profile`)."""
    a = V.orders(alpha).astype(float)
    tau, budget = V.positive("tau", tau), V.integer("budget", budget, low=1)
    out = np.full(a.shape, np.inf)              # order inf: no bound from the moments
    fin = np.isfinite(a)
    if fin.any():
        s = a[fin] - 1.0
        k0, k1 = _mgf(log_rows, s, log_tail_mgf, tau, budget, (0, 1))
        out[fin] = np.maximum(k0, k1) / s
    return out


def profile_rdp(mechanism: Mechanism, alpha, *, tau: float = 0.05, budget: int = 8_000):
    """Rényi-DP curve of a mechanism from its privacy profile (Balle et al. 2018, Thm 6), for orders
    alpha > 1. Needs a tail moment bound: the mechanism's own RDP where it has one (then this is
    only useful as a cross-check), the crude joint-convexity bound for profile-only subsampled
    mechanisms, or a profile that reaches 0 (pure DP)."""
    m = core.single(mechanism)
    a = V.orders(alpha).astype(float)
    tail = _tail_mgf(m)
    out = rdp_from_profile(lambda e: core.log_pair(m, e), a, log_tail_mgf=tail, tau=tau,
                           budget=budget)
    # order inf is the largest loss: the pure epsilon (where the profile reaches 0)
    out = np.where(np.isinf(a), m.pure_epsilon(), out)
    return out if out.ndim else float(out)


# --- group RDP and crude moment bounds for subsampled mechanisms ----------------------------------

def group_rdp(mechanism, k: int, alpha):
    """An RDP bound for inputs at distance k (white-box where known): Gaussian / Laplace with
    k * sensitivity, randomized response of a bit unchanged, a pure eps0-DP mechanism as
    k*eps0-DP (randomized-response curve); None when unknown (k >= 2)."""
    from ..mechanisms.family import family_of
    from ..mechanisms.randomized_response import rr_rdp
    a = np.asarray(alpha, dtype=float)
    if k == 1 or core.is_binary(mechanism):
        return mechanism._rdp(a)
    fam = family_of(mechanism)
    if fam is not None and fam.group is not None:
        return fam.group(mechanism, k)._rdp(a)
    pure = mechanism.pure_epsilon()
    if math.isfinite(pure):
        return rr_rdp(k * pure, a)
    return None


def crude_log_mgf(m, t):
    """log E[e^{tL}] bound for a subsampled mechanism by joint convexity of (P, Q) ->
    E_Q[(P/Q)^{t+1}] over a coupling of the two subsample distributions: Poisson under
    substitution couples y + v with y + v' (distance 1), with replacement replaces each copy of v
    (distance ~ Binomial(m, 1/n)). None when not available."""
    from ..mechanisms.family import amplification_of
    hook = getattr(amplification_of(getattr(m, "scheme", None)), "crude_log_mgf", None)
    if hook is None or not m.base.has_rdp():
        return None
    return hook(m, np.asarray(t, dtype=float))


def poisson_substitution_log_mgf(m, t):
    """Poisson sampling under substitution couples y + v with y + v' (distance 1): the
    gamma-mixture of the base's moments (None under add/remove, where Steinke 2022, Thm 34 is
    exact)."""
    base, scheme = m.base, m.scheme
    if scheme.relation is ADD_REMOVE:
        return None
    q = scheme.rate
    with np.errstate(over="ignore", invalid="ignore"):
        val = t * base._rdp(t + 1.0)
    if q >= 1:
        return val
    return logaddexp(np.full(t.shape, math.log1p(-q)), math.log(q) + val)


def with_replacement_log_mgf(m, t):
    """Sampling with replacement replaces each copy of v (distance ~ Binomial(m, 1/n)): the
    mixture of the base's k-group moments over a window of the binomial, the rest bounded by
    the window's edges."""
    from .amplification import BinomialWindow, wr_gamma
    base, scheme = m.base, m.scheme
    sizes = (scheme.population,) if scheme.gives is not ADD_REMOVE else \
        tuple(N for N in (scheme.population, scheme.population + 1) if N >= 2)
    best = None
    for N in sizes:
        w = BinomialWindow(scheme.batch, 1.0 / N, start=1)
        ks = [int(k) for k in w.js if k >= 1]
        logw = w.logw[w.js >= 1]
        moments = {}
        for k in set(ks) | {scheme.batch}:
            g = group_rdp(base, k, t + 1.0)
            if g is None:
                return None
            with np.errstate(over="ignore", invalid="ignore"):
                moments[k] = t * np.asarray(g, dtype=float)
        terms = [lw + moments[k] for k, lw in zip(ks, logw)]
        # groups outside the window: the moment grows with k (k-group RDP)
        terms.append(w.log_mass_below() + moments[ks[0]])
        terms.append(w.log_mass_between(ks[-1], scheme.batch) + moments[scheme.batch])
        g0 = wr_gamma(scheme.batch, N)
        lead = math.log1p(-g0) if g0 < 1 else -math.inf
        val = logaddexp(np.full(t.shape, lead), logsumexp(np.array(terms), axis=0))
        val = val * (1 + 1e-12) + w.err + 1e-14
        best = val if best is None else np.maximum(best, val)
    return best


def _tail_mgf(m):
    if getattr(m, "scheme", None) is not None and crude_log_mgf(m, np.array([1.0])) is not None:
        return lambda t: crude_log_mgf(m, t)
    if m.has_rdp():
        return lambda t: np.asarray(t) * m._rdp(np.asarray(t) + 1.0)
    return None


def subsampled_log_moments(m, orders: np.ndarray) -> np.ndarray:
    """K(alpha - 1) = (alpha - 1) eps'(alpha) at integer orders for a Subsampled mechanism whose
    scheme has no direct RDP theorem (with replacement, Poisson under substitution): the
    minimum of the crude joint-convexity bound and Balle et al. 2018, Thm 6 applied to the amplified
    profile (with the crude bound for the tail). Used by Subsampled._compute_cgf."""
    from .amplification import member_gamma, mixture_pair_log
    orders = np.asarray(orders, dtype=float)
    s = orders - 1.0
    crude = crude_log_mgf(m, s)
    thm6 = None
    rows = lambda e: core.log_pair(m, e)  # noqa: E731
    if core.is_binary(m.base):
        # randomized response of a bit: every ordered pair lies on the segment between the
        # membership pair ((1-g) R(0) + g R(1), R(0)) and its relabelled reverse, and the Rényi
        # divergence (jointly convex) peaks at the ends: both orders of the asymmetric pair
        # suffice (Balle et al. 2018, Lemma 12's decomposition), tighter than the symmetric profile
        # rows
        g = member_gamma(m.scheme)
        rows = lambda e: mixture_pair_log(lambda x: core.log_pair(m.base, x), g, e)  # noqa
    if core.has_profile(m):
        thm6 = rdp_from_profile(rows, orders,
                                log_tail_mgf=None if crude is None else
                                (lambda t: crude_log_mgf(m, t))) * s
    if crude is None and thm6 is None:
        raise NotImplementedError(f"no Rényi-DP bound for {m.scheme!r}; use its privacy profile")
    if crude is None:
        assert thm6 is not None
        return thm6
    if thm6 is None:
        return crude
    return np.minimum(crude, thm6)
