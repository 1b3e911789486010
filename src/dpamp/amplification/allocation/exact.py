"""Random allocation of a discrete base, enumerated: the epoch's exact pair, rounded outward.

For a base whose dominating pair (P0, Q0) is purely atomic (randomized response, pure DP,
(epsilon, delta) parts, their subsampled versions), one epoch of k-out-of-t random allocation
under add/remove is dominated by (V. Feldman, M. Shenfeld, *Privacy amplification by random
allocation*, arXiv:2502.08202, Sec. 2)

    P = C(t, k)^{-1} sum_{|I| = k} (P0 on the coordinates in I, Q0 elsewhere)   vs   Q = Q0^t,

and this pair is attained (the record's k steps run the base on the worst-case pair). With
X_i = dP0/dQ0 of coordinate i (finite atoms: Q0 > 0), dP/dQ = e_k(X_1..X_t) / C(t, k) (the
elementary symmetric polynomial), a symmetric function: it depends on the coordinates only
through the counts n = (n_1..n_m) of the base's m finite atoms, of which there are
C(t + m - 1, m - 1). So the epoch's privacy-loss distribution is a finite list of atoms:

    Q[n] = t! / prod n_j! * prod q_j^{n_j},   P[n] = Q[n] e_k(x(n)) / C(t, k),

plus the P-mass 1 - (1 - P0[l = +inf])^k at loss +inf (some chosen coordinate lands where Q0
has no mass). Where that list is short (``MAX_OUTCOMES``), it replaces the grids of
:mod:`.pld`: the bracket is then as tight as the PLD engine's loss grid allows, for every k, and
it is exactly what an enumeration of every outcome gives (tests/test_lower_battery.py).

Rounding (our construction): log Q[n] from gammaln (FUNC_ULPS ulps, as the grids take scipy's
special functions) and the logs of the base's masses; e_k by a recurrence of non-negative terms
(relative error at most (m + k + 2) u per term, no cancellation). Each mass carries a relative
error bound rho; the upper curves use P-masses raised and Q-masses lowered by it (each term
(p - x q)_+ only grows), and the lower pair the reverse (:func:`.lower_k.atoms_pair`).
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from scipy.special import gammaln

from ...core.multisets import count_vectors

from .grid import FUNC_ULPS

_U = 2.0 ** -53
#: the largest number of count vectors enumerated (beyond, the grids of :mod:`.pld`)
MAX_OUTCOMES = 1 << 16
#: and the largest number of (outcome, degree) entries of the e_k recurrence
MAX_ENTRIES = 1 << 23


def discrete_atoms(loss):
    """(x_j, q_j, p_inf, top) of a purely atomic loss distribution: the likelihood ratios
    x = p / q and Q0-masses of its atoms with Q0 > 0, P0[l = +inf], and its largest finite loss;
    None if it has a continuous part."""
    if loss.cdf is not None or loss.atom_loss.size == 0:
        return None
    l, p, q = (np.asarray(a, dtype=float) for a in (loss.atom_loss, loss.atom_p, loss.atom_q))
    keep = q > 0
    x = np.where(np.isfinite(l[keep]), p[keep] / q[keep], 0.0)
    x = np.where(l[keep] == -np.inf, 0.0, x)
    fin = np.isfinite(l) & (p > 0)
    top = float(l[fin].max()) if fin.any() else 0.0
    return x, q[keep], float(np.sum(p[l == np.inf])), top


def outcome_count(m: int, t: int) -> int:
    """C(t + m - 1, m - 1): the count vectors of t coordinates over m atoms."""
    return math.comb(t + m - 1, m - 1)


def applies(loss, k: int, t: int) -> bool:
    """Whether the epoch of this base is enumerated here (purely atomic, few outcomes)."""
    at = discrete_atoms(loss)
    if at is None:
        return False
    n = outcome_count(at[0].size, t)
    return n <= MAX_OUTCOMES and n * (k + 1) <= MAX_ENTRIES


def _log_ek(n: np.ndarray, x: np.ndarray, k: int):
    """(log e_k, its absolute error bound) of the multiset with counts n (rows) of the values
    x: the coefficient of z^k in prod_j (1 + x_j z)^{n_j}, a product of polynomials with
    non-negative coefficients C(n_j, i) x_j^i, truncated at degree k. Scaled by the largest x
    (so no overflow: e_k(x) = xmax^k e_k(x / xmax)); every coefficient is a sum of products of
    non-negative terms, each rounding relative, at most (m + k + 2) u in all."""
    N, m = n.shape
    xmax = float(x.max())
    if xmax <= 0.0:
        return np.full(N, -np.inf), np.zeros(N)
    y = x / xmax
    acc = np.zeros((N, k + 1))
    acc[:, 0] = 1.0
    i = np.arange(k + 1)
    for j in range(m):
        # coefficients of (1 + y_j z)^{n_j}: C(n_j, i) y_j^i for i <= min(n_j, k)
        nj = n[:, j][:, None].astype(float)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lc = gammaln(nj + 1) - gammaln(i + 1) - gammaln(np.maximum(nj - i, 0) + 1)
            logy = math.log(y[j]) if y[j] > 0 else -np.inf
            term = np.where(i <= nj, np.exp(lc + i * logy if y[j] > 0 else
                                            np.where(i == 0, 0.0, -np.inf)), 0.0)
        new = np.zeros_like(acc)
        for d in range(k + 1):
            new[:, d:] += acc[:, : k + 1 - d] * term[:, d:d + 1]
        acc = new
    ek = acc[:, k]
    with np.errstate(divide="ignore"):
        log_ek = np.log(ek) + k * math.log(xmax)
    # relative error of each binomial coefficient (gammaln: FUNC_ULPS ulps of each log term,
    # times the log's size, and the exp) and of the products / sums
    lg = gammaln(n.astype(float) + 1).sum(axis=1) + 2.0 * float(gammaln(k + 1)) + 1.0
    err = (FUNC_ULPS * _U * lg + (m + k + 8) * _U * (1.0 + k * abs(math.log(xmax)))
           + 8 * _U * np.abs(np.where(np.isfinite(log_ek), log_ek, 0.0)))
    return log_ek, err


class ExactEpoch:
    """The enumerated epoch of k-out-of-t allocation: per outcome, log P and log Q (remove
    direction (P, Q)) with absolute error bounds of the logs; the loss log(P/Q)."""

    def __init__(self, loss, k: int, t: int):
        x, q, p_inf, top = discrete_atoms(loss)
        self.k, self.t = k, t
        # the base's largest finite loss; its atoms' losses and ratios agree to a few ulps
        # unless they are the (epsilon, delta) pair's own numbers (dpamp.pld.caps)
        xf = x[x > 0]
        top = max(top, float(np.log(xf.max()))) if xf.size else top
        self.base_top = top if loss.exact_labels else \
            top + 1e-12 * abs(top)
        n = count_vectors(x.size, t)
        with np.errstate(divide="ignore"):
            lq = np.log(q)
        lgt = float(gammaln(t + 1))
        lgn = gammaln(n.astype(float) + 1)
        log_q = lgt - lgn.sum(axis=1) + (n * lq).sum(axis=1)
        err_q = (FUNC_ULPS * _U * (lgt + lgn.sum(axis=1)) + (x.size + 4) * _U
                 * (lgt + lgn.sum(axis=1) + (n * np.abs(lq)).sum(axis=1)) + 8 * _U * (t + 1))
        log_e, err_e = _log_ek(n, x, k)
        lc = math.lgamma(t + 1) - math.lgamma(k + 1) - math.lgamma(t - k + 1)
        log_r = log_e - lc                      # log dP/dQ = log(e_k / C(t, k))
        # (+ 8 ulps of each base ratio x_j, k of them in each product)
        err_r = (err_e + 8 * _U * k + FUNC_ULPS * _U * (3 * math.lgamma(t + 1) + 1)
                 + 4 * _U * abs(lc))
        self.log_q, self.err_q = log_q, err_q
        self.log_p = log_q + log_r
        self.err_p = err_q + err_r + 4 * _U * np.abs(np.where(np.isfinite(log_r), log_r, 0.0))
        # P[+inf]: one minus the chance that none of the k chosen coordinates hits it
        self.p_inf = p_inf if k == 1 else -math.expm1(k * math.log1p(-p_inf))
        self.p_inf_up = p_inf if k == 1 else \
            min(1.0, self.p_inf * (1 + 16 * _U) + (4 * _U if p_inf > 0 else 0.0))
        self.base_p_inf = p_inf
        #: whether P0[+inf] is the base's own number (an (epsilon, delta) pair's delta), not a
        #: rounded transformation (e.g. q delta of a subsampled one)
        self.exact_inf = loss.exact_labels

    # --- masses, rounded -------------------------------------------------------------------
    def masses(self, remove: bool, upper: bool):
        """(a, b): the direction's P- and Q-masses per outcome (remove: (P, Q); add: (Q, P)),
        a raised and b lowered by their error bounds (``upper``), else the reverse."""
        la, ea, lb, eb = ((self.log_p, self.err_p, self.log_q, self.err_q) if remove else
                          (self.log_q, self.err_q, self.log_p, self.err_p))
        s = 1.0 if upper else -1.0
        with np.errstate(over="ignore", under="ignore"):
            a = np.exp(la + s * (ea + 2 * _U * np.abs(np.where(np.isfinite(la), la, 0.0))))
            b = np.exp(lb - s * (eb + 2 * _U * np.abs(np.where(np.isfinite(lb), lb, 0.0))))
        return a * (1 + s * 2 * _U), b * (1 - s * 2 * _U)

    def upper_curve(self, remove: bool, x: np.ndarray) -> np.ndarray:
        """Proven upper bounds on H_x = sum (a - x b)_+ + a[+inf] of the direction at x >= 0:
        the atoms with a / b > x (1 - 8u) summed (the sets of near-ties are taken generously:
        each term wrongly included is > -8u (a + x b)), with n u of the sums charged."""
        a, b = self.masses(remove, True)
        with np.errstate(divide="ignore", over="ignore"):
            r = np.where(b > 0, a / np.maximum(b, 1e-320), np.inf)
        order = np.argsort(r, kind="stable")
        r, a, b = r[order], a[order], b[order]
        A = np.concatenate([np.cumsum(a[::-1])[::-1], [0.0]])
        B = np.concatenate([np.cumsum(b[::-1])[::-1], [0.0]])
        kk = np.searchsorted(r, np.asarray(x, dtype=float) * (1 - 8 * _U), side="right")
        val = A[kk] - x * B[kk]
        val = np.maximum(val, 0.0) + (a.size + 24) * _U * (A[kk] + x * B[kk])
        if remove:
            val = val + self.p_inf_up
        return np.minimum(val * (1 + 4 * _U), 1.0)

    def lower_pair(self, remove: bool):
        """The direction's atoms as a lower (dominated) pair: :func:`.lower_k.atoms_pair` of
        the P-masses from below and the Q-masses from above, with P[+inf] from below."""
        from .lower_k import atoms_pair
        a, b = self.masses(remove, False)
        if remove and self.p_inf > 0:
            p_inf = self.p_inf if self.k == 1 else self.p_inf * (1 - 16 * _U)
            a = np.concatenate([a, [p_inf]])
            b = np.concatenate([b, [0.0]])
        return atoms_pair(a, b, f"allocation-exact({self.k}, {self.t})")

    def top_loss(self, remove: bool) -> float:
        """An upper bound on the direction's largest finite loss (for the atomic cap): remove,
        at most k times the base's (e_k / C(t, k) <= max x^k); add, the largest computed."""
        if remove:
            return self.k * self.base_top
        a, b = self.masses(False, True)
        fin = (a > 0) & (b > 0)
        return float(np.max(np.log(a[fin]) - np.log(b[fin]))) * (1 + 1e-12) if fin.any() \
            else 0.0

    def moments(self, remove: bool):
        """(mean, var) of the finite loss under the direction's P (sizing only)."""
        a, b = self.masses(remove, True)
        fin = (a > 0) & (b > 0)
        if not fin.any():
            return 0.0, 1e-12
        w = a[fin] / a[fin].sum()
        l = np.log(a[fin]) - np.log(b[fin])
        m = float(np.sum(w * l))
        return m, max(float(np.sum(w * (l - m) ** 2)), 1e-12)

    def loss_range(self, remove: bool, tail: float):
        """A loss range outside which the direction's P- and Q-masses are each <= tail."""
        a, b = self.masses(remove, True)
        fin = (a > 0) & (b > 0)
        if not fin.any():
            return -1.0, 1.0
        l = np.log(a[fin]) - np.log(b[fin])
        o = np.argsort(l)
        l, a, b = l[o], a[fin][o], b[fin][o]
        lo_p, lo_q = np.cumsum(a), np.cumsum(b)
        hi_p, hi_q = np.cumsum(a[::-1])[::-1], np.cumsum(b[::-1])[::-1]
        i = int(np.searchsorted(np.maximum(lo_p, lo_q) > tail, True))
        ok = np.nonzero(np.maximum(hi_p, hi_q) > tail)[0]
        j = int(ok[-1]) if ok.size else l.size - 1
        i = min(i, l.size - 1)
        return float(l[min(i, j)]), float(l[max(i, j)])


