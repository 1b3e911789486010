"""The hockey-stick (alpha-) divergence (Balle et al. 2018, eq. (2)) and profiles from privacy-loss
distributions.

    H_alpha(P || Q) = sup_E P(E) - alpha Q(E) = sum_z [P(z) - alpha Q(z)]_+ ,   alpha = e^eps.

For alpha < 1 (eps < 0) the same sum is used (Balle et al. 2018, Thm 14's proof applies it to
non-negative measures); for probability measures it satisfies H_alpha(P||Q) = 1 - alpha + alpha
H_{1/alpha}(Q||P).
:func:`hockey_stick` takes probability vectors (summing to 1 within ``PROBABILITY_TOL``).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import validate as V

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


#: how far from 1 the masses of a probability vector may sum: rounding in the caller's
#: normalisation (n roundings of at most 2^-53 each) stays far below it, while vectors that are
#: not distributions (masses [1, 2], or a typo) are refused; moving masses by a total of tol
#: moves the divergence by at most (1 + e^eps) tol (p enters with weight 1, q with e^eps)
PROBABILITY_TOL = 1e-9


def _distribution(name, x) -> np.ndarray:
    a = V.reals(name, x, low=0.0, allow_inf=False)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d array of probabilities "
                         f"(got shape {a.shape})")
    total = math.fsum(a.tolist())
    if abs(total - 1.0) > PROBABILITY_TOL:
        raise ValueError(f"{name} must be a probability vector: masses >= 0 summing to 1 "
                         f"within {PROBABILITY_TOL:g} (got sum {total!r})")
    return a


def hockey_stick(p: ArrayLike, q: ArrayLike, epsilon: ArrayLike | None = None, *,
                 alpha: ArrayLike | None = None) -> float | np.ndarray:
    """H_{e^eps}(P || Q) = sum_z [p_z - e^eps q_z]_+ for discrete distributions p, q on the same
    points (Balle et al. 2018, eq. (2)), vectorised over epsilon (any real, +-inf allowed: eps < 0
    is the extension to alpha < 1 used in Balle et al. 2018, Thm 14) or over ``alpha`` >= 0 given
    directly. Mass of p where q = 0 counts at every alpha (the mass at infinity). Returns a float
    for a scalar argument. Numerical value (a sum of positive terms, no rounding margin).

    ``p`` and ``q`` must be probability vectors: finite masses >= 0 summing to 1 within
    :data:`PROBABILITY_TOL` (1e-9), else ValueError."""
    p = _distribution("p", p)
    q = _distribution("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length (got {p.size} and {q.size})")
    if (epsilon is None) == (alpha is None):
        raise ValueError("give exactly one of epsilon and alpha")
    if alpha is None:
        e = V.reals("epsilon", epsilon)  # any real, +-inf allowed, never nan
        with np.errstate(over="ignore"):
            a = np.exp(e)
    else:
        a = V.reals("alpha", alpha, low=0.0)
    flat = a.ravel()
    with np.errstate(invalid="ignore", over="ignore"):
        diff = p[None, :] - flat[:, None] * q[None, :]
    diff = np.where(q[None, :] == 0, p[None, :], diff)  # inf * 0: the atom only P charges
    out = np.maximum(diff, 0.0).sum(axis=1).reshape(a.shape)
    return out if out.ndim else float(out)


def hockey_stick_density(p_pdf, q_pdf, epsilon, *, support=(-math.inf, math.inf), points=None,
                         epsabs=1e-14, epsrel=1e-12):
    """H_{e^eps}(P || Q) = int [p(z) - e^eps q(z)]_+ dz for densities on (a subset of) the line,
    by adaptive quadrature (scipy.integrate.quad), vectorised over epsilon by a loop. A numerical
    value with quad's error estimate, not a certified bound: use it to check closed forms.
    ``points``: break points of the integrand (e.g. the crossing point, kinks)."""
    from scipy.integrate import quad
    e = V.reals("epsilon", epsilon)
    lo, hi = support
    out = np.empty(e.shape)
    for idx, eps in np.ndenumerate(e):
        a = math.exp(eps) if eps < 700 else math.inf

        def f(z, a=a):
            qz = q_pdf(z)
            if math.isinf(a):
                return p_pdf(z) if qz == 0 else 0.0
            return max(p_pdf(z) - a * qz, 0.0)
        if points is None:
            val, _ = quad(f, lo, hi, epsabs=epsabs, epsrel=epsrel, limit=500)
        else:
            cuts = sorted(x for x in points if lo < x < hi)
            edges = [lo, *cuts, hi]
            val = sum(quad(f, u, v, epsabs=epsabs, epsrel=epsrel, limit=500)[0]
                      for u, v in zip(edges[:-1], edges[1:]))
        out[idx] = val
    return out if out.ndim else float(out)


def profile_from_privacy_loss(losses, probabilities, epsilon):
    """The hockey-stick curve of a pair from its privacy-loss distribution (Balle et al. 2018, Thm
    5; Steinke 2022, Prop. 7): for L = log dP/dQ under P (atoms ``losses`` with ``probabilities``,
    +inf allowed), H_{e^eps}(P || Q) = E[(1 - e^{eps - L})_+] = sum_{l > eps} p_l (1 - e^{eps - l}).
    Vectorised over epsilon (any real). The probabilities need not sum to one (a sub-PLD)."""
    ls = V.reals("losses", losses).ravel()
    ps = V.reals("probabilities", probabilities, low=0.0, allow_inf=False).ravel()
    if ls.shape != ps.shape:
        raise ValueError("losses and probabilities must be arrays of one length "
                         f"(got {ls.size} and {ps.size})")
    e = V.reals("epsilon", epsilon)
    flat = e.ravel()
    with np.errstate(over="ignore", invalid="ignore"):
        gap = flat[:, None] - ls[None, :]
        w = np.where(ls[None, :] > flat[:, None], -np.expm1(np.minimum(gap, 0.0)), 0.0)
    w = np.where(np.isposinf(ls)[None, :], 1.0, w)  # the atom at +inf counts at every eps
    out = (w * ps[None, :]).sum(axis=1).reshape(e.shape)
    return out if out.ndim else float(out)


def finite_pair_log_rows(lp: np.ndarray, lq: np.ndarray, err: np.ndarray, eps: np.ndarray,
                         upper: bool = True) -> np.ndarray:
    """log of both hockey-stick curves of a pair on finitely many atoms (log P-masses ``lp``,
    log Q-masses ``lq``, each within ``err`` of the exact log mass), as a proven upper
    (``upper``) or lower bound: row 0 = log H_{e^eps}(P || Q), row 1 = log H_{e^eps}(Q || P),
    eps >= 0 (inf: the mass where the other measure is 0).

    H_{e^eps}(P || Q) = sum_j (P_j - e^eps Q_j)_+ (Balle et al. 2018, Sec. 2) is computed term by
    term in log space, log P_j + log(-expm1(eps + log Q_j - log P_j)), with the masses moved by
    ``err`` towards the bound asked, the exponent's rounding moved the same way, and the sum's
    rounding (a relative (n + 8) ulps for n atoms) added; vectorised in chunks of eps."""
    u = 2.0 ** -52
    eps = np.asarray(eps, dtype=float)
    flat = eps.ravel()
    sign = 1.0 if upper else -1.0
    rows = []
    for a_, b_ in ((lp, lq), (lq, lp)):
        la, lb = a_ + sign * err, b_ - sign * err
        out = np.empty(flat.shape)
        step = max(1, (1 << 22) // max(la.size, 1))
        for s in range(0, flat.size, step):
            e = flat[s:s + step, None]
            with np.errstate(invalid="ignore", over="ignore"):
                z = e + lb[None, :] - la[None, :]
                z = np.where(np.isnan(z), -np.inf, z)      # Q-mass 0 at eps = inf
                dz = 4 * u * (np.abs(np.where(np.isfinite(e), e, 0.0)) + np.abs(lb) + np.abs(la))
                z = z - sign * dz
                with np.errstate(divide="ignore"):
                    t = np.where(z < 0, la[None, :] + np.log(-np.expm1(np.minimum(z, -1e-300))),
                                 -np.inf)
            total = np.logaddexp.reduce(t, axis=1)
            pad = (la.size + 8) * u * (1.0 + np.abs(np.where(np.isfinite(total), total, 0.0)))
            out[s:s + step] = total + sign * pad
        rows.append(out.reshape(eps.shape))
    return np.stack(rows)


def sorted_pair_log_rows(lp: np.ndarray, lq: np.ndarray, err: np.ndarray, eps: np.ndarray,
                         upper: bool = True) -> np.ndarray:
    """:func:`finite_pair_log_rows` for many atoms and many eps at once: O((n + m) log n) in
    place of O(n m), with the same conventions and proven margins (atoms with a finite log
    Q-mass; masses moved by ``err`` towards the bound asked).

    With the atoms sorted by their log ratio lambda_j = log p_j - log q_j and k the first with
    lambda_k > eps, H_{e^eps}(P || Q) = sum_{j >= k} q_j (e^{lambda_j} - e^eps), and
        e^{lambda_j} - e^eps = e^{lambda_k} expm1(lambda_j - lambda_k) + e^eps expm1(lambda_k -
        eps),
    both terms >= 0: H = E_k + e^eps expm1(lambda_k - eps) B_k with B_k = sum_{j >= k} q_j and
    E_k = sum_{j >= k} q_j e^{lambda_k} expm1(lambda_j - lambda_k) = sum_{j >= k} e^{lambda_j}
    expm1(d_j) B_{j+1} (d_j = lambda_{j+1} - lambda_j, by telescoping), suffix sums of positive
    terms in log space. The argument of expm1(lambda_k - eps) carries an absolute rounding of
    4 u (|lambda_k| + |eps|), added (upper) or subtracted (lower) as its worth in mass."""
    u = 2.0 ** -52
    eps = np.asarray(eps, dtype=float)
    flat = eps.ravel()
    sign = 1.0 if upper else -1.0
    rows = []
    for a_, b_ in ((lp, lq), (lq, lp)):
        la, lb = a_ + sign * err, b_ - sign * err
        keep = np.isfinite(lb) & (la > -np.inf)
        la, lb = la[keep], lb[keep]
        lam = la - lb
        lam = lam + sign * 4 * u * (np.abs(la) + np.abs(lb))
        order = np.argsort(lam, kind="stable")
        lam, lb = lam[order], lb[order]
        n = lam.size
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            log_b = np.logaddexp.accumulate(lb[::-1])[::-1]              # B_k, k = 0..n-1
            d = np.diff(lam)
            term = np.full(n, -np.inf)
            term[:-1] = lam[:-1] + np.log(np.expm1(d)) + log_b[1:]
            log_e = np.logaddexp.accumulate(term[::-1])[::-1]            # E_k
            k = np.searchsorted(lam, flat, side="right")
            inside = (k < n) & np.isfinite(flat)
            kk = np.minimum(k, n - 1)
            x = lam[kk] - flat
            second = log_b[kk] + flat + np.log(np.expm1(np.maximum(x, 0.0)))
            val = np.where(inside, np.logaddexp(log_e[kk], second), -np.inf)
            # the rounding of x: a mass B_k e^{lambda_k} times its relative error at most
            slack = log_b[kk] + lam[kk] + np.log(4 * u * (np.abs(lam[kk]) + np.abs(flat) + 1.0))
            slack = np.where(inside, slack, -np.inf)
            if upper:
                val = np.logaddexp(val, slack)
            else:
                lin = np.where(val > slack, val + np.log(-np.expm1(slack - val)), -np.inf)
                val = np.where(np.isfinite(val), lin, val)
        pad = (n + 8) * u * (1.0 + np.abs(np.where(np.isfinite(val), val, 0.0)))
        rows.append((val + sign * pad).reshape(eps.shape))
    return np.stack(rows)