class ExactAllocationSource:
    """A PLD source of an enumerated epoch (remove direction (P, Q), or add (Q, P)): upper
    PMF from the exact curves rounded up (:func:`dpamp.pld.discretize.discretize_profile`),
    lower from the atoms rounded down (the optimistic discretisation)."""

    symmetric = False
    exact = True
    has_lower = True
    cdf = None

    def __init__(self, epoch: ExactEpoch, remove: bool = True):
        self.epoch, self.remove = epoch, remove
        self.mean, self.var = epoch.moments(remove)
        self.name = f"allocation-exact({epoch.k}, {epoch.t})"
        self.inf_mass = epoch.p_inf if remove else 0.0

    def cap_terms(self):
        """(largest finite loss, P-mass at +inf), both from above, for the atomic cap
        (:func:`dpamp.pld.caps.atomic_caps`); for k = 1 the base's own numbers, exact for an
        (eps, delta) base, 4 ulps up otherwise (a subsampled base's q delta is rounded)."""
        ep = self.epoch
        if not self.remove:
            return ep.top_loss(False), 0.0
        inf = ep.p_inf_up
        if ep.k == 1 and not ep.exact_inf and inf > 0:
            inf = min(1.0, inf * (1 + 4 * _U))
        return ep.top_loss(True), inf

    def exact_atoms(self, upper: bool):
        """(a, b, a_inf) for the exact composition of atoms (:mod:`dpamp.pld.atomic`): the
        outcomes' masses of this direction rounded outward (:meth:`ExactEpoch.masses`) and the
        P-mass at +inf from above (``upper``) or below (as :meth:`ExactEpoch.lower_pair`)."""
        ep = self.epoch
        a, b = ep.masses(self.remove, upper)
        # an outcome of P-mass 0 (a step at the base's loss -inf) adds nothing: left out, so
        # that a mass 0 below means one that underflowed (charged by dpamp.pld.atomic)
        live = np.isfinite(ep.log_p if self.remove else ep.log_q)
        a, b = a[live], b[live]
        if not self.remove or ep.p_inf <= 0.0:
            return a, b, Fraction(0)
        inf = ep.p_inf_up if upper else (ep.p_inf if ep.k == 1 else ep.p_inf * (1 - 16 * _U))
        if ep.k == 1 and not ep.exact_inf:
            # the base's P0[+inf] is itself rounded (4 ulps, as dpamp.pld.caps takes it)
            inf = inf * (1 + 4 * _U) if upper else inf * (1 - 4 * _U)
        return a, b, Fraction(inf)

    def swapped(self):
        return ExactAllocationSource(self.epoch, not self.remove)

    def quantile_range(self, tail):
        return self.epoch.loss_range(self.remove, tail)

    def discretize(self, h, jlo, jhi, optimistic: bool = True):
        from ...pld.discretize import Discretized, discretize, discretize_profile
        ep = self.epoch
        xr = np.exp(h * np.arange(jhi + 1))
        xl = np.exp(h * np.arange(-jlo + 1))
        rows = (ep.upper_curve(self.remove, xr), ep.upper_curve(not self.remove, xl))
        up = discretize_profile(rows, None, 0.0, 0.0, h, jlo, jhi)
        if not optimistic:
            return up
        pair = ep.lower_pair(self.remove)
        if pair is None:
            return up
        lo = discretize(pair, h, jlo, jhi, optimistic=True)
        return Discretized(h, jlo, up.upper, up.upper_inf, lo.lower, lo.lower_inf,
                           lo.lower_slack)


def epoch_parts(base, src, k: int, t: int):
    """[(source, 1)] of one epoch of k-out-of-t allocation of ``base`` enumerated exactly, or
    None where it is not (:func:`applies`)."""
    if not applies(src, k, t):
        return None
    return [(ExactAllocationSource(_epoch(base, k, t)), 1)]


@functools.lru_cache(maxsize=8)
def _epoch(base, k: int, t: int) -> ExactEpoch:
    from ...pld.sources import loss_distribution
    return ExactEpoch(loss_distribution(base), k, t)
